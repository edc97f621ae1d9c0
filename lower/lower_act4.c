/* fp4 activations (a=e2m1, wb_format_fp4_acts): the codes become a 16-bit tile in shared memory, once per
 * block and stage, and the kernel goes on as for 16-bit activations.
 *
 * The codes arrive by cp.async (or plain loads) in 32-byte token rows beside the A tile (q_off; two
 * to a byte, k even in the low nibble, chunks swizzled as slot_a_narrow's). After the stage has landed,
 * the block's threads share its items: one item is a word of 8 codes (k 8c .. 8c + 7 of a token's k64
 * slice), whose four bytes become four T pairs, stored as the 16-byte chunk c of that token's 128-byte
 * row of the A tile (swizzled as slot_a's); a barrier, then the 16-bit fragments. So the weights keep
 * the 16-bit kernel's packing, and the activations are dequantized once per block, not once per warp.
 *
 * A code becomes its value exactly: prmt puts the pair's two codes into the two halves with zero bytes
 * between, two shifts and one lop3 move exponent and mantissa to the bottom of the 16-bit exponent and
 * the sign to bit 15, one multiply by 2^14 (f16) or 2^126 (bf16) fixes the bias, subnormal 0.5
 * included. A word's 8 codes lie in one scale group (ag = 0, or a power of two from 16 up), whose 8-bit
 * scale is made a T pair exactly and multiplies the 4 pairs: a code's value (at most 2 significant
 * bits) times an e4m3 scale (4) has at most 6 and lies within [2^-10, 2688], exact in f16; times an
 * e8m0 scale it is exact in bf16 while below 2^128 (scale codes up to 252 with the largest codes). The
 * scale bytes come from global memory (M x K/ag), each tile's loaded during the one before.
 *
 * On wgmma the 16-bit tile is its B operand, read through a descriptor; the rotated loop converts each
 * tile as it lands, at the previous iteration's end, while that iteration's group runs (its stage
 * differs), then fences the stores for the async proxy before the barrier. */
#include <string.h>

#include "lower/gemm_lower.h"
#include "lower/isa.h"

#define MAX_ITEMS 32

typedef struct act4 {
    int n;
    struct item {
        wb_reg valid;  /* the item exists (the last round of items may be partial); id -1: always */
        wb_reg tokin;  /* ... and its token is below M */
        wb_reg raw;    /* shared address of its code word in stage 0 */
        wb_reg dst;    /* shared address of its 16-byte chunk of the A tile in stage 0 */
        wb_reg row;    /* token * (K / ag): its token's first scale */
        wb_reg kin;    /* its first k inside a block tile */
        wb_reg scale;  /* the scale code of this tile (the next one's once loaded) */
    } it[MAX_ITEMS];
} act4;

static wb_reg lop3(lw *L, wb_reg a, wb_reg b, uint32_t c, int lut)
{
    wb_reg r = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_LOP3, NULL, 5, wb_r(r), wb_r(a), wb_r(b), wb_hex(c), wb_imm(lut));
    return r;
}

static wb_reg shli(lw *L, wb_reg x, int v) { return op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_r(x), wb_imm(v)); }

static int bf16(const lw *L) { return !strcmp(L->T, "bf16"); }

/* d = x * y (T pairs; -0 added keeps a -0 product) */
static wb_reg mul2(lw *L, wb_reg x, wb_reg y)
{
    wb_reg z = mov(L, "b32", WB_RC_B32, wb_hex(0x80008000u));
    wb_reg d = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_FMA_X2, bf16(L) ? "bf16x2" : "f16x2", 4, wb_r(d), wb_r(x), wb_r(y), wb_r(z));
    return d;
}

/* A scale code (the low byte of b, the rest zero) -> its value as a T pair, exactly. */
static wb_reg scale_pair(lw *L, wb_reg b)
{
    int bf = bf16(L);
    wb_reg h;
    if (L->fmt->as.kind == WB_KIND_E8M0) { /* 2^(code - 127): the bf16 exponent field; code 0 is subnormal */
        h = op2(L, WB_OP_MAX, "u32", WB_RC_B32, wb_r(shli(L, b, 7)), wb_imm(0x40));
        return op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(h), wb_imm(0x10001));
    }
    /* e4m3: exponent and mantissa bits to the bottom of the T exponent (value * 2^(bias_e4m3 - bias_T)),
     * the sign to bit 15, then the bias is put back by one multiply */
    wb_reg mag = shli(L, andi(L, b, 0x7F), bf ? 4 : 7), sign = shli(L, andi(L, b, 0x80), 8);
    h = op2(L, WB_OP_OR, "b32", WB_RC_B32, wb_r(mag), wb_r(sign));
    h = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(h), wb_imm(0x10001));
    return mul2(L, h, mov(L, "b32", WB_RC_B32, wb_hex(bf ? 0x7B807B80u /* 2^120 */ : 0x5C005C00u /* 2^8 */)));
}

static int log2i(int v)
{
    int l = 0;
    while ((1 << l) < v)
        l++;
    return l;
}

/* Load the scale code of item `it` for the block tile whose first k is kb (a register) into it->scale,
 * where `pred` holds (and the token is below M). */
static void load_scale(lw *L, const struct item *it, wb_reg kb, wb_reg pred)
{
    int ag = L->fmt->ag;
    wb_reg idx = ag ? add(L, it->row, shri(L, add(L, kb, it->kin), log2i(ag))) : it->row;
    wb_reg in = it->tokin;
    if (pred.id >= 0) {
        in = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_AND, "pred", 3, wb_r(in), wb_r(it->tokin), wb_r(pred));
    }
    wb_emit(L->f, WB_OP_LD_GLOBAL, "u8", 2, wb_r(it->scale), wb_r(addr64(L, L->ascale, idx, 1)));
    wb_guard_last(L->f, in, 0);
}

void wb_act4_setup(lw *L)
{
    int bm = L->lay.bm, threads = L->lay.threads, items = bm * 8 * L->cfg->warps_k;
    act4 *A = wb_arena_alloc(L->f->arena, sizeof *A);
    if (!A) {
        L->f->oom = 1;
        return;
    }
    L->act4 = A;
    A->n = 0;
    for (int i = 0; i * threads < items && A->n < MAX_ITEMS; i++) {
        struct item *it = &A->it[A->n++];
        wb_reg id = addi(L, L->tid, (int64_t)i * threads);
        it->valid = (wb_reg){-1};
        if ((i + 1) * threads > items) {
            it->valid = wb_new_reg(L->f, WB_RC_PRED);
            wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(it->valid), wb_r(id), wb_imm(items));
        }
        wb_reg c = andi(L, id, 7), r = remi(L, shri(L, id, 3), bm), w = divi(L, id, bm * 8);
        /* the code word: stage's codes + w*bm*32 + r*32 + ((c/4) ^ ((r/4) & 1))*16 + (c%4)*4 */
        wb_reg sw = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(shri(L, c, 2)), wb_r(andi(L, shri(L, r, 2), 1)));
        wb_reg raw = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(w), wb_imm(bm * 32), wb_r(L->smem));
        raw = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(r), wb_imm(32), wb_r(raw));
        raw = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(sw), wb_imm(16), wb_r(raw));
        it->raw = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(andi(L, c, 3)), wb_imm(4), wb_r(raw)), L->lay.q_off);
        /* its chunk of the A tile: w*bm*128 + r*128 + (c ^ (r & 7))*16 */
        wb_reg sa = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(c), wb_r(andi(L, r, 7)));
        wb_reg dst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(w), wb_imm(bm * 128), wb_r(L->smem));
        dst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(r), wb_imm(128), wb_r(dst));
        it->dst = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(sa), wb_imm(16), wb_r(dst)), L->lay.a_off);
        wb_reg tok = add(L, L->m0, r);
        it->tokin = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(it->tokin), wb_r(tok), wb_r(L->m));
        if (it->valid.id >= 0)
            wb_emit(L->f, WB_OP_AND, "pred", 3, wb_r(it->tokin), wb_r(it->tokin), wb_r(it->valid));
        it->row = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(tok), wb_r(L->arow));
        it->kin = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(w), wb_imm(WB_KW), wb_r(muli(L, c, 8)));
        it->scale = mov(L, "u32", WB_RC_B32, wb_imm(0));
        load_scale(L, it, mov(L, "u32", WB_RC_B32, wb_imm(0)), (wb_reg){-1});
    }
}

/* One item's word of 8 codes, scaled by the pair s -> its 4 T pairs (codes 2p and 2p + 1 in pair p). */
static void dequant_word(lw *L, wb_reg word, wb_reg s, wb_reg bias, wb_reg out[4])
{
    int bf = bf16(L);
    wb_reg x = andi(L, word, 0x0F0F0F0F), y = andi(L, shri(L, word, 4), 0x0F0F0F0F);
    for (int p = 0; p < 4; p++) {
        /* codes 2p (low half) and 2p + 1 (high half) at bits 0 and 16, zero bytes between (a selector
         * of 8 copies the sign of x's byte 0, which is 0) */
        wb_reg z = wb_new_reg(L->f, WB_RC_B32);
        wb_emit(L->f, WB_OP_PRMT, NULL, 4, wb_r(z), wb_r(x), wb_r(y), wb_hex((uint32_t)(0x8080 | p | (4 + p) << 8)));
        /* (z << e | z << 12) & mask: exponent and mantissa to bits e..e+2 (f16: 9, bf16: 6), sign to 15;
         * where the mask is set, only one of the two shifted words has bits */
        wb_reg r = lop3(L, shli(L, z, bf ? 6 : 9), shli(L, z, 12), bf ? 0x81C081C0u : 0x8E008E00u, 0xA8);
        out[p] = mul2(L, mul2(L, r, bias), s);
    }
}

void wb_act4_tile(lw *L, wb_reg tile)
{
    act4 *A = L->act4;
    if (!A)
        return;
    int bf = bf16(L);
    /* the annotation names the target's own fp4 MMA and when it is used instead of this 16-bit tile */
    static const int fp4[] = {WB_ISA_TC05_MXF4NVF4, WB_ISA_MMA_MXF4NVF4, -1};
    int native = wb_isa_pick(L->t->arch, fp4, NULL);
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(wb_arena_printf(L->f->arena, "dequant rule (activations): e2m1 -> %s by moving bits (prmt, two "
                                                 "shl, lop3), one multiply by 2^%d, one by the block scale (%s), "
                                                 "exact; into the 16-bit A tile, once per block", L->T,
                                    bf ? 126 : 14, L->fmt->as.kind == WB_KIND_E8M0 ? "e8m0" : "e4m3")));
    /* sm_120a: built for the scales it takes (lower_block.c); sm_100a/sm_103a: with --mma tcgen05 */
    int sync = native == WB_ISA_MMA_MXF4NVF4, tc_takes = wb_isa_tc_block_scale_vec(L->fmt, L->t->arch) != 0;
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(wb_arena_printf(L->f->arena, "mma rule: e2m1 activations on the %s MMA, exact values, f32 sums%s%s%s",
                                    L->T, native >= 0 ? "; this target's block-scaled fp4 MMA (" : "",
                                    native >= 0 ? wb_isa_name(native) : "",
                                    native < 0 ? ""
                                    : sync || !tc_takes
                                        ? ") takes NVFP4 x NVFP4 and MXFP4 x MXFP4 only: e4m3 scales per 16 or e8m0 "
                                          "per 32, the same on both operands"
                                        : ") runs this format with --mma tcgen05 (the codes as they are); this "
                                          "kernel is not tcgen05")));
    wb_reg bias = mov(L, "b32", WB_RC_B32, wb_hex(bf ? 0x7E807E80u /* 2^126 */ : 0x74007400u /* 2^14 */));
    for (int i = 0; i < A->n; i++) {
        const struct item *it = &A->it[i];
        wb_reg word = mov(L, "u32", WB_RC_B32, wb_imm(0));
        wb_emit(L->f, WB_OP_LD_SHARED, "u32", 2, wb_r(word), wb_r(add(L, it->raw, L->ro)));
        if (it->valid.id >= 0)
            wb_guard_last(L->f, it->valid, 0);
        wb_reg v[4];
        dequant_word(L, word, scale_pair(L, it->scale), bias, v);
        wb_emit(L->f, WB_OP_ST_SHARED_V4, NULL, 5, wb_r(add(L, it->dst, L->ro)), wb_r(v[0]), wb_r(v[1]), wb_r(v[2]),
                wb_r(v[3]));
        if (it->valid.id >= 0)
            wb_guard_last(L->f, it->valid, 0);
    }
    /* the next tile's scales, while this one is multiplied (per-token scales stay: ag = 0) */
    if (L->fmt->ag) {
        wb_reg next = addi(L, tile, 1), more = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(more), wb_r(next), wb_r(L->nkt));
        wb_reg kb = muli(L, next, L->lay.bk);
        for (int i = 0; i < A->n; i++)
            load_scale(L, &A->it[i], kb, more);
    }
    if (L->wg) /* the stores, made by this thread, are read by wgmma through the async proxy */
        wb_emit(L->f, WB_OP_FENCE_PROXY_ASYNC, NULL, 0);
    wb_emit(L->f, WB_OP_BAR_SYNC, NULL, 0);
}
