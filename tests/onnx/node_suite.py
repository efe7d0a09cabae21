#!/usr/bin/env python3
"""Runs the ONNX backend node test cases through the `sluice` CLI and says,
case by case, which pass: the measurement behind issue 12 (ONNX conformance).

The cases are the ones the `onnx` package generates from
`onnx.backend.test.case.node` (model.onnx, test_data_set_*/input_*.pb and
output_*.pb); they are written once per onnx version under out/ (or read from
--cases). Each case's inputs become .npy files, `sluice run MODEL --input
NAME=FILE.npy ... --output-dir DIR --json --device cpu:0` runs it, and each
output is compared with the expected one (same dtype and shape, values within
rtol 1e-3 / atol 1e-5, NaNs equal). Cases whose inputs or outputs are not
tensors (sequences, optionals, maps) or are strings are skipped, with the
reason.

Run from the repository root, in the environment scripts/setup.sh --onnx
makes (.venv-onnx: numpy, onnx, onnxruntime from tests/onnx/requirements.txt):

    .venv-onnx/bin/python tests/onnx/node_suite.py --sluice build/tools/sluice \
        --table out/node_suite.md

Prints one line per case and the totals by opset range; --table writes the
per-case table as Markdown, --json the same as JSON; --filter REGEX limits the
cases; --expect FILE fails (exit 1) unless every case listed there passes.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
RANGES = [("7-12", 0, 12), ("13-18", 13, 18), ("19+", 19, 10**9)]


def generate_cases(out_dir):
    """Writes every node test case of the installed onnx package to out_dir,
    as onnx's own `backend-test-tools generate-data` does."""
    from onnx.backend.test.case import node as node_cases
    os.makedirs(out_dir, exist_ok=True)
    for case in node_cases.collect_testcases(None):
        case_dir = os.path.join(out_dir, case.name)
        os.makedirs(case_dir, exist_ok=True)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            set_dir = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(set_dir, exist_ok=True)
            for kind, values, infos in (("input", inputs, graph.input),
                                        ("output", outputs, graph.output)):
                for j, value in enumerate(values):
                    info = infos[j]
                    if not info.type.HasField("tensor_type"):
                        continue  # skipped when run: not a tensor case
                    if not isinstance(value, onnx.TensorProto):
                        value = numpy_helper.from_array(np.asarray(value),
                                                        info.name)
                    with open(os.path.join(set_dir, f"{kind}_{j}.pb"),
                              "wb") as f:
                        f.write(value.SerializeToString())
    with open(os.path.join(out_dir, "COMPLETE"), "w") as f:
        f.write(generator_stamp())


def generator_stamp():
    """What the cases were generated with. Some expected outputs come from
    numpy and ml_dtypes (values the spec leaves undefined), so cases written
    by other versions of them are written again."""
    import ml_dtypes
    return (f"onnx {onnx.__version__} numpy {np.__version__} "
            f"ml_dtypes {ml_dtypes.__version__}\n")


def cases_are_current(cases_dir):
    stamp = os.path.join(cases_dir, "COMPLETE")
    if not os.path.exists(stamp):
        return False
    with open(stamp) as f:
        return f.read() == generator_stamp()


def default_cases_dir():
    return os.path.join(ROOT, "out", f"onnx_node_cases-{onnx.__version__}")


def model_opset(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def file_name_for(name):
    """The CLI's output file name for an output (tools/run_command.cc)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    if name in ("", ".", ".."):
        name = "output"
    return name + ".npy"


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def first_error(stdout, stderr):
    try:
        doc = json.loads(stdout)
        errors = doc.get("errors") or []
        if errors:
            return " | ".join(str(e) for e in errors)
    except (json.JSONDecodeError, AttributeError):
        pass
    text = (stderr or stdout or "").strip().splitlines()
    return " | ".join(text[:3]) if text else "no output"


def compare(expected, actual, rtol, atol):
    if expected.dtype.name == "bfloat16" and actual.dtype == np.float32:
        # .npy has no bfloat16: the CLI writes bfloat16 outputs as float32.
        actual = actual.astype(expected.dtype)
    if expected.dtype != actual.dtype:
        return f"dtype {actual.dtype}, expected {expected.dtype}"
    if expected.shape != actual.shape:
        return f"shape {list(actual.shape)}, expected {list(expected.shape)}"
    if expected.dtype == np.bool_ or np.issubdtype(expected.dtype, np.integer):
        bad = expected != actual
    else:
        e = expected.astype(np.float64)
        a = actual.astype(np.float64)
        both_nan = np.isnan(e) & np.isnan(a)
        with np.errstate(invalid="ignore"):
            bad = ~(both_nan | (e == a) |
                    (np.abs(a - e) <= atol + rtol * np.abs(e)))
    if bad.any():
        idx = np.argwhere(bad)[0]
        return (f"{int(bad.sum())} of {bad.size} values differ, first at "
                f"{tuple(int(i) for i in idx)}: {actual[tuple(idx)]} vs "
                f"{expected[tuple(idx)]}")
    return ""


def run_case(case_dir, sluice, rtol, atol, timeout):
    """Returns (status, reason, opset, ops): status is pass, fail, error or
    skip."""
    name = os.path.basename(case_dir)
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    opset = model_opset(model)
    ops = sorted({n.op_type for n in model.graph.node})
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    for info in list(inputs) + list(model.graph.output):
        if not info.type.HasField("tensor_type"):
            return "skip", f"{info.name} is not a tensor", opset, ops
        if info.type.tensor_type.elem_type == onnx.TensorProto.STRING:
            return "skip", f"{info.name} is a string tensor", opset, ops
    sets = sorted(d for d in os.listdir(case_dir)
                  if d.startswith("test_data_set_"))
    if not sets:
        return "skip", "no data set", opset, ops
    with tempfile.TemporaryDirectory(prefix=f"sluice_{name}_") as tmp:
        for set_name in sets:
            set_dir = os.path.join(case_dir, set_name)
            args = [sluice, "run", os.path.join(case_dir, "model.onnx"),
                    "--output-dir", os.path.join(tmp, "out_" + set_name),
                    "--json", "--device", "cpu:0"]
            for j, info in enumerate(inputs):
                value = read_tensor(os.path.join(set_dir, f"input_{j}.pb"))
                path = os.path.join(tmp, f"{set_name}_input_{j}.npy")
                np.save(path, value)
                args += ["--input", f"{info.name}={path}"]
            try:
                proc = subprocess.run(args, capture_output=True, text=True,
                                      timeout=timeout)
            except subprocess.TimeoutExpired:
                return "error", f"timed out after {timeout} s", opset, ops
            if proc.returncode != 0:
                why = first_error(proc.stdout, proc.stderr)
                why = why.replace(os.path.join(case_dir, "model.onnx") + ": ",
                                  "")
                return "error", why, opset, ops
            for j, info in enumerate(model.graph.output):
                expected = read_tensor(
                    os.path.join(set_dir, f"output_{j}.pb"))
                out = os.path.join(tmp, "out_" + set_name,
                                   file_name_for(info.name))
                if not os.path.exists(out):
                    return "fail", f"output {info.name} not written", opset, ops
                why = compare(expected, np.load(out), rtol, atol)
                if why:
                    return "fail", f"output {info.name}: {why}", opset, ops
    return "pass", "", opset, ops


def range_of(opset):
    for label, lo, hi in RANGES:
        if lo <= opset <= hi:
            return label
    return "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sluice",
                        default=os.path.join(ROOT, "build", "tools", "sluice"))
    parser.add_argument("--cases", help="directory of node test cases "
                        "(default: generated under out/ once)")
    parser.add_argument("--filter", help="regex on the case name")
    parser.add_argument("--expect", help="file of case names that must pass")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--table", help="write the per-case table (Markdown)")
    parser.add_argument("--json", help="write the per-case results (JSON)")
    parser.add_argument("--quiet", action="store_true",
                        help="print only the totals")
    parser.add_argument("--generate-only", action="store_true",
                        help="write the cases (once) and print their "
                        "directory, for tests/onnx/run_node_suite.sh")
    args = parser.parse_args()

    cases_dir = args.cases or default_cases_dir()
    if not args.cases and not cases_are_current(cases_dir):
        print(f"generating the node test cases into {cases_dir}",
              file=sys.stderr)
        shutil.rmtree(cases_dir, ignore_errors=True)
        generate_cases(cases_dir)
    if args.generate_only:
        print(cases_dir)
        return
    if not os.access(args.sluice, os.X_OK):
        sys.exit(f"node_suite: no sluice binary at {args.sluice}")
    names = sorted(d for d in os.listdir(cases_dir)
                   if os.path.isfile(os.path.join(cases_dir, d, "model.onnx")))
    expect = None
    if args.expect:
        with open(args.expect) as f:
            expect = [l.split("#")[0].strip() for l in f]
        expect = [l for l in expect if l]
        names = [n for n in names if n in set(expect)]
    if args.filter:
        names = [n for n in names if re.search(args.filter, n)]

    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {
            pool.submit(run_case, os.path.join(cases_dir, n), args.sluice,
                        args.rtol, args.atol, args.timeout): n
            for n in names
        }
        for future in concurrent.futures.as_completed(futures):
            n = futures[future]
            try:
                results[n] = future.result()
            except Exception as e:  # a broken case file: report, go on
                results[n] = ("error", f"harness: {e!r}", 0, [])

    totals = {}
    for n in names:
        status, reason, opset, ops = results[n]
        if not args.quiet:
            print(f"{status:5} {n} (opset {opset})" +
                  (f": {reason[:300]}" if reason else ""))
        for key in (range_of(opset), "all"):
            t = totals.setdefault(key, {"pass": 0, "fail": 0, "error": 0,
                                        "skip": 0})
            t[status] += 1
    print("\nopsets  pass  fail error  skip  tensor cases  pass rate")
    for key in [r[0] for r in RANGES] + ["all"]:
        t = totals.get(key, {"pass": 0, "fail": 0, "error": 0, "skip": 0})
        tensor = t["pass"] + t["fail"] + t["error"]
        rate = f"{100.0 * t['pass'] / tensor:.1f}%" if tensor else "-"
        print(f"{key:6} {t['pass']:5} {t['fail']:5} {t['error']:5} "
              f"{t['skip']:5} {tensor:13}  {rate}")

    if args.table:
        os.makedirs(os.path.dirname(os.path.abspath(args.table)),
                    exist_ok=True)
        with open(args.table, "w") as f:
            f.write("| case | opset | ops | result | reason |\n"
                    "|---|---|---|---|---|\n")
            for n in names:
                status, reason, opset, ops = results[n]
                reason = reason.replace("|", "\\|").replace("\n", " ")[:400]
                f.write(f"| {n} | {opset} | {' '.join(ops)} | {status} | "
                        f"{reason} |\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({n: {"status": s, "reason": r, "opset": o, "ops": ops}
                       for n, (s, r, o, ops) in results.items()}, f,
                      indent=1, sort_keys=True)
    if expect is not None:
        missing = [n for n in expect if n not in results]
        failed = [n for n in names if results[n][0] != "pass"]
        if missing or failed:
            print(f"\nexpected to pass but did not: {failed + missing}",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
