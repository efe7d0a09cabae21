#!/usr/bin/env python3
"""CPU-seconds of a build's compiles by kind, from bench/compile_cpu.sh's log.

    bench/compile_cpu_summary.py CPU_LOG [--top N]

Prints a Markdown table (kind, objects, CPU s, CPU s per object, wall s) and
the N costliest objects. Kinds: library .cc, library .cc that include CUDA
(device/cuda, kernels/cuda), .cu (nvcc), test .cc, benchmarks, fuzz
targets, tools (the CLI's main), generated protobuf code.
"""
import argparse
import collections


def kind(obj):
    if obj.endswith(".cu.o"):
        return ".cu (nvcc)"
    if "/fuzz/" in obj:
        return "fuzz targets"
    if obj.startswith("tests/") or "/tests/" in obj:
        return "test .cc"
    if obj.startswith("bench/") or "/bench/" in obj:
        return "benchmarks"
    if "sluice.dir/main.cc" in obj:
        return "tools (CLI main)"
    if "sluice_proto.dir" in obj:
        return "protobuf (generated)"
    if "/cuda/" in obj:
        return "library .cc (CUDA host)"
    return "library .cc"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    rows = []
    for line in open(args.log):
        parts = line.split(None, 4)
        if len(parts) < 5:
            continue  # a failed compile's "Command exited" line
        try:
            cpu = float(parts[0]) + float(parts[1])
            wall = float(parts[2])
        except ValueError:
            continue
        rows.append((cpu, wall, parts[4].strip()))
    by_kind = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for cpu, wall, obj in rows:
        k = by_kind[kind(obj)]
        k[0] += 1
        k[1] += cpu
        k[2] += wall
    print("| kind | objects | CPU s | CPU s / object | wall s |")
    print("|---|---:|---:|---:|---:|")
    for name, (n, cpu, wall) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
        print(f"| {name} | {n} | {cpu:,.0f} | {cpu / n:.1f} | {wall:,.0f} |")
    print(f"| all | {len(rows)} | {sum(r[0] for r in rows):,.0f} | | "
          f"{sum(r[1] for r in rows):,.0f} |")
    print()
    for cpu, wall, obj in sorted(rows, reverse=True)[: args.top]:
        print(f"{cpu:7.1f} s CPU {wall:7.1f} s wall  {obj}")


if __name__ == "__main__":
    main()
