#!/usr/bin/env bash
# The heuristic's new decode picks beside the old ones, forced, on one GPU in one run (`warble bench
# --json`: events timing, median of 15; two rounds, old and new interleaved). Twelfth session: two warps
# along N from 256 blocks, at most 24 warps an SM at M = 16 (lower/config.c).
#   bench/ab_picks.sh    JSON lines in $OUT/ab.jsonl (the old pick's lines carry its forced config)
set -uo pipefail
OUT=${OUT:-/tmp/warble-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
cases=(
  "w4a16|16|8192|8192|--m-tiles 2 --warps-n 1 --warps-k 4 --stages 4"
  "w4a16|16|28672|4096|--m-tiles 2 --warps-n 2 --warps-k 4 --stages 4"
  "w4a16|1|8192|8192|--warps-n 1 --warps-k 4 --k-slices 2 --stages 4"
  "a=f16,w=int2,g=128|1|8192|8192|--warps-n 1 --warps-k 4 --k-slices 2 --stages 5"
  "a=f16,w=int3,g=128|1|8192|8192|--warps-n 1 --warps-k 4 --k-slices 2 --stages 4"
  "a=f16,w=int5,g=128|1|8192|8192|--warps-n 1 --warps-k 4 --k-slices 2 --stages 3"
  "a=f16,w=int6,g=128|1|8192|8192|--warps-n 1 --warps-k 2 --k-slices 2 --stages 5"
  "a=f16,w=int8,g=128|1|8192|8192|--warps-n 1 --warps-k 2 --k-slices 2 --stages 5"
  "a=f16,w=e2m1,ws=e8m0,g=32|1|8192|8192|--warps-n 1 --warps-k 4 --k-slices 2 --stages 4"
  "a=f16,w=e4m3,ws=f32,g=0|1|8192|8192|--warps-n 1 --warps-k 2 --k-slices 2 --stages 5"
)
for round in 1 2; do
  for c in "${cases[@]}"; do
    IFS='|' read -r spec m n k old <<<"$c"
    timeout 60 build/warble bench "$spec" --m "$m" --n "$n" --k "$k" --json >>"$OUT/ab.jsonl" 2>>"$OUT/ab.err"
    timeout 60 build/warble bench "$spec" --m "$m" --n "$n" --k "$k" --mma mma.sync $old --json \
      >>"$OUT/ab.jsonl" 2>>"$OUT/ab.err"
  done
done
