#!/usr/bin/env python3
"""Session creation from a prepared model (`sluice convert --optimized`,
docs/design.md decision 44) beside creation from the ONNX file and beside
onnxruntime's on the same file (issue 29's target: under a tenth of
onnxruntime's).

    python3 bench/prepared_load.py --sluice build/tools/sluice --dir /tmp/pl \
        [--repeats 5] [--python /work/venv-zoo/bin/python]
    python3 bench/prepared_load.py --sluice build/tools/sluice --dir /tmp/pl \
        --zoo /tmp/zoo /tmp/tf --threads 2 --repeats 3 [--exclude resize] \
        --python /work/venv-zoo/bin/python

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

--zoo DIR... is issue 29's zoo-wide table instead: every DIR/<m>.onnx with
an input DIR/<m>_x.npy (fed as "x": bench/models/torchvision_zoo.py) or
DIR/<m>_inputs.npz (inputs by name: bench/models/transformer_zoo.py), each
prepared once into --dir, then --repeats rounds of three fresh processes:
`sluice bench` from the .onnx, from the .sluicemodel, and onnxruntime
(create, one step), all at --threads intra-op threads and one inter-op
thread (sluice: a config with use_gpu false). Memory: sluice bench's own
figure (peak RSS during creation and the first step, host_memory in its
JSON), and each process's maximum resident set from /usr/bin/time
(sluice's includes the profiled step bench runs after the timed one;
onnxruntime's includes Python's own ~50 MB). The targets, per model:
peak RSS at most 1.5 x the weights (`sluice inspect`'s parameter bytes,
before the passes) + the step's activations (`sluice place`'s peak
activation bytes on the CPU) + 100 MiB; creation from the .onnx no slower
than onnxruntime's; from the .sluicemodel under a tenth of it. Writes
--dir/load_zoo.json; prints the table with the load average before and
after each model. A fourth process per round starts from the config's
prepared_model_cache_dir (--dir/cache, docs/design.md decision 49), which
one session before the rounds writes (timed apart: it runs the passes and
writes the file). --device gpu:0 runs sluice's sessions on the GPU (the
host bound is then 1.2 x the weights + 100 MiB; onnxruntime stays on the
CPU, a reference for creation time only).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

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


ORT_ZOO_SNIPPET = r"""
import sys, time
import numpy as np
import onnxruntime as ort
path, feed, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
feeds = (dict(np.load(feed)) if feed.endswith(".npz")
         else {"x": np.load(feed)})
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
t0 = time.perf_counter()
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
t1 = time.perf_counter()
s.run(None, feeds)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""

MIB = 1 << 20


def timed(cmd):
    """Runs `cmd` under /usr/bin/time; (CompletedProcess, max RSS bytes)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name] + cmd,
                           capture_output=True, text=True)
        text = t.read().strip().splitlines()
    rss = int(text[-1]) * 1024 if text and text[-1].isdigit() else 0
    return r, rss


def zoo_models(dirs, exclude):
    """(name, .onnx, feed flag for sluice, feed file) of every model with an
    input file, in name order, less those named in `exclude`."""
    out = []
    for d in dirs:
        for f in sorted(os.listdir(d)):
            if not f.endswith(".onnx") or f[:-5] in exclude:
                continue
            stem = os.path.join(d, f[:-5])
            if os.path.exists(stem + "_x.npy"):
                out.append((f[:-5], stem + ".onnx", f"x={stem}_x.npy",
                            stem + "_x.npy"))
            elif os.path.exists(stem + "_inputs.npz"):
                out.append((f[:-5], stem + ".onnx", stem + "_inputs.npz",
                            stem + "_inputs.npz"))
    return out


def sluice_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}: {r.stdout}{r.stderr}")
    return json.loads(r.stdout)


def zoo_bench(sluice, path, feed, config, device):
    r, rss = timed([sluice, "bench", path, "--runs", "1", "--warmup", "0",
                    "--json", "--device", device, "--config", config,
                    "--input", feed])
    if r.returncode != 0:
        sys.exit(f"bench failed on {path}: {r.stdout}{r.stderr}")
    j = json.loads(r.stdout)
    hm = j.get("host_memory", {})
    peak = max(hm.get("peak_rss_after_create_bytes", 0),
               hm.get("peak_rss_first_step_bytes", 0))
    return {"create_s": j["session_create_s"], "first_s": j["first_run_s"],
            "peak_bytes": peak, "process_max_bytes": rss,
            "prepared_used": any("passes not run" in n
                                 for n in j.get("notes", []))}


def zoo_ort(python, path, feed, threads):
    r, rss = timed([python, "-c", ORT_ZOO_SNIPPET, path, feed, str(threads)])
    if r.returncode != 0:
        sys.exit(f"onnxruntime failed on {path}: {r.stderr[-400:]}")
    create, first = r.stdout.split()
    return {"create_s": float(create), "first_s": float(first),
            "process_max_bytes": rss}


def med(runs, key):
    return statistics.median(r[key] for r in runs)


def run_zoo(a):
    config = os.path.join(a.dir, f"cpu_t{a.threads}.pbtxt")
    with open(config, "w") as f:
        f.write(("use_gpu: false\n" if a.device.startswith("cpu") else "") +
                f"intra_op_threads: {a.threads}\ninter_op_threads: 1\n")
    gpu = not a.device.startswith("cpu")
    cache_dir = os.path.join(a.dir, "cache")
    cached_config = os.path.join(a.dir, f"cpu_t{a.threads}_cache.pbtxt")
    with open(config) as f, open(cached_config, "w") as g:
        g.write(f.read() + f'prepared_model_cache_dir: "{cache_dir}"\n')
    records = []
    for name, path, feed, feed_file in zoo_models(a.zoo, a.exclude or []):
        load_before = os.getloadavg()[0]
        weights = sluice_json([a.sluice, "inspect", path, "--json"])[
            "parameters"]["bytes"]
        place = sluice_json([a.sluice, "place", path, "--devices", "cpu",
                             "--config", config, "--json"])
        activations = sum(d["peak_activation_bytes"] for d in place["devices"])
        prepared = os.path.join(a.dir, name + ".sluicemodel")
        t0 = time.perf_counter()
        r = subprocess.run([a.sluice, "convert", "--optimized", path,
                            prepared, "--device", a.device, "--config",
                            config], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"convert failed: {r.stdout}{r.stderr}")
        convert_s = time.perf_counter() - t0
        # The config's cache folder: the first session writes it (timed
        # once), the ones in the rounds start from it.
        for f in os.listdir(cache_dir) if os.path.isdir(cache_dir) else []:
            if f.startswith(name + ".onnx-"):
                os.remove(os.path.join(cache_dir, f))
        writing = zoo_bench(a.sluice, path, feed, cached_config, a.device)
        src, pre, cached, rt = [], [], [], []
        for _ in range(a.repeats):
            src.append(zoo_bench(a.sluice, path, feed, config, a.device))
            pre.append(zoo_bench(a.sluice, prepared, feed, config, a.device))
            cached.append(zoo_bench(a.sluice, path, feed, cached_config,
                                    a.device))
            rt.append(zoo_ort(a.python, path, feed_file, a.threads))
        for label, runs in (("prepared", pre), ("cache", cached)):
            if not all(r["prepared_used"] for r in runs):
                print(f"note: {name}: the {label} model was not used",
                      file=sys.stderr)
        rec = {"name": name, "file_bytes": os.path.getsize(path),
               "weights_bytes": weights, "activation_bytes": activations,
               # Issue 29: a GPU session's host peak at most 1.2x the
               # weights + 100 MB; a CPU one's 1.5x + the activations.
               "bound_bytes": (1.2 * weights + 100 * MIB if gpu else
                               1.5 * weights + activations + 100 * MIB),
               "convert_s": convert_s, "sluice": src, "prepared": pre,
               "cache_writing": writing, "cache": cached, "onnxruntime": rt,
               "load": [load_before, os.getloadavg()[0]]}
        records.append(rec)
        print(f"{name}: sluice {med(src, 'create_s'):.3f} s "
              f"{med(src, 'peak_bytes') / MIB:.0f} MiB, prepared "
              f"{med(pre, 'create_s'):.3f} s, onnxruntime "
              f"{med(rt, 'create_s'):.3f} s", file=sys.stderr)
    with open(os.path.join(a.dir, "load_zoo.json"), "w") as f:
        json.dump({"threads": a.threads, "repeats": a.repeats,
                   "device": a.device,
                   "models": records}, f, indent=1)
    yes = {True: "yes", False: "**no**"}
    print("| model (weights, activations) | bound | sluice: create / peak RSS "
          "(process max) | onnxruntime: create / process max | sluice "
          "prepared: create / peak RSS | config's cache: writing / "
          "starting from it | RSS within bound | create <= onnxruntime | "
          "prepared < 0.1 x onnxruntime | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rec in records:
        s, p, o = rec["sluice"], rec["prepared"], rec["onnxruntime"]
        sc, pc, oc = med(s, "create_s"), med(p, "create_s"), med(o, "create_s")
        cc = med(rec["cache"], "create_s")
        wc = rec["cache_writing"]["create_s"]
        peak = max(med(s, "peak_bytes"), med(p, "peak_bytes"))
        print(f"| {rec['name']} ({rec['weights_bytes'] / MIB:.0f} MiB, "
              f"{rec['activation_bytes'] / MIB:.1f} MiB) | "
              f"{rec['bound_bytes'] / MIB:.0f} MiB | "
              f"{sc * 1e3:.0f} ms / {med(s, 'peak_bytes') / MIB:.0f} MiB "
              f"({med(s, 'process_max_bytes') / MIB:.0f}) | "
              f"{oc * 1e3:.0f} ms / "
              f"{med(o, 'process_max_bytes') / MIB:.0f} MiB | "
              f"{pc * 1e3:.1f} ms / {med(p, 'peak_bytes') / MIB:.0f} MiB | "
              f"{wc * 1e3:.0f} ms / {cc * 1e3:.1f} ms ({cc / oc:.3f}) | "
              f"{yes[peak <= rec['bound_bytes']]} | {yes[sc <= oc]} "
              f"({sc / oc:.2f}) | {yes[pc < 0.1 * oc]} ({pc / oc:.3f}) | "
              f"{rec['load'][0]:.1f}-{rec['load'][1]:.1f} |")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sluice", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--zoo", nargs="+", metavar="DIR",
                   help="the zoo-wide table over these folders' models")
    p.add_argument("--exclude", nargs="+", metavar="MODEL",
                   help="--zoo: leave out these models (file names less .onnx)")
    p.add_argument("--device", default="cpu:0",
                   help="--zoo: sluice's device (gpu:0: the host bound is "
                   "1.2x the weights + 100 MiB; onnxruntime stays on the CPU)")
    p.add_argument("--threads", type=int, default=2,
                   help="--zoo: intra-op threads of both runtimes")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    if a.zoo:
        return run_zoo(a)
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
