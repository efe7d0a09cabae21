#!/usr/bin/env bash
# The sanitizer build: clang with AddressSanitizer and UndefinedBehavior-
# Sanitizer (any report aborts), -Wthread-safety as an error, CPU only, into
# build-asan/. Builds everything including the libFuzzer targets
# (-DSLUICE_FUZZ=ON), runs the CTest suite, then each fuzz target on its seed
# corpus for SLUICE_FUZZ_SECONDS (default 20) seconds. Any failure, sanitizer
# report or fuzzer crash exits non-zero. CI runs it after scripts/test.sh.
#
#   scripts/sanitize.sh                 # build, test, fuzz
#   SLUICE_FUZZ_SECONDS=0 scripts/sanitize.sh   # build and test only
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SLUICE_ASAN_BUILD:-$ROOT/build-asan}"
JOBS="${SLUICE_JOBS:-$(nproc)}"
CLANG_VERSION="${SLUICE_CLANG_VERSION:-14}"

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# -O1: quick to compile and fast enough under ASan; line tables for the
# reports; assertions stay on (no NDEBUG).
cmake -S "$ROOT" -B "$BUILD" -G Ninja \
  -DCMAKE_C_COMPILER="clang-$CLANG_VERSION" \
  -DCMAKE_CXX_COMPILER="clang++-$CLANG_VERSION" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DSLUICE_WITH_CUDA=OFF -DSLUICE_BUILD_BENCH=OFF \
  -DSLUICE_SANITIZE=address,undefined -DSLUICE_FUZZ=ON \
  "${launcher[@]}" "$@"
cmake --build "$BUILD" --parallel "$JOBS" ${SLUICE_NINJA_ARGS:+-- $SLUICE_NINJA_ARGS}
