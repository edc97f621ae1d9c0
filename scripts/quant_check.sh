#!/usr/bin/env bash
# The GPU activation quantizer against the host reference (`warble quant --device`), byte for byte:
# s8, s4, e4m3 and e5m2 codes, per token and per group of 128, and e2m1 with e8m0 (MX) or e4m3 block
# scales (NVFP4 with and without the tensor scale), f16 and bf16 inputs, shapes from one token
# to many; inputs random normal with outliers, an all-zero row, tiny and huge values. Needs a GPU.
set -uo pipefail
W=${WARBLE:-build/warble}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 runs=0
for shape in 1x4096 7x1024 77x8192 300x2048; do
  m=${shape%x*} k=${shape#*x}
  for xt in f16 bf16; do
    python3 - "$m" "$k" "$xt" "$tmp/x" <<'PY'
import sys, numpy as np
m, k, xt, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = np.random.default_rng(m * 1000003 + k + (xt == "bf16"))
x = rng.standard_normal((m, k)).astype(np.float32) * rng.choice([1e-3, 1.0, 30.0], size=(m, 1)).astype(np.float32)
x[rng.random((m, k)) < 0.001] *= 50.0            # outliers
if m > 1: x[m // 2] = 0.0                         # a row of zeros: scale 0, codes 0
x[0, :8] = [0.0, -0.0, 6e-5, -6e-5, 1e-7, 3.0, -3.0, 0.5]
if xt == "f16":
    np.clip(x, -60000, 60000).astype(np.float16).tofile(path)
else:
    (x.view(np.uint32) >> 16).astype(np.uint16).tofile(path)   # bf16 by truncation: any bf16 is valid
PY
    for spec in "int8" "int8,ag=128" "fp8" "fp8-block" "a=e5m2,w=e4m3,ws=f32,g=0" "a=e5m2,ag=256,w=e4m3,ws=f32,g=0" \
                "w4a4-int4" "w4a4-int4,ag=128" "a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32" \
                "a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16" "nvfp4"; do
      runs=$((runs + 1))
      global=()  # nvfp4's tensor scale (ags=1)
      [ "$spec" = nvfp4 ] && global=(--a-global "$tmp/g")
      if ! "$W" quant "$spec" --m "$m" --k "$k" --x "$tmp/x" --x-type "$xt" --a "$tmp/a" --a-scale "$tmp/s" \
          "${global[@]}" --device "${DEVICE:-0}" 2>"$tmp/err"; then
        fails=$((fails + 1)); echo "FAIL quant $spec m=$m k=$k x=$xt: $(cat "$tmp/err")"
      else
        echo "ok   quant $spec m=$m k=$k x=$xt"
      fi
    done
  done
done
echo "quant-check: $((runs - fails)) of $runs equal to the host reference"
[ "$fails" = 0 ]
