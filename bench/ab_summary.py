#!/usr/bin/env python3
"""The summary of an A/B run (bench/ab_flags.sh, bench/ab_build.sh): per spec, shape and forced flags
(ab_build.sh's cases may force some), each variant's median time over its rounds, its times and config,
and the first variant's median over each other's.
usage: ab_summary.py RESULTS.jsonl FIELD   (FIELD: the key naming the variant, "variant" or "build")"""
import json
import statistics as st
import sys


def main(path, field):
    rows = [json.loads(l) for l in open(path) if l.startswith("{")]
    by = {}
    for r in rows:
        key = (r["spec"][:40], r["m"], r["n"], r["k"], r.get("flags", ""))
        by.setdefault(key, {}).setdefault(r[field], []).append((r["us"], r["config"]))
    for (spec, m, n, k, flags), v in by.items():
        med = {var: st.median(u for u, _ in x) for var, x in v.items()}
        first = next(iter(med))
        print("%s m=%d n=%d k=%d%s" % (spec, m, n, k, " " + flags if flags else ""), "; ".join("%s: median %.2f us of [%s] (%s)%s" % (
            var or "(heuristic)", med[var], ", ".join("%.2f" % u for u, _ in x), x[0][1],
            "" if var == first else ", %s / this %.3f" % (first or "(heuristic)", med[first] / med[var]))
            for var, x in v.items()))


if __name__ == "__main__":
    main(*sys.argv[1:3])
