#!/usr/bin/env bash
# Sets up the machine (with .venv-onnx, whose onnx package generates the
# ONNX node cases that CTest onnx_node_suite runs), builds, and runs the
# whole test suite, then installs the build and builds and runs a program
# against the installed library (scripts/consumer_test.sh), then builds the
# Python wheel (CPU only) and runs its pytest suite against the installed
# wheel (scripts/python_test.sh; skip with SLUICE_SKIP_PYTHON=1). Then the
# sanitizer build (scripts/sanitize.sh: clang, ASan + UBSan, -Wthread-safety,
# CPU only, in build-asan/) runs the whole CTest suite again and each libFuzzer
# target for 20 s, and the ThreadSanitizer build (scripts/tsan.sh, with its own
# instrumented Abseil, in build-tsan/) runs it a third time. CI runs all of
# this (.ci/run).
#
#   scripts/test.sh
#   SLUICE_SKIP_SANITIZE=1 scripts/test.sh   # without the ASan + UBSan build
#   SLUICE_SKIP_TSAN=1 scripts/test.sh       # without the TSan build
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Debian packages and .venv first; then the Python environments the tests
# need (.venv-onnx for CTest's ONNX node cases and model checks, .venv-python
# for the wheel and pytest) are made while the build compiles: pip is mostly
# downloading and unpacking, the build is CPU-bound (about a minute of CI).
# Their log is printed when they are waited for.
"$ROOT/scripts/setup.sh"
venvs=(--onnx)
if [[ "${SLUICE_SKIP_PYTHON:-0}" != "1" ]]; then venvs+=(--python); fi
venv_log="$(mktemp)"
"$ROOT/scripts/setup.sh" "${venvs[@]}" >"$venv_log" 2>&1 &
venv_pid=$!
wait_for_venvs() {
  local rc=0
  wait "$venv_pid" || rc=$?
  cat "$venv_log"
  rm -f "$venv_log"
  if ((rc != 0)); then
    echo "test: scripts/setup.sh ${venvs[*]} failed (exit $rc)" >&2
    exit "$rc"
  fi
}
# Device code for one GPU generation (sm_90, the H200's): a sixth of the
# device-code work of a release build's five. kernels/CMakeLists.txt still
# compiles the one architecture-dependent file (fused_attention_tc.cu,
# whose tensor-core path needs sm_80) for sm_75 too, so both sides of its
# check are compiled. The tests run on the CPU here and on the H200.
"$ROOT/scripts/build.sh" "-DCMAKE_CUDA_ARCHITECTURES=90-real" -DSLUICE_TEST_SHARDS=4 || { rc=$?; wait_for_venvs; exit "$rc"; }
wait_for_venvs
ctest --test-dir "$ROOT/build" --output-on-failure -j2
"$ROOT/scripts/consumer_test.sh" "$ROOT/build"
if [[ "${SLUICE_SKIP_PYTHON:-0}" != "1" ]]; then
  "$ROOT/scripts/python_test.sh"
fi
if [[ "${SLUICE_SKIP_SANITIZE:-0}" != "1" ]]; then
  "$ROOT/scripts/sanitize.sh"
fi
if [[ "${SLUICE_SKIP_TSAN:-0}" != "1" ]]; then
  "$ROOT/scripts/tsan.sh"
fi
