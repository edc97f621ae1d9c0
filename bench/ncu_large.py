"""Three launches of torch._scaled_mm (e4m3, per-token x per-channel f32 scales, bf16 out; --fast:
fast accumulation) at M x N x K, for ncu to profile beside warble's kernels (bench/ncu_large.sh)."""
import sys

import torch

M, N, K = (int(v) for v in sys.argv[1:4]) if len(sys.argv) > 3 else (16384, 8192, 8192)
fast = "--fast" in sys.argv
a = (torch.randn(M, K, device="cuda") * 4).to(torch.float8_e4m3fn)
w = (torch.randn(N, K, device="cuda") * 4).to(torch.float8_e4m3fn)
sa = torch.rand(M, 1, device="cuda") + 0.5
sb = torch.rand(1, N, device="cuda") + 0.5
for _ in range(3):
    torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
torch.cuda.synchronize()
