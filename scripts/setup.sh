#!/usr/bin/env bash
# Installs what building and testing sluice needs, on Debian 12, and creates
# the Python virtual environment .venv (NumPy, for the example reference
# scripts). Idempotent: when everything is present it only checks, quickly.
#
#   scripts/setup.sh
#   scripts/setup.sh --onnx   # also .venv-onnx: numpy, onnx, onnxruntime
#                             # (tests/onnx/requirements.txt), for the ONNX
#                             # test-data scripts and the node-suite harness
#   scripts/setup.sh --python # also .venv-python: the wheel's pinned build
#                             # backend and the pytest suite's packages
#                             # (tests/python/requirements.txt)
#
# Set SLUICE_SKIP_APT=1 to skip the package step (machines without apt or
# network, where the packages are provided some other way).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

PACKAGES=(
  libprotobuf-dev protobuf-compiler libabsl-dev libgtest-dev libgmock-dev
  libeigen3-dev libcli11-dev nlohmann-json3-dev libbenchmark-dev
  libonnx-dev cmake ninja-build g++ graphviz python3-venv pkg-config
  # oneDNN's sgemm for the CPU's float32 GEMM tiles (kernels/cpu/sgemm.h;
  # without it, Eigen's).
  libdnnl-dev
  # The sanitizer and fuzzing build (scripts/sanitize.sh): clang, its
  # sanitizer and libFuzzer runtimes, llvm-symbolizer for readable reports.
  clang-14 libclang-rt-14-dev llvm-14
  # Jobs of several processes (distributed/): Open MPI's mpirun and library;
  # CI runs the two-process tests with them.
  openmpi-bin libopenmpi-dev
)

install_packages() {
  if [[ "${SLUICE_SKIP_APT:-0}" == "1" ]]; then
    echo "setup: SLUICE_SKIP_APT=1, not checking Debian packages"
    return
  fi
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "setup: no dpkg here; install these yourself: ${PACKAGES[*]}" >&2
    return
  fi
  local missing=()
  for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
        grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]} == 0)); then
    echo "setup: Debian packages present"
    return
  fi
  echo "setup: installing ${missing[*]}"
  local sudo=()
  if [[ "$(id -u)" != "0" ]]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y \
    --no-install-recommends "${missing[@]}"
}

# create_venv NAME REQUIREMENTS: the virtual environment $ROOT/NAME with the
# packages of REQUIREMENTS (a path below $ROOT). It is rebuilt only when that
# file changes (its hash is kept in the venv).
create_venv() {
  local name=$1 requirements=$2
  local venv="$ROOT/$name"
  local stamp="$venv/.sluice-requirements.sha256"
  local want
  want="$(sha256sum "$ROOT/$requirements" | cut -d' ' -f1)"
  if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "setup: $name up to date"
    return
  fi
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup: creating $name with $(command -v python3)"
    python3 -m venv "$venv"
  fi
  echo "setup: installing Python packages from $requirements"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r "$ROOT/$requirements"
  echo "$want" >"$stamp"
}

install_packages
create_venv .venv scripts/requirements.txt
# .venv-onnx, on request (tests/onnx/node_suite.py and its CTest).
for arg in "$@"; do
  case "$arg" in
    --onnx) create_venv .venv-onnx tests/onnx/requirements.txt ;;
    # .venv-python, on request (scripts/python_test.sh).
    --python) create_venv .venv-python tests/python/requirements.txt ;;
  esac
done
