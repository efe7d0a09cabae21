#!/usr/bin/env bash
# Sets up the machine, builds the `sluice` command (and nothing else: the
# tests and benchmarks wait for scripts/build.sh or scripts/test.sh), and
# shows it at work on the shipped MLP: the devices it sees, the model, one
# run, and how the outputs compare with the independent NumPy reference in
# examples/. The README's quick start says how long the first build takes.
#
#   scripts/demo.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SLUICE="$ROOT/build/tools/sluice"
OUT="$ROOT/build/demo_out"

"$ROOT/scripts/setup.sh"
start=$(date +%s)
"$ROOT/scripts/build.sh" --target sluice
echo "demo: sluice built in $(( $(date +%s) - start )) s"

cd "$ROOT"
echo
echo "\$ sluice devices"
"$SLUICE" devices
echo
echo "\$ sluice inspect examples/mlp.pbtxt"
"$SLUICE" inspect examples/mlp.pbtxt
echo
echo "\$ sluice run examples/mlp.pbtxt --input x=examples/mlp_input.npy --output-dir build/demo_out"
"$SLUICE" run examples/mlp.pbtxt --input x=examples/mlp_input.npy \
  --output-dir "$OUT"
echo
echo "compared with the NumPy reference (examples/reference.py, float64):"
"$ROOT/.venv/bin/python" - "$OUT" <<'PY'
import sys
import numpy as np

out = sys.argv[1]
worst = 0.0
for name in ("logits", "probs"):
    got = np.load(f"{out}/{name}.npy")
    want = np.load(f"examples/mlp_{name}_expected.npy")
    diff = float(np.max(np.abs(got.astype(np.float64) - want)))
    worst = max(worst, diff)
    print(f"  {name}: shape {got.shape}, max |sluice - reference| = {diff:.2e}")
print("  match (tolerance 1e-4)" if worst <= 1e-4 else "  MISMATCH")
sys.exit(0 if worst <= 1e-4 else 1)
PY
