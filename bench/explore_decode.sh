#!/usr/bin/env bash
# Decode configs timed one by one on a GPU (`warble bench --json`, events timing, median of 15): the
# heuristic's pick beside named candidates, and the wgmma decode configs swept. Questions of the twelfth
# session (docs/perf.md): does W4A16 at M = 16 run faster on wgmma (warpgroups splitting K) than on
# mma.sync; which mma.sync M = 16 configs beat the pick on the H200; do int5/int6 at M = 1 want more
# warps; where does W4A8 (e4m3 x int4) decode stand.
#   bench/explore_decode.sh   JSON lines in $OUT/explore.jsonl, errors in $OUT/explore.err
set -uo pipefail
OUT=${OUT:-/tmp/warble-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
log=$OUT/explore.jsonl err=$OUT/explore.err
b() { timeout 120 build/warble bench "$@" --json >>"$log" 2>>"$err" || echo "failed: $*" >>"$err"; }
shapes="8192x8192 28672x4096 4096x14336 6144x4096"
for s in $shapes; do # W4A16 at M = 16: the pick, candidates on mma.sync, every wgmma config
  n=${s%x*} k=${s#*x}
  b w4a16 --m 16 --n $n --k $k
  for c in "2 4 2 4" "2 2 1 4" "2 4 4 3" "1 4 2 3" "2 2 2 4" "2 4 1 4" "2 2 2 3" "2 8 1 4" "1 8 2 4"; do
    set -- $c
    b w4a16 --m 16 --n $n --k $k --mma mma.sync --m-tiles 2 --warps-n $1 --warps-k $2 --k-slices $3 --stages $4
  done
  b w4a16 --m 16 --n $n --k $k --mma wgmma --m-tiles 2 --sweep
done
for f in "a=f16,w=int5,g=128" "a=f16,w=int6,g=128"; do # two-plane weights at M = 1
  for s in 8192x8192 28672x4096; do
    n=${s%x*} k=${s#*x}
    b "$f" --m 1 --n $n --k $k
    for c in "2 2 4 6" "2 8 1 5" "2 4 2 5" "2 2 2 6" "1 4 1 6" "2 4 2 4" "2 2 4 5" "2 4 1 5"; do
      set -- $c
      b "$f" --m 1 --n $n --k $k --mma mma.sync --m-tiles 1 --warps-n $1 --warps-k $2 --k-slices $3 --stages $4
    done
  done
done
for m in 1 16; do # W4A8 (e4m3 x int4 per channel) and fp8 W8A8 decode on wgmma
  b "a=e4m3,w=int4,ws=f32,g=0" --m $m --n 8192 --k 8192 --sweep
  b fp8 --m $m --n 8192 --k 8192
done
# Where the M = 16 kernel's warps stall, beside M = 1 (hardware counters where the machine reads them)
if command -v ncu >/dev/null; then
  for m in 1 16; do
    timeout 90 ncu --clock-control none -k wb_gemm --launch-skip 40 --launch-count 1 \
      --section SchedulerStats --section WarpStateStats --section Occupancy --section SpeedOfLight \
      build/warble bench w4a16 --m $m --n 8192 --k 8192 >"$OUT/ncu-m$m.txt" 2>&1 || echo "ncu m=$m failed" >>"$err"
  done
fi
