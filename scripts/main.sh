#!/usr/bin/env bash
# The main job: set up, build, and then
#   with a GPU:    warble selftest (correctness against float64, writes tests/gpu/ledger.tsv)
#                  and warble bench on 8192 x 8192 at M = 1, 16, 256, 4096;
#   without one:   emit every kernel for every architecture and assemble it with ptxas (the PTX gate).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
. scripts/env.sh
make -j"$(nproc)" all
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "main: GPU found: $(nvidia-smi -L | head -n 1)"
  build/warble selftest
  build/warble bench w4a16 --m 1,16,256,4096 --n 8192 --k 8192
else
  echo "main: no GPU on this machine: emitting and ptxas-checking the kernels of every architecture instead"
  make ptx-gate
fi
