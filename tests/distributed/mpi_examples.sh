#!/usr/bin/env bash
# Two processes under mpirun run one graph (docs/design.md decision 41):
# examples/mlp.pbtxt and examples/transformer_block.pb, each split over two
# ranks on this machine's CPU by examples/cluster/*_2ranks.pbtxt, write
# rank 0's outputs byte for byte equal to one process's; `sluice devices`
# under mpirun lists both ranks; a step that fails on rank 1 (out of its
# memory) and ranks that load different models fail on both ranks, naming
# the rank, within seconds; a feed given on rank 1 enters there; sluice's
# own launcher refuses a CPU split (no host tensors without MPI); the
# command links no MPI (the shim opens it). With the pipeline benchmark's path, also
# several Run calls in flight over two pipeline stages, every step's output
# equal to one step at a time's (bench/cluster_pipeline_bench.cc). Skips
# (exit 77) only when mpirun is not installed (scripts/setup.sh installs
# Open MPI, so CI runs it).
#
#   tests/distributed/mpi_examples.sh build/tools/sluice \
#       [build/bench/cluster_pipeline_bench]
set -euo pipefail

SLUICE=$(realpath "$1")
PIPELINE_BENCH=${2:+$(realpath "$2")}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if ! command -v mpirun >/dev/null 2>&1; then
  echo "skipped: mpirun is not installed (scripts/setup.sh installs openmpi-bin)"
  exit 77
fi
# Under AddressSanitizer (scripts/sanitize.sh), Open MPI's own allocations
# that it keeps until exit would count as leaks; sluice's leaks are checked
# by every other test of that build.
if grep -q __asan_init "$SLUICE"; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"

# Root in CI containers; two ranks on two cores or fewer; shared memory
# without ptrace (containers forbid CMA).
MPIRUN=(mpirun -np 2 --oversubscribe --allow-run-as-root
        --mca btl_vader_single_copy_mechanism none --bind-to none)

# The command links no MPI: it opens the shim (libsluice_mpi.so) and
# through it libmpi when mpirun starts it (decision 52).
if ldd "$SLUICE" | grep -q 'libmpi\.so'; then
  echo "FAIL: $SLUICE links libmpi; only libsluice_mpi.so should" >&2
  ldd "$SLUICE" >&2
  exit 1
fi
echo "ok: sluice links no MPI; MPI is opened at run time"

run_pair() {
  local name=$1 model=$2 input=$3
  local config=examples/cluster/${name}_2ranks.pbtxt
  # The one-process reference on the CPU too, as the split is: on a GPU
  # machine the plain run would place the model on /gpu:0, whose float
  # results need not equal the CPU's bit for bit.
  "$SLUICE" run "$model" --input "$input" --device cpu:0 \
    --output-dir "$WORK/$name.one" >"$WORK/$name.one.log"
  if ! timeout 60 "${MPIRUN[@]}" "$SLUICE" run "$model" --input "$input" \
      --config "$config" --output-dir "$WORK/$name.two" --stats \
      >"$WORK/$name.two.log" 2>&1; then
    echo "FAIL: $name under mpirun -np 2:"; cat "$WORK/$name.two.log"; exit 1
  fi
  # Both ranks ran nodes (the split happened).
  for r in 0 1; do
    if ! grep -Eq "cluster: rank $r has [1-9][0-9]* of" "$WORK/$name.two.log"; then
      echo "FAIL: $name: rank $r ran no node:"; cat "$WORK/$name.two.log"; exit 1
    fi
  done
  local n=0
  for f in "$WORK/$name.one"/*.npy; do
    if ! cmp -s "$f" "$WORK/$name.two/$(basename "$f")"; then
      echo "FAIL: $name: $(basename "$f") differs between one and two processes"
      exit 1
    fi
    n=$((n + 1))
  done
  ((n > 0)) || { echo "FAIL: $name wrote no output"; exit 1; }
  echo "ok: $name over two ranks, $n outputs equal to one process's"
}

run_pair mlp examples/mlp.pbtxt x=examples/mlp_input.npy
run_pair transformer_block examples/transformer_block.pb \
  x=examples/transformer_block_input.npy

timeout 60 "${MPIRUN[@]}" "$SLUICE" devices >"$WORK/devices.log" 2>&1 || {
  echo "FAIL: sluice devices under mpirun:"; cat "$WORK/devices.log"; exit 1; }
for r in 0 1; do
  grep -q "^rank $r of 2 " "$WORK/devices.log" || {
    echo "FAIL: sluice devices lists no rank $r:"; cat "$WORK/devices.log"; exit 1; }
done
echo "ok: sluice devices under mpirun lists both ranks"

# expect_failure NAME PATTERN COMMAND...: fails (not by the timeout) and
# prints PATTERN.
expect_failure() {
  local name=$1 pattern=$2
  shift 2
  local rc=0
  timeout 60 "$@" >"$WORK/$name.log" 2>&1 || rc=$?
  if ((rc == 0 || rc == 124)) || ! grep -q "$pattern" "$WORK/$name.log"; then
    echo "FAIL: $name (exit $rc), wanted '$pattern':"; cat "$WORK/$name.log"
    exit 1
  fi
  echo "ok: $name: $(grep -m1 "$pattern" "$WORK/$name.log")"
}

# Batch 26: rank 0's half fits its 4 KiB, rank 1's does not.
python3 - "$WORK/x26.npy" <<'PY'
import struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (26, 16), }"
header += " " * (63 - len(header) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
    f.write(header.encode() + struct.pack("<416f", *[0.01 * i for i in range(416)]))
PY
expect_failure rank_out_of_memory "error: rank 1: node 'logits'" \
  "${MPIRUN[@]}" "$SLUICE" run examples/mlp.pbtxt --input "x=$WORK/x26.npy" \
  --config examples/cluster/mlp_2ranks.pbtxt --output-dir "$WORK/oom"
expect_failure different_models "rank 1 (.*) runs another graph than rank 0" \
  mpirun -np 1 --oversubscribe --allow-run-as-root \
  --mca btl_vader_single_copy_mechanism none --bind-to none \
  "$SLUICE" run examples/mlp.pbtxt --input x=examples/mlp_input.npy \
  --config examples/cluster/mlp_2ranks.pbtxt --output-dir "$WORK/m" : \
  -np 1 "$SLUICE" run examples/transformer_block.pb \
  --input x=examples/transformer_block_input.npy \
  --config examples/cluster/mlp_2ranks.pbtxt --output-dir "$WORK/m"

# A feed given on rank 1 (--input-rank x=1): rank 0's command line has no
# file for it (an MPMD job), the value enters at rank 1's host and the
# outputs equal one process's; rank 1 given no value fails, naming itself.
MPMD=(mpirun -np 1 --oversubscribe --allow-run-as-root
      --mca btl_vader_single_copy_mechanism none --bind-to none)
RUN_MLP=(run examples/mlp.pbtxt --config examples/cluster/mlp_2ranks.pbtxt
         --input-rank x=1 --output-dir "$WORK/feed1")
if ! timeout 60 "${MPMD[@]}" "$SLUICE" "${RUN_MLP[@]}" : -np 1 "$SLUICE" \
    "${RUN_MLP[@]}" --input x=examples/mlp_input.npy >"$WORK/feed1.log" 2>&1; then
  echo "FAIL: a feed on rank 1:"; cat "$WORK/feed1.log"; exit 1
fi
for f in "$WORK/mlp.one"/*.npy; do
  cmp -s "$f" "$WORK/feed1/$(basename "$f")" || {
    echo "FAIL: a feed on rank 1: $(basename "$f") differs"; exit 1; }
done
echo "ok: a feed given on rank 1, outputs equal to one process's"
expect_failure feed_missing_on_rank_1 "rank 1: no feed 'x' was given" \
  "${MPMD[@]}" "$SLUICE" "${RUN_MLP[@]}" : -np 1 "$SLUICE" "${RUN_MLP[@]}"

# sluice's own launcher carries no host tensors (decision 33): a CPU split
# started by SLUICE_RANK is refused with what to do, and neither rank hangs.
token=0123456789abcdef0123456789abcdef
port=$((29500 + RANDOM % 2000))
(SLUICE_RANK=1 SLUICE_WORLD_SIZE=2 SLUICE_COORDINATOR=127.0.0.1:$port \
  SLUICE_JOB_TOKEN=$token timeout 60 "$SLUICE" run examples/mlp.pbtxt \
  --input x=examples/mlp_input.npy --config examples/cluster/mlp_2ranks.pbtxt \
  --output-dir "$WORK/b1" >"$WORK/bootstrap1.log" 2>&1) &
expect_failure bootstrap_host_tensors "start the job with mpirun" \
  env SLUICE_RANK=0 SLUICE_WORLD_SIZE=2 SLUICE_COORDINATOR=127.0.0.1:$port \
  SLUICE_JOB_TOKEN=$token "$SLUICE" run examples/mlp.pbtxt \
  --input x=examples/mlp_input.npy --config examples/cluster/mlp_2ranks.pbtxt \
  --output-dir "$WORK/b0"
wait

# The MPI group's messages in pieces (sluice_distributed_test's
# MpiProcessGroupTest, which needs two ranks): both ranks pass it.
if [[ -n "${SLUICE_DISTRIBUTED_TEST:-}" ]]; then
  if ! timeout 60 "${MPIRUN[@]}" "$SLUICE_DISTRIBUTED_TEST" \
      --gtest_filter='MpiProcessGroupTest.*' --gtest_color=no >"$WORK/pieces.log" 2>&1 ||
      [[ $(grep -c '^\[  PASSED  \] 1 test' "$WORK/pieces.log") != 2 ]] ||
      grep -q 'SKIPPED' "$WORK/pieces.log"; then
    echo "FAIL: MpiProcessGroupTest under mpirun:"; cat "$WORK/pieces.log"; exit 1
  fi
  echo "ok: MPI messages of any size, in pieces, on both ranks"
fi

# A machine without libmpi (the wheel on a machine without Open MPI): a
# process that a launcher's variables say is rank 0 of 2 ends with an error
# that says MPI could not be loaded and what to do, not a crash. Needs a
# private mount namespace to hide libmpi (root, as in CI); skipped otherwise.
libmpi=$(ldd "$(dirname "$SLUICE")/../lib/libsluice_mpi.so" 2>/dev/null |
         awk '/libmpi\.so/ {print $3}')
if [[ -n "$libmpi" && $(id -u) == 0 ]] && unshare -m true 2>/dev/null; then
  expect_failure no_libmpi "sluice cannot load MPI: .*libmpi.* Install the MPI" \
    unshare -m --propagation private sh -c \
    "mount --bind /dev/null $(realpath "$libmpi") &&
     exec env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_LOCAL_RANK=0 \
       \"$SLUICE\" run examples/mlp.pbtxt --input x=examples/mlp_input.npy \
       --config examples/cluster/mlp_2ranks.pbtxt --output-dir \"$WORK/nompi\""
else
  echo "skipped: no_libmpi (needs root and unshare to hide libmpi)"
fi

# Steps in flight: 4 Run calls at once over two stages of a small chain
# (under a second); the benchmark fails when a step's output differs.
if [[ -n "$PIPELINE_BENCH" ]]; then
  if ! timeout 60 "${MPIRUN[@]}" "$PIPELINE_BENCH" 4 64 2 32 4 1 \
      >"$WORK/pipeline.log" 2>&1; then
    echo "FAIL: steps in flight:"; cat "$WORK/pipeline.log"; exit 1
  fi
  for r in 0 1; do
    grep -Eq "cluster: rank $r has [1-9][0-9]* of" "$WORK/pipeline.log" || {
      echo "FAIL: steps in flight: rank $r ran no node:"
      cat "$WORK/pipeline.log"; exit 1; }
  done
  echo "ok: steps in flight: $(grep -m1 'median' "$WORK/pipeline.log")"
fi
