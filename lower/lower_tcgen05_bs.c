/* tcgen05 block-scaled fp4 (sm_100a, sm_103a; --mma tcgen05; L->tcbs = the scale_vec of
 * wb_isa_tc_block_scale_vec): NVFP4 x NVFP4 on tcgen05.mma kind::mxf4nvf4.block_scale.scale_vec::4X
 * (ue4m3 scales per 16), MXFP4 x MXFP4 on kind::mxf4.block_scale.scale_vec::2X (ue8m0 per 32). The
 * e2m1 codes of both operands go to the MMA as they are, from shared memory; the scale factors are
 * copied into tensor memory by tcgen05.cp and named by the MMA. The rest of the kernel is
 * lower_tcgen05.c's: the pipeline, the mbarrier commits, the f32 sums in TMEM, the epilogue (which
 * multiplies them by the tensor scales, ags and wgs).
 *
 * A k64 tile per iteration, one MMA (K = 64 of dense fp4: 32 bytes of each row). Both operands are
 * K-major with the 32-byte swizzle (descriptor mode 6: rows of 32 bytes, 8-row atoms of 256 bytes,
 * 16-byte chunk c of row r at (c ^ ((r >> 2) & 1)) * 16), two codes to a byte, the even k in the low
 * nibble (PTX ISA "Packing format used for matrix A and B by .kind::mxf4 and .kind::mxf4nvf4 in Shared
 * Memory": two 4-bit elements in an 8-bit container, no padding):
 * - B, the activations: the codes as cp.async lands them at q_off (32-byte token rows, already in
 *   that swizzle: slot_a_narrow).
 * - A, the weights: packing is per target, not per --mma, so on sm_100a/sm_103a the weights keep the
 *   16-bit kernels' layout (docs/layout.md): a lane's word j holds the codes of rows gid and gid + 8 at
 *   k 16 j + 2 tig, + 1, + 8, + 9. Each thread pulls its 16 bytes of K-ordered codes out of them (two
 *   masks and a shift a word) and stores them byte by byte into weight tile kt & 1 (the lane's bytes of
 *   a row are 4 apart: lanes tig = 0..3 fill a word together).
 *
 * Scale factors (PTX ISA "Block Scaling", Table 54; "Matrix Descriptors"; tcgen05.cp):
 * - M = 128 rows of A have 4 (4X) or 2 (2X) scales of a k64 tile; row m's are the bytes of the TMEM
 *   word at lane m % 32 and column sfa + m / 32 (byte j: block j; 2X: bytes 0, 1 with scale-factor id
 *   0), duplicated in the four 32-lane quarters. The N columns of B (tokens) the same: column n at lane
 *   n % 32, column sfb + n / 32. Such a 32-lane x 4-column block is one tcgen05.cp.32x128b.warpx4 of a
 *   512-byte shared chunk, row r (16 bytes: its lane's 4 columns) at 16 r (descriptor without swizzle,
 *   stride 128 between 8-row groups), which the copy writes to lane r of every quarter.
 * - The weights' scales come from their scale records (T pairs: f16 of an e4m3 value, bf16 of an e8m0
 *   one), made bytes again exactly: e4m3 as (|v| x 2^-8 in f16) >> 7, e8m0 as the bf16 exponent field.
 *   The activations' from p_ascale (4 or 2 bytes per token and tile, loaded one tile ahead).
 * - ue4m3 is unsigned: a negative e4m3 scale keeps its magnitude and its sign flips the sign bits of
 *   its block's codes (exact: e2m1 is sign and magnitude), as lower_block.c does: a weight block is
 *   the word of one k16 step, an activation block two words of the token's row, which its thread
 *   rewrites in the stage (rarely: only when one of its scales is negative).
 * The SF staging chunks and TMEM columns are double-buffered by tile parity, as the weight tiles are:
 * tile kt's are written once the MMAs of tile kt - 2, which read the same buffers, are complete
 * (wb_tc_top), and their commit covers the copies too (tcgen05.commit tracks every earlier tcgen05
 * async operation of its thread, tcgen05.cp included; a tcgen05.cp and a later tcgen05.mma of one
 * thread run in order).
 *
 * Instruction descriptor (PTX ISA Table 47, .kind::mxf4 and .kind::mxf4nvf4): dense (bit 2 = 0), SFB
 * id 0 (bits 4..5), A and B E2M1 = 1 (bits 7..9, 10..11), K-major (15, 16 zero), N >> 3 (17..22),
 * scale type UE4M3 = 0 / UE8M0 = 1 (bit 23), M >> 7 (27..28), SFA id 0 (29..30), K = 64 (bit 31 = 0). */
#include "lower/gemm_lower.h"

#include <string.h>

enum { SF_CHUNK = 512, SFB_CHUNKS = 2, TILE_ROW = 32 };

static int nvfp4(const lw *L) { return L->tcbs == 4; }

static wb_reg lop3(lw *L, wb_reg a, wb_reg b, uint32_t c, int lut)
{
    wb_reg r = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_LOP3, NULL, 5, wb_r(r), wb_r(a), wb_r(b), wb_hex(c), wb_imm(lut));
    return r;
}

static wb_reg prmt2(lw *L, wb_reg a, wb_reg b, uint32_t sel) { return op3(L, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(a), wb_r(b), wb_hex(sel)); }

/* TMEM columns: the sums (bm), then per buffer 16: SFA in 4, SFB in up to 8 (256 tokens) */
int wb_tcbs_sf_col(const lw *L, int buf) { return L->lay.bm + 16 * buf; }

/* Byte offset of row m's scale word in an SF staging area: chunk m / 128, row m % 32, column m / 32 % 4. */
static wb_reg sf_offset(lw *L, wb_reg m)
{
    wb_reg off = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, m, 31)), wb_imm(16),
                     wb_r(muli(L, andi(L, shri(L, m, 5), 3), 4)));
    return op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(shri(L, m, 7)), wb_imm(SF_CHUNK), wb_r(off));
}

uint32_t wb_tcbs_idesc(const lw *L)
{
    return 1u << 7 | 1u << 10 | (uint32_t)(L->lay.bm >> 3) << 17 | (uint32_t)(nvfp4(L) ? 0 : 1) << 23 |
           (uint32_t)(WB_TC_M >> 7) << 27;
}

/* The scale word of this thread's token for block tile kt into dst (4 bytes, or 2 zero-extended),
 * where the token is below M and kt below the tile count; dst keeps its value elsewhere. */
static void load_sfb(lw *L, wb_reg kt, wb_reg dst)
{
    wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(p), wb_r(kt), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_AND, "pred", 3, wb_r(p), wb_r(p), wb_r(L->tcbs_in));
    wb_reg at = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(kt), wb_imm(L->tcbs), wb_r(L->tcbs_row));
    wb_block_load_sf(L, addr64(L, L->ascale, at, 1), nvfp4(L) ? 4 : 2, p, dst);
}

/* Before the loop: thread t < bm owns token m0 + t's scales; tile 0's are loaded. */
void wb_tcbs_setup(lw *L)
{
    wb_reg tok = add(L, L->m0, L->tid), own = wb_new_reg(L->f, WB_RC_PRED);
    L->tcbs_in = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(own), wb_r(L->tid), wb_imm(L->lay.bm));
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(L->tcbs_in), wb_r(tok), wb_r(L->m));
    wb_emit(L->f, WB_OP_AND, "pred", 3, wb_r(L->tcbs_in), wb_r(L->tcbs_in), wb_r(own));
    L->tcbs_row = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(tok), wb_r(L->arow));
    L->tcbs_next = mov(L, "u32", WB_RC_B32, wb_imm(0));
    load_sfb(L, mov(L, "u32", WB_RC_B32, wb_imm(0)), L->tcbs_next);
    L->tcbs_sfb_at = add(L, addi(L, L->smem, L->lay.tc_sf_off + 2 * SF_CHUNK), sf_offset(L, L->tid));
}

/* A negative e4m3 activation scale: flip the sign bits of its block's codes in the token's row of the
 * read stage (word c of the row, k 8c.., is in block c / 2; chunk c / 4 of row r at (c / 4 ^ (r >> 2
 * & 1)) * 16). Skipped unless one of the four scales is negative. */
static void flip_act_signs(lw *L, wb_reg s)
{
    wb_reg neg = wb_new_reg(L->f, WB_RC_PRED), any = andi(L, s, 0x80808080);
    const char *skip = wb_new_label(L->f, "nosign");
    wb_emit(L->f, WB_OP_SETP_EQ, "u32", 3, wb_r(neg), wb_r(any), wb_imm(0));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(neg), wb_text(skip));
    wb_reg r = L->tid, row = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(r), wb_imm(TILE_ROW), wb_r(L->smem));
    row = addi(L, add(L, row, L->ro), L->lay.q_off);
    wb_reg x = andi(L, shri(L, r, 2), 1);
    for (int c = 0; c < 8; c++) {
        wb_reg chunk = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(x), wb_imm(c / 4));
        wb_reg at = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(chunk), wb_imm(16), wb_r(row)), (c % 4) * 4);
        wb_reg w = wb_new_reg(L->f, WB_RC_B32);
        wb_emit(L->f, WB_OP_LD_SHARED, "u32", 2, wb_r(w), wb_r(at));
        wb_reg sign = prmt2(L, s, s, 0x1111u * (uint32_t)(8 | c / 2)); /* the block's sign in every byte */
        wb_emit(L->f, WB_OP_ST_SHARED, "u32", 2, wb_r(at), wb_r(lop3(L, w, sign, 0x88888888u, 0x78)));
    }
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
}

/* After the loop top (tile kt landed, the MMAs of kt - 2 complete): this thread's token's scale word
 * of tile kt (magnitudes) into SFB staging buffer kt & 1, its codes' signs fixed; the next tile's word
 * loaded. The stores reach the MMA through wb_tcbs_mma's fence and barrier. */
void wb_tcbs_acts(lw *L)
{
    wb_reg s = mov(L, "b32", WB_RC_B32, wb_r(L->tcbs_next));
    load_sfb(L, addi(L, L->kt, 1), L->tcbs_next);
    const char *skip = wb_new_label(L->f, "nosfb");
    wb_reg not_own = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(not_own), wb_r(L->tid), wb_imm(L->lay.bm));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(not_own), wb_text(skip));
    if (nvfp4(L))
        flip_act_signs(L, s);
    wb_reg at = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, L->kt, 1)), wb_imm(SFB_CHUNKS * SF_CHUNK),
                    wb_r(L->tcbs_sfb_at));
    wb_emit(L->f, WB_OP_ST_SHARED, "b32", 2, wb_r(at), wb_r(nvfp4(L) ? andi(L, s, 0x7F7F7F7F) : s));
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
}

/* The slice's scale records at the read stage: record word gid of each group (rows gid and gid + 8). */
void wb_tcbs_frag_scale(lw *L, int value)
{
    int gpc = L->lay.groups_per_chunk;
    wb_reg *r = value_regs(L, value, gpc);
    if (!r)
        return;
    wb_reg base = at_read(L, L->sfrag, gpc * L->lay.rec_bytes);
    for (int gi = 0; gi < gpc; gi++) {
        r[gi] = wb_new_reg(L->f, WB_RC_B32);
        wb_emit(L->f, WB_OP_LD_SHARED, "u32", 2, wb_r(r[gi]), wb_r(addi(L, base, gi * L->lay.rec_bytes)));
    }
}

/* The activation codes of the read stage as the MMA's B: one descriptor, 32-byte swizzle. */
void wb_tcbs_frag_desc(lw *L, int value)
{
    wb_reg *d = value_regs(L, value, 1);
    if (!d)
        return;
    wb_reg lo = smem_desc_lo(L, addi(L, add(L, L->smem, L->ro), L->lay.q_off));
    d[0] = wb_new_reg(L->f, WB_RC_B64);
    wb_emit(L->f, WB_OP_PACK_B64, NULL, 3, wb_r(d[0]), wb_r(lo), wb_r(L->tcbs_desc_hi));
}

/* The high words of the descriptors: the 32-byte swizzle (6), stride 256 between 8-row groups; the SF
 * chunks: no swizzle, stride 128 between 8-row groups. Bit 46 (the fixed 0b001) is bit 14 here. */
void wb_tcbs_desc_hi(lw *L)
{
    L->tcbs_desc_hi = mov(L, "b32", WB_RC_B32, wb_hex((6u << 29) | (1u << 14) | (256 >> 4)));
    L->tcbs_sf_hi = mov(L, "b32", WB_RC_B32, wb_hex((1u << 14) | (128 >> 4)));
}

/* The weights' scale words of rows gid (lo) and gid + 8 (hi) as the MMA's bytes (block j in byte j),
 * from the record words sw (T pairs, one per group). */
static void weight_sf_words(lw *L, const wb_reg *sw, wb_reg *lo, wb_reg *hi)
{
    wb_reg t[4];
    for (int j = 0; j < L->tcbs; j++) {
        wb_reg v = sw[j];
        if (nvfp4(L)) { /* |v| x 2^-8 (exact in f16, subnormals included): the e4m3 code's bits at 7.. */
            wb_reg z = mov(L, "b32", WB_RC_B32, wb_hex(0x80008000u));
            wb_reg d = wb_new_reg(L->f, WB_RC_B32);
            wb_emit(L->f, WB_OP_FMA_X2, "f16x2", 4, wb_r(d), wb_r(andi(L, v, 0x7FFF7FFF)),
                    wb_r(mov(L, "b32", WB_RC_B32, wb_hex(0x1C001C00u))), wb_r(z));
            v = d;
        }
        t[j] = shri(L, v, 7); /* byte 0: row gid's code, byte 2: row gid + 8's (bf16: the exponent field) */
    }
    wb_reg u = prmt2(L, t[0], t[1], 0x6240); /* [gid: 0, 1; gid + 8: 0, 1] */
    if (!nvfp4(L)) {
        *lo = andi(L, u, 0xFFFF);
        *hi = shri(L, u, 16);
        return;
    }
    wb_reg v = prmt2(L, t[2], t[3], 0x6240);
    *lo = prmt2(L, u, v, 0x5410);
    *hi = prmt2(L, u, v, 0x7632);
}

/* The thread's code words (the 16-bit layout's: word j holds rows gid / gid + 8 at k 16 j + 2 tig,
 * + 1 in nibbles 0, 4 / 1, 5 and + 8, + 9 in nibbles 2, 6 / 3, 7), with a negative e4m3 block scale's
 * sign moved onto its codes (the word of step j is block j), into weight tile `tile` in K order: row
 * gid's byte 8 j + tig (k 16 j + 2 tig, + 1) and 8 j + 4 + tig (+ 8, + 9), row gid + 8's likewise. */
static void store_weight_codes(lw *L, const wb_reg *q, const wb_reg *sw, wb_reg tile)
{
    wb_reg row = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->wn), wb_imm(16), wb_r(L->gid));
    wb_reg base = add(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(row), wb_imm(TILE_ROW), wb_r(tile)), L->tig);
    wb_reg x = andi(L, shri(L, L->gid, 2), 1); /* (row >> 2) & 1, the same for gid and gid + 8 */
    wb_reg chunk[2] = {muli(L, x, 16), muli(L, op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(x), wb_imm(1)), 16)};
    for (int j = 0; j < 4; j++) {
        wb_reg w = q[j];
        if (nvfp4(L)) { /* the signs of the f16 scales (bit 15: row gid, 31: gid + 8) onto the codes */
            w = lop3(L, w, prmt2(L, sw[j], sw[j], 0x9999), 0x08080808u, 0x78);
            w = lop3(L, w, prmt2(L, sw[j], sw[j], 0xBBBB), 0x80808080u, 0x78);
        }
        wb_reg lo = andi(L, w, 0x0F0F0F0F), hi = andi(L, shri(L, w, 4), 0x0F0F0F0F);
        for (int h = 0; h < 2; h++) {
            wb_reg n = h ? hi : lo;
            wb_reg b = op2(L, WB_OP_OR, "b32", WB_RC_B32, wb_r(n), wb_r(shri(L, n, 12))); /* bytes 0, 1 */
            wb_reg at = addi(L, add(L, base, chunk[j >> 1]), h * 8 * TILE_ROW + (j & 1) * 8);
            wb_emit(L->f, WB_OP_ST_SHARED, "b8", 2, wb_r(at), wb_r(b));
            wb_emit(L->f, WB_OP_ST_SHARED, "b8", 2, wb_r(addi(L, at, 4)), wb_r(shri(L, b, 8)));
        }
    }
}

/* The tile's weight codes and scale words into their buffers kt & 1, then thread 0 copies the scale
 * factors into TMEM, issues the tile's MMA and commits it (with the copies) to mbarrier kt & 1. */
void wb_tcbs_mma(lw *L, const wb_reg *q, const wb_reg *bdesc)
{
    const wb_reg *sw = L->tcbs_sw;
    if (!sw)
        return;
    int nv = nvfp4(L);
    const char *kind = nv ? "mxf4nvf4.block_scale.scale_vec::4X" : "mxf4.block_scale.scale_vec::2X";
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(wb_arena_printf(L->f->arena,
                                    "mma rule: e2m1 x e2m1 -> f32 with %s block scales per %d applied by the MMA, "
                                    "tcgen05.mma kind::%s M=%d N=%d K=64 (the codes as they are: A the weights' "
                                    "through a 32B-swizzled shared tile, B the activations' as copied; scale "
                                    "factors in tensor memory by tcgen05.cp; D in tensor memory)",
                                    nv ? "ue4m3" : "ue8m0", nv ? 16 : 32, kind, WB_TC_M, L->lay.bm)));
    wb_reg buf = andi(L, L->kt, 1);
    wb_reg tile = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(WB_TC_M * TILE_ROW),
                              wb_r(L->smem)), L->lay.tc_a_off);
    store_weight_codes(L, q, sw, tile);
    /* rows gid and gid + 8 of the warp's 16 channels: lanes of tig 0 store both words */
    wb_reg lo, hi, ch = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->wn), wb_imm(16), wb_r(L->gid));
    weight_sf_words(L, sw, &lo, &hi);
    wb_reg sfa = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(SF_CHUNK), wb_r(L->smem));
    sfa = addi(L, sfa, L->lay.tc_sf_off);
    wb_reg t0 = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_EQ, "u32", 3, wb_r(t0), wb_r(L->tig), wb_imm(0));
    for (int h = 0; h < 2; h++) {
        wb_emit(L->f, WB_OP_ST_SHARED, "b32", 2, wb_r(add(L, sfa, sf_offset(L, addi(L, ch, 8 * h)))),
                wb_r(h ? hi : lo));
        wb_guard_last(L->f, t0, 0);
    }
    /* into the async proxy (the codes, the SF words, the activation signs), then the block's barrier */
    wb_emit(L->f, WB_OP_FENCE_PROXY_ASYNC, NULL, 0);
    wb_emit(L->f, WB_OP_TC_FENCE_BEFORE, NULL, 0);
    wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
    wb_emit(L->f, WB_OP_TC_FENCE_AFTER, NULL, 0);
    /* thread 0: SFA (one chunk), SFB (one chunk per 128 tokens) into this buffer's TMEM columns */
    wb_reg col = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(16), wb_r(L->tmem)),
                      wb_tcbs_sf_col(L, 0));
    wb_reg sfb = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(SFB_CHUNKS * SF_CHUNK),
                             wb_r(L->smem)), L->lay.tc_sf_off + 2 * SF_CHUNK);
    for (int c = 0; c < 1 + (L->lay.bm + 127) / 128; c++) {
        wb_reg src = c ? addi(L, sfb, (c - 1) * SF_CHUNK) : sfa, d = wb_new_reg(L->f, WB_RC_B64);
        wb_emit(L->f, WB_OP_PACK_B64, NULL, 3, wb_r(d), wb_r(smem_desc_lo(L, src)), wb_r(L->tcbs_sf_hi));
        wb_emit(L->f, WB_OP_TC_CP, NULL, 2, wb_r(addi(L, col, 4 * c)), wb_r(d));
        wb_guard_last(L->f, L->elected, 0);
    }
    wb_reg pacc = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_NE, "u32", 3, wb_r(pacc), wb_r(L->kt), wb_imm(0));
    wb_reg ad = wb_new_reg(L->f, WB_RC_B64);
    wb_emit(L->f, WB_OP_PACK_B64, NULL, 3, wb_r(ad), wb_r(smem_desc_lo(L, tile)), wb_r(L->tcbs_desc_hi));
    wb_emit(L->f, WB_OP_TC_MMA_BS, kind, 7, wb_r(L->tmem), wb_r(ad), wb_r(bdesc[0]), wb_r(L->tc_idesc), wb_r(col),
            wb_r(addi(L, col, 4)), wb_r(pacc));
    wb_guard_last(L->f, L->elected, 0);
    wb_emit(L->f, WB_OP_TC_COMMIT, NULL, 1,
            wb_r(op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(buf), wb_imm(8), wb_r(L->mbar))));
    wb_guard_last(L->f, L->elected, 0);
}
