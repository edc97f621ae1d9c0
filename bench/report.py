#!/usr/bin/env python3
"""Turn warble_peers.py JSON lines into a markdown table: warble vs torch f16 per shape and M,
with effective TB/s and the fraction of the copy ceiling measured in the same run."""
import json
import sys


def main(path):
    rows = [r for r in (json.loads(l) for l in open(path) if l.strip()) if isinstance(r, dict)]
    copy = next((r["tbps"] for r in rows if r.get("fmt") == "d2d_copy"), None)
    env = next((r for r in rows if r.get("env")), {})
    print("GPU: %s, driver %s, torch %s; copy ceiling %s TB/s" % (
        env.get("device", "?"), env.get("driver", "?"), env.get("torch", "?"),
        "%.2f" % copy if copy else "?"))
    print()
    print("| N x K | M | warble us | warble TB/s | of copy | TFLOP/s | torch f16 us | torch / warble | config |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    by = {}
    for r in rows:
        if "us" in r and "N" in r:
            by[(r["peer"], r["N"], r["K"], r["M"])] = r
    for (peer, n, k, m), r in sorted(by.items(), key=lambda x: (x[0][1], x[0][2], x[0][3])):
        if peer != "warble":
            continue
        t = by.get(("torch", n, k, m))
        print("| %dx%d | %d | %.1f | %.2f | %s | %.0f | %s | %s | %s |" % (
            n, k, m, r["us"], r["tbps"], "%.0f%%" % (100 * r["tbps"] / copy) if copy else "?",
            r["tflops"], "%.1f" % t["us"] if t else "-", "%.2f" % (t["us"] / r["us"]) if t else "-",
            r.get("config", "")))


if __name__ == "__main__":
    main(sys.argv[1])
