#!/usr/bin/env bash
# Command-line contract tests (contract section 4), no GPU needed: exit statuses, one-line `warble:`
# errors on stderr, format round trips, ptx hashing, `check` against a fake ptxas, and every input
# check of `warble run` (sizes, high bits, unused and missing files). Usage: WARBLE=build/warble tests/cli_test.sh
set -u
WARBLE=${WARBLE:-build/warble}
if [ ! -x "$WARBLE" ]; then
    echo "cli-test: $WARBLE is not an executable (set WARBLE=)" >&2
    exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cli-test.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

fail() { failed=$((failed + 1)); echo "FAIL $*"; }

# expect RC NAME [GREP] -- CMD...: run CMD, check its exit status; a failure must print exactly one
# stderr line starting with "warble:", which must match GREP when given.
expect() {
    local want=$1 name=$2 pat=$3
    shift 4
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -ne "$want" ]; then
        fail "$name: exit $rc, expected $want ($(head -c 300 "$tmp/err"))"
        return 1
    fi
    if [ "$want" -ne 0 ]; then
        if [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! head -n 1 "$tmp/err" | grep -q '^warble: '; then
            fail "$name: stderr is not one 'warble:' line: $(head -c 300 "$tmp/err")"
            return 1
        fi
        if [ -n "$pat" ] && ! grep -q -- "$pat" "$tmp/err"; then
            fail "$name: stderr does not match '$pat': $(cat "$tmp/err")"
            return 1
        fi
    fi
    passed=$((passed + 1))
    return 0
}

W=$WARBLE
# ---- usage
expect 2 "no command" "" -- $W
expect 0 "--help" "" -- $W --help
grep -q "usage: warble" "$tmp/out" || fail "--help prints no usage"
expect 0 "help" "" -- $W help
expect 0 "ptx --help" "" -- $W ptx --help
expect 2 "unknown command" "unknown command" -- $W frobnicate
expect 2 "unknown option" "unknown option" -- $W formats --frob
expect 2 "option of another command" "unknown option" -- $W format w4a16 --json
expect 2 "missing value" "needs a value" -- $W ptx w4a16 --arch

# ---- targets: the instruction table
expect 0 "targets" "" -- $W targets
grep -q '^mma.sync m16n8k32 e4m3/e5m2  *-  *-  *-  *yes  *emul  *emul  *emul  *yes$' "$tmp/out" ||
    fail "targets: the fp8 mma.sync row is not native on sm_89/sm_120a and emulated on sm_90a..sm_103a"
grep -q '^tcgen05.mma kind::i8 .* yes  *-  *-$' "$tmp/out" || fail "targets: kind::i8 must be sm_100a only"
expect 2 "targets with an argument" "unexpected argument" -- $W targets sm_90a
expect 2 "fp8 mma.sync on sm_90a is refused as emulated" "mma.sync m16n8k32 e4m3/e5m2 is only emulated on sm_90a" \
    -- $W ptx fp8 --arch sm_90a --mma mma.sync
if expect 0 "fp8 (W8A8) builds on sm_90a, on wgmma at every M" "" -- $W ptx fp8 --arch sm_90a --m 1 --n 256 --k 256; then
    grep -q 'wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3' "$tmp/out" || fail "fp8 on sm_90a: no fp8 wgmma"
fi
if expect 0 "W4A8-fp8 at decode on sm_90a: mma.sync on f16, both operands widened" "" -- $W ptx w4a8-fp8 --arch sm_90a --m 1 --n 256 --k 256; then
    grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32' "$tmp/out" && grep -q 'cvt.rn.f16x2.e4m3x2' "$tmp/out" ||
        fail "w4a8-fp8 at M = 1 on sm_90a: no f16 mma.sync with converted activations"
fi
expect 0 "W4A8-fp8 forced onto mma.sync above decode assembles" "ok" -- $W check w4a8-fp8 --arch sm_90a --m 64 --n 256 --k 256 --mma mma.sync
# a forced split of 16 warps along K keeps the decode kernel at one warp along N (16 warps a block at most)
for spec in w4a16 w4a8-fp8; do
    expect 0 "$spec at M = 1 with --warps-k 16" "" -- $W check $spec --arch sm_90a --m 1 --n 8192 --k 8192 --warps-k 16 &&
        { grep -q 'wn=1,wk=16' "$tmp/out" || fail "$spec --warps-k 16: not one warp along N"; }
done
expect 2 "fp8 on sm_100a names its native instruction" "only with --mma tcgen05: tcgen05.mma kind::f8f6f4 (its native fp8 MMA)" \
    -- $W ptx fp8 --arch sm_100a
expect 2 "fp8 on sm_80 has no fp8 MMA" "sm_80 has no fp8 MMA" -- $W ptx fp8 --arch sm_80
# ---- tcgen05 (sm_100a, sm_103a): forced with --mma, kind::f16 for 16-bit activations
for arch in sm_100a sm_103a; do
    if expect 0 "w4a16 on tcgen05 ($arch)" "" -- $W ptx w4a16 --arch $arch --m 300 --n 256 --k 1024 --mma tcgen05; then
        grep -q 'tcgen05.mma.cta_group::1.kind::f16' "$tmp/out" || fail "tcgen05 on $arch: no tcgen05.mma"
        grep -q 'tcgen05.alloc.cta_group::1' "$tmp/out" || fail "tcgen05 on $arch: no TMEM allocation"
        grep -q 'tcgen05.dealloc.cta_group::1' "$tmp/out" || fail "tcgen05 on $arch: TMEM never freed"
        grep -q 'mma rule: f16 x f16 -> f32, tcgen05.mma kind::f16 M=128' "$tmp/out" || fail "tcgen05: no mma rule"
    fi
done
if expect 0 "w4a16 on sm_100a without --mma stays on mma.sync" "" -- $W ptx w4a16 --arch sm_100a --m 300 --n 256 --k 1024; then
    grep -q 'tcgen05' "$tmp/out" && fail "tcgen05 chosen without --mma tcgen05"
fi
expect 2 "tcgen05 on sm_90a is refused" "sm_90a has no tcgen05" -- $W ptx w4a16 --arch sm_90a --mma tcgen05
expect 2 "tcgen05 with s4 activations is refused" "s4 activations run on mma.sync there" \
    -- $W ptx w4a4-int4 --arch sm_100a --mma tcgen05
if expect 0 "int8 on tcgen05 (sm_100a): kind::i8" "" -- $W ptx int8 --arch sm_100a --m 300 --n 256 --k 1024 --mma tcgen05; then
    grep -q 'tcgen05.mma.cta_group::1.kind::i8' "$tmp/out" || fail "int8 on sm_100a tcgen05: no kind::i8"
fi
# sm_103a has no kind::i8: s8 x s8 widened to f16 on kind::f16 when forced, the legacy mma.sync by default
if expect 0 "int8 on tcgen05 (sm_103a): widened to f16, kind::f16" "" -- $W ptx int8 --arch sm_103a --m 300 --n 256 --k 1024 --mma tcgen05; then
    grep -q 'tcgen05.mma.cta_group::1.kind::f16' "$tmp/out" || fail "int8 on sm_103a tcgen05: no kind::f16"
    grep -q '^[^/]*kind::i8' "$tmp/out" && fail "int8 on sm_103a tcgen05: kind::i8 emitted"
    grep -q 'widened exactly to f16.*K <= 1024' "$tmp/out" || fail "int8 on sm_103a tcgen05: the rule does not say widened and its bound"
fi
if expect 0 "int8 on sm_103a by default: the legacy mma.sync, and why" "" -- $W ptx int8 --arch sm_103a --m 300 --n 256 --k 1024; then
    grep -q 'legacy INT8 path and the default.*--mma tcgen05 widens' "$tmp/out" || fail "int8 on sm_103a: the annotation does not say which path and why"
fi
if expect 0 "fp8 on tcgen05 (sm_103a): kind::f8f6f4" "" -- $W ptx fp8 --arch sm_103a --m 300 --n 256 --k 1024 --mma tcgen05; then
    grep -q 'tcgen05.mma.cta_group::1.kind::f8f6f4' "$tmp/out" || fail "fp8 on sm_103a tcgen05: no kind::f8f6f4"
fi
# fp4 x fp4: the block-scaled kinds, the codes as they are, scale factors copied into TMEM
if expect 0 "nvfp4 on tcgen05 (sm_100a): kind::mxf4nvf4 .scale_vec::4X" "" -- $W ptx nvfp4 --arch sm_100a --m 300 --n 256 --k 1024 --mma tcgen05; then
    grep -q 'tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X \[' "$tmp/out" || fail "nvfp4 on sm_100a tcgen05: no kind::mxf4nvf4"
    grep -q 'tcgen05.cp.cta_group::1.32x128b.warpx4' "$tmp/out" || fail "nvfp4 on sm_100a tcgen05: no tcgen05.cp of the scale factors"
    grep -q '^.version 8.7$' "$tmp/out" || fail "nvfp4 on sm_100a tcgen05: kind::mxf4nvf4 .scale_vec::4X needs PTX 8.7"
    grep -q 'ue4m3 block scales per 16 applied by the MMA, tcgen05.mma kind::mxf4nvf4' "$tmp/out" || fail "nvfp4 on tcgen05: no mma rule"
fi
if expect 0 "MXFP4 x MXFP4 on tcgen05 (sm_103a): kind::mxf4 .scale_vec::2X" "" -- $W ptx a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32 --arch sm_103a --m 300 --n 256 --k 1024 --mma tcgen05; then
    grep -q 'tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::2X \[' "$tmp/out" || fail "MXFP4 on sm_103a tcgen05: no kind::mxf4"
fi
if expect 0 "e2m1 with two scale types on tcgen05: kind::f16 on the 16-bit tile" "" -- $W ptx a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e4m3,g=16 --arch sm_100a --m 300 --n 256 --k 1024 --mma tcgen05; then
    grep -q 'tcgen05.mma.cta_group::1.kind::f16' "$tmp/out" || fail "e8m0 x e4m3 scales on sm_100a tcgen05: no kind::f16"
    grep -q 'takes NVFP4 x NVFP4 and MXFP4 x MXFP4 only' "$tmp/out" || fail "e8m0 x e4m3 scales on tcgen05: the annotation does not say why kind::f16"
fi
# W8A8 with groups: each tile's product in its own TMEM buffer (two), promoted into f32 sums in registers
if expect 0 "fp8-block on tcgen05 (sm_100a): kind::f8f6f4, products promoted" "" -- $W ptx fp8-block --arch sm_100a --m 4096 --n 8192 --k 1024 --mma tcgen05; then
    grep -q 'tcgen05.mma.cta_group::1.kind::f8f6f4' "$tmp/out" || fail "fp8-block on sm_100a tcgen05: no kind::f8f6f4"
    grep -q 'tcgen05.alloc.*, 256;' "$tmp/out" || fail "fp8-block on sm_100a tcgen05 (128 tokens): not two TMEM buffers of 128 columns"
fi
expect 2 "W8A8 with groups on tcgen05 past 128 tokens is refused" "needs m_tiles 16 or fewer" \
    -- $W ptx fp8-block --arch sm_100a --mma tcgen05 --m-tiles 32
expect 2 "tcgen05 with 64 channels a block is refused" "needs warps_n 8 and warps_k 1" \
    -- $W ptx w4a16 --arch sm_100a --mma tcgen05 --warps-n 4
expect 2 "tcgen05 with one m-tile is refused" "needs m_tiles 2, 4, 8, 16 or 32" \
    -- $W ptx w4a16 --arch sm_100a --mma tcgen05 --m-tiles 1
expect 2 "tcgen05 with two stages is refused" "needs 3 or more stages" \
    -- $W ptx w4a16 --arch sm_100a --mma tcgen05 --stages 2
if expect 0 "fp8 (W8A8) builds on sm_89, on mma.sync" "" -- $W ptx fp8 --arch sm_89 --m 16 --n 256 --k 256; then
    grep -q 'mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32' "$tmp/out" || fail "fp8 on sm_89: no fp8 mma"
fi
if expect 0 "fp8-block builds on sm_89" "" -- $W ptx fp8-block --arch sm_89 --m 16 --n 256 --k 256; then
    grep -q 'p_ascale' "$tmp/out" || fail "fp8-block: no activation scales"
fi
expect 2 "fp8 with activation groups of 64 is refused" "group of a multiple of 128 along K" -- $W ptx fp8-block,ag=64 --arch sm_89
if expect 0 "w4a8-fp8 builds on sm_90a, on wgmma above M = 16" "" -- $W ptx w4a8-fp8 --arch sm_90a --m 32 --n 256 --k 1024; then
    grep -q 'wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3' "$tmp/out" || fail "w4a8-fp8: no wgmma e4m3"
    grep -q 'int4 -> e4m3' "$tmp/out" || fail "w4a8-fp8: no widening rule in the annotation"
fi
if expect 0 "int8 (W8A8) builds on sm_90a, on mma.sync" "" -- $W ptx int8 --arch sm_90a --m 16 --n 256 --k 256; then
    grep -q 'mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32' "$tmp/out" || fail "int8 on sm_90a: no m16n8k32 s8 mma"
fi
expect 2 "int8 with groups of 64 is refused" "g a multiple of 128" -- $W ptx int8,g=64 --arch sm_90a
if expect 0 "w4a8-int8 (groups of 128) builds" "" -- $W ptx w4a8-int8 --arch sm_90a --m 16 --n 256 --k 256; then
    grep -q 'fma.rn.f32' "$tmp/out" || fail "w4a8-int8: no scaled slice sums"
fi
expect 2 "a=s8 with w=int2 is refused" "a=s8 with w=int2 is not supported by this build yet" -- $W ptx a=s8,w=int2,ws=f32,g=0 --arch sm_90a
if expect 0 "W4A4 builds on sm_80 (native s4 MMA)" "" -- $W ptx w4a4-int4 --arch sm_80 --m 16 --n 256 --k 256; then
    grep -q 'mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32' "$tmp/out" || fail "W4A4 on sm_80: no m16n8k64 s4"
fi
if expect 0 "W4A4 builds on sm_90a (widened to s8)" "" -- $W ptx w4a4-int4 --arch sm_90a --m 300 --n 256 --k 256; then
    grep -q 'dequant rule: s4 -> s8 on both operands' "$tmp/out" || fail "W4A4 on sm_90a: no widening rule"
    grep -q 'm16n8k64' "$tmp/out" && fail "W4A4 on sm_90a: the emulated s4 MMA was emitted"
fi
expect 2 "W4A4 on wgmma is refused" "W4A4 (a=s4, w=int4) runs on mma.sync" -- $W ptx w4a4-int4 --arch sm_90a --mma wgmma
if expect 0 "NVFP4 builds on sm_90a (mma.sync at M = 16)" "" -- $W ptx nvfp4 --arch sm_90a --m 16 --n 256 --k 256; then
    grep -q 'dequant rule (activations): e2m1 -> f16' "$tmp/out" || fail "nvfp4: no activation dequant rule"
    grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32' "$tmp/out" || fail "nvfp4 on sm_90a: no f16 mma.sync"
    grep -q 'p_aglobal' "$tmp/out" || fail "nvfp4: no activation tensor scale parameter"
fi
if expect 0 "MXFP4 x MXFP4 on sm_120a: the block-scaled MMA" "" -- $W ptx a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32 --arch sm_120a --m 16 --n 256 --k 256; then
    grep -q 'mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0' "$tmp/out" || fail "mxfp4 on sm_120a: no kind::mxf4 mma.sync"
    grep -q 'dequant rule' "$tmp/out" && fail "mxfp4 on sm_120a: the codes are dequantized"
fi
if expect 0 "NVFP4 x NVFP4 on sm_120a: the block-scaled MMA" "" -- $W ptx nvfp4 --arch sm_120a --m 1 --n 256 --k 256; then
    grep -q 'mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3' "$tmp/out" || fail "nvfp4 on sm_120a: no kind::mxf4nvf4 mma.sync"
fi
if expect 0 "e2m1 with mixed scale types on sm_120a: the 16-bit tile, and why" "" -- $W ptx a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e4m3,g=16 --arch sm_120a --m 16 --n 256 --k 256; then
    grep -q 'mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32' "$tmp/out" || fail "mixed e2m1 on sm_120a: no bf16 mma.sync"
    grep -q 'takes NVFP4 x NVFP4 and MXFP4 x MXFP4 only' "$tmp/out" || fail "mixed e2m1 on sm_120a: the reason is not named"
fi
expect 2 "MX activations need bf16 (sm_75)" "a=e2m1 multiplies in bf16" -- $W ptx a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,out=f16 --arch sm_75
expect 2 "fp4 activations with f32 scales are refused" "a=e2m1 needs as=e4m3 (NVFP4) or as=e8m0" -- $W ptx a=e2m1,w=e2m1,ws=e4m3,g=16 --arch sm_90a
expect 2 "fp4 activations by TMA are refused" "a=e2m1 activations are loaded by cp.async" -- $W ptx nvfp4 --arch sm_90a --mma wgmma --load tma
if expect 0 "NVFP4 on wgmma at M = 4096 (sm_90a)" "" -- $W ptx nvfp4 --arch sm_90a --m 4096 --n 4096 --k 4096; then
    grep -q 'wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16' "$tmp/out" || fail "nvfp4 at M = 4096: no wgmma f16"
    grep -q 'fence.proxy.async' "$tmp/out" || fail "nvfp4 on wgmma: the 16-bit tile is not fenced for the async proxy"
fi
if expect 0 "W4A8 (s8 x int4, per channel) builds on sm_90a" "" -- $W ptx a=s8,w=int4,ws=f32,g=0 --arch sm_90a --m 300 --n 256 --k 256; then
    grep -q 'dequant rule: int4 -> s8' "$tmp/out" || fail "W4A8: no widening rule in the annotated PTX"
    grep -q 'wgmma.mma_async.sync.aligned.m64n.*k32.s32.s8.s8' "$tmp/out" || fail "W4A8 at M = 300: no wgmma s8"
fi

# ---- formats
expect 0 "formats" "" -- $W formats
grep -q '^w4a16 ' "$tmp/out" || fail "formats does not list w4a16"
presets=$(cut -d' ' -f1 "$tmp/out")
for p in $presets; do
    if expect 0 "format $p" "" -- $W format "$p"; then
        c=$(cat "$tmp/out")
        expect 0 "format identity $p" "" -- $W format "$c" && [ "$(cat "$tmp/out")" = "$c" ] ||
            fail "format is not the identity on the canonical form of $p"
    fi
done
expect 0 "format overrides" "" -- $W format w4a16,g=64
grep -q 'g=64' "$tmp/out" || fail "w4a16,g=64 lost its override"
expect 2 "format bad preset" "" -- $W format nosuchformat
expect 2 "format bad key" "" -- $W format w4a16,frob=1
expect 2 "format bad value" "" -- $W format a=f16,w=int99
expect 2 "format missing spec" "missing SPEC" -- $W format
expect 2 "format two specs" "unexpected argument" -- $W format w4a16 w8a16

# ---- ptx
expect 2 "ptx without --arch" "--arch" -- $W ptx w4a16
expect 2 "ptx bad arch" "" -- $W ptx w4a16 --arch sm_42
expect 2 "ptx bad m" "--m" -- $W ptx w4a16 --arch sm_90a --m 0
expect 2 "ptx bad n" "--n" -- $W ptx w4a16 --arch sm_90a --n x
expect 2 "ptx bad mma" "--mma" -- $W ptx w4a16 --arch sm_90a --mma frob
expect 2 "ptx bad load" "--load" -- $W ptx w4a16 --arch sm_90a --load frob
expect 2 "ptx K not a multiple of g" "" -- $W ptx w4a16 --arch sm_90a --k 100
expect 2 "ptx bad spec" "" -- $W ptx nosuchformat --arch sm_90a
# ---- k_slices: 1, 2 or 4, mma.sync kernels on 16-bit activations (or 8-bit ones scaled per channel and
# per token); shown in the config
expect 0 "ptx --k-slices 4" "" -- $W ptx w4a16 --arch sm_90a --m 1 --mma mma.sync --warps-k 2 --k-slices 4 --hash
grep -q 'wk=2,.*,ks=4$' "$tmp/out" || fail "ptx --k-slices 4: the config does not say ks=4: $(cat "$tmp/out")"
expect 2 "k-slices 3 is refused" "k_slices must be 1, 2 or 4" -- $W ptx w4a16 --arch sm_90a --m 1 --k-slices 3
expect 2 "k-slices on wgmma is refused" "k_slices > 1 is built for the mma.sync kernel" -- \
    $W ptx w4a16 --arch sm_90a --m 4096 --mma wgmma --k-slices 2
expect 2 "k-slices wider than W8A8's weight groups are refused" "scale groups along K that are multiples" -- \
    $W ptx w4a8-int8 --arch sm_80 --m 1 --k-slices 4
expect 0 "k-slices within W8A8's weight groups" "" -- $W ptx w4a8-int8 --arch sm_80 --m 1 --k-slices 2 --hash
grep -q ',ks=2$' "$tmp/out" || fail "ptx w4a8-int8 --k-slices 2: the config does not say ks=2: $(cat "$tmp/out")"
expect 2 "k-slices on W4A4 is refused" "8-bit ones" -- $W ptx w4a4-int4 --arch sm_80 --m 1 --k-slices 2
expect 0 "k-slices on per-channel int8" "ks=2" -- $W ptx int8 --arch sm_80 --m 1 --k-slices 2
expect 2 "k-slices past the copy slots is refused" "at most 32" -- \
    $W ptx w4a16 --arch sm_80 --m 64 --m-tiles 8 --warps-n 1 --warps-k 1 --k-slices 4 --mma mma.sync
expect 2 "k-slices past K is refused" "K a multiple of 1024" -- \
    $W ptx w4a16 --arch sm_80 --m 1 --k 512 --mma mma.sync --warps-n 1 --warps-k 4 --k-slices 4
if expect 0 "ptx" "" -- $W ptx w4a16 --arch hopper; then
    grep -q '\.target' "$tmp/out" || fail "ptx prints no .target"
fi
if expect 0 "ptx --hash" "" -- $W ptx w4a16 --arch sm_90a --m 1 --n 4096 --k 4096 --hash; then
    h1=$(cat "$tmp/out")
    echo "$h1" | grep -Eq '^[0-9a-f]{64}  [^ ]+$' || fail "ptx --hash format: $h1"
    expect 0 "ptx --hash again" "" -- $W ptx w4a16 --arch sm_90a --hash
    [ "$(cat "$tmp/out")" = "$h1" ] || fail "ptx --hash is not deterministic or defaults differ"
    $W ptx w4a16 --arch sm_90a --plain >"$tmp/ptx" 2>/dev/null
    [ "$(sha256sum <"$tmp/ptx" | cut -d' ' -f1)" = "${h1%% *}" ] || fail "ptx --hash is not the sha256 of ptx --plain"
    $W ptx w4a16 --arch sm_90a >"$tmp/annotated" 2>/dev/null
    grep -q '^    // ir: %7 = dequant %4 %5 (unscaled)$' "$tmp/annotated" || fail "ptx is not annotated by default"
    grep -q '// ir:' "$tmp/ptx" && fail "ptx --plain carries annotations"
    expect 2 "ptx --annotate --plain" "exclude each other" -- $W ptx w4a16 --arch sm_90a --annotate --plain
fi
expect 0 "ptx --hash m list" "" -- $W ptx w4a16 --arch sm_90a --m 1,16,4096 --hash
expect 2 "bf16 on sm_75 rejected" "" -- $W ptx w4a16,a=bf16,ws=bf16 --arch sm_75
if expect 0 "ptx wgmma at large M" "" -- $W ptx w4a16 --arch sm_90a --m 4096 --n 8192 --k 8192 --hash; then
    grep -q 'mma=wgmma\(,persistent=1\)\?\(,cluster=2\)\?$' "$tmp/out" || fail "M = 4096 on sm_90a does not pick wgmma: $(cat "$tmp/out")"
fi
if expect 0 "ptx --batch-invariant" "" -- $W ptx w4a16 --arch sm_90a --m 1,64,4096 --n 8192 --k 8192 \
    --batch-invariant --hash; then
    [ "$(grep -c 'mma=mma.sync,bi=1$' "$tmp/out")" -eq 3 ] || fail "--batch-invariant configs: $(cat "$tmp/out")"
    [ "$(sed 's/.*wk=\([0-9]*\).*/\1/' "$tmp/out" | sort -u | wc -l)" -eq 1 ] ||
        fail "--batch-invariant split-K changes with M: $(cat "$tmp/out")"
fi
if expect 0 "ptx --load tma" "" -- $W ptx w4a16 --arch sm_90a --m 300 --n 4096 --k 4096 --load tma --plain; then
    grep -q 'cp.async.bulk.tensor.2d' "$tmp/out" || fail "--load tma emits no TMA copy"
    grep -q '\.param \.align 64 \.b8 p_tmap\[128\]' "$tmp/out" || fail "--load tma kernel takes no tensor map"
    # a consumer's wait for a tile past K never completes (no copy was issued): each must be skippable
    # (tma_none), or come after the loop's exit where K ends (ktail: the loop that waits for each group a
    # tile late); the producer waits for an empty stage only from the second use of a stage on
    guards=$(($(grep -c 'bra \$L_tma_none' "$tmp/out") + $(grep -c 'bra \$L_ktail' "$tmp/out")))
    [ "$(grep -c '^\$L_full' "$tmp/out")" -eq "$guards" ] ||
        fail "--load tma: a mbarrier wait without the past-K guard"
    [ "$(grep -c 'mbarrier.try_wait' "$tmp/out")" -eq $((guards + 1)) ] ||
        fail "--load tma: not one empty-stage wait (the producer's) beside the consumers' full waits"
    grep -q 'bra \$L_fresh' "$tmp/out" || fail "--load tma: the producer waits for an empty stage on its first use"
fi
if expect 0 "ptx --persistent" "" -- $W ptx w4a16 --arch sm_90a --m 4096 --n 4096 --k 4096 --persistent --plain; then
    # one loop over output tiles for the consumers and one for the producer, stepping by the grid
    [ "$(grep -c '^\$L_tile' "$tmp/out")" -eq 1 ] && [ "$(grep -c '^\$L_ptile' "$tmp/out")" -eq 1 ] ||
        fail "--persistent: not one consumer and one producer tile loop"
    [ "$(grep -c '%nctaid.x' "$tmp/out")" -eq 2 ] || fail "--persistent: the tile loops do not step by the grid"
    [ "$(grep -c 'griddepcontrol.launch_dependents' "$tmp/out")" -eq 1 ] ||
        fail "--persistent: the next kernel is let in more than once"
fi
expect 0 "ptx --persistent hash" "" -- $W ptx w4a16 --arch sm_90a --m 4096 --persistent --hash
# (the heuristic's clusters of two stay on where the channel tiles pair up)
grep -q 'load=tma,mma=wgmma,persistent=1,cluster=2$' "$tmp/out" || fail "--persistent config: $(cat "$tmp/out")"
expect 2 "--persistent on cp.async" "built for the TMA pipeline" -- \
    $W ptx w4a16 --arch sm_90a --m 4096 --persistent --load cp.async
expect 2 "--persistent on sm_80" "" -- $W ptx w4a16 --arch sm_80 --m 4096 --persistent
if expect 0 "ptx --cluster 2" "" -- $W ptx fp8 --arch sm_90a --m 4096 --n 4096 --k 4096 --cluster 2 --plain; then
    # launched in pairs; each block multicasts its half of the activation tile into both and releases a
    # stage to both producers; every thread of the pair meets after the mbarriers are set up and at the consumers' end
    grep -q '^\.reqnctapercluster 2, 1, 1$' "$tmp/out" || fail "--cluster 2: no .reqnctapercluster 2, 1, 1"
    [ "$(grep -c 'multicast::cluster \[.*\], 3;$' "$tmp/out")" -eq 1 ] || fail "--cluster 2: not one multicast copy"
    grep -q 'cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \[' "$tmp/out" &&
        fail "--cluster 2: a plain activation copy beside the multicast"
    [ "$(grep -c 'mbarrier.arrive.shared::cluster' "$tmp/out")" -ge 1 ] &&
        [ "$(grep -c 'mapa.shared::cluster' "$tmp/out")" -eq "$(grep -c 'mbarrier.arrive.shared::cluster' "$tmp/out")" ] ||
        fail "--cluster 2: no remote release, or one without mapa"
    [ "$(grep -c 'barrier.cluster.wait' "$tmp/out")" -eq 2 ] ||
        fail "--cluster 2: not two cluster barriers (after setup, the consumers' end)"
fi
expect 0 "ptx --cluster annotated" "" -- $W ptx fp8 --arch sm_90a --m 4096 --cluster 2 &&
    { grep -q '// load rule: TMA in a cluster of two' "$tmp/out" || fail "--cluster 2: no load rule in the annotated PTX"; }
expect 0 "ptx --cluster hash" "" -- $W ptx fp8 --arch sm_90a --m 4096 --cluster 2 --hash
grep -q 'load=tma,mma=wgmma,cluster=2$' "$tmp/out" || fail "--cluster config: $(cat "$tmp/out")"
expect 0 "check --cluster 2" " ok" -- $W check int8 --arch sm_90a --m 1000 --n 4096 --k 4096 --cluster 2
expect 2 "--cluster on cp.async" "built for the TMA pipeline" -- \
    $W ptx fp8 --arch sm_90a --m 4096 --cluster 2 --load cp.async
expect 0 "--cluster with --persistent" "" -- $W ptx fp8 --arch sm_90a --m 4096 --cluster 2 --persistent --hash
grep -q 'persistent=1,cluster=2$' "$tmp/out" || fail "--persistent --cluster 2 config: $(cat "$tmp/out")"
expect 2 "--cluster 3" "must be 1, 2 or 4" -- $W ptx fp8 --arch sm_90a --m 4096 --cluster 3
if expect 0 "ptx --cluster 4" "" -- $W ptx w4a16 --arch sm_90a --m 4096 --n 4096 --k 4096 --cluster 4 --plain; then
    # launched in quads; one multicast activation half (its mask a register), the weight tile's 8 warp
    # slices and their scale records halved: 4 + 4 multicast bulk copies; each release reaches the
    # channel neighbour and the token neighbour (two mapa a release site); empty barriers count 3 x 8 warps
    grep -q '^\.reqnctapercluster 4, 1, 1$' "$tmp/out" || fail "--cluster 4: no .reqnctapercluster 4, 1, 1"
    [ "$(grep -c 'tile.mbarrier::complete_tx::bytes.multicast::cluster \[.*\], %h[0-9]*;$' "$tmp/out")" -eq 1 ] ||
        fail "--cluster 4: not one activation multicast with a register mask"
    [ "$(grep -c 'cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster' "$tmp/out")" -eq 8 ] ||
        fail "--cluster 4: not 8 multicast weight and scale copies"
    grep -q 'cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes \[' "$tmp/out" &&
        fail "--cluster 4: a plain weight copy beside the multicasts"
    [ "$(grep -c 'mbarrier.init.shared::cta.b64 \[%r[0-9]*\], 24;' "$tmp/out")" -ge 1 ] ||
        fail "--cluster 4: no empty barrier counting 24 releases"
    [ "$(grep -c 'mapa.shared::cluster' "$tmp/out")" -eq "$(grep -c 'mbarrier.arrive.shared::cluster' "$tmp/out")" ] &&
        [ "$(grep -c 'mbarrier.arrive.shared::cluster' "$tmp/out")" -eq "$((2 * $(grep -c 'mbarrier.arrive.shared::cta' "$tmp/out")))" ] ||
        fail "--cluster 4: not two remote releases (with mapa) for each local one"
fi
expect 0 "ptx --cluster 4 hash" "" -- $W ptx fp8 --arch sm_90a --m 4096 --cluster 4 --hash
grep -q 'load=tma,mma=wgmma,cluster=4$' "$tmp/out" || fail "--cluster 4 config: $(cat "$tmp/out")"
expect 2 "--cluster 4 with --persistent" "without --persistent" -- \
    $W ptx fp8 --arch sm_90a --m 4096 --cluster 4 --persistent
expect 2 "--cluster odd m-tiles" "even m_tiles" -- $W ptx fp8 --arch sm_90a --m 4096 --cluster 2 --m-tiles 9
expect 2 "--cluster odd channel tiles" "two channel tiles" -- \
    $W ptx fp8 --arch sm_90a --m 4096 --n 384 --k 4096 --cluster 2 --warps-n 8
if expect 0 "ptx --split-k 2" "" -- $W ptx w4a16 --arch sm_90a --m 256 --n 6144 --k 4096 --split-k 2 --plain; then
    # pairs on one output tile; the second block's sums into the first's shared memory between cluster barriers
    grep -q '^\.reqnctapercluster 2, 1, 1$' "$tmp/out" || fail "--split-k 2: no .reqnctapercluster 2, 1, 1"
    [ "$(grep -c 'st.shared::cluster.f32' "$tmp/out")" -ge 1 ] || fail "--split-k 2: no store into the first block"
    [ "$(grep -c 'barrier.cluster.wait' "$tmp/out")" -eq 3 ] || fail "--split-k 2: not three cluster barriers"
fi
expect 0 "ptx --split-k hash" "" -- $W ptx w4a16 --arch sm_90a --m 256 --n 6144 --k 4096 --split-k 2 --hash
grep -q 'mma=wgmma,split_k=2$' "$tmp/out" || fail "--split-k config: $(cat "$tmp/out")"
expect 0 "check --split-k 2" " ok" -- $W check int8 --arch sm_90a --m 256 --n 4096 --k 4096 --split-k 2
# mma.sync pairs too (sm_90 and newer): the heuristic's pick at M = 16 on 4096 x 14336; none before sm_90
expect 0 "--split-k on mma.sync" "" -- $W ptx w4a16 --arch sm_90a --m 16 --split-k 2 --mma mma.sync --hash
grep -q 'mma=mma.sync,ks=2,split_k=2$' "$tmp/out" || fail "--split-k on mma.sync: $(cat "$tmp/out")"
expect 0 "split-K at M = 16" "" -- $W ptx w4a16 --arch sm_90a --m 16 --n 4096 --k 14336 --hash
grep -q 'mt=2,wn=2,.*mma=mma.sync,.*split_k=2$' "$tmp/out" || fail "no split at M = 16 on 4096 x 14336: $(cat "$tmp/out")"
expect 2 "--split-k before sm_90" "thread block cluster, which sm_89 does not have" -- \
    $W ptx w4a16 --arch sm_89 --m 16 --split-k 2
expect 2 "--split-k 3" "must be 1 or 2" -- $W ptx w4a16 --arch sm_90a --m 256 --split-k 3
# the heuristic splits where 128 x 128 tiles leave over half the SMs idle (64 tiles at M = 128 on 8192^2)
expect 0 "split-K default" "" -- $W ptx w4a16 --arch sm_90a --m 128 --n 8192 --k 8192 --hash
grep -q 'wn=8,.*load=tma,mma=wgmma,split_k=2$' "$tmp/out" || fail "M = 128 on 8192^2 not split: $(cat "$tmp/out")"
expect 0 "--split-k 1" "" -- $W ptx w4a16 --arch sm_90a --m 128 --n 8192 --k 8192 --split-k 1 --hash
grep -q 'split_k' "$tmp/out" && fail "--split-k 1 still split: $(cat "$tmp/out")"
expect 2 "--split-k odd K" "needs K a multiple of" -- $W ptx w4a16 --arch sm_90a --m 256 --n 4096 --k 4224 --split-k 2
expect 2 "--load tma on mma.sync" "wgmma kernel only" -- $W ptx w4a16 --arch sm_90a --m 300 --load tma --mma mma.sync
expect 2 "--load tma on sm_80" "no TMA" -- $W ptx w4a16 --arch sm_80 --m 300 --load tma
expect 2 "--batch-invariant with wgmma" "batch-invariant mode uses mma.sync" -- \
    $W ptx w4a16 --arch sm_90a --m 4096 --batch-invariant --mma wgmma
# gemv: the pick at M = 1 for int2 and int3 without zero points (their raw rule, the bias from the
# token's activation sums), never at M = 2 or for int4; --gemv off gives the kernel without it
if expect 0 "ptx gemv at M = 1" "" -- $W ptx a=f16,w=int2,g=128 --arch sm_90a --m 1,2 --n 8192 --k 8192 --hash; then
    [ "$(grep -c ',gemv=1$' "$tmp/out")" -eq 1 ] && head -n 1 "$tmp/out" | grep -q ',gemv=1$' ||
        fail "gemv is not the pick at M = 1 alone: $(cat "$tmp/out")"
fi
if expect 0 "ptx --gemv off" "" -- $W ptx a=f16,w=int2,g=128 --arch sm_90a --m 1 --n 8192 --k 8192 --gemv off --plain; then
    grep -q 'gemv' "$tmp/out" && fail "--gemv off still sums the activations"
fi
if expect 0 "ptx gemv annotated" "" -- $W ptx a=f16,w=int3,g=128 --arch sm_80 --m 1 --n 4096 --k 4096; then
    grep -q "gemv: the token's activation sums" "$tmp/out" || fail "the gemv kernel does not say where its bias comes from"
    grep -q 'dequant rule: raw 3-bit.*activation sums take off the bias (gemv)' "$tmp/out" ||
        fail "the gemv kernel's dequant note does not say where its bias comes from"
fi
expect 0 "ptx gemv not for int4" "" -- $W ptx w4a16 --arch sm_90a --m 1 --n 8192 --k 8192 --hash
grep -q 'gemv' "$tmp/out" && fail "w4a16 at M = 1 picks gemv: $(cat "$tmp/out")"
expect 2 "--gemv on at M = 2" "takes M = 1 only" -- $W ptx a=f16,w=int2,g=128 --arch sm_90a --m 2 --gemv on
expect 2 "--gemv on for int4" "--gemv is built for signed 2- and 3-bit" -- $W ptx w4a16 --arch sm_90a --m 1 --gemv on
expect 2 "--gemv with zero points" "--gemv is built for" -- $W ptx gptq-int3 --arch sm_90a --m 1 --gemv on
expect 2 "--gemv bad value" "allowed: on, off" -- $W ptx a=f16,w=int2,g=128 --arch sm_90a --m 1 --gemv yes
if expect 0 "sweep --list gemv" "" -- $W bench a=f16,w=int2,g=128 --m 1 --n 8192 --k 8192 --mma mma.sync \
    --m-tiles 1 --warps-n 2 --warps-k 4 --k-slices 4 --sweep --list --arch sm_90a; then
    [ "$(grep -c ',gemv=1$' "$tmp/out")" -gt 0 ] && [ "$(grep -c ',gemv=1$' "$tmp/out")" -eq "$(grep -vc ',gemv=1$' "$tmp/out")" ] ||
        fail "the M = 1 sweep does not list each gemv config beside the one without: $(cat "$tmp/out")"
fi

# ---- check, against a fake ptxas
cat >"$tmp/ptxas" <<'FAKE'
#!/bin/sh
echo "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]"
echo "    0 bytes stack frame, ${FAKE_SPILL:-0} bytes spill stores, ${FAKE_SPILL:-0} bytes spill loads"
[ -n "${FAKE_WARN:-}" ] && echo "ptxas warning : fake" >&2
exit ${FAKE_RC:-0}
FAKE
chmod +x "$tmp/ptxas"
if expect 0 "check (fake ptxas)" "" -- env PTXAS="$tmp/ptxas" $W check w4a16 --arch sm_90a --m 1,4096; then
    grep -Eq '^sm_90a a=f16,.* regs=40 smem=1024\+[0-9]+ spills=0 ok$' "$tmp/out" || fail "check line: $(cat "$tmp/out")"
fi
expect 1 "check spills" "" -- env PTXAS="$tmp/ptxas" FAKE_SPILL=8 $W check w4a16 --arch sm_90a
expect 1 "check warning" "" -- env PTXAS="$tmp/ptxas" FAKE_WARN=1 $W check w4a16 --arch sm_90a
expect 1 "check ptxas fails" "" -- env PTXAS="$tmp/ptxas" FAKE_RC=1 $W check w4a16 --arch sm_90a
expect 2 "check bad spec" "" -- env PTXAS="$tmp/ptxas" $W check nosuchformat --arch sm_90a

# ---- run: every input check happens before the GPU
M=2 N=128 K=256
zeros() { head -c "$1" /dev/zero >"$2"; }
zeros $((M * K * 2)) "$tmp/a"
zeros $((N * K)) "$tmp/w"
zeros $((N * (K / 128) * 2)) "$tmp/ws"
zeros $((N * (K / 128))) "$tmp/wz"
zeros $((N * 2)) "$tmp/bias"
zeros 100 "$tmp/short"
printf '\x10' >"$tmp/w_hi" && head -c $((N * K - 1)) /dev/zero >>"$tmp/w_hi"
R="$W run w4a16 --m $M --n $N --k $K"
expect 2 "run missing --out" "missing --out" -- $R --a "$tmp/a" --w "$tmp/w" --w-scale "$tmp/ws"
expect 2 "run missing --w-scale" "missing --w-scale" -- $R --a "$tmp/a" --w "$tmp/w" --out "$tmp/o"
expect 2 "run missing shape" "" -- $W run w4a16 --a "$tmp/a" --w "$tmp/w" --w-scale "$tmp/ws" --out "$tmp/o"
expect 2 "run wrong size" "expected $((N * K)) bytes, got 100" -- $R --a "$tmp/a" --w "$tmp/short" --w-scale "$tmp/ws" --out "$tmp/o"
expect 2 "run wrong a size" "expected $((M * K * 2)) bytes, got 100" -- $R --a "$tmp/short" --w "$tmp/w" --w-scale "$tmp/ws" --out "$tmp/o"
expect 2 "run high bits" "high bits" -- $R --a "$tmp/a" --w "$tmp/w_hi" --w-scale "$tmp/ws" --out "$tmp/o"
expect 2 "run unused --bias" "not used" -- $R --a "$tmp/a" --w "$tmp/w" --w-scale "$tmp/ws" --bias "$tmp/bias" --out "$tmp/o"
expect 2 "run unused --w-zero" "not used" -- $R --a "$tmp/a" --w "$tmp/w" --w-scale "$tmp/ws" --w-zero "$tmp/wz" --out "$tmp/o"
expect 2 "run unused --a-scale" "not used" -- $R --a "$tmp/a" --w "$tmp/w" --w-scale "$tmp/ws" --a-scale "$tmp/ws" --out "$tmp/o"
expect 2 "run nonexistent file" "cannot open" -- $R --a "$tmp/nope" --w "$tmp/w" --w-scale "$tmp/ws" --out "$tmp/o"
expect 2 "run zp needs --w-zero" "missing --w-zero" -- $W run w4a16-zp --m $M --n $N --k $K --a "$tmp/a" --w "$tmp/w" --w-scale "$tmp/ws" --out "$tmp/o"
expect 2 "run bias needs --bias" "missing --bias" -- $W run w4a16,bias=1 --m $M --n $N --k $K --a "$tmp/a" --w "$tmp/w" --w-scale "$tmp/ws" --out "$tmp/o"
expect 2 "run two Ms" "one value" -- $W run w4a16 --m 1,2 --n $N --k $K --a "$tmp/a" --w "$tmp/w" --w-scale "$tmp/ws" --out "$tmp/o"
# Valid input: exit 0 with a GPU (and an output of M x N f16), 1 without one.
$R --a "$tmp/a" --w "$tmp/w" --w-scale "$tmp/ws" --out "$tmp/o" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ]; then
    [ "$(stat -c %s "$tmp/o")" -eq $((M * N * 2)) ] && passed=$((passed + 1)) || fail "run wrote a wrong-size output"
elif [ $rc -eq 1 ] && grep -q '^warble: ' "$tmp/err"; then
    passed=$((passed + 1)) # no GPU here
else
    fail "run valid input: exit $rc: $(cat "$tmp/err")"
fi

# ---- selftest / bench usage (no GPU needed)
if expect 0 "selftest --list" "" -- $W selftest --list; then
    [ "$(wc -l <"$tmp/out")" -ge 388 ] || fail "selftest --list: $(wc -l <"$tmp/out") cases"
    awk -F'\t' '!(NF == 4 || (NF == 5 && ($5 == "--batch-invariant" || $5 == "--mma,wgmma,--load,tma" ||
                                    $5 == "--mma,wgmma,--load,tma,--persistent,--cluster,1" ||
                                    $5 == "--mma,wgmma,--load,tma,--persistent,--cluster,2" ||
                                    $5 == "--mma,wgmma,--load,tma,--cluster,2" ||
                                    $5 == "--mma,wgmma,--load,tma,--cluster,4" ||
                                    $5 == "--mma,wgmma,--load,tma,--m-tiles,24" ||
                                    $5 == "--mma,wgmma,--load,tma,--m-tiles,24,--persistent" ||
                                    $5 == "--mma,wgmma,--load,tma,--cluster,1" ||
                                    $5 == "--mma,mma.sync,--warps-k,2,--k-slices,4" ||
                                    $5 == "--split-k,2"))) { bad = 1 }
                 END { exit bad }' "$tmp/out" ||
        fail "selftest --list: lines are not spec TAB m TAB n TAB k [TAB choices]"
    grep -q "$(printf '\t')--batch-invariant\$" "$tmp/out" || fail "selftest --list has no batch-invariance case"
fi
# --pending: only the cases whose kernel the ledger lacks (none with the repository's ledger and the
# kernels pending.tsv lists, which ledger-check accounts for; the M = 1 and 7 cases of a kernel taken
# out of a copy of them)
{ cat "$(dirname "$0")/gpu/ledger.tsv"; tail -n +2 "$(dirname "$0")/gpu/pending.tsv"; } >"$tmp/known.tsv"
if expect 0 "selftest --list --pending" "" -- $W selftest --list --pending --arch sm_90a --ledger "$tmp/known.tsv"; then
    [ ! -s "$tmp/out" ] || fail "selftest --pending: $(wc -l <"$tmp/out") cases with every kernel in the ledger"
fi
hash=$($W ptx w4a16 --arch sm_90a --m 1 --n 8192 --k 8192 --hash | cut -c1-64)
grep -v "^$hash" "$tmp/known.tsv" >"$tmp/ledger.tsv"
if expect 0 "selftest --list --pending, one kernel missing" "" -- $W selftest --list --pending --arch sm_90a --ledger "$tmp/ledger.tsv"; then
    [ "$(cut -f1-4 "$tmp/out" | tr '\t' ' ' | tr '\n' ';')" = "w4a16 1 8192 8192;w4a16 7 8192 8192;" ] ||
        fail "selftest --pending: not the two cases of the missing kernel: $(tr '\n' ';' <"$tmp/out")"
fi
expect 2 "selftest --list --pending without --arch" "needs --arch" -- $W selftest --list --pending
expect 2 "selftest --pending, no such ledger" "cannot read the ledger" -- \
    $W selftest --list --pending --arch sm_90a --ledger "$tmp/no-such-ledger.tsv"
expect 0 "selftest --list --quick" "" -- $W selftest --list --quick
expect 2 "selftest --arch without --list" "--arch goes with --list" -- $W selftest --arch sm_90a
expect 2 "selftest bad option" "unknown option" -- $W selftest --n 16
# fp8 W8A8 cases are in the plan of exactly the targets that build them (sm_89, sm_120a; sm_90a once
# wgmma fp8 exists), and not in the plan common to every target
fp8_cases() { grep -cE '^(fp8|a=e[45]m[23],w=e[45]m[23],)' "$1"; }
$W selftest --list >"$tmp/plan_any" 2>&1 || fail "selftest --list"
[ "$(fp8_cases "$tmp/plan_any")" -eq 0 ] || fail "selftest --list (no --arch) has fp8 W8A8 cases"
for arch in sm_75 sm_80 sm_86 sm_89 sm_90a sm_100a sm_103a sm_120a; do
    $W selftest --list --arch $arch >"$tmp/plan_a" 2>&1 || fail "selftest --list --arch $arch"
    n=$(fp8_cases "$tmp/plan_a")
    if $W ptx fp8 --arch $arch --m 16 --n 256 --k 1024 >/dev/null 2>&1; then
        [ "$n" -gt 0 ] || fail "selftest --list --arch $arch: fp8 builds there but has no case"
    else
        [ "$n" -eq 0 ] || fail "selftest --list --arch $arch: $n fp8 cases, but fp8 is refused there"
    fi
done
$W selftest --list --arch sm_89 >"$tmp/plan_89" 2>&1 || fail "selftest --list --arch sm_89"
grep -q '^fp8	300	256	1024$' "$tmp/plan_89" || fail "selftest --list --arch sm_89 has no fp8 case"
grep -q '^a=e5m2,w=e4m3,ws=f32,g=0,out=f16,bias=1	' "$tmp/plan_89" || fail "sm_89 plan: no e5m2 x e4m3 case"
expect 2 "bench missing shape" "required" -- $W bench w4a16 --m 1
expect 2 "bench bad spec" "" -- $W bench nosuchformat --m 1 --n 4096 --k 4096
# --sweep --list: the configs a sweep would time, no GPU: pairs splitting K among them on sm_90a (wgmma's
# and mma.sync's; on mma.sync, only on the cp.async load), only split ones when --split-k 2 is asked,
# only mma.sync where there is no wgmma
if expect 0 "bench --sweep --list" "" -- $W bench w4a16 --m 128 --n 8192 --k 8192 --sweep --list --arch sm_90a; then
    awk '!/^m=128 n=8192 k=8192 mt=[0-9]+,wn=[0-9]+,wk=[0-9]+,stages=[0-9]+,load=[a-z.]+,mma=(mma.sync|wgmma)/ ||
         (/split_k=2/ && /mma=mma.sync/ && !/load=cp.async/) { bad = 1 } END { exit bad }' "$tmp/out" ||
        fail "bench --sweep --list: a line is not m n k and a config: $(head -3 "$tmp/out")"
    grep -q 'mt=16,wn=8,wk=1,stages=8,load=tma,mma=wgmma,split_k=2$' "$tmp/out" ||
        fail "bench --sweep --list: no 128 x 128 TMA pair splitting K"
    grep -q 'mma=mma.sync,split_k=2$' "$tmp/out" || fail "bench --sweep --list: no mma.sync pair splitting K"
    grep -q 'mma=mma.sync$' "$tmp/out" || fail "bench --sweep --list: no mma.sync config"
    grep -q 'mt=16,wn=8,wk=1,stages=4,load=tma,mma=wgmma,persistent=1$' "$tmp/out" ||
        fail "bench --sweep --list: no persistent TMA config"
    [ "$(sort "$tmp/out" | uniq -d | wc -l)" -eq 0 ] || fail "bench --sweep --list: a config listed twice"
fi
# the large-M pick (persistent 192-token tiles in pairs) is among the configs swept; --persistent keeps them all so
if expect 0 "bench --sweep --list M = 4096" "" -- $W bench w4a16 --m 4096 --n 8192 --k 8192 --sweep --list --arch sm_90a; then
    grep -q 'mt=24,wn=8,wk=1,stages=6,load=tma,mma=wgmma,persistent=1,cluster=2$' "$tmp/out" ||
        fail "bench --sweep --list at M = 4096: not the heuristic's persistent 192-token kernel"
fi
if expect 0 "bench --sweep --list --persistent" "" -- $W bench w4a16 --m 4096 --n 8192 --k 8192 --persistent --sweep --list --arch sm_90a; then
    [ -s "$tmp/out" ] && ! grep -qv 'persistent=1' "$tmp/out" && [ "$(sort "$tmp/out" | uniq -d | wc -l)" -eq 0 ] ||
        fail "--persistent --sweep --list: a config not persistent or listed twice"
fi
if expect 0 "bench --sweep --list --split-k 2" "" -- $W bench w4a16 --m 256 --n 4096 --k 4096 --split-k 2 --sweep --list --arch sm_90a; then
    [ -s "$tmp/out" ] && ! grep -qv 'split_k=2$' "$tmp/out" || fail "--split-k 2 --sweep --list: an unsplit config"
fi
if expect 0 "bench --sweep --list sm_80" "" -- $W bench w4a16 --m 256 --n 4096 --k 4096 --sweep --list --arch sm_80; then
    [ -s "$tmp/out" ] && ! grep -Eqv 'mma=mma.sync(,ks=[0-9]+)?$' "$tmp/out" || fail "sm_80 --sweep --list: not mma.sync alone"
fi
expect 2 "bench --list without --sweep" "go together" -- $W bench w4a16 --m 1 --n 4096 --k 4096 --list --arch sm_90a
expect 2 "bench --list without --arch" "go together" -- $W bench w4a16 --m 1 --n 4096 --k 4096 --sweep --list

# ---- quant: the host reference quantizer into run's files (x = 1, -0.5, 0, 0.25 as f32)
printf '\x00\x00\x80\x3f\x00\x00\x00\xbf\x00\x00\x00\x00\x00\x00\x80\x3e' >"$tmp/x.f32"
q="--m 1 --k 4 --x $tmp/x.f32 --a $tmp/qa --a-scale $tmp/qs"
if expect 0 "quant int8" "" -- $W quant int8 $q; then
    # amax 1 -> scale 1/127; codes round to nearest even: 127, -64 (-63.5), 0, 32 (31.75)
    [ "$(od -An -tx1 "$tmp/qa" | tr -d ' ')" = "7fc00020" ] || fail "quant int8 codes: $(od -An -tx1 "$tmp/qa")"
    [ "$(od -An -tx1 "$tmp/qs" | tr -d ' ')" = "0402013c" ] || fail "quant int8 scale: $(od -An -tx1 "$tmp/qs")"
fi
if expect 0 "quant fp8" "" -- $W quant fp8 $q; then
    # amax 1 -> scale 1/448 (f32); e4m3 codes of 448, -224, 0, 112
    [ "$(od -An -tx1 "$tmp/qa" | tr -d ' ')" = "7ef6006e" ] || fail "quant fp8 codes: $(od -An -tx1 "$tmp/qa")"
    [ "$(od -An -tx1 "$tmp/qs" | tr -d ' ')" = "2549123b" ] || fail "quant fp8 scale: $(od -An -tx1 "$tmp/qs")"
fi
# run fp8: the quantized activations and their scale per token; every file checked before the GPU
zeros 64 "$tmp/fa" && zeros 4 "$tmp/fas" && zeros $((16 * 64)) "$tmp/fw" && zeros 64 "$tmp/fws"
printf '\x7f' >"$tmp/fw_nan" && head -c $((16 * 64 - 1)) /dev/zero >>"$tmp/fw_nan"
F="$W run fp8 --m 1 --n 16 --k 64 --a $tmp/fa --w-scale $tmp/fws --out $tmp/o"
expect 2 "run fp8 needs --a-scale" "missing --a-scale" -- $F --w "$tmp/fw"
$F --w "$tmp/fw" --a-scale "$tmp/fas" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] || { [ $rc -eq 1 ] && grep -q '^warble: ' "$tmp/err"; }; then
    passed=$((passed + 1))
else
    fail "run fp8 with valid input: exit $rc ($(cat "$tmp/err"))"
fi
# run nvfp4: codes, e4m3 block scales and the tensor scale; the missing one is named before the GPU
zeros 64 "$tmp/n4a" && zeros 4 "$tmp/n4as" && zeros 4 "$tmp/n4ag" && zeros $((16 * 64)) "$tmp/n4w" && zeros 64 "$tmp/n4ws"
N4="$W run nvfp4 --m 1 --n 16 --k 64 --a $tmp/n4a --a-scale $tmp/n4as --w $tmp/n4w --w-scale $tmp/n4ws --w-global $tmp/n4ag --out $tmp/o"
expect 2 "run nvfp4 needs --a-global" "missing --a-global" -- $N4
$N4 --a-global "$tmp/n4ag" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] || { [ $rc -eq 1 ] && grep -q '^warble: ' "$tmp/err"; }; then
    passed=$((passed + 1))
else
    fail "run nvfp4 with valid input: exit $rc ($(cat "$tmp/err"))"
fi
expect 2 "quant f16 acts" "not quantized" -- $W quant w4a16 $q
expect 2 "quant x size" "expected 32 bytes" -- $W quant int8 --m 2 --k 4 --x "$tmp/x.f32" --a "$tmp/qa" --a-scale "$tmp/qs"
expect 2 "quant nvfp4 needs a-global" "ags=1" -- $W quant nvfp4 --m 1 --k 16 --x "$tmp/x.f32" --a "$tmp/qa" --a-scale "$tmp/qs"
expect 2 "quant a-global unused" "ags=0" -- $W quant int8 $q --a-global "$tmp/qg"
expect 2 "quant x-type" "x-type" -- $W quant int8 $q --x-type e4m3
expect 2 "quant ag divides K" "multiple of ag" -- $W quant fp8-block --m 1 --k 4 --x "$tmp/x.f32" --a "$tmp/qa" --a-scale "$tmp/qs"
# the GPU quantizer: its PTX per target (--arch), refusals, and --device without a driver
if expect 0 "quant --arch prints the GPU quantizer" "" -- $W quant fp8 --arch sm_90a --x-type bf16; then
    grep -q 'cvt.rn.satfinite.e4m3x2.f32' "$tmp/out" || fail "quant --arch: no fp8 conversion"
    grep -q '.entry wb_quant' "$tmp/out" || fail "quant --arch: no wb_quant entry"
fi
expect 2 "quant --arch without fp8 conversions" "sm_80 has no f32 -> e4m3 conversion" -- $W quant fp8 --arch sm_80
# e2m1 with block scales: MX (e8m0) everywhere, e4m3 scales from sm_89; not the tensor scale (ags=1)
if expect 0 "quant --arch e2m1, e8m0 blocks" "" -- $W quant a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32 --arch sm_80; then
    grep -q 'shfl.sync.bfly.b32' "$tmp/out" || fail "quant e2m1: no butterfly over the block's lanes"
    grep -q 'st.global.u8' "$tmp/out" || fail "quant e2m1: no scale byte stored"
fi
if expect 0 "quant --arch nvfp4: the tensor-scale pass, then the quantizer" "" -- $W quant nvfp4 --arch sm_90a; then
    [ "$(grep -c "^.visible .entry" "$tmp/out")" = 2 ] || fail "quant nvfp4: not two kernels"
    grep -q "^.visible .entry wb_quant_global(" "$tmp/out" || fail "quant nvfp4: no tensor-scale pass"
fi
expect 2 "quant --arch e2m1, e4m3 blocks on sm_80" "no f32 -> e4m3 conversion for the block scales" \
    -- $W quant a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16 --arch sm_80
expect 2 "quant --arch e2m1 blocks of 256" "blocks of 16, 32, 64 or 128" \
    -- $W quant a=e2m1,ag=256,as=e8m0,w=e2m1,ws=e8m0,g=32 --arch sm_90a
expect 2 "quant --arch takes no files" "takes only SPEC and --x-type" -- $W quant int8 --arch sm_90a --m 1
expect 2 "quant --device needs 16-bit x" "f16 or bf16" -- $W quant int8 $q --device 0

echo "cli-test: $passed passed, $failed failed"
[ $failed -eq 0 ]
