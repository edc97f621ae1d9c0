#!/usr/bin/env python3
"""Where a kernel's warps wait, per SASS instruction: reads the CSV that `ncu --import R --page source
--print-source sass --csv` writes (bench/ncu_large.sh: *.source.csv) and prints the instructions
with the most sampled stalls, then the samples summed per opcode.

    python3 bench/ncu_source.py FILE.source.csv [--top N]
"""
import argparse
import collections
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    with open(args.csv, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages are not quoted
    # a preamble ("Kernel Name","wb_gemm",) comes before the header row, which names the Address column
    head = next((i for i, line in enumerate(lines) if line.startswith('"Address"')), 0)
    lines = lines[head:]
    rows = list(csv.DictReader(lines))
    if not rows:
        sys.exit(f"{args.csv}: no rows (is it ncu's source page as CSV?)")
    cols = list(rows[0])
    source = next((c for c in cols if c.strip().lower() == "source"), None)
    samples = next((c for c in cols if "sampling" in c.lower() and "all" in c.lower()), None)
    samples = samples or next((c for c in cols if "sampling" in c.lower()), None)
    if not source or not samples:
        sys.exit(f"{args.csv}: no Source or stall-sampling column among {cols}")
    total = sum(number(r[samples]) for r in rows) or 1.0
    print(f"{len(rows)} instructions, {total:.0f} samples ({samples})")
    for r in sorted(rows, key=lambda r: -number(r[samples]))[: args.top]:
        addr = r.get("Address", "")
        print(f"{100 * number(r[samples]) / total:6.2f}%  {addr:>8}  {r[source].strip()}")
    per_op = collections.Counter()
    for r in rows:
        op = r[source].split()[0] if r[source].split() else "?"
        if op.startswith("@"):  # a predicate guard: the opcode follows
            op = r[source].split()[1] if len(r[source].split()) > 1 else op
        per_op[op.split(".")[0]] += number(r[samples])
    print("\nper opcode:")
    for op, n in per_op.most_common(20):
        print(f"{100 * n / total:6.2f}%  {op}")


if __name__ == "__main__":
    main()
