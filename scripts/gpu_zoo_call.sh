#!/bin/bash
# One ten-minute device call beside scripts/gpu_call.sh (the suite): the
# models users bring, on the GPU. Parts ($PARTS, in this order by default):
#   progress   the first step's progress line (tools/first_step_progress.h)
#              on a pseudo-terminal (`script`), for ResNet-50 on /gpu:0:
#              $OUT/progress_tty.txt keeps what the terminal got
#   hostmem    a GPU session's host memory: ResNet-50 against a model of
#              one convolution and one GEMM (the CUDA libraries' share);
#              $OUT/hostmem.txt
#   detection  torchvision's detection models (bench/models/detection.py,
#              exported there) on /gpu:0 against onnxruntime's CPU provider
#              (bench/detection_check.py): NonZero and NonMaxSuppression on
#              their GPU kernels; $OUT/detection.md
#   loadmem    issue 29's load cost on the GPU: bench/load_memory.py's
#              generated models (300 MB inline and external, 4 GB external)
#              on /gpu:0, peak and resident host memory after creation and
#              the first step; with .gpu/bin/sluice_old (an earlier CLI put
#              in the pack by hand) the two alternate, old first;
#              $OUT/loadmem.md
#   zoo        torchvision's CNNs (bench/models/torchvision_zoo.py) through
#              bench/peers.py on /gpu:0 against PyTorch eager, its CUDA graph
#              and torch.compile (reduce-overhead), float32, TF32 off;
#              ZOO (default "zoo": batch 1; "zoo_b32": batch 32; "tzoo",
#              "tzoo_b16": the transformer zoo, bench/models/
#              transformer_zoo.py, at batch 1 and 16) names the workloads;
#              PRECISION=bfloat16 (or float16) runs sluice with --precision
#              and PyTorch under torch.autocast; $OUT/zoo/peers.md
#   cpuzoo     bench/cpu_zoo.py on this host's CPU with the GPU hidden, at
#              1, 4 and 16 threads against onnxruntime (issue 32's 16-thread
#              target; no OpenVINO there); $OUT/cpuzoo/cpu_zoo.md
#   probe      (only when named) bench/threading_probe.sh on this host's
#              CPU with the GPU hidden: .gpu/bin/sluice_old (an earlier CLI
#              put in the pack by hand) against .gpu/bin/sluice and
#              onnxruntime at THREADS (default "16 8 4") on torchvision's
#              zoo and the transformer zoo (TorchScript exports), RUNS
#              (default 40) steps each, 300 s at most where more than 400
#              are left; $OUT/probe.txt
#   layouts    ConvNeXt-T, MobileNetV3-large and ResNet-50 on /gpu:0 with
#              convolutions NCHW and NHWC (--conv-layout), float32:
#              ConvNeXt permutes to channels last itself, so NHWC drops
#              its Transposes; $OUT/layouts.txt (p50 and replays each)
# Each part runs under a limit so that a call cut short keeps what finished.
# At the end the summaries stay in $OUT and everything else goes into
# $OUT/logs.tgz (the tool brings back eight files at most).
#
#   # there (device tool, carry [".gpupack"], made as scripts/gpu_call.sh says):
#   LIMIT=570 scripts/gpu_zoo_call.sh
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo $(( $(date +%s)-T0 )); }
LIMIT=${LIMIT:-570}
left() { echo $(( LIMIT - $(el) )); }
{ .gpupack/zstd -d -q --long=30 -c .gpupack/gpu.tar.zst || zstd -d -q --long=30 -c .gpupack/gpu.tar.zst; } | tar xf - || { echo "unpack failed" > $OUT/zoo_call.txt; exit 3; }
S=$OUT/zoo_call.txt
B=.gpu/bin
export LD_LIBRARY_PATH="$PWD/.gpu/lib:/usr/local/cuda/lib64" PATH=/usr/local/cuda/bin:$PATH
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
echo "unpacked at $(el)s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > $S
want() { [[ " ${PARTS:-progress hostmem loadmem layouts detection zoo cpuzoo} " == *" $1 "* ]]; }
W=/tmp/zoo_work; mkdir -p $W

if want progress; then
  python3 bench/models/resnet50.py --out $W/r50 > $W/r50.log 2>&1
  model=$(ls $W/r50/*.onnx | head -1)
  timeout 120 script -qfec "$B/sluice bench $model --random-inputs --device gpu:0 --runs 5" /dev/null \
    > $OUT/progress_tty.txt 2>&1
  echo "progress exit $? at $(el)s: $(grep -ao 'sluice: first step[^,]*, timing [A-Za-z]* algorithms[^,]*' $OUT/progress_tty.txt | tail -1)" >> $S
fi

# Issue 29's GPU host memory: a GPU session's peak RSS for ResNet-50 (98 MB
# of weights) against a one-convolution, one-GEMM model's, whose peak is the
# CUDA libraries' host side (cuDNN's and cuBLAS's kernels) and little else.
if want hostmem && [[ -f $W/r50/resnet50_b1.onnx ]]; then
  python3 - $W/tiny.onnx <<'PY' > $OUT/hostmem.txt 2>&1
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
w = numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32), "w")
m = numpy_helper.from_array(np.ones((8, 4), np.float32), "m")
g = helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
     helper.make_node("ReduceMean", ["c"], ["r"], axes=[2, 3], keepdims=0),
     helper.make_node("MatMul", ["r", "m"], ["y"])],
    "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w, m])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
  for bin in $(ls $B | grep -x -e sluice_old -e sluice | sort -r); do
    for model in $W/tiny.onnx $W/r50/resnet50_b1.onnx; do
      timeout 60 $B/$bin bench $model --random-inputs --device gpu:0 --runs 20 --json > $W/hm.json 2>>$OUT/hostmem.txt
      python3 -c "import json,sys;r=json.load(open('$W/hm.json'));h=r['host_memory'];print('$bin', '$(basename $model)', 'create', round(r['session_create_s'],3), 's; peak RSS after create', h['peak_rss_after_create_bytes']>>20, 'MiB (now', h['rss_after_create_bytes']>>20, 'MiB), first step', h['peak_rss_first_step_bytes']>>20, 'MiB (after', h['rss_after_first_step_bytes']>>20, 'MiB)')" >> $OUT/hostmem.txt 2>&1
    done
  done
  echo "hostmem at $(el)s" >> $S
fi

if want loadmem && (( $(left) > 120 )); then
  for bin in $(ls $B | grep -x -e sluice_old -e sluice | sort -r) $(ls $B | grep -x -e sluice_old -e sluice | sort -r); do
    echo "### $bin" >> $OUT/loadmem.md
    timeout $(( $(left) > 300 ? 150 : $(left) / 3 )) python3 bench/load_memory.py --sluice $B/$bin \
      --dir $W/lc --weights-mb 300 4096 --device gpu:0 >> $OUT/loadmem.md 2>>$OUT/loadmem.err
  done
  echo "loadmem at $(el)s" >> $S
fi

if want layouts; then
  timeout 120 python3 bench/models/torchvision_zoo.py --out $W/tv \
    --models convnext_tiny mobilenet_v3_large resnet50 > $W/tv.log 2>&1
  for m in convnext_tiny mobilenet_v3_large resnet50; do
    for layout in nchw nhwc; do
      [[ -f $W/tv/$m.onnx ]] || continue
      r=$(timeout 60 $B/sluice bench $W/tv/$m.onnx --input x=$W/tv/${m}_x.npy --device gpu:0 \
        --conv-layout $layout --runs 300 2>&1 | grep -E "latency|replayed" | tr '\n' ' ')
      echo "$m $layout: $r" >> $OUT/layouts.txt
    done
  done
  echo "layouts at $(el)s" >> $S
fi

if want detection && (( $(left) > 120 )); then
  t=$(( $(left) - 15 ))  # half of what is left when the zoo comes after
  if want zoo; then t=$(( $(left) > 300 ? 200 : $(left) / 2 )); fi
  timeout $t bash -c "
    python3 bench/models/detection.py --out $W/det > $OUT/detection_export.log 2>&1 &&
    python3 bench/detection_check.py --sluice $B/sluice --dir $W/det --device gpu:0" \
    > $OUT/detection.md 2> $OUT/detection.err
  echo "detection exit $? at $(el)s" >> $S
fi

if want probe && [[ ! -x $B/sluice_old ]]; then
  echo "probe skipped: no $B/sluice_old in the pack" >> $S
elif want probe && (( $(left) > 60 )); then
  python3 bench/models/torchvision_zoo.py --out $W/tv > $W/tv.log 2>&1
  python3 bench/models/transformer_zoo.py --out $W/tv >> $W/tv.log 2>&1
  CUDA_VISIBLE_DEVICES= BINS="old=$B/sluice_old new=$B/sluice" DIR=$W/tv \
    THREADS="${THREADS:-16 8 4}" RUNS=${RUNS:-40} PYTHON=python3 \
    timeout $(( $(left) > 400 ? 300 : $(left) - 10 )) bench/threading_probe.sh > $OUT/probe.txt 2>&1
  echo "probe exit $? at $(el)s" >> $S
fi
if want zoo && (( $(left) > 90 )); then
  timeout $(( $(left) - 20 )) python3 bench/peers.py --sluice $B/sluice --out $OUT/zoo \
    --no-cpu --compile --only ${ZOO:-zoo} ${PRECISION:+--precision $PRECISION} --budget-s $(( $(left) - 120 )) > $OUT/zoo.log 2>&1
  echo "zoo exit $? at $(el)s" >> $S
fi
if want cpuzoo && (( $(left) > 60 )); then
  CUDA_VISIBLE_DEVICES= timeout $(( $(left) - 10 )) python3 bench/cpu_zoo.py --sluice $B/sluice \
    --models-dir $W/cpuzoo_models --out $OUT/cpuzoo --threads 1 4 16 --runs 30 --rounds 2 \
    > $OUT/cpuzoo.log 2>&1
  echo "cpuzoo exit $? at $(el)s" >> $S
fi
echo "done at $(el)s" >> $S
# The device tool returns at most eight files: the summaries stay as files,
# the rest (logs, JSON, the per-model outputs' logs) travel in one archive.
cd $OUT && {
  [ -f zoo/peers.md ] && cp zoo/peers.md peers.md
  [ -f cpuzoo/cpu_zoo.md ] && cp cpuzoo/cpu_zoo.md cpu_zoo.md
  tar czf /tmp/zoo_logs.tgz --exclude='*.npy' . 2>/dev/null
  for f in * .[!.]*; do
    case "$f" in zoo_call.txt|layouts.txt|detection.md|hostmem.txt|progress_tty.txt|peers.md|cpu_zoo.md|probe.txt) ;;
      *) rm -rf -- "$f" ;; esac
  done
  mv /tmp/zoo_logs.tgz logs.tgz
}
