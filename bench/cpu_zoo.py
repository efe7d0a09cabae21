#!/usr/bin/env python3
"""sluice's CPU path beside onnxruntime's and OpenVINO's, on torchvision's
mobile and efficient CNNs (issue 32), in one run.

Each model (models/torchvision_zoo.py: exported by PyTorch at opset 17,
batch 1) is read from the same ONNX file with the same input by

  sluice       `sluice run` for the output, then `sluice bench --device
               cpu:0 --json --runs N` (p50) with use_gpu false,
               intra_op_threads T, inter_op_threads 1, defaults otherwise
  onnxruntime  CPUExecutionProvider, intra_op_num_threads T, one inter-op
               thread, sequential, all graph optimisations
  OpenVINO     CPU, PERFORMANCE_HINT LATENCY, INFERENCE_PRECISION_HINT
               f32, INFERENCE_NUM_THREADS T, one stream

at each thread count of --threads. The three alternate per model (sluice,
onnxruntime, OpenVINO, then again for --rounds rounds) so that drift of a
shared machine shows in all; each figure is the median of the rounds' p50
over --runs steps after --warmup. The load average is recorded before and
after each model. sluice's and OpenVINO's outputs are compared with
onnxruntime's (max |d| and relative L2). Where OpenVINO is not installed
(the GPU machine's host), onnxruntime alone is the peer.

    /work/venv-zoo/bin/python bench/cpu_zoo.py --sluice build/tools/sluice \\
        --out DIR [--models mobilenet_v3_small ...] [--threads 1 2] \\
        [--runs 15] [--rounds 2] [--profile]

--profile also writes, per model and thread count, where each runtime's
time goes, summed by op type: sluice's `bench` top ops, onnxruntime's
profiler (enable_profiling) and OpenVINO's PERF_COUNT, into
DIR/cpu_zoo_profile.md. Writes DIR/cpu_zoo.json and DIR/cpu_zoo.md and
prints the table.
"""
import argparse
import collections
import datetime
import json
import os
import platform
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))
sys.path.insert(0, HERE)
import torchvision_zoo  # noqa: E402  (bench/models/torchvision_zoo.py)
from bench_env import cpu_model, tool_env  # noqa: E402
from peers import compare, median_ms, one_line, output_file  # noqa: E402


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def loadavg():
    return list(os.getloadavg())


def peer_runtimes():
    """onnxruntime, an OpenVINO Core (None where OpenVINO is not installed:
    the GPU machine's host, where onnxruntime alone is the peer) and their
    versions."""
    import onnxruntime as ort
    versions = {"numpy": np.__version__, "onnxruntime": ort.__version__}
    try:
        import openvino as ov
        ov_core = ov.Core()
        versions["openvino"] = ov.__version__
    except ImportError:
        ov_core = None
        versions["openvino"] = "absent"
    return ort, ov_core, versions


def sluice_config(path, threads):
    with open(path, "w") as f:
        f.write("use_gpu: false\n"
                f"intra_op_threads: {threads}\n"
                "inter_op_threads: 1\n")
    return path


def sluice_output(args, model, x_path, config, out_dir):
    cmd = [args.sluice, "run", model, "--input", f"x={x_path}",
           "--output-dir", out_dir, "--device", "cpu:0", "--config", config]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=tool_env(args.sluice), timeout=args.timeout)
    if r.returncode != 0:
        raise RuntimeError("sluice run: " + one_line(r.stderr or r.stdout))
    return np.load(output_file(out_dir))


def sluice_bench(args, model, x_path, config, extra=()):
    cmd = [args.sluice, "bench", model, "--input", f"x={x_path}", "--device",
           "cpu:0", "--config", config, "--json", "--runs", str(args.runs),
           "--warmup", str(args.warmup)] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=tool_env(args.sluice), timeout=args.timeout)
    try:
        data = json.loads(r.stdout)
    except ValueError:
        data = {"ok": False, "error": one_line(r.stderr or r.stdout)}
    if r.returncode != 0 or not data.get("ok"):
        raise RuntimeError("sluice bench: " +
                           one_line(str(data.get("error", data))))
    return data


def ort_session(ort, model, threads, profile_prefix=None):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def ov_compiled(ov_core, model, threads, perf_count=False):
    import openvino.properties as props
    import openvino.properties.hint as hints
    config = {hints.performance_mode: hints.PerformanceMode.LATENCY,
              hints.inference_precision: "f32",
              props.inference_num_threads: threads,
              props.num_streams: 1,
              props.enable_profiling: perf_count}
    return ov_core.compile_model(model, "CPU", config)


def ort_profile(ort, model, threads, x, steps, prefix):
    """Milliseconds per step by op type from onnxruntime's profiler."""
    sess = ort_session(ort, model, threads, prefix)
    for _ in range(3):
        sess.run(None, {"x": x})
    path = None
    sess.end_profiling()
    sess = ort_session(ort, model, threads, prefix)
    for _ in range(2):
        sess.run(None, {"x": x})
    for _ in range(steps):
        sess.run(None, {"x": x})
    path = sess.end_profiling()
    with open(path) as f:
        events = json.load(f)
    by_op = collections.Counter()
    count = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            op = e.get("args", {}).get("op_name", "?")
            by_op[op] += e.get("dur", 0)
            count[op] += 1
    total = steps + 2
    return {op: (us / total / 1e3, count[op] // total)
            for op, us in by_op.most_common()}


def ov_profile(ov_core, model, threads, x, steps):
    """Milliseconds per step by node type from OpenVINO's PERF_COUNT."""
    compiled = ov_compiled(ov_core, model, threads, perf_count=True)
    req = compiled.create_infer_request()
    for _ in range(3):
        req.infer({0: x})
    by_type = collections.Counter()
    count = collections.Counter()
    for _ in range(steps):
        req.infer({0: x})
        for p in req.profiling_info:
            if p.status.name != "EXECUTED":
                continue
            key = f"{p.node_type} ({p.exec_type})"
            by_type[key] += p.real_time.total_seconds() * 1e3
            count[key] += 1
    return {k: (ms / steps, count[k] // steps)
            for k, ms in by_type.most_common()}


def sluice_profile(args, model, x_path, config, trace):
    """Milliseconds per step by op type from one traced `sluice bench`
    step (its --trace), the nodes of each op counted."""
    sluice_bench(args, model, x_path, config, extra=["--trace", trace])
    with open(trace) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    by_op = collections.Counter()
    count = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and "op" in e.get("args", {}):
            by_op[e["args"]["op"]] += e["dur"] / 1e3
            count[e["args"]["op"]] += 1
    return {op: (ms, count[op]) for op, ms in by_op.most_common()}


def run_model(args, ort, ov_core, name, threads):
    paths = torchvision_zoo.write(args.models_dir, name)
    x = np.load(paths["x"])
    config = sluice_config(os.path.join(args.out, f"cpu_t{threads}.pbtxt"),
                           threads)
    rec = {"name": name, "threads": threads, "load_before": loadavg()}
    sess = ort_session(ort, paths["onnx"], threads)
    y_ort = sess.run(None, {"x": x})[0]
    y_sluice = sluice_output(args, paths["onnx"], paths["x"], config,
                             os.path.join(args.out, f"{name}_out"))
    rec["sluice_vs_ort"] = compare(y_sluice, y_ort)
    req = None
    if ov_core is not None:
        compiled = ov_compiled(ov_core, paths["onnx"], threads)
        req = compiled.create_infer_request()
        y_ov = np.array(req.infer({0: x})[0])
        rec["ov_vs_ort"] = compare(y_ov, y_ort)
    sl, orr, ovv = [], [], []
    for _ in range(args.rounds):
        data = sluice_bench(args, paths["onnx"], paths["x"], config)
        sl.append(data["latency_s"]["p50"] * 1e3)
        orr.append(median_ms(lambda: sess.run(None, {"x": x}), args.runs,
                             args.warmup)[0])
        ov_text = "absent"
        if req is not None:
            ovv.append(median_ms(lambda: req.infer({0: x}), args.runs,
                                 args.warmup)[0])
            ov_text = f"{ovv[-1]:.2f} ms"
        log(f"  {name} t{threads}: sluice {sl[-1]:.2f} ms, onnxruntime "
            f"{orr[-1]:.2f} ms, OpenVINO {ov_text} "
            f"(load {os.getloadavg()[0]:.2f})")
    rec.update({"sluice_ms": float(np.median(sl)),
                "ort_ms": float(np.median(orr)),
                "sluice_rounds_ms": sl, "ort_rounds_ms": orr,
                "load_after": loadavg()})
    if ovv:
        rec.update({"ov_ms": float(np.median(ovv)), "ov_rounds_ms": ovv})
    rec["best_peer_ms"] = min(rec["ort_ms"], rec.get("ov_ms", float("inf")))
    # Above 1: sluice is faster than the faster of the two.
    rec["ratio"] = rec["best_peer_ms"] / rec["sluice_ms"]
    if args.profile:
        rec["profile"] = {
            "sluice": sluice_profile(
                args, paths["onnx"], paths["x"], config,
                os.path.join(args.out, f"trace_{name}_t{threads}.json")),
            "onnxruntime": ort_profile(
                ort, paths["onnx"], threads, x, args.runs,
                os.path.join(args.out, f"ort_{name}_t{threads}")),
        }
        if ov_core is not None:
            rec["profile"]["openvino"] = ov_profile(ov_core, paths["onnx"],
                                                    threads, x, args.runs)
    return rec


def markdown(report):
    m = report["machine"]
    lines = [f"# sluice, onnxruntime and OpenVINO on the CPU — {report['date']}",
             "", f"Machine: {m['hostname']}, {m['cpu']} ({m['cores']} cores). "
             f"Versions: {', '.join(f'{k} {v}' for k, v in report['versions'].items())}. "
             f"Command: `{report['command']}`.", "",
             "p50 ms per step (median over rounds); ratio = the faster peer's ms "
             "/ sluice's ms (above 1: sluice is faster); rel L2 of each output "
             "against onnxruntime's; load = 1-minute load average before/after.",
             "", "| model | threads | sluice ms | onnxruntime ms | OpenVINO ms | "
             "ratio | sluice rel L2 | OpenVINO rel L2 | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    ratios = collections.defaultdict(list)
    for r in report["models"]:
        if "error" in r:
            lines.append(f"| {r['name']} | {r.get('threads', '')} | "
                         f"{r['error']} | | | | | | |")
            continue
        ratios[r["threads"]].append(r["ratio"])
        ov_ms = f"{r['ov_ms']:.2f}" if "ov_ms" in r else "—"
        ov_l2 = (f"{r['ov_vs_ort'].get('rel_l2', float('nan')):.1e}"
                 if "ov_vs_ort" in r else "—")
        lines.append(
            f"| {r['name']} | {r['threads']} | {r['sluice_ms']:.2f} | "
            f"{r['ort_ms']:.2f} | {ov_ms} | {r['ratio']:.2f} | "
            f"{r['sluice_vs_ort'].get('rel_l2', float('nan')):.1e} | "
            f"{ov_l2} | "
            f"{r['load_before'][0]:.1f}/{r['load_after'][0]:.1f} |")
    for t, rs in sorted(ratios.items()):
        gm = float(np.exp(np.mean(np.log(rs))))
        lines.append(f"| geometric mean | {t} | | | | {gm:.2f} | | | |")
    return "\n".join(lines) + "\n"


def profile_markdown(report, top=10):
    lines = [f"# Where the time goes — {report['date']}", "",
             "ms per step by op type (count per step); sluice's ops are its "
             "graph after optimisation, onnxruntime's and OpenVINO's theirs.",
             ""]
    for r in report["models"]:
        if "profile" not in r:
            continue
        ov = f"{r['ov_ms']:.2f} ms" if "ov_ms" in r else "absent"
        lines.append(f"## {r['name']}, {r['threads']} threads "
                     f"(sluice {r['sluice_ms']:.2f} ms, onnxruntime "
                     f"{r['ort_ms']:.2f} ms, OpenVINO {ov})")
        lines.append("")
        for who, prof in r["profile"].items():
            items = sorted(prof.items(), key=lambda kv: -kv[1][0])[:top]
            total = sum(v[0] for v in prof.values())
            lines.append(f"- {who} (sum {total:.2f} ms): " + ", ".join(
                f"{k} {v[0]:.2f} ({v[1]})" for k, v in items))
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", required=True, help="the sluice binary")
    ap.add_argument("--out", required=True, help="folder for the results")
    ap.add_argument("--models-dir", default=None,
                    help="where the exported models are kept (default "
                         "OUT/models); exported there when missing")
    ap.add_argument("--models", nargs="+", choices=torchvision_zoo.MODELS,
                    default=torchvision_zoo.MODELS)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    args.sluice = os.path.abspath(args.sluice)
    args.models_dir = args.models_dir or os.path.join(args.out, "models")
    os.makedirs(args.out, exist_ok=True)
    ort, ov_core, versions = peer_runtimes()
    models = []
    for name in args.models:
        for threads in args.threads:
            log(f"{name} t{threads}")
            try:
                models.append(run_model(args, ort, ov_core, name, threads))
            except Exception as e:  # record and go on
                models.append({"name": name, "threads": threads,
                               "error": one_line(f"{type(e).__name__}: {e}")})
                log("  " + models[-1]["error"])
    report = {"date": datetime.datetime.now().astimezone().isoformat(
                  timespec="seconds"),
              "machine": {"hostname": platform.node(), "cpu": cpu_model(),
                          "cores": os.cpu_count()},
              "command": " ".join(sys.argv), "sluice": args.sluice,
              "versions": versions, "models": models}
    with open(os.path.join(args.out, "cpu_zoo.json"), "w") as f:
        json.dump(report, f, indent=2)
    md = markdown(report)
    with open(os.path.join(args.out, "cpu_zoo.md"), "w") as f:
        f.write(md)
    if args.profile:
        with open(os.path.join(args.out, "cpu_zoo_profile.md"), "w") as f:
            f.write(profile_markdown(report))
    print(md)
    return 0 if all("error" not in m for m in models) else 1


if __name__ == "__main__":
    sys.exit(main())
