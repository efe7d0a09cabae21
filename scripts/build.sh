#!/usr/bin/env bash
# Configures and builds sluice into build/ (Ninja, Release). Extra arguments
# go to CMake, e.g. scripts/build.sh -DSLUICE_WITH_CUDA=OFF.
#
#   scripts/build.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"

# SLUICE_BUILD_PYTHON=OFF: scripts/python_test.sh builds the wheel in this
# folder and turns it on; the normal build leaves the extension out.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSLUICE_BUILD_PYTHON=OFF "$@"
cmake --build "$BUILD" --parallel "${SLUICE_JOBS:-$(nproc)}"
