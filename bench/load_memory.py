#!/usr/bin/env python3
"""Load cost of generated large-weight models: session creation time and peak
host RSS of `sluice bench --runs 1`, beside onnxruntime's (issue 29).

    python3 bench/load_memory.py --sluice build/tools/sluice --dir /tmp/lc \
        [--weights-mb 300 4096] [--ort] [--device gpu:0]

For each size, writes (once) bench/models/large_weights.py's model with its
weights inline (sizes under 2 GiB: protobuf's limit) and as external data,
runs `sluice bench MODEL --runs 1 --warmup 0 --json --device DEVICE` (cpu
unless --device says) and reads its host_memory figures (peak RSS to the end
of session creation and the RSS then, the first step's peak and the RSS
after it: on a GPU, what the session keeps once its weights are there), and
with --ort runs onnxruntime in a fresh Python process
(create a CPU session, one step; ru_maxrss, which includes Python's own
~50 MB). Prints a Markdown table for bench/RESULTS.md. Not a test: the 4 GB
model needs the disk and memory of a workstation.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

ORT_SNIPPET = r"""
import resource, sys, time
import numpy as np
import onnxruntime as ort
t0 = time.time()
so = ort.SessionOptions()
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
t1 = time.time()
s.run(None, {"x": np.load(sys.argv[2])})
print(t1 - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def model_path(out, mb, external):
    stem = f"large_{mb}mb" + ("_ext" if external else "")
    return os.path.join(out, stem + ".onnx")


def ensure_model(python, out, mb, external):
    path = model_path(out, mb, external)
    if not os.path.exists(path):
        cmd = [python, os.path.join(HERE, "models", "large_weights.py"),
               "--out", out, "--weights-mb", str(mb)]
        if external:
            cmd.append("--external")
        subprocess.run(cmd, check=True)
    return path


def run_sluice(sluice, path, x, device):
    cmd = [sluice, "bench", path, "--runs", "1", "--warmup", "0", "--json",
           "--device", device, "--input", f"x={x}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stdout + r.stderr).strip()[-400:]}
    j = json.loads(r.stdout)
    hm = j.get("host_memory", {})
    return {"create_s": j["session_create_s"], "first_s": j["first_run_s"],
            "peak_create": hm.get("peak_rss_after_create_bytes", -1),
            "peak_step": hm.get("peak_rss_first_step_bytes", -1),
            "rss_create": hm.get("rss_after_create_bytes", -1),
            "rss_step": hm.get("rss_after_first_step_bytes", -1)}


def run_ort(python, path, x):
    r = subprocess.run([python, "-c", ORT_SNIPPET, path, x],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-400:]}
    create_s, peak = r.stdout.split()
    return {"create_s": float(create_s), "peak": int(peak)}


def mib(b):
    return f"{b / (1 << 20):,.0f} MiB" if b and b > 0 else "n/a"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sluice", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--weights-mb", type=int, nargs="+", default=[300])
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--ort", action="store_true")
    p.add_argument("--device", default="cpu",
                   help="sluice's device (cpu, gpu:0); onnxruntime runs on "
                        "the CPU")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    rows = []
    for mb in a.weights_mb:
        for external in (False, True):
            if not external and mb >= 2000:
                continue  # a .onnx file holds at most 2 GiB
            path = ensure_model(a.python, a.dir, mb, external)
            x = os.path.join(a.dir, "large_x.npy")
            size = os.path.getsize(path)
            weights = path[:-5] + ".weights"
            if os.path.exists(weights):
                size += os.path.getsize(weights)
            s = run_sluice(a.sluice, path, x, a.device)
            o = run_ort(a.python, path, x) if a.ort else {}
            rows.append((os.path.basename(path), size, s, o))
            print(os.path.basename(path), s, o, file=sys.stderr)
    print(f"| model (weights) | sluice create ({a.device}) | sluice peak RSS: "
          "create / first step | sluice RSS after: create / first step | "
          "onnxruntime create, peak RSS (CPU) |")
    print("|---|---|---|---|---|")
    for name, size, s, o in rows:
        if "error" in s:
            sl = f"error: {s['error']}"
            print(f"| {name} ({mib(size)}) | {sl} | | | |")
            continue
        ort = (f"{o['create_s']:.2f} s, {mib(o['peak'])}" if "peak" in o
               else o.get("error", "not run"))
        print(f"| {name} ({mib(size)}) | {s['create_s']:.2f} s | "
              f"{mib(s['peak_create'])} / {mib(s['peak_step'])} | "
              f"{mib(s['rss_create'])} / {mib(s['rss_step'])} | {ort} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
