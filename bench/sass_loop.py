#!/usr/bin/env python3
"""Count the SASS instructions of a kernel's K loop, by opcode class.

usage: sass_loop.py SPEC --arch ARCH [warble ptx options...]
Emits the PTX with `warble ptx --plain`, assembles it with ptxas and disassembles it with
cuobjdump ($CUOBJDUMP, default: on PATH; Triton's wheel carries one). The K loop is the
backward branch whose body holds the MMAs. Prints the body's length and its opcodes."""
import collections, os, re, subprocess, sys, tempfile

def main():
    args = sys.argv[1:]
    arch = args[args.index("--arch") + 1]
    warble = os.environ.get("WARBLE", "build/warble")
    ptx = subprocess.run([warble, "ptx", *args, "--plain"], check=True, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/k.ptx", "w").write(ptx)
        subprocess.run(["ptxas", f"-arch={arch}", "-O3", f"{d}/k.ptx", "-o", f"{d}/k.cubin"], check=True)
        sass = subprocess.run([os.environ.get("CUOBJDUMP", "cuobjdump"), "--dump-sass", f"{d}/k.cubin"],
                              check=True, capture_output=True, text=True).stdout
    insns = []  # (address, text)
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2).strip()))
    best = None
    for i, (addr, text) in enumerate(insns):
        b = re.search(r"BRA\s+0x([0-9a-f]+)", text)
        if b and int(b.group(1), 16) < addr:
            body = [t for a, t in insns if int(b.group(1), 16) <= a <= addr]
            if any("MMA" in t for t in body) and (best is None or len(body) > len(best)):
                best = body
    if best is None:
        sys.exit("no K loop with an MMA found")
    ops = collections.Counter(re.sub(r"^@!?U?P[T0-9]+\s+", "", t).split()[0].split(".")[0] for t in best)
    print(f"K loop: {len(best)} SASS instructions")
    for op, n in ops.most_common():
        print(f"  {n:4d} {op}")

main()
