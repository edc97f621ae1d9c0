/* The MMAs of the GEMM lowering: a warp's slice of fragments (lower_gemm.c) into its sums. mma.sync
 * by operand kinds (f16 and bf16 k16 steps, the s8 and s4 integer steps, fp8 k32, W4A8's operands
 * widened to f16), wgmma (lower_wgmma.c) and tcgen05 (lower_tcgen05.c) where the kernel runs them,
 * gemv's token sums, and the scaled-product forms: each scale group's or slice's product promoted
 * into the f32 sums (W8A8 slice scales, the raw rule's groups). */
#include <math.h>

#include "lower/isa.h"
#include "lower/gemm_lower.h"

/* Slice-scaled W8A8 (L->grouped): each slice's product is multiplied, element by element, by factors
 * that may change from slice to slice before it goes into the f32 sums: the weight scales of channels
 * gid and gid + 8 (g > 0: p_scale, [K/g][N] f32) and the activation scales of the thread's 2 x m_tiles
 * tokens (ag > 0: p_ascale, [M][K/ag] f32). A slice lies in one group of each (g and ag are multiples
 * of 128). The registers: [0, 1] the weight scales when g > 0, then token mt * 2 + j. */
static int slice_scale_count(const lw *L)
{
    return (L->fmt->g ? 2 : 0) + (L->fmt->ag ? 2 * L->cfg->m_tiles : 0);
}

wb_reg *wb_gemm_new_slice_scales(lw *L)
{
    int n = slice_scale_count(L);
    wb_reg *s = wb_arena_alloc(L->f->arena, (size_t)n * sizeof *s);
    for (int i = 0; s && i < n; i++)
        s[i] = wb_new_reg(L->f, WB_RC_F32);
    L->f->oom |= !s;
    return s;
}

/* Load the factors of this thread's slice of block tile kt into s (with k_slices, of the warp's first
 * slice: legalize keeps its slices in one group); only where `pred` holds when it is a register (a
 * tile past K has none), and only for tokens below M. */
void wb_gemm_slice_scales(lw *L, wb_reg kt, const wb_reg *s, wb_reg pred)
{
    int nw = L->fmt->g ? 2 : 0;
    wb_reg slice = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(kt), wb_imm(L->cfg->warps_k * L->lay.ks), wb_r(L->vwk));
    wb_reg k0 = muli(L, slice, L->lay.slice_k);
    if (nw) {
        wb_reg ch = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(add(L, L->strip0, L->wn)), wb_imm(16), wb_r(L->gid));
        wb_reg idx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(divi(L, k0, L->fmt->g)), wb_r(L->n), wb_r(ch));
        for (int h = 0; h < 2; h++) {
            wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(s[h]), wb_r(addr64(L, L->s, addi(L, idx, 8 * h), 4)));
            if (pred.id >= 0)
                wb_guard_last(L->f, pred, 0);
        }
    }
    if (!L->fmt->ag)
        return;
    wb_reg gi = divi(L, k0, L->fmt->ag);
    for (int i = 0; i < 2 * L->cfg->m_tiles; i++) {
        wb_reg tok = addi(L, L->tok0, (i >> 1) * 8 + (i & 1));
        wb_reg in = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(in), wb_r(tok), wb_r(L->m));
        if (pred.id >= 0)
            wb_emit(L->f, WB_OP_AND, "pred", 3, wb_r(in), wb_r(in), wb_r(pred));
        wb_reg idx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(tok), wb_r(L->kag), wb_r(gi));
        wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(s[nw + i]), wb_r(addr64(L, L->ascale, idx, 4)));
        wb_guard_last(L->f, in, 0);
    }
}

/* c (f32) += factors x part (s32, or f32 from the fp8 MMA): element i of m-tile mt is channel gid
 * (i < 2) or gid + 8, token mt * 8 + 2 tig + (i & 1). */
void wb_gemm_scale_part(lw *L, wb_reg *c, const wb_reg *part, const wb_reg *s)
{
    int nw = L->fmt->g ? 2 : 0;
    for (int e = 0; e < L->cfg->m_tiles * 4; e++) {
        int h = (e & 3) >> 1, tok = (e >> 2) * 2 + (e & 1);
        wb_reg f = !L->fmt->ag ? s[h]
                 : !nw         ? s[tok]
                               : op2(L, WB_OP_MUL_F32, NULL, WB_RC_F32, wb_r(s[h]), wb_r(s[nw + tok]));
        wb_emit(L->f, WB_OP_FMA_X2, "f32", 4, wb_r(c[e]),
                wb_r(L->a8_float ? part[e] : cvt(L, "rn.f32.s32", WB_RC_F32, part[e])), wb_r(f), wb_r(c[e]));
    }
}

/* The tile value of the f32 (or s32) sums, zeroed (tcgen05: they live in tensor memory). */
void wb_gemm_lower_acc(lw *L, int value)
{
    wb_reg *c = value_regs(L, value, L->cfg->m_tiles * 4);
    if (!c || L->tc) /* tcgen05: the sums live in tensor memory */
        return;
    for (int i = 0; i < L->cfg->m_tiles * 4; i++)
        c[i] = s32_sums(L) ? mov(L, "s32", WB_RC_B32, wb_imm(0)) : mov(L, "f32", WB_RC_F32, wb_f32(0.0f));
}

/* W8A8: c (s32) += a x b over the slice's two k32 steps: a = the lane's 8 code words (step * 4 + reg),
 * b[mt*4 + j] its activation chunks. m16n8k32 where the target has it; on sm_75 each m16n8k32 is four
 * m8n8k16: rows gid (c0, c1) take a0 x b0 then a2 x b1, rows gid + 8 (c2, c3) a1 x b0 then a3 x b1. */
static void mma_s8_steps(lw *L, wb_reg *c, const wb_reg *a, const wb_reg *b, const char *w4a4)
{
    int k32 = (L->t->features & WB_FEAT_MMA_K16) != 0;
    /* the annotated PTX says which integer MMA this target gets, and why not another */
    const char *why = !k32 ? "four mma.sync m8n8k16 s8 per k32 step: sm_75 has no m16n8k32"
                      : (L->t->features & WB_FEAT_WGMMA) && w4a4 ? "mma.sync m16n8k32 s8, native"
                      : (L->t->features & WB_FEAT_WGMMA) ? "mma.sync m16n8k32 s8, native (wgmma s8 is "
                                                           "the default above M = 64)"
                      : !(L->t->features & WB_FEAT_TCGEN05) ? "mma.sync m16n8k32 s8, native (the target's only integer MMA)"
                      : wb_isa_get(L->t->arch, WB_ISA_TC05_I8) == WB_ISA_NATIVE
                          ? "mma.sync m16n8k32 s8, native; tcgen05.mma kind::i8 with --mma tcgen05 (not yet run "
                            "on hardware)"
                          : "mma.sync m16n8k32 s8: the legacy INT8 path and the default, exact s32 sums, since this "
                            "target's tcgen05 has no kind::i8 (--mma tcgen05 widens both operands to f16 for "
                            "kind::f16: exact sums for K <= 1024, f32 rounding past that; not yet run on hardware)";
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1, wb_text(wb_arena_printf(L->f->arena, "mma rule: s8 x s8 -> s32, %s%s", why,
                                                                  w4a4 ? w4a4 : "")));
    for (int step = 0; step < 2; step++) {
        const wb_reg *w = &a[step * 4];
        for (int mt = 0; mt < L->cfg->m_tiles; mt++) {
            wb_reg *d = &c[mt * 4];
            const wb_reg *x = &b[mt * 4 + step * 2];
            if (k32) {
                wb_emit(L->f, WB_OP_MMA_S8_K32, NULL, 14, wb_r(d[0]), wb_r(d[1]), wb_r(d[2]), wb_r(d[3]),
                        wb_r(w[0]), wb_r(w[1]), wb_r(w[2]), wb_r(w[3]), wb_r(x[0]), wb_r(x[1]), wb_r(d[0]),
                        wb_r(d[1]), wb_r(d[2]), wb_r(d[3]));
                continue;
            }
            for (int rows = 0; rows < 2; rows++) /* rows gid, then gid + 8 */
                for (int half = 0; half < 2; half++) {
                    wb_reg *dd = &d[rows * 2];
                    wb_emit(L->f, WB_OP_MMA_S8_K16, NULL, 6, wb_r(dd[0]), wb_r(dd[1]), wb_r(w[half * 2 + rows]),
                            wb_r(x[half]), wb_r(dd[0]), wb_r(dd[1]));
                }
        }
    }
}

/* W4A4 where the target has a native s4 MMA: one m16n8k64 s4 per m-tile and slice (its A fragment is
 * the packed words as they are, its B the two ldmatrix words), or, on sm_75, two m8n8k32 s4 per k32
 * step (rows gid, then gid + 8). */
static void mma_s4_steps(lw *L, wb_reg *c, const wb_reg *a, const wb_reg *b)
{
    int k64 = wb_isa_get(L->t->arch, WB_ISA_MMA_S4) == WB_ISA_NATIVE;
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(k64 ? "mma rule: s4 x s4 -> s32, mma.sync m16n8k64 s4, native (one IMMA per m-tile and k64)"
                        : "mma rule: s4 x s4 -> s32, two mma.sync m8n8k32 s4 per k32 step: sm_75 has no m16n8k64"));
    for (int mt = 0; mt < L->cfg->m_tiles; mt++) {
        wb_reg *d = &c[mt * 4];
        const wb_reg *x = &b[mt * 2];
        if (k64) {
            wb_emit(L->f, WB_OP_MMA_S4_K64, NULL, 14, wb_r(d[0]), wb_r(d[1]), wb_r(d[2]), wb_r(d[3]), wb_r(a[0]),
                    wb_r(a[1]), wb_r(a[2]), wb_r(a[3]), wb_r(x[0]), wb_r(x[1]), wb_r(d[0]), wb_r(d[1]), wb_r(d[2]),
                    wb_r(d[3]));
            continue;
        }
        for (int step = 0; step < 2; step++)
            for (int rows = 0; rows < 2; rows++)
                wb_emit(L->f, WB_OP_MMA_S4_K32, NULL, 6, wb_r(d[rows * 2]), wb_r(d[rows * 2 + 1]),
                        wb_r(a[step * 2 + rows]), wb_r(x[step]), wb_r(d[rows * 2]), wb_r(d[rows * 2 + 1]));
    }
}

/* The integer MMAs of a slice: s8 x s8 (W8A8, W4A8 widened), W4A4 on the native s4 MMA, or W4A4 with
 * both operands widened to s8: a packed word's even and odd codes (k 8 tig + 0, 2, 4, 6 and + 1, 3,
 * 5, 7 of its k32 step) become the s8 registers of m16n8k32 k 4 tig + 0..3 and 16 + 4 tig + 0..3,
 * the same for weights and activations, so the k32 step's sum is unchanged. */
static void mma_int_steps(lw *L, wb_reg *c, const wb_reg *a, const wb_reg *b)
{
    if (!L->a4) {
        mma_s8_steps(L, c, a, b, NULL);
        return;
    }
    if (wb_isa_get(L->t->arch, WB_ISA_MMA_S4) == WB_ISA_NATIVE ||
        wb_isa_get(L->t->arch, WB_ISA_MMA_S4_K32) == WB_ISA_NATIVE) {
        mma_s4_steps(L, c, a, b);
        return;
    }
    int mt_n = L->cfg->m_tiles;
    wb_reg *wa = wb_arena_alloc(L->f->arena, 8 * sizeof *wa), *xb = wb_arena_alloc(L->f->arena, (size_t)mt_n * 4 * sizeof *xb);
    if (!wa || !xb) {
        L->f->oom = 1;
        return;
    }
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text("dequant rule: s4 -> s8 on both operands, byte = ((nibble ^ 8) + 0x78) ^ 0x80 (exact), a "
                    "word's even and odd codes to k 4 tig and 16 + 4 tig of its k32 step"));
    for (int step = 0; step < 2; step++)
        for (int rows = 0; rows < 2; rows++)
            wb_widen_s4(L, a[step * 2 + rows], &wa[step * 4 + rows], &wa[step * 4 + 2 + rows]);
    for (int mt = 0; mt < mt_n; mt++)
        for (int step = 0; step < 2; step++)
            wb_widen_s4(L, b[mt * 2 + step], &xb[mt * 4 + step * 2], &xb[mt * 4 + step * 2 + 1]);
    mma_s8_steps(L, c, wa, xb, "; s4 widened: the target's s4 MMA is emulated or absent");
}

/* fp8 W8A8: c (f32) += a x b over the slice's two k32 steps, with the registers of mma_s8_steps (the
 * m16n8k32 fragments place 8-bit codes alike whatever their type). A is the weights, so the instruction
 * names the weight type first: .f32.<w>.<a>.f32. The legalizer admits only targets where it is native. */
static void mma_fp8_steps(lw *L, wb_reg *c, const wb_reg *a, const wb_reg *b)
{
    char wb[8], at[8];
    const char *wt = wb_gemm_mma_w_type(L, wb);
    const char *types = wb_arena_printf(L->f->arena, "%s.%s", wt, wb_type_name(L->fmt->a, at));
    if (!types) {
        L->f->oom = 1;
        return;
    }
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(wb_arena_printf(L->f->arena, "mma rule: w=%s x a=%s -> f32, mma.sync m16n8k32 %s, native on %s "
                                                 "(one QMMA; never emitted where ptxas only emulates it)",
                                    wt, at, types, L->t->name)));
    for (int step = 0; step < 2; step++)
        for (int mt = 0; mt < L->cfg->m_tiles; mt++) {
            wb_reg *d = &c[mt * 4];
            const wb_reg *w = &a[step * 4], *x = &b[mt * 4 + step * 2];
            wb_emit(L->f, WB_OP_MMA_FP8, types, 14, wb_r(d[0]), wb_r(d[1]), wb_r(d[2]), wb_r(d[3]), wb_r(w[0]),
                    wb_r(w[1]), wb_r(w[2]), wb_r(w[3]), wb_r(x[0]), wb_r(x[1]), wb_r(d[0]), wb_r(d[1]), wb_r(d[2]),
                    wb_r(d[3]));
        }
}

/* One m16n8k16 MMA: d = a x b + in (a: the four A registers, b: the two B registers, side by side) */
static void mma_k16(lw *L, wb_reg *d, const wb_reg *a, const wb_reg *b, const wb_reg *in)
{
    wb_emit(L->f, WB_OP_MMA_K16, L->T, 14, wb_r(d[0]), wb_r(d[1]), wb_r(d[2]), wb_r(d[3]), wb_r(a[0]), wb_r(a[1]),
            wb_r(a[2]), wb_r(a[3]), wb_r(b[0]), wb_r(b[1]), wb_r(in[0]), wb_r(in[1]), wb_r(in[2]), wb_r(in[3]));
}

/* d = a x b over the slice's k16 steps [first, end) (mma.sync), starting from d, or from `zero` when
 * it is a register. */
static void mma_steps_in(lw *L, wb_reg *c, const wb_reg *a, const wb_reg *b, wb_reg zero, int first, int end)
{
    int k16 = (L->t->features & WB_FEAT_MMA_K16) != 0;
    for (int step = first; step < end; step++) {
        const wb_reg *w = &a[step * 4];
        for (int mt = 0; mt < L->cfg->m_tiles; mt++) {
            wb_reg *d = &c[mt * 4];
            const wb_reg *x = &b[(mt * 4 + step) * 2];
            for (int half = 0; half < 2 - k16; half++) {
                wb_reg in[4] = {d[0], d[1], d[2], d[3]};
                if (zero.id >= 0 && step == first && half == 0)
                    in[0] = in[1] = in[2] = in[3] = zero;
                if (k16)
                    mma_k16(L, d, w, x, in);
                else
                    wb_emit(L->f, WB_OP_MMA_K8, L->T, 11, wb_r(d[0]), wb_r(d[1]), wb_r(d[2]), wb_r(d[3]),
                            wb_r(w[half * 2]), wb_r(w[half * 2 + 1]), wb_r(x[half]), wb_r(in[0]), wb_r(in[1]),
                            wb_r(in[2]), wb_r(in[3]));
            }
        }
    }
}

/* W4A8 with fp8 activations on the f16 MMA (wb_w4a8_f16): c (f32) += the slice's int4 words q x its
 * 8-bit activation registers b8, both widened to f16 pairs (lower_widen.c), over four m16n8k16 steps. */
static void mma_f16_wide_steps(lw *L, wb_reg *c, const wb_reg *q, const wb_reg *b8)
{
    char an[8];
    wb_reg *a = wb_arena_alloc(L->f->arena, 16 * sizeof *a);
    wb_reg *b = wb_arena_alloc(L->f->arena, (size_t)L->cfg->m_tiles * 8 * sizeof *b);
    if (!a || !b) {
        L->f->oom = 1;
        return;
    }
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(wb_arena_printf(L->f->arena, "mma rule: w=int4 x a=%s -> f32 on mma.sync m16n8k16 f16, both "
                                                 "widened to f16 exactly (%s is only emulated on %s; its fp8 "
                                                 "wgmma is the kernel above M = 16)",
                                    wb_type_name(L->fmt->a, an), wb_isa_name(WB_ISA_MMA_FP8), L->t->name)));
    wb_widen_int4_f16(L, q, a);
    wb_widen_fp8_f16(L, b8, b);
    mma_steps_in(L, c, a, b, (wb_reg){-1}, 0, 4);
}

/* d = a x b over the slice's four k16 steps (mma.sync or wgmma). */
static void mma_steps(lw *L, wb_reg *c, const wb_reg *a, const wb_reg *b, wb_reg zero)
{
    if (L->wg)
        wb_wgmma_steps(L, c, a, b);
    else
        mma_steps_in(L, c, a, b, zero, 0, 4);
}

/* 8-bit activations on mma.sync over the slice: both operands widened to f16 (W4A8 with fp8
 * activations where fp8 mma.sync is emulated), the fp8 MMA, or the integer one. */
static void mma_w8a8_steps(lw *L, wb_reg *d, const wb_reg *a, const wb_reg *b)
{
    if (L->f16_wide)
        mma_f16_wide_steps(L, d, a, b);
    else if (L->a8_float)
        mma_fp8_steps(L, d, a, b);
    else
        mma_int_steps(L, d, a, b);
}

/* acc += weights x acts over the slice: wgmma, tcgen05 or the mma.sync steps of the operands' kinds. */
void wb_gemm_lower_mma(lw *L, int acc, int weights, int acts)
{
    wb_reg *c = L->vals[acc], *a = L->vals[weights], *b = L->vals[acts];
    if (c && b && L->ss) { /* the weight tile by descriptor, no A registers */
        wb_wgmma_steps(L, c, NULL, b);
        return;
    }
    if (c && a && b && L->pp) /* loaded (and widened) while the other half's group ran */
        a = L->abuf[L->half];
    else if (c && a && b && L->w8a8 && wb_type_w4(L->fmt->w) && !L->a4 && !L->f16_wide) {
        wb_reg *q = a;
        if ((a = wb_gemm_new_wide(L)))
            wb_gemm_widen4(L, q, a);
    }
    if (c && a && b && L->tc)
        wb_tc_mma(L, a, b);
    else if (c && a && b && L->w8a8 && L->wg)
        wb_wgmma_steps(L, c, a, b);
    else if (c && a && b && L->w8a8 && L->grouped) { /* the product of the warp's slices (one group), then its scales */
        int nacc = L->cfg->m_tiles * 4, first = L->sub == 0;
        wb_reg *part = first ? wb_arena_alloc(L->f->arena, (size_t)nacc * sizeof *part) : L->pend, *s2 = L->sscale;
        if (!part || !s2) {
            L->f->oom = 1;
            return;
        }
        for (int i = 0; i < nacc && first; i++)
            part[i] = L->a8_float ? mov(L, "f32", WB_RC_F32, wb_f32(0.0f)) : mov(L, "s32", WB_RC_B32, wb_imm(0));
        mma_w8a8_steps(L, part, a, b);
        if (L->sub + 1 < L->lay.ks) { /* the warp's next slice adds to it */
            L->pend = part;
            return;
        }
        wb_gemm_scale_part(L, c, part, s2);
        /* the next tile's factors into the same registers, unless it is past K */
        wb_reg next = addi(L, L->kt, 1), more = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(more), wb_r(next), wb_r(L->nkt));
        wb_gemm_slice_scales(L, next, s2, more);
    } else if (c && a && b && L->w8a8) /* (f16_wide: W4A8, a W8A8 format) */
        mma_w8a8_steps(L, c, a, b);
    else if (c && a && b)
        mma_steps(L, c, a, b, (wb_reg){-1});
}

/* gemv (M = 1): token 0's sum over each scale group of the warp's slices of the stage, into gsum.
 * Token 0's activations of two slices go to an MMA of ones as B's 8 columns of 16 k (one ldmatrix
 * reads them from the token's row of the tile: plan_frags), so that one MMA sums 128 k where the bias
 * MMAs took 16; lane tig of a quad then holds columns 2 tig and 2 tig + 1, a k32 piece, and the
 * quad's shuffles add the pieces of each group into lane 0, whose sums (column 0) are the token's. */
static void gemv_sums(lw *L)
{
    int ks = L->lay.ks, gpc = L->lay.groups_per_chunk, mmas = ks > 1 ? ks / 2 : 1;
    wb_reg b[4], ones[4], zero = mov(L, "f32", WB_RC_F32, wb_f32(0.0f)), addr = add(L, L->gemv_frag, L->ro);
    for (int i = 0; i < 4; i++) {
        b[i] = wb_new_reg(L->f, WB_RC_B32);
        ones[i] = i ? ones[0] : mov(L, "b32", WB_RC_B32, wb_hex(0x3C003C00u)); /* f16 1.0 pairs */
    }
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1, wb_text("gemv: the token's activation sums per scale group (bias x sum "
                                                  "comes off each group's product)"));
    if (mmas == 2)
        wb_emit(L->f, WB_OP_LDMATRIX_X4, NULL, 5, wb_r(b[0]), wb_r(b[1]), wb_r(b[2]), wb_r(b[3]), wb_r(addr));
    else
        wb_emit(L->f, WB_OP_LDMATRIX_X2, NULL, 3, wb_r(b[0]), wb_r(b[1]), wb_r(addr));
    for (int h = 0; h < mmas; h++) {
        wb_reg d[4];
        for (int i = 0; i < 4; i++)
            d[i] = wb_new_reg(L->f, WB_RC_F32);
        mma_steps_in(L, d, ones, &b[2 * h], zero, 0, 1);
        wb_reg v = op2(L, WB_OP_ADD_F32, NULL, WB_RC_F32, wb_r(d[0]), wb_r(d[1])); /* k32 piece 4h + tig */
        if (gpc == 2) { /* groups of 32: a piece each; lane 0 gathers pieces 1 to 3 of its quad */
            for (int p = 0; p < 4 && 2 * h + p / 2 < ks; p++)
                L->gsum[(2 * h + p / 2) * 2 + p % 2] =
                    p ? op2(L, WB_OP_SHFL_BFLY, NULL, WB_RC_F32, wb_r(v), wb_imm(p)) : v;
            continue;
        }
        wb_reg w = op2(L, WB_OP_SHFL_BFLY, NULL, WB_RC_F32, wb_r(v), wb_imm(1));
        w = op2(L, WB_OP_ADD_F32, NULL, WB_RC_F32, wb_r(v), wb_r(w)); /* slice 2h + tig / 2 */
        L->gsum[2 * h] = w;
        if (2 * h + 1 < ks)
            L->gsum[2 * h + 1] = op2(L, WB_OP_SHFL_BFLY, NULL, WB_RC_F32, wb_r(w), wb_imm(2));
    }
}

/* steps (L->steps): k16 steps 2j and 2j + 1 of [first, end) as two MMAs: registers 0 and 1 of both (k-low
 * halves; lifts 0 and 2) on their b0 registers into p, registers 2 and 3 (k-high; lifts 4 and 6) on
 * their b1 registers into q, so that no code field is shifted within its byte pair (b: lower_frag_a's
 * registers, in the order plan_frags gives them: b0 2j, b0 2j + 1, b1 2j, b1 2j + 1). */
static void mma_step_pairs(lw *L, wb_reg *p, wb_reg *q, const wb_reg *a, const wb_reg *b, wb_reg zero, int first,
                           int end)
{
    for (int j = first / 2; j < end / 2; j++)
        for (int hi = 0; hi < 2; hi++) {
            wb_reg *d = hi ? q : p, in[4] = {d[0], d[1], d[2], d[3]};
            const wb_reg *lo = &a[2 * j * 4 + 2 * hi], *up = &a[(2 * j + 1) * 4 + 2 * hi];
            const wb_reg w[4] = {lo[0], lo[1], up[0], up[1]};
            if (zero.id >= 0 && 2 * j == first)
                in[0] = in[1] = in[2] = in[3] = zero;
            mma_k16(L, d, w, &b[4 * j + 2 * hi], in);
        }
}

/* Each scale group's product (the slice, or its k32 halves) into a fresh f32 tile, then acc +=
 * scale * product, one fma per element: elements 0 and 1 of each m-tile are channel gid, 2 and 3
 * channel gid + 8; group gi's scales are s[gi * 4], s[gi * 4 + 1]. */
void wb_gemm_lower_mma_scaled(lw *L, int acc, int weights, int acts, int scales)
{
    wb_reg *c = L->vals[acc], *a = L->vals[weights], *b = L->vals[acts], *s = L->vals[scales];
    int nacc = L->cfg->m_tiles * 4, gpc = L->lay.groups_per_chunk;
    /* the raw rule's bias, signed codes: MMAs (A: the constant registers raw_zero) into their own tile
     * q, or in a gemv kernel, bias x the token's sum over the group (gemv_sums) */
    int bias = L->raw && L->fmt->w.kind == WB_KIND_INT, sums = bias && L->gemv;
    if (sums && L->sub == 0)
        gemv_sums(L);
    /* Slices 2j and 2j + 1 of a warp's stage lie in one scale group when groups span 128 k or more (and
     * per channel): the pair's products go into one f32 tile (and one q), summed and scaled once. Taken
     * by the raw rule, and by every kernel of two or more token tiles; at one token tile the registers it
     * frees let a wave's next kernel in beside it (w4a16 lost 3.6% on 28672 x 4096, docs/perf.md). */
    int paired = (L->raw || L->cfg->m_tiles > 1) && gpc == 1 && L->lay.ks % 2 == 0 && L->fmt->g % 128 == 0;
    int first = paired && L->sub % 2 == 0;
    int cont = paired && !first; /* adding to the previous slice's tiles */
    wb_reg *p = cont ? L->pend : wb_arena_alloc(L->f->arena, (size_t)nacc * 2 * sizeof *p), *q = p + nacc;
    if (!c || !a || !b || !s || !p) {
        L->f->oom |= !p;
        return;
    }
    wb_reg zero = mov(L, "f32", WB_RC_F32, wb_f32(0.0f)), none = {-1};
    for (int gi = 0; gi < gpc; gi++) {
        for (int i = 0; i < (bias || L->steps ? 2 : 1) * nacc && !cont; i++) /* q: the bias's, or steps' k-high */
            p[i] = wb_new_reg(L->f, WB_RC_F32);
        if (L->steps)
            mma_step_pairs(L, p, q, a, b, cont ? none : zero, gi * 4 / gpc, (gi + 1) * 4 / gpc);
        else
            mma_steps_in(L, p, a, b, cont ? none : zero, gi * 4 / gpc, (gi + 1) * 4 / gpc);
        if (bias && !sums)
            mma_steps_in(L, q, L->raw_zero, b, cont ? none : zero, gi * 4 / gpc, (gi + 1) * 4 / gpc);
        if (first) {
            L->pend = p;
            continue;
        }
        wb_reg gs = sums ? L->gsum[L->sub * gpc + gi] : none;
        if (sums && cont) /* the pair's two slices */
            gs = op2(L, WB_OP_ADD_F32, NULL, WB_RC_F32, wb_r(L->gsum[(L->sub - 1) * gpc + gi]), wb_r(gs));
        for (int i = 0; i < nacc; i++) {
            wb_reg sum = p[i];
            if (L->gemv && i % 2) /* gemv: elements 1 and 3 are token 2 tig + 1, never token 0 */
                continue;
            if (L->steps) /* the k-high MMAs' codes sat 2^4 higher */
                sum = op3(L, WB_OP_FMA_X2, "f32", WB_RC_F32, wb_r(q[i]), wb_f32(0.0625f), wb_r(p[i]));
            if (sums) { /* p - bias x sum x 2^(lift - 24), the sums' scale (lower_epilogue.c) */
                double k = -ldexp(1.0, L->fmt->w.bits - 1 + wb_dequant_raw_lift(L->fmt, (i & 3) >> 1) - 24);
                sum = op3(L, WB_OP_FMA_X2, "f32", WB_RC_F32, wb_r(gs), wb_f32((float)k), wb_r(sum));
            } else if (bias) {
                sum = op2(L, WB_OP_ADD_F32, NULL, WB_RC_F32, wb_r(p[i]), wb_r(q[i]));
            }
            wb_emit(L->f, WB_OP_FMA_X2, "f32", 4, wb_r(c[i]), wb_r(sum), wb_r(s[gi * 4 + ((i & 3) >> 1)]), wb_r(c[i]));
        }
    }
}
