/* fp4 activations (a=e2m1, wb_format_fp4_acts): the activation fragment dequantized in registers.
 *
 * The codes come from shared memory as the s4 ones of W4A4 do (32-byte token rows, one ldmatrix.x4 per
 * two m-tiles): lane (gid, tig) holds, for token gid of each m-tile, word j = 0, 1 with code i at
 * k 32 j + 8 tig + i (nibble i). The word's byte p (codes 2p, 2p + 1) becomes one T pair, the
 * register of k16 step 2 j + p / 2, b0 or b1 as p is even or odd; the weights are packed in that k
 * order (lower/pack.c, mma_k), so each k16 step multiplies matching codes.
 *
 * A code becomes its value exactly: its sign and its exponent and mantissa bits are moved into the
 * 16-bit layout (prmt puts the pair's codes into the two halves, two shifts and one lop3 place them),
 * then one multiply by 2^14 (f16) or 2^126 (bf16) fixes the exponent bias, subnormal 0.5 included.
 * A word of 8 codes lies in one scale group (ag = 0, or a power of two from 16 up), whose 8-bit
 * scale, converted exactly to a T pair once per word, multiplies the 8 values: a code's value (at
 * most 2 significant bits) times an e4m3 scale (4) has at most 6 significant bits and lies within
 * [2^-10, 2688], exact in f16; times an e8m0 scale it is exact in bf16 while below 2^128 (scale
 * codes up to 252). The MMA multiplies these exact values and sums in f32. */
#include <string.h>

#include "lower/gemm_lower.h"
#include "lower/isa.h"

static wb_reg lop3(lw *L, wb_reg a, wb_reg b, uint32_t c, int lut)
{
    wb_reg r = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_LOP3, NULL, 5, wb_r(r), wb_r(a), wb_r(b), wb_hex(c), wb_imm(lut));
    return r;
}

static wb_reg shli(lw *L, wb_reg x, int v) { return op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_r(x), wb_imm(v)); }

/* d = x * y (a T pair times a T pair; -0 added keeps a -0 product) */
static wb_reg mul2(lw *L, wb_reg x, wb_reg y)
{
    wb_reg z = mov(L, "b32", WB_RC_B32, wb_hex(0x80008000u));
    wb_reg d = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_FMA_X2, strcmp(L->T, "bf16") ? "f16x2" : "bf16x2", 4, wb_r(d), wb_r(x), wb_r(y), wb_r(z));
    return d;
}

/* A scale code (in the low byte of b) -> its value as a T pair, exactly. */
static wb_reg scale_pair(lw *L, wb_reg b)
{
    int bf = !strcmp(L->T, "bf16");
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

/* The thread's activation scales of this slice: sc[mt * 2 + j], the T pair of word j's group for
 * token m0 + 8 mt + gid, read from p_ascale (M x K/ag bytes, or M with ag = 0; 0 past M). */
void wb_act4_scales(lw *L, int value)
{
    int ag = L->fmt->ag, mt_n = L->cfg->m_tiles;
    wb_reg *sc = value_regs(L, value, mt_n * 2);
    if (!sc)
        return;
    /* a slice's scale bytes per token: 4 (ag = 16), 2 (32) or 1, loaded at once */
    int bytes = ag == 16 ? 4 : ag == 32 ? 2 : 1;
    wb_reg slice = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->kt), wb_imm(L->cfg->warps_k), wb_r(L->wk));
    wb_reg col = ag ? divi(L, muli(L, slice, WB_KW), ag) : mov(L, "u32", WB_RC_B32, wb_imm(0));
    /* ag = 16: word j's group is byte 2 j + tig / 2 of the four */
    wb_reg sh = ag == 16 ? muli(L, shri(L, L->tig, 1), 8) : (wb_reg){-1};
    for (int mt = 0; mt < mt_n; mt++) {
        wb_reg tok = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(L->gid), wb_imm(1), wb_r(L->m0)), mt * 8);
        wb_reg in = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(in), wb_r(tok), wb_r(L->m));
        wb_reg idx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(tok), wb_r(L->arow), wb_r(col));
        wb_reg v = mov(L, "u32", WB_RC_B32, wb_imm(0));
        wb_emit(L->f, WB_OP_LD_GLOBAL, bytes == 4 ? "u32" : bytes == 2 ? "u16" : "u8", 2, wb_r(v),
                wb_r(addr64(L, L->ascale, idx, 1)));
        wb_guard_last(L->f, in, 0);
        for (int j = 0; j < 2; j++) {
            wb_reg b = v;
            if (ag == 16)
                b = op2(L, WB_OP_SHR, "u32", WB_RC_B32, wb_r(v), wb_r(addi(L, sh, 16 * j)));
            else if (ag == 32 && j)
                b = shri(L, v, 8);
            sc[mt * 2 + j] = scale_pair(L, bytes == 1 ? b : andi(L, b, 0xFF));
        }
    }
}

/* b[mt * 2 + j]: the code words of m-tile mt; out[(mt * 4 + step) * 2 + half]: the scaled T pairs in
 * the registers mma_steps reads. */
void wb_act4_dequant(lw *L, const wb_reg *b, const wb_reg *sc, wb_reg *out)
{
    int bf = !strcmp(L->T, "bf16");
    /* the annotation names the target's own fp4 MMA, which this build does not use yet */
    static const int fp4[] = {WB_ISA_TC05_MXF4NVF4, WB_ISA_MMA_MXF4NVF4, -1};
    int native = wb_isa_pick(L->t->arch, fp4, NULL);
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(wb_arena_printf(L->f->arena, "mma rule: e2m1 activations on the %s MMA, exact values, f32 sums%s%s%s",
                                    L->T, native >= 0 ? "; this target's block-scaled fp4 MMA (" : "",
                                    native >= 0 ? wb_isa_name(native) : "", native >= 0 ? ") is not built yet" : "")));
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(wb_arena_printf(L->f->arena, "dequant rule (activations): e2m1 -> %s by moving bits (prmt, two "
                                                 "shl, lop3), one multiply by 2^%d, one by the block scale (%s), "
                                                 "exact", L->T, bf ? 126 : 14,
                                    L->fmt->as.kind == WB_KIND_E8M0 ? "e8m0" : "e4m3")));
    for (int w = 0; w < L->cfg->m_tiles * 2; w++) {
        wb_reg x = andi(L, b[w], 0x0F0F0F0F), y = andi(L, shri(L, b[w], 4), 0x0F0F0F0F);
        wb_reg bias = mov(L, "b32", WB_RC_B32, wb_hex(bf ? 0x7E807E80u /* 2^126 */ : 0x74007400u /* 2^14 */));
        for (int p = 0; p < 4; p++) {
            /* codes 2p (low half) and 2p + 1 (high half) at bits 0 and 16, zero bytes between (a
             * selector of 8 copies the sign of x's byte 0, which is 0) */
            wb_reg z = wb_new_reg(L->f, WB_RC_B32);
            wb_emit(L->f, WB_OP_PRMT, NULL, 4, wb_r(z), wb_r(x), wb_r(y), wb_hex((uint32_t)(0x8080 | p | (4 + p) << 8)));
            /* (z << e | z << 12) & mask: exponent and mantissa to bits e..e+2 (f16: 9, bf16: 6), sign to 15;
             * where the mask is set, only one of the two shifted words has bits */
            wb_reg r = lop3(L, shli(L, z, bf ? 6 : 9), shli(L, z, 12), bf ? 0x81C081C0u : 0x8E008E00u, 0xA8);
            int mt = w / 2, step = 2 * (w % 2) + p / 2;
            out[(mt * 4 + step) * 2 + p % 2] = mul2(L, mul2(L, r, bias), sc[w]);
        }
    }
}
