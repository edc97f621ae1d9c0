#!/usr/bin/env python3
"""warble beside PyTorch/cuBLAS, timed the same way in one process (BENCH.md method).

warble is called through ctypes (build/libwarble.so); every GEMM goes through torch_peers.time_calls:
R distinct weight sets (> 4x L2) cycled inside one CUDA graph, median of 15 replays.

Usage: python3 bench/warble_peers.py [--lib build/libwarble.so] [--shapes 8192x8192,...] [--m 1,16,...]
                                     [--spec w4a16] [--out FILE] [--no-torch]
"""
import argparse
import ctypes as C
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peers as tp  # noqa: E402


class HostWeights(C.Structure):
    _fields_ = [("w", C.c_void_p), ("w_scale", C.c_void_p), ("w_zero", C.c_void_p),
                ("w_global", C.c_void_p), ("bias", C.c_void_p)]


class Config(C.Structure):
    _fields_ = [(n, C.c_int) for n in ("m_tiles", "warps_n", "warps_k", "stages", "load", "mma")]


def load_lib(path):
    lib = C.CDLL(path)
    lib.wb_last_error.restype = C.c_char_p
    lib.wb_gpu_create.argtypes = [C.c_int, C.POINTER(C.c_void_p)]
    lib.wb_format_parse.argtypes = [C.c_char_p, C.c_void_p]
    lib.wb_layer_create.argtypes = [C.c_void_p, C.c_void_p, C.c_int64, C.c_int64,
                                    C.POINTER(HostWeights), C.POINTER(C.c_void_p)]
    lib.wb_layer_gemm.argtypes = [C.c_void_p, C.c_int64, C.c_uint64, C.c_uint64, C.c_void_p]
    lib.wb_layer_last_kernel.argtypes = [C.c_void_p, C.POINTER(Config), C.c_char_p]
    lib.wb_config_print.argtypes = [C.POINTER(Config), C.c_char_p, C.c_size_t]
    lib.wb_layer_destroy.argtypes = [C.c_void_p]
    return lib


def check(lib, status, what):
    if status != 0:
        raise RuntimeError("%s: %s" % (what, lib.wb_last_error().decode()))


def make_layers(lib, gpu, fmt, n, k, group, count):
    layers = []
    for _ in range(count):
        codes = torch.randint(0, 16, (n, k), dtype=torch.uint8).numpy()
        scales = (torch.rand(n, max(1, k // group) if group else 1) * 0.02 + 0.01).half().numpy()
        hw = HostWeights(codes.ctypes.data, scales.ctypes.data, None, None, None)
        layer = C.c_void_p()
        check(lib, lib.wb_layer_create(gpu, fmt, n, k, C.byref(hw), C.byref(layer)), "wb_layer_create")
        layers.append(layer)
    return layers


def bench_warble(lib, gpu, spec, group, n, k, ms, wbytes):
    fmt = C.create_string_buffer(256)
    check(lib, lib.wb_format_parse(spec.encode(), fmt), "wb_format_parse")
    count = tp.n_sets_for(wbytes)
    layers = make_layers(lib, gpu, fmt, n, k, group, count)
    for m in ms:
        a = torch.randn(m, k, dtype=torch.float16, device="cuda")
        out = torch.empty(m, n, dtype=torch.float16, device="cuda")

        def call(layer):
            def run():
                s = torch.cuda.current_stream().cuda_stream
                check(lib, lib.wb_layer_gemm(layer, m, a.data_ptr(), out.data_ptr(), C.c_void_p(s)), "gemm")
            return run

        res = tp.time_calls([call(l) for l in layers])
        cfg = Config()
        sha = C.create_string_buffer(65)
        lib.wb_layer_last_kernel(layers[0], C.byref(cfg), sha)
        cbuf = C.create_string_buffer(128)
        lib.wb_config_print(C.byref(cfg), cbuf, 128)
        nbytes = wbytes + m * k * 2 + m * n * 2
        tp.record("warble", spec, n, k, m, nbytes, res, config=cbuf.value.decode())
    for l in layers:
        lib.wb_layer_destroy(l)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="build/libwarble.so")
    ap.add_argument("--shapes", default="8192x8192,28672x4096,4096x14336,6144x4096")
    ap.add_argument("--m", default="1,16,64,256,1024,4096,16384")
    ap.add_argument("--spec", default="w4a16")
    ap.add_argument("--group", type=int, default=128)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--copy-ceiling", action="store_true")
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
    for shape in args.shapes.split(","):
        n, k = (int(x) for x in shape.split("x"))
        groups = k // args.group if args.group else 1
        wbytes = n * k // 2 + n * groups * 2
        bench_warble(lib, gpu, args.spec, args.group, n, k, ms, wbytes)
        if not args.no_torch:
            tp.safe(tp.bench_w16, torch.float16, n, k, ms)


if __name__ == "__main__":
    main()
