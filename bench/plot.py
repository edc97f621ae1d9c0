#!/usr/bin/env python3
"""Plots of warble_peers.py JSON lines: time and effective TB/s against M per layer shape, warble and
torch f16 side by side, the copy ceiling as a line. Usage: python3 bench/plot.py RESULTS.jsonl OUTDIR"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path, outdir):
    rows = [r for r in (json.loads(l) for l in open(path) if l.strip()) if isinstance(r, dict)]
    copy = next((r["tbps"] for r in rows if r.get("fmt") == "d2d_copy"), None)
    gpu = next((r["device"] for r in rows if r.get("env")), "GPU unknown")
    shapes = sorted({(r["N"], r["K"]) for r in rows if "N" in r and "us" in r})
    os.makedirs(outdir, exist_ok=True)
    for n, k in shapes:
        fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(11, 4))
        for peer, fmt, style in (("warble", None, "o-"), ("torch", "w16a16_fp16", "s--")):
            pts = sorted((r["M"], r["us"], r["tbps"]) for r in rows
                         if r.get("peer") == peer and r.get("N") == n and r.get("K") == k and "us" in r
                         and (fmt is None or r.get("fmt") == fmt))
            if not pts:
                continue
            label = "torch f16 (cuBLAS)"
            if peer == "warble":
                label = "warble " + next(r["fmt"] for r in rows if r.get("peer") == peer and r.get("N") == n)
            ax_t.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
            ax_b.plot([p[0] for p in pts], [p[2] for p in pts], style, label=label)
        if copy:
            ax_b.axhline(copy, color="gray", linestyle=":", label="copy ceiling %.2f TB/s" % copy)
        for ax, ylabel in ((ax_t, "time per GEMM (us)"), (ax_b, "effective TB/s")):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("M (tokens)")
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        ax_t.set_yscale("log")
        fig.suptitle("%d x %d, %s (same process, CUDA graph replays)" % (n, k, gpu))
        fig.tight_layout()
        out = os.path.join(outdir, "w4a16-%dx%d.png" % (n, k))
        fig.savefig(out, dpi=90)
        plt.close(fig)
        print(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
