#!/usr/bin/env bash
# The warp-specialized TMA pipeline (--load tma, lower/lower_tma.c; --persistent; --cluster 2) beside the cp.async wgmma kernel, on
# one GPU in one run (`warble bench --json`: events timing, median of 15, weight sets rotated past L2;
# the variants of a shape back to back). 8192 x 8192 at M = 4096 and 16384 (issues 4 and 5).
#   [MS="4096 16384"] [SPECS="w4a16;fp8"] [VARIANTS="--load tma;--load tma --cluster 2"] bench/ab_tma.sh    JSON lines in $OUT/ab_tma.jsonl (each line carries its kernel's config)
set -uo pipefail
OUT=${OUT:-/tmp/warble-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
IFS=";" read -r -a specs <<<"${SPECS:-w4a16;fp8;int8;a=e4m3,w=int4,ws=f32,g=0}"
IFS=";" read -r -a variants <<<"${VARIANTS:---mma wgmma --load cp.async;--mma wgmma --load tma;--mma wgmma --load tma --persistent;--mma wgmma --load tma --cluster 2}"
for spec in "${specs[@]}"; do
  for m in ${MS:-4096 16384}; do
    for v in "${variants[@]}"; do
      # shellcheck disable=SC2086
      timeout 60 build/warble bench "$spec" --m "$m" --n 8192 --k 8192 $v --json >>"$OUT/ab_tma.jsonl" \
        2>>"$OUT/ab_tma.err"
    done
  done
done
