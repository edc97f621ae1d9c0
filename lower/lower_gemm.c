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
 *
 * W8A8 (a=s8, w=int8): the packed code words are the A registers of the integer MMA (m16n8k32 s8, four
 * m8n8k16 on sm_75, or wgmma k32 s8 on sm_90a) as loaded, the activation rows are 64 bytes per warp slice,
 * the sums stay s32 over all of K (the split-K reduction too), and the epilogue converts each once and
 * multiplies it by the channel's f32 scale (chan) and the token's (p_ascale). fp8 W8A8 (e4m3/e5m2 x
 * e4m3/e5m2, L->a8_float) is the same kernel with the fp8 m16n8k32 (same fragments for any 8-bit
 * code) and f32 sums: zeroed as f32, reduced across warps with f32 adds, no cvt in the epilogue. */
#include "lower/lower.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/codes.h"
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
     * other kernel lets it in after its K loop (lower_epilogue). docs/perf.md. */
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
    /* grouped W8A8 on mma.sync: tile 0's slice factors here, each next tile's during this one (lower_mma) */
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

/* The sums are s32 (the integer MMA of s8 W8A8 without slice scales); every other kernel's are f32. */
static int s32_sums(const lw *L) { return L->w8a8 && !L->a8_float && !L->grouped && !L->lay.tc_wide; }

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

static void lower_acc(lw *L, int value)
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

static void lower_mma(lw *L, int acc, int weights, int acts)
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
static void lower_mma_scaled(lw *L, int acc, int weights, int acts, int scales)
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
            if (sums) { /* p - bias x sum x 2^(lift - 24), the sums' scale (lower_epilogue) */
                double k = -ldexp(1.0, L->fmt->w.bits - 1 + wb_dequant_raw_lift(L->fmt, (i & 3) >> 1) - 24);
                sum = op3(L, WB_OP_FMA_X2, "f32", WB_RC_F32, wb_r(gs), wb_f32((float)k), wb_r(sum));
            } else if (bias) {
                sum = op2(L, WB_OP_ADD_F32, NULL, WB_RC_F32, wb_r(p[i]), wb_r(q[i]));
            }
            wb_emit(L->f, WB_OP_FMA_X2, "f32", 4, wb_r(c[i]), wb_r(sum), wb_r(s[gi * 4 + ((i & 3) >> 1)]), wb_r(c[i]));
        }
    }
}

/* ---- epilogue: split-K reduction through shared memory, bias, round, guarded store */

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
    if (L->cluster) { /* the pair meets once, after its last tile (lower_epilogue says why) */
        wb_emit(L->f, WB_OP_CLUSTER_ARRIVE, NULL, 0);
        wb_emit(L->f, WB_OP_CLUSTER_WAIT, NULL, 0);
    }
    if (L->t->features & WB_FEAT_GRIDDEP)
        wb_emit(L->f, WB_OP_GRIDDEP_LAUNCH, NULL, 0);
    wb_emit(L->f, WB_OP_RET, NULL, 0);
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

static void lower_epilogue(lw *L, int acc)
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
            lower_acc(&L, o->result);
            break;
        case WB_TOP_MMA: lower_mma(&L, o->args[0], o->args[1], o->args[2]); break;
        case WB_TOP_MMA_SCALED: lower_mma_scaled(&L, o->args[0], o->args[1], o->args[2], o->args[3]); break;
        case WB_TOP_MMA_BLOCK: wb_block_mma(&L, o->args[0], o->args[1], o->args[2], o->args[3], o->args[4]); break;
        case WB_TOP_KLOOP_END: lower_kloop_end(&L); break;
        case WB_TOP_EPILOGUE:
            lower_epilogue(&L, o->args[0]);
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
