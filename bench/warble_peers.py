#!/usr/bin/env python3
"""warble beside PyTorch/cuBLAS, timed the same way in one process (BENCH.md method).

warble is called through ctypes (build/libwarble.so); every GEMM goes through torch_peers.time_calls:
R distinct weight sets (> 4x L2) cycled inside one CUDA graph, median of 15 replays.

Usage: python3 bench/warble_peers.py [--lib build/libwarble.so] [--shapes 8192x8192,...] [--m 1,16,...]
                                     [--spec w4a16] [--load auto,tma:32] [--rounds 3] [--out FILE] [--no-torch]

With --rounds R the whole run repeats R times (each record has its "round"), so every warble kernel and
its torch peer are timed in turn, R times over: an H100 at its 700 W cap changes its clock within a
call, and the spread over rounds shows it. bench/peers_summary.py takes the median per point.
"""
import argparse
import ctypes as C
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peers as tp  # noqa: E402


class HostWeights(C.Structure):
    _fields_ = [("w", C.c_void_p), ("w_scale", C.c_void_p), ("w_zero", C.c_void_p),
                ("w_global", C.c_void_p), ("bias", C.c_void_p)]


class Packed(C.Structure):  # wb_packed
    _fields_ = [("w", C.c_void_p), ("w_bytes", C.c_size_t), ("scale", C.c_void_p), ("scale_bytes", C.c_size_t),
                ("chan", C.c_void_p), ("chan_bytes", C.c_size_t)]


class Config(C.Structure):  # wb_config, every field (wb_layer_last_kernel writes them all)
    _fields_ = [(n, C.c_int) for n in ("m_tiles", "warps_n", "warps_k", "stages", "load", "mma",
                                       "batch_invariant", "k_slices", "persistent", "cluster",
                                       "split_k", "gemv")]


LOADS = {"auto": 0, "cp.async": 2, "tma": 3, "tma-persistent": 3, "tma-cluster": 3, "tma-quad": 3}  # WB_LOAD_*; a forced load goes with WB_MMA_WGMMA (2)


def load_lib(path):
    lib = C.CDLL(path)
    lib.wb_last_error.restype = C.c_char_p
    lib.wb_gpu_create.argtypes = [C.c_int, C.POINTER(C.c_void_p)]
    lib.wb_format_parse.argtypes = [C.c_char_p, C.c_void_p]
    lib.wb_gpu_arch.argtypes = [C.c_void_p]
    lib.wb_pack_weights.argtypes = [C.c_void_p, C.c_int, C.c_int64, C.c_int64, C.POINTER(HostWeights),
                                    C.POINTER(Packed)]
    lib.wb_packed_free.argtypes = [C.POINTER(Packed)]
    lib.wb_layer_create_packed.argtypes = [C.c_void_p, C.c_void_p, C.c_int, C.c_int64, C.c_int64,
                                           C.POINTER(Packed), C.POINTER(C.c_void_p)]
    lib.wb_layer_gemm.argtypes = [C.c_void_p, C.c_int64, C.c_uint64, C.c_uint64, C.c_void_p]
    lib.wb_layer_gemm_q.argtypes = [C.c_void_p, C.c_int64, C.c_uint64, C.c_uint64, C.c_uint64, C.c_void_p]
    lib.wb_layer_last_kernel.argtypes = [C.c_void_p, C.POINTER(Config), C.c_char_p]
    lib.wb_config_print.argtypes = [C.POINTER(Config), C.c_char_p, C.c_size_t]
    lib.wb_layer_destroy.argtypes = [C.c_void_p]
    lib.wb_layer_set_config.argtypes = [C.c_void_p, C.POINTER(Config)]
    lib.wb_format_print.argtypes = [C.c_void_p, C.c_char_p, C.c_size_t]
    lib.wb_type_parse.argtypes = [C.c_char_p, C.c_void_p]
    return lib


def check(lib, status, what):
    if status != 0:
        raise RuntimeError("%s: %s" % (what, lib.wb_last_error().decode()))


class WbType(C.Structure):
    _fields_ = [("kind", C.c_int), ("bits", C.c_int), ("ebits", C.c_int), ("mbits", C.c_int)]


def canonical(lib, spec):
    fmt = C.create_string_buffer(256)
    check(lib, lib.wb_format_parse(spec.encode(), fmt), "wb_format_parse")
    text = C.create_string_buffer(512)
    lib.wb_format_print(fmt, text, 512)
    return fmt, dict(kv.split("=") for kv in text.value.decode().split(","))


def type_of(lib, name):
    t = WbType()
    if lib.wb_type_parse(name.encode(), C.byref(t)) != 0:
        raise RuntimeError("bad type " + name)
    return t


def finite_codes(lib, t):
    lib.wb_type_decode.restype = C.c_double
    lib.wb_type_decode.argtypes = [WbType, C.c_uint32]
    vals = [lib.wb_type_decode(t, c) for c in range(1 << t.bits)]
    return torch.tensor([c for c, v in enumerate(vals) if math.isfinite(v)], dtype=torch.uint8)


def scale_array(lib, t, shape):
    lib.wb_type_encode.restype = C.c_uint32
    lib.wb_type_encode.argtypes = [WbType, C.c_double]
    lib.wb_type_file_bytes.argtypes = [WbType]
    nbytes = lib.wb_type_file_bytes(t)
    vals = torch.rand(*shape, dtype=torch.float64) * 0.02 + 0.01
    if nbytes == 2 or nbytes == 4:
        dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[canon_name(t)]
        return vals.to(dt).view(torch.int16 if nbytes == 2 else torch.int32).numpy()
    out = torch.empty(shape, dtype=torch.uint8)
    flat = out.view(-1)
    for i, v in enumerate(vals.view(-1).tolist()):
        flat[i] = lib.wb_type_encode(t, v)
    return out.numpy()


def canon_name(t):
    return {4: "f16", 5: "bf16", 6: "f32"}.get(t.kind, "?")  # wb_kind values


def make_layers(lib, gpu, fmt, spec_keys, n, k, count):
    w, ws = type_of(lib, spec_keys["w"]), type_of(lib, spec_keys["ws"])
    g, gn = int(spec_keys["g"]), int(spec_keys["gn"])
    codes_ok = finite_codes(lib, w)
    sshape = (n // gn, k // g) if g else (n, 1)
    scales = scale_array(lib, ws, sshape)  # one scale set, reused: its bytes are small
    gl = (C.c_float * 1)(1.0)
    # one random code set, packed once and uploaded into each layer's own buffers: the sets exist to
    # rotate the weights past L2, and a GEMM's time does not depend on the values (drawing n x k codes
    # per set took most of a formats step's time limit, and packing per set most of the rest)
    codes = codes_ok[torch.randint(0, len(codes_ok), (n, k))].numpy()
    zero = None
    if spec_keys["zp"] == "int":
        zero = torch.randint(0, 1 << w.bits, sshape, dtype=torch.uint8).numpy()
    hw = HostWeights(codes.ctypes.data, scales.ctypes.data, zero.ctypes.data if zero is not None else None,
                     C.cast(gl, C.c_void_p) if spec_keys["wgs"] == "1" else None, None)
    arch, packed, layers = lib.wb_gpu_arch(gpu), Packed(), []
    check(lib, lib.wb_pack_weights(fmt, arch, n, k, C.byref(hw), C.byref(packed)), "wb_pack_weights")
    try:
        for _ in range(count):
            layer = C.c_void_p()
            check(lib, lib.wb_layer_create_packed(gpu, fmt, arch, n, k, C.byref(packed), C.byref(layer)),
                  "wb_layer_create_packed")
            layers.append(layer)
    finally:
        lib.wb_packed_free(C.byref(packed))
    return layers


def weight_bytes(lib, keys, n, k):
    w, ws = type_of(lib, keys["w"]), type_of(lib, keys["ws"])
    g, gn = int(keys["g"]), int(keys["gn"])
    nscales = (n // gn) * (k // g) if g else n
    nz = nscales if keys["zp"] != "none" else 0
    return n * k * w.bits // 8 + (nscales + nz) * lib.wb_type_file_bytes(ws)


def bench_warble(lib, gpu, spec, n, k, ms, variants):
    fmt, keys = canonical(lib, spec)
    wbytes = weight_bytes(lib, keys, n, k)
    count = tp.n_sets_for(wbytes)
    layers = make_layers(lib, gpu, fmt, keys, n, k, count)
    # W8A8: s8 or fp8 codes and one f32 scale per token, through wb_layer_gemm_q
    fp8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}.get(keys["a"])
    s8 = keys["a"] == "s8" or fp8 is not None
    dt = torch.float16 if keys["a"] == "f16" else torch.bfloat16
    ot = torch.float16 if keys["out"] == "f16" else torch.bfloat16
    for m in ms:
        if fp8 is not None:
            a = torch.randn(m, k, device="cuda").to(fp8)
            a_scale = torch.rand(m, dtype=torch.float32, device="cuda") / 64
        elif s8:
            a = torch.randint(-127, 128, (m, k), dtype=torch.int8, device="cuda")
            a_scale = torch.rand(m, dtype=torch.float32, device="cuda") / 64
        else:
            a = torch.randn(m, k, dtype=dt, device="cuda")
        out = torch.empty(m, n, dtype=ot, device="cuda")

        def call(layer):
            def run():
                s = C.c_void_p(torch.cuda.current_stream().cuda_stream)
                if s8:
                    st = lib.wb_layer_gemm_q(layer, m, a.data_ptr(), a_scale.data_ptr(), out.data_ptr(), s)
                else:
                    st = lib.wb_layer_gemm(layer, m, a.data_ptr(), out.data_ptr(), s)
                check(lib, st, "gemm")
            return run

        for variant, (load, m_tiles) in variants:
            # a forced load: the wgmma kernel with this load path at every M; auto: the heuristic's
            forced = None if load == "auto" else C.byref(Config(
                load=LOADS[load], mma=2, persistent=int(load == "tma-persistent"),
                cluster={"tma-cluster": 2, "tma-quad": 4}.get(load, 0), m_tiles=m_tiles))
            for layer in layers:
                check(lib, lib.wb_layer_set_config(layer, forced), "wb_layer_set_config")
            res = tp.time_calls([call(l) for l in layers])
            cfg = Config()
            sha = C.create_string_buffer(65)
            lib.wb_layer_last_kernel(layers[0], C.byref(cfg), sha)
            cbuf = C.create_string_buffer(128)
            lib.wb_config_print(C.byref(cfg), cbuf, 128)
            nbytes = wbytes + (m * k + m * 4 if s8 else m * k * 2) + m * n * 2
            tp.record("warble", spec, n, k, m, nbytes, res, config=cbuf.value.decode(), variant=variant)
    for l in layers:
        lib.wb_layer_destroy(l)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="build/libwarble.so")
    ap.add_argument("--shapes", default="8192x8192,28672x4096,4096x14336,6144x4096")
    ap.add_argument("--m", default="1,16,64,256,1024,4096,16384")
    ap.add_argument("--spec", default="w4a16", help="one spec, or several separated by ';'")
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--copy-ceiling", action="store_true")
    ap.add_argument("--load", default="auto",
                    help="force the wgmma kernel with this load path (tma: the warp-specialized pipeline; "
                         "tma-persistent: the same with one block per SM walking the tiles; tma-cluster: in clusters of two "
                         "blocks sharing the activation tile; tma-quad: in clusters of four sharing activation and "
                         "weight tiles; auto: the heuristic's kernel), optionally with ':M_TILES'; several, separated "
                         "by ',', are timed in turn on the same weights (e.g. auto,tma:32)")
    ap.add_argument("--m-tiles", type=int, default=0,
                    help="with a forced load without ':M_TILES': the token tile in m-tiles of 8 (24: 192 tokens), "
                         "else the heuristic's")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat the whole run this many times (records carry their round)")
    ap.add_argument("--peer", default="f16", choices=["f16", "int8", "fp8"],
                    help="the torch baseline: torch.matmul f16, torch._int_mm (for int8 W8A8 specs), or "
                         "torch._scaled_mm e4m3 with f32 scales per token (M, 1) and per channel (1, N), "
                         "bf16 output (for fp8 W8A8 specs)")
    args = ap.parse_args()
    tp.OUT_FILE = args.out
    torch.cuda.init()
    lib = load_lib(args.lib)
    gpu = C.c_void_p()
    check(lib, lib.wb_gpu_create(0, C.byref(gpu)), "wb_gpu_create")
    tp.emit(tp.env_info())
    if args.copy_ceiling:
        tp.ceiling_copy()
    ms = [int(x) for x in args.m.split(",")]
    variants = []
    for v in args.load.split(","):
        load, _, mt = v.partition(":")
        if load not in LOADS:
            ap.error("--load: %r is not one of %s" % (load, ", ".join(sorted(LOADS))))
        variants.append((v, (load, int(mt) if mt else args.m_tiles)))
    for rnd in range(args.rounds):
        if args.rounds > 1:
            tp.TAGS["round"] = rnd
        for shape in args.shapes.split(","):
            n, k = (int(x) for x in shape.split("x"))
            for spec in args.spec.split(";"):
                bench_warble(lib, gpu, spec, n, k, ms, variants)
            if not args.no_torch:
                if args.peer == "int8":
                    tp.safe(tp.bench_int8, n, k, ms)
                elif args.peer == "fp8":
                    # row-major N x K e4m3 weights passed as w.t() (column-major, as _scaled_mm wants)
                    tp.safe(tp.bench_fp8, n, k, ms)
                else:
                    tp.safe(tp.bench_w16, torch.float16, n, k, ms)


if __name__ == "__main__":
    main()
