#!/usr/bin/env bash
# The sanitizer build, run by CI after the normal build (scripts/test.sh):
# clang with AddressSanitizer (with LeakSanitizer) and UndefinedBehavior-
# Sanitizer, where any report aborts the process, and -Wthread-safety as an
# error; CPU only (-DSLUICE_WITH_CUDA=OFF), -O1 with assertions on (most
# test files at -O0: tests/CMakeLists.txt), into build-asan/. It builds
# everything, including the libFuzzer targets (-DSLUICE_FUZZ=ON), runs the
# whole CTest suite of that build, then each fuzz target
# (tests/fuzz/*_fuzz.cc; one per core at a time) for SLUICE_FUZZ_SECONDS
# seconds (default 20) from its seed corpus (tests/fuzz/corpus/NAME; new
# inputs go to build-asan/fuzz/NAME, never into the source tree). Any test
# failure, sanitizer report or fuzzer finding (crash, leak, timeout of more
# than 2 s on one input, more than 2 GiB of memory) exits non-zero; a
# finding's input is kept as build-asan/fuzz/NAME-crash-... for
# tests/fuzz/README.md's steps.
#
#   scripts/sanitize.sh                        # build, test, fuzz
#   SLUICE_FUZZ_SECONDS=0 scripts/sanitize.sh  # build and test only
#   SLUICE_SANITIZE_STEPS=fuzz scripts/sanitize.sh   # only fuzz (built)
#
# Extra arguments go to CMake.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SLUICE_ASAN_BUILD:-$ROOT/build-asan}"
JOBS="${SLUICE_JOBS:-$(nproc)}"
CLANG_VERSION="${SLUICE_CLANG_VERSION:-14}"
FUZZ_SECONDS="${SLUICE_FUZZ_SECONDS:-20}"
STEPS="${SLUICE_SANITIZE_STEPS:-build test fuzz}"

# Reports stop the process (the build uses -fno-sanitize-recover=all); these
# make them readable and make leaks count.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
# Reports with function names and lines (llvm-14, from scripts/setup.sh).
if [[ -z "${ASAN_SYMBOLIZER_PATH:-}" && -x "/usr/lib/llvm-$CLANG_VERSION/bin/llvm-symbolizer" ]]; then
  export ASAN_SYMBOLIZER_PATH="/usr/lib/llvm-$CLANG_VERSION/bin/llvm-symbolizer"
fi

has_step() { [[ " $STEPS " == *" $1 "* ]]; }

if has_step build; then
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # -O1: quick to compile and fast enough under ASan; line tables for the
  # reports; assertions stay on (no NDEBUG). Like every build, a unity
  # build (eight sources a unit; design decisions 67, 68).
  cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_C_COMPILER="clang-$CLANG_VERSION" \
    -DCMAKE_CXX_COMPILER="clang++-$CLANG_VERSION" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DSLUICE_WITH_CUDA=OFF -DSLUICE_BUILD_BENCH=OFF \
    -DSLUICE_SANITIZE=address,undefined -DSLUICE_FUZZ=ON -DSLUICE_TEST_SHARDS=4 \
    "${launcher[@]}" "$@"
  cmake --build "$BUILD" --parallel "$JOBS" ${SLUICE_NINJA_ARGS:+-- $SLUICE_NINJA_ARGS}

  # The host code of the CUDA build (device/cuda, kernels/cuda: .cc files
  # that include the CUDA runtime headers) is not in this CPU-only build, and
  # the CUDA build uses GCC, which has no lock analysis: clang checks those
  # files' annotations here, without compiling them (-fsyntax-only).
  cuda_include="${CUDA_HOME:-/usr/local/cuda}/include"
  if [[ -f "$cuda_include/cuda_runtime.h" ]]; then
    echo "sanitize: -Wthread-safety on the CUDA host sources"
    flags=(-std=c++20 -march=x86-64-v3 -DSLUICE_WITH_CUDA=1
      "-DSLUICE_CUDA_ARCHITECTURES=\"90\""
      -I"$ROOT" -I"$ROOT/include" -I"$BUILD/include/sluice"
      -I"$BUILD/include" -isystem /usr/include/eigen3 -isystem "$cuda_include"
      -Wall -Wextra -Werror -Wno-unused-parameter -Wthread-safety)
    # The third-party headers every one of them parses (the library's
    # precompiled headers, cmake/precompiled_headers.cmake, and the CUDA
    # runtime's), precompiled once: a file's check takes 1.5 s instead of 4.
    pch_dir="$BUILD/cuda-host-check"
    mkdir -p "$pch_dir"
    mapfile -t pch_headers < <(sed -n '/^set(SLUICE_PCH_HEADERS/,/)/p' \
      "$ROOT/cmake/precompiled_headers.cmake" | grep -o '<[^>]*>')
    ((${#pch_headers[@]} > 0)) ||
      { echo "sanitize: no SLUICE_PCH_HEADERS in cmake/precompiled_headers.cmake" >&2; exit 1; }
    printf '#include %s\n' "${pch_headers[@]}" "<cuda_runtime.h>" > "$pch_dir/common.h"
    "clang++-$CLANG_VERSION" "${flags[@]}" -x c++-header "$pch_dir/common.h" \
      -o "$pch_dir/common.h.pch"
    (cd "$ROOT" && ls device/cuda/*.cc kernels/cuda/*.cc) |
      xargs -P "$JOBS" -I{} "clang++-$CLANG_VERSION" -fsyntax-only \
        "${flags[@]}" -include-pch "$pch_dir/common.h.pch" "$ROOT/{}"
  else
    echo "sanitize: no CUDA toolkit ($cuda_include); CUDA host sources not checked"
  fi
fi

if has_step test; then
  ctest --test-dir "$BUILD" --output-on-failure -j2
fi

if has_step fuzz && ((FUZZ_SECONDS > 0)); then
  # The targets run JOBS at a time (each libFuzzer process uses one core),
  # each for its full FUZZ_SECONDS: on CI's two cores the seven take four
  # rounds of 20 s instead of seven.
  mkdir -p "$BUILD/fuzz"
  names=()
  for seeds in "$ROOT"/tests/fuzz/corpus/*/; do
    name="$(basename "$seeds")"
    fuzzer="$BUILD/tests/fuzz/$name"
    [[ -x "$fuzzer" ]] || { echo "sanitize: no fuzz target $fuzzer" >&2; exit 1; }
    mkdir -p "$BUILD/fuzz/$name"
    rm -f "$BUILD/fuzz/$name.rc"
    while (($(jobs -rp | wc -l) >= JOBS)); do sleep 0.2; done
    echo "sanitize: fuzzing $name for ${FUZZ_SECONDS}s"
    ( rc=0
      "$fuzzer" -max_total_time="$FUZZ_SECONDS" -timeout=2 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$BUILD/fuzz/$name-" \
        "$BUILD/fuzz/$name" "$seeds" >"$BUILD/fuzz/$name.log" 2>&1 || rc=$?
      echo "$rc" >"$BUILD/fuzz/$name.rc" ) &
    names+=("$name")
  done
  wait
  failed=()
  for name in "${names[@]}"; do
    if [[ "$(cat "$BUILD/fuzz/$name.rc" 2>/dev/null)" != "0" ]]; then
      tail -n 60 "$BUILD/fuzz/$name.log" >&2
      failed+=("$name")
    else
      echo "sanitize: $name:"
      grep -E "^stat::number_of_executed_units|^Done" "$BUILD/fuzz/$name.log" || true
    fi
  done
  # Every target has a corpus folder, and every corpus folder a target.
  for target in "$BUILD"/tests/fuzz/*_fuzz; do
    [[ -d "$ROOT/tests/fuzz/corpus/$(basename "$target")" ]] ||
      { echo "sanitize: $(basename "$target") has no tests/fuzz/corpus folder" >&2; exit 1; }
  done
  if ((${#failed[@]} > 0)); then
    echo "sanitize: fuzz findings in: ${failed[*]} (inputs in $BUILD/fuzz/)" >&2
    exit 1
  fi
fi
