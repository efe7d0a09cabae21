#!/usr/bin/env bash
# Sets up the machine (with .venv-onnx, whose onnx package generates the
# ONNX node cases that CTest onnx_node_suite runs), builds, and runs the
# whole test suite, then installs the build and builds and runs a program
# against the installed library (scripts/consumer_test.sh).
#
#   scripts/test.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$ROOT/scripts/setup.sh" --onnx
"$ROOT/scripts/build.sh"
ctest --test-dir "$ROOT/build" --output-on-failure -j2
"$ROOT/scripts/consumer_test.sh" "$ROOT/build"
