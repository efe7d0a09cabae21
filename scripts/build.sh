#!/usr/bin/env bash
# Configures and builds sluice into build/ (Ninja, Release). Extra arguments
# go to CMake, e.g. scripts/build.sh -DSLUICE_WITH_CUDA=OFF, or
# -DCMAKE_CUDA_ARCHITECTURES=90-real for device code of one GPU generation
# only (quicker; without it, every generation CMakeLists.txt lists, also
# when an earlier call named fewer). `--target T` (repeatable) builds only T
# and what it needs (scripts/demo.sh: the CLI, `--target sluice`), not
# everything (tests and benchmarks included).
#
#   scripts/build.sh
#   scripts/build.sh --target sluice
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"

cmake_args=() targets=()
while (($#)); do
  case "$1" in
    --target) targets+=(--target "$2"); shift 2 ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
archs=(-UCMAKE_CUDA_ARCHITECTURES)
if [[ " ${cmake_args[*]:-} " == *" -DCMAKE_CUDA_ARCHITECTURES="* ]]; then archs=(); fi

# SLUICE_BUILD_PYTHON=OFF: scripts/python_test.sh builds the wheel in this
# folder and turns it on; the normal build leaves the extension out.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSLUICE_BUILD_PYTHON=OFF "${archs[@]}" "${cmake_args[@]}"
cmake --build "$BUILD" --parallel "${SLUICE_JOBS:-$(nproc)}" "${targets[@]}"
