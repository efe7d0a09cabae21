#!/usr/bin/env bash
# Builds the sluice wheel from this checkout with `pip wheel .` (the
# project's CMake through scikit-build-core; CPU only unless
# SLUICE_PYTHON_CUDA=1, since a CUDA wheel takes far longer to compile and
# CI has no GPU), installs it into a fresh virtual environment made from
# .venv-python (scripts/setup.sh --python), and runs the pytest suite
# tests/python from outside the source tree, so the package under test is
# the installed wheel. CI runs it from scripts/test.sh.
#
#   scripts/python_test.sh
#   scripts/python_test.sh -k session       # extra arguments go to pytest
#   SLUICE_PYTHON_CUDA=1 scripts/python_test.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-python"
WORK="$ROOT/build-python"   # wheel, build folder and test venv; ignored by git

"$ROOT/scripts/setup.sh" --python
rm -rf "$WORK/dist" "$WORK/venv"
mkdir -p "$WORK"

cuda=(-C cmake.define.SLUICE_WITH_CUDA=OFF)
if [[ "${SLUICE_PYTHON_CUDA:-0}" == "1" ]]; then cuda=(); fi
start=$(date +%s)
# No build isolation: the pinned build backend is already in .venv-python
# (tests/python/requirements.txt), so CI downloads nothing more here.
CMAKE_BUILD_PARALLEL_LEVEL="${SLUICE_JOBS:-$(nproc)}" \
  "$VENV/bin/python" -m pip wheel "$ROOT" --no-build-isolation --no-deps \
  --disable-pip-version-check --quiet -w "$WORK/dist" \
  -C build-dir="$WORK/cmake" "${cuda[@]}"
echo "python_test: wheel built in $(( $(date +%s) - start )) s: $(ls "$WORK/dist")"

# A venv of its own, seeded with .venv-python's packages (numpy, pytest, ...)
# but not its source tree: the wheel is the only sluice in it.
"$VENV/bin/python" -m venv "$WORK/venv"
cat >"$WORK/venv/lib/$("$VENV/bin/python" -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')/site-packages/sluice-test-deps.pth" <<PTH
$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
PTH
"$WORK/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --no-deps --no-index "$WORK"/dist/sluice-*.whl

cd /tmp
SLUICE_SOURCE_DIR="$ROOT" "$WORK/venv/bin/python" -m pytest -q \
  -p no:cacheprovider "$ROOT/tests/python" "$@"
echo "python_test: done in $(( $(date +%s) - start )) s"
