#!/usr/bin/env bash
# One complete GPU session (the device machine keeps nothing): build, validate, measure; logs to $OUT.
#   scripts/h200.sh quick   selftest --quick, compute-sanitizer on a small run, a short benchmark
#   scripts/h200.sh full    full selftest (writes the ledger), compute-sanitizer, the benchmark suite
#   scripts/h200.sh bench   benchmarks only
set -uo pipefail
mode=${1:-quick}
OUT=${OUT:-/tmp/warble-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
make -j16 all >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
if [ "$mode" != bench ]; then
  sel=$([ "$mode" = full ] && echo "" || echo "--quick")
  build/warble selftest $sel --ledger tests/gpu/ledger.tsv 2>&1 | tee "$OUT/selftest.log" | tail -5
  cp tests/gpu/ledger.tsv "$OUT/ledger.tsv"
  if command -v compute-sanitizer >/dev/null; then
    compute-sanitizer --error-exitcode 9 build/examples/embed_gemm 7 256 512 >"$OUT/sanitizer.log" 2>&1
    echo "compute-sanitizer exit $? ($(tail -1 "$OUT/sanitizer.log"))"
  fi
  python3 tests/gpu/run_contract.py --warble build/warble 2>&1 | tee "$OUT/run_contract.log" | tail -3
fi
ms=$([ "$mode" = quick ] && echo "1,16,256,4096" || echo "1,16,64,256,1024,4096,16384")
shapes=$([ "$mode" = quick ] && echo "8192x8192" || echo "8192x8192,28672x4096,4096x14336,6144x4096")
PYTHONUNBUFFERED=1 python3 bench/warble_peers.py --copy-ceiling --shapes "$shapes" --m "$ms" \
  --out "$OUT/bench.jsonl" >"$OUT/bench.log" 2>&1 || tail -20 "$OUT/bench.log"
python3 bench/report.py "$OUT/bench.jsonl" | tee "$OUT/bench.md"
