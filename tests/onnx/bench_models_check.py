#!/usr/bin/env python3
"""CTest bench_cnn_models: the three CNNs of bench/models (ResNet-50,
MobileNetV2, DenseNet-121; batch 1, 224x224, random weights) are written,
checked to be the architectures they claim (op counts: 17 depthwise Conv and
35 Clip in MobileNetV2, 62 Concat and 3 AveragePool in DenseNet-121), run
through `sluice run` on the CPU and compared with onnxruntime: relative L2
at most 1e-4 and the output not degenerate (finite, spread out). About 5 s.

    .venv-onnx/bin/python tests/onnx/bench_models_check.py build/tools/sluice
"""
import collections
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
import densenet121  # noqa: E402
import mobilenet_v2  # noqa: E402
import resnet50  # noqa: E402

# model -> (write, op counts the ONNX graph must have)
MODELS = {
    "resnet50": (resnet50.write, {"Conv": 53, "Add": 16, "MaxPool": 1}),
    "mobilenet_v2": (mobilenet_v2.write,
                     {"Conv": 52, "depthwise Conv": 17, "Clip": 35, "Add": 10}),
    "densenet121": (densenet121.write,
                    {"Conv": 120, "Concat": 62, "AveragePool": 3,
                     "BatchNormalization": 121}),
}


def op_counts(path):
    counts = collections.Counter()
    for n in onnx.load(path).graph.node:
        counts[n.op_type] += 1
        group = [a.i for a in n.attribute if a.name == "group"]
        if n.op_type == "Conv" and group and group[0] > 1:
            counts["depthwise Conv"] += 1
    return counts


def main():
    sluice = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "cpu.pbtxt")
        with open(config, "w") as f:
            f.write("use_gpu: false\n")
        for name, (write, want) in MODELS.items():
            paths = write(tmp, 1)
            got = op_counts(paths["onnx"])
            for op, n in want.items():
                if got[op] != n:
                    failures.append(f"{name}: {got[op]} {op}, want {n}")
            out = os.path.join(tmp, name + "_out")
            r = subprocess.run([sluice, "run", paths["onnx"], "--input",
                                f"x={paths['x']}", "--output-dir", out,
                                "--device", "cpu:0", "--config", config],
                               capture_output=True, text=True, timeout=240)
            if r.returncode != 0:
                failures.append(f"{name}: sluice run failed: {r.stderr.strip()[-800:]}")
                continue
            y = np.load(os.path.join(out, "y.npy")).astype(np.float64)
            sess = ort.InferenceSession(paths["onnx"],
                                        providers=["CPUExecutionProvider"])
            ref = sess.run(None, {"x": np.load(paths["x"])})[0].astype(np.float64)
            if y.shape != ref.shape:
                failures.append(f"{name}: shape {y.shape}, want {ref.shape}")
                continue
            rel = np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-30)
            print(f"{name}: max abs diff {np.abs(y - ref).max():.2e}, "
                  f"rel L2 {rel:.2e}, output std {ref.std():.3f}")
            if not np.isfinite(y).all() or not rel <= 1e-4:
                failures.append(f"{name}: relative L2 {rel:.2e} > 1e-4")
            # A graph that lost its signal (all zeros, constant) would agree
            # with anything; these outputs have std 0.1 to 0.3.
            if not ref.std() > 1e-2:
                failures.append(f"{name}: degenerate output, std {ref.std():.2e}")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
