#!/usr/bin/env bash
# Take a ledger that a GPU run brought back (scripts/h200.sh validate writes $OUT/ledger.tsv) into
# tests/gpu/ledger.tsv, adding only its new lines, and drop the kernels it validated from
# tests/gpu/pending.tsv.   usage: scripts/ledger_merge.sh RETURNED_LEDGER
set -euo pipefail
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 RETURNED_LEDGER" >&2; exit 2; }
cd "$(dirname "$0")/.."
ledger=tests/gpu/ledger.tsv pending=tests/gpu/pending.tsv
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
awk -F'\t' 'NR == FNR { seen[$0] = 1; next } FNR > 1 && !($0 in seen)' "$ledger" "$1" >"$tmp"
added=$(wc -l <"$tmp")
cat "$tmp" >>"$ledger"
if [ -f "$pending" ]; then
  awk -F'\t' 'NR == FNR { if (FNR > 1) ok[$1] = 1; next } FNR == 1 || !($1 in ok)' "$ledger" "$pending" >"$tmp"
  left=$(($(wc -l <"$tmp") - 1))
  cp "$tmp" "$pending"
  echo "ledger-merge: $added line(s) added; $left kernel(s) still pending"
else
  echo "ledger-merge: $added line(s) added"
fi
