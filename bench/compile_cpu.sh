#!/usr/bin/env bash
# Where a build's compile time goes, in CPU-seconds per object (user + sys of
# the compiler and everything it starts: nvcc's cicc, ptxas and host gcc
# included), so that figures taken on a loaded, shared machine still mean
# something (wall time per object does not). A compiler launcher: configure
# a fresh build folder with it and build with ccache off.
#
#   CCACHE_DISABLE=1 COMPILE_CPU_LOG=/tmp/cpu.log scripts/build.sh \
#     -DCMAKE_CUDA_ARCHITECTURES=90-real \
#     -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/bench/compile_cpu.sh \
#     -DCMAKE_CUDA_COMPILER_LAUNCHER=$PWD/bench/compile_cpu.sh
#   bench/compile_cpu_summary.py /tmp/cpu.log     # CPU-seconds by kind
#
# Each compile appends one line to COMPILE_CPU_LOG: user s, sys s, wall s,
# peak RSS KiB, the object's path.
set -euo pipefail
log="${COMPILE_CPU_LOG:?set COMPILE_CPU_LOG to the log file}"
out="" prev=""
for a in "$@"; do
  [[ "$prev" == "-o" ]] && out="$a"
  prev="$a"
done
exec /usr/bin/time -a -o "$log" -f "%U %S %e %M $out" "$@"
