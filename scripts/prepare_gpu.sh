#!/usr/bin/env bash
# Prepares .gpu/ for the GPU test machine (docs: /work/shared/GPU-MACHINE.md):
# the CUDA build's test binaries and CLI, plus the shared libraries they need
# that the machine lacks (Abseil above all; it has CUDA 13 and protobuf
# 3.21.12, but libprotobuf is copied too so the exact build-time .so travels).
#
#   scripts/prepare_gpu.sh              # builds build-cuda/ first if needed
#   BUILD=build-cuda scripts/prepare_gpu.sh
#   PACK="sluice sluice_kernels_test" BUILD=build scripts/prepare_gpu.sh
#   PYEXT=build/py312/python/_sluice.cpython-312-x86_64-linux-gnu.so \
#     scripts/prepare_gpu.sh            # also .gpu/python for tests/python
#
# PACK (binary names) also strips those binaries and packs them with
# .gpu/lib into .gpupack/gpu.tgz, small enough for the device tool's 64 MiB
# carry (all binaries together are not); unpack it there with
# `tar xzf .gpupack/gpu.tgz` before scripts/gpu_suite.sh.
#
# Layout produced:  .gpu/bin/*   test binaries, benchmarks and `sluice`
#                   .gpu/onnx_node_cases/  the ONNX node cases (with .venv-onnx)
#                   .gpu/lib/*   libabsl_*.so.*, libprotobuf*.so.* and other
#                                non-system, non-CUDA libraries `ldd` lists
# scripts/gpu_suite.sh then runs on the GPU machine from the repo root.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-cuda}
JOBS=${JOBS:-1}

if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DSLUICE_BUILD_BENCH=OFF
fi
# -k 0: a module that does not build yet should not stop the others' tests
# from travelling; what failed is listed.
ninja -C "$BUILD" -j"$JOBS" -k 0 || echo "warning: some targets failed to build" >&2

rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib
shopt -s nullglob
for bin in "$BUILD"/tests/sluice_*_test "$BUILD"/tests/sluice_onnx_node_runner \
    "$BUILD"/tests/sluice_bootstrap_rank \
    "$BUILD"/tools/sluice "$BUILD"/bench/*_bench; do
  [[ -x "$bin" ]] && cp "$bin" .gpu/bin/
done

# The MPI shim (decision 52) in .gpu/lib, which the binaries in .gpu/bin
# look for as ../lib; ldd below brings its libmpi and what that needs.
if [[ -f "$BUILD/lib/libsluice_mpi.so" ]]; then cp "$BUILD/lib/libsluice_mpi.so" .gpu/lib/; fi

# Libraries: everything ldd resolves except the C/C++ runtime (present on
# Ubuntu 24.04 in newer versions) and CUDA (in /usr/local/cuda there).
for bin in .gpu/bin/* .gpu/lib/libsluice_mpi.so; do
  [[ -e "$bin" ]] || continue
  ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|\
    librt.so*|ld-linux*|libcuda.so*|libcudart.so*|libcublas*.so*|libnvrtc*)
      continue ;;
  esac
  cp -L "$lib" .gpu/lib/
done
# The ONNX node cases for the onnx part of scripts/gpu_suite.sh (generated
# once under out/ by the pinned onnx package of .venv-onnx).
if [[ -x .venv-onnx/bin/python ]]; then
  cases="$(.venv-onnx/bin/python tests/onnx/node_suite.py --generate-only)"
  cp -r "$cases" .gpu/onnx_node_cases
fi
# The Python package for the python part of scripts/gpu_suite.sh: PYEXT names
# the extension built for the GPU machine's Python (scripts/python_ext_for.sh
# 3.12 ... writes BUILD/py312/python/_sluice.cpython-312-x86_64-linux-gnu.so).
if [[ -n "${PYEXT:-}" ]]; then
  mkdir -p .gpu/python
  cp -r python/sluice .gpu/python/sluice
  cp "$PYEXT" .gpu/python/sluice/
  if [[ -f .gpu/lib/libsluice_mpi.so ]]; then
    cp .gpu/lib/libsluice_mpi.so .gpu/python/sluice/
  fi
fi
echo "prepared .gpu/: $(ls .gpu/bin | wc -l) binaries, $(ls .gpu/lib | wc -l) libraries"
ls .gpu/bin
if [[ -n "${PACK:-}" ]]; then
  mkdir -p .gpupack
  files=(.gpu/lib)
  [[ -d .gpu/python ]] && files+=(.gpu/python)
  for name in $PACK; do
    strip ".gpu/bin/$name"
    files+=(".gpu/bin/$name")
  done
  tar czf .gpupack/gpu.tgz "${files[@]}"
  echo "packed .gpupack/gpu.tgz: $(du -h .gpupack/gpu.tgz | cut -f1) ($PACK)"
fi
