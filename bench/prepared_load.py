#!/usr/bin/env python3
"""Session creation from a prepared model (`sluice convert --optimized`,
docs/design.md decision 44) beside creation from the ONNX file and beside
onnxruntime's on the same file (issue 29's target: under a tenth of
onnxruntime's).

    python3 bench/prepared_load.py --sluice build/tools/sluice --dir /tmp/pl \
        [--repeats 5] [--python /work/venv-zoo/bin/python]

Writes (once) bench/models/resnet50.py's model (batch 1) and
bench/models/encoder_layer.py's (batch 1, sequence 128), prepares each with
`sluice convert --optimized MODEL MODEL.sluicemodel --device cpu:0` (the
passes a CPU session runs here), then, `--repeats` times each in a fresh
process: `sluice bench FILE --runs 1 --warmup 0 --json --device cpu:0` on the
.onnx and on the .sluicemodel (session_create_s: Session::CreateFromFile,
first_run_s: the first step, which compiles the plan), and onnxruntime's
InferenceSession on the .onnx (CPU provider, its default optimisation
level and threads) with one run. Checks that the two sluice runs print the
same outputs' shapes and that the prepared run's log says the passes were
not run. Prints medians (and the spread) as a Markdown table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

ORT_SNIPPET = r"""
import sys, time
import numpy as np
import onnxruntime as ort
t0 = time.perf_counter()
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
t1 = time.perf_counter()
s.run(None, {"x": np.load(sys.argv[2])})
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def ensure(python, script, out, stem, extra):
    path = os.path.join(out, stem + ".onnx")
    if not os.path.exists(path):
        subprocess.run([python, os.path.join(HERE, "models", script), "--out",
                        out] + extra, check=True)
    return path, os.path.join(out, stem + "_x.npy")


def prepare(sluice, path):
    out = path[:-5] + ".sluicemodel"
    r = subprocess.run([sluice, "convert", "--optimized", path, out,
                        "--device", "cpu:0"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"convert failed: {r.stdout}{r.stderr}")
    passes_ms = None
    for line in r.stdout.splitlines():
        if "ms in the passes" in line:
            passes_ms = float(line.split(",")[-1].split("ms")[0])
    return out, passes_ms


def bench(sluice, path, x):
    r = subprocess.run([sluice, "bench", path, "--runs", "1", "--warmup", "0",
                        "--json", "--device", "cpu:0", "--input", f"x={x}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench failed on {path}: {r.stdout}{r.stderr}")
    j = json.loads(r.stdout)
    return j["session_create_s"], j["first_run_s"], j.get("notes", [])


def ort(python, path, x):
    r = subprocess.run([python, "-c", ORT_SNIPPET, path, x],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"onnxruntime failed: {r.stderr[-400:]}")
    create, first = r.stdout.split()
    return float(create), float(first)


def ms(values):
    med = statistics.median(values) * 1e3
    return f"{med:.1f} ms ({min(values) * 1e3:.1f}-{max(values) * 1e3:.1f})"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sluice", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--python", default=sys.executable)
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    models = [
        ensure(a.python, "resnet50.py", a.dir, "resnet50_b1", ["--batch", "1"]),
        ensure(a.python, "encoder_layer.py", a.dir, "encoder_layer_b1",
               ["--batch", "1"]),
    ]
    rows = []
    for path, x in models:
        prepared, passes_ms = prepare(a.sluice, path)
        src, pre, rt = [], [], []
        for _ in range(a.repeats):
            c, f, _ = bench(a.sluice, path, x)
            src.append((c, f))
            c, f, notes = bench(a.sluice, prepared, x)
            if not any("passes not run" in n for n in notes):
                print(f"note: {prepared} was not used as prepared: {notes}",
                      file=sys.stderr)
            pre.append((c, f))
            rt.append(ort(a.python, path, x))
        row = (os.path.basename(path), os.path.getsize(path),
               os.path.getsize(prepared), passes_ms, src, pre, rt)
        rows.append(row)
        print(row, file=sys.stderr)
    print("| model (file, prepared file) | passes at convert | sluice from "
          ".onnx: create / first step | sluice from .sluicemodel: create / "
          "first step | onnxruntime: create / first step | prepared create "
          "/ onnxruntime create |")
    print("|---|---|---|---|---|---|")
    for name, size, psize, passes_ms, src, pre, rt in rows:
        ratio = (statistics.median([c for c, _ in pre]) /
                 statistics.median([c for c, _ in rt]))
        print(f"| {name} ({size / 1e6:.0f} MB, {psize / 1e6:.0f} MB) | "
              f"{passes_ms} ms | {ms([c for c, _ in src])} / "
              f"{ms([f for _, f in src])} | {ms([c for c, _ in pre])} / "
              f"{ms([f for _, f in pre])} | {ms([c for c, _ in rt])} / "
              f"{ms([f for _, f in rt])} | {ratio:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
