#!/usr/bin/env python3
"""Turn warble_peers.py JSON lines into markdown: per format, shape and M, warble's time, effective
TB/s, the fraction of the copy ceiling and of the first format's bandwidth (same run), and torch f16
beside it when it was measured."""
import json
import sys


def main(path):
    rows = [r for r in (json.loads(l) for l in open(path) if l.strip()) if isinstance(r, dict)]
    copy = next((r["tbps"] for r in rows if r.get("fmt") == "d2d_copy"), None)
    env = next((r for r in rows if r.get("env")), {})
    print("GPU: %s, torch %s; device-to-device copy ceiling %s TB/s (same run)" % (
        env.get("device", "?"), env.get("torch", "?"), "%.2f" % copy if copy else "?"))
    print()
    print("| format | N x K | M | warble us | TB/s | of copy | of first format | TFLOP/s | torch f16 us | torch / warble | config |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    warble = [r for r in rows if r.get("peer") == "warble" and "us" in r]
    torch = {(r["N"], r["K"], r["M"]): r for r in rows if r.get("fmt") == "w16a16_fp16" and "us" in r}
    first = {}
    for r in warble:
        first.setdefault((r["N"], r["K"], r["M"]), r)
    for r in warble:
        key = (r["N"], r["K"], r["M"])
        t, f0 = torch.get(key), first[key]
        print("| %s | %dx%d | %d | %.1f | %.2f | %s | %.0f%% | %.0f | %s | %s | %s |" % (
            r["fmt"], r["N"], r["K"], r["M"], r["us"], r["tbps"],
            "%.0f%%" % (100 * r["tbps"] / copy) if copy else "?", 100 * r["tbps"] / f0["tbps"], r["tflops"],
            "%.1f" % t["us"] if t else "-", "%.2f" % (t["us"] / r["us"]) if t else "-", r.get("config", "")))


if __name__ == "__main__":
    main(sys.argv[1])
