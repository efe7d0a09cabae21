#!/bin/bash
# The second ten-minute device call of the GPU suite: what scripts/gpu_call.sh
# does not reach within one call (measured on an H100, 2026-12-06: its tests
# part takes about 130 s, and memcheck of the executor's GPU tests alone
# about 115 s, longer than gpu_call.sh's sanitize part allows). In order,
# each under its own limit so that a call cut short keeps what finished:
# memcheck of the executor's and tools' GPU tests, PARTS="replays examples"
# (racecheck of the concurrent replays, memcheck of the examples), then
# PARTS="onnx cli" (the ONNX node cases on /gpu:0 and the CPU, the CLI) in
# the time left. Summary in $OUT/rest.txt, logs in $OUT/logs.tgz.
#
#   # there (device tool, carry [".gpupack"], made as scripts/gpu_call.sh says):
#   LIMIT=555 scripts/gpu_rest_call.sh
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
LIMIT=${LIMIT:-555}
{ .gpupack/zstd -d -q --long=30 -c .gpupack/gpu.tar.zst || zstd -d -q --long=30 -c .gpupack/gpu.tar.zst; } | tar xf - || { echo "unpack failed" > $OUT/rest.txt; exit 3; }
L=/tmp/gpulogs; mkdir -p $L; S=$OUT/rest.txt
export LD_LIBRARY_PATH="$PWD/.gpu/lib:/usr/local/cuda/lib64" SLUICE_TEST_DATA_DIR=$PWD PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0
# Logs only (the node suite's JSON and the models' arrays pass 16 MiB).
trap 'tar czf $OUT/logs.tgz -C /tmp --exclude="*.json" --exclude="*.npy" --exclude="*.onnx" gpulogs' EXIT
for o in executor tools; do
  SLUICE_STRESS_STEPS_PER_THREAD=50 timeout 170 compute-sanitizer --tool memcheck --error-exitcode 1 \
    .gpu/bin/sluice_${o}_test --gtest_filter='*Gpu*:*GPU*:*Cuda*:*Pinned*' > $L/memcheck-$o.log 2>&1
  echo "memcheck-$o exit $? $(tail -n 4 $L/memcheck-$o.log | tr '\n' ' ') at $(el)s" >> $S
done
OUT=$L PARTS="replays examples" BENCH=0 timeout 120 scripts/gpu_suite.sh >> $S 2>&1
echo "replays examples exit $? at $(el)s" >> $S
# A hazard's report (kernel, addresses, lines) comes back on its own.
cat $L/racecheck-graph-one-thread.log $L/racecheck-graph-replays.log 2>/dev/null | grep -v '^\[' | head -c 2000000 > $OUT/racecheck-replays.txt
OUT=$L PARTS="onnx cli" BENCH=0 timeout $(( LIMIT - $(el) )) scripts/gpu_suite.sh >> $S 2>&1
echo "onnx cli exit $? at $(el)s" >> $S
