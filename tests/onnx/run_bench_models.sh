#!/usr/bin/env bash
# CTest bench_cnn_models: bench/models' ResNet-50, MobileNetV2 and
# DenseNet-121 through `sluice run` ($1) on the CPU against onnxruntime
# (tests/onnx/bench_models_check.py). Needs .venv-onnx (scripts/setup.sh
# --onnx); without it the test skips (exit 77).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="$ROOT/.venv-onnx/bin/python"
if [[ ! -x "$PY" ]]; then
  echo "skip: no .venv-onnx (make it with scripts/setup.sh --onnx)"
  exit 77
fi
exec "$PY" "$ROOT/tests/onnx/bench_models_check.py" "$1"
