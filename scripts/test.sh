#!/usr/bin/env bash
# Sets up the machine, builds, and runs the whole test suite.
#
#   scripts/test.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
ctest --test-dir "$ROOT/build" --output-on-failure -j2
