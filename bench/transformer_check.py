#!/usr/bin/env python3
"""Issue 31's transformer zoo on the CPU: each model of
models/transformer_zoo.py, exported with TorchScript and with torch.export,
run by sluice against PyTorch's own output and timed beside onnxruntime and
OpenVINO, in one run.

For each model and exporter (the file made once by transformer_zoo.write):

  outputs  `sluice run` on /cpu:0 and onnxruntime's CPU provider, each
           compared with PyTorch's output (relative L2, max |d|)
  speed    `sluice bench --json` (p50 of --runs after --warmup) with
           use_gpu false, intra_op_threads T, one inter-op thread;
           onnxruntime (CPU provider, T threads, sequential) and OpenVINO
           (CPU, latency hint, f32, T threads, one stream) in this process;
           the three alternate for --rounds rounds, medians of the rounds

    /work/venv-zoo/bin/python bench/transformer_check.py \\
        --sluice build/tools/sluice --out DIR [--models-dir DIR] \\
        [--models llama_gqa whisper_encoder] [--exporter torchscript dynamo] \\
        [--threads 2] [--runs 20] [--rounds 2] [--max-rel-l2 1e-5]

Writes DIR/transformer_check.json and .md and prints the table. Exits 1 when
an output is further from PyTorch's than --max-rel-l2 or a run fails; an
export the exporter itself refuses is listed and does not count.
"""
import argparse
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
import transformer_zoo  # noqa: E402  (bench/models/transformer_zoo.py)
from bench_env import cpu_model, tool_env  # noqa: E402
from cpu_zoo import (loadavg, log, ort_session, ov_compiled,  # noqa: E402
                     peer_runtimes, sluice_config)
from peers import compare, median_ms, one_line, output_file  # noqa: E402


def sluice(args, *argv):
    r = subprocess.run([args.sluice, *argv], capture_output=True, text=True,
                       env=tool_env(args.sluice), timeout=args.timeout)
    if r.returncode != 0:
        raise RuntimeError(f"sluice {argv[0]}: " + one_line(r.stderr or r.stdout))
    return r.stdout


def check(args, ort, ov_core, name, exporter, threads):
    try:
        p = transformer_zoo.write(args.models_dir, name, exporter)
    except Exception as e:  # the exporter's own failure
        return {"name": name, "exporter": exporter, "threads": threads,
                "export_error": one_line(f"{type(e).__name__}: {e}")}
    feeds = dict(np.load(p["inputs"]))
    want = np.load(p["torch_y"])
    config = sluice_config(os.path.join(args.out, f"cpu_t{threads}.pbtxt"),
                           threads)
    rec = {"name": name, "exporter": exporter, "threads": threads,
           "load_before": loadavg()}
    out_dir = os.path.join(args.out, f"{name}_{exporter}_out")
    sluice(args, "run", p["onnx"], "--input", p["inputs"], "--device",
           "cpu:0", "--config", config, "--output-dir", out_dir)
    rec["sluice_vs_torch"] = compare(np.load(output_file(out_dir)), want)
    sess = ort_session(ort, p["onnx"], threads)
    rec["ort_vs_torch"] = compare(sess.run(None, feeds)[0], want)
    req = None
    if ov_core is not None:
        req = ov_compiled(ov_core, p["onnx"], threads).create_infer_request()
        rec["ov_vs_torch"] = compare(np.array(req.infer(feeds)[0]), want)
    sl, orr, ovv = [], [], []
    for _ in range(args.rounds):
        data = json.loads(sluice(args, "bench", p["onnx"], "--input",
                                 p["inputs"], "--device", "cpu:0", "--config",
                                 config, "--json", "--runs", str(args.runs),
                                 "--warmup", str(args.warmup)))
        sl.append(data["latency_s"]["p50"] * 1e3)
        orr.append(median_ms(lambda: sess.run(None, feeds), args.runs,
                             args.warmup)[0])
        if req is not None:
            ovv.append(median_ms(lambda: req.infer(feeds), args.runs,
                                 args.warmup)[0])
    rec.update({"sluice_ms": float(np.median(sl)),
                "ort_ms": float(np.median(orr)),
                "load_after": loadavg()})
    if ovv:
        rec["ov_ms"] = float(np.median(ovv))
    rec["ratio"] = min(rec["ort_ms"], rec.get("ov_ms", float("inf"))) / \
        rec["sluice_ms"]
    log(f"  {name} {exporter} t{threads}: sluice {rec['sluice_ms']:.2f} ms "
        f"(rel L2 {rec['sluice_vs_torch'].get('rel_l2', float('nan')):.1e}), "
        f"onnxruntime {rec['ort_ms']:.2f}, OpenVINO "
        f"{rec.get('ov_ms', float('nan')):.2f}, ratio {rec['ratio']:.2f}")
    return rec


def markdown(report):
    m = report["machine"]
    lines = [f"# Transformers on the CPU: sluice against PyTorch, onnxruntime "
             f"and OpenVINO — {report['date']}", "",
             f"Machine: {m['hostname']}, {m['cpu']} ({m['cores']} cores). "
             f"Versions: {', '.join(f'{k} {v}' for k, v in report['versions'].items())}. "
             f"Command: `{report['command']}`.", "",
             "rel L2 against PyTorch's output; p50 ms (median over rounds); "
             "ratio = the faster peer's ms / sluice's (above 1: sluice is "
             "faster); load = 1-minute load average before/after.", "",
             "| model | exporter | threads | sluice rel L2 | onnxruntime rel L2 | "
             "OpenVINO rel L2 | sluice ms | onnxruntime ms | OpenVINO ms | "
             "ratio | load |", "|---|---|---|---|---|---|---|---|---|---|---|"]

    def l2(r, k):
        v = r.get(k, {}).get("rel_l2")
        return "—" if v is None else f"{v:.1e}"

    for r in report["models"]:
        head = f"| {r['name']} | {r['exporter']} | {r['threads']} |"
        if "export_error" in r:
            lines.append(f"{head} export failed: {r['export_error']} |||||||")
        elif "error" in r:
            lines.append(f"{head} {r['error']} |||||||")
        else:
            ov = f"{r['ov_ms']:.2f}" if "ov_ms" in r else "—"
            lines.append(
                f"{head} {l2(r, 'sluice_vs_torch')} | {l2(r, 'ort_vs_torch')} | "
                f"{l2(r, 'ov_vs_torch')} | {r['sluice_ms']:.2f} | "
                f"{r['ort_ms']:.2f} | {ov} | {r['ratio']:.2f} | "
                f"{r['load_before'][0]:.1f}/{r['load_after'][0]:.1f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models-dir", default=None,
                    help="where the exports are kept (default OUT/models)")
    ap.add_argument("--models", nargs="+", default=transformer_zoo.MODELS,
                    choices=transformer_zoo.MODELS)
    ap.add_argument("--exporter", nargs="+", default=transformer_zoo.EXPORTERS,
                    choices=transformer_zoo.EXPORTERS)
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-rel-l2", type=float, default=1e-5)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    args.sluice = os.path.abspath(args.sluice)
    args.models_dir = args.models_dir or os.path.join(args.out, "models")
    os.makedirs(args.out, exist_ok=True)
    ort, ov_core, versions = peer_runtimes()
    records, bad = [], 0
    for name in args.models:
        for exporter in args.exporter:
            for threads in args.threads:
                log(f"{name} {exporter} t{threads}")
                try:
                    r = check(args, ort, ov_core, name, exporter, threads)
                except Exception as e:  # record and go on
                    r = {"name": name, "exporter": exporter,
                         "threads": threads,
                         "error": one_line(f"{type(e).__name__}: {e}")}
                    log("  " + r["error"])
                if "error" in r or (
                        "sluice_vs_torch" in r and
                        not r["sluice_vs_torch"].get("rel_l2", 1.0) <=
                        args.max_rel_l2):
                    bad += 1
                records.append(r)
    report = {"date": datetime.datetime.now().astimezone().isoformat(
                  timespec="seconds"),
              "machine": {"hostname": platform.node(), "cpu": cpu_model(),
                          "cores": os.cpu_count()},
              "command": " ".join(sys.argv), "versions": versions,
              "models": records}
    with open(os.path.join(args.out, "transformer_check.json"), "w") as f:
        json.dump(report, f, indent=2)
    md = markdown(report)
    with open(os.path.join(args.out, "transformer_check.md"), "w") as f:
        f.write(md)
    print(md)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
