#!/usr/bin/env bash
# CTest onnx_node_subset: every case listed in node_suite_expected.txt (a
# fixed subset of the ONNX backend node cases) must pass through the sluice
# CLI given as $1. Needs .venv-onnx (scripts/setup.sh --onnx); without it the
# test skips (exit 77), so a CI without the ONNX packages is unaffected.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="$ROOT/.venv-onnx/bin/python"
if [[ ! -x "$PY" ]]; then
  echo "skip: no .venv-onnx (make it with scripts/setup.sh --onnx)"
  exit 77
fi
exec "$PY" "$ROOT/tests/onnx/node_suite.py" --sluice "$1" \
  --expect "$ROOT/tests/onnx/node_suite_expected.txt" --quiet
