#!/usr/bin/env bash
# The test command: set up a fresh machine, then run the whole suite (unit tests under ASan+UBSan,
# CLI contract tests, the PTX gate on all eight architectures, the GPU ledger check). No GPU needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
. scripts/env.sh
command -v ptxas >/dev/null || { echo "test: ptxas not found (install the CUDA toolkit)" >&2; exit 1; }
make -j"$(nproc)" all
make test
