#!/usr/bin/env python3
"""sluice's placements against Baechi's m-TOPO and m-ETF (issue 30).

For each model and each device set whose memory limits force a split, runs
`sluice place --json` four ways: sluice's AUTO (pipeline stages when no
device holds the model), sluice's earliest-finish list scheduling
(`--no-stages`, HEFT-style), and Baechi's m-TOPO and m-ETF (`--baseline`;
placer/baechi.h). Prints one markdown row per placement: devices used, the
values crossing devices per step (constants held where read are not
transfers), their bytes, how many go back to a device earlier in the
device order, the estimated step (sluice's cost model, the same for all
four), and the command's wall time (loading and optimising included).

The device sets are sized from the model's weights W: 2 GPUs, 4 GPUs, and
2 hosts of 2 GPUs ("2x(2xgpu:...)": links between hosts are the network's),
each GPU's budget (its limit less placer/device_spec.h's workspace reserve)
the smallest of 1.1 N / k, 1.21 N / k, ... (k GPUs; N the weights plus the
peak activations on one device) at which sluice's AUTO places the model
("tight"), then 1.5 times that ("roomy"), as memory limits in MiB.

  bench/placement_compare.py --sluice build/tools/sluice \\
      examples/transformer_block.pb /tmp/tzoo/gpt2_6l.onnx ...
"""
import argparse
import json
import os
import subprocess
import sys
import time

WAYS = [("sluice (stages)", []), ("sluice (HEFT)", ["--no-stages"]),
        ("m-TOPO", ["--baseline", "m-topo"]), ("m-ETF", ["--baseline", "m-etf"])]


# Device sets: a template for the memory limit, and how many GPUs share W.
SETS = [("2xgpu:{}", 2), ("4xgpu:{}", 4), ("2x(2xgpu:{})", 4)]
MIB = 1 << 20


def Reserve(limit):
    """placer/device_spec.h's WorkspaceReserve."""
    return min(max(limit // 20, 64 * MIB), limit // 4)


def LimitFor(budget):
    """The memory limit whose budget (limit less the reserve) is `budget`."""
    limit = int(budget)
    while limit - Reserve(limit) < budget:
        limit = int(limit * 1.01) + 1
    return limit


def place(sluice, model, devices, extra, batch):
    cmd = [sluice, "place", model, "--devices", devices, "--json",
           "--batch", str(batch)] + extra
    start = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return None, seconds, last
    return json.loads(r.stdout), seconds, ""


def summary(j):
    names = [d["name"] for d in j["devices"]]
    moved = [t for t in j["transfers"]
             if not t["constant"] and not t["fed"] and not t["fetched"]]
    back = sum(1 for t in moved if names.index(t["src"]) > names.index(t["dst"]))
    used = sum(1 for d in j["devices"] if d["nodes"] > 0)
    return used, len(moved), sum(t["bytes"] for t in moved), back


def row(sluice, model, spec, shown, label, extra, batch):
    j, seconds, err = place(sluice, model, spec, extra, batch)
    name = os.path.basename(model)
    if j is None:
        return (f"| {name} | {shown} | {label} | fails: {err[:120]} "
                f"| | | | | {seconds:.2f} s |")
    used, moved, nbytes, back = summary(j)
    return (f"| {name} | {shown} | {label} | {used} | {moved} | "
            f"{nbytes / 1024:.0f} KiB | {back} | "
            f"{j['estimated_step_seconds'] * 1e3:.3f} ms | {seconds:.2f} s |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sluice", default="build/tools/sluice")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    print("| model | devices | placement | devices used | transfers / step "
          "| bytes / step | backward | estimated step | wall |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model in a.models:
        one, _, err = place(a.sluice, model, "gpu:1TiB", [], a.batch)
        if one is None:
            print(f"| {os.path.basename(model)} | | error: {err} | | | | | | |")
            continue
        need = (one["devices"][0]["weight_bytes"] +
                one["devices"][0]["peak_activation_bytes"])
        for template, k in SETS:
            # The smallest budget (in steps of 10%) from 1.1 need / k up at
            # which sluice's own AUTO places the model ("tight"), and 1.5
            # times that ("roomy").
            budget = need / k * 1.1
            for _ in range(30):
                spec = template.format(LimitFor(budget))
                if place(a.sluice, model, spec, [], a.batch)[0] is not None:
                    break
                budget *= 1.1
            for room, factor in (("tight", 1.0), ("roomy", 1.5)):
                limit = LimitFor(budget * factor)
                spec = template.format(limit)
                shown = f"{template.format(f'{limit / MIB:.1f}MiB')} ({room})"
                for label, extra in WAYS:
                    print(row(a.sluice, model, spec, shown, label, extra,
                              a.batch), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
