/* wb_lower_gemm: tile IR -> instruction IR with mma.sync (every target that has it) or wgmma (sm_90a).
 *
 * Operand roles are swapped (out^T = W x^T): the dequantized weights are the MMA's A operand (16
 * output channels per warp), the activations its B operand (8 tokens per m-tile), so a decode GEMM
 * wastes no MMA rows. One block: warps_n x warps_k warps; each warp owns 16 channels and one k64
 * slice of every block tile; the warps_k partial sums are reduced in f32 in a fixed order.
 * Pipeline: `stages` shared-memory buffers filled by cp.async (zero-fill past M), or, without
 * cp.async, one buffer filled by plain 16-byte loads. The K loop is not unrolled.
 *
 * wgmma (warps_k = 1): four warps are one warpgroup, 64 channels. A warp's dequantized slice is
 * already wgmma's register A fragment (the per-warp layout of m64nNk16 is that of m16n8k16), the
 * activation tile is read by wgmma straight from shared memory through a descriptor (its rows are
 * 128 bytes with the 16-byte chunks XOR-swizzled by row, which is wgmma's 128B-swizzle K-major
 * layout), and the accumulator layout per warp is m16n8's repeated along N, so the epilogue is
 * shared. What the wgmma path adds (descriptors, groups, the rotated loop, TMA) is in lower_wgmma.c.
 * This file holds the kernel's prologue, where each lane reads its fragments, the K loop and the walk
 * over the tile IR's ops; the copies are lower_copy.c's, the MMAs lower_mma.c's, the epilogue
 * lower_epilogue.c's.
 *
 * W8A8 (a=s8, w=int8): the packed code words are the A registers of the integer MMA (m16n8k32 s8, four
 * m8n8k16 on sm_75, or wgmma k32 s8 on sm_90a) as loaded, the activation rows are 64 bytes per warp slice,
 * the sums stay s32 over all of K (the split-K reduction too), and the epilogue converts each once and
 * multiplies it by the channel's f32 scale (chan) and the token's (p_ascale). fp8 W8A8 (e4m3/e5m2 x
 * e4m3/e5m2, L->a8_float) is the same kernel with the fp8 m16n8k32 (same fragments for any 8-bit
 * code) and f32 sums: zeroed as f32, reduced across warps with f32 adds, no cvt in the epilogue. */
#include "lower/lower.h"

#include <string.h>

#include "lower/isa.h"
#include "lower/layout.h"

#include "lower/gemm_lower.h"

/* ---- prologue: parameters, thread coordinates */

/* The block's tile, in groups of RASTER_M token tiles (the warp-specialized TMA kernels, M > 64): the
 * blocks run in launch order, x (channel tiles) fastest, so a wave of blocks in grid order spans a
 * few token tiles and every channel tile: each wave reads the whole weight matrix again (fp8 at
 * M = 4096 on 8192 x 8192 ran with DRAM 57% busy and the tensor pipe 50% on an H100, ncu). Numbered
 * down each group's RASTER_M token tiles first, a wave covers RASTER_M token tiles by 1/RASTER_M of
 * the wave's channel tiles, and the tiles it shares stay in L2. The last group holds the rest. */
enum { RASTER_M = 8 };

/* Tile `lin` of an nx x ny grid of (channel, token) tiles in the raster order: its bx, by. */
static void raster_of(lw *L, wb_reg lin, wb_reg nx, wb_reg ny, wb_reg *bx, wb_reg *by)
{
    wb_reg span = muli(L, nx, RASTER_M), group = op2(L, WB_OP_DIV, "u32", WB_RC_B32, wb_r(lin), wb_r(span));
    wb_reg first = muli(L, group, RASTER_M);
    wb_reg gm = op2(L, WB_OP_MIN, "u32", WB_RC_B32, wb_r(op2(L, WB_OP_SUB, "u32", WB_RC_B32, wb_r(ny), wb_r(first))),
                    wb_imm(RASTER_M));
    wb_reg r = op2(L, WB_OP_SUB, "u32", WB_RC_B32, wb_r(lin), wb_r(op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(group),
                                                                       wb_r(span))));
    *by = add(L, first, op2(L, WB_OP_REM, "u32", WB_RC_B32, wb_r(r), wb_r(gm)));
    *bx = op2(L, WB_OP_DIV, "u32", WB_RC_B32, wb_r(r), wb_r(gm));
}

/* A block of a pair (cluster, split_k): its rank, and its peer's. In a quad (cluster 4) ranks 2t + c
 * take channel tile c of token tile t: the peer (rank ^ 1) shares the token tile, the token neighbour
 * (rank ^ 2) the channel tile. */
static void pair_rank(lw *L)
{
    L->crank = special(L, "%cluster_ctarank");
    L->peer = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(L->crank), wb_imm(1));
    L->chalf = L->crank;
    if (L->quad) {
        L->chalf = andi(L, L->crank, 1);
        L->thalf = shri(L, L->crank, 1);
        L->tpeer = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(L->crank), wb_imm(2));
    }
}

static void raster(lw *L, wb_reg *bx, wb_reg *by)
{
    wb_reg nx = special(L, "%nctaid.x"), ny = special(L, "%nctaid.y");
    wb_reg lin = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(*by), wb_r(nx), wb_r(*bx));
    if (!L->cluster && !L->ksplit) {
        raster_of(L, lin, nx, ny, bx, by);
        return;
    }
    /* quads (blocks 4i .. 4i + 3 along x of a grid twice as wide and half as high) take the raster
     * order's pairs of pairs of tiles: two channel tiles of two token tiles */
    if (L->quad) {
        pair_rank(L);
        raster_of(L, shri(L, lin, 2), shri(L, nx, 2), ny, bx, by);
        *bx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(*bx), wb_imm(2), wb_r(L->chalf));
        *by = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(*by), wb_imm(2), wb_r(L->thalf));
        return;
    }
    /* pairs (blocks 2i and 2i + 1 along x, ranks 0 and 1) take the raster order's tiles of a grid half as
     * wide: cluster, two neighbouring channel tiles of one token tile; split_k, one tile */
    if (L->cluster)
        pair_rank(L);
    raster_of(L, shri(L, lin, 1), shri(L, nx, 1), ny, bx, by);
    if (L->cluster)
        *bx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(*bx), wb_imm(2), wb_r(L->crank));
}

/* The block's first token and first warp strip of tile (bx, by). */
static void tile_coords(lw *L, wb_reg bx, wb_reg by)
{
    L->m0 = muli(L, by, L->lay.bm);
    if (L->w8a8 && L->fmt->ag) /* the thread's first token */
        L->tok0 = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->tig), wb_imm(2), wb_r(L->m0));
    L->strip0 = muli(L, bx, L->cfg->warps_n);
}

/* persist: a walk over the output tiles (the consumers' and the producer's alike), tiles blockIdx.x,
 * + gridDim.x, ... of the grid of channel strips (x) by token tiles (y), in the raster order; in
 * clusters of two, the pair's tiles blockIdx.x / 2, + gridDim.x / 2, ... of a grid half as wide, each
 * block taking the channel tile of its rank (as raster() does). The walk's head: this tile's
 * coordinates (L->m0, L->strip0) each time round; returns its label. */
const char *wb_gemm_walk_begin(lw *L, const char *name, wb_reg *tile, wb_reg *ntiles)
{
    *tile = special(L, "%ctaid.x");
    *tile = mov(L, "u32", WB_RC_B32, wb_r(L->cluster ? shri(L, *tile, 1) : *tile));
    wb_reg nx = divi(L, L->n, 16 * L->cfg->warps_n), ny = divi(L, addi(L, L->m, L->lay.bm - 1), L->lay.bm), bx, by;
    if (L->cluster)
        nx = shri(L, nx, 1);
    *ntiles = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(nx), wb_r(ny));
    const char *head = wb_new_label(L->f, name);
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(head));
    raster_of(L, *tile, nx, ny, &bx, &by);
    if (L->cluster)
        bx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(bx), wb_imm(2), wb_r(L->crank));
    tile_coords(L, bx, by);
    return head;
}

/* The walk's end: the next tile, back to the head while there is one. */
void wb_gemm_walk_next(lw *L, wb_reg tile, wb_reg ntiles, const char *head)
{
    wb_reg step = special(L, "%nctaid.x");
    if (L->cluster)
        step = shri(L, step, 1);
    wb_emit(L->f, WB_OP_ADD, "u32", 3, wb_r(tile), wb_r(tile), wb_r(step));
    wb_reg more = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(more), wb_r(tile), wb_r(ntiles));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(more), wb_text(head));
}

/* split_k: this block's half of K, by the rank of its pair. The block tiles count from 0 as without the
 * split (stages, parities and the loop as they are) over shifted bases: the codes by half the strip's
 * k chunks, the scale records by half its groups, the activations by K / 2 columns (TMA: a coordinate
 * offset); the strides between strips and rows stay those of the whole K. */
static void split_half(lw *L)
{
    L->nkt = shri(L, L->nkt, 1);
    wb_reg half_k = shri(L, L->kdim, 1);
    L->w = addr64(L, L->w, op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(L->crank), wb_r(shri(L, L->kchunks, 1))),
                  L->lay.w_bytes);
    if (L->fmt->g)
        L->s = addr64(L, L->s, op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(L->crank), wb_r(shri(L, L->ngroups, 1))),
                      L->lay.rec_bytes);
    wb_reg cols = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(L->crank), wb_r(half_k));
    if (L->tma)
        L->kofs = cols;
    else if (L->lay.a_bits == 4) /* s4 activations, two to a byte (K / 2 is even: whole slices) */
        L->a = addr64(L, L->a, shri(L, cols, 1), 1);
    else
        L->a = addr64(L, L->a, cols, L->lay.a_bits / 8);
}

static void lower_setup(lw *L)
{
    L->out = param(L, "p_out", 1);
    L->a = param(L, "p_a", 1);
    L->w = param(L, "p_w", 1);
    L->s = param(L, "p_scale", 1);
    L->chan = param(L, "p_chan", 1);
    L->m = param(L, "p_m", 0);
    L->n = param(L, "p_n", 0);
    L->kdim = param(L, "p_k", 0);
    if (L->w8a8 || L->afp4 || L->bs)
        L->ascale = param(L, "p_ascale", 1);
    if ((L->afp4 || L->bs) && L->fmt->ags)
        L->aglobal = param(L, "p_aglobal", 1);
    if (L->w8a8 && L->fmt->ag)
        L->kag = divi(L, L->kdim, L->fmt->ag);
    if (L->afp4 || L->bs)
        L->arow = L->fmt->ag ? divi(L, L->kdim, L->fmt->ag) : mov(L, "u32", WB_RC_B32, wb_imm(1));
    L->tid = special(L, "%tid.x");
    wb_reg bx = special(L, "%ctaid.x"), by = special(L, "%ctaid.y");
    if (L->ksplit) {
        pair_rank(L);
        if (!L->tma) /* the pair's tile (TMA: its place in the raster order) */
            bx = shri(L, bx, 1);
    }
    if (L->tma && !L->persist)
        raster(L, &bx, &by);
    else if (L->cluster) /* persist: the walk takes the pair's tiles (wb_gemm_walk_begin) */
        pair_rank(L);
    L->lane = andi(L, L->tid, 31);
    wb_reg warp = shri(L, L->tid, 5);
    L->wn = remi(L, warp, L->cfg->warps_n);
    L->wk = divi(L, warp, L->cfg->warps_n);
    L->vwk = muli(L, L->wk, L->lay.ks); /* the warp's first slice of a stage */
    L->gid = shri(L, L->lane, 2);
    L->tig = andi(L, L->lane, 3);
    if (!L->persist) /* persist: each output tile's, at the top of the tile loop (tile_begin) */
        tile_coords(L, bx, by);
    L->kchunks = shri(L, L->kdim, L->lay.slice_k == 128 ? 7 : 6); /* slices of one warp's strip along K */
    L->nkt = divi(L, L->kdim, L->lay.bk);
    L->ngroups = L->fmt->g ? divi(L, L->kdim, L->fmt->g) : mov(L, "u32", WB_RC_B32, wb_imm(1));
    L->kofs = (wb_reg){-1};
    if (L->ksplit)
        split_half(L);
    L->smem = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_SMEM_BASE, NULL, 2, wb_r(L->smem), wb_text("smem"));
    if (L->wg)
        wb_wgmma_setup(L);
    for (int i = 0; i < 16 && L->raw; i++) /* step * 4 + reg, as the weights' registers: two constants */
        L->raw_zero[i] = i < 2 ? mov(L, "b32", WB_RC_B32, wb_hex(wb_dequant_raw_zero(L->fmt, i))) : L->raw_zero[i & 1];
}

/* ---- where each lane reads its fragments in stage 0 */

/* The lane's code words in stage 0 (B words per k64, lane after lane, in its warp's slot); returns
 * the warp's slot (wn * warps_k + wk). ss: the warpgroup's weight tile instead, its four warps' slots
 * (wk * warps_n + wn for wn = 4 wg .. 4 wg + 3): eight 1024-byte atoms in a row, as its descriptor
 * reads them (wb_wgmma_steps). */
static wb_reg plan_frag_w(lw *L)
{
    if (L->ss) {
        wb_reg first = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->vwk), wb_imm(L->cfg->warps_n),
                           wb_r(andi(L, L->wn, ~3)));
        L->ss_a = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(first), wb_imm(L->lay.w_bytes), wb_r(L->smem)),
                       L->lay.w_off);
        return first;
    }
    wb_reg slot_idx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->wn), wb_imm(L->lay.vk), wb_r(L->vwk));
    wb_reg w = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(slot_idx), wb_imm(L->lay.w_bytes), wb_r(L->smem));
    L->wfrag = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->lane), wb_imm(4 * L->fmt->w.bits), wb_r(w)),
                    L->lay.w_off);
    if (L->fmt->w.bits == 8) { /* words 0..3 are 16 bytes on where gid is odd (wb_code_word_swap) */
        L->wfrag = op2(L, WB_OP_ADD, "u32", WB_RC_B32, wb_r(L->wfrag),
                       wb_r(op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_r(andi(L, L->lane, 4)), wb_imm(2))));
        L->wfrag_hi = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(L->wfrag), wb_imm(16));
    }
    return slot_idx;
}

/* 4-bit activation rows (W4A4, fp4 activations): lane 8j + row gives row `row` of chunk j & 1 of m-tile
 * j >> 1 (ldmatrix.x4: two m-tiles), swizzled as slot_a_narrow. */
static void plan_frag_a4(lw *L, int off)
{
    wb_reg row = andi(L, L->lane, 7), quad = shri(L, L->lane, 3);
    wb_reg ab = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->wk), wb_imm(L->lay.bm * 32), wb_r(L->smem));
    ab = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(shri(L, quad, 1)), wb_imm(8 * 32), wb_r(ab));
    ab = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(row), wb_imm(32), wb_r(ab)), off);
    wb_reg sw = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(andi(L, quad, 1)), wb_r(shri(L, row, 2)));
    L->afrag[0] = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(sw), wb_imm(16), wb_r(ab));
}

/* W8A8: the lane's code words as for any 8-bit format, and one ldmatrix.x4 address per m-tile: lane
 * 8j + row gives row `row` of 16-byte chunk j (k 16j..16j+15) of the token slice, swizzled as slot_a8. */
static void plan_frags_w8a8(lw *L)
{
    plan_frag_w(L);
    if (L->lay.a_bits == 4) {
        plan_frag_a4(L, L->lay.a_off);
        return;
    }
    wb_reg row = andi(L, L->lane, 7), quad = shri(L, L->lane, 3);
    wb_reg ab = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->vwk), wb_imm(L->lay.bm * 64), wb_r(L->smem));
    ab = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(row), wb_imm(64), wb_r(ab)), L->lay.a_off);
    wb_reg sw = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(quad), wb_r(andi(L, shri(L, row, 1), 3)));
    L->afrag[0] = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(sw), wb_imm(16), wb_r(ab));
}

/* Block-scaled fp4 x fp4: the code words as W4A4's, the activation codes (at q_off, where the 16-bit
 * kernels' fp4 codes land) as W4A4's, and the lane's SFA word in the warp's scale region: channel
 * gid + 8 (tig & 1) (lower_block.c). */
static void plan_frags_block(lw *L)
{
    wb_reg slot_idx = plan_frag_w(L);
    wb_reg sb = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(slot_idx),
                    wb_imm(L->lay.groups_per_chunk * L->lay.rec_bytes), wb_r(L->smem));
    wb_reg ch = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, L->tig, 1)), wb_imm(8), wb_r(L->gid));
    L->sfrag = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(ch), wb_imm(4), wb_r(sb)), L->lay.s_off);
    plan_frag_a4(L, L->lay.q_off);
}

/* Fragment addresses in stage 0, computed once: an iteration adds the read stage offset. */
static void plan_frags(lw *L)
{
    if (L->bs) {
        plan_frags_block(L);
        return;
    }
    if (L->w8a8) {
        plan_frags_w8a8(L);
        return;
    }
    wb_reg slot_idx = plan_frag_w(L);
    wb_reg sb = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(slot_idx),
                    wb_imm(L->lay.groups_per_chunk * L->lay.rec_bytes), wb_r(L->smem));
    L->sfrag = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->gid), wb_imm(4), wb_r(sb)), L->lay.s_off);
    wb_reg row = andi(L, L->lane, 7), quad = shri(L, L->lane, 3);
    wb_reg ab = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->vwk), wb_imm(L->lay.bm * 128), wb_r(L->smem));
    ab = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(row), wb_imm(128), wb_r(ab)), L->lay.a_off);
    /* steps: matrices in the order b0 of step 2h, b0 of 2h + 1, b1 of 2h, b1 of 2h + 1 (chunks 4h, 4h + 2,
     * 4h + 1, 4h + 3), each MMA's pair of B registers side by side */
    wb_reg chunk = quad;
    if (L->steps)
        chunk = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, quad, 1)), wb_imm(2), wb_r(shri(L, quad, 1)));
    for (int h = 0; h < 2; h++) {
        wb_reg sw = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(addi(L, chunk, h * 4)), wb_r(row));
        L->afrag[h] = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(sw), wb_imm(16), wb_r(ab));
    }
    if (L->gemv) {
        /* lane 8 mi + r: row r of ldmatrix's matrix mi, B's column r of MMA mi / 2 (its b0 or b1 by mi % 2):
         * 16 k of slice 2 (mi / 2) + r / 4 of the warp's stage, in token 0's row of the tile (row 0,
         * unswizzled), k 32 (r % 4) / 2 ..: the 16-byte pieces 2 (r % 4) and 2 (r % 4) + 1, b0 the odd
         * one in odd slices, so that the 8 rows of each matrix fall in distinct banks */
        wb_reg mi = shri(L, L->lane, 3), s = shri(L, row, 2);
        wb_reg slice = andi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(shri(L, mi, 1)), wb_imm(2), wb_r(s)),
                            L->lay.ks - 1);
        wb_reg odd = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(s), wb_r(andi(L, mi, 1)));
        wb_reg piece = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, row, 3)), wb_imm(2), wb_r(odd));
        wb_reg g = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(add(L, L->vwk, slice)), wb_imm(L->lay.bm * 128),
                       wb_r(L->smem));
        g = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(piece), wb_imm(16), wb_r(g));
        L->gemv_frag = addi(L, g, L->lay.a_off);
    }
}

/* ---- the K loop */

static void lower_kloop(lw *L)
{
    /* tcgen05: a stage is refilled only after the MMAs of two tiles ago, which read it, are complete */
    int stage = L->lay.stage, ahead = L->cfg->stages - 1 - L->tc, pdl = (L->t->features & WB_FEAT_GRIDDEP) != 0;
    /* When is the next kernel let in? Decode kernels of one m-tile (M <= 8 on mma.sync) let it in at
     * the top: once every block has started, the driver schedules the next kernel's blocks into the
     * slots these leave, where they stream their first weight tiles (below) and wait. That took 4 to
     * 7% off M = 1 on three of the four suite shapes (H200, two runs), but cost 17 to 33% at M = 16 on
     * two (the next kernel's blocks pile into the SMs that free first), and 2% at M = 4096; so every
     * other kernel lets it in after its K loop (lower_epilogue.c). docs/perf.md. */
    L->pdl_top = pdl && L->cfg->mma == WB_MMA_SYNC && L->cfg->m_tiles == 1;
    if (L->pdl_top)
        wb_emit(L->f, WB_OP_GRIDDEP_LAUNCH, NULL, 0);
    if (L->tc)
        wb_tc_setup(L);
    if (!L->tma) /* TMA loads: the producer warp's bulk copies instead (lower_tma.c) */
        wb_gemm_plan_copies(L);
    plan_frags(L);
    L->kt = mov(L, "u32", WB_RC_B32, wb_imm(0));
    if (!L->persist) /* persist: the stages run on from one output tile to the next */
        L->ro = mov(L, "u32", WB_RC_B32, wb_imm(0));
    if (L->tma && !L->persist)
        wb_tma_first_stage(L);
    /* programmatic dependent launch: everything above overlaps the previous kernel's tail, and so do
     * the first stages' weight codes and scales, which no kernel writes; the activations, their scales
     * and the output wait until the previous kernel has finished */
    int early = pdl && async_copies(L) ? COPY_WEIGHTS : 0;
    if (L->tma && pdl) /* the producer copies every stage; the consumers' loads and stores come after */
        wb_emit(L->f, WB_OP_GRIDDEP_WAIT, NULL, 0);
    for (int pass = early ? 0 : 1; !L->tma && pass < 2; pass++) {
        if (pass == 1 && pdl)
            wb_emit(L->f, WB_OP_GRIDDEP_WAIT, NULL, 0);
        for (int s = 0; async_copies(L) && s < ahead; s++) {
            wb_reg kts = mov(L, "u32", WB_RC_B32, wb_imm(s));
            wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
            const char *skip = wb_new_label(L->f, "pro");
            wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(p), wb_r(kts), wb_r(L->nkt));
            wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(p), wb_text(skip));
            wb_reg off = mov(L, "u32", WB_RC_B32, wb_imm((int64_t)s * stage));
            wb_gemm_issue_parts(L, off, kts, pass ? COPY_ALL & ~early : COPY_WEIGHTS);
            wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
            /* one group a stage, after the wait: group 0 then holds every early copy too */
            if (pass)
                wb_emit(L->f, WB_OP_CP_ASYNC_COMMIT, NULL, 0);
        }
    }
    if (L->tcbs) /* block-scaled tcgen05: the tokens' scales of tile 0 (global memory) */
        wb_tcbs_setup(L);
    else if (L->afp4) /* the conversion's fixed addresses, and the scales of tile 0 (global memory) */
        wb_act4_setup(L);
    if (L->bs) /* the activation scales of tile 0 (global memory) */
        wb_block_setup(L);
    if (async_copies(L))
        L->wo = mov(L, "u32", WB_RC_B32, wb_imm((int64_t)ahead * stage));
    if (L->rot) { /* tile 0 lands and its code words are loaded before the loop (wb_wgmma_kloop_end) */
        wb_wgmma_land(L, ahead - 1, 0);
        if (L->afp4)
            wb_act4_tile(L, L->kt);
        L->wpre = L->ss ? NULL : value_regs(L, L->wpre_value, wb_gemm_w_words(L));
        if (L->wpre)
            wb_gemm_load_w_words(L, L->wpre, 1);
        if (L->pp)
            wb_wgmma_pp_setup(L);
        if (L->late)
            wb_wgmma_late_setup(L);
        wb_wgmma_ahead_setup(L);
    }
    /* grouped W8A8 on mma.sync: tile 0's slice factors here, each next tile's during this one (lower_mma.c) */
    if (L->grouped && !L->wg && !L->tc && (L->sscale = wb_gemm_new_slice_scales(L)))
        wb_gemm_slice_scales(L, L->kt, L->sscale, (wb_reg){-1});
    const char *head = wb_new_label(L->f, "kloop");
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(head));
    L->loop_head = head;
    if (L->rot) {
        /* the rotated loop lands each tile at the previous iteration's end (wb_wgmma_kloop_end) */
    } else if (async_copies(L)) {
        wb_emit(L->f, WB_OP_CP_ASYNC_WAIT, NULL, 1, wb_imm(ahead - 1));
        if (L->wg || L->tc) /* make this thread's copies visible to the MMA, which reads the async proxy */
            wb_emit(L->f, WB_OP_FENCE_PROXY_ASYNC, NULL, 0);
        if (L->tma)
            wb_tma_wait(L, L->kt);
        if (L->group_sync)
            wb_emit(L->f, WB_OP_BAR_SYNC_N, NULL, 2, wb_r(L->gbar), wb_imm(32 * L->cfg->warps_n));
        else
            wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
        if (L->tc)
            wb_tc_top(L);
        wb_reg next = addi(L, L->kt, ahead);
        wb_gemm_issue_ahead(L, next);
    } else {
        wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
        wb_gemm_issue_stage(L, L->ro, L->kt);
        wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
    }
}

wb_reg wb_gemm_advance_stage(lw *L, wb_reg off)
{
    int S = L->cfg->stages, stage = L->lay.stage;
    wb_reg next = addi(L, off, stage);
    wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(p), wb_r(next), wb_imm((int64_t)S * stage));
    wb_emit(L->f, WB_OP_SELP, "b32", 4, wb_r(off), wb_imm(0), wb_r(next), wb_r(p));
    return off;
}

static void lower_kloop_end(lw *L)
{
    const char *head = L->loop_head;
    if (L->rot) {
        wb_wgmma_kloop_end(L);
        return;
    }
    if (L->cfg->stages > 1) {
        wb_gemm_advance_stage(L, L->ro);
        if (async_copies(L))
            wb_gemm_advance_stage(L, L->wo);
    }
    wb_emit(L->f, WB_OP_ADD, "u32", 3, wb_r(L->kt), wb_r(L->kt), wb_imm(1));
    wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(p), wb_r(L->kt), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(p), wb_text(head));
}

/* ---- fragments */

/* The lane's B words of packed codes at the read stage into q (fresh registers when fresh), in the
 * widest aligned vectors. */
void wb_gemm_load_w_words(lw *L, wb_reg *q, int fresh)
{
    /* B words of each k64 chunk of the slice, the chunks 128 * B bytes apart */
    int bits = L->fmt->w.bits, words = wb_gemm_w_words(L), vec = bits % 4 == 0 ? 4 : bits % 2 == 0 ? 2 : 1;
    wb_reg base = at_read(L, L->wfrag, L->lay.w_bytes), hi = {-1};
    if (bits == 8) /* words 4..7 of each chunk: the other 16-byte half (wb_code_word_swap) */
        hi = at_read(L, L->wfrag_hi, L->lay.w_bytes);
    for (int i = 0; fresh && i < words; i++)
        q[i] = wb_new_reg(L->f, WB_RC_B32);
    for (int i = 0; i < words; i += vec) {
        wb_reg addr = bits == 8 ? addi(L, i % 8 ? hi : base, (i / 8) * 1024)
                                : addi(L, base, (i / bits) * 128 * bits + 4 * (i % bits));
        if (vec == 4)
            wb_emit(L->f, WB_OP_LD_SHARED_V4, NULL, 5, wb_r(q[i]), wb_r(q[i + 1]), wb_r(q[i + 2]), wb_r(q[i + 3]),
                    wb_r(addr));
        else if (vec == 2)
            wb_emit(L->f, WB_OP_LD_SHARED_V2, NULL, 3, wb_r(q[i]), wb_r(q[i + 1]), wb_r(addr));
        else
            wb_emit(L->f, WB_OP_LD_SHARED, "u32", 2, wb_r(q[i]), wb_r(addr));
    }
}

static void lower_frag_w(lw *L, int value)
{
    if (L->rot) /* loaded ahead, into the same registers every iteration (pp: into the other half's) */
        return;
    wb_reg *q = value_regs(L, value, wb_gemm_w_words(L));
    if (q)
        wb_gemm_load_w_words(L, q, 1);
}

/* Per group: scale pair for row gid, for row gid+8, and the same for -(magic + zero) with zp=int.
 * For mma_scaled (one group per slice): the two scales as f32 instead of pairs. */
static void lower_frag_scale(lw *L, int value)
{
    int gpc = L->lay.groups_per_chunk, zp = L->fmt->zp != WB_ZP_NONE;
    wb_reg *r = value_regs(L, value, gpc * 4);
    if (!r)
        return;
    wb_reg base = at_read(L, L->sfrag, gpc * L->lay.rec_bytes);
    for (int gi = 0; gi < gpc; gi++) {
        for (int z = 0; z <= zp; z++) {
            wb_reg addr = addi(L, base, gi * L->lay.rec_bytes + z * 32);
            if (!z && L->scale_f32) {
                for (int h = 0; h < 2; h++) {
                    wb_reg f = wb_new_reg(L->f, WB_RC_F32);
                    if (!strcmp(L->T, "bf16")) { /* bf16 -> f32: the 16 bits on top */
                        wb_reg word = wb_new_reg(L->f, WB_RC_B32);
                        wb_emit(L->f, WB_OP_LD_SHARED, "u32", 2, wb_r(word), wb_r(addr));
                        word = h ? andi(L, word, 0xFFFF0000) : op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_r(word), wb_imm(16));
                        wb_emit(L->f, WB_OP_MOV, "b32", 2, wb_r(f), wb_r(word));
                    } else {
                        wb_reg half = wb_new_reg(L->f, WB_RC_B16);
                        wb_emit(L->f, WB_OP_LD_SHARED, "b16", 2, wb_r(half), wb_r(addi(L, addr, 2 * h)));
                        wb_emit(L->f, WB_OP_CVT, "f32.f16", 2, wb_r(f), wb_r(half));
                    }
                    r[gi * 4 + h] = f;
                }
                continue;
            }
            wb_reg rec = wb_new_reg(L->f, WB_RC_B32);
            wb_emit(L->f, WB_OP_LD_SHARED, "u32", 2, wb_r(rec), wb_r(addr));
            r[gi * 4 + z * 2 + 0] = prmt(L, rec, 0x1010);
            r[gi * 4 + z * 2 + 1] = prmt(L, rec, 0x3232);
        }
    }
}

/* Activation fragments by ldmatrix.x4 from the swizzled tile: b[(mt*4 + step)*2 + half]. */
static void lower_frag_a(lw *L, int value)
{
    if (L->wg) {
        wb_wgmma_frag_desc(L, value);
        return;
    }
    if (L->tc) {
        wb_tc_frag_desc(L, value);
        return;
    }
    int mt_n = L->cfg->m_tiles;
    wb_reg *b = value_regs(L, value, mt_n * 8);
    if (!b)
        return;
    if (L->a4 || L->bs) { /* b[mt*2 + j] = chunk j: s4 (e2m1) codes k 32j + 8 tig .. + 7 (m16n8k64's b0, b1) */
        wb_reg addr = add(L, L->afrag[0], L->ro);
        for (int mt = 0; mt < mt_n; mt += 2) {
            wb_reg *d = &b[mt * 2];
            for (int i = 0; i < 4; i++)
                d[i] = wb_new_reg(L->f, WB_RC_B32);
            if (mt + 1 < mt_n)
                wb_emit(L->f, WB_OP_LDMATRIX_X4, NULL, 5, wb_r(d[0]), wb_r(d[1]), wb_r(d[2]), wb_r(d[3]),
                        wb_r(addi(L, addr, mt * 8 * 32)));
            else
                wb_emit(L->f, WB_OP_LDMATRIX_X2, NULL, 3, wb_r(d[0]), wb_r(d[1]), wb_r(addi(L, addr, mt * 8 * 32)));
        }
        return;
    }
    if (L->w8a8) { /* b[mt*4 + j] = chunk j: (b0, b1) of k32 step s are chunks 2s and 2s + 1 */
        wb_reg addr = at_read(L, L->afrag[0], L->lay.bm * L->lay.a_row);
        for (int mt = 0; mt < mt_n; mt++) {
            wb_reg *d = &b[mt * 4];
            for (int i = 0; i < 4; i++)
                d[i] = wb_new_reg(L->f, WB_RC_B32);
            wb_emit(L->f, WB_OP_LDMATRIX_X4, NULL, 5, wb_r(d[0]), wb_r(d[1]), wb_r(d[2]), wb_r(d[3]),
                    wb_r(addi(L, addr, mt * 8 * 64)));
        }
        return;
    }
    for (int h = 0; h < 2; h++) {
        wb_reg addr = at_read(L, L->afrag[h], L->lay.bm * 128);
        for (int mt = 0; mt < mt_n; mt++) {
            wb_reg *d = &b[(mt * 4 + 2 * h) * 2];
            for (int i = 0; i < 4; i++)
                d[i] = wb_new_reg(L->f, WB_RC_B32);
            wb_emit(L->f, WB_OP_LDMATRIX_X4, NULL, 5, wb_r(d[0]), wb_r(d[1]), wb_r(d[2]), wb_r(d[3]),
                    wb_r(addi(L, addr, mt * 8 * 128)));
        }
    }
}

static void lower_dequant(lw *L, const wb_tile_op *o)
{
    if (L->tcbs) { /* block-scaled tcgen05: the codes and scale records go to the MMA as they are */
        L->vals[o->result] = L->vals[o->args[0]];
        L->tcbs_sw = L->vals[o->args[1]];
        return;
    }
    wb_reg *out = value_regs(L, o->result, 16);
    int gos[4];
    wb_dequant_natural_groups(L->fmt, L->lay.groups_per_chunk, gos);
    if (out && L->raw && L->vals[o->args[0]])
        wb_lower_dequant_raw(L->f, L->fmt, L->gemv, L->steps, L->vals[o->args[0]], out);
    else if (out && L->vals[o->args[0]] && L->vals[o->args[1]])
        wb_lower_dequant(L->f, L->fmt, gos, !o->unscaled, L->vals[o->args[0]], L->vals[o->args[1]], out);
}

/* persist (the TMA pipeline, cfg.persistent): the consumers' loop over output tiles. Before it the
 * mbarriers are set up and the producer branches off into its own walk over the same tiles
 * (lower_tma.c); the stage offset and the count of block tiles of K consumed run on across output
 * tiles, so the stages the producer filled for the next tile while the consumers stored this one are
 * the ones they read next. Each iteration: the tile's coordinates (the raster order over an nx x ny
 * grid), zeroed sums, the K loop, the epilogue. */
static void tile_begin(lw *L)
{
    wb_tma_setup(L);
    L->ro = mov(L, "u32", WB_RC_B32, wb_imm(0));
    wb_tma_first_stage(L);
    L->tile_head = wb_gemm_walk_begin(L, "tile", &L->tile, &L->ntiles);
}

static void tile_end(lw *L)
{
    wb_gemm_walk_next(L, L->tile, L->ntiles, L->tile_head);
    if (L->cluster) { /* the pair meets once, after its last tile (lower_epilogue.c says why) */
        wb_emit(L->f, WB_OP_CLUSTER_ARRIVE, NULL, 0);
        wb_emit(L->f, WB_OP_CLUSTER_WAIT, NULL, 0);
    }
    if (L->t->features & WB_FEAT_GRIDDEP)
        wb_emit(L->f, WB_OP_GRIDDEP_LAUNCH, NULL, 0);
    wb_emit(L->f, WB_OP_RET, NULL, 0);
}


wb_status wb_lower_gemm(wb_kernel *k, const wb_target *t, int annotate, wb_func *f)
{
    lw L = {0};
    L.f = f;
    L.k = k;
    L.t = t;
    L.fmt = &k->fmt;
    L.cfg = &k->cfg;
    L.T = wb_format_compute(&k->fmt).kind == WB_KIND_BF16 ? "bf16" : "f16";
    L.w8a8 = wb_format_w8a8(&k->fmt);
    L.a8_float = wb_format_w8a8_fp8(&k->fmt);
    L.f16_wide = k->cfg.mma == WB_MMA_SYNC && wb_w4a8_f16(&k->fmt, t->arch);
    if (L.f16_wide) /* both operands become f16 pairs (lower_widen.c) */
        L.T = "f16";
    L.w4_f8 = L.a8_float && wb_type_w4(k->fmt.w) && !L.f16_wide;
    L.a4 = wb_format_w4a4(&k->fmt);
    L.bs = k->block_scale;
    L.afp4 = wb_format_fp4_acts(&k->fmt) && !L.bs;
    L.w4_factor = L.w8a8 && !L.f16_wide ? wb_widen_factor(&k->fmt) : 1.0f;
    L.grouped = L.w8a8 && (k->fmt.g > 0 || k->fmt.ag > 0);
    L.wg = k->cfg.mma == WB_MMA_WGMMA;
    L.tc = k->cfg.mma == WB_MMA_TCGEN05;
    L.tma = k->cfg.load == WB_LOAD_TMA;
    L.persist = L.tma && k->cfg.persistent;
    L.cluster = L.tma && k->cfg.cluster > 1;
    L.quad = L.cluster && k->cfg.cluster == 4;
    L.ksplit = (L.wg || k->cfg.mma == WB_MMA_SYNC) && k->cfg.split_k > 1;
    L.tcbs = L.tc ? wb_isa_tc_block_scale_vec(&k->fmt, t->arch) : 0;
    L.rot = L.wg;
    L.wpre_value = -1;
    for (int i = 0; i < k->nops; i++)
        if (k->ops[i].op == WB_TOP_LOAD_FRAG && k->ops[i].operand == WB_OPERAND_W)
            L.wpre_value = k->ops[i].result;
    if (L.rot && L.wpre_value < 0)
        L.rot = 0;
    L.ss = L.wg && wb_w8_smem_operand(&k->fmt, t->arch);
    L.pp = L.rot && L.w8a8 && !L.ss;
    L.pair = L.pp && L.a8_float && !L.grouped;
    /* (fp8 at 192 tokens: its sums and one slice product set fill the registers; the late loop needs two) */
    L.late = L.rot && L.tma && (L.ss || !L.w8a8) && !L.grouped && !L.afp4 && !(L.ss && k->cfg.m_tiles > 16);
    /* mma.sync with cp.async and K split inside the block: a warp reads only its own slices of a stage
     * (and its wk's activation rows, which its warps_n warps share), so the warps of one wk copy those
     * and meet on barrier 1 + wk alone (ids 1 to 15), not the whole block. fp4 activations and the
     * block-scaled MMA convert or read the tile block-wide and keep the block barrier. Measured (H100,
     * events, interleaved rounds; docs/perf.md, thirty-fourth and thirty-fifth sessions): W4A8-fp8 at
     * M = 16 1.085x on 8192 x 8192, 1.076x on 6144 x 4096, 0.977x on 4096 x 14336 (28672 x 4096's
     * kernel splits no K in the block), at M = 1 1.011x and 1.061x; W4A8 per channel 1.021x to
     * 1.040x. With 16-bit activations it ran 0.87x to 1.04x (W4A16 at M = 16: 0.93x on 8192 x 8192,
     * 0.87x on 28672 x 4096), so those keep the block barrier: 8-bit activations only. */
    L.group_sync = k->cfg.mma == WB_MMA_SYNC && k->cfg.load == WB_LOAD_CP_ASYNC && k->cfg.warps_k > 1 &&
                   k->cfg.warps_k < 16 && !L.afp4 && !L.bs && L.w8a8;
    if (L.tma && !L.rot)
        return wb_fail(WB_ERR_UNSUPPORTED, "--load tma is built for the rotated wgmma loop (this kernel has no "
                                           "weight fragment to load ahead)");
    wb_layout_get(&k->fmt, &k->cfg, t->arch, &L.lay);
    L.vals = wb_arena_alloc(f->arena, (size_t)k->nvalues * sizeof *L.vals);
    if (!L.vals)
        return wb_fail(WB_ERR_NOMEM, "out of memory lowering a kernel");
    for (int i = 0; i < k->nops; i++) {
        L.scale_f32 |= k->ops[i].op == WB_TOP_MMA_SCALED;
        L.raw |= k->ops[i].op == WB_TOP_DEQUANT && k->ops[i].unscaled;
    }
    /* the raw rule at one token tile (its bias MMAs are as many as the weights' own there) */
    L.raw = L.raw && k->cfg.m_tiles == 1 && !L.wg && !L.tc && !L.w8a8 && !L.a4 && !L.afp4 && !L.bs &&
            wb_dequant_raw(&k->fmt, k->cfg.gemv > 0);
    L.gemv = L.raw && k->cfg.gemv > 0 && k->fmt.w.kind == WB_KIND_INT;
    L.steps = L.gemv && k->fmt.w.bits == 2 && (t->features & WB_FEAT_MMA_K16);
    lower_setup(&L);

    int body = -1; /* pp: the first op of the loop body, lowered a second time for the second half */
    for (int i = 0; i < k->nops; i++) {
        const wb_tile_op *o = &k->ops[i];
        if (o->op == WB_TOP_KLOOP)
            body = i + 1;
        if (o->op == WB_TOP_KLOOP_END && L.sub + 1 < L.lay.ks && body >= 0) { /* the warp's next slice */
            L.sub++;
            i = body - 1;
            continue;
        }
        if (o->op == WB_TOP_KLOOP_END && (L.pp || L.late) && !L.half && body >= 0) {
            wb_wgmma_kloop_mid(&L);
            L.half = 1;
            i = body - 1;
            continue;
        }
        const char *text = annotate ? wb_tile_op_text(k, o) : NULL;
        if (annotate)
            wb_emit(f, WB_OP_COMMENT, NULL, 1, wb_text(wb_arena_printf(f->arena, "ir: %s", text ? text : "?")));
        switch (o->op) {
        case WB_TOP_LOAD_TILE: break; /* the K loop issues the copies of every declared tile */
        case WB_TOP_KLOOP:
            lower_kloop(&L);
            break;
        case WB_TOP_LOAD_FRAG:
            if (o->operand == WB_OPERAND_W)
                lower_frag_w(&L, o->result);
            else if (o->operand == WB_OPERAND_SCALE && L.bs)
                wb_block_frag_scale(&L, o->result);
            else if (o->operand == WB_OPERAND_SCALE && L.tcbs)
                wb_tcbs_frag_scale(&L, o->result);
            else if (o->operand == WB_OPERAND_SCALE)
                lower_frag_scale(&L, o->result);
            else if (o->operand == WB_OPERAND_ASCALE)
                wb_block_frag_ascale(&L, o->result);
            else
                lower_frag_a(&L, o->result);
            break;
        case WB_TOP_DEQUANT: lower_dequant(&L, o); break;
        case WB_TOP_DEQUANT_TILE: /* the rotated wgmma loop converts each tile as it lands instead */
            if (L.tcbs) /* block-scaled tcgen05: only the tokens' scales (and signs) are staged */
                wb_tcbs_acts(&L);
            else if (!L.rot)
                wb_act4_tile(&L, L.kt);
            break;
        case WB_TOP_ACC:
            if (L.persist)
                tile_begin(&L);
            else if (L.tma) /* the producer branches off before the sums are zeroed: ptxas allots the
                               registers of code before setmaxnreg by the block's average (168), and the
                               consumers' sums and operands may take more */
                wb_tma_setup(&L);
            wb_gemm_lower_acc(&L, o->result);
            break;
        case WB_TOP_MMA: wb_gemm_lower_mma(&L, o->args[0], o->args[1], o->args[2]); break;
        case WB_TOP_MMA_SCALED: wb_gemm_lower_mma_scaled(&L, o->args[0], o->args[1], o->args[2], o->args[3]); break;
        case WB_TOP_MMA_BLOCK: wb_block_mma(&L, o->args[0], o->args[1], o->args[2], o->args[3], o->args[4]); break;
        case WB_TOP_KLOOP_END: lower_kloop_end(&L); break;
        case WB_TOP_EPILOGUE:
            wb_gemm_lower_epilogue(&L, o->args[0]);
            if (L.persist)
                tile_end(&L);
            break;
        case WB_TOP_COUNT: break;
        }
    }
    if (f->oom)
        return wb_fail(WB_ERR_NOMEM, "out of memory lowering a kernel");
    return WB_OK;
}
