#!/usr/bin/env bash
# The exhaustive fault sweep (docs/reliability.md): every N of every kind of
# call at the providers' boundary, on every example model and the ONNX models
# of tests/executor/fault_injection_test.cc, on the CPU (CTest runs only a
# sample of N). Prints each model's counts, then the totals by kind as a
# Markdown table; exits non-zero if any test failed or any injected fault was
# not survived.
#
#   scripts/fault_sweep.sh                    # build-cpu/, else build/
#   scripts/fault_sweep.sh build-asan         # under ASan's leak checker
#   scripts/fault_sweep.sh .gpu --gpu         # the GPU sweep, on the H200
#                                             # (.gpu/ from scripts/prepare_gpu.sh)
#
# The build folder must have sluice_executor_test built (or, .gpu/, in bin/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-}"
if [[ -z "$BUILD" ]]; then
  if [[ -x "$ROOT/build-cpu/tests/sluice_executor_test" ]]; then
    BUILD="$ROOT/build-cpu"
  else
    BUILD="$ROOT/build"
  fi
fi
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
FILTER='Models/FaultSweepTest.DISABLED_EveryNSurvives/*'
if [[ "${2:-}" == "--gpu" ]]; then
  FILTER='Models/GpuFaultSweepTest.DISABLED_EveryNSurvives/*:Models/GpuFaultSweepTest.ReplayedStepsSurvive/*:GpuFaultInjectionTest.*'
fi
BIN="$BUILD/tests/sluice_executor_test"
if [[ ! -x "$BIN" && -x "$BUILD/bin/sluice_executor_test" ]]; then
  # .gpu/ made by scripts/prepare_gpu.sh: binaries in bin/, libraries in lib/.
  BIN="$BUILD/bin/sluice_executor_test"
  export LD_LIBRARY_PATH="$BUILD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [[ ! -x "$BIN" ]]; then
  echo "fault_sweep: $BIN is not built (cmake --build $BUILD --target sluice_executor_test)" >&2
  exit 2
fi

LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
echo "fault_sweep: $BIN --gtest_filter=$FILTER"
echo "host: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
start=$(date +%s)
status=0
(cd "$ROOT" && SLUICE_TEST_DATA_DIR="$ROOT" "$BIN" --gtest_also_run_disabled_tests \
  "--gtest_filter=$FILTER") >"$LOG" 2>&1 || status=$?
grep -E '^fault sweep:|^\[  (FAILED|PASSED|SKIPPED) ' "$LOG" || true
echo "seconds: $(( $(date +%s) - start ))"
if [[ $status -ne 0 ]]; then
  echo "fault_sweep: the test binary failed (exit $status); its log:" >&2
  tail -n 60 "$LOG" >&2
fi

# Totals by kind over every model.
awk '
  /^fault sweep: .* kind=/ {
    for (i = 3; i <= NF; ++i) { split($i, kv, "="); f[kv[1]] = kv[2] }
    k = f["kind"]; kinds[k] = 1
    for (key in f) if (key != "model" && key != "kind") total[k, key] += f[key]
    for (key in f) delete f[key]
  }
  END {
    print ""
    print "| kind | calls per step (sum over models) | N tried | injected | failed with the error | of which inside a subgraph | recovered | survived |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|"
    bad = 0
    n = split("allocation copy kernel_launch library_call scheduling", order, " ")
    for (j = 1; j <= n; ++j) {
      k = order[j]
      if (!(k in kinds)) continue
      printf "| %s | %d | %d | %d | %d | %d | %d | %d |\n", k, total[k, "calls"],
        total[k, "tried"], total[k, "injected"], total[k, "failed"],
        total[k, "in_subgraph"], total[k, "recovered"], total[k, "survived"]
      all_i += total[k, "injected"]; all_s += total[k, "survived"]
      if (total[k, "survived"] != total[k, "injected"]) bad = 1
    }
    printf "\nfaults injected: %d, survived: %d\n", all_i, all_s
    exit bad
  }' "$LOG" || status=1
exit $status
