#!/bin/bash
# Several builds of the sluice CLI side by side on the CPU at given thread
# counts, with onnxruntime in the same run: for probing how the CPU
# provider's threading scales (issue 32's 16-thread target; bench/RESULTS.md,
# "The suite, the zoo and the CPU at 16 threads", 2026-12-06, came from the
# first version of this). For each thread count and model, each build's
# `sluice bench --device cpu:0` p50 (intra_op_threads T, inter_op_threads 1,
# RUNS steps), then onnxruntime's median over RUNS steps (CPU provider, T
# intra-op threads, one inter-op), in that order, one line per model:
#
#   MODEL tT name1=ms name2=ms ... ort=ms
#
# Environment (all optional but BINS and DIR):
#   BINS     "name=path name=path ...": the builds (any name; a path may be
#            prefixed "VAR=value," for an environment setting, e.g.
#            "passive=OMP_WAIT_POLICY=PASSIVE,.gpu/bin/sluice")
#   DIR      folder of MODEL.onnx and MODEL_x.npy (bench/models/torchvision_zoo.py)
#            or MODEL_inputs.npz, every input by name (bench/models/
#            transformer_zoo.py)
#   MODELS   model names (default: every *.onnx in DIR)
#   THREADS  thread counts (default "16 4")
#   RUNS     steps per figure (default 40)
#   PYTHON   a Python with onnxruntime and numpy (default python3)
#
#   BINS="team=.gpu/bin/sluice slices=/tmp/sluice_slices" DIR=/tmp/m \
#     bench/threading_probe.sh > $OUT/probe.txt
set -u
: "${BINS:?BINS=\"name=path ...\"}" "${DIR:?DIR=models folder}"
THREADS=${THREADS:-"16 4"}
RUNS=${RUNS:-40}
PYTHON=${PYTHON:-python3}
MODELS=${MODELS:-$(cd "$DIR" && ls *.onnx | sed 's/\.onnx$//')}
# A model's --input: its .npz of every input, else x=MODEL_x.npy.
feeds() {
  local base=${1%_dynamo}
  if [[ -f "$DIR/${base}_inputs.npz" ]]; then echo "$DIR/${base}_inputs.npz"
  else echo "x=$DIR/${1}_x.npy"; fi
}
cfg=$(mktemp -d)
trap 'rm -rf "$cfg"' EXIT
for t in $THREADS; do
  printf 'intra_op_threads: %d\ninter_op_threads: 1\nuse_gpu: false\n' "$t" > "$cfg/t$t.pbtxt"
  for m in $MODELS; do
    line="$m t$t"
    for spec in $BINS; do
      name=${spec%%=*}
      bin=${spec#*=}
      envs=""
      if [[ "$bin" == *,* ]]; then envs=${bin%%,*}; bin=${bin#*,}; fi
      ms=$(env $envs timeout 120 "$bin" bench "$DIR/$m.onnx" --input "$(feeds "$m")" \
             --device cpu:0 --config "$cfg/t$t.pbtxt" --runs "$RUNS" 2>&1 |
           grep -o "p50 [0-9.]* ms" | awk '{print $2}')
      line="$line $name=${ms:-failed}"
    done
    ort=$(timeout 120 "$PYTHON" - "$DIR/$m.onnx" "$(feeds "$m")" "$t" "$RUNS" <<'EOF' 2>&1 | tail -1
import sys, time
import numpy as np
import onnxruntime as ort
path, x_path, threads, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
if x_path.endswith(".npz"):
    feed = dict(np.load(x_path))
else:
    feed = {s.get_inputs()[0].name: np.load(x_path.split("=", 1)[1])}
for _ in range(5):
    s.run(None, feed)
times = []
for _ in range(runs):
    t0 = time.perf_counter()
    s.run(None, feed)
    times.append(time.perf_counter() - t0)
print("%.3f" % (1000 * float(np.median(times))))
EOF
)
    echo "$line ort=${ort:-failed}"
  done
done
