#!/usr/bin/env bash
# Checks a CUDA wheel from scripts/build_wheel.sh on a GPU machine where it
# was not built (the H200: Ubuntu 24.04, Python 3.12 with PyTorch and
# NVIDIA's nvidia-* pip packages, no Abseil). Installs WHEEL with
# `pip install --no-deps --target` beside the environment's packages, with
# LD_LIBRARY_PATH unset, so cuBLAS, cuDNN and NVRTC can only come from the
# nvidia-* pip packages on sys.path or the system's default folders; then:
# the devices and the package folders searched, an MLP session on gpu:0
# against the NumPy reference with the CUDA libraries it mapped, and
# tests/python (its GPU tests run with PyTorch there). Logs to $OUT.
#
#   # here: scripts/build_wheel.sh --python python3.12 --cuda-arch 90-real
#   # there, from the repository root, dist/ carried:
#   OUT=/tmp/out scripts/wheel_gpu_check.sh dist/sluice-0.1.0-cp312-abi3-manylinux_2_35_x86_64.whl
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WHEEL=$1
OUT=${OUT:-out/wheel}
SITE=/tmp/sluice-wheel/site-packages   # "site-packages": test_install checks it
mkdir -p "$OUT"
unset LD_LIBRARY_PATH
rm -rf /tmp/sluice-wheel
python3 -m pip install --quiet --no-deps --no-compile --target "$SITE" "$WHEEL" || exit 1
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PATH="$SITE/bin:$PATH"
cd /tmp
python3 - "$ROOT" <<'PY' 2>&1 | tee "$OUT/session.txt"
import json, sys
import numpy as np
import sluice
from sluice import _sluice
root = sys.argv[1]
print("python", sys.version.split()[0], "sluice", sluice.__file__, "with_cuda", sluice.with_cuda)
print("package folders searched first:", _sluice.package_library_dirs())
facts = sluice.devices()
print(json.dumps({k: facts[k] for k in ("gpus", "no_gpu_reason", "cudnn", "notes") if k in facts}, indent=1))
print("list_physical_devices('GPU'):", [d.name for d in sluice.list_physical_devices("GPU")])
sess = sluice.Session(f"{root}/examples/mlp.pbtxt", device="gpu:0")
logits, probs = sess.run(None, {"x": np.load(f"{root}/examples/mlp_input.npy")})
want = np.load(f"{root}/examples/mlp_probs_expected.npy")
print("gpu:0 MLP max |sluice - reference| =", float(np.abs(probs - want).max()))
print("placed on:", sorted({n["device"] for n in sess.placement().nodes}))
# A CNN: its convolutions load cuDNN (and cuDNN its sub-libraries, by bare
# soname: the list below shows which folder each came from).
cnn = sluice.Session(f"{root}/examples/cnn.pb", device="gpu:0")
got = cnn.run(None, {cnn.inputs[0].name: np.load(f"{root}/examples/cnn_input.npy")})[0]
want = np.load(f"{root}/examples/cnn_expected.npy")
print("gpu:0 CNN max |sluice - reference| =", float(np.abs(got - want).max()))
maps = open("/proc/self/maps").read().split()
print("CUDA libraries mapped:", sorted({p for p in maps if p.startswith("/") and
      any(k in p for k in ("cublas", "cudnn", "nvrtc", "cudart"))}))
PY
status=${PIPESTATUS[0]}
SLUICE_SOURCE_DIR="$ROOT" python3 -m pytest -q -p no:cacheprovider -rs \
  "$ROOT/tests/python" 2>&1 | tee "$OUT/pytest.txt"
exit $(( status || PIPESTATUS[0] ))
