#!/usr/bin/env bash
# The ledger check: every sm_90a kernel of the selftest plan must have been validated on a GPU
# (its PTX sha256 in tests/gpu/ledger.tsv, written by `warble selftest`) or be listed, loudly, as
# pending in tests/gpu/pending.tsv. A kernel in neither is missing and fails the check.
# One `warble ptx --hash` per (spec, N, K) of the plan, with all its Ms, in parallel.
# Usage: WARBLE=build/warble [JOBS=8] tests/ledger_check.sh
set -u
WARBLE=${WARBLE:-build/warble}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
ARCH=${ARCH:-sm_90a}
DIR=$(cd "$(dirname "$0")" && pwd)
LEDGER=${LEDGER:-$DIR/gpu/ledger.tsv}
PENDING=${PENDING:-$DIR/gpu/pending.tsv}

if [ ! -x "$WARBLE" ]; then
    echo "ledger-check: $WARBLE is not an executable (set WARBLE=)" >&2
    exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ledger-check.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# the plan a GPU of $ARCH runs (fp8 W8A8 cases join sm_90a's once this build admits them there)
if ! "$WARBLE" selftest --list --arch "$ARCH" >"$tmp/plan"; then
    echo "ledger-check: '$WARBLE selftest --list --arch $ARCH' failed" >&2
    exit 1
fi

# Group the plan by (spec, N, K, config choices): "spec n k choices m1,m2,..." per line ("-": none).
awk -F'\t' '{ key = $1 " " $3 " " $4 " " ($5 == "" ? "-" : $5); if (!(key in ms)) { order[++n] = key; ms[key] = $2 }
              else ms[key] = ms[key] "," $2 }
            END { for (i = 1; i <= n; i++) print order[i] " " ms[order[i]] }' "$tmp/plan" >"$tmp/groups"

hash_group() {
    local spec=$1 n=$2 k=$3 choices=$4 ms=$5 id=$6
    [ "$choices" = "-" ] && choices=
    choices=${choices//,/ }
    # shellcheck disable=SC2086 # choices are whole CLI words
    if "$WARBLE" ptx "$spec" --arch "$ARCH" --m "$ms" --n "$n" --k "$k" $choices --hash >"$tmp/$id.out" 2>"$tmp/$id.err"; then
        sed "s|\$|  $spec|" "$tmp/$id.out" >"$tmp/$id.hashes"
    else
        echo "ERROR $spec n=$n k=$k m=$ms: $(tail -n 1 "$tmp/$id.err")" >"$tmp/$id.fail"
    fi
}
export -f hash_group
export WARBLE ARCH tmp

awk '{ printf "%s %s %s %s %s %05d\n", $1, $2, $3, $4, $5, NR }' "$tmp/groups" |
    xargs -P "$JOBS" -L 1 bash -c 'hash_group "$@"' _

errors=0
if compgen -G "$tmp/*.fail" >/dev/null; then
    cat "$tmp"/*.fail
    errors=$(cat "$tmp"/*.fail | wc -l)
fi
# Distinct kernels: "sha256  config  spec", first occurrence kept.
cat "$tmp"/*.hashes 2>/dev/null | awk '!seen[$1]++' >"$tmp/kernels"

known() { [ -f "$1" ] && cut -f1 "$1" | grep -v '^sha256$' | sort -u; }
known "$LEDGER" >"$tmp/validated"
known "$PENDING" >"$tmp/pending"

validated=0 pending=0 missing=0
while read -r sha cfg spec; do
    if grep -qx "$sha" "$tmp/validated"; then
        validated=$((validated + 1))
    elif grep -qx "$sha" "$tmp/pending"; then
        pending=$((pending + 1))
        echo "PENDING (not validated on a GPU): $sha $ARCH $cfg $spec"
        grep "^$sha" "$PENDING" | sed 's/^/    pending.tsv: /'
    else
        missing=$((missing + 1))
        echo "MISSING (in neither ledger.tsv nor pending.tsv): $sha $ARCH $cfg $spec"
    fi
done <"$tmp/kernels"

extra=""
[ "$errors" -gt 0 ] && extra=", $errors errors"
echo "ledger-check: $validated validated, $pending pending, $missing missing$extra"
[ "$missing" -eq 0 ] && [ "$errors" -eq 0 ]
