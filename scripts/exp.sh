#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/.."
make -j16 all > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
timeout 40 python3 tests/gpu/cvt_fp8_probe.py 2>&1 | tee $OUT/probe.txt
cp tests/gpu/ledger.tsv $OUT/ledger.tsv
timeout 60 stdbuf -oL build/warble selftest --only tma --ledger $OUT/ledger.tsv > $OUT/tma.log 2>&1; echo "tma rc=$?"
tail -4 $OUT/tma.log
timeout 30 build/warble bench w4a16 --m 256,4096 --n 8192 --k 8192 --mma wgmma --load tma 2>&1 | tail -2 | tee $OUT/tma_bench.txt
