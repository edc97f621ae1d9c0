#!/usr/bin/env python3
"""Count the SASS instructions of a kernel's K loop, by opcode class.

usage: sass_loop.py SPEC --arch ARCH [warble ptx options...]
Emits the PTX with `warble ptx --plain`, assembles it with ptxas and disassembles it with
cuobjdump ($CUOBJDUMP, default: on PATH; Triton's wheel carries one) or, with $NVDISASM set, with
nvdisasm (the `nvidia-cuda-nvdisasm` wheel carries one), whose branches name labels. The K loop is
the smallest backward branch whose body holds every MMA. Prints the body's length and its opcodes."""
import collections, os, re, subprocess, sys, tempfile

def main():
    args = sys.argv[1:]
    arch = args[args.index("--arch") + 1]
    warble = os.environ.get("WARBLE", "build/warble")
    ptx = subprocess.run([warble, "ptx", *args, "--plain"], check=True, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/k.ptx", "w").write(ptx)
        subprocess.run(["ptxas", f"-arch={arch}", "-O3", f"{d}/k.ptx", "-o", f"{d}/k.cubin"], check=True)
        nvdisasm = os.environ.get("NVDISASM")
        cmd = [nvdisasm, "-c", f"{d}/k.cubin"] if nvdisasm else \
              [os.environ.get("CUOBJDUMP", "cuobjdump"), "--dump-sass", f"{d}/k.cubin"]
        sass = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    insns, labels, pending = [], {}, []  # (address, text); nvdisasm's labels -> the next address
    for line in sass.splitlines():
        lab = re.match(r"\s*(\.L_x_\d+):", line)
        if lab:
            pending.append(lab.group(1))
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            addr = int(m.group(1), 16)
            for name in pending:
                labels[name] = addr
            pending = []
            insns.append((addr, m.group(2).strip()))
    # nvdisasm: BRA `(.L_x_N) -> BRA 0x<address>, as cuobjdump prints it
    insns = [(a, re.sub(r"`\((\.L_x_\d+)\)", lambda x: "0x%x" % labels.get(x.group(1), 0), t)) for a, t in insns]
    best, mmas = None, sum("MMA" in t for _, t in insns)
    for i, (addr, text) in enumerate(insns):
        b = re.search(r"BRA\s+0x([0-9a-f]+)", text)
        if b and int(b.group(1), 16) < addr:
            body = [t for a, t in insns if int(b.group(1), 16) <= a <= addr]
            # the smallest loop holding every MMA of the kernel (a larger one may take the epilogue in)
            if sum("MMA" in t for t in body) == mmas and (best is None or len(body) < len(best)):
                best = body
    if best is None:
        sys.exit("no K loop with an MMA found")
    ops = collections.Counter(re.sub(r"^@!?U?P[T0-9]+\s+", "", t).split()[0].split(".")[0] for t in best)
    print(f"K loop: {len(best)} SASS instructions")
    for op, n in ops.most_common():
        print(f"  {n:4d} {op}")

main()
