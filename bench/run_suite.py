#!/usr/bin/env python3
"""Runs sluice's benchmark set on this machine; writes JSON and Markdown.

The Google Benchmark programs found in --bin (executor_bench, gpu_bench,
load_bench, placer_bench; missing ones are skipped and said so), each with
--benchmark_format=json --benchmark_out=OUT/NAME.json, then, with --sluice,
`sluice bench --json` on the transformer encoder layer of
bench/models/encoder_layer.py at batch 1 and 32, on /gpu:0 when sluice sees
a GPU and on /cpu:0.

    python3 bench/run_suite.py --bin .gpu/bin --sluice .gpu/bin/sluice --out $OUT
    python3 bench/run_suite.py --bin build/bench --out /tmp/suite --quick

Writes OUT/suite.json (every raw result: each program's Google Benchmark
JSON, each sluice bench JSON) and OUT/suite.md (the machine and date, then
one table per program: benchmark, time, and its user counters such as
us_per_node, TFLOP/s, of_raw, GB/s), and prints the Markdown. --quick leaves
out placer_bench's 1M-node cases and takes fewer sluice steps; --filter
REGEX (for every program) or --filter PROGRAM=REGEX narrows what runs.
Plain Python 3 and NumPy; onnx for the encoder layer.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_env import cpu_model, nvidia_smi_gpus, sluice_gpus, tool_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = ("executor_bench", "gpu_bench", "load_bench", "placer_bench")
# --quick: placer_bench without its 1M-node cases (seconds each).
QUICK_FILTERS = {"placer_bench": "-/1000000$"}


def machine_info():
    return {"hostname": platform.node(), "cpu": cpu_model(), "cores": os.cpu_count(),
            "gpus": nvidia_smi_gpus(), "kernel": platform.release(),
            "python": platform.python_version()}


def parse_filters(values):
    """--filter values: {program or "*": regex}."""
    filters = {}
    for v in values or []:
        prog, sep, regex = v.partition("=")
        if sep and prog in PROGRAMS:
            filters[prog] = regex
        else:
            filters["*"] = v
    return filters


def run_program(path, out_dir, regex, min_time, timeout):
    name = os.path.basename(path)
    json_path = os.path.join(out_dir, f"{name}.json")
    cmd = [path, "--benchmark_format=json", f"--benchmark_out={json_path}",
           "--benchmark_out_format=json"]
    if regex:
        cmd.append(f"--benchmark_filter={regex}")
    if min_time:
        cmd.append(f"--benchmark_min_time={min_time}")
    rec = {"program": name, "cmd": cmd}
    t0 = time.perf_counter()
    log_path = os.path.join(out_dir, f"{name}.log")
    try:
        with open(log_path, "w") as log_file:
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=log_file,
                               env=tool_env(path), timeout=timeout)
        rec["rc"] = r.returncode
    except subprocess.TimeoutExpired:
        rec["rc"] = None
        rec["error"] = f"timed out after {timeout:.0f} s (partial results kept)"
    rec["wall_s"] = round(time.perf_counter() - t0, 1)
    try:
        with open(json_path) as f:
            rec["result"] = json.load(f)
    except (OSError, ValueError) as e:
        rec.setdefault("error", f"no JSON result: {e}")
        rec["log_tail"] = tail(log_path)
    if rec.get("rc") not in (0, None) and "error" not in rec:
        rec["error"] = f"exit {rec['rc']}"
        rec["log_tail"] = tail(log_path)
    return rec


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-lines:]
    except OSError:
        return []


def sluice_benches(sluice, out_dir, quick, timeout, notes):
    sys.path.insert(0, os.path.join(HERE, "models"))
    import encoder_layer  # bench/models/encoder_layer.py
    work = os.path.join(out_dir, "work")
    gpus, why = sluice_gpus(sluice)
    devices = (["gpu:0"] if gpus else []) + ["cpu:0"]
    if not gpus:
        notes.append(f"sluice bench on the GPU skipped: {why or 'no GPU'}")
    results = []
    os.makedirs(work, exist_ok=True)
    # `use_gpu: false` hides every GPU: --device cpu:0 alone still ran on
    # /gpu:0 in the H200 build of 2026-11-29.
    cpu_config = os.path.join(work, "cpu_only.pbtxt")
    with open(cpu_config, "w") as f:
        f.write("use_gpu: false\n")
    for batch in (1, 32):
        paths = encoder_layer.write(work, batch)
        for device in devices:
            cpu_runs = (3 if quick else 10) if batch == 32 else (5 if quick else 20)
            runs = (30 if quick else 100) if device.startswith("gpu") else cpu_runs
            cmd = [sluice, "bench", paths["onnx"], "--input", f"x={paths['x']}",
                   "--device", device, "--runs", str(runs), "--json", "--top", "5"]
            if device.startswith("cpu"):
                cmd += ["--config", cpu_config]
            rec = {"model": f"encoder_layer_b{batch}", "device": device,
                   "cmd": cmd}
            t0 = time.perf_counter()
            try:
                r = subprocess.run(cmd, capture_output=True, text=True,
                                   env=tool_env(sluice), timeout=timeout)
                rec["rc"] = r.returncode
                try:
                    rec["result"] = json.loads(r.stdout)
                except ValueError:
                    rec["error"] = " | ".join((r.stderr or r.stdout).strip().splitlines())[:600]
                if r.returncode != 0 and "error" not in rec:
                    rec["error"] = str(rec["result"].get("error", f"exit {r.returncode}"))
            except subprocess.TimeoutExpired:
                rec["error"] = f"timed out after {timeout:.0f} s"
            rec["wall_s"] = round(time.perf_counter() - t0, 1)
            print(f"  sluice bench encoder_layer_b{batch} on {device}: "
                  f"{rec.get('error') or 'ok'} ({rec['wall_s']} s)",
                  file=sys.stderr, flush=True)
            results.append(rec)
    shutil.rmtree(work, ignore_errors=True)
    return results


def fmt_num(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if v == 0:
        return "0"
    a = abs(v)
    if float(v).is_integer() and a < 1e15:
        return f"{v:,.0f}"
    if a >= 1e6 or a < 1e-3:
        return f"{v:.3g}"
    if a >= 100:
        return f"{v:,.0f}" if float(v).is_integer() or a >= 1e4 else f"{v:.1f}"
    return f"{v:.3g}" if a < 1 else f"{v:.3f}".rstrip("0").rstrip(".")


BENCH_KEYS = {"name", "family_index", "per_family_instance_index", "run_name",
              "run_type", "repetitions", "repetition_index", "threads",
              "iterations", "real_time", "cpu_time", "time_unit",
              "aggregate_name", "aggregate_unit", "error_occurred",
              "error_message", "label", "skipped", "skip_message"}


def program_table(rec):
    lines = [f"## {rec['program']}", ""]
    res = rec.get("result") or {}
    ctx = res.get("context", {})
    meta = [f"wall {rec.get('wall_s')} s"]
    if ctx.get("num_cpus"):
        meta.append(f"{ctx['num_cpus']} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz")
    if ctx.get("library_build_type"):
        # Debian's libbenchmark says "debug"; the timed code is sluice's own.
        meta.append(f"libbenchmark build type {ctx['library_build_type']}")
    filt = next((c for c in rec["cmd"] if c.startswith("--benchmark_filter=")), None)
    if filt:
        meta.append(f"`{filt}`")
    lines.append("; ".join(meta) + ".")
    if rec.get("error"):
        lines += ["", f"**{rec['error']}**"]
        if rec.get("log_tail"):
            lines += ["", "```", *rec["log_tail"], "```"]
    benches = res.get("benchmarks", [])
    if not benches:
        return lines + [""]
    counters = []
    for b in benches:
        for k in b:
            if k not in BENCH_KEYS and k not in counters and \
                    isinstance(b[k], (int, float)):
                counters.append(k)
    lines += ["", "| benchmark | time | CPU time | iterations |"
              + "".join(f" {c} |" for c in counters),
              "|---|---|---|---|" + "---|" * len(counters)]
    for b in benches:
        name = b["name"]
        if b.get("error_occurred") or b.get("skipped"):
            msg = b.get("error_message") or b.get("skip_message") or "skipped"
            lines.append(f"| {name} | skipped: {msg} | | |" + " |" * len(counters))
            continue
        unit = b.get("time_unit", "ns")
        lines.append(
            f"| {name} | {fmt_num(b['real_time'])} {unit} | "
            f"{fmt_num(b['cpu_time'])} {unit} | {b.get('iterations', '')} |"
            + "".join(f" {fmt_num(b[k]) if k in b else ''} |" for k in counters))
    return lines + [""]


def sluice_table(results):
    lines = ["## sluice bench: transformer encoder layer (d768, 12 heads, ff3072, seq 128, fp32)",
             "",
             "| model | device | runs | p50 ms | min ms | p90 ms | steps/s | "
             "session create s | first step ms | peak GPU memory MiB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        d = r.get("result") or {}
        if r.get("error") or not d.get("ok"):
            lines.append(f"| {r['model']} | {r['device']} | failed: "
                         f"{r.get('error', '?')} | | | | | | | |")
            continue
        lat = d["latency_s"]
        peak = max((m.get("peak_bytes_in_use", 0) for m in d.get("peak_memory", [])),
                   default=None)
        lines.append(
            f"| {r['model']} | {r['device']} | {d['runs']} | {lat['p50'] * 1e3:.3f} | "
            f"{lat['min'] * 1e3:.3f} | {lat['p90'] * 1e3:.3f} | "
            f"{d['steps_per_s']:.1f} | {d['session_create_s']:.3f} | "
            f"{d['first_run_s'] * 1e3:.1f} | "
            + (f"{peak / 2**20:.1f}" if peak is not None else "—") + " |")
    return lines + [""]


def markdown(report):
    m = report["machine"]
    lines = [f"# sluice benchmark suite — {report['date']}", "",
             f"Machine: {m['hostname']}; CPU: {m['cpu']} ({m['cores']} cores); "
             f"GPUs: {'; '.join(m['gpus']) or 'none (no nvidia-smi)'}.  ",
             f"Binaries: {report['bin']}; sluice: {report.get('sluice') or '—'}; "
             f"wall {report['wall_s']} s.", ""]
    for rec in report["programs"]:
        lines += program_table(rec)
    if report.get("sluice_bench"):
        lines += sluice_table(report["sluice_bench"])
    if report["notes"]:
        lines += ["Notes:", ""] + [f"- {n}" for n in report["notes"]] + [""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="folder with the *_bench programs")
    ap.add_argument("--sluice", help="the sluice binary (for sluice bench)")
    ap.add_argument("--out", required=True, help="folder for suite.json / suite.md")
    ap.add_argument("--quick", action="store_true",
                    help="no 1M-node placer cases, fewer sluice steps")
    ap.add_argument("--filter", action="append", metavar="[PROGRAM=]REGEX",
                    help="--benchmark_filter for every program, or for one "
                         "(repeatable; a leading '-' excludes)")
    ap.add_argument("--programs", nargs="+", choices=PROGRAMS,
                    help="run only these programs")
    ap.add_argument("--min-time", help="--benchmark_min_time for every program")
    ap.add_argument("--timeout", type=float, default=300,
                    help="limit for each program in seconds (default 300)")
    args = ap.parse_args()
    start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    filters = parse_filters(args.filter)
    notes = []
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "machine": machine_info(), "bin": os.path.abspath(args.bin),
              "sluice": os.path.abspath(args.sluice) if args.sluice else None,
              "quick": args.quick, "programs": [], "notes": notes}
    for prog in args.programs or PROGRAMS:
        path = os.path.join(args.bin, prog)
        if not os.access(path, os.X_OK):
            notes.append(f"{prog}: not in {args.bin}, skipped")
            continue
        regex = filters.get(prog, filters.get("*"))
        if regex is None and args.quick:
            regex = QUICK_FILTERS.get(prog)
        print(f"{prog} ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
        rec = run_program(os.path.abspath(path), args.out, regex, args.min_time,
                          args.timeout)
        print(f"  {rec.get('error') or 'ok'} ({rec['wall_s']} s)", file=sys.stderr,
              flush=True)
        report["programs"].append(rec)
    if args.sluice:
        print(f"sluice bench ({time.perf_counter() - start:.0f} s)", file=sys.stderr,
              flush=True)
        try:
            report["sluice_bench"] = sluice_benches(
                os.path.abspath(args.sluice), args.out, args.quick, args.timeout, notes)
        except Exception as e:  # onnx missing, a model that failed to write, ...
            notes.append(f"sluice bench skipped: {type(e).__name__}: {e}")
    report["wall_s"] = round(time.perf_counter() - start, 1)
    with open(os.path.join(args.out, "suite.json"), "w") as f:
        json.dump(report, f, indent=2)
    md = markdown(report)
    with open(os.path.join(args.out, "suite.md"), "w") as f:
        f.write(md)
    print(md)
    failed = [r["program"] for r in report["programs"] if r.get("error")]
    failed += [f"sluice bench {r['model']} {r['device']}"
               for r in report.get("sluice_bench", []) if r.get("error")]
    print(f"wrote {args.out}/suite.json and suite.md in {report['wall_s']} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
