#!/usr/bin/env python3
"""Python's cost per `Session.run` call over C++'s `Session::Run`.

Runs the same session with the same feeds two ways: `sess.run(...)` from a
Python loop (feeds converted, GIL released, results turned into NumPy
arrays), and a loop of `Session::Run` inside the extension
(`_time_native_run`, no Python per call). The difference per call is the
Python binding's overhead (issue 16's target: at most 5 us). Models: the
2,000-node Neg chain of bench/executor_bench.cc (1,024 floats, one input)
and examples/mlp.pbtxt (batch 4). Rounds alternate the two ways and the
minimum of each is reported, so a busy machine inflates both alike.

    python bench/python_overhead.py            # with the sluice wheel installed
    python bench/python_overhead.py --json
"""

import argparse
import json
import pathlib
import platform
import time

import numpy as np

import sluice

ROOT = pathlib.Path(__file__).resolve().parents[1]


def chain_graph(n=2000, width=1024):
    nodes = [f'node {{ name: "x" op: "Input" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} '
             f'attr {{ key: "shape" value {{ shape {{ dim: [{width}] }} }} }} }}']
    prev = "x"
    for i in range(n):
        nodes.append(f'node {{ name: "n{i}" op: "Neg" input: "{prev}" }}')
        prev = f"n{i}"
    nodes.append(f'signature {{ inputs {{ name: "x" }} outputs {{ name: "y" tensor: "{prev}" }} }}')
    return "\n".join(nodes).encode()


def measure(sess, fetch, feeds, calls, rounds):
    names, values = list(feeds), list(feeds.values())
    native = []
    python = []
    for _ in range(rounds):
        native.append(sess._s._time_native_run(names, values, calls))
        t0 = time.perf_counter()
        for _ in range(calls):
            sess.run(fetch, feeds)
        python.append((time.perf_counter() - t0) / calls)
    return min(native), min(python)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    # The chain runs with passes off (as executor_bench: one Neg kernel per
    # node) and one inter-op thread; the MLP as a user would run it.
    cases = [
        ("2,000-node Neg chain, 1,024 floats",
         sluice.Session(chain_graph(), config=sluice.Config(
             optimization_level="none", inter_op_threads=1, use_gpu=False)),
         "y", {"x": np.zeros(1024, np.float32)}, 200),
        ("examples/mlp.pbtxt, batch 4",
         sluice.Session(str(ROOT / "examples" / "mlp.pbtxt"),
                        config=sluice.Config(use_gpu=False)),
         "probs", {"x": np.load(ROOT / "examples" / "mlp_input.npy")}, 20000),
    ]
    rows = []
    for name, sess, fetch, feeds, calls in cases:
        for _ in range(3):
            sess.run(fetch, feeds)
        native, python = measure(sess, fetch, feeds, calls, args.rounds)
        rows.append({"model": name, "cpp_us": native * 1e6,
                     "python_us": python * 1e6,
                     "overhead_us": (python - native) * 1e6})
    info = {"machine": f"{platform.node()}, {platform.processor() or platform.machine()}",
            "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
            "results": rows}
    if args.json:
        print(json.dumps(info, indent=2))
        return
    print(f"{info['date']}, {info['machine']}, Python {info['python']}")
    print(f"{'model':40} {'C++ Run':>10} {'Python run':>11} {'overhead':>9}")
    for r in rows:
        print(f"{r['model']:40} {r['cpp_us']:8.2f}us {r['python_us']:9.2f}us "
              f"{r['overhead_us']:7.2f}us")


if __name__ == "__main__":
    main()
