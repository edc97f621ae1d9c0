#!/usr/bin/env bash
# When no GPU could be had: every sm_90a kernel the ledger lacks goes into tests/gpu/pending.tsv with
# the reason given, for the next GPU run to validate (`selftest --pending` runs them; a run that
# validates a kernel takes it out of pending.tsv).   usage: scripts/ledger_pend.sh "REASON"
set -euo pipefail
cd "$(dirname "$0")/.."
reason=${1:?usage: scripts/ledger_pend.sh REASON}
pending=tests/gpu/pending.tsv
make -s ledger-check 2>/dev/null | awk -v r="$reason" -F': ' '/^MISSING/ {
  split($2, f, " "); printf "%s\t%s\t%s\t%s\t%s\n", f[1], f[4], f[2], f[3], r }' >>"$pending" || true
echo "ledger-pend: $(($(wc -l <"$pending") - 1)) kernel(s) pending"
make -s ledger-check | tail -1
