#!/usr/bin/env bash
# A/B on a GPU: the working tree against a base tree (another commit's sources), both built here,
# timed in the same session by bench/warble_peers.py (graph replays, weights rotated past L2), the
# two builds interleaved shape by shape so that clock drift hits both alike.
#   [ROUNDS=2] bench/ab.sh BASE_DIR [SHAPES] [MS] [SPEC]
# BASE_DIR holds a source tree (make one with `git archive COMMIT | tar -x -C DIR`). Output: one
# JSON line per (build, shape, M) in $OUT/ab.jsonl, and a table of new / base times.
set -uo pipefail
base=${1:?usage: bench/ab.sh BASE_DIR [SHAPES] [MS] [SPEC]}
shapes=${2:-8192x8192,28672x4096,4096x14336,6144x4096}
ms=${3:-1,16}
spec=${4:-w4a16}
OUT=${OUT:-/tmp/warble-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
make -j16 all >"$tmp/build.log" 2>&1 && make -C "$base" -j16 all >>"$tmp/build.log" 2>&1 ||
  { tail -20 "$tmp/build.log"; exit 1; }
: >"$OUT/ab.jsonl"
for round in $(seq "${ROUNDS:-2}"); do
  for shape in ${shapes//,/ }; do
    for build in base new; do
      lib=build/libwarble.so
      [ "$build" = base ] && lib=$base/build/libwarble.so
      rm -f "$tmp/$build.jsonl"
      PYTHONUNBUFFERED=1 timeout 120 python3 bench/warble_peers.py --no-torch --lib "$lib" --spec "$spec" \
        --shapes "$shape" --m "$ms" --out "$tmp/$build.jsonl" >/dev/null 2>"$tmp/err.log" ||
        { echo "ab: $build $shape failed"; tail -5 "$tmp/err.log"; continue; }
      sed "s/^{/{\"build\": \"$build\", \"round\": $round, /" "$tmp/$build.jsonl" >>"$OUT/ab.jsonl"
    done
  done
done
python3 - "$OUT/ab.jsonl" <<'EOF'
import json, sys, statistics
rows = [r for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip()) if isinstance(r, dict)]
t = {}
for r in rows:
    if r.get("peer") != "warble":
        continue
    t.setdefault((r["N"], r["K"], r["M"], r["build"]), []).append(r["us"])
print("| N x K | M | base us | new us | new / base |")
print("| --- | ---: | ---: | ---: | ---: |")
for (n, k, m, b) in sorted(t):
    if b != "new" or (n, k, m, "base") not in t:
        continue
    old, new = statistics.median(t[(n, k, m, "base")]), statistics.median(t[(n, k, m, "new")])
    print("| %d x %d | %d | %.2f | %.2f | %.3f |" % (n, k, m, old, new, new / old))
EOF
