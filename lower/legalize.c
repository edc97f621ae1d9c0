/* The legalizer: every refusal names what is missing and where. Runs before any lowering. */
#include <stdio.h>
#include <string.h>

#include "lower/isa.h"
#include "lower/layout.h"
#include "lower/lower.h"

static int is16(wb_type t) { return t.kind == WB_KIND_F16 || t.kind == WB_KIND_BF16; }

/* Quantized activations other than W8A8 are not built yet; the refusal says which instruction this target would use
 * for them (the first native family, in order of preference) and which form it only emulates. */
static wb_status refuse_quantized_acts(const wb_format *f, const wb_target *t)
{
    static const int fp8[] = {WB_ISA_TC05_F8F6F4, WB_ISA_WGMMA_FP8, WB_ISA_MMA_FP8, -1};
    static const int s8[] = {WB_ISA_TC05_I8, WB_ISA_WGMMA_S8, WB_ISA_MMA_S8, WB_ISA_MMA_S8_K16, -1};
    static const int fp4[] = {WB_ISA_TC05_MXF4NVF4, WB_ISA_MMA_MXF4NVF4, WB_ISA_WGMMA_FP8, WB_ISA_MMA_FP8, -1};
    static const int s4[] = {WB_ISA_MMA_S4, WB_ISA_MMA_S4_K32, WB_ISA_TC05_F8F6F4, WB_ISA_WGMMA_S8, WB_ISA_MMA_S8, -1};
    const int *list = f->a.kind == WB_KIND_FLOAT ? (f->a.bits == 4 ? fp4 : fp8) : f->a.bits == 4 ? s4 : s8;
    int emulated, native = wb_isa_pick(t->arch, list, &emulated);
    char tn[8], wn[8], why[200] = "";
    if (native >= 0)
        snprintf(why, sizeof why, "; its native instruction on %s is %s", t->name, wb_isa_name(native));
    else
        snprintf(why, sizeof why, "; %s has no tensor instruction for it (it would be widened to f16)", t->name);
    if (emulated >= 0)
        snprintf(why + strlen(why), sizeof why - strlen(why), " (%s is only emulated there)", wb_isa_name(emulated));
    return wb_fail(WB_ERR_UNSUPPORTED, "a=%s with w=%s is not supported by this build yet (f16 and bf16 "
                                       "activations, s8 with w=int8, int4 or e2m1, s4 with w=int4, e4m3/e5m2 "
                                       "with w=e4m3, e5m2, int4 or e2m1, and e2m1 with any 16-bit kernel "
                                       "weight, only)%s",
                   wb_format_act_name(f->a, tn), wb_type_name(f->w, wn), why);
}

/* The targets where `family` is native, as "sm_89 and sm_120a", from the ISA table. */
static const char *native_targets(int family, char *buf, size_t size)
{
    int n = 0, total = 0;
    for (int a = 0; a < WB_ARCH_COUNT; a++)
        total += wb_isa_get((wb_arch)a, family) == WB_ISA_NATIVE;
    buf[0] = 0;
    for (int a = 0; a < WB_ARCH_COUNT; a++)
        if (wb_isa_get((wb_arch)a, family) == WB_ISA_NATIVE) {
            n++;
            snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", n == 1 ? "" : n == total ? " and " : ", ",
                     wb_arch_name((wb_arch)a));
        }
    return buf;
}

/* fp8 W8A8 runs on mma.sync m16n8k32 e4m3/e5m2 where that is native (one QMMA), and on wgmma where that
 * is (sm_90a, whose mma.sync fp8 wb_legalize refuses). Elsewhere ptxas either rejects the mma.sync or
 * expands it into f16 MMAs and conversions (sm_100a, sm_103a), which warble does not emit: the refusal
 * names the target's native fp8 instruction, not built yet, instead. */
static wb_status legalize_fp8_target(const wb_format *f, const wb_target *t)
{
    static const int fp8[] = {WB_ISA_TC05_F8F6F4, WB_ISA_WGMMA_FP8, -1};
    char an[8], wn[8], where[64];
    if (wb_isa_get(t->arch, WB_ISA_MMA_FP8) == WB_ISA_NATIVE || wb_isa_get(t->arch, WB_ISA_WGMMA_FP8) == WB_ISA_NATIVE)
        return WB_OK;
    wb_type_name(f->a, an);
    wb_type_name(f->w, wn);
    int native = wb_isa_pick(t->arch, fp8, NULL);
    if (native >= 0)
        return wb_fail(WB_ERR_UNSUPPORTED, "a=%s with w=%s runs on %s only with --mma tcgen05: %s (its native fp8 "
                                           "MMA) is built but has not run on that GPU yet, and %s is only emulated "
                                           "there (mma.sync fp8 runs on %s)", an, wn, t->name, wb_isa_name(native),
                       wb_isa_name(WB_ISA_MMA_FP8), native_targets(WB_ISA_MMA_FP8, where, sizeof where));
    return wb_fail(WB_ERR_UNSUPPORTED, "%s has no fp8 MMA: a=%s with w=%s needs %s, native on %s", t->name, an, wn,
                   wb_isa_name(WB_ISA_MMA_FP8), native_targets(WB_ISA_MMA_FP8, where, sizeof where));
}

/* W8A8 (a=s8 with w=int8 or int4, or e4m3/e5m2 with e4m3/e5m2 or int4): f32 scales per token or per
 * token and group of K, per output channel or per block of channels and K; no zero point. Scales per
 * channel and token are applied after K; group scales to each slice's product. */
static wb_status legalize_w8a8(const wb_format *f, const wb_target *t, int tc)
{
    char ab[8], wn[8], tn[8];
    const char *an = wb_format_act_name(f->a, ab);
    wb_type_name(f->w, wn);
    /* tcgen05 (--mma tcgen05) has its own fp8 kind, checked in wb_legalize */
    wb_status s = wb_format_w8a8_fp8(f) && !tc ? legalize_fp8_target(f, t) : WB_OK;
    if (s)
        return s;
    /* scales per group along K (weights: g, activations: ag) of a multiple of 128: a slice (k64, or
     * k128 on wgmma) then lies in one group of each, and its product is scaled once */
    if (f->ags || f->as.kind != WB_KIND_F32 || f->ag % 128)
        return wb_fail(WB_ERR_UNSUPPORTED, "a=%s is supported with f32 scales per token (ag=0) or per token and "
                                           "group of a multiple of 128 along K (as=f32, ags=0) in this build "
                                           "(got ag=%d)", an, f->ag);
    if (f->ws.kind != WB_KIND_F32 || f->g % 128 || f->wgs || f->zp != WB_ZP_NONE || (!f->g && f->gn != 1))
        return wb_fail(WB_ERR_UNSUPPORTED, "a=%s with w=%s is supported with f32 weight scales per output channel "
                       "(g=0) or per block of gn channels x g along K, g a multiple of 128 (ws=f32, wgs=0, "
                       "zp=none) in this build", an, wn);
    if (f->acc.kind != WB_KIND_F32 || !is16(f->out))
        return wb_fail(WB_ERR_UNSUPPORTED, "a=%s needs acc=f32 and out=f16 or bf16 (got acc=%s, out=%s)", an,
                       wb_type_name(f->acc, wn), wb_type_name(f->out, tn));
    if (f->out.kind == WB_KIND_BF16 && !(t->features & WB_FEAT_BF16))
        return wb_fail(WB_ERR_UNSUPPORTED, "%s has no bf16 conversions: out=bf16 needs sm_80 or newer (a=%s with "
                                           "out=f16 runs on %s)", t->name, an, t->name);
    return WB_OK;
}

/* fp4 activations (a=e2m1): an 8-bit block scale per token and group of a power of two from 16 up
 * along K (or per token), e4m3 (NVFP4) or e8m0 (MX), so that each dequantized activation is exact in
 * the compute type; a warp's word of 8 codes (k 8 tig .. + 7 of a k32 half) lies in one group. The
 * weights are any 16-bit kernel format. */
static wb_status legalize_fp4_acts(const wb_format *f)
{
    char sn[8];
    if (f->as.kind != WB_KIND_E8M0 && !(f->as.kind == WB_KIND_FLOAT && f->as.ebits == 4 && f->as.mbits == 3))
        return wb_fail(WB_ERR_UNSUPPORTED, "a=e2m1 needs as=e4m3 (NVFP4) or as=e8m0 (MX) in this build, whose "
                                           "products with the codes are exact in f16/bf16 (got as=%s)",
                       wb_type_name(f->as, sn));
    if (f->ag && (f->ag < 16 || (f->ag & (f->ag - 1))))
        return wb_fail(WB_ERR_UNSUPPORTED, "a=e2m1 needs ag=0 or a power of two from 16 up (got ag=%d)", f->ag);
    return WB_OK;
}

/* The format's own rules on target t; tc: for the tcgen05 kernel (whose fp8 kind wb_legalize checks). */
static wb_status legalize_format(const wb_format *f, const wb_target *t, int tc)
{
    char tn[8];
    if (wb_format_w8a8(f))
        return legalize_w8a8(f, t, tc);
    wb_status fs = wb_format_fp4_acts(f) ? legalize_fp4_acts(f) : WB_OK;
    if (fs)
        return fs;
    wb_type T = wb_format_compute(f); /* the type the MMA multiplies */
    if (!is16(T))
        return refuse_quantized_acts(f, t);
    if (f->w.kind != WB_KIND_INT && f->w.kind != WB_KIND_UINT && f->w.kind != WB_KIND_FLOAT &&
        f->w.kind != WB_KIND_TABLE)
        return wb_fail(WB_ERR_UNSUPPORTED, "w=%s is not supported by this build yet (intB, uintB, eXmY, nf4 and "
                                           "lut4 are)", wb_type_name(f->w, tn));
    if (f->w.kind == WB_KIND_FLOAT && T.kind == WB_KIND_F16 && f->w.ebits == 5 && f->w.mbits != 2)
        return wb_fail(WB_ERR_UNSUPPORTED, "w=%s with a=f16 is not supported: its codes with exponent 31 exceed the "
                                           "f16 range (use a=bf16)", wb_type_name(f->w, tn));
    if (f->g != 0 && f->g != 16 && f->g != 32 && f->g % WB_KW)
        return wb_fail(WB_ERR_UNSUPPORTED, "g=%d is not supported by this build (0, 16, 32, or a multiple of 64)",
                       f->g);
    if (f->acc.kind != WB_KIND_F32)
        return wb_fail(WB_ERR_UNSUPPORTED, "acc=f16 is not supported by this build (acc=f32)");
    if (!is16(f->out))
        return wb_fail(WB_ERR_UNSUPPORTED, "out must be f16 or bf16");
    /* scales of every type are converted to the compute type when packing: only a and out matter here */
    if ((T.kind == WB_KIND_BF16 || f->out.kind == WB_KIND_BF16) && !(t->features & WB_FEAT_BF16))
        return wb_fail(WB_ERR_UNSUPPORTED, "%s has no bf16 MMA or bf16 conversions: bf16 needs sm_80 or newer%s",
                       t->name, T.kind == WB_KIND_BF16 && !is16(f->a) ? " (a=e2m1 multiplies in bf16 with e8m0 or "
                                                                       "bf16 scales)" : "");
    return WB_OK;
}

wb_status wb_legalize_format(const wb_format *f, const wb_target *t) { return legalize_format(f, t, 0); }

static int pow2_in(int v, int lo, int hi) { return v >= lo && v <= hi && (v & (v - 1)) == 0; }

wb_status wb_legalize_k_slices(const wb_config *c)
{
    if (c->k_slices < 0 || c->k_slices > 4 || c->k_slices == 3)
        return wb_fail(WB_ERR_UNSUPPORTED, "k_slices must be 1, 2 or 4 (got %d)", c->k_slices);
    return WB_OK;
}

int wb_k_slices_share_scales(const wb_format *f, int k_slices)
{
    int span = WB_KW * k_slices;
    return f->g % span == 0 && f->ag % span == 0;
}

int wb_gemv_applies(const wb_format *f, const wb_config *c)
{
    return c->mma == WB_MMA_SYNC && c->m_tiles == 1 && !c->batch_invariant && f->a.kind == WB_KIND_F16 &&
           f->w.kind == WB_KIND_INT && wb_gemm_scales_products(f, c) && wb_dequant_raw(f, 1);
}

wb_status wb_legalize(const wb_format *f, const wb_target *t, const wb_config *c)
{
    wb_status s = legalize_format(f, t, c->mma == WB_MMA_TCGEN05);
    if (s)
        return s;
    if (wb_format_w8a8_fp8(f) && c->mma == WB_MMA_SYNC && wb_isa_get(t->arch, WB_ISA_MMA_FP8) != WB_ISA_NATIVE &&
        !wb_w4a8_f16(f, t->arch))
        return wb_fail(WB_ERR_UNSUPPORTED, "%s is only emulated on %s (f16 MMAs and conversions): its fp8 kernel is "
                                           "wgmma (--mma wgmma, the default there)", wb_isa_name(WB_ISA_MMA_FP8),
                       t->name);
    if (wb_format_fp4_acts(f) && c->load == WB_LOAD_TMA)
        return wb_fail(WB_ERR_UNSUPPORTED, "a=e2m1 activations are loaded by cp.async in this build (--load tma "
                                           "copies 16-bit and 8-bit activations only)");
    if (c->mma == WB_MMA_TCGEN05 && !(t->features & WB_FEAT_TCGEN05))
        return wb_fail(WB_ERR_UNSUPPORTED, "%s has no tcgen05 (sm_100a and sm_103a only)", t->name);
    if (c->mma == WB_MMA_TCGEN05 && wb_format_w4a4(f))
        return wb_fail(WB_ERR_UNSUPPORTED, "--mma tcgen05 is built for 16-bit activations and e2m1 ones (NVFP4 x "
                                           "NVFP4 and MXFP4 x MXFP4 on kind::mxf4nvf4 / kind::mxf4, other e2m1 "
                                           "formats made 16-bit for kind::f16) and 8-bit ones (kind::i8, "
                                           "kind::f8f6f4) in this build; s4 activations run on mma.sync there");
    if (c->mma == WB_MMA_TCGEN05 && wb_format_w8a8(f)) {
        /* s8 x s8 without kind::i8 (sm_103a): both operands widened to f16 on kind::f16 (lower_tcgen05.c) */
        int fp8 = wb_format_w8a8_fp8(f), kind = fp8 ? WB_ISA_TC05_F8F6F4 : WB_ISA_TC05_I8;
        if (wb_isa_get(t->arch, kind) != WB_ISA_NATIVE && (fp8 || wb_isa_get(t->arch, WB_ISA_TC05_F16) != WB_ISA_NATIVE))
            return wb_fail(WB_ERR_UNSUPPORTED, "%s has no %s", t->name, wb_isa_name(kind));
        if ((f->g || f->ag) && c->m_tiles > 16)
            return wb_fail(WB_ERR_UNSUPPORTED, "--mma tcgen05 with scales per group along K (g=%d, ag=%d) needs m_tiles "
                                               "16 or fewer (each thread holds the f32 sums of half the block's "
                                               "tokens; got %d)", f->g, f->ag, c->m_tiles);
    }
    if (wb_format_w4a4(f) && c->mma != WB_MMA_SYNC)
        return wb_fail(WB_ERR_UNSUPPORTED, "W4A4 (a=s4, w=int4) runs on mma.sync (the native s4 MMA, or s8 with both "
                                           "operands widened in registers); --mma %s reads the activations from "
                                           "shared memory, where they are s4", wb_mma_name(c->mma));
    /* 192-token tiles (wgmma N = 192): the TMA pipeline's only width that is not a power of two; per-channel
     * W8A8 takes it too, with one slice product set (fp8 weights by descriptor: no late loop,
     * lower_gemm.c; int4 widened: the A registers' pp loop) */
    int tiles192 = c->m_tiles == 24 && c->load == WB_LOAD_TMA;
    if (wb_format_w8a8(f) && c->mma == WB_MMA_WGMMA && c->m_tiles > wb_format_w8a8_max_mtiles(f) &&
        !(tiles192 && !f->g && !f->ag))
        return wb_fail(WB_ERR_UNSUPPORTED, "%s on wgmma needs m_tiles %d or fewer (its registers hold the f32 sums "
                                           "and each k128 slice's product%s; got %d)%s",
                       f->ag ? "W8A8 with activation groups" : wb_format_w8a8_fp8(f) ? "fp8" : "W8A8 with weight groups",
                       wb_format_w8a8_max_mtiles(f), f->ag ? ", and the slice's token scales" : "", c->m_tiles,
                       !f->g && !f->ag ? ", or 24 on the TMA pipeline" : "");
    if (c->mma == WB_MMA_WGMMA && !(t->features & WB_FEAT_WGMMA))
        return wb_fail(WB_ERR_UNSUPPORTED, "%s has no wgmma (sm_90a only)", t->name);
    if (c->persistent && c->load != WB_LOAD_TMA)
        return wb_fail(WB_ERR_UNSUPPORTED, "--persistent is built for the TMA pipeline (--load tma) in this build");
    if (c->cluster < 0 || c->cluster == 3 || c->cluster > 4)
        return wb_fail(WB_ERR_UNSUPPORTED, "--cluster must be 1, 2 or 4 (got %d)", c->cluster);
    if (c->cluster > 1 && c->load != WB_LOAD_TMA)
        return wb_fail(WB_ERR_UNSUPPORTED, "--cluster %d is built for the TMA pipeline (--load tma) in this build",
                       c->cluster);
    if (c->cluster > 1 && c->m_tiles % 2) /* each block copies half the activation tile: whole 8-row swizzle atoms */
        return wb_fail(WB_ERR_UNSUPPORTED, "--cluster %d needs an even m_tiles (each block of a pair copies half of "
                                           "the activation tile's %d rows; got m_tiles %d)", c->cluster,
                       8 * c->m_tiles, c->m_tiles);
    if (c->cluster == 4 && (c->persistent || c->warps_n % 2))
        return wb_fail(WB_ERR_UNSUPPORTED, "--cluster 4 is built without --persistent, for an even warps_n (each "
                                           "block of a pair copies half of the weight tile's warp slices), in this "
                                           "build");
    if (c->split_k < 0 || c->split_k > 2)
        return wb_fail(WB_ERR_UNSUPPORTED, "--split-k must be 1 or 2 (got %d)", c->split_k);
    if (c->split_k == 2 && !(t->features & WB_FEAT_CLUSTER))
        return wb_fail(WB_ERR_UNSUPPORTED, "--split-k 2 pairs blocks in a thread block cluster, which %s does not "
                                           "have (sm_90 and newer)", t->name);
    if (c->split_k == 2 && (c->mma == WB_MMA_TCGEN05 || c->persistent || c->cluster > 1))
        return wb_fail(WB_ERR_UNSUPPORTED, "--split-k 2 is built for the wgmma and mma.sync kernels, without "
                                           "--persistent or --cluster 2 or 4, in this build");
    if (c->split_k == 2 && ((wb_format_w8a8(f) && (f->g || f->ag)) || wb_format_fp4_acts(f)))
        return wb_fail(WB_ERR_UNSUPPORTED, "--split-k 2 is not built for %s in this build (their scales are "
                                           "loaded by K position in the loop)",
                       wb_format_fp4_acts(f) ? "fp4 activations" : "W8A8 with groups along K");
    if (c->gemv < -1 || c->gemv > 1)
        return wb_fail(WB_ERR_UNSUPPORTED, "gemv must be -1 (off), 0 (warble's choice) or 1 (got %d)", c->gemv);
    if (c->gemv > 0 && !wb_gemv_applies(f, c))
        return wb_fail(WB_ERR_UNSUPPORTED, "--gemv is built for signed 2- and 3-bit integer weights without zero "
                                           "points (w=int2, w=int3), f16 activations and scale groups of 32 or a "
                                           "multiple of 64, on mma.sync with m_tiles 1 and without "
                                           "--batch-invariant; elsewhere the one-token-tile kernel is the same");
    if (c->batch_invariant && c->mma != WB_MMA_SYNC)
        return wb_fail(WB_ERR_UNSUPPORTED, "batch-invariant mode uses mma.sync (one instruction and one split-K "
                                           "at every M); got --mma %s", wb_mma_name(c->mma));
    if (c->mma != WB_MMA_SYNC && c->mma != WB_MMA_WGMMA && c->mma != WB_MMA_TCGEN05)
        return wb_fail(WB_ERR_UNSUPPORTED, "--mma %s is not implemented in this build (mma.sync, wgmma, tcgen05)",
                       wb_mma_name(c->mma));
    if (c->mma == WB_MMA_TCGEN05) {
        if (c->load != WB_LOAD_CP_ASYNC)
            return wb_fail(WB_ERR_UNSUPPORTED, "--mma tcgen05 needs --load cp.async (got %s)", wb_load_name(c->load));
        if (c->stages < 3)
            return wb_fail(WB_ERR_UNSUPPORTED, "--mma tcgen05 needs 3 or more stages (the MMAs of one tile read "
                                               "a stage while the next is dequantized and another fills; got %d)",
                           c->stages);
        if (c->warps_n != 8 || c->warps_k != 1)
            return wb_fail(WB_ERR_UNSUPPORTED, "--mma tcgen05 needs warps_n 8 and warps_k 1 (128 channels a block: "
                                               "the MMA's M; got %d x %d)", c->warps_n, c->warps_k);
        if (!pow2_in(c->m_tiles, 2, 32))
            return wb_fail(WB_ERR_UNSUPPORTED, "--mma tcgen05 needs m_tiles 2, 4, 8, 16 or 32 (the MMA's N = 16 to "
                                               "256 tokens; got %d)", c->m_tiles);
    } else if (c->mma == WB_MMA_WGMMA) {
        if (c->load != WB_LOAD_CP_ASYNC && c->load != WB_LOAD_TMA)
            return wb_fail(WB_ERR_UNSUPPORTED, "--mma wgmma needs --load cp.async or tma (got %s)",
                           wb_load_name(c->load));
        if (c->stages < 3)
            return wb_fail(WB_ERR_UNSUPPORTED, "--mma wgmma needs 3 or more stages (a group in flight reads "
                                               "one stage while the copies fill another; got %d)", c->stages);
        if ((c->warps_n != 4 && c->warps_n != 8) || !pow2_in(c->warps_k, 1, 4) || c->warps_n * c->warps_k > 16)
            return wb_fail(WB_ERR_UNSUPPORTED, "--mma wgmma needs warps_n 4 or 8 (warpgroups of 64 channels) and "
                                               "warps_k 1, 2 or 4 (warpgroups splitting K), at most 16 warps; "
                                               "got %d x %d", c->warps_n, c->warps_k);
        if (c->load == WB_LOAD_TMA && (c->warps_k != 1 || wb_config_ks(c) != 1))
            return wb_fail(WB_ERR_UNSUPPORTED, "--load tma copies one slice per stage: it needs warps_k 1 and "
                                               "k_slices 1 (got %d and %d)", c->warps_k, wb_config_ks(c));
        if (!pow2_in(c->m_tiles, 1, 32) && !tiles192)
            return wb_fail(WB_ERR_UNSUPPORTED, "--mma wgmma needs m_tiles 1, 2, 4, 8, 16 or 32 (wgmma N = 8 to "
                                               "256 tokens), or 24 on the TMA pipeline; got %d", c->m_tiles);
    } else if (!pow2_in(c->m_tiles, 1, 8)) {
        return wb_fail(WB_ERR_UNSUPPORTED, "m_tiles must be 1, 2, 4 or 8 (got %d)", c->m_tiles);
    }
    if (c->load == WB_LOAD_TMA && !(t->features & WB_FEAT_TMA))
        return wb_fail(WB_ERR_UNSUPPORTED, "%s has no TMA (sm_90a and newer)", t->name);
    if (c->load == WB_LOAD_CP_ASYNC && !(t->features & WB_FEAT_CP_ASYNC))
        return wb_fail(WB_ERR_UNSUPPORTED, "%s has no cp.async (sm_80 and newer): use --load ldg", t->name);
    if (c->load == WB_LOAD_TMA && c->mma != WB_MMA_WGMMA)
        return wb_fail(WB_ERR_UNSUPPORTED, "--load tma is built for the wgmma kernel only (use --mma wgmma)");
    if (c->load != WB_LOAD_CP_ASYNC && c->load != WB_LOAD_LDG && c->load != WB_LOAD_TMA)
        return wb_fail(WB_ERR_UNSUPPORTED, "--load %s is not implemented in this build yet (ldg, cp.async, tma)",
                       wb_load_name(c->load));
    if ((c->load == WB_LOAD_CP_ASYNC || c->load == WB_LOAD_TMA) && (c->stages < 2 || c->stages > 8))
        return wb_fail(WB_ERR_UNSUPPORTED, "--load cp.async needs 2..8 stages (got %d)", c->stages);
    if (c->load == WB_LOAD_LDG && c->stages != 1)
        return wb_fail(WB_ERR_UNSUPPORTED, "--load ldg uses one stage (got %d)", c->stages);
    if (!pow2_in(c->warps_n, 1, 8) || !pow2_in(c->warps_k, 1, 16) || c->warps_n * c->warps_k > 16)
        return wb_fail(WB_ERR_UNSUPPORTED, "warps_n must be 1, 2, 4 or 8 and warps_k 1, 2, 4, 8 or 16, with at "
                                           "most 16 warps (got %d x %d)", c->warps_n, c->warps_k);
    wb_status ks = wb_legalize_k_slices(c);
    if (ks)
        return ks;
    int acts = !wb_format_w8a8(f) ? !wb_format_fp4_acts(f) : f->a.bits == 8; /* 16-bit, or 8-bit */
    if (c->k_slices > 1 && (c->mma != WB_MMA_SYNC || !acts))
        return wb_fail(WB_ERR_UNSUPPORTED, "k_slices > 1 is built for the mma.sync kernel with 16-bit activations, "
                                           "or 8-bit ones (got %d)", c->k_slices);
    /* 8-bit activations: the scales of a group along K (g, ag) are loaded once a tile for all the warp's
     * slices, and their product is scaled once, so the slices must lie in one group of each */
    if (c->k_slices > 1 && wb_format_w8a8(f) && !wb_k_slices_share_scales(f, c->k_slices))
        return wb_fail(WB_ERR_UNSUPPORTED, "k_slices %d gives a warp %d k of each stage under one set of scales: "
                                           "8-bit activations need scale groups along K that are multiples of it "
                                           "(g=%d, ag=%d)", c->k_slices, WB_KW * c->k_slices, f->g, f->ag);
    wb_layout lay;
    wb_layout_get(f, c, t->arch, &lay);
    if (c->load == WB_LOAD_TMA && lay.split_bytes > lay.mbar_off)
        return wb_fail(WB_ERR_UNSUPPORTED, "--split-k 2 receives the other block's sums (%d bytes) over the stages "
                                           "(%d bytes): more stages or fewer m_tiles", lay.split_bytes, lay.mbar_off);
    if (wb_layout_copy_slots(&lay) > WB_MAX_COPY_SLOTS)
        return wb_fail(WB_ERR_UNSUPPORTED, "this config copies %d 16-byte pieces of a tile per thread and stage; "
                                           "at most %d (fewer m_tiles or k_slices, or more warps)",
                       wb_layout_copy_slots(&lay), WB_MAX_COPY_SLOTS);
    if (lay.smem > t->smem_max)
        return wb_fail(WB_ERR_UNSUPPORTED, "this config needs %d bytes of shared memory; %s has %d",
                       lay.smem, t->name, t->smem_max);
    return WB_OK;
}
