/* The GEMM lowering's private state and emit helpers, shared by lower_gemm.c (the kernel: prologue,
 * fragments, the K loop), lower_copy.c (the copies), lower_mma.c (the slice's MMAs),
 * lower_epilogue.c (the sums to the output), lower_wgmma.c and lower_tma.c (what the wgmma path adds:
 * descriptors, wgmma groups, the rotated loop, TMA loads) and lower_tcgen05.c (tensor memory,
 * tcgen05.mma). Not installed; nothing else includes it. */
#ifndef WB_GEMM_LOWER_H
#define WB_GEMM_LOWER_H

#include "lower/lower.h"
#include "lower/layout.h"


typedef struct slot {
    wb_reg src;  /* u64 global address at kt = 0 */
    wb_reg dst;  /* u32 shared address in stage 0 */
    wb_reg pred; /* copy only when true; id -1 = always */
    wb_reg wk;   /* scale slots: the k64 chunk of the block tile this slot serves */
} slot;

typedef struct plan {
    int n;
    slot s[WB_MAX_COPY_SLOTS];
} plan;

typedef struct lw {
    wb_func *f;
    wb_kernel *k;
    const wb_target *t;
    const wb_format *fmt;
    const wb_config *cfg;
    wb_layout lay;
    const char *T;                     /* compute type: f16 or bf16 */
    wb_reg tid, lane, gid, tig, wn, wk;
    wb_reg vwk;                        /* wk * k_slices: the warp's first slice of a stage */
    int sub;                           /* the slice of the warp's k_slices being lowered (the K loop's
                                          body is lowered once per slice) */
    wb_reg out, a, w, s, chan;         /* global addresses */
    wb_reg m, n, kdim, m0, strip0, kchunks, ngroups, kt, nkt;
    wb_reg smem, ro, wo;               /* shared base, read / write stage offsets */
    wb_reg **vals;                     /* registers of each tile value */
    const char *loop_head;             /* label of the K loop */
    plan pa, pw, ps;                   /* this thread's copy slots of the A, W and scale tiles */
    int group_sync;                    /* the warps of one wk copy their slices of a stage and meet on a
                                          barrier of their own, gbar = 1 + wk (lower_kloop) */
    wb_reg gbar;
    wb_reg wfrag, sfrag, afrag[2];     /* fragment addresses in stage 0 */
    wb_reg wfrag_hi;                   /* 8-bit codes: the address of the lane's words 4..7 of its chunk 0
                                          (their 16-byte halves are swapped where gid is odd) */
    int scale_f32;                     /* scales go to an f32 product (mma_scaled), not to the weights */
    int raw;                           /* the raw dequant rule (wb_dequant_raw): lifted codes, the zero by
                                          a second MMA, sums times 2^(24 - lift) after K */
    wb_reg raw_zero[16];               /* raw, signed codes: the A registers of that second MMA, as a slice's */
    wb_reg *pend;                      /* mma_scaled: a slice's product that the next slice of its group adds to */
    int gemv;                          /* raw, signed codes, M = 1 (wb_config.gemv): the bias through the
                                          token's activation sums (gemv_sums) */
    int steps;                         /* gemv, 2-bit codes, m16n8k16: k16 steps 2j and 2j + 1 share two MMAs,
                                          one of their k-low registers (lifts 0, 2), one of their k-high ones
                                          (lifts 4, 6; mma_step_pairs) */
    wb_reg gemv_frag;                  /* gemv: the lane's ldmatrix address of token 0's k16 chunks in stage 0 */
    wb_reg gsum[8];                    /* gemv: the token's sum over scale group gi of slice j, at j * gpc + gi */
    int w8a8;                          /* 8-bit codes x 8-bit codes on the MMA itself (wb_format_w8a8) */
    int a8_float;                      /* w8a8 on fp8 codes: the fp8 MMA and f32 sums (else s8, s32 sums) */
    int w4_f8;                         /* 4-bit weights on the fp8 MMA: widened to e4m3 codes */
    int f16_wide;                      /* W4A8 with fp8 activations on the f16 mma.sync (wb_w4a8_f16): both
                                          operands widened to f16 pairs (w4_f8 is then 0) */
    int a4;                            /* W4A4 (wb_format_w4a4): s4 activations, two codes to a byte */
    int afp4;                          /* fp4 activations (wb_format_fp4_acts): e2m1 codes two to a byte,
                                          dequantized in registers (lower_act4.c) */
    wb_reg arow, aglobal;              /* afp4: scale bytes per token (K / ag, or 1); the ags pointer */
    struct act4 *act4;                 /* afp4: this thread's conversion items (lower_act4.c) */
    float w4_factor;                   /* what the widened weights' sums are multiplied by after K */
    int grouped;                       /* w8a8 with f32 scales per group along K of the weights (g) or
                                          the activations (ag): each slice's product (s32, or f32 on
                                          fp8), scaled, goes into f32 sums */
    wb_reg *sscale;                    /* grouped on wgmma: the slice's factors (wb_gemm_slice_scales) */
    wb_reg kag, tok0;                  /* ag > 0: K / ag, and the thread's first token m0 + 2 tig */
    wb_reg ascale;                     /* w8a8: the f32 scale of each token (p_ascale); afp4: the 8-bit
                                          scale codes, M x K/ag */
    int wg;                            /* lower MMA to wgmma */
    wb_reg ptrue, desc_hi;             /* wgmma: scale-d predicate, high word of the B descriptors */
    wb_reg pfalse, *part, *vals_acc;   /* wgmma with slice sums (fp8, grouped): scale-d of a slice's
                                          first step, the slice's product (f32, or s32 when grouped),
                                          the f32 sums it goes into (promote) */
    int tma;                           /* the warp-specialized pipeline: a producer warpgroup copies every
                                          tile (TMA, bulk copies), stages handed over by mbarriers
                                          (lower_tma.c) */
    wb_reg tmap, elected, mbar, lead;  /* tma: the map's generic address, thread 0, the first mbarrier, a
                                          consumer warp's lane 0 */
    wb_reg rbar, rpar, relbar;         /* tma, a consumer: the read stage's full mbarrier and the parity of
                                          its use (both stepped with L->ro: wb_tma_next_stage), the empty
                                          mbarrier of the tile it releases next */
    int persist;                       /* cfg.persistent: the block walks the output tiles (lower_tma.c) */
    int cluster;                       /* cfg.cluster 2: a pair of blocks on neighbouring channel tiles
                                          sharing the activation tile by TMA multicast (lower_tma.c) */
    int ksplit;                        /* cfg.split_k 2: a pair of blocks on one output tile, each taking half
                                          of K, summed through distributed shared memory (wb_gemm_split_sum) */
    wb_reg crank, peer;                /* cluster, ksplit: this block's rank in its pair, the other's
                                          (quad: in its cluster of four; peer: its channel neighbour) */
    int quad;                          /* cluster 4: two channel tiles x two token tiles */
    wb_reg chalf, thalf, tpeer;        /* quad: the block's channel tile and token tile in the quad (0, 1),
                                          its token neighbour's rank; cluster 2: chalf is crank */
    wb_reg kofs;                       /* ksplit with TMA loads: the first activation column of this block's
                                          half of K (-1: none) */
    wb_reg tile, ntiles;               /* persist: the block's tile (raster order), the tile count */
    const char *tile_head;             /* persist: the consumers' loop over output tiles */
    int rot;                           /* wgmma with the rotated loop (wb_wgmma_kloop_end) */
    int wpre_value;                    /* rotated: the code-word value, loaded ahead into wpre */
    int pp;                            /* W8A8 on wgmma: the rotated loop unrolled by two, the A
                                          registers double-buffered (see wb_wgmma_steps) */
    int ss;                            /* wgmma reads the weight tile from shared memory by descriptor
                                          (wb_w8_smem_operand: fp8 on sm_90a); no A registers */
    wb_reg ss_a;                       /* ss: the warpgroup's weight tile in stage 0 */
    int half;                          /* pp: which half of the loop body is being lowered */
    wb_reg *abuf[2];                   /* pp: each half's A registers (code words, or int4 widened) */
    const char *loop_exit;             /* pp, late: after the loop (K ends after a first half) */
    int late;                          /* the TMA pipeline's wgmma loop unrolled by two, each group waited
                                          for a tile late (wait_group 1), while the next tile's group runs
                                          (wb_wgmma_late_setup): 16-bit activations dequantize the next
                                          slice under it, fp8 promotes under it */
    wb_reg *spart[2], laterel[2];      /* late: fp8's slice products, two sets (one a half); the empty
                                          mbarrier of each half's stage */
    const char *ltail[2];              /* late: where K ends after half 0 or 1 (its group still out) */
    int pair;                          /* pp with fp8 sums per channel: the two halves' groups sum into one
                                          slice product, promoted once an iteration (wb_wgmma_kloop_mid) */
    wb_reg relprev;                    /* pair: the empty mbarrier of half 0's stage, released in half 1 */
    const char *ptail;                 /* pair: where K ends after half 0 (its group still out) */
    wb_reg *wpre;
    int pdl_top;                       /* PDL: the next kernel is let in at the top, not after the K loop */
    int tc;                            /* lower MMA to tcgen05 (lower_tcgen05.c) */
    wb_reg tmem, tc_idesc;             /* tc: the accumulator's TMEM address, the instruction descriptor */
    wb_reg tc_arow, tc_xor[8];         /* tc: this thread's row of the weight tile, chunk offsets */
    wb_reg tc_ch, tc_lane, tc_tok0;    /* tc: this thread's channel (TMEM lane), its TMEM address (lane,
                                          first column of its half), its first token */
    wb_reg *tc_sums;                   /* tc, grouped W8A8: the f32 sums of its tokens, in registers */
    int tcbs;                          /* fp4 x fp4 on tcgen05's block-scaled kinds: the scale_vec
                                          (lower_tcgen05_bs.c); L->afp4 stays set (p_ascale, tensor scales) */
    wb_reg tcbs_in, tcbs_row, tcbs_next; /* tcbs: this thread's token (tid < bm) is below M, its first scale
                                          byte, its scale word of the next tile */
    wb_reg tcbs_sfb_at, tcbs_desc_hi, tcbs_sf_hi; /* tcbs: its SFB word in staging buffer 0; descriptor words */
    const wb_reg *tcbs_sw;             /* tcbs: the slice's weight scale record words (lower_dequant) */
    int bs;                            /* fp4 x fp4 on the block-scaled MMA: its scale_vec (lower_block.c) */
    struct block *block;               /* bs: the activation scale words and their addresses */
} lw;

/* Code words of one lane for its warp's slice: B per k64. */
static inline int wb_gemm_w_words(const lw *L)
{
    return L->lay.w_bytes / 128;
}

/* The weight type the 8-bit MMA names: the code's own, or e4m3 for int4 widened on the fp8 MMA. */
static inline const char *wb_gemm_mma_w_type(const lw *L, char buf[8])
{
    return L->w4_f8 ? "e4m3" : wb_type_name(L->fmt->w, buf);
}

/* The sums are s32 (the integer MMA of s8 W8A8 without slice scales); every other kernel's are f32. */
static inline int s32_sums(const lw *L) { return L->w8a8 && !L->a8_float && !L->grouped && !L->lay.tc_wide; }

/* W and scale tiles go through cp.async with both cp.async and TMA loads (TMA carries the activations) */
static inline int async_copies(const lw *L)
{
    return L->cfg->load != WB_LOAD_LDG;
}

/* ---- small emit helpers: each returns the new destination register */

static inline wb_reg op2(lw *L, wb_op op, const char *ty, wb_rc rc, wb_opnd x, wb_opnd y)
{
    wb_reg d = wb_new_reg(L->f, rc);
    wb_emit(L->f, op, ty, 3, wb_r(d), x, y);
    return d;
}

static inline wb_reg op3(lw *L, wb_op op, const char *ty, wb_rc rc, wb_opnd x, wb_opnd y, wb_opnd z)
{
    wb_reg d = wb_new_reg(L->f, rc);
    wb_emit(L->f, op, ty, 4, wb_r(d), x, y, z);
    return d;
}

static inline wb_reg mov(lw *L, const char *ty, wb_rc rc, wb_opnd x)
{
    wb_reg d = wb_new_reg(L->f, rc);
    wb_emit(L->f, WB_OP_MOV, ty, 2, wb_r(d), x);
    return d;
}

static inline wb_reg addi(lw *L, wb_reg x, int64_t v)
{
    return v ? op2(L, WB_OP_ADD, "u32", WB_RC_B32, wb_r(x), wb_imm(v)) : x;
}

static inline wb_reg add(lw *L, wb_reg x, wb_reg y) { return op2(L, WB_OP_ADD, "u32", WB_RC_B32, wb_r(x), wb_r(y)); }
static inline wb_reg andi(lw *L, wb_reg x, int64_t v) { return op2(L, WB_OP_AND, "b32", WB_RC_B32, wb_r(x), wb_imm(v)); }
static inline wb_reg shri(lw *L, wb_reg x, int v) { return op2(L, WB_OP_SHR, "u32", WB_RC_B32, wb_r(x), wb_imm(v)); }
/* log2 of a power of two, else -1 */
static inline int lg2_exact(int64_t v)
{
    int s = 0;
    while (v > 1 && !(v & 1))
        v >>= 1, s++;
    return v == 1 ? s : -1;
}

/* Multiplication, division and remainder by a constant: shifts and masks for a power of two (ptxas
 * left a u32 division by 2 inside the K loop as a reciprocal sequence of 17 instructions). */
static inline wb_reg muli(lw *L, wb_reg x, int64_t v)
{
    int s = lg2_exact(v);
    if (s == 0)
        return x;
    return s > 0 ? op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_r(x), wb_imm(s))
                 : op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(x), wb_imm(v));
}
static inline wb_reg divi(lw *L, wb_reg x, int64_t v)
{
    int s = lg2_exact(v);
    if (s == 0)
        return x;
    return s > 0 ? shri(L, x, s) : op2(L, WB_OP_DIV, "u32", WB_RC_B32, wb_r(x), wb_imm(v));
}
static inline wb_reg remi(lw *L, wb_reg x, int64_t v)
{
    int s = lg2_exact(v);
    if (s == 0)
        return mov(L, "u32", WB_RC_B32, wb_imm(0));
    return s > 0 ? andi(L, x, v - 1) : op2(L, WB_OP_REM, "u32", WB_RC_B32, wb_r(x), wb_imm(v));
}

/* A fragment address in the read stage: its stage-0 address, plus the read stage's offset, plus the
 * current slice's (`stride` bytes a slice) */
static inline wb_reg at_read(lw *L, wb_reg frag, int stride)
{
    return addi(L, add(L, frag, L->ro), (int64_t)L->sub * stride);
}

/* 64-bit address base + (u32 index) * scale */
static inline wb_reg addr64(lw *L, wb_reg base, wb_reg index, int scale)
{
    wb_reg wide = op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(index), wb_imm(scale));
    return op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(base), wb_r(wide));
}

static inline wb_reg cvt(lw *L, const char *ty, wb_rc rc, wb_reg x)
{
    wb_reg d = wb_new_reg(L->f, rc);
    wb_emit(L->f, WB_OP_CVT, ty, 2, wb_r(d), wb_r(x));
    return d;
}

static inline wb_reg prmt(lw *L, wb_reg x, uint32_t selector)
{
    wb_reg d = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_PRMT, NULL, 4, wb_r(d), wb_r(x), wb_imm(0), wb_hex(selector));
    return d;
}

static inline wb_reg param(lw *L, const char *name, int is64)
{
    wb_reg d = wb_new_reg(L->f, is64 ? WB_RC_B64 : WB_RC_B32);
    wb_emit(L->f, WB_OP_LD_PARAM, is64 ? "u64" : "u32", 2, wb_r(d), wb_text(name));
    if (!is64)
        return d;
    wb_reg g = wb_new_reg(L->f, WB_RC_B64);
    wb_emit(L->f, WB_OP_CVTA_GLOBAL, NULL, 2, wb_r(g), wb_r(d));
    return g;
}

static inline wb_reg special(lw *L, const char *name)
{
    wb_reg d = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_SPECIAL, NULL, 2, wb_r(d), wb_text(name));
    return d;
}

static inline wb_reg *value_regs(lw *L, int value, int count)
{
    wb_reg *r = wb_arena_alloc(L->f->arena, (size_t)count * sizeof *r);
    if (!r) {
        L->f->oom = 1;
        return NULL;
    }
    L->vals[value] = r;
    return r;
}

/* The low word of a shared-memory matrix descriptor (wgmma and tcgen05 alike) for the swizzled K-major
 * tile at shared address base: its start >> 4 in bits 0..13, leading byte offset 1 (unused). */
static inline wb_reg smem_desc_lo(lw *L, wb_reg base)
{
    return op2(L, WB_OP_OR, "b32", WB_RC_B32, wb_r(andi(L, shri(L, base, 4), 0x3FFF)), wb_imm(1 << 16));
}

/* Spin until the phase of parity `parity` of the mbarrier at mb has completed (label: the loop's name). */
static inline void mbar_wait(lw *L, wb_reg mb, wb_reg parity, const char *label)
{
    const char *spin = wb_new_label(L->f, label);
    wb_reg done = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(spin));
    wb_emit(L->f, WB_OP_MBAR_TRY_WAIT, NULL, 3, wb_r(done), wb_r(mb), wb_r(parity));
    wb_emit(L->f, WB_OP_BRA_IFNOT, NULL, 2, wb_r(done), wb_text(spin));
}

/* lower_copy.c: the cp.async pipelines' copies. What a stage's copies take: the activation tile (the
 * previous kernel's output, under PDL) and the weight codes and scales (the layer's own, written
 * before any launch). */
enum { COPY_ACTS = 1, COPY_WEIGHTS = 2, COPY_ALL = 3 };
void wb_gemm_plan_copies(lw *L);
void wb_gemm_issue_parts(lw *L, wb_reg stage_off, wb_reg kt, int parts);
void wb_gemm_issue_stage(lw *L, wb_reg stage_off, wb_reg kt);
void wb_gemm_issue_ahead(lw *L, wb_reg next);

/* lower_gemm.c, used by the wgmma and TMA paths */
wb_reg wb_gemm_advance_stage(lw *L, wb_reg off);
void wb_gemm_load_w_words(lw *L, wb_reg *q, int fresh);
const char *wb_gemm_walk_begin(lw *L, const char *name, wb_reg *tile, wb_reg *ntiles);
void wb_gemm_walk_next(lw *L, wb_reg tile, wb_reg ntiles, const char *head);

/* lower_mma.c: the sums, the slice's MMAs, W8A8's slice scales */
void wb_gemm_lower_acc(lw *L, int value);
void wb_gemm_lower_mma(lw *L, int acc, int weights, int acts);
void wb_gemm_lower_mma_scaled(lw *L, int acc, int weights, int acts, int scales);
wb_reg *wb_gemm_new_slice_scales(lw *L);
void wb_gemm_slice_scales(lw *L, wb_reg kt, const wb_reg *s, wb_reg pred);
void wb_gemm_scale_part(lw *L, wb_reg *c, const wb_reg *part, const wb_reg *s);

/* lower_epilogue.c: the sums to the output */
void wb_gemm_lower_epilogue(lw *L, int acc);
/* lower_widen.c: a slice's 4-bit weight words q (int4, e2m1) widened into the 8-bit A registers a */
void wb_gemm_widen4(lw *L, const wb_reg *q, const wb_reg *a);
float wb_widen_factor(const wb_format *f);
/* W4A4: a word of 8 s4 codes -> s8 registers of its even codes (0, 2, 4, 6) and its odd ones */
void wb_widen_s4(lw *L, wb_reg word, wb_reg *even, wb_reg *odd);
/* s8 x s8 on tcgen05 kind::f16: a word of four s8 codes -> two f16 pairs, exactly (k: the constants) */
void wb_widen_s8_f16_consts(lw *L, wb_reg k[3]);
void wb_widen_s8_f16(lw *L, wb_reg word, const wb_reg k[3], wb_reg out[2]);
/* W4A8 with fp8 activations on the f16 MMA (wb_w4a8_f16): a slice's int4 words -> 16 f16 A registers,
 * its 8-bit activation registers -> f16 B registers, paired alike */
void wb_widen_int4_f16(lw *L, const wb_reg *q, wb_reg *a);
void wb_widen_fp8_f16(lw *L, const wb_reg *b8, wb_reg *b);
wb_reg *wb_gemm_new_wide(lw *L);
/* lower_epilogue.c: fp4 activations' tensor scales; W8A8's scales of an output's sum (s32 or f32):
 * the channel's and the token's */
wb_reg wb_gemm_tensor_scale(lw *L);
wb_reg wb_gemm_scale_sum(lw *L, wb_reg sum, wb_reg wscale, wb_reg tok);

/* lower_act4.c: fp4 activations' codes -> the 16-bit A tile of the read stage, by the whole block:
 * the fixed addresses and tile 0's scales before the loop, then each tile's conversion (block tile
 * `tile`, in the read stage; its barrier ends it) */
void wb_act4_setup(lw *L);
void wb_act4_tile(lw *L, wb_reg tile);

/* lower_tcgen05.c */
void wb_tc_setup(lw *L);
void wb_tc_wait_tile(lw *L, wb_reg tile);
void wb_tc_top(lw *L);
void wb_tc_frag_desc(lw *L, int value);
void wb_tc_mma(lw *L, const wb_reg *a, const wb_reg *bdesc);
void wb_tc_epilogue(lw *L);

/* lower_tcgen05_bs.c: fp4 x fp4 on tcgen05 kind::mxf4nvf4 / kind::mxf4 */
int wb_tcbs_sf_col(const lw *L, int buf);
uint32_t wb_tcbs_idesc(const lw *L);
void wb_tcbs_desc_hi(lw *L);
void wb_tcbs_setup(lw *L);
void wb_tcbs_acts(lw *L);
void wb_tcbs_frag_scale(lw *L, int value);
void wb_tcbs_frag_desc(lw *L, int value);
void wb_tcbs_mma(lw *L, const wb_reg *q, const wb_reg *bdesc);

/* lower_wgmma.c */
void wb_wgmma_setup(lw *L);
/* lower_tma.c: --load tma's producer warp and stage mbarriers */
void wb_tma_setup(lw *L);
void wb_tma_first_stage(lw *L);
void wb_tma_next_stage(lw *L);
void wb_tma_wait(lw *L, wb_reg tile);
void wb_tma_release(lw *L);
void wb_wgmma_land(lw *L, int pending, int ahead);
void wb_wgmma_kloop_end(lw *L);
void wb_wgmma_kloop_mid(lw *L);
void wb_wgmma_pp_setup(lw *L);
void wb_wgmma_late_setup(lw *L);
void wb_wgmma_ahead_setup(lw *L);
void wb_wgmma_frag_desc(lw *L, int value);
void wb_wgmma_steps(lw *L, wb_reg *c, const wb_reg *a, const wb_reg *desc);

/* lower_block.c: fp4 x fp4 on the block-scaled MMA */
void wb_block_setup(lw *L);
void wb_block_load_sf(lw *L, wb_reg addr, int bytes, wb_reg p, wb_reg dst);
void wb_block_frag_scale(lw *L, int value);
void wb_block_frag_ascale(lw *L, int value);
void wb_block_mma(lw *L, int acc, int weights, int wscales, int acts, int ascales);

#endif
