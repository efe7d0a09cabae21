#!/usr/bin/env bash
# Builds sluice's Python extension for another CPython than this machine's
# (the H200 machine has Python 3.12 with torch and CuPy; the development
# machines have 3.11), from an existing CUDA build's objects and libraries:
# the extension's own sources and nanobind are compiled again against the
# other Python's headers, everything else is linked as built.
#
#   # on the GPU machine: tar czf $OUT/pyinc.tgz -C /usr/include python3.12
#   #   (and copy x86_64-linux-gnu/python3.12/pyconfig.h, or let this script
#   #    use this machine's pyconfig.h, as it does when none is given)
#   scripts/python_ext_for.sh 3.12 /path/to/unpacked/include [BUILD]
#
# Writes BUILD/py<version>/python/_sluice.cpython-<ver>-x86_64-linux-gnu.so.
# Put it in a copy of python/sluice/ on PYTHONPATH there (with .gpu/lib on
# LD_LIBRARY_PATH for Abseil and oneDNN), then run tests/python with that
# Python. Used on 2026-12-02 to run tests/python/test_device_tensors.py on
# the H200 (bench/RESULTS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
VER=$1                       # 3.12
INC=$(cd "$2" && pwd)        # holds python3.12/Python.h
BUILD=${3:-build}
TAG=${VER/./}                # 312
HERE_INC=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
HERE_TAG=$(python3 -c "import sys;print(f'{sys.version_info[0]}{sys.version_info[1]}')")
# Debian's python3.x/pyconfig.h includes <x86_64-linux-gnu/python3.x/pyconfig.h>.
mkdir -p "$INC/x86_64-linux-gnu/python$VER"
if [[ ! -f "$INC/x86_64-linux-gnu/python$VER/pyconfig.h" ]]; then
  cp "$HERE_INC/pyconfig.h" "$INC/x86_64-linux-gnu/python$VER/pyconfig.h"
fi
SO="python/_sluice.cpython-$HERE_TAG-x86_64-linux-gnu.so"
ninja -C "$BUILD" "$SO" >/dev/null
OUTDIR="py$TAG"
ninja -C "$BUILD" -t commands "$SO" | grep -E "nanobind|python/src|_sluice" |
  sed -e "s#-I$HERE_INC#-I$INC/python$VER -I$INC#g" \
      -e "s# python/# $OUTDIR/python/#g" \
      -e "s#cpython-$HERE_TAG#cpython-$TAG#g" -e "s# -Werror##g" > "$BUILD/$OUTDIR.cmds"
cd "$BUILD"
grep -o -- "-o $OUTDIR/[^ ]*" "$OUTDIR.cmds" | sed 's/^-o //' | xargs -n1 dirname | sort -u | xargs mkdir -p
bash -e "$OUTDIR.cmds"
ls -la "$OUTDIR/python/_sluice.cpython-$TAG-x86_64-linux-gnu.so"
