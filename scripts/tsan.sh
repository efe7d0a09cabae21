#!/usr/bin/env bash
# The ThreadSanitizer build of the CPU test suite: clang with
# -fsanitize=thread, CPU only (-DSLUICE_WITH_CUDA=OFF), -O1 with line
# tables, into build-tsan/; then the whole CTest suite of that build, where a
# test with a race report fails (TSan exits 66). CI runs it last
# (scripts/test.sh); docs/reliability.md has the runs and what they found.
#
# TSan sees only what was compiled with it. sluice locks with absl::Mutex,
# and Debian's Abseil is not instrumented (its Mutex waits on futexes TSan
# does not see), so every lock would look absent and every guarded field
# race. This script therefore first builds the same Abseil (20220623.1, the
# Debian 12 source, with Debian's options: absl::string_view and friends
# are absl's own types) with -fsanitize=thread into build-tsan/abseil/, and
# builds sluice against it. The source tarball is taken from
# SLUICE_TSAN_ABSEIL_TARBALL when set, else downloaded from Debian's
# archive, and checked against its SHA-256 either way.
#
#   scripts/tsan.sh                           # abseil (once), build, test
#   SLUICE_TSAN_STEPS=test scripts/tsan.sh    # only run the tests (built)
#   SLUICE_CTEST_ARGS='-R executor' scripts/tsan.sh   # a part of the suite
#
# Third-party reports only are suppressed, in scripts/tsan.supp (one reason
# per entry); a race in sluice's code is fixed, never suppressed.
# Extra arguments go to CMake.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SLUICE_TSAN_BUILD:-$ROOT/build-tsan}"
JOBS="${SLUICE_JOBS:-$(nproc)}"
CLANG_VERSION="${SLUICE_CLANG_VERSION:-14}"
STEPS="${SLUICE_TSAN_STEPS:-abseil build test}"
ABSEIL_VERSION=20220623.1
ABSEIL_URL="http://deb.debian.org/debian/pool/main/a/abseil/abseil_${ABSEIL_VERSION}.orig.tar.gz"
ABSEIL_SHA256=abfe2897f3a30edaa74bc34365afe3c2a3cd012091a97dc7e008f7016adcd5fe
ABSEIL_PREFIX="$BUILD/abseil"

# Keep going after a report (all of a test's races in one run), exit 66 at
# the end so the test fails; second_deadlock_stack for lock-order reports.
export TSAN_OPTIONS="${TSAN_OPTIONS:-suppressions=$ROOT/scripts/tsan.supp:second_deadlock_stack=1:history_size=4}"
if [[ -z "${TSAN_SYMBOLIZER_PATH:-}" && -x "/usr/lib/llvm-$CLANG_VERSION/bin/llvm-symbolizer" ]]; then
  export TSAN_SYMBOLIZER_PATH="/usr/lib/llvm-$CLANG_VERSION/bin/llvm-symbolizer"
fi

has_step() { [[ " $STEPS " == *" $1 "* ]]; }

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
tsan_flags="-fsanitize=thread -O1 -gline-tables-only -fno-omit-frame-pointer"

if has_step abseil && [[ ! -f "$ABSEIL_PREFIX/lib/cmake/absl/abslConfig.cmake" ]]; then
  mkdir -p "$BUILD"
  tarball="${SLUICE_TSAN_ABSEIL_TARBALL:-$BUILD/abseil_${ABSEIL_VERSION}.orig.tar.gz}"
  if [[ ! -f "$tarball" ]]; then
    echo "tsan: downloading $ABSEIL_URL"
    curl -fsSL -o "$tarball.part" "$ABSEIL_URL"
    mv "$tarball.part" "$tarball"
  fi
  echo "$ABSEIL_SHA256  $tarball" | sha256sum -c --quiet - ||
    { echo "tsan: $tarball is not Abseil $ABSEIL_VERSION (SHA-256 differs)" >&2; exit 1; }
  src="$BUILD/abseil-src"
  rm -rf "$src" && mkdir -p "$src"
  tar xzf "$tarball" -C "$src" --strip-components=1
  # Debian's configuration (debian/patches/configure.diff): the four
  # vocabulary types are absl's own, as sluice's code is compiled against.
  sed -i -E 's/^#define ABSL_OPTION_USE_STD_(ANY|OPTIONAL|STRING_VIEW|VARIANT) 2$/#define ABSL_OPTION_USE_STD_\1 0/' \
    "$src/absl/base/options.h"
  [[ "$(grep -c '^#define ABSL_OPTION_USE_STD_[A-Z_]* 0$' "$src/absl/base/options.h")" == 4 ]] ||
    { echo "tsan: could not set Abseil's options in $src/absl/base/options.h" >&2; exit 1; }
  cmake -S "$src" -B "$BUILD/abseil-build" -G Ninja \
    -DCMAKE_C_COMPILER="clang-$CLANG_VERSION" \
    -DCMAKE_CXX_COMPILER="clang++-$CLANG_VERSION" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$tsan_flags" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$tsan_flags" \
    -DCMAKE_CXX_STANDARD=17 -DABSL_PROPAGATE_CXX_STD=ON \
    -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF -DABSL_ENABLE_INSTALL=ON \
    -DCMAKE_INSTALL_PREFIX="$ABSEIL_PREFIX" -DCMAKE_INSTALL_LIBDIR=lib \
    "${launcher[@]}"
  cmake --build "$BUILD/abseil-build" --parallel "$JOBS" --target install
fi

if has_step build; then
  # The installed Abseil by its own config file, before Debian's; its
  # folder is on the tests' run path (CMake adds an imported library's).
  cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_C_COMPILER="clang-$CLANG_VERSION" \
    -DCMAKE_CXX_COMPILER="clang++-$CLANG_VERSION" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -Dabsl_DIR:PATH="$ABSEIL_PREFIX/lib/cmake/absl" \
    -DSLUICE_WITH_CUDA=OFF -DSLUICE_BUILD_BENCH=OFF \
    -DSLUICE_SANITIZE=thread -DSLUICE_TEST_SHARDS=4 \
    "${launcher[@]}" "$@"
  # Refuse a build that found Debian's Abseil after all.
  grep -q "^absl_DIR:[A-Z]*=$ABSEIL_PREFIX/lib/cmake/absl$" "$BUILD/CMakeCache.txt" ||
    { echo "tsan: CMake did not take the instrumented Abseil ($ABSEIL_PREFIX)" >&2; exit 1; }
  cmake --build "$BUILD" --parallel "$JOBS" ${SLUICE_NINJA_ARGS:+-- $SLUICE_NINJA_ARGS}
fi

if has_step test; then
  # shellcheck disable=SC2086
  ctest --test-dir "$BUILD" --output-on-failure -j2 ${SLUICE_CTEST_ARGS:-}
fi
