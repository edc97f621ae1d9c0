/* The GEMM lowering's epilogue: the split-K pair's reduction through shared memory, the warps_k
 * reduction, W8A8's channel and token scales, fp4 activations' tensor scales, bias, rounding and the
 * guarded store (or, on the TMA pipeline, the output tile staged in shared memory). */
#include <math.h>

#include "lower/gemm_lower.h"

/* W8A8: the sum (the exact s32 one taken to f32, or the fp8 MMA's f32 one), times the channel's scale,
 * times the token's: as, loaded by the caller, or (id -1) read here from p_ascale (the caller has
 * checked tok < M). */
static wb_reg scale_sum(lw *L, wb_reg sum, wb_reg wscale, wb_reg tok, wb_reg as)
{
    if (!L->fmt->ag && as.id < 0) { /* with ag, the slices were scaled one by one (wb_gemm_scale_part) */
        as = wb_new_reg(L->f, WB_RC_F32);
        wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(as), wb_r(addr64(L, L->ascale, tok, 4)));
    }
    wb_reg v = s32_sums(L) ? cvt(L, "rn.f32.s32", WB_RC_F32, sum) : sum;
    if (L->w4_factor != 1.0f) /* 4-bit weights went through the MMA scaled (lower_widen.c) */
        v = op2(L, WB_OP_MUL_F32, NULL, WB_RC_F32, wb_r(v), wb_f32(L->w4_factor));
    v = op2(L, WB_OP_MUL_F32, NULL, WB_RC_F32, wb_r(v), wb_r(wscale));
    return L->fmt->ag ? v : op2(L, WB_OP_MUL_F32, NULL, WB_RC_F32, wb_r(v), wb_r(as));
}

wb_reg wb_gemm_scale_sum(lw *L, wb_reg sum, wb_reg wscale, wb_reg tok)
{
    return scale_sum(L, sum, wscale, tok, (wb_reg){-1});
}

/* fp4 activations: the product of the tensor scales that multiply the f32 sums (chan: the biases, then
 * the weight's), or no register (id -1) when the format has none. */
wb_reg wb_gemm_tensor_scale(lw *L)
{
    wb_reg global = {-1};
    if (!(L->afp4 || L->bs) || !(L->fmt->ags || L->fmt->wgs))
        return global;
    global = mov(L, "f32", WB_RC_F32, wb_f32(1.0f));
    if (L->fmt->ags) {
        wb_reg ag = wb_new_reg(L->f, WB_RC_F32);
        wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(ag), wb_r(L->aglobal));
        global = op2(L, WB_OP_MUL_F32, NULL, WB_RC_F32, wb_r(global), wb_r(ag));
    }
    if (L->fmt->wgs) {
        wb_reg wgv = wb_new_reg(L->f, WB_RC_F32);
        wb_reg at = L->fmt->bias ? addr64(L, L->chan, L->n, 4) : L->chan;
        wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(wgv), wb_r(at));
        global = op2(L, WB_OP_MUL_F32, NULL, WB_RC_F32, wb_r(global), wb_r(wgv));
    }
    return global;
}

/* split_k: the threads of a pair of blocks meet around the second block's store of its sums
 * (barrier.cluster; threads that have ended count as arrived). */
static void cluster_sync(lw *L)
{
    wb_emit(L->f, WB_OP_CLUSTER_ARRIVE, NULL, 0);
    wb_emit(L->f, WB_OP_CLUSTER_WAIT, NULL, 0);
}

/* split_k: the pair meets once both are done with their stages (the first's become the buffer); the
 * second block stores its sums into the first's shared memory (mapa, st.shared::cluster: sum i of
 * consumer thread t at (i * consumers + t) * 4), both meet again, and the second ends; the first adds
 * them to its own, its half of K first: the same bits whichever block finished first. */
static void split_sum(lw *L, wb_reg *c, int nacc)
{
    int consumers = L->lay.consumers, s32 = s32_sums(L);
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text("split_k: the second block's sums into the first's shared memory, added there"));
    cluster_sync(L);
    wb_reg at = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->tid), wb_imm(4), wb_r(L->smem));
    wb_reg first = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_EQ, "u32", 3, wb_r(first), wb_r(L->crank), wb_imm(0));
    const char *add_sums = wb_new_label(L->f, "split_add");
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(first), wb_text(add_sums));
    wb_reg remote = op2(L, WB_OP_MAPA, NULL, WB_RC_B32, wb_r(at), wb_r(L->peer));
    for (int i = 0; i < nacc; i++)
        wb_emit(L->f, WB_OP_ST_SHARED_CLUSTER, s32 ? "s32" : "f32", 2, wb_r(addi(L, remote, (int64_t)i * consumers * 4)),
                wb_r(c[i]));
    cluster_sync(L);
    wb_emit(L->f, WB_OP_RET, NULL, 0);
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(add_sums));
    cluster_sync(L);
    for (int i = 0; i < nacc; i++) {
        wb_reg v = wb_new_reg(L->f, s32 ? WB_RC_B32 : WB_RC_F32);
        wb_emit(L->f, WB_OP_LD_SHARED, s32 ? "s32" : "f32", 2, wb_r(v), wb_r(addi(L, at, (int64_t)i * consumers * 4)));
        if (s32)
            wb_emit(L->f, WB_OP_ADD, "s32", 3, wb_r(c[i]), wb_r(c[i]), wb_r(v));
        else
            wb_emit(L->f, WB_OP_ADD_F32, NULL, 3, wb_r(c[i]), wb_r(c[i]), wb_r(v));
    }
}

/* The consumer threads meet (a named barrier: the producer warpgroup goes its own way). */
static void consumers_meet(lw *L)
{
    wb_emit(L->f, WB_OP_BAR_SYNC_N, NULL, 2, wb_imm(1), wb_imm(L->lay.consumers));
}

/* The TMA pipeline's output tile, staged in shared memory (lay.out_off: bm rows of bn 2-byte channels,
 * rows out_row bytes apart), to global memory: a row is bn / 8 chunks of 16 bytes, consumer thread t
 * takes chunk t % (bn / 8) of rows t / (bn / 8), + consumers / (bn / 8), ...; one 16-byte load and
 * store a chunk (a warp's stores cover whole rows), or, where the output pointer is not 16-byte
 * aligned (the API asks 2 bytes), eight 2-byte stores. Rows past M are not stored. */
static void store_staged(lw *L, wb_reg tile)
{
    int per_row = L->lay.bn / 8, rows = L->lay.consumers / per_row;
    wb_reg col = remi(L, L->tid, per_row), row = divi(L, L->tid, per_row);
    wb_reg src = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(row), wb_imm(L->lay.out_row), wb_r(tile));
    src = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(col), wb_imm(16), wb_r(src));
    wb_reg tok = add(L, L->m0, row);
    /* out + (tok * N + n0) * 2 + col * 16, stepping by rows * N * 2 */
    wb_reg idx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(tok), wb_r(L->n), wb_r(muli(L, L->strip0, 16)));
    wb_reg dst = addr64(L, L->out, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(col), wb_imm(8), wb_r(idx)), 2);
    wb_reg step = op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(L->n), wb_imm(2 * rows));
    wb_reg low = cvt(L, "u32.u64", WB_RC_B32, L->out);
    wb_reg odd = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_NE, "u32", 3, wb_r(odd), wb_r(andi(L, low, 15)), wb_imm(0));
    for (int j = 0; j < L->lay.bm / rows; j++) {
        const char *skip = wb_new_label(L->f, "nost"), *narrow = wb_new_label(L->f, "narrow");
        wb_reg past = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(past), wb_r(addi(L, tok, (int64_t)j * rows)), wb_r(L->m));
        wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(past), wb_text(skip));
        wb_reg v[4];
        for (int q = 0; q < 4; q++)
            v[q] = wb_new_reg(L->f, WB_RC_B32);
        wb_emit(L->f, WB_OP_LD_SHARED_V4, NULL, 5, wb_r(v[0]), wb_r(v[1]), wb_r(v[2]), wb_r(v[3]),
                wb_r(addi(L, src, (int64_t)j * rows * L->lay.out_row)));
        wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(odd), wb_text(narrow));
        wb_emit(L->f, WB_OP_ST_GLOBAL_V4, NULL, 5, wb_r(dst), wb_r(v[0]), wb_r(v[1]), wb_r(v[2]), wb_r(v[3]));
        wb_emit(L->f, WB_OP_BRA, NULL, 1, wb_text(skip));
        wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(narrow));
        for (int q = 0; q < 4; q++) {
            wb_reg h[2] = {wb_new_reg(L->f, WB_RC_B16), wb_new_reg(L->f, WB_RC_B16)};
            wb_emit(L->f, WB_OP_UNPACK_B16X2, NULL, 3, wb_r(h[0]), wb_r(h[1]), wb_r(v[q]));
            for (int b = 0; b < 2; b++)
                wb_emit(L->f, WB_OP_ST_GLOBAL, "b16", 2,
                        wb_r(op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(dst), wb_imm(4 * q + 2 * b))), wb_r(h[b]));
        }
        wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
        if (j + 1 < L->lay.bm / rows)
            wb_emit(L->f, WB_OP_ADD, "u64", 3, wb_r(dst), wb_r(dst), wb_r(step));
    }
}

/* The sums of tile value acc to the output: the split-K pair's and the warps_k reductions, scales,
 * bias, rounding and the guarded (or, on the TMA pipeline, staged) store. */
void wb_gemm_lower_epilogue(lw *L, int acc)
{
    wb_reg *c = L->vals[acc];
    if (!c)
        return;
    if (L->tc) {
        wb_tc_epilogue(L);
        return;
    }
    int nacc = L->cfg->m_tiles * 4, wkn = L->cfg->warps_k, wnn = L->cfg->warps_n;
    if (L->ksplit && L->wg)
        split_sum(L, c, nacc);
    /* cluster: the other block's consumers may still arrive on this one's mbarriers, and this one's on
     * the other's: no block ends before every consumer thread of both has arrived, after its last
     * remote arrival (.release: here, past the K loop), and waited (at the end, after the stores, which
     * it need not order). The producer warpgroup does not meet them: its copies land in stages both
     * blocks wait for, and threads that have ended count as arrived. persist: once, after the last
     * tile (tile_end). */
    if (L->cluster && !L->persist)
        wb_emit(L->f, WB_OP_CLUSTER_ARRIVE, NULL, 0);
    const char *done = wb_new_label(L->f, "done");
    for (int i = 0; i < nacc && L->raw; i++) /* the raw rule's sums are u x b * 2^(lift - 24) */
        wb_emit(L->f, WB_OP_MUL_F32, NULL, 3, wb_r(c[i]), wb_r(c[i]),
                wb_f32((float)ldexp(1.0, 24 - wb_dequant_raw_lift(L->fmt, (i & 3) >> 1))));
    /* the next kernel may be scheduled now, unless it was at the top (lower_kloop); persist: after the
     * last tile (tile_end) */
    if ((L->t->features & WB_FEAT_GRIDDEP) && !L->pdl_top && !L->persist)
        wb_emit(L->f, WB_OP_GRIDDEP_LAUNCH, NULL, 0);
    if (wkn > 1) {
        if (async_copies(L))
            wb_emit(L->f, WB_OP_CP_ASYNC_WAIT, NULL, 1, wb_imm(0));
        wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
        /* slot of partial sums (wk-1, wn): [i][lane] f32 */
        wb_reg p0 = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_NE, "u32", 3, wb_r(p0), wb_r(L->wk), wb_imm(0));
        const char *skip = wb_new_label(L->f, "nored");
        wb_emit(L->f, WB_OP_BRA_IFNOT, NULL, 2, wb_r(p0), wb_text(skip));
        wb_reg red_slot = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(addi(L, L->wk, -1)), wb_imm(wnn), wb_r(L->wn));
        wb_reg base = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(red_slot), wb_imm(nacc * 128), wb_r(L->smem));
        base = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->lane), wb_imm(4), wb_r(base));
        for (int i = 0; i < nacc; i++) /* s8 W8A8 sums stay s32: exact past 2^24 */
            wb_emit(L->f, WB_OP_ST_SHARED, s32_sums(L) ? "s32" : "f32", 2, wb_r(addi(L, base, i * 128)), wb_r(c[i]));
        wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
        wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
        wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(p0), wb_text(done));
        for (int j = 1; j < wkn; j++) {
            wb_reg b2 = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->wn), wb_imm(nacc * 128),
                            wb_r(L->smem));
            b2 = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->lane), wb_imm(4), wb_r(b2));
            b2 = addi(L, b2, (int64_t)(j - 1) * wnn * nacc * 128);
            for (int i = 0; i < nacc; i++) {
                if (s32_sums(L)) {
                    wb_reg v = wb_new_reg(L->f, WB_RC_B32);
                    wb_emit(L->f, WB_OP_LD_SHARED, "s32", 2, wb_r(v), wb_r(addi(L, b2, i * 128)));
                    wb_emit(L->f, WB_OP_ADD, "s32", 3, wb_r(c[i]), wb_r(c[i]), wb_r(v));
                    continue;
                }
                wb_reg v = wb_new_reg(L->f, WB_RC_F32);
                wb_emit(L->f, WB_OP_LD_SHARED, "f32", 2, wb_r(v), wb_r(addi(L, b2, i * 128)));
                wb_emit(L->f, WB_OP_ADD_F32, NULL, 3, wb_r(c[i]), wb_r(c[i]), wb_r(v));
            }
        }
    }
    /* mma.sync: the pair's sums once each block has reduced its own (its other warps have ended) */
    if (L->ksplit && !L->wg) {
        if (async_copies(L) && wkn == 1)
            wb_emit(L->f, WB_OP_CP_ASYNC_WAIT, NULL, 1, wb_imm(0));
        split_sum(L, c, nacc);
    }
    /* channels of this thread: n0 + wn*16 + gid (+8) */
    wb_reg ch = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->strip0), wb_imm(16), wb_r(L->gid));
    ch = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->wn), wb_imm(16), wb_r(ch));
    wb_reg bias[2] = {{-1}, {-1}}, wscale[2] = {{-1}, {-1}};
    /* W8A8's chan array: the N channel scales, then the N biases */
    wb_reg bias_base = L->w8a8 ? addr64(L, L->chan, L->n, 4) : L->chan;
    if (L->fmt->bias)
        for (int h = 0; h < 2; h++) {
            bias[h] = wb_new_reg(L->f, WB_RC_F32);
            wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(bias[h]), wb_r(addr64(L, bias_base, addi(L, ch, h * 8), 4)));
        }
    for (int h = 0; L->w8a8 && h < 2; h++) {
        wscale[h] = wb_new_reg(L->f, WB_RC_F32);
        wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(wscale[h]), wb_r(addr64(L, L->chan, addi(L, ch, h * 8), 4)));
    }
    wb_reg global = wb_gemm_tensor_scale(L);
    /* W8A8 per token: the scales of the thread's 2 x m_tiles tokens (a token past M reads row M - 1's),
     * all loaded before the first is used, so their latencies overlap, and each loaded once for both
     * of its channels */
    wb_reg as[2 * 32]; /* m_tiles <= 32 (legalize) */
    for (int j = 0; j < 2 * L->cfg->m_tiles; j++) {
        as[j] = (wb_reg){-1};
        if (!L->w8a8 || L->fmt->ag)
            continue;
        wb_reg tok = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->tig), wb_imm(2), wb_r(L->m0)),
                          (j >> 1) * 8 + (j & 1));
        wb_reg in = wb_new_reg(L->f, WB_RC_B32);
        wb_emit(L->f, WB_OP_MIN, "u32", 3, wb_r(in), wb_r(tok), wb_r(addi(L, L->m, -1)));
        as[j] = wb_new_reg(L->f, WB_RC_F32);
        wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(as[j]), wb_r(addr64(L, L->ascale, in, 4)));
    }
    int out_bf = L->fmt->out.kind == WB_KIND_BF16;
    /* the TMA pipeline: the tile goes through shared memory (store_staged), written once every consumer
     * is past its K loop (no wgmma reads the stages any more; persistent: every consumer has copied the
     * previous tile's rows out); the thread's values at rows tig * 2 (+ 1, + 8 mt), columns
     * wn * 16 + gid (+ 8) */
    wb_reg tile = {-1}, staged = {-1};
    if (L->tma) {
        tile = addi(L, L->smem, L->lay.out_off);
        staged = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->tig), wb_imm(2 * L->lay.out_row), wb_r(tile));
        staged = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->wn),
                                                                  wb_imm(16), wb_r(L->gid))),
                     wb_imm(2), wb_r(staged));
        wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
                wb_text(wb_arena_printf(L->f->arena, "store rule: the output tile staged in shared memory (%d rows of "
                                                     "%d bytes, 16 of them padding), then whole rows in 16-byte "
                                                     "chunks (2-byte stores where the output pointer is not "
                                                     "16-byte aligned)", L->lay.bm, L->lay.out_row)));
        consumers_meet(L);
    }
    for (int mt = 0; mt < L->cfg->m_tiles; mt++)
        for (int i = 0; i < 4; i++) {
            /* the token: a bound and the scale's index where the tile is not staged (staged, every
             * W8A8 token scale was loaded above: as[]) */
            wb_reg tok = {-1};
            const char *skip = NULL;
            if (!L->tma) {
                tok = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->tig), wb_imm(2), wb_r(L->m0)),
                           mt * 8 + (i & 1));
                wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
                skip = wb_new_label(L->f, "nost");
                wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(p), wb_r(tok), wb_r(L->m));
                wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(p), wb_text(skip));
            }
            wb_reg v = c[mt * 4 + i];
            if (L->w8a8)
                v = scale_sum(L, v, wscale[i >> 1], tok, as[2 * mt + (i & 1)]);
            if (global.id >= 0)
                v = op2(L, WB_OP_MUL_F32, NULL, WB_RC_F32, wb_r(v), wb_r(global));
            if (L->fmt->bias)
                v = op2(L, WB_OP_ADD_F32, NULL, WB_RC_F32, wb_r(v), wb_r(bias[i >> 1]));
            wb_reg h = cvt(L, out_bf ? "rn.bf16.f32" : "rn.f16.f32", WB_RC_B16, v);
            if (L->tma) {
                wb_emit(L->f, WB_OP_ST_SHARED, "b16", 2,
                        wb_r(addi(L, staged, (int64_t)(mt * 8 + (i & 1)) * L->lay.out_row + (i >> 1) * 16)), wb_r(h));
                continue;
            }
            wb_reg idx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(tok), wb_r(L->n), wb_r(addi(L, ch, (i >> 1) * 8)));
            wb_emit(L->f, WB_OP_ST_GLOBAL, "b16", 2, wb_r(addr64(L, L->out, idx, 2)), wb_r(h));
            wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
        }
    if (L->tma) {
        consumers_meet(L);
        store_staged(L, tile);
    }
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(done));
    if (L->cluster && !L->persist) /* (arrived past the K loop) */
        wb_emit(L->f, WB_OP_CLUSTER_WAIT, NULL, 0);
    if (!L->persist) /* persist: the next output tile first (tile_end) */
        wb_emit(L->f, WB_OP_RET, NULL, 0);
}
