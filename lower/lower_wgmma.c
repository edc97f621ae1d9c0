/* The wgmma path of the GEMM lowering (sm_90a): descriptors, wgmma groups and the rotated K loop (its
 * warp-specialized form, --load tma, is lower_tma.c). lower_gemm.c calls in here where L->wg or L->rot
 * says so; see its head comment for why a warp's dequantized slice is already wgmma's register A
 * operand. */
#include "lower/gemm_lower.h"

#include <stdlib.h>

/* wgmma: the scale-d predicate and the descriptors' high word. */
void wb_wgmma_setup(lw *L)
{
    L->ptrue = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_NE, "u32", 3, wb_r(L->ptrue), wb_r(mov(L, "u32", WB_RC_B32, wb_imm(1))), wb_imm(0));
    if (L->a8_float || L->grouped) {
        L->pfalse = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_EQ, "u32", 3, wb_r(L->pfalse), wb_r(mov(L, "u32", WB_RC_B32, wb_imm(1))), wb_imm(0));
    }
    /* descriptor bits 32..45: stride between 8-row groups (1024 bytes) >> 4; bits 62..63: 128B swizzle
     * (the rows are 128 bytes: 64 16-bit activations, or 128 8-bit codes for W8A8) */
    L->desc_hi = mov(L, "b32", WB_RC_B32, wb_hex((1u << 30) | (1024 >> 4)));
}

/* The rotated wgmma loop's wait, fence and barrier: block tile kt + ahead has landed in the read
 * stage and is visible to wgmma (async proxy), and every warp is past the previous iteration. With
 * TMA loads, only the wait for the stage's full mbarrier (lower_tma.c). */
void wb_wgmma_land(lw *L, int pending, int ahead)
{
    if (L->tma) {
        wb_tma_wait(L, addi(L, L->kt, ahead));
        return;
    }
    wb_emit(L->f, WB_OP_CP_ASYNC_WAIT, NULL, 1, wb_imm(pending));
    wb_emit(L->f, WB_OP_FENCE_PROXY_ASYNC, NULL, 0);
    wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
}

/* n new registers of class rc (NULL, and the function marked out of memory, if the arena has no room) */
static wb_reg *new_regs(lw *L, int n, wb_rc rc)
{
    wb_reg *r = wb_arena_alloc(L->f->arena, (size_t)n * sizeof *r);
    for (int i = 0; r && i < n; i++)
        r[i] = wb_new_reg(L->f, rc);
    if (!r)
        L->f->oom = 1;
    return r;
}

/* Before the rotated loop: the slice factors of tile 0 (grouped). Each later tile's are loaded right
 * after the previous promote (wb_wgmma_kloop_end), a whole iteration before they are used, into the
 * same registers. */
void wb_wgmma_ahead_setup(lw *L)
{
    if (!L->grouped)
        return;
    L->sscale = wb_gemm_new_slice_scales(L);
    if (L->sscale)
        wb_gemm_slice_scales(L, mov(L, "u32", WB_RC_B32, wb_imm(0)), L->sscale, (wb_reg){-1});
}

/* pp: the next tile's A registers into a: 8-bit words as loaded; int4 words loaded into wpre and
 * widened into a. */
static void pp_fill(lw *L, wb_reg *a)
{
    if (L->fmt->w.bits == 8) {
        wb_gemm_load_w_words(L, a, 0);
        return;
    }
    wb_gemm_load_w_words(L, L->wpre, 0);
    wb_gemm_widen4(L, L->wpre, a);
}

/* pp, before the loop: both halves' A registers; tile 0's (its words already in wpre) into the first. */
void wb_wgmma_pp_setup(lw *L)
{
    int n = L->fmt->w.bits == 8 ? wb_gemm_w_words(L) : 2 * wb_gemm_w_words(L);
    for (int h = 0; h < 2; h++)
        if (!(L->abuf[h] = new_regs(L, n, WB_RC_B32)))
            return;
    if (L->fmt->w.bits == 8)
        for (int i = 0; i < n; i++)
            wb_emit(L->f, WB_OP_MOV, "b32", 2, wb_r(L->abuf[0][i]), wb_r(L->wpre[i]));
    else
        wb_gemm_widen4(L, L->wpre, L->abuf[0]);
    L->loop_exit = wb_new_label(L->f, "kdone");
    if (L->pair) {
        L->relprev = wb_new_reg(L->f, WB_RC_B32);
        L->ptail = wb_new_label(L->f, "ptail");
    }
}

/* Land tile kt + 1 (at most `pending` copy groups still out), issue the copies of tile kt + dist into
 * the write stage, load tile kt + 1's code words (pp: into the other half's A registers), all while
 * tile kt's group runs. */
static void land_next(lw *L, int pending, int dist)
{
    if (L->tma) /* and its mbarriers */
        wb_tma_next_stage(L);
    else
        wb_gemm_advance_stage(L, L->ro);
    wb_wgmma_land(L, pending, 1);
    if (!L->tma) { /* TMA loads: the producer warp refills the stages */
        wb_gemm_issue_ahead(L, addi(L, L->kt, dist));
        wb_gemm_advance_stage(L, L->wo);
    }
    if (L->afp4) /* fp4 activations: tile kt + 1 becomes 16-bit (its stage is not the running group's) */
        wb_act4_tile(L, addi(L, L->kt, 1));
    /* persist: past K the stage holds (or is being filled with) the next output tile's first block tile,
     * which the tile's own start loads once it has landed */
    const char *past = NULL;
    if (L->persist && (L->pp || L->wpre)) {
        wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
        past = wb_new_label(L->f, "nonext");
        wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(p), wb_r(addi(L, L->kt, 1)), wb_r(L->nkt));
        wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(p), wb_text(past));
    }
    if (L->pp) /* into the other half's registers: not the ones this group reads */
        pp_fill(L, L->abuf[1 - L->half]);
    else if (L->wpre)
        wb_gemm_load_w_words(L, L->wpre, 0);
    if (past)
        wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(past));
}

/* fp8: add a slice's product, complete, to the f32 sums (the two-level accumulation below). */
static void promote_part(lw *L, const wb_reg *part)
{
    if (part && L->grouped) { /* grouped W8A8: the slice's product times its scales */
        wb_gemm_scale_part(L, L->vals_acc, part, L->sscale);
        return;
    }
    for (int i = 0; part && i < L->cfg->m_tiles * 4; i++)
        wb_emit(L->f, WB_OP_ADD_F32, NULL, 3, wb_r(L->vals_acc[i]), wb_r(L->vals_acc[i]), wb_r(part[i]));
}

static void promote(lw *L) { promote_part(L, L->part); }

/* The rotated wgmma loop (L->rot): while the group just committed runs, land the next tile, issue the
 * copies of tile kt + S - 1 into the stage read one iteration ago (its group is complete: every warp
 * waited for it before the barrier), load the next tile's code words, and only then wait for the
 * group. The group's whole flight lies inside one iteration, before its wait: a group kept in flight
 * across the loop's back edge gave wrong results on the H200 (docs/perf.md). For 16-bit activations,
 * unrolling the loop by two, the first half's group in flight through the second half's dequant,
 * measured within 2% of this loop (2026-12-03) and was removed; W8A8 unrolls it by two (L->pp) so
 * that the next tile's A registers can be filled while a group runs (wb_wgmma_steps).
 *
 * tile_end is the end of the work on tile kt: land the next, wait for this group, promote, load the
 * next tile's group scales, kt + 1; wb_wgmma_kloop_mid ends the first half, wb_wgmma_kloop_end the
 * iteration. */
static void tile_end(lw *L)
{
    land_next(L, L->cfg->stages - 3, L->cfg->stages - 1);
    wb_emit(L->f, WB_OP_WGMMA_WAIT, NULL, 1, wb_imm(0));
    if (L->tma)
        wb_tma_release(L);
    promote(L);
    if (L->grouped && L->sscale) { /* the next tile's factors, unless it is past K */
        wb_reg next = addi(L, L->kt, 1), in = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(in), wb_r(next), wb_r(L->nkt));
        wb_gemm_slice_scales(L, next, L->sscale, in);
    }
    wb_emit(L->f, WB_OP_ADD, "u32", 3, wb_r(L->kt), wb_r(L->kt), wb_imm(1));
}

/* late, before the loop: fp8's two sets of slice product registers, the stages each half releases,
 * the tails. */
void wb_wgmma_late_setup(lw *L)
{
    int n = L->cfg->m_tiles * 4;
    for (int h = 0; h < 2; h++) {
        if (L->ss && !(L->spart[h] = new_regs(L, n, WB_RC_F32)))
            return;
        L->laterel[h] = wb_new_reg(L->f, WB_RC_B32);
        L->ltail[h] = wb_new_label(L->f, "ktail");
    }
    L->loop_exit = wb_new_label(L->f, "kdone");
}

/* late: half h's tile is done (its group complete): release its stage, promote its product (fp8). */
static void late_finish(lw *L, int h)
{
    L->relbar = L->laterel[h];
    wb_tma_release(L);
    promote_part(L, L->spart[h]);
}

/* late: the end of half h's tile kt, whose group was just committed. It stays out while the previous
 * tile's group is waited for (wait_group 1), its stage released and (fp8) its product, in the other
 * half's registers, promoted; then the next tile lands and its code words are loaded, and the next
 * half dequantizes them under this group (16-bit activations). Tile 0 has no previous tile. From half
 * 1 the group stays out across the loop's back edge: ptxas keeps the groups apart there (the halves'
 * A operands and products are different registers, and no other instruction touches one while its
 * group is out). K may end after either half: its tail waits for the last group (wait_group 0),
 * releases its stage and promotes its product. */
static void late_end(lw *L)
{
    int h = L->half;
    wb_emit(L->f, WB_OP_WGMMA_WAIT, NULL, 1, wb_imm(1));
    const char *first = NULL;
    if (!h) {
        wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
        first = wb_new_label(L->f, "first");
        wb_emit(L->f, WB_OP_SETP_EQ, "u32", 3, wb_r(p), wb_r(L->kt), wb_imm(0));
        wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(p), wb_text(first));
    }
    late_finish(L, 1 - h);
    if (first)
        wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(first));
    L->relbar = L->laterel[h]; /* this tile's stage, released once its group is complete */
    wb_tma_next_stage(L);
    wb_emit(L->f, WB_OP_ADD, "u32", 3, wb_r(L->kt), wb_r(L->kt), wb_imm(1));
    wb_reg done = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(done), wb_r(L->kt), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(done), wb_text(L->ltail[h]));
    mbar_wait(L, L->rbar, L->rpar, "full");
    if (L->wpre)
        wb_gemm_load_w_words(L, L->wpre, 0);
    if (h)
        wb_emit(L->f, WB_OP_BRA, NULL, 1, wb_text(L->loop_head));
}

/* late, after the loop: the tails. */
static void late_tails(lw *L)
{
    for (int h = 0; h < 2; h++) {
        wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(L->ltail[h]));
        wb_emit(L->f, WB_OP_WGMMA_WAIT, NULL, 1, wb_imm(0));
        late_finish(L, h);
        if (!h)
            wb_emit(L->f, WB_OP_BRA, NULL, 1, wb_text(L->loop_exit));
    }
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(L->loop_exit));
}

/* pair: release the stage of half 0's tile (its group complete) */
static void release_prev(lw *L)
{
    if (!L->tma)
        return;
    wb_reg now = L->relbar;
    L->relbar = L->relprev;
    wb_tma_release(L);
    L->relbar = now;
}

/* pair: the end of half 0's tile kt. Its group stays out: the next tile lands and its code words are
 * loaded (and widened) into half 1's registers under it, and half 1's group adds onto the same slice
 * product (scale-d true) behind it, so the tensor cores take the two groups back to back, with no
 * wait, promote or widening between them. Half 1's end waits for half 0's group (wait_group 1) before
 * its words go into half 0's registers and its stage is released, then for its own, and promotes the
 * k256 product once. Hopper's fp8 wgmma keeps fewer bits than f32 in its running sum: two slices
 * summed there before the f32 add instead of one (docs/perf.md). K may end after half 0: its tail
 * waits, releases and promotes. */
static void pair_mid(lw *L)
{
    land_next(L, L->cfg->stages - 3, L->cfg->stages - 1);
    if (L->tma)
        wb_emit(L->f, WB_OP_MOV, "b32", 2, wb_r(L->relprev), wb_r(L->relbar));
    wb_emit(L->f, WB_OP_ADD, "u32", 3, wb_r(L->kt), wb_r(L->kt), wb_imm(1));
    wb_reg done = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(done), wb_r(L->kt), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(done), wb_text(L->ptail));
}

static void pair_end(lw *L)
{
    wb_emit(L->f, WB_OP_WGMMA_WAIT, NULL, 1, wb_imm(1));
    release_prev(L);
    tile_end(L);
    wb_reg more = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(more), wb_r(L->kt), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(more), wb_text(L->loop_head));
    wb_emit(L->f, WB_OP_BRA, NULL, 1, wb_text(L->loop_exit));
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(L->ptail));
    wb_emit(L->f, WB_OP_WGMMA_WAIT, NULL, 1, wb_imm(0));
    release_prev(L);
    promote(L);
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(L->loop_exit));
}

/* pp: the first half's end; K may end there (an odd number of tiles). */
void wb_wgmma_kloop_mid(lw *L)
{
    if (L->late) {
        late_end(L);
        return;
    }
    if (L->pair) {
        pair_mid(L);
        return;
    }
    tile_end(L);
    wb_reg done = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(done), wb_r(L->kt), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(done), wb_text(L->loop_exit));
}

void wb_wgmma_kloop_end(lw *L)
{
    if (L->late) {
        late_end(L);
        late_tails(L);
        return;
    }
    if (L->pair) {
        pair_end(L);
        return;
    }
    tile_end(L);
    wb_reg more = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(more), wb_r(L->kt), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(more), wb_text(L->loop_head));
    if (L->pp)
        wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(L->loop_exit));
}

/* The slice's wgmma steps: four k16 (16-bit activations), or four k32 (8-bit codes, a k128 slice). */
enum { WGMMA_STEPS = 4 };

/* The descriptors of a slice's steps in the swizzled K-major tile at shared address base: start
 * address >> 4 in bits 0..13 (a step is 32 bytes further along the swizzled row: k16 of 16-bit, k32 of
 * 8-bit), leading byte offset 1 (unused by a swizzled K-major tile) in bits 16..29, the high word
 * desc_hi. */
static void step_descs(lw *L, wb_reg base, wb_reg *d)
{
    wb_reg lo = smem_desc_lo(L, base);
    for (int step = 0; step < WGMMA_STEPS; step++) {
        d[step] = wb_new_reg(L->f, WB_RC_B64);
        wb_emit(L->f, WB_OP_PACK_B64, NULL, 3, wb_r(d[step]), wb_r(addi(L, lo, 2 * step)), wb_r(L->desc_hi));
    }
}

/* wgmma: one B descriptor per step of the slice, in the read stage's activation tile. */
void wb_wgmma_frag_desc(lw *L, int value)
{
    wb_reg *d = value_regs(L, value, WGMMA_STEPS);
    if (!d)
        return;
    wb_reg base = addi(L, add(L, L->smem, L->ro), L->lay.a_off);
    if (L->cfg->warps_k > 1) /* split K: warpgroup wk reads slice wk of the tile, bm rows of 128 bytes on */
        base = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->wk), wb_imm(L->lay.bm * 128), wb_r(base));
    step_descs(L, base, d);
}

/* The wgmma shape and types: A is the weights, B the activations. */
static const char *wgmma_shape(lw *L)
{
    int n = 8 * L->cfg->m_tiles;
    char an[8], wn[8];
    if (L->a8_float)
        return wb_arena_printf(L->f->arena, "m64n%dk32.f32.%s.%s", n, wb_gemm_mma_w_type(L, wn),
                               wb_type_name(L->fmt->a, an));
    if (L->w8a8)
        return wb_arena_printf(L->f->arena, "m64n%dk32.s32.s8.s8", n);
    return wb_arena_printf(L->f->arena, "m64n%dk16.f32.%s.%s", n, L->T, L->T);
}

/* wgmma: the warpgroup's 64 channels x 8*m_tiles tokens, the slice's steps in one commit group. The
 * rotated loop waits for it at the iteration's end (wb_wgmma_kloop_end); the plain one here.
 * W8A8: m64nNk32 with s8 or fp8 codes; its A registers are the code words as loaded (the per-warp
 * fragment of wgmma k32 for 8-bit types is that of mma.sync m16n8k32). No register a wgmma reads may
 * be written while its group runs: ptxas then serializes every wgmma (its warning C7513; loading the
 * next words into the registers the loop reuses, even through a mov, which ptxas folds, made the
 * int8 and fp8 kernels serial). So the loop is unrolled by two (L->pp) with two sets of A registers:
 * while one half's group reads its set, the next tile's words are loaded (and int4 widened) into the
 * other's. fp8 on sm_90a (L->ss, wb_w8_smem_operand) reads A by descriptor instead, from the weight
 * tile packed as wgmma's shared-memory operand: no A registers, and no unrolling. fp8 sums in two
 * levels: Hopper's fp8 wgmma keeps fewer bits than f32 in its running sum, so each slice's product
 * (k128, four steps; pair: k256, the two halves' slices) starts from zero (scale-d false) in its own
 * registers and is added to the f32 sums once complete (promote). */
void wb_wgmma_steps(lw *L, wb_reg *c, const wb_reg *a, const wb_reg *desc)
{
    int steps = WGMMA_STEPS, nacc = L->cfg->m_tiles * 4;
    const char *shape = wgmma_shape(L);
    if (!shape) {
        L->f->oom = 1;
        return;
    }
    if (L->late && L->ss) { /* fp8: the half's own slice product registers */
        L->vals_acc = c;
        L->part = L->spart[L->half];
    } else if ((L->a8_float || L->grouped) && !L->part) {
        L->vals_acc = c;
        if (!(L->part = new_regs(L, nacc, L->a8_float ? WB_RC_F32 : WB_RC_B32)))
            return;
    }
    char an[8], wn[8];
    if (L->a8_float)
        wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
                wb_text(wb_arena_printf(L->f->arena, "mma rule: w=%s x a=%s -> f32, wgmma %s, native (A: %s; B: the "
                                                     "fp8 tile, 128B swizzle; each %s summed apart, then "
                                                     "added in f32)",
                                        wb_gemm_mma_w_type(L, wn), wb_type_name(L->fmt->a, an), shape,
                                        L->ss ? "the weight tile in shared memory, 128B swizzle"
                                              : "the code words in registers",
                                        L->pair ? "k256 (two slices)" : "k128 slice")));
    else if (L->w8a8)
        wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
                wb_text(wb_arena_printf(L->f->arena, "mma rule: s8 x s8 -> s32, wgmma %s, native (A: the code "
                                                     "words in registers; B: the s8 tile, 128B swizzle)", shape)));
    /* ss: A by descriptor too, the warpgroup's 64 channels x k128 of the read stage (K-major, 128B
     * swizzle, 8-row atoms 1024 bytes apart: wb_w8_smem_operand's layout); a step is 32 bytes on */
    wb_reg adesc[WGMMA_STEPS];
    if (L->ss)
        step_descs(L, add(L, L->ss_a, L->ro), adesc);
    if (L->grouped && !L->rot && (L->sscale = wb_gemm_new_slice_scales(L))) /* used after the wait (promote) */
        wb_gemm_slice_scales(L, L->kt, L->sscale, (wb_reg){-1});
    wb_emit(L->f, WB_OP_WGMMA_FENCE, NULL, 0);
    wb_op op = L->a8_float ? WB_OP_WGMMA_F8 : L->w8a8 ? WB_OP_WGMMA_S8 : WB_OP_WGMMA;
    for (int step = 0; step < steps; step++)
        wb_emit(L->f, op, shape, 4, wb_list(L->part ? L->part : c, nacc),
                L->ss ? wb_r(adesc[step]) : wb_list(&a[step * 4], 4), wb_r(desc[step]),
                wb_r(L->part && step == 0 && !(L->pair && L->half) ? L->pfalse : L->ptrue));
    wb_emit(L->f, WB_OP_WGMMA_COMMIT, NULL, 0);
    if (!L->rot) {
        wb_emit(L->f, WB_OP_WGMMA_WAIT, NULL, 1, wb_imm(0));
        promote(L);
    }
}
