#!/usr/bin/env bash
# CTest onnx_node_suite: every ONNX backend node case that the pinned onnx
# package (tests/onnx/requirements.txt, in .venv-onnx) generates runs through
# sluice's C++ API on the CPU (the runner given as $1, built from
# tests/onnx/node_suite_runner/); the test fails when a case not listed in
# tests/onnx/node_suite_xfail.txt does not pass, or a listed one passes.
# Needs .venv-onnx (scripts/setup.sh --onnx, which scripts/test.sh runs);
# without it the test skips (exit 77).
#
#   tests/onnx/run_node_suite.sh build/tests/sluice_onnx_node_runner [ARGS...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="$ROOT/.venv-onnx/bin/python"
if [[ ! -x "$PY" ]]; then
  echo "skip: no .venv-onnx (make it with scripts/setup.sh --onnx)"
  exit 77
fi
RUNNER="$1"
shift
# Generation takes about a minute, once per onnx version (under out/).
CASES="$("$PY" "$ROOT/tests/onnx/node_suite.py" --generate-only)"
exec "$RUNNER" --cases "$CASES" --xfail "$ROOT/tests/onnx/node_suite_xfail.txt" \
  --quiet "$@"
