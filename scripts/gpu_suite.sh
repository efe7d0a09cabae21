#!/usr/bin/env bash
# The GPU test suite, run on the H200 machine from the repository root with a
# build already in .gpu/ (made on a development machine by
# scripts/prepare_gpu.sh: .gpu/bin holds the test binaries and `sluice`,
# .gpu/lib the Abseil / protobuf shared libraries the machine lacks; ldd on
# the binaries lists them).
#
#   scripts/prepare_gpu.sh                     # here, on the dev machine
#   OUT=/tmp/out scripts/gpu_suite.sh          # there; logs go to $OUT
#
# Steps: nvidia-smi; each test binary in full (GPU tests run; a step fails
# on any skip that tests/gpu_skips_allowed.txt does not list with a reason);
# compute-sanitizer memcheck on the GPU tests (conformance suite, GPU device
# tests); tests/python with torch. Exit status: 0 when every step
# passed. Set SANITIZE=0 to skip memcheck, BENCH=0 to skip the benchmarks,
# or PARTS to a subset of "tests mpi sanitize replays examples cli bench onnx
# cudnn cudnn-memcheck nhwc resnet precision cudakernel python" (the default is all of
# them; a 10-minute
# device call does not fit them all). The cudnn part runs the convolution
# tests (cuDNN and the fallback against the CPU, the memory-limit test, the
# loader, `sluice devices`, the CNN from four threads) and ResNet-50 on
# /gpu:0 with and without cuDNN; cudnn-memcheck runs compute-sanitizer
# memcheck on the convolution tests; resnet runs bench/peers.py's ResNet-50
# at batch 1 and 32 (sluice GPU and CPU, PyTorch eager and CUDA graph,
# onnxruntime CPU; TF32 off) into $OUT/resnet. With .gpupack made by
# `PACK="sluice sluice_kernels_test sluice_device_test sluice_examples_test"
# BUILD=build scripts/prepare_gpu.sh` here, one device call each:
#
#   tar xzf .gpupack/gpu.tgz && PARTS=cudnn scripts/gpu_suite.sh
#   tar xzf .gpupack/gpu.tgz && PARTS=cudnn-memcheck scripts/gpu_suite.sh
#   tar xzf .gpupack/gpu.tgz && PARTS=resnet scripts/gpu_suite.sh
#
# The nhwc part runs the NHWC (data_format) convolution and pooling cases
# (every cuDNN route and the direct kernels against the CPU, the
# conformance table's _nhwc_ cases), the same under compute-sanitizer
# memcheck, the conv_layout session test, and ResNet-50 with
# --conv-layout nhwc against nchw in float32 and bfloat16 (docs/design.md
# decision 31); it needs sluice_kernels_test, sluice_executor_test and
# sluice in .gpu/bin.
#
# The cudakernel part runs the CudaKernel tests (NVRTC compiles, kernels
# against host values, compile errors with the log, the session with CUDA
# graph replays) and those kernel tests under compute-sanitizer memcheck;
# it needs sluice_kernels_test and sluice_executor_test in .gpu/bin and
# libnvrtc.so.13 on the machine.
#
# The onnx part runs the ONNX backend node cases (generated here by
# tests/onnx/node_suite.py --generate-only and carried in .gpu/onnx_node_cases)
# on /gpu:0 and counts the passing cases that ran every node on a GPU
# kernel, then runs the cases that use the runtime-parameter ops under
# compute-sanitizer memcheck.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.gpu/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
# Tests read examples/ and tests/*/testdata from this checkout.
export SLUICE_TEST_DATA_DIR="$PWD"

want() { [[ " ${PARTS:-tests mpi sanitize replays examples cli bench onnx cudnn cudnn-memcheck nhwc resnet precision cudakernel python} " == *" $1 "* ]]; }

status=0
# Skips: on this machine a test may skip only when tests/gpu_skips_allowed.txt
# lists it with a reason. check_skips NAME reads $OUT/NAME.log for
# GoogleTest's "[  SKIPPED ] Suite.Test" and pytest -v's "file::test SKIPPED"
# lines, writes them to $OUT/NAME.skips.txt and fails the step for each one
# not on the list (and for a list line without a reason), and for any pytest
# skip of a whole module.
SKIPS_ALLOWED=tests/gpu_skips_allowed.txt
check_skips() {
  local name=$1 log="$OUT/$1.log" bad=0 test
  { grep -oE '^\[  SKIPPED \] [^ ]+\.[^ ]+' "$log" | awk '{print $4}'
    grep -oE '^[^ ]+::[^ ]+ SKIPPED' "$log" | awk '{print $1}'
  } | sort -u >"$OUT/$name.skips.txt"
  while read -r test; do
    [[ -n "$test" ]] || continue
    if awk -v t="$test" '!/^#/ && $1 == t && NF >= 2 {found=1} END {exit !found}' \
        "$SKIPS_ALLOWED"; then
      echo "    allowed skip: $test"
    else
      echo "    SKIP NOT ALLOWED: $test (not on $SKIPS_ALLOWED with a reason)"
      bad=1
    fi
  done <"$OUT/$name.skips.txt"
  # pytest skips of a whole module (importorskip at the top) have no
  # file::test line: more skips in the summary than named ones fail.
  local total named
  total=$(grep -E '^=+ .* in [0-9.]+s' "$log" | tail -1 | grep -oE '[0-9]+ skipped' |
          grep -oE '[0-9]+')
  named=$(grep -cE '^[^ ]+::[^ ]+ SKIPPED' "$log")
  if [[ -n "$total" && "$total" -gt "$named" ]]; then
    echo "    SKIP NOT ALLOWED: $((total - named)) pytest module skip(s):" \
      "$(grep -E '^SKIPPED \[' "$log" | tr '\n' ' ')"
    bad=1
  fi
  return $bad
}
step() {  # step NAME CMD...: runs CMD, logs to $OUT/NAME.log, records failure
  local name=$1; shift
  echo "=== $name: $*"
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "--- $name: exit $rc ($(tail -n 3 "$OUT/$name.log" | tr '\n' ' '))"
  [[ $rc -eq 0 ]] || status=1
  check_skips "$name" || status=1
}

if [[ ! -d .gpu/bin ]]; then
  echo "no .gpu/bin: run scripts/prepare_gpu.sh on the build machine first" >&2
  exit 2
fi
step nvidia-smi nvidia-smi
nvidia-smi topo -m >"$OUT/nvidia-smi-topo.log" 2>&1 || true

# Tests that can write a Chrome trace put it here (multi-GPU step).
export SLUICE_TRACE_DIR="$OUT"
for bin in .gpu/bin/sluice_*_test; do
  want tests || break
  name=$(basename "$bin")
  step "$name" "$bin" --gtest_color=no
done

# The four-thread example that once gave a wrong result in 16 while a replay
# overlapped ordinary steps (2026-11-29), now without the session-wide
# replay lock: 20 more times.
want tests && [[ -x .gpu/bin/sluice_examples_test ]] && step examples-four-threads-x20 \
  .gpu/bin/sluice_examples_test --gtest_filter='*FourThreads*' --gtest_repeat=20

# Two ranks under this machine's mpirun (tests/distributed/mpi_examples.sh,
# CTest's mpi_two_ranks): one graph over two processes, and the MPI group's
# own test (MpiProcessGroupTest, which skips outside two ranks and so is on
# tests/gpu_skips_allowed.txt for the plain run above). Exit 77 (no mpirun)
# fails here: the GPU machine has Open MPI. Part "mpi".
want mpi && [[ -x .gpu/bin/sluice && -x .gpu/bin/sluice_distributed_test ]] &&
  SLUICE_DISTRIBUTED_TEST=$PWD/.gpu/bin/sluice_distributed_test step mpi-two-ranks \
    tests/distributed/mpi_examples.sh .gpu/bin/sluice \
    $([[ -x .gpu/bin/cluster_pipeline_bench ]] && echo .gpu/bin/cluster_pipeline_bench)

if [[ "${SANITIZE:-1}" != 0 ]] && command -v compute-sanitizer >/dev/null; then
  GPU_FILTER='AllOps/*:GpuKernelErrorTest.*:GpuDeviceTest.*'
  # No --leak-check: the tests keep their GPU devices for the whole process.
  want sanitize && step memcheck-kernels compute-sanitizer --tool memcheck --error-exitcode 1 \
    .gpu/bin/sluice_kernels_test --gtest_filter="$GPU_FILTER"
  want sanitize && step racecheck-kernels compute-sanitizer --tool racecheck --error-exitcode 1 \
    .gpu/bin/sluice_kernels_test --gtest_filter='AllOps/*Softmax*:AllOps/*LayerNorm*:AllOps/*Reduce*:AllOps/*NonMaxSuppression*:AllOps/*Unique*:AllOps/*NonZero*'
  # The 8-thread replay stress test runs 50 steps a thread under memcheck
  # and 3 under racecheck (10,000 in all in the plain run above; racecheck
  # did not finish 400 in 3 minutes).
  for other in device executor tools; do
    want sanitize || break
    [[ -x .gpu/bin/sluice_${other}_test ]] || continue
    SLUICE_STRESS_STEPS_PER_THREAD=50 step "memcheck-$other" \
      compute-sanitizer --tool memcheck --error-exitcode 1 \
      ".gpu/bin/sluice_${other}_test" --gtest_filter='*Gpu*:*GPU*:*Cuda*:*Pinned*'
  done
  # The concurrent test's kernels on one thread first: racecheck's
  # hazards are a kernel's, and the eight-thread run has not finished
  # under racecheck in 190 s on an H100 (2026-12-06).
  want replays && [[ -x .gpu/bin/sluice_executor_test ]] && \
    step racecheck-graph-one-thread compute-sanitizer --tool racecheck \
      --error-exitcode 1 .gpu/bin/sluice_executor_test \
      --gtest_filter='GpuGraphConcurrencyTest.OneThread*'
  want replays && [[ -x .gpu/bin/sluice_executor_test ]] && SLUICE_STRESS_STEPS_PER_THREAD=3 \
    step racecheck-graph-replays compute-sanitizer --tool racecheck \
      --error-exitcode 1 .gpu/bin/sluice_executor_test \
      --gtest_filter='GpuGraphConcurrencyTest.*'

  # The example models run on /gpu:0 by default: check them whole.
  want examples && [[ -x .gpu/bin/sluice_examples_test ]] && step memcheck-examples \
    compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/bin/sluice_examples_test
fi

# cuDNN (kernels/cuda/cudnn_conv.h): the convolution cases and the
# loader, plainly and under memcheck; the conformance suite's Conv cases
# too (they run on cuDNN now). Nothing here may skip for want of a GPU or
# of cuDNN: step fails on a skip not on tests/gpu_skips_allowed.txt.
CONV_FILTER='Convolutions/*:CudnnConv*:CudnnCanExpress*:AllOps/*Conv*'
if want cudnn && [[ -x .gpu/bin/sluice_kernels_test ]]; then
  step cudnn-loader .gpu/bin/sluice_device_test --gtest_filter='Cudnn*'
  step cudnn-devices .gpu/bin/sluice devices
  step cudnn-conv .gpu/bin/sluice_kernels_test --gtest_filter="$CONV_FILTER"
  # Ordinary steps on four threads beside the plan's CUDA-graph replays.
  [[ -x .gpu/bin/sluice_examples_test ]] && step cudnn-cnn-four-threads-x10 \
    .gpu/bin/sluice_examples_test --gtest_filter='*Cnn*' --gtest_repeat=10
  # ResNet-50 end to end on /gpu:0 with cuDNN and with the fallback, the
  # outputs compared (bench/models/resnet50.py writes the model; numpy and
  # onnx are on the GPU machine).
  if python3 -c "import numpy, onnx" 2>/dev/null; then
    step resnet50-model python3 bench/models/resnet50.py --out "$OUT/resnet-model" --batch 2
    for cudnn in true false; do
      SLUICE_USE_CUDNN=$cudnn step "resnet50-run-cudnn-$cudnn" .gpu/bin/sluice run \
        "$OUT/resnet-model/resnet50_b2.onnx" --input "x=$OUT/resnet-model/resnet50_b2_x.npy" \
        --device gpu:0 --output-dir "$OUT/resnet50-cudnn-$cudnn"
    done
    step resnet50-cudnn-vs-fallback python3 -c "
import glob, numpy as np
a = np.load(glob.glob('$OUT/resnet50-cudnn-true/*.npy')[0])
b = np.load(glob.glob('$OUT/resnet50-cudnn-false/*.npy')[0])
rel = float(np.linalg.norm(a - b) / np.linalg.norm(b))
print('max |d|', float(np.abs(a - b).max()), 'rel L2', rel)
raise SystemExit(0 if rel < 1e-4 else 1)"
  fi
fi

# The same convolution tests under memcheck (cuDNN's algorithm search runs
# every algorithm, so this is the slow half; its own part).
if want cudnn-memcheck && [[ -x .gpu/bin/sluice_kernels_test ]] &&
    command -v compute-sanitizer >/dev/null; then
  # Not the workspace-limit test: its problems are large enough that their
  # algorithm search under memcheck would take the whole call.
  step memcheck-cudnn-conv compute-sanitizer --tool memcheck --error-exitcode 1 \
    .gpu/bin/sluice_kernels_test --gtest_filter="$CONV_FILTER:-CudnnConvMemoryTest.*"
fi

# NHWC convolutions and pooling (decision 31): kernels, memcheck, session,
# ResNet-50 in both layouts.
NHWC_FILTER='Layouts/NhwcGpuTest.*:NhwcCudnnCanExpressTest.*:AllOps/*nhwc*'
if want nhwc && [[ -x .gpu/bin/sluice_kernels_test ]]; then
  step nhwc-kernels .gpu/bin/sluice_kernels_test --gtest_filter="$NHWC_FILTER"
  command -v compute-sanitizer >/dev/null && step memcheck-nhwc-kernels \
    compute-sanitizer --tool memcheck --error-exitcode 1 \
    .gpu/bin/sluice_kernels_test --gtest_filter="$NHWC_FILTER"
  [[ -x .gpu/bin/sluice_executor_test ]] && step nhwc-session \
    .gpu/bin/sluice_executor_test --gtest_filter='ConvLayoutSessionTest.*'
  if python3 -c "import numpy, onnx" 2>/dev/null && [[ -x .gpu/bin/sluice ]]; then
    [[ -f "$OUT/resnet-model/resnet50_b2.onnx" ]] ||
      step nhwc-resnet50-model python3 bench/models/resnet50.py --out "$OUT/resnet-model" --batch 2
    for precision in model bfloat16; do
      for layout in nchw nhwc; do
        step "nhwc-resnet50-$precision-$layout" .gpu/bin/sluice run \
          "$OUT/resnet-model/resnet50_b2.onnx" --input "x=$OUT/resnet-model/resnet50_b2_x.npy" \
          --device gpu:0 --precision "$precision" --conv-layout "$layout" \
          --output-dir "$OUT/nhwc-resnet50-$precision-$layout"
      done
      step "nhwc-resnet50-$precision-nhwc-vs-nchw" python3 -c "
import glob, numpy as np
a = np.load(glob.glob('$OUT/nhwc-resnet50-$precision-nhwc/*.npy')[0])
b = np.load(glob.glob('$OUT/nhwc-resnet50-$precision-nchw/*.npy')[0])
rel = float(np.linalg.norm(a - b) / np.linalg.norm(b))
print('max |d|', float(np.abs(a - b).max()), 'rel L2', rel)
raise SystemExit(0 if rel < ('$precision' == 'model' and 1e-4 or 3e-2) else 1)"
    done
  fi
fi

# CudaKernel nodes: NVRTC, the kernel against host values, the session.
if want cudakernel && [[ -x .gpu/bin/sluice_kernels_test ]]; then
  step cudakernel-kernels .gpu/bin/sluice_kernels_test --gtest_filter='CudaKernel*:Nvrtc*'
  [[ -x .gpu/bin/sluice_executor_test ]] && step cudakernel-session \
    .gpu/bin/sluice_executor_test --gtest_filter='CudaKernelSession*'
  command -v compute-sanitizer >/dev/null && step memcheck-cudakernel \
    compute-sanitizer --tool memcheck --error-exitcode 1 \
    .gpu/bin/sluice_kernels_test --gtest_filter='CudaKernelGpu*'
fi

# ResNet-50 beside PyTorch (eager and CUDA graph), float32, TF32 off.
# cuDNN is on by default (device/gpu_device.h, kUseCudnnByDefault); the
# variable makes the figures say so whatever the default.
if want resnet && [[ -x .gpu/bin/sluice ]]; then
  SLUICE_USE_CUDNN=true step resnet50-peers python3 bench/peers.py \
    --sluice .gpu/bin/sluice --out "$OUT/resnet" --only resnet50_b1 resnet50_b32
fi

# Reduced precision (RuntimeConfig.precision, docs/design.md decision 20):
# sluice --precision against PyTorch under torch.autocast, eager and CUDA
# graph, on ResNet-50 and the encoder layer at batch 1 and 32 and the real
# models; GPU peers only. PRECISIONS picks the types (default both).
if want precision && [[ -x .gpu/bin/sluice ]]; then
  for p in ${PRECISIONS:-bfloat16 float16}; do
    step "peers-$p" python3 bench/peers.py --sluice .gpu/bin/sluice \
      --out "$OUT/peers-$p" --precision "$p" --no-cpu --budget-s 60 \
      --only ${PRECISION_WORKLOADS:-resnet50_b1 resnet50_b32 encoder_b1 encoder_b32 real_models}
  done
fi

# tests/python on this machine's Python (3.12, with torch and CuPy) against
# the extension in .gpu/python/sluice (scripts/python_ext_for.sh builds it,
# PYEXT=... scripts/prepare_gpu.sh carries it): the GPU tests
# (test_device_tensors.py, test_cuda_kernel.py) run here and nowhere else.
# Missing pieces fail the step; a skip not on tests/gpu_skips_allowed.txt
# fails it too.
if want python; then
  if [[ ! -d .gpu/python/sluice ]]; then
    step python-tests bash -c 'echo "no .gpu/python/sluice: build the extension with scripts/python_ext_for.sh and carry it with PYEXT=... scripts/prepare_gpu.sh" >&2; exit 1'
  else
    # Not test_install.py and test_wheel.py: they check a repaired wheel
    # installed in site-packages, which CI's scripts/python_test.sh covers
    # (and scripts/wheel_gpu_check.sh on this machine); here the package is
    # on PYTHONPATH. test_properties.py needs hypothesis, which this machine's
    # Python may lack (nothing can be installed there): without it the
    # file is left out, and said so (its sessions are CPU ones; CI runs it).
    py_ignore=(--ignore=tests/python/test_install.py --ignore=tests/python/test_wheel.py)
    if ! python3 -c "import hypothesis" 2>/dev/null; then
      echo "python-tests: no hypothesis here: tests/python/test_properties.py left out (CI runs it)"
      py_ignore+=(--ignore=tests/python/test_properties.py)
    fi
    PYTHONPATH="$PWD/.gpu/python" SLUICE_SOURCE_DIR="$PWD" step python-tests \
      python3 -m pytest -v -rs -p no:cacheprovider tests/python "${py_ignore[@]}"
  fi
fi

# The CLI on the GPU: devices, and the examples on /gpu:0 with a memory
# limit from a config file, with and without growth.
if want onnx && [[ -x .gpu/bin/sluice_onnx_node_runner && -d .gpu/onnx_node_cases ]]; then
  # Against the lists: a case that fails and is on neither, or a listed
  # case that passes, fails the step (the runner exits 1). In six
  # processes at once by first letter (one process did not finish the
  # 1,885 cases in 320 s on an H100, 2026-12-06; each case is a session).
  # The CPU run as CI runs it: with the GPU hidden (the runner's default
  # config would place the cases on it, a CUDA start-up each).
  node_shards() {  # node_shards NAME ENV-ASSIGNMENT RUNNER-ARGS...
    local name=$1 env=$2; shift 2
    local shards=('^test_[ab]' '^test_c' '^test_[d-l]' '^test_[m-q]' '^test_r' '^test_[s-z]')
    local i pids=()
    for i in "${!shards[@]}"; do
      env $env .gpu/bin/sluice_onnx_node_runner --cases .gpu/onnx_node_cases \
        --filter "${shards[$i]}" --json "$OUT/${name}_$i.json" \
        --xfail tests/onnx/node_suite_xfail.txt "$@" --quiet > "$OUT/${name}_$i.log" 2>&1 &
      pids+=($!)
    done
    local rc=0
    for i in "${!pids[@]}"; do wait "${pids[$i]}" || rc=1; done
    cat "$OUT/${name}"_*.log
    return $rc
  }
  step onnx-node-suite-gpu node_shards node_suite_gpu X=1 --device gpu:0 \
    --xfail tests/onnx/node_suite_xfail_gpu.txt
  step onnx-node-suite-cpu node_shards node_suite_cpu CUDA_VISIBLE_DEVICES=
  step memcheck-onnx-dynamic compute-sanitizer --tool memcheck --error-exitcode 1 \
    .gpu/bin/sluice_onnx_node_runner --cases .gpu/onnx_node_cases --device gpu:0 \
    --filter '^test_(reshape|slice|expand|squeeze|unsqueeze|split|reduce_sum|range|constantofshape|tile|shape|size)'
fi

if want cli && [[ -x .gpu/bin/sluice ]]; then
  step sluice-devices .gpu/bin/sluice devices
  for growth in false true; do
    printf 'gpu_memory_limit { bytes: 1073741824 }\nallow_growth: %s\n' "$growth" \
      >"$OUT/limit-$growth.pbtxt"
    for model in mlp.pbtxt transformer_block.pb cnn.pb; do
      stem=${model%%.*}
      input=examples/${stem}_input.npy
      step "run-$stem-growth-$growth" .gpu/bin/sluice run "examples/$model" \
        --input "x=$input" --config "$OUT/limit-$growth.pbtxt" --stats \
        --output-dir "$OUT/run-$stem-$growth"
    done
  done
fi

# Step traces on the GPU, to open in Perfetto: the transformer block (compute
# and both host copy streams) and the CNN.
if want cli && [[ -x .gpu/bin/sluice ]]; then
  step trace-transformer .gpu/bin/sluice run examples/transformer_block.pb \
    --input x=examples/transformer_block_input.npy --output-dir "$OUT/trace-out" \
    --trace "$OUT/trace-transformer-run.json"
  step bench-trace-transformer .gpu/bin/sluice bench examples/transformer_block.pb \
    --input x=examples/transformer_block_input.npy --runs 200 \
    --trace "$OUT/trace-transformer-bench.json"
fi

# Benchmarks (BENCH=0 skips): JSON and the console table under $OUT.
if want bench && [[ "${BENCH:-1}" != 0 ]]; then
  for b in .gpu/bin/*_bench; do
    [[ -x "$b" ]] || continue
    name=$(basename "$b")
    step "$name" "$b" --benchmark_counters_tabular=true \
      --benchmark_out="$OUT/$name.json" --benchmark_out_format=json
  done
fi

echo "gpu suite: $([[ $status -eq 0 ]] && echo PASSED || echo FAILED); logs in $OUT"
exit $status
