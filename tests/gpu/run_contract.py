#!/usr/bin/env python3
"""End-to-end check of `warble run` against an independent float64 numpy reference.

For each spec and shape: fresh random data is written as the raw little-endian interchange files of
CONTRACT section 3, `warble run` computes the GEMM on the GPU, and --out is compared with the float64
evaluation of the formulas of CONTRACT section 2, written here from the contract alone (no warble code
is used for the reference):

    out = A @ W.T + bias,   A(m,k) = val_a(a),   W(n,k) = (val_w(w) - zero) * scale[n][k // g]

Pass: relative Frobenius error <= 1e-3 when neither activation nor output is bf16, <= 8e-3 when one is,
and no NaN/inf in the output.

    python3 tests/gpu/run_contract.py [--warble build/warble] [--seed S] [--keep DIR]
    python3 tests/gpu/run_contract.py --self-check     # reference vs a naive loop; no GPU or warble

Prints one line per case and `run-contract: N passed, M failed`; exits 1 on any failure.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

# (spec as given to warble, the keys its canonical form must have)
SPECS = [
    ("w4a16", dict(a="f16", w="int4", ws="f16", g="128", zp="none", out="f16", bias="0")),
    ("w4a16-zp,a=bf16,ws=bf16,bias=1",
     dict(a="bf16", w="uint4", ws="bf16", g="128", zp="int", out="bf16", bias="1")),
    ("a=f16,w=int4,ws=f16,g=0,bias=1",
     dict(a="f16", w="int4", ws="f16", g="0", zp="none", out="f16", bias="1")),
    ("a=f16,w=uint4,ws=bf16,g=64", dict(a="f16", w="uint4", ws="bf16", g="64", zp="none", out="f16", bias="0")),
]
SHAPES = [(1, 256, 512), (37, 512, 1024), (300, 1024, 2048)]
# Keys this script implements; any other canonical key must have its no-op default.
NEUTRAL = dict(ag="0", as_="f32", ags="0", gn="1", wgs="0", acc="f32")


# --- 16-bit float types, by bits -------------------------------------------------------------------

def f32_to_bf16_bits(x):
    """float32 -> bf16 bits, round to nearest even (finite inputs)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = u + 0x7FFF + ((u >> 16) & 1)
    return (u >> 16).astype(np.uint16)


def bf16_bits_to_f64(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def to_bits(x, t):
    """float array -> uint16 bits of type t (f16 or bf16), round to nearest even."""
    if t == "f16":
        return np.asarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)
    if t == "bf16":
        return f32_to_bf16_bits(x)
    raise ValueError(t)


def bits_to_f64(b, t):
    if t == "f16":
        return np.asarray(b, dtype=np.uint16).view(np.float16).astype(np.float64)
    if t == "bf16":
        return bf16_bits_to_f64(b)
    raise ValueError(t)


def code_value(codes, w):
    """4-bit weight code (0..15) -> its value: int4 two's complement, uint4 plain."""
    c = np.asarray(codes, dtype=np.int64)
    if w == "int4":
        return np.where(c >= 8, c - 16, c).astype(np.float64)
    if w == "uint4":
        return c.astype(np.float64)
    raise ValueError(w)


# --- data and reference ----------------------------------------------------------------------------

def scale_cols(k, g):
    return 1 if g == 0 else k // g


def make_data(rng, f, m, n, k):
    """Fresh random inputs as the arrays written to the interchange files (bits / codes)."""
    g = int(f["g"])
    d = {}
    d["a"] = to_bits(rng.uniform(-1.0, 1.0, size=(m, k)).astype(np.float32), f["a"])
    d["w"] = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
    mag = rng.uniform(0.01, 0.05, size=(n, scale_cols(k, g)))
    sign = np.where(rng.random(size=mag.shape) < 0.5, -1.0, 1.0)
    d["w_scale"] = to_bits((mag * sign).astype(np.float32), f["ws"])
    if f["zp"] == "int":
        d["w_zero"] = rng.integers(0, 16, size=(n, scale_cols(k, g)), dtype=np.uint8)
    if f["bias"] == "1":
        d["bias"] = to_bits(rng.uniform(-1.0, 1.0, size=n).astype(np.float32), f["out"])
    return d


def reference(f, d, m, n, k):
    """float64 out = A @ W.T + bias, vectorized."""
    g = int(f["g"])
    A = bits_to_f64(d["a"], f["a"])
    v = code_value(d["w"], f["w"])
    s = bits_to_f64(d["w_scale"], f["ws"])
    z = d["w_zero"].astype(np.float64) if f["zp"] == "int" else np.zeros_like(s)
    if g:
        s = np.repeat(s, g, axis=1)
        z = np.repeat(z, g, axis=1)
    W = (v - z) * s  # (n,1) broadcasts over k when g=0
    out = A @ W.T
    if f["bias"] == "1":
        out = out + bits_to_f64(d["bias"], f["out"])[None, :]
    return out


def naive_reference(f, d, m, n, k):
    """The same formulas one element at a time in plain Python scalars (struct for decoding)."""
    g = int(f["g"])

    def half(bits, t):
        bits = int(bits)
        if t == "f16":
            return struct.unpack("<e", struct.pack("<H", bits))[0]
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]

    def wval(code):
        code = int(code)
        if f["w"] == "int4":
            return code - 16 if code & 8 else code
        return code

    out = [[0.0] * n for _ in range(m)]
    for i in range(m):
        for j in range(n):
            acc = 0.0
            for kk in range(k):
                grp = 0 if g == 0 else kk // g
                zero = int(d["w_zero"][j][grp]) if f["zp"] == "int" else 0
                wv = (wval(d["w"][j][kk]) - zero) * half(d["w_scale"][j][grp], f["ws"])
                acc += half(d["a"][i][kk], f["a"]) * wv
            if f["bias"] == "1":
                acc += half(d["bias"][j], f["out"])
            out[i][j] = acc
    return np.array(out, dtype=np.float64)


def tolerance(f):
    return 8e-3 if "bf16" in (f["a"], f["out"]) else 1e-3


# --- warble ----------------------------------------------------------------------------------------

def canonical(warble, spec):
    """Canonical spec from `warble format`, as a dict ('as' stored as 'as_')."""
    r = subprocess.run([warble, "format", spec], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("warble format exit %d: %s" % (r.returncode, (r.stderr or r.stdout).strip()))
    f = {}
    for kv in r.stdout.strip().split(","):
        key, _, val = kv.partition("=")
        f["as_" if key == "as" else key] = val
    return r.stdout.strip(), f


def write_files(tmp, d):
    paths = {}
    for name, arr in d.items():
        p = os.path.join(tmp, name + ".bin")
        # uint8 codes or uint16 bits; force little-endian on any host
        arr.astype(arr.dtype.newbyteorder("<"), copy=False).tofile(p)
        paths[name] = p
    return paths


def run_case(warble, spec, f, m, n, k, rng, tmp):
    d = make_data(rng, f, m, n, k)
    p = write_files(tmp, d)
    outp = os.path.join(tmp, "out.bin")
    if os.path.exists(outp):
        os.unlink(outp)
    cmd = [warble, "run", spec, "--m", str(m), "--n", str(n), "--k", str(k),
           "--a", p["a"], "--w", p["w"], "--w-scale", p["w_scale"]]
    if "w_zero" in p:
        cmd += ["--w-zero", p["w_zero"]]
    if "bias" in p:
        cmd += ["--bias", p["bias"]]
    cmd += ["--out", outp]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return False, "warble run timed out"
    if r.returncode != 0:
        msg = (r.stderr.strip() or r.stdout.strip() or "(no message)").splitlines()[-1]
        return False, "warble run exit %d: %s" % (r.returncode, msg)
    if not os.path.exists(outp):
        return False, "warble run exit 0 but wrote no --out"
    raw = np.fromfile(outp, dtype="<u2")
    if raw.size * 2 != os.path.getsize(outp) or raw.size != m * n:
        return False, "--out has %d bytes, expected %d" % (os.path.getsize(outp), m * n * 2)
    got = bits_to_f64(raw.reshape(m, n), f["out"])
    ref = reference(f, d, m, n, k)
    bad = int(np.count_nonzero(~np.isfinite(got)))
    if bad:
        return False, "%d NaN/inf in output (reference finite: %s)" % (bad, bool(np.isfinite(ref).all()))
    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    tol = tolerance(f)
    detail = "rel_err=%.3e tol=%.0e max_abs=%.3e" % (err, tol, float(np.abs(got - ref).max()))
    return err <= tol, detail


# --- self-check (no GPU, no warble) ----------------------------------------------------------------

def self_check(seed):
    fails = passes = 0

    def check(ok, what):
        nonlocal fails, passes
        print("%s self-check: %s" % ("PASS" if ok else "FAIL", what))
        fails += 0 if ok else 1
        passes += 1 if ok else 0

    # bf16 rounding from float32 bits: ties to even, above-tie up, below-tie down, sign, carry
    vec = [(0x3F800000, 0x3F80), (0x3F808000, 0x3F80), (0x3F818000, 0x3F82), (0x3F808001, 0x3F81),
           (0x3F807FFF, 0x3F80), (0xBF808001, 0xBF81), (0x3FFFFFFF, 0x4000), (0x00000000, 0x0000)]
    x = np.array([v for v, _ in vec], dtype=np.uint32).view(np.float32)
    got = f32_to_bf16_bits(x)
    check(all(int(gv) == want for gv, (_, want) in zip(got, vec)), "bf16 round-to-nearest-even vectors")
    # bf16 round trip: every finite bf16 value is exact
    allb = np.arange(0, 0x10000, dtype=np.uint32).astype(np.uint16)
    fin = allb[(allb & 0x7F80) != 0x7F80]
    check(np.array_equal(f32_to_bf16_bits(bf16_bits_to_f64(fin).astype(np.float32)), fin), "bf16 round trip")
    # rounding error of bf16 quantization is at most half an ulp (2^-9 relative)
    rng = np.random.default_rng(seed)
    u = rng.uniform(-1, 1, 100000).astype(np.float32)
    rel = np.abs(bf16_bits_to_f64(f32_to_bf16_bits(u)) - u) / np.abs(u)
    check(float(rel.max()) <= 2.0 ** -8, "bf16 quantization error <= half an ulp (max %.3e)" % rel.max())
    try:
        import ml_dtypes  # an outside implementation, where installed (the GPU image has it)
        want = u.astype(ml_dtypes.bfloat16).view(np.uint16)
        check(np.array_equal(f32_to_bf16_bits(u), want), "bf16 rounding == ml_dtypes")
    except ImportError:
        print("SKIP self-check: bf16 rounding vs ml_dtypes (not installed)")
    # int4 two's complement nibble
    check(list(code_value(np.arange(16), "int4")) == [0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1],
          "int4 code values")
    # vectorized reference vs naive loop, every spec's format with several group sizes
    for spec, f in SPECS:
        for g in ([int(f["g"])] if f["g"] == "0" else [0, 4, 8]):
            ff = dict(f, g=str(g))
            for (m, n, k) in [(3, 5, 8), (1, 2, 16), (4, 3, 24)]:
                d = make_data(rng, ff, m, n, k)
                a = reference(ff, d, m, n, k)
                b = naive_reference(ff, d, m, n, k)
                ok = a.shape == (m, n) and np.allclose(a, b, rtol=1e-12, atol=1e-12)
                check(ok, "reference == naive loop: %s g=%d m=%d n=%d k=%d (max diff %.1e)"
                      % (spec, g, m, n, k, float(np.abs(a - b).max())))
    # data generation: ranges and sizes of the interchange arrays (CONTRACT section 3)
    for spec, f in SPECS:
        m, n, k = 37, 512, 1024
        d = make_data(rng, f, m, n, k)
        g = int(f["g"])
        sc = (n, scale_cols(k, g))
        sizes = {"a": m * k * 2, "w": n * k, "w_scale": sc[0] * sc[1] * 2}
        if f["zp"] == "int":
            sizes["w_zero"] = sc[0] * sc[1]
        if f["bias"] == "1":
            sizes["bias"] = n * 2
        ok = {nm: arr.nbytes for nm, arr in d.items()} == sizes
        ok &= int(d["w"].max()) <= 15 and ("w_zero" not in d or int(d["w_zero"].max()) <= 15)
        s = np.abs(bits_to_f64(d["w_scale"], f["ws"]))
        ok &= bool((s >= 0.0099).all() and (s <= 0.0501).all())
        av = bits_to_f64(d["a"], f["a"])
        ok &= bool((np.abs(av) <= 1.0).all())
        check(ok, "data shapes/ranges: %s" % spec)
    print("run-contract self-check: %d passed, %d failed" % (passes, fails))
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warble", default="build/warble", help="the warble CLI (default build/warble)")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--keep", help="write the interchange files of each case under this folder")
    ap.add_argument("--self-check", action="store_true",
                    help="check the numpy reference against a naive loop (no GPU or warble needed)")
    args = ap.parse_args()
    if args.self_check:
        return self_check(args.seed)

    rng = np.random.default_rng(args.seed)
    passed = failed = 0
    for spec, want in SPECS:
        try:
            canon, f = canonical(args.warble, spec)
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            for (m, n, k) in SHAPES:
                print("FAIL %-34s m=%-4d n=%-5d k=%-5d %s" % (spec, m, n, k, e))
                failed += 1
            continue
        wrong = {kk: (f.get(kk), v) for kk, v in list(want.items()) + list(NEUTRAL.items())
                 if f.get(kk) != v}
        for (m, n, k) in SHAPES:
            if wrong:
                ok, detail = False, "canonical form %s: unexpected %s" % (canon, wrong)
            else:
                if args.keep:
                    tmp = os.path.join(args.keep, "%s_%dx%dx%d" % (spec.replace(",", "_").replace("=", ""),
                                                                     m, n, k))
                    os.makedirs(tmp, exist_ok=True)
                    ok, detail = run_case(args.warble, spec, f, m, n, k, rng, tmp)
                else:
                    with tempfile.TemporaryDirectory(prefix="run_contract_") as tmp:
                        ok, detail = run_case(args.warble, spec, f, m, n, k, rng, tmp)
            print("%s %-34s m=%-4d n=%-5d k=%-5d %s" % ("PASS" if ok else "FAIL", spec, m, n, k, detail),
                  flush=True)
            passed += ok
            failed += not ok
    print("run-contract: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
