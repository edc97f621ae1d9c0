/* The tcgen05 path of the GEMM lowering (sm_100a, sm_103a; --mma tcgen05): tcgen05.mma with the
 * accumulator in tensor memory (TMEM): kind::f16 for 16-bit activations (f32 sums), and for W8A8
 * kind::i8 (s8 x s8, exact s32 sums; sm_100a; sm_103a widens both to f16 for kind::f16, below) or
 * kind::f8f6f4 (e4m3/e5m2, f32 sums), with scales per channel and token applied after K, or per group
 * along K applied to each tile's product (promote, below); fp4 activations are made a 16-bit tile by
 * the block first (lower_act4.c) and take kind::f16, except NVFP4 x NVFP4 and MXFP4 x MXFP4, which take
 * the block-scaled kinds with the codes as they are (lower_tcgen05_bs.c). lower_gemm.c calls in here
 * where L->tc says so.
 *
 * A block is 8 warps, 128 output channels (the MMA's M) by 8 * m_tiles tokens (its N, 16 to 256), one
 * k64 tile (k128 of 8-bit codes: a 128-byte row either way) per iteration. Roles stay swapped
 * (out^T = W x^T): A is the weights, B the activations. tcgen05.mma reads both operands from shared
 * memory, so each warp dequantizes its 16 channels of the tile as the other paths do (the m16n8k16 A
 * fragment; 8-bit codes: the m16n8k32 one, int4 widened to s8 or e4m3 first) and stores them into a
 * weight tile laid out as the activation tile is: 128-byte K-major rows, 16-byte chunks XOR-swizzled
 * by row (the 128B swizzle, 1024-byte atoms). There are two weight tiles, for even and odd k tiles.
 * Iteration kt:
 *
 *   wait for tile kt's copies, fence them into the async proxy, block barrier;
 *   wait for the MMAs of tile kt - 2 (they read weight tile kt & 1 and the stage the copies go to next);
 *   issue the copies of tile kt + stages - 2; dequantize tile kt into weight tile kt & 1;
 *   fence, barrier; thread 0 issues the tile's four MMAs and commits them to mbarrier kt & 1.
 *
 * So the MMAs of tile kt - 1 run while tile kt is dequantized. After the loop every thread waits for
 * the last commit (tcgen05.commit tracks all earlier MMAs of its thread), reads its TMEM lane (warp w
 * owns lanes 32 (w % 4).., i.e. channels, and half w / 4 of the token columns) with tcgen05.ld
 * 32x32b, and stores. Warp 0 allocates the TMEM columns (a power of two from 32 holding the tokens)
 * before the loop and frees them at the end.
 *
 * Descriptors (PTX ISA, tcgen05 shared memory descriptor): start address >> 4 in bits 0..13, leading
 * byte offset 16 >> 4 in 16..29 (unused by swizzled K-major tiles), stride between 8-row groups
 * 1024 >> 4 in 32..45, the fixed 0b001 in 46..48, base offset 0, swizzle mode 2 (128 bytes) in
 * 61..63; a step (k16 of 16-bit values, k32 of 8-bit codes) is 32 bytes further along the row. The
 * instruction descriptor: D f32 (bits 4..5 = 1) or s32 (2, kind::i8), A and B types in bits 7..9 and
 * 10..12 (kind::f16: f16 0, bf16 1; kind::i8: s8 1; kind::f8f6f4: e4m3 0, e5m2 1), both K-major (bits
 * 15, 16 zero), N >> 3 in bits 17..22, M >> 4 in bits 24..28.
 *
 * s8 x s8 where the target has no kind::i8 (sm_103a, layout tc_wide): both operands are widened exactly
 * to f16 and multiplied by kind::f16 with f32 sums. A k128 tile of codes is then two k64 halves of
 * 16-bit values: each thread widens its 16 code registers into 32 and stores them into the two halves
 * of weight tile kt & 1, and the block widens the stage's 8-bit activation tile into the two halves of
 * 16-bit activation tile kt & 1 (tc_x_off, read by the MMAs of tile kt while tile kt + 1 is made), each
 * half swizzled as above; eight k16 MMAs a tile. Exactness: every code and every product (|p| <= 2^14)
 * is exact, and the f32 sums are exact while they stay integers below 2^24, which K <= 1024 guarantees
 * for any codes (K x 2^14 <= 2^24); past that each addition rounds to f32 (24 significant bits), where
 * the s32 sums of mma.sync stay exact (docs/architecture.md).
 *
 * No Blackwell GPU was available to this project: these kernels are assembled by ptxas for sm_100a
 * and sm_103a and executed by the CPU interpreter of the tests (tests/interp.c), which models
 * the instructions from the PTX ISA; they have not run on hardware. */
#include "lower/gemm_lower.h"

#include <string.h>

enum { TC_STEPS = 4, TC_TILE = WB_TC_M * 128 };

/* s8 x s8 widened to f16 (sm_103a, L->lay.tc_wide) */
static int wide(const lw *L) { return L->lay.tc_wide; }

/* The block widens the read stage's 8-bit activation tile (bm rows of 128 bytes, chunk c of row r at
 * (c ^ (r & 7)) * 16) into 16-bit activation tile buf: chunk c (k 16c .. 16c + 15) becomes 16-bit
 * chunks 2 (c % 4) and 2 (c % 4) + 1 of half c / 4, swizzled the same way. One item: one chunk; items
 * 16i .. 16i + 15 are rows 2i and 2i + 1, the second quarter warp's chunks 0..3 (and the first's
 * 4..7) in row 2i + 1: a quarter warp then reads 8 distinct chunk positions (rows whose r & 4 agree)
 * and stores into 8 (rows whose r & 1 differ, so the even and the odd 16-bit chunks), where one row's
 * chunks 0..7 stored into two halves at the same 4 positions, two lanes to a bank. */
static void widen_acts(lw *L, wb_reg buf, const wb_reg k[3])
{
    int bm = L->lay.bm, threads = L->lay.threads, items = bm * 8;
    wb_reg xbase = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(2 * bm * 128), wb_r(L->smem));
    xbase = addi(L, xbase, L->lay.tc_x_off);
    wb_reg src0 = addi(L, add(L, L->smem, L->ro), L->lay.a_off);
    for (int i = 0; i * threads < items; i++) {
        wb_reg id = addi(L, L->tid, (int64_t)i * threads), valid = {-1};
        if ((i + 1) * threads > items) {
            valid = wb_new_reg(L->f, WB_RC_PRED);
            wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(valid), wb_r(id), wb_imm(items));
        }
        wb_reg c = andi(L, id, 7), r = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(shri(L, id, 3)),
                                               wb_r(andi(L, shri(L, id, 2), 1)));
        wb_reg r7 = andi(L, r, 7);
        wb_reg row = muli(L, r, 128);
        wb_reg src = add(L, add(L, src0, row), muli(L, op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(c), wb_r(r7)), 16));
        wb_reg w[4];
        for (int j = 0; j < 4; j++)
            w[j] = mov(L, "u32", WB_RC_B32, wb_imm(0));
        wb_emit(L->f, WB_OP_LD_SHARED_V4, NULL, 5, wb_r(w[0]), wb_r(w[1]), wb_r(w[2]), wb_r(w[3]), wb_r(src));
        if (valid.id >= 0)
            wb_guard_last(L->f, valid, 0);
        wb_reg v[8];
        for (int j = 0; j < 4; j++)
            wb_widen_s8_f16(L, w[j], k, &v[2 * j]);
        /* half c / 4 at xbase + (c / 4) * bm * 128 + row; 16-bit chunk 2 (c % 4) + e */
        wb_reg dst = add(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(shri(L, c, 2)), wb_imm(bm * 128), wb_r(xbase)),
                         row);
        wb_reg j0 = muli(L, andi(L, c, 3), 2);
        for (int e = 0; e < 2; e++) {
            wb_reg sw = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(addi(L, j0, e)), wb_r(r7));
            wb_emit(L->f, WB_OP_ST_SHARED_V4, NULL, 5, wb_r(add(L, dst, muli(L, sw, 16))), wb_r(v[4 * e]),
                    wb_r(v[4 * e + 1]), wb_r(v[4 * e + 2]), wb_r(v[4 * e + 3]));
            if (valid.id >= 0)
                wb_guard_last(L->f, valid, 0);
        }
    }
}

/* TMEM columns to allocate: a power of two from 32 that holds the block's tokens (one f32 column each),
 * twice for grouped W8A8 (a tile's product in buffer tile & 1). */
static int tmem_cols(const lw *L)
{
    int c = 32, need = L->lay.bm * (L->grouped ? 2 : 1) + (L->tcbs ? wb_tcbs_sf_col(L, 2) - L->lay.bm : 0);
    while (c < need)
        c *= 2;
    return c;
}

/* Grouped W8A8 (scales per group of K on the weights, g, or the activations, ag; both multiples of 128,
 * so a k128 tile lies in one group of each): the MMAs of tile t write its product, fresh, into TMEM
 * buffer t & 1 (bm columns), and once they are complete (two iterations later, or after the loop)
 * every thread reads its lane of its half of the columns, multiplies each value by the tile's weight
 * scale of its channel and activation scale of the column's token, and adds it to its f32 sums. */
static void promote(lw *L, wb_reg tile)
{
    int cols = L->lay.bm / 2, s32 = !L->a8_float && !L->lay.tc_wide;
    wb_emit(L->f, WB_OP_TC_FENCE_AFTER, NULL, 0);
    wb_reg k0 = muli(L, tile, L->lay.slice_k), wsc = {-1}, gi = {-1};
    if (L->fmt->g) { /* p_scale: [K/g][N] f32 */
        wsc = wb_new_reg(L->f, WB_RC_F32);
        wb_reg idx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(divi(L, k0, L->fmt->g)), wb_r(L->n), wb_r(L->tc_ch));
        wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(wsc), wb_r(addr64(L, L->s, idx, 4)));
    }
    if (L->fmt->ag)
        gi = divi(L, k0, L->fmt->ag);
    wb_reg at = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, tile, 1)), wb_imm(L->lay.bm), wb_r(L->tc_lane));
    for (int c0 = 0; c0 < cols; c0 += 8) {
        wb_reg v[8];
        for (int i = 0; i < 8; i++)
            v[i] = wb_new_reg(L->f, s32 ? WB_RC_B32 : WB_RC_F32);
        wb_emit(L->f, WB_OP_TC_LD_X8, NULL, 9, wb_r(v[0]), wb_r(v[1]), wb_r(v[2]), wb_r(v[3]), wb_r(v[4]), wb_r(v[5]),
                wb_r(v[6]), wb_r(v[7]), wb_r(addi(L, at, c0)));
        wb_emit(L->f, WB_OP_TC_WAIT_LD, NULL, 0);
        for (int i = 0; i < 8; i++) {
            wb_reg f = wsc;
            if (L->fmt->ag) { /* p_ascale: [M][K/ag] f32; a token past M keeps 0 (never stored) */
                wb_reg tok = addi(L, L->tc_tok0, c0 + i), in = wb_new_reg(L->f, WB_RC_PRED);
                wb_reg as = mov(L, "f32", WB_RC_F32, wb_f32(0.0f));
                wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(in), wb_r(tok), wb_r(L->m));
                wb_reg idx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(tok), wb_r(L->kag), wb_r(gi));
                wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(as), wb_r(addr64(L, L->ascale, idx, 4)));
                wb_guard_last(L->f, in, 0);
                f = L->fmt->g ? op2(L, WB_OP_MUL_F32, NULL, WB_RC_F32, wb_r(wsc), wb_r(as)) : as;
            }
            wb_reg part = s32 ? cvt(L, "rn.f32.s32", WB_RC_F32, v[i]) : v[i];
            wb_emit(L->f, WB_OP_FMA_X2, "f32", 4, wb_r(L->tc_sums[c0 + i]), wb_r(part), wb_r(f), wb_r(L->tc_sums[c0 + i]));
        }
    }
}

/* The descriptors' high word: stride 1024 bytes between 8-row groups, the fixed 0b001, 128B swizzle. */
static wb_reg desc_hi(lw *L)
{
    return mov(L, "b32", WB_RC_B32, wb_hex((2u << 29) | (1u << 14) | (1024 >> 4)));
}

/* Before the pipeline: two mbarriers (one commit each), the TMEM allocation (warp 0), the instruction
 * descriptor and this thread's place in the weight tiles. */
void wb_tc_setup(lw *L)
{
    L->elected = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_EQ, "u32", 3, wb_r(L->elected), wb_r(L->tid), wb_imm(0));
    L->mbar = addi(L, L->smem, L->lay.tc_mbar_off);
    for (int b = 0; b < 2; b++) {
        wb_emit(L->f, WB_OP_MBAR_INIT, NULL, 2, wb_r(addi(L, L->mbar, 8 * b)), wb_imm(1));
        wb_guard_last(L->f, L->elected, 0);
    }
    wb_emit(L->f, WB_OP_FENCE_MBAR_INIT, NULL, 0);
    wb_reg tslot = addi(L, L->smem, L->lay.tc_tmem_off), not0 = wb_new_reg(L->f, WB_RC_PRED);
    const char *skip = wb_new_label(L->f, "noalloc");
    wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(not0), wb_r(L->tid), wb_imm(32));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(not0), wb_text(skip));
    wb_emit(L->f, WB_OP_TC_ALLOC, NULL, 2, wb_r(tslot), wb_imm(tmem_cols(L)));
    wb_emit(L->f, WB_OP_TC_RELINQUISH, NULL, 0);
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
    wb_emit(L->f, WB_OP_TC_FENCE_BEFORE, NULL, 0);
    wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
    wb_emit(L->f, WB_OP_TC_FENCE_AFTER, NULL, 0);
    L->tmem = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_LD_SHARED, "u32", 2, wb_r(L->tmem), wb_r(tslot));
    /* the thread's TMEM lane (its channel) and half of the token columns: warp w reads lanes 32 (w % 4)..
     * and the columns of half w / 4 */
    wb_reg warp = shri(L, L->tid, 5), quarter = andi(L, warp, 3), half = shri(L, warp, 2);
    wb_reg lane_row = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(quarter), wb_imm(32), wb_r(L->lane));
    L->tc_ch = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->strip0), wb_imm(16), wb_r(lane_row));
    wb_reg col0 = muli(L, half, L->lay.bm / 2);
    L->tc_lane = add(L, add(L, L->tmem, op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_r(quarter), wb_imm(21))), col0);
    L->tc_tok0 = add(L, L->m0, col0);
    if (L->grouped) {
        L->tc_sums = wb_arena_alloc(L->f->arena, (size_t)(L->lay.bm / 2) * sizeof *L->tc_sums);
        for (int i = 0; L->tc_sums && i < L->lay.bm / 2; i++)
            L->tc_sums[i] = mov(L, "f32", WB_RC_F32, wb_f32(0.0f));
        L->f->oom |= !L->tc_sums;
        L->pfalse = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_EQ, "u32", 3, wb_r(L->pfalse), wb_r(L->tid), wb_hex(0xFFFFFFFFu));
    }
    L->desc_hi = desc_hi(L);
    uint32_t d = 1, a = !strcmp(L->T, "bf16"), b = a; /* kind::f16: f32 sums, f16 (0) or bf16 (1) */
    if (wide(L)) /* s8 widened: kind::f16, f16 x f16 */
        a = b = 0;
    else if (L->w8a8 && !L->a8_float) /* kind::i8: s32 sums, s8 (1) x s8 */
        d = 2, a = b = 1;
    else if (L->a8_float) /* kind::f8f6f4: e4m3 (0) or e5m2 (1); int4 weights go in as e4m3 */
        a = !L->w4_f8 && L->fmt->w.ebits == 5, b = L->fmt->a.ebits == 5;
    uint32_t idesc = d << 4 | a << 7 | b << 10 | (uint32_t)(L->lay.bm >> 3) << 17 | (uint32_t)(WB_TC_M >> 4) << 24;
    L->tc_idesc = mov(L, "b32", WB_RC_B32, wb_hex(L->tcbs ? wb_tcbs_idesc(L) : idesc));
    L->ptrue = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_NE, "u32", 3, wb_r(L->ptrue), wb_r(L->tid), wb_hex(0xFFFFFFFFu));
    if (L->tcbs) { /* block-scaled fp4: its own tiles and descriptors (lower_tcgen05_bs.c) */
        wb_tcbs_desc_hi(L);
        return;
    }
    /* the thread's rows of the weight tile: 16 wn + gid and + 8, 4 tig bytes into a chunk; chunk c of
     * a row sits at (c ^ (row & 7)) * 16, and row & 7 = gid */
    wb_reg row = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->wn), wb_imm(16), wb_r(L->gid));
    wb_reg base = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(row), wb_imm(128), wb_r(L->smem));
    L->tc_arow = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->tig), wb_imm(4), wb_r(base)),
                      L->lay.tc_a_off);
    if (wide(L)) { /* 8 bytes of f16 a code register: byte 8 (tig & 1) of 16-bit chunk 2u + (tig >> 1) */
        L->tc_arow = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, L->tig, 1)), wb_imm(8), wb_r(base)),
                          L->lay.tc_a_off);
        wb_reg g2 = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(L->gid), wb_r(shri(L, L->tig, 1)));
        for (int u = 0; u < 4; u++) /* (2u + t2) ^ gid = 2u ^ (t2 ^ gid): 2u has no bit 0 */
            L->tc_xor[u] = op2(L, WB_OP_SHL, "b32", WB_RC_B32,
                               wb_r(op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(g2), wb_imm(2 * u))), wb_imm(4));
        return;
    }
    for (int c = 0; c < 8; c++)
        L->tc_xor[c] = op2(L, WB_OP_SHL, "b32", WB_RC_B32,
                           wb_r(op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(L->gid), wb_imm(c))), wb_imm(4));
}

/* Every thread: wait until the MMAs of k tile `tile` are complete (their commit arrives on mbarrier
 * tile & 1, whose completions alternate parity: the one of tile t has parity (t >> 1) & 1). */
void wb_tc_wait_tile(lw *L, wb_reg tile)
{
    wb_reg mb = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, tile, 1)), wb_imm(8), wb_r(L->mbar));
    mbar_wait(L, mb, andi(L, shri(L, tile, 1), 1), "tcwait");
}

/* The loop's top, after the barrier: from kt = 2 on, wait for the MMAs of tile kt - 2, which read the
 * weight tile this iteration writes and the stage its copies fill. */
void wb_tc_top(lw *L)
{
    wb_reg early = wb_new_reg(L->f, WB_RC_PRED);
    const char *skip = wb_new_label(L->f, "tcfirst");
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(early), wb_r(L->kt), wb_imm(2));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(early), wb_text(skip));
    wb_tc_wait_tile(L, addi(L, L->kt, -2));
    if (L->grouped) /* its product, in the buffer this iteration's MMAs write */
        promote(L, addi(L, L->kt, -2));
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
}

/* The activation tile of the read stage as the MMA's B: one descriptor per k16 step. */
void wb_tc_frag_desc(lw *L, int value)
{
    if (L->tcbs) {
        wb_tcbs_frag_desc(L, value);
        return;
    }
    int halves = wide(L) ? 2 : 1;
    wb_reg *d = value_regs(L, value, halves * TC_STEPS);
    if (!d)
        return;
    for (int h = 0; h < halves; h++) {
        /* widened s8: half h of 16-bit activation tile kt & 1 (widen_acts) */
        wb_reg at = addi(L, add(L, L->smem, L->ro), L->lay.a_off);
        if (wide(L))
            at = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, L->kt, 1)), wb_imm(2 * L->lay.bm * 128),
                             wb_r(L->smem)),
                      L->lay.tc_x_off + h * L->lay.bm * 128);
        wb_reg lo = smem_desc_lo(L, at);
        for (int step = 0; step < TC_STEPS; step++) {
            wb_reg *x = &d[h * TC_STEPS + step];
            *x = wb_new_reg(L->f, WB_RC_B64);
            wb_emit(L->f, WB_OP_PACK_B64, NULL, 3, wb_r(*x), wb_r(addi(L, lo, 2 * step)), wb_r(L->desc_hi));
        }
    }
}

/* The tcgen05.mma kind: f16 (16-bit activations), i8 or f8f6f4 (W8A8). */
static const char *tc_kind(const lw *L) { return !L->w8a8 || wide(L) ? "f16" : L->a8_float ? "f8f6f4" : "i8"; }

/* The tile's 16 registers a into weight tile kt & 1, then thread 0 issues the tile's MMAs into TMEM and
 * commits them to mbarrier kt & 1. Register i holds 4 bytes of row gid + 8 (i & 1), 16-byte chunk i / 2,
 * at byte 4 tig of it: for 16-bit values the m16n8k16 A fragments of k16 steps 0..3 (register step * 4
 * + j: row gid + 8 (j & 1), k 16 step + 8 (j >> 1) + 2 tig), for 8-bit codes the m16n8k32 ones of k64
 * chunk c and k32 step s (register 8 c + 4 s + j: k 64 c + 32 s + 16 (j >> 1) + 4 tig). */
void wb_tc_mma(lw *L, const wb_reg *a, const wb_reg *bdesc)
{
    if (L->tcbs) {
        wb_tcbs_mma(L, a, bdesc);
        return;
    }
    char wn[8], an[8];
    const char *types = !L->w8a8 ? wb_arena_printf(L->f->arena, "%s x %s -> f32", L->T, L->T)
                        : wide(L) ? wb_arena_printf(L->f->arena, "%s x s8 widened exactly to f16 x f16 -> f32 (%s has "
                                                                 "no kind::i8; exact sums for K <= 1024, f32 rounding "
                                                                 "past that)", wb_gemm_mma_w_type(L, wn), L->t->name)
                        : wb_arena_printf(L->f->arena, "%s x %s -> %s", wb_gemm_mma_w_type(L, wn),
                                          wb_type_name(L->fmt->a, an), L->a8_float ? "f32" : "s32");
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(wb_arena_printf(L->f->arena, "mma rule: %s, tcgen05.mma kind::%s M=%d N=%d (A: the %s weights "
                                                 "through a swizzled shared tile; B: the activation tile; D in "
                                                 "tensor memory)",
                                    types ? types : "?", tc_kind(L), WB_TC_M, L->lay.bm,
                                    wide(L) ? "widened code words of the" : L->w8a8 ? "code words of the" : "dequantized")));
    wb_reg buf = andi(L, L->kt, 1);
    int halves = wide(L) ? 2 : 1;
    if (wide(L)) {
        /* register i = 8 c + 4 s + j (k 64 c + 32 s + 16 (j >> 1) + 4 tig.., row gid + 8 (j & 1)): 8 bytes
         * of f16 into half c of weight tile buf, row gid + 8 (j & 1), 16-bit chunk 2 (2 s + (j >> 1)) +
         * (tig >> 1), byte 8 (tig & 1) */
        wb_reg k[3];
        wb_widen_s8_f16_consts(L, k);
        widen_acts(L, buf, k);
        wb_reg tile = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(2 * TC_TILE), wb_r(L->tc_arow));
        for (int i = 0; i < 16; i++) {
            int c = i >> 3, s = (i >> 2) & 1, j = i & 3;
            wb_reg v[2];
            wb_widen_s8_f16(L, a[i], k, v);
            wb_reg at = add(L, addi(L, tile, c * TC_TILE + (j & 1) * 1024), L->tc_xor[2 * s + (j >> 1)]);
            wb_emit(L->f, WB_OP_ST_SHARED, "b32", 2, wb_r(at), wb_r(v[0]));
            wb_emit(L->f, WB_OP_ST_SHARED, "b32", 2, wb_r(addi(L, at, 4)), wb_r(v[1]));
        }
    } else {
        wb_reg tile = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(TC_TILE), wb_r(L->tc_arow));
        for (int i = 0; i < 16; i++) {
            wb_reg at = add(L, addi(L, tile, (i & 1) * 1024), L->tc_xor[i >> 1]);
            wb_emit(L->f, WB_OP_ST_SHARED, "b32", 2, wb_r(at), wb_r(a[i]));
        }
    }
    /* into the async proxy: these stores, and this thread's earlier ones into the stage's 16-bit
     * activation tile (fp4 activations, lower_act4.c; widened s8, above) */
    wb_emit(L->f, WB_OP_FENCE_PROXY_ASYNC, NULL, 0);
    wb_emit(L->f, WB_OP_TC_FENCE_BEFORE, NULL, 0);
    wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
    wb_emit(L->f, WB_OP_TC_FENCE_AFTER, NULL, 0);
    /* the first step starts the sums (kt = 0), or, grouped, the tile's own product in buffer kt & 1 */
    wb_reg pacc = L->pfalse, dacc = L->tmem;
    if (L->grouped) {
        dacc = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(L->lay.bm), wb_r(L->tmem));
    } else {
        pacc = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_NE, "u32", 3, wb_r(pacc), wb_r(L->kt), wb_imm(0));
    }
    wb_reg abase = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(halves * TC_TILE), wb_r(L->smem));
    for (int h = 0; h < halves; h++) {
        wb_reg alo = smem_desc_lo(L, addi(L, abase, L->lay.tc_a_off + h * TC_TILE));
        for (int step = 0; step < TC_STEPS; step++) {
            wb_reg ad = wb_new_reg(L->f, WB_RC_B64);
            wb_emit(L->f, WB_OP_PACK_B64, NULL, 3, wb_r(ad), wb_r(addi(L, alo, 2 * step)), wb_r(L->desc_hi));
            wb_emit(L->f, WB_OP_TC_MMA, tc_kind(L), 5, wb_r(dacc), wb_r(ad), wb_r(bdesc[h * TC_STEPS + step]),
                    wb_r(L->tc_idesc), wb_r(h || step ? L->ptrue : pacc));
            wb_guard_last(L->f, L->elected, 0);
        }
    }
    wb_emit(L->f, WB_OP_TC_COMMIT, NULL, 1,
            wb_r(op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(8), wb_r(L->mbar))));
    wb_guard_last(L->f, L->elected, 0);
}

/* After the K loop: wait for the last tile's MMAs, read this thread's TMEM lane (its channel) over its
 * warp's half of the token columns, 32 at a time, add the bias, round, store; then free the TMEM. */
void wb_tc_epilogue(lw *L)
{
    if ((L->t->features & WB_FEAT_GRIDDEP) && !L->pdl_top)
        wb_emit(L->f, WB_OP_GRIDDEP_LAUNCH, NULL, 0);
    wb_tc_wait_tile(L, addi(L, L->nkt, -1));
    wb_emit(L->f, WB_OP_TC_FENCE_AFTER, NULL, 0);
    if (L->grouped) { /* the last two tiles' products (the loop promoted those before) */
        wb_reg one = wb_new_reg(L->f, WB_RC_PRED);
        const char *skip = wb_new_label(L->f, "onetile");
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(one), wb_r(L->nkt), wb_imm(2));
        wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(one), wb_text(skip));
        promote(L, addi(L, L->nkt, -2));
        wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
        promote(L, addi(L, L->nkt, -1));
    }
    wb_reg ch = L->tc_ch, bias = {-1}, wscale = {-1};
    /* W8A8's chan array: the N channel scales, then the N biases */
    if (L->fmt->bias) {
        bias = wb_new_reg(L->f, WB_RC_F32);
        wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(bias),
                wb_r(addr64(L, L->w8a8 ? addr64(L, L->chan, L->n, 4) : L->chan, ch, 4)));
    }
    if (L->w8a8) {
        wscale = wb_new_reg(L->f, WB_RC_F32);
        wb_emit(L->f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(wscale), wb_r(addr64(L, L->chan, ch, 4)));
    }
    int s32 = L->w8a8 && !L->a8_float && !wide(L) && !L->grouped;
    wb_reg global = wb_gemm_tensor_scale(L); /* fp4 activations */
    int cols = L->lay.bm / 2, chunk = cols < 32 ? cols : 32, out_bf = L->fmt->out.kind == WB_KIND_BF16;
    /* TMEM address: lane in the high half, column in the low half (grouped: the sums are in registers) */
    wb_reg taddr = L->tc_lane, tok0 = L->tc_tok0;
    for (int c0 = 0; c0 < cols; c0 += chunk) {
        wb_reg v[32];
        for (int j = 0; L->grouped && j < chunk; j++)
            v[j] = L->tc_sums[c0 + j];
        for (int j = 0; !L->grouped && j < chunk; j += 8) {
            for (int i = 0; i < 8; i++)
                v[j + i] = wb_new_reg(L->f, s32 ? WB_RC_B32 : WB_RC_F32);
            wb_emit(L->f, WB_OP_TC_LD_X8, NULL, 9, wb_r(v[j]), wb_r(v[j + 1]), wb_r(v[j + 2]), wb_r(v[j + 3]),
                    wb_r(v[j + 4]), wb_r(v[j + 5]), wb_r(v[j + 6]), wb_r(v[j + 7]), wb_r(addi(L, taddr, c0 + j)));
        }
        if (!L->grouped)
            wb_emit(L->f, WB_OP_TC_WAIT_LD, NULL, 0);
        for (int j = 0; j < chunk; j++) {
            wb_reg tok = addi(L, tok0, c0 + j), p = wb_new_reg(L->f, WB_RC_PRED);
            const char *skip = wb_new_label(L->f, "nost");
            wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(p), wb_r(tok), wb_r(L->m));
            wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(p), wb_text(skip));
            wb_reg x = L->w8a8 ? wb_gemm_scale_sum(L, v[j], wscale, tok) : v[j];
            if (global.id >= 0)
                x = op2(L, WB_OP_MUL_F32, NULL, WB_RC_F32, wb_r(x), wb_r(global));
            if (L->fmt->bias)
                x = op2(L, WB_OP_ADD_F32, NULL, WB_RC_F32, wb_r(x), wb_r(bias));
            wb_reg h = cvt(L, out_bf ? "rn.bf16.f32" : "rn.f16.f32", WB_RC_B16, x);
            wb_reg idx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(tok), wb_r(L->n), wb_r(ch));
            wb_emit(L->f, WB_OP_ST_GLOBAL, "b16", 2, wb_r(addr64(L, L->out, idx, 2)), wb_r(h));
            wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
        }
    }
    /* every warp's reads are done before warp 0 frees the columns */
    wb_emit(L->f, WB_OP_TC_FENCE_BEFORE, NULL, 0);
    wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
    wb_emit(L->f, WB_OP_TC_FENCE_AFTER, NULL, 0);
    wb_reg not0 = wb_new_reg(L->f, WB_RC_PRED);
    const char *done = wb_new_label(L->f, "done");
    wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(not0), wb_r(L->tid), wb_imm(32));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(not0), wb_text(done));
    wb_emit(L->f, WB_OP_TC_DEALLOC, NULL, 2, wb_r(L->tmem), wb_imm(tmem_cols(L)));
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(done));
    wb_emit(L->f, WB_OP_RET, NULL, 0);
}
