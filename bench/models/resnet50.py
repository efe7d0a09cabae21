#!/usr/bin/env python3
"""torchvision's ResNet-50 (v1.5) as ONNX, built with onnx.helper, no PyTorch.

The graph is what torchvision's `resnet50()` exports to at opset 17 without
constant folding: Conv (bias=False) + BatchNormalization + Relu, a 3x3
stride-2 MaxPool, 16 bottleneck blocks (1x1, 3x3 with the stride, 1x1, the
stride on the 3x3 as in v1.5) with a projection shortcut (1x1 Conv + BN) on
the first block of each stage and Add + Relu at the end, GlobalAveragePool,
Flatten and Gemm to 1,000 classes. Weights are random from a fixed seed, at
He scale for the convolutions, and BatchNormalization has random scale, bias,
mean and variance, so that a mistake in folding it shows.

    python3 bench/models/resnet50.py --out DIR [--batch 1] [--check]

writes DIR/resnet50_b{B}.onnx (input "x" [B,3,224,224], output "y" [B,1000])
and DIR/resnet50_b{B}_x.npy (a seeded input); --check runs onnx.checker and
onnxruntime on it. bench/cpu_peers.py imports `write`.
"""
import argparse
import os
import sys

import numpy as np

OPSET = 17
LAYERS = (3, 4, 6, 3)      # bottleneck blocks per stage
WIDTHS = (64, 128, 256, 512)
EXPANSION = 4
EPS = 1e-5


class _Builder:
    def __init__(self, seed):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def init(self, name, array):
        self.inits.append(self.numpy_helper.from_array(
            np.ascontiguousarray(array, dtype=np.float32), name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=out,
                                                **attrs))
        return out

    def conv_bn(self, x, cin, cout, k, stride, relu):
        """Conv (no bias) + BatchNormalization (+ Relu)."""
        fan_in = cin * k * k
        w = self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan_in)
        conv = self.name("conv")
        y = self.node("Conv", [x, self.init(conv + ".w", w)],
                      kernel_shape=[k, k], strides=[stride, stride],
                      pads=[k // 2] * 4, dilations=[1, 1], group=1)
        bn = self.name("bn")
        params = [
            self.init(bn + ".scale", self.rng.uniform(0.5, 1.0, cout)),
            self.init(bn + ".bias", self.rng.uniform(-0.1, 0.1, cout)),
            self.init(bn + ".mean", self.rng.uniform(-0.1, 0.1, cout)),
            self.init(bn + ".var", self.rng.uniform(0.5, 1.5, cout)),
        ]
        y = self.node("BatchNormalization", [y] + params, epsilon=EPS,
                      momentum=0.9)
        return self.node("Relu", [y]) if relu else y

    def bottleneck(self, x, cin, width, stride):
        cout = width * EXPANSION
        y = self.conv_bn(x, cin, width, 1, 1, True)
        y = self.conv_bn(y, width, width, 3, stride, True)
        y = self.conv_bn(y, width, cout, 1, 1, False)
        if stride != 1 or cin != cout:
            x = self.conv_bn(x, cin, cout, 1, stride, False)
        return self.node("Relu", [self.node("Add", [y, x])])


def classifier_model(b, y, channels, name, batch):
    """The torchvision classifier head on `y` (GlobalAveragePool, Flatten,
    Gemm to 1,000 classes, weights drawn from b.rng) and the checked
    ModelProto around b's nodes: input "x" [batch,3,224,224], output "y"."""
    import onnx
    from onnx import TensorProto, helper
    y = b.node("GlobalAveragePool", [y])
    y = b.node("Flatten", [y], axis=1)
    fc_w = b.rng.uniform(-1, 1, (1000, channels)) / np.sqrt(channels)
    fc_b = b.rng.uniform(-1, 1, 1000) / np.sqrt(channels)
    b.nodes.append(helper.make_node(
        "Gemm", [y, b.init("fc.w", fc_w), b.init("fc.b", fc_b)], ["y"],
        name="fc", alpha=1.0, beta=1.0, transB=1))
    graph = helper.make_graph(
        b.nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       [batch, 3, 224, 224])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 1000])],
        b.inits)
    model = helper.make_model(graph, producer_name="sluice-bench",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def write_model(build_fn, name, out_dir, batch=1, seed=0):
    """Writes build_fn(batch, seed) and a seeded input as
    out_dir/{name}_b{batch}.onnx and _x.npy; returns {"onnx": ..., "x": ...}."""
    import onnx
    os.makedirs(out_dir, exist_ok=True)
    paths = {"onnx": os.path.join(out_dir, f"{name}_b{batch}.onnx"),
             "x": os.path.join(out_dir, f"{name}_b{batch}_x.npy")}
    onnx.save(build_fn(batch, seed), paths["onnx"])
    x = np.random.default_rng(seed + 1).standard_normal(
        (batch, 3, 224, 224)).astype(np.float32)
    np.save(paths["x"], x)
    return paths


def cli_main(doc, write_fn):
    """The models' shared command line: --out, --batch, --seed, --check."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, nargs="+", default=[1])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    ok = True
    for batch in args.batch:
        paths = write_fn(args.out, batch, args.seed)
        print(f"wrote {paths['onnx']} and {paths['x']}")
        if args.check:
            ok = check(paths) and ok
    return 0 if ok else 1


def build(batch=1, seed=0):
    """The ResNet-50 ModelProto for a fixed batch."""
    b = _Builder(seed)
    y = b.conv_bn("x", 3, 64, 7, 2, True)
    y = b.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    cin = 64
    for stage, (blocks, width) in enumerate(zip(LAYERS, WIDTHS)):
        for i in range(blocks):
            y = b.bottleneck(y, cin, width, 2 if i == 0 and stage > 0 else 1)
            cin = width * EXPANSION
    return classifier_model(b, y, cin, "resnet50", batch)


def write(out_dir, batch=1, seed=0):
    """Writes the model and a seeded input; returns {"onnx": ..., "x": ...}."""
    return write_model(build, "resnet50", out_dir, batch, seed)

def check(paths):
    import onnx
    import onnxruntime as ort
    onnx.checker.check_model(paths["onnx"])
    sess = ort.InferenceSession(paths["onnx"],
                                providers=["CPUExecutionProvider"])
    y = sess.run(None, {"x": np.load(paths["x"])})[0]
    print(f"onnxruntime: output {y.shape}, mean {y.mean():.4f}, "
          f"std {y.std():.4f}, finite {bool(np.isfinite(y).all())}")
    return bool(np.isfinite(y).all())


def main():
    return cli_main(__doc__, write)

if __name__ == "__main__":
    sys.exit(main())
