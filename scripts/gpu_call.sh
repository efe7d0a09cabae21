#!/bin/bash
# One ten-minute device call's worth of scripts/gpu_suite.sh, in order of
# importance, each part under its own time limit so that a call cut short
# still returns what finished: every test binary, compute-sanitizer on the
# GPU tests, memcheck on the fault-injection and algorithm-cache tests,
# tests/python, issue 28's peers check (ResNet-50, BERT-base, GPT-2 against
# PyTorch's CUDA graph), then the onnx/cudnn/nhwc/cudakernel/cli parts.
# Logs: $OUT/suite.txt (a line per part), $OUT/summary.txt, $OUT/logs.tgz.
#
#   # here: build (90-real), scripts/prepare_gpu.sh with PYEXT (3.12), then
#   #   strip .gpu/bin/*; tar cf - .gpu | zstd -19 --long=30 -o .gpupack/gpu.tar.zst
#   #   (and a zstd binary in .gpupack/ if the machine has none)
#   # there (device tool, carry [".gpupack"]):
#   LIMIT=570 scripts/gpu_call.sh     # LIMIT: seconds the whole call may take
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
LIMIT=${LIMIT:-570}
left() { echo $(( LIMIT - $(el) )); }
{ .gpupack/zstd -d -q --long=30 -c .gpupack/gpu.tar.zst || zstd -d -q --long=30 -c .gpupack/gpu.tar.zst; } | tar xf - || { echo "unpack failed" > $OUT/suite.txt; exit 3; }
LOGS=/tmp/gpulogs; mkdir -p $LOGS
S=$OUT/suite.txt
echo "unpacked at $(el)s; mpirun: $(command -v mpirun); hypothesis: $(python3 -c 'import hypothesis;print(hypothesis.__version__)' 2>&1 | tail -1)" > $S
finish() {
  cat $LOGS/*skips.txt > $OUT/skips.txt 2>/dev/null
  grep -h "tests ran\|PASSED\|FAILED\|SKIPPED \[\|ERROR SUMMARY\|passed\|failed" $LOGS/*.log 2>/dev/null | sort | uniq -c | sort -rn | head -150 > $OUT/summary.txt
  # Logs only: the peers' models and inputs would pass the 16 MiB a file.
  tar czf $OUT/logs.tgz -C /tmp --exclude='*.onnx' --exclude='*.npy' --exclude='*.npz' --exclude='*.pb' --exclude='*.data' --exclude='*.bin' gpulogs
}
trap finish EXIT
part() { local t=$1; shift; (( $(left) > 20 )) || { echo "no time for $* at $(el)s" >> $S; return; }
  (( t > $(left) - 10 )) && t=$(( $(left) - 10 ))
  OUT=$LOGS PARTS="$*" BENCH=0 timeout $t scripts/gpu_suite.sh >> $S 2>&1; echo "suite($*) exit $? at $(el)s" >> $S; }
part 220 tests mpi
part 100 sanitize
B=.gpu/bin
export LD_LIBRARY_PATH="$PWD/.gpu/lib:/usr/local/cuda/lib64" SLUICE_TEST_DATA_DIR=$PWD PATH=/usr/local/cuda/bin:$PATH
mc() { local n=$1 t=$2; shift 2; (( $(left) > 30 )) || return; timeout $t compute-sanitizer --tool memcheck --error-exitcode 1 "$@" > $LOGS/$n.log 2>&1; echo "$n exit $? $(tail -n 3 $LOGS/$n.log | tr '\n' ' ') at $(el)s" >> $S; }
mc memcheck-faults 50 $B/sluice_executor_test --gtest_filter='Models/GpuFaultSweepTest.SampledNSurvives/*:GpuFaultInjectionTest.*'
mc memcheck-libs 40 $B/sluice_kernels_test --gtest_filter='*AlgorithmCache*:*Cudnn*:*CublasLt*:*Nvrtc*:FusedMatMul*:*Nhwc*:*Provider*'
part 90 python
# Issue 28's check that speed is within noise: ResNet-50, BERT-base, GPT-2
# against PyTorch's CUDA graph in the same run (no torch.compile: time).
if (( $(left) > 60 )); then
  export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
  timeout $(( $(left) > 150 ? 140 : $(left) - 15 )) python3 bench/peers.py --sluice $B/sluice --out $LOGS/peers --no-cpu \
    --only resnet50_b1 bert_base_b8 gpt2_b1 --budget-s 100 > $LOGS/peers.log 2>&1
  echo "peers exit $? at $(el)s" >> $S; cp $LOGS/peers/peers.md $OUT/peers.md 2>/dev/null
  cp $LOGS/peers/peers.partial.json $OUT/ 2>/dev/null
fi
part 600 onnx cudnn nhwc cudakernel cli cudnn-memcheck
