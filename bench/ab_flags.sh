#!/usr/bin/env bash
# Pairs of forced choices of one kernel, timed by `warble bench --json` (events timing, median of 15,
# weight sets rotated past L2), ROUNDS rounds with the two variants interleaved.
#   PAIRS="M N K|common flags|variant a|variant b[|spec];..." [SPEC=w4a16] [ROUNDS=3] bench/ab_flags.sh
# (a pair's own spec, else SPEC)
# JSON lines in $OUT/ab_flags.jsonl, each tagged with "variant"; a summary per shape on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/warble-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
: "${PAIRS:?PAIRS=\"M N K|common|a|b;...\"}"
IFS=';' read -r -a pairs <<<"$PAIRS"
for round in $(seq "${ROUNDS:-3}"); do
  for p in "${pairs[@]}"; do
    IFS='|' read -r mnk common a b spec <<<"$p"
    read -r m n k <<<"$mnk"
    for v in "$a" "$b"; do
      # shellcheck disable=SC2086
      timeout 60 build/warble bench "${spec:-${SPEC:-w4a16}}" --m "$m" --n "$n" --k "$k" $common $v --json 2>>"$OUT/ab_flags.err" |
        sed "s/^{/{\"variant\": \"$v\", \"round\": $round, /" >>"$OUT/ab_flags.jsonl"
    done
  done
done
python3 bench/ab_summary.py "$OUT/ab_flags.jsonl" variant
