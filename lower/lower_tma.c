/* --load tma: the warp-specialized wgmma pipeline (sm_90a).
 *
 * The block is its consumer warpgroups (warps 0 .. 4C - 1: the rotated wgmma loop of lower_wgmma.c)
 * and a producer warpgroup, last, whose first warp does nothing but fill the stages: per block tile,
 * one TMA copy of the activation tile (cp.async.bulk.tensor, the 128B swizzle done by the copy
 * engine) and one bulk copy (cp.async.bulk) of each warp's packed weight slice and of its scale
 * records, which are contiguous in the packed layout (docs/layout.md). Each stage has two mbarriers:
 *   full[s]   one arrival: the producer's lane 0, with the stage's byte count; the copies complete the
 *             bytes. Consumers wait for use u of stage s by its parity (u & 1).
 *   empty[s]  one arrival from every consumer warp (its lane 0), once the wgmma group that read the
 *             stage is complete (after the wait_group that completes it, when the stage's code words
 *             are long in registers: a tile late in the loop of wb_wgmma_late_setup). The producer
 *             waits for it before refilling the stage.
 * No block barrier inside the K loop: the consumer warpgroups drift out of phase, so one's dequant,
 * slice promotion and waits can overlap the other's MMAs, and no consumer spends an instruction on
 * copies. The producer is a whole warpgroup (ptxas sizes a block's registers in warpgroups anyway) so
 * that setmaxnreg can move registers from it to the consumers: with two consumer warpgroups the
 * block's 384 threads get 168 registers each, the producer keeps 40 and the consumers take 232, which
 * hold the 128-token tiles' sums (fp8: two f32 tiles) without spilling. Everything the producer
 * copies goes through the async proxy, which wgmma reads too, and the mbarrier wait makes it visible
 * to the consumers' ld.shared: no fence.proxy.async is needed. Measured (docs/perf.md): faster than
 * the cp.async loop for per-channel W8A8 (H100, M = 16384: int8 by 16%, fp8 by 22%) and for W4A16
 * with two consumer warpgroups (H200: 2-16% at M = 256 to 16384); the heuristic's choice there above
 * M = 64. Producer and consumers each step a stage offset, its mbarrier's address and the parity of
 * its use as they go (next_stage), never dividing a tile index by the stage count: ptxas made each such
 * division a reciprocal in the loop (I2F, MUFU.RCP, F2I, R2UR), between a group's wgmma instructions.
 * With cfg.persistent (persist) a block walks output tiles, producer and consumers alike, the stages
 * running on across them (tile_begin in lower_gemm.c). With cfg.cluster 2 (cluster) blocks
 * run in pairs on neighbouring channel tiles: each producer multicasts its half of the activation
 * tile into both blocks, and each consumer warp releases a stage to both producers (wb_tma_release);
 * with cfg.cluster 4 (quad) in quads on two channel tiles of two token tiles, each producer also
 * multicasting half of the weight tile's warp slices into its token neighbour, and each
 * consumer warp releasing a stage to the three producers that fill it; docs/architecture.md. */
#include "lower/gemm_lower.h"

/* The empty mbarrier of the stage whose full one is at full. */
static wb_reg empty_bar(lw *L, wb_reg full) { return addi(L, full, 8 * L->cfg->stages); }

static wb_reg pred_of(lw *L, wb_op cmp, wb_reg x, int64_t v)
{
    wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, cmp, "u32", 3, wb_r(p), wb_r(x), wb_imm(v));
    return p;
}

/* The next stage: its offset off, its full mbarrier bar and the parity par of its use, which flips each
 * time the offset wraps to stage 0. */
static void next_stage(lw *L, wb_reg off, wb_reg bar, wb_reg par)
{
    int S = L->cfg->stages, stage = L->lay.stage;
    wb_reg next = addi(L, off, stage), wrap = pred_of(L, WB_OP_SETP_GE, next, (int64_t)S * stage);
    wb_reg flip = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(par), wb_imm(1)), nbar = addi(L, bar, 8);
    wb_emit(L->f, WB_OP_SELP, "b32", 4, wb_r(off), wb_imm(0), wb_r(next), wb_r(wrap));
    wb_emit(L->f, WB_OP_SELP, "b32", 4, wb_r(bar), wb_r(L->mbar), wb_r(nbar), wb_r(wrap));
    wb_emit(L->f, WB_OP_SELP, "b32", 4, wb_r(par), wb_r(flip), wb_r(par), wb_r(wrap));
}

/* A 16-bit ctaMask register of the low half of x. */
static wb_reg cta_mask(lw *L, wb_reg x)
{
    wb_reg lo = wb_new_reg(L->f, WB_RC_B16), hi = wb_new_reg(L->f, WB_RC_B16);
    wb_emit(L->f, WB_OP_UNPACK_B16X2, NULL, 3, wb_r(lo), wb_r(hi), wb_r(x));
    return lo;
}

/* One lane's bulk copy of bytes from global src to shared dst, completing on the mbarrier full; with a
 * mask register (quad), multicast to the blocks it names. */
static void bulk_copy(lw *L, wb_reg dst, wb_reg src, int bytes, wb_reg full, wb_reg lead, wb_reg mask)
{
    if (mask.id >= 0)
        wb_emit(L->f, WB_OP_BULK_COPY_MC, NULL, 5, wb_r(dst), wb_r(src), wb_imm(bytes), wb_r(full), wb_r(mask));
    else
        wb_emit(L->f, WB_OP_BULK_COPY, NULL, 4, wb_r(dst), wb_r(src), wb_imm(bytes), wb_r(full));
    wb_guard_last(L->f, lead, 0);
}

/* The producer warp's loop. One lane (elect.sync) posts the stage's bytes and issues every copy: the
 * activation box, then warp slice j's code words and scale records for each j. Their addresses are
 * made of uniform values only (the block's strip, the tile index, constants), so ptxas keeps them in
 * uniform registers: a copy with per-lane addresses becomes a loop over the active lanes (ELECT,
 * R2UR, UBLKCP, BRA.U.ANY in the SASS), once a lane. */
static void produce(lw *L)
{
    int S = L->cfg->stages, nw = L->cfg->warps_n, srec = L->lay.groups_per_chunk * L->lay.rec_bytes;
    int bytes = L->lay.bm * 128 + L->lay.w_stage + L->lay.s_stage;
    wb_reg lead = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_ELECT, NULL, 1, wb_r(lead));
    /* persist: the same walk over output tiles as the consumers' (tile_begin in lower_gemm.c), stage
     * uses counted by g across tiles; otherwise g is kt */
    wb_reg g = {-1}, so = {-1}, full = {-1}, use = {-1}, tile = {-1}, ntiles = {-1};
    const char *tile_head = NULL;
    if (L->persist) {
        if (L->t->features & WB_FEAT_GRIDDEP)
            wb_emit(L->f, WB_OP_GRIDDEP_WAIT, NULL, 0);
        g = mov(L, "u32", WB_RC_B32, wb_imm(0));
        so = mov(L, "u32", WB_RC_B32, wb_imm(0));
        full = mov(L, "u32", WB_RC_B32, wb_r(L->mbar));
        use = mov(L, "u32", WB_RC_B32, wb_imm(0));
        tile_head = wb_gemm_walk_begin(L, "ptile", &tile, &ntiles); /* L->m0, L->strip0: the producer's */
    }
    /* warp slice 0: strip strip0, k chunk 0 (chunks are w_bytes apart, strips kchunks chunks) */
    wb_reg wsrc = addr64(L, L->w, op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(L->strip0), wb_r(L->kchunks)),
                         L->lay.w_bytes);
    wb_reg wstrip = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(L->kchunks), wb_imm(L->lay.w_bytes));
    wb_reg ssrc = {-1}, sstrip = {-1};
    if (L->lay.s_stage) {
        ssrc = addr64(L, L->s, op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(L->strip0), wb_r(L->ngroups)),
                      L->lay.rec_bytes);
        sstrip = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(L->ngroups), wb_imm(L->lay.rec_bytes));
    }
    /* weights and scales are the layer's own, but the tiles are copied together: wait before any copy */
    if ((L->t->features & WB_FEAT_GRIDDEP) && !L->persist)
        wb_emit(L->f, WB_OP_GRIDDEP_WAIT, NULL, 0);
    wb_reg kt = mov(L, "u32", WB_RC_B32, wb_imm(0));
    if (!L->persist) { /* persist: g and the stage (so, full, use) run on across tiles (set before the loop) */
        so = mov(L, "u32", WB_RC_B32, wb_imm(0)), g = kt;
        full = mov(L, "u32", WB_RC_B32, wb_r(L->mbar));
        use = mov(L, "u32", WB_RC_B32, wb_imm(0));
    }
    wb_reg amask = {-1}, wmask = {-1};
    if (L->quad) { /* multicast masks: the activation half to ranks 2t, 2t + 1; the weight half to c, c + 2 */
        amask = cta_mask(L, op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_imm(3), wb_r(muli(L, L->thalf, 2))));
        wmask = cta_mask(L, op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_imm(5), wb_r(L->chalf)));
    }
    const char *head = wb_new_label(L->f, "produce"), *fresh = wb_new_label(L->f, "fresh");
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(head));
    /* the stage's use u > 0 (g / S, its parity in use) waits until the consumers released use u - 1,
     * whose parity is the other */
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(pred_of(L, WB_OP_SETP_LT, g, S)), wb_text(fresh));
    mbar_wait(L, empty_bar(L, full), op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(use), wb_imm(1)), "empty");
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(fresh));
    /* the bytes are posted before any copy can complete them */
    wb_emit(L->f, WB_OP_MBAR_EXPECT_TX, NULL, 2, wb_r(full), wb_imm(bytes));
    wb_guard_last(L->f, lead, 0);
    wb_reg stage = add(L, L->smem, so);
    if (L->cluster) { /* this block's half of the activation tile, into both blocks' stage (and bytes) */
        int half = L->lay.bm / 2;
        wb_reg dst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->chalf), wb_imm(half * 128),
                         wb_r(addi(L, stage, L->lay.a_off)));
        wb_reg row = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->chalf), wb_imm(half), wb_r(L->m0));
        wb_emit(L->f, WB_OP_TMA_LOAD_2D_MC, NULL, 6, wb_r(dst), wb_r(L->tmap), wb_r(muli(L, kt, L->lay.slice_k)),
                wb_r(row), wb_r(full), L->quad ? wb_r(amask) : wb_imm(3));
    } else {
        wb_reg col = muli(L, kt, L->lay.slice_k); /* split_k: in this block's half of K */
        if (L->kofs.id >= 0)
            col = add(L, col, L->kofs);
        wb_emit(L->f, WB_OP_TMA_LOAD_2D, NULL, 5, wb_r(addi(L, stage, L->lay.a_off)), wb_r(L->tmap), wb_r(col),
                wb_r(L->m0), wb_r(full));
    }
    wb_guard_last(L->f, lead, 0);
    wb_reg wk = op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(wsrc),
                    wb_r(op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(kt), wb_imm(L->lay.w_bytes))));
    wb_reg sk = {-1};
    if (L->lay.s_stage) { /* the first group of k chunk kt */
        int gk = L->fmt->g;
        wb_reg group = !gk ? mov(L, "u32", WB_RC_B32, wb_imm(0)) : gk < WB_KW ? muli(L, kt, WB_KW / gk)
                                                                        : divi(L, kt, gk / WB_KW);
        sk = op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(ssrc),
                 wb_r(op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(group), wb_imm(L->lay.rec_bytes))));
    }
    /* warp slice j's code words and scale records, j strips on from the first; quad: this block's half of
     * the slices (from j0 = t * nw / 2: t, its token tile in the quad), each multicast into its stage and
     * its token neighbour's, their bytes completing on the stage's full mbarrier in both */
    int count = L->quad ? nw / 2 : nw, woff = L->lay.w_off, soff = L->lay.s_off;
    wb_reg wdst = stage, sdst = stage, wfirst = wk, sfirst = sk;
    if (L->quad) {
        wb_reg j0 = muli(L, L->thalf, nw / 2);
        wdst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(j0), wb_imm(L->lay.w_bytes), wb_r(addi(L, stage, woff)));
        wfirst = op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(wk),
                     wb_r(op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(wstrip), wb_r(j0))));
        if (L->lay.s_stage) {
            sdst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(j0), wb_imm(srec), wb_r(addi(L, stage, soff)));
            sfirst = op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(sk),
                         wb_r(op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(sstrip), wb_r(j0))));
        }
        woff = soff = 0;
    }
    for (int j = 0; j < count; j++) {
        wb_reg src = !j ? wfirst : op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(wfirst),
                                       wb_r(op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(wstrip), wb_imm(j))));
        bulk_copy(L, addi(L, wdst, woff + j * L->lay.w_bytes), src, L->lay.w_bytes, full, lead, wmask);
        if (!L->lay.s_stage)
            continue;
        wb_reg ss = !j ? sfirst : op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(sfirst),
                                      wb_r(op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(sstrip), wb_imm(j))));
        bulk_copy(L, addi(L, sdst, soff + j * srec), ss, srec, full, lead, wmask);
    }
    wb_emit(L->f, WB_OP_ADD, "u32", 3, wb_r(kt), wb_r(kt), wb_imm(1));
    if (L->persist)
        wb_emit(L->f, WB_OP_ADD, "u32", 3, wb_r(g), wb_r(g), wb_imm(1));
    next_stage(L, so, full, use);
    wb_reg more = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(more), wb_r(kt), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(more), wb_text(head));
    if (L->persist)
        wb_gemm_walk_next(L, tile, ntiles, tile_head);
}

/* Registers per thread of a block of `threads` (ptxas's split of the 64K register file, in units of 8) */
static int regs_of(int threads)
{
    int r = 65536 / threads / 8 * 8;
    return r > 255 ? 255 : r;
}

enum { PRODUCER_REGS = 40 };

/* Thread 0 sets up the mbarriers; then the producer warpgroup branches off (its first warp to the copy
 * loop, the other three to their end) and the consumers go on: every later instruction of the kernel
 * is theirs. With more than one consumer warpgroup the producer's registers go to the consumers. */
void wb_tma_setup(lw *L)
{
    int S = L->cfg->stages, threads = L->lay.threads, consumers = L->lay.consumers;
    int give = consumers > 128; /* one consumer warpgroup: 256 threads already get every register */
    int regs = (regs_of(threads) * threads - PRODUCER_REGS * 128) / consumers / 8 * 8;
    wb_reg pm = mov(L, "u64", WB_RC_B64, wb_text("p_tmap"));
    L->tmap = wb_new_reg(L->f, WB_RC_B64);
    wb_emit(L->f, WB_OP_CVTA_PARAM, NULL, 2, wb_r(L->tmap), wb_r(pm));
    L->elected = pred_of(L, WB_OP_SETP_EQ, L->tid, 0);
    L->mbar = addi(L, L->smem, L->lay.mbar_off);
    if (L->quad)
        wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
                wb_text("load rule: TMA in a cluster of four blocks, two neighbouring channel tiles of two token "
                        "tiles; each producer multicasts its half of the activation tile into its channel "
                        "neighbour and itself, its half of the weight tile's slices into its token neighbour and "
                        "itself; each consumer warp releases a stage to the three producers that fill it"));
    else if (L->cluster)
        wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
                wb_text("load rule: TMA in a cluster of two blocks on neighbouring channel tiles; each producer "
                        "multicasts its half of the activation tile into both, each consumer warp releases a "
                        "stage to both producers"));
    /* cluster: a stage is refilled (in both blocks: the activation halves are multicast) once the
     * consumer warps of both have released it */
    int releasers = consumers / 32 * (L->quad ? 3 : L->cluster ? 2 : 1); /* quad: and the token neighbour's */
    for (int s = 0; s < 2 * S; s++) {
        wb_emit(L->f, WB_OP_MBAR_INIT, NULL, 2, wb_r(addi(L, L->mbar, 8 * s)), wb_imm(s < S ? 1 : releasers));
        wb_guard_last(L->f, L->elected, 0);
    }
    wb_emit(L->f, WB_OP_FENCE_MBAR_INIT, NULL, 0);
    if (L->cluster) { /* no copy or arrival may reach the other block before its mbarriers are set up:
                         the fence releases the initializations, so the arrival needs no .release of
                         its own (which ptxas makes a MEMBAR.ALL.GPU) */
        wb_emit(L->f, WB_OP_CLUSTER_ARRIVE_RELAXED, NULL, 0);
        wb_emit(L->f, WB_OP_CLUSTER_WAIT, NULL, 0);
    } else {
        wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
    }
    const char *consume = wb_new_label(L->f, "consume"), *idle = wb_new_label(L->f, "idle");
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(pred_of(L, WB_OP_SETP_LT, L->tid, consumers)), wb_text(consume));
    if (give)
        wb_emit(L->f, WB_OP_SETMAXNREG_DEC, NULL, 1, wb_imm(PRODUCER_REGS));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(pred_of(L, WB_OP_SETP_GE, L->tid, consumers + 32)), wb_text(idle));
    produce(L);
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(idle));
    wb_emit(L->f, WB_OP_RET, NULL, 0);
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(consume));
    if (give)
        wb_emit(L->f, WB_OP_SETMAXNREG_INC, NULL, 1, wb_imm(regs > 256 ? 256 : regs));
    L->lead = pred_of(L, WB_OP_SETP_EQ, L->lane, 0);
}

/* A consumer at stage 0 (L->ro is 0): its full mbarrier, use 0 (persist: once, the stages then run on
 * across output tiles). */
void wb_tma_first_stage(lw *L)
{
    L->rbar = mov(L, "u32", WB_RC_B32, wb_r(L->mbar));
    L->rpar = mov(L, "u32", WB_RC_B32, wb_imm(0));
    L->relbar = wb_new_reg(L->f, WB_RC_B32);
}

/* A consumer moves its read stage on (L->ro, L->rbar, L->rpar), keeping the stage it leaves, whose tile
 * it releases next (L->relbar). */
void wb_tma_next_stage(lw *L)
{
    wb_emit(L->f, WB_OP_ADD, "u32", 3, wb_r(L->relbar), wb_r(L->rbar), wb_imm(8 * L->cfg->stages));
    next_stage(L, L->ro, L->rbar, L->rpar);
}

/* A consumer: wait until block tile `tile` has landed in the read stage (its full mbarrier, the parity
 * of its use). A tile past K is never copied: the rotated loop's last iteration asks for tile nkt. */
void wb_tma_wait(lw *L, wb_reg tile)
{
    const char *skip = wb_new_label(L->f, "tma_none");
    wb_reg past = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(past), wb_r(tile), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(past), wb_text(skip));
    mbar_wait(L, L->rbar, L->rpar, "full");
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
}

/* A consumer warp is done with the tile of the stage it left last (its group is complete, its lanes
 * met at the wait): lane 0 releases it for the warp, after a bar.warp.sync that orders the other
 * lanes' reads before its arrival. One arrival a warp, not a thread: 8 instead of 256 on one shared
 * word a stage. */
void wb_tma_release(lw *L)
{
    wb_emit(L->f, WB_OP_BAR_WARP_SYNC, NULL, 0);
    wb_reg empty = L->relbar;
    wb_emit(L->f, WB_OP_MBAR_ARRIVE, NULL, 1, wb_r(empty));
    wb_guard_last(L->f, L->lead, 0);
    if (L->cluster) { /* and to the other block's producer, whose multicast writes this block's stage too */
        wb_reg remote = op2(L, WB_OP_MAPA, NULL, WB_RC_B32, wb_r(empty), wb_r(L->peer));
        wb_emit(L->f, WB_OP_MBAR_ARRIVE_REMOTE, NULL, 1, wb_r(remote));
        wb_guard_last(L->f, L->lead, 0);
    }
    if (L->quad) { /* and to the token neighbour's, whose weight slices land here too */
        wb_reg remote = op2(L, WB_OP_MAPA, NULL, WB_RC_B32, wb_r(empty), wb_r(L->tpeer));
        wb_emit(L->f, WB_OP_MBAR_ARRIVE_REMOTE, NULL, 1, wb_r(remote));
        wb_guard_last(L->f, L->lead, 0);
    }
}
