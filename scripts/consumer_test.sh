#!/usr/bin/env bash
# Checks sluice as a library another project builds against: installs a
# build folder into a temporary prefix (BUILD/install), checks that every
# installed public header compiles on its own, builds examples/consumer with
# find_package(sluice) against the shared and then the static library, and
# with pkg-config, and runs each on examples/mlp.pbtxt (outputs compared with
# the NumPy reference). Any failure stops the script with a non-zero exit.
#
#   scripts/consumer_test.sh [BUILD]     # BUILD defaults to build/
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
PREFIX="$BUILD/install"
WORK="$BUILD/consumer"
MODEL="$ROOT/examples/mlp.pbtxt"

fail() { echo "consumer_test: FAILED: $*" >&2; exit 1; }

echo "consumer_test: installing $BUILD into $PREFIX"
rm -rf "$PREFIX" "$WORK"
cmake --install "$BUILD" --prefix "$PREFIX" >"$BUILD/consumer_install.log" 2>&1 ||
  { cat "$BUILD/consumer_install.log" >&2; fail "cmake --install"; }
for f in lib/libsluice.so lib/libsluice.a lib/cmake/sluice/sluice-config.cmake \
         lib/cmake/sluice/sluice-config-version.cmake \
         lib/cmake/sluice/sluice-targets.cmake lib/pkgconfig/sluice.pc \
         include/sluice/tensor.h include/sluice/proto/config.pb.h bin/sluice; do
  [[ -e "$PREFIX/$f" ]] || fail "$PREFIX/$f was not installed"
done

# Public headers must stand alone: only the installed tree, Abseil, protobuf
# and the standard library. One compiler per core (SLUICE_JOBS, default all):
# each header is a separate compile of a few seconds.
mkdir -p "$WORK"
check_header() {
  echo "#include \"sluice/$(basename "$1")\"" |
    c++ -std=c++20 -fsyntax-only -Wall -Wextra -Werror -x c++ - -I "$2/include" ||
    { echo "consumer_test: FAILED: sluice/$(basename "$1") does not compile on its own" \
        "against the installed headers" >&2; return 1; }
}
export -f check_header
printf '%s\0' "$PREFIX"/include/sluice/*.h |
  xargs -0 -n 1 -P "${SLUICE_JOBS:-$(nproc)}" bash -c 'check_header "$2" "$1"' _ "$PREFIX" ||
  fail "public headers that do not compile on their own (above)"
echo "consumer_test: $(ls "$PREFIX"/include/sluice/*.h | wc -l) public headers compile on their own"

for kind in shared static; do
  static=OFF
  [[ $kind == static ]] && static=ON
  echo "consumer_test: find_package(sluice), $kind library"
  cmake -S "$ROOT/examples/consumer" -B "$WORK/$kind" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCONSUMER_STATIC=$static >"$WORK/$kind.log" 2>&1 ||
    { cat "$WORK/$kind.log" >&2; fail "configuring the consumer ($kind)"; }
  cmake --build "$WORK/$kind" >>"$WORK/$kind.log" 2>&1 ||
    { cat "$WORK/$kind.log" >&2; fail "building the consumer ($kind)"; }
  "$WORK/$kind/consumer" "$MODEL" || fail "the consumer ($kind) on $MODEL"
done
# ldd's output is read whole before it is searched: with pipefail, grep -q
# closing the pipe early makes ldd die of SIGPIPE and the check fail at random.
libs="$(ldd "$WORK/shared/consumer")" || fail "ldd $WORK/shared/consumer"
if grep -qF "$PREFIX/lib/libsluice.so" <<<"$libs"; then
  echo "consumer_test: the shared consumer loads $PREFIX/lib/libsluice.so"
else
  echo "$libs" >&2
  fail "the shared consumer does not load the installed libsluice.so"
fi

if command -v pkg-config >/dev/null 2>&1; then
  echo "consumer_test: pkg-config sluice"
  flags="$(PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" pkg-config --cflags --libs sluice)" ||
    fail "pkg-config --cflags --libs sluice"
  # shellcheck disable=SC2086
  c++ -std=c++20 -O1 "$ROOT/examples/consumer/main.cc" -o "$WORK/consumer_pc" \
    $flags -Wl,-rpath,"$PREFIX/lib" || fail "building the consumer with pkg-config"
  "$WORK/consumer_pc" "$MODEL" || fail "the pkg-config consumer on $MODEL"
fi
echo "consumer_test: passed"
