#!/usr/bin/env bash
# This build beside another one, on one GPU in one run: the decode kernels whose PTX a change touched,
# timed by each build's `warble bench --json` (events timing, median of 15, weight sets rotated past L2),
# two rounds (or ROUNDS) with the builds interleaved case by case.
#   BASE=DIR [CASES=...] [ROUNDS=2] bench/ab_build.sh    DIR: a source tree of the other build (built here with make if it
#                                 has no build/warble); JSON lines in $OUT/ab_build.jsonl, each line
#                                 tagged with "build": "base" or "this"; a summary per case on stdout
#                                 (bench/ab_summary.py)
set -uo pipefail
OUT=${OUT:-/tmp/warble-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
: "${BASE:?BASE=source tree of the other build}"
[ -x "$BASE/build/warble" ] || make -C "$BASE" -j"$(nproc)" build/warble >"$OUT/ab_build_make.log" 2>&1 ||
  { tail -20 "$OUT/ab_build_make.log"; exit 1; }
cases=(
  "w4a16|1|8192|8192" "w4a16|1|28672|4096" "w4a16|16|8192|8192"
  "a=f16,w=int2,g=128|1|8192|8192" "a=f16,w=int2,g=128|1|28672|4096" "a=f16,w=int3,g=128|1|8192|8192"
  "a=f16,w=int3,g=128|1|28672|4096"
)
# CASES="spec|m|n|k|flags;..." replaces the list (flags: warble bench choices such as --load tma)
[ -n "${CASES:-}" ] && IFS=';' read -r -a cases <<<"$CASES"
for round in $(seq "${ROUNDS:-2}"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r spec m n k flags <<<"$c"
    for b in base this; do
      bin=build/warble; [ $b = base ] && bin=$BASE/build/warble
      # shellcheck disable=SC2086
      timeout 60 "$bin" bench "$spec" --m "$m" --n "$n" --k "$k" ${flags:-} --json 2>>"$OUT/ab_build.err" |
        sed "s/^{/{\"build\": \"$b\", \"flags\": \"${flags:-}\", /" >>"$OUT/ab_build.jsonl"
    done
  done
done
python3 bench/ab_summary.py "$OUT/ab_build.jsonl" build
