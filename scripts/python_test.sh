#!/usr/bin/env bash
# Builds the sluice wheel from this checkout with scripts/build_wheel.sh
# (`pip wheel .`: the project's CMake through scikit-build-core and
# nanobind, pinned in .venv-python: scripts/setup.sh --python; then
# `auditwheel repair`, which puts protobuf, Abseil, libonnx_proto and oneDNN
# inside it), installs that repaired wheel into a fresh virtual environment,
# and runs the pytest suite tests/python from /tmp, so the package under
# test is the installed wheel, not the source tree (tests/python/
# test_wheel.py checks that it uses no library of the build machine's).
# CI runs it from scripts/test.sh, after the normal build.
#
# Where the wheel is compiled: when the normal build (scripts/build.sh,
# build/) exists, pip builds in that folder, so CMake compiles only the
# extension and links the modules build/ already has (with CUDA if build/
# has it): about a minute instead of the 8 to 15 of a fresh CPU-only
# build on a 2-core machine. Without build/ (or with SLUICE_PYTHON_FRESH=1)
# it builds CPU-only in build-python/cmake.
#
#   scripts/python_test.sh
#   scripts/python_test.sh -k session       # extra arguments go to pytest
#   SLUICE_PYTHON_FRESH=1 scripts/python_test.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-python"
WORK="$ROOT/build-python"   # build folder and test venv; ignored by git (the wheel: dist/)

"$ROOT/scripts/setup.sh" --python
rm -rf "$WORK/venv"
mkdir -p "$WORK"

if [[ "${SLUICE_PYTHON_FRESH:-0}" != "1" && -f "$ROOT/build/CMakeCache.txt" ]]; then
  # Keep build/'s own settings (tests and benchmarks on, as build.sh has
  # them; pyproject.toml would turn them off); only the extension builds.
  # SLUICE_WHEEL_CCACHE=OFF: no compiler launcher added, which would
  # change every compile command and rebuild the whole tree.
  where=(--build-dir "$ROOT/build" -C cmake.define.SLUICE_BUILD_TESTS=ON
         -C cmake.define.SLUICE_BUILD_BENCH=ON
         -C cmake.define.SLUICE_WHEEL_CCACHE=OFF)
else
  where=(--build-dir "$WORK/cmake" --cpu)
fi
where+=(--zip-level 1)  # tested, then thrown away
start=$(date +%s)
wheel=$("$ROOT/scripts/build_wheel.sh" "${where[@]}")
echo "python_test: wheel built and repaired in $(( $(date +%s) - start )) s: $(basename "$wheel")"

# A venv of its own, seeded with .venv-python's packages (numpy, pytest, ...)
# but not its source tree: the wheel is the only sluice in it.
"$VENV/bin/python" -m venv "$WORK/venv"
cat >"$WORK/venv/lib/$("$VENV/bin/python" -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')/site-packages/sluice-test-deps.pth" <<PTH
$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
PTH
"$WORK/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --no-deps --no-index "$wheel"

cd /tmp
SLUICE_SOURCE_DIR="$ROOT" "$WORK/venv/bin/python" -m pytest -q \
  -p no:cacheprovider "$ROOT/tests/python" "$@"
echo "python_test: done in $(( $(date +%s) - start )) s"
