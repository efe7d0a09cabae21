#!/usr/bin/env bash
# Configures and builds sluice into build/ (Ninja, Release). Extra arguments
# go to CMake, e.g. scripts/build.sh -DSLUICE_WITH_CUDA=OFF, or
# -DCMAKE_CUDA_ARCHITECTURES=90-real for device code of one GPU generation
# only (quicker; without it, every generation CMakeLists.txt lists, also
# when an earlier call named fewer).
#
#   scripts/build.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"

# SLUICE_BUILD_PYTHON=OFF: scripts/python_test.sh builds the wheel in this
# folder and turns it on; the normal build leaves the extension out.
archs=(-UCMAKE_CUDA_ARCHITECTURES)
if [[ " $* " == *" -DCMAKE_CUDA_ARCHITECTURES="* ]]; then archs=(); fi
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSLUICE_BUILD_PYTHON=OFF "${archs[@]}" "$@"
cmake --build "$BUILD" --parallel "${SLUICE_JOBS:-$(nproc)}"
