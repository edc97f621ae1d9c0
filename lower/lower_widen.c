/* The widening rules: W4A8's 4-bit weight codes (int4, e2m1), two A registers to a packed word, turned in
 * registers into the 8-bit codes the MMA multiplies (s8, or e4m3 on the fp8 MMA), exactly; and s8 codes
 * into f16 for the kind::f16 MMA of targets without kind::i8 (at the end). Packed word
 * j holds A registers 2j (the low nibble of each byte) and 2j + 1 (the high nibble). Where the 8-bit
 * code is a power-of-two multiple of the weight's value, the epilogue multiplies the sums back by
 * wb_widen_factor (exact in f32). */
#include "lower/gemm_lower.h"

/* int4 -> e4m3: nibble n (two's complement) becomes the e4m3 code of n x 2^-9, which is sign | |n|:
 * the codes 0x01..0x07 are the subnormals 1..7 x 2^-9, 0x08 is 2^-6 = 8 x 2^-9. With u the nibble as a
 * byte (0..15), that is u when u < 8, else 0x90 - u (0x88 for -8 .. 0x81 for -1; no borrow between
 * bytes). The mask of negative bytes is the nibble's bit 3 moved to bit 7 and copied over the byte by
 * prmt's sign mode. */
static void int4_e4m3(lw *L, const wb_reg *q, const wb_reg *a, int words)
{
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text("dequant rule: int4 -> e4m3 code of n x 2^-9: u < 8 ? u : 0x90 - u per byte (exact; "
                    "x 2^9 after K)"));
    for (int i = 0; i < 2 * words; i++) {
        wb_reg x = i & 1 ? shri(L, q[i / 2], 4) : q[i / 2];
        wb_reg u = andi(L, x, 0x0F0F0F0F);
        wb_reg neg = op2(L, WB_OP_SUB, "u32", WB_RC_B32, wb_hex(0x90909090u), wb_r(u));
        wb_reg top = i & 1 ? q[i / 2] : op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_r(q[i / 2]), wb_imm(4));
        wb_reg mask = op3(L, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(top), wb_imm(0), wb_hex(0xBA98));
        wb_emit(L->f, WB_OP_LOP3, NULL, 5, wb_r(a[i]), wb_r(mask), wb_r(neg), wb_r(u), wb_hex(0xCA)); /* mask ? neg : u */
    }
}

/* int4 -> s8: a nibble x becomes the byte x | (x & 8) * 0x1E (0x1E * 8 = 0xF0: the sign copied into
 * the high four bits, no carry between bytes). */
static void int4_s8(lw *L, const wb_reg *q, const wb_reg *a, int words)
{
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1, wb_text("dequant rule: int4 -> s8, nibble & 0xF | (nibble & 8) * 0x1E (exact)"));
    for (int i = 0; i < 2 * words; i++) {
        wb_reg x = i & 1 ? shri(L, q[i / 2], 4) : q[i / 2];
        x = andi(L, x, 0x0F0F0F0F);
        wb_reg sign = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(andi(L, x, 0x08080808)), wb_imm(0x1E));
        wb_emit(L->f, WB_OP_OR, "b32", 3, wb_r(a[i]), wb_r(x), wb_r(sign));
    }
}

/* e2m1 -> twice its value, u = 2|v| in {0, 1, 2, 3, 4, 6, 8, 12}, by table: prmt looks up the 3-bit
 * magnitudes of four codes at once, its selectors being nibbles 0..3 of its third operand. A word's
 * low 16 bits hold the codes of bytes 0 and 1 (low, high, low, high nibble), its high 16 bits those
 * of bytes 2 and 3: two lookups give [L0 H0 L1 H1] and [L2 H2 L3 H3], and two prmt regroup them into
 * the low-nibble register [L0 L1 L2 L3] and the high-nibble one. The sign bits (bit 3 of a nibble)
 * are returned in place, bit 7 of each byte of sign[0] (low) and sign[1] (high). */
static void e2m1_magnitudes(lw *L, wb_reg q, wb_reg mag[2], wb_reg sign[2])
{
    wb_reg table_lo = mov(L, "b32", WB_RC_B32, wb_hex(0x03020100u)), table_hi = mov(L, "b32", WB_RC_B32, wb_hex(0x0C080604u));
    wb_reg sel_lo = andi(L, q, 0x7777), sel_hi = andi(L, shri(L, q, 16), 0x7777);
    wb_reg ra = op3(L, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(table_lo), wb_r(table_hi), wb_r(sel_lo));
    wb_reg rb = op3(L, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(table_lo), wb_r(table_hi), wb_r(sel_hi));
    mag[0] = op3(L, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(ra), wb_r(rb), wb_hex(0x6420));
    mag[1] = op3(L, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(ra), wb_r(rb), wb_hex(0x7531));
    sign[0] = andi(L, op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_r(q), wb_imm(4)), 0x80808080);
    sign[1] = andi(L, q, 0x80808080);
}

/* e2m1 -> e4m3: the code of 2v x 2^-9 is sign | u (u <= 12: subnormals and 2^-6 .. 1.5 x 2^-6), so
 * the sums are 2^-8 times the true ones. e2m1 -> s8: 2v, negated per byte as (0x80 - u) ^ 0x80
 * (no borrow: u <= 12), so the sums are twice the true ones. */
static void e2m1_widen(lw *L, const wb_reg *q, const wb_reg *a, int words)
{
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(L->w4_f8 ? "dequant rule: e2m1 -> e4m3 code of 2v x 2^-9 = sign | table[|code|] (exact; x 2^8 "
                               "after K)"
                             : "dequant rule: e2m1 -> s8 2v = +-table[|code|], table 0 1 2 3 4 6 8 12 (exact; x 1/2 "
                               "after K)"));
    for (int j = 0; j < words; j++) {
        wb_reg mag[2], sign[2];
        e2m1_magnitudes(L, q[j], mag, sign);
        for (int h = 0; h < 2; h++) {
            if (L->w4_f8) {
                wb_emit(L->f, WB_OP_OR, "b32", 3, wb_r(a[2 * j + h]), wb_r(mag[h]), wb_r(sign[h]));
                continue;
            }
            wb_reg mask = op3(L, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(sign[h]), wb_imm(0), wb_hex(0xBA98));
            wb_reg neg = op2(L, WB_OP_XOR, "b32", WB_RC_B32,
                             wb_r(op2(L, WB_OP_SUB, "u32", WB_RC_B32, wb_hex(0x80808080u), wb_r(mag[h]))),
                             wb_hex(0x80808080u));
            wb_emit(L->f, WB_OP_LOP3, NULL, 5, wb_r(a[2 * j + h]), wb_r(mask), wb_r(neg), wb_r(mag[h]),
                    wb_hex(0xCA)); /* mask ? neg : mag */
        }
    }
}

/* s4 -> s8 (W4A4 where the s4 MMA is not native): nibble u, of value (u ^ 8) - 8, becomes the byte
 * ((u ^ 8) + 0x78) ^ 0x80 (no carry between bytes: (u ^ 8) + 0x78 <= 0x87); lop3 takes the nibbles
 * and flips their bit 3 at once. The even codes of the word (0, 2, 4, 6) go to one register, the odd
 * ones to the other: not code order, but the same order for weights and activations, which is all a
 * dot product needs (7 instructions a word). */
void wb_widen_s4(lw *L, wb_reg word, wb_reg *even, wb_reg *odd)
{
    for (int h = 0; h < 2; h++) {
        wb_reg u = wb_new_reg(L->f, WB_RC_B32);
        wb_emit(L->f, WB_OP_LOP3, NULL, 5, wb_r(u), wb_r(h ? shri(L, word, 4) : word), wb_hex(0x0F0F0F0Fu),
                wb_hex(0x08080808u), wb_hex(0x6A)); /* (a & b) ^ c */
        u = op2(L, WB_OP_ADD, "u32", WB_RC_B32, wb_r(u), wb_hex(0x78787878u));
        *(h ? odd : even) = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(u), wb_hex(0x80808080u));
    }
}

/* Fresh registers for the widened words of one slice. */
wb_reg *wb_gemm_new_wide(lw *L)
{
    int n = 2 * wb_gemm_w_words(L);
    wb_reg *a = wb_arena_alloc(L->f->arena, (size_t)n * sizeof *a);
    for (int i = 0; a && i < n; i++)
        a[i] = wb_new_reg(L->f, WB_RC_B32);
    L->f->oom |= !a;
    return a;
}

void wb_gemm_widen4(lw *L, const wb_reg *q, const wb_reg *a)
{
    int words = wb_gemm_w_words(L);
    if (L->fmt->w.kind == WB_KIND_FLOAT)
        e2m1_widen(L, q, a, words);
    else if (L->w4_f8)
        int4_e4m3(L, q, a, words);
    else
        int4_s8(L, q, a, words);
}

float wb_widen_factor(const wb_format *f)
{
    int fp8 = f->a.kind == WB_KIND_FLOAT;
    if (f->w.kind == WB_KIND_FLOAT && f->w.bits == 4)
        return fp8 ? 256.0f : 0.5f;
    return f->w.kind == WB_KIND_INT && f->w.bits == 4 && fp8 ? 512.0f : 1.0f;
}

/* s8 -> f16 (s8 x s8 on tcgen05 kind::f16 where there is no kind::i8, lower_tcgen05.c): a word of four
 * s8 codes becomes two f16 pairs (codes 0, 1 and 2, 3), exactly: each biased byte (c + 128) put under
 * the exponent byte 0x64 by prmt is the f16 1024 + 128 + c, and one fma takes 1152 away. k: the
 * constants of wb_widen_s8_f16_consts (0x64 bytes, the f16 pairs of 1 and of -1152). */
void wb_widen_s8_f16_consts(lw *L, wb_reg k[3])
{
    k[0] = mov(L, "b32", WB_RC_B32, wb_hex(0x64646464u));
    k[1] = mov(L, "b32", WB_RC_B32, wb_hex(0x3C003C00u));
    k[2] = mov(L, "b32", WB_RC_B32, wb_hex(0xE480E480u));
}

void wb_widen_s8_f16(lw *L, wb_reg word, const wb_reg k[3], wb_reg out[2])
{
    wb_reg x = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(word), wb_hex(0x80808080u));
    static const uint32_t sel[2] = {0x4140, 0x4342};
    for (int h = 0; h < 2; h++) {
        wb_reg p = wb_new_reg(L->f, WB_RC_B32);
        wb_emit(L->f, WB_OP_PRMT, NULL, 4, wb_r(p), wb_r(x), wb_r(k[0]), wb_hex(sel[h]));
        out[h] = wb_new_reg(L->f, WB_RC_B32);
        wb_emit(L->f, WB_OP_FMA_X2, "f16x2", 4, wb_r(out[h]), wb_r(p), wb_r(k[1]), wb_r(k[2]));
    }
}

/* W4A8 with fp8 activations on the f16 MMA (wb_w4a8_f16): a slice's 4 packed words q of int4 codes
 * become the 16 f16 A registers of its four m16n8k16 steps, exactly. Word j holds the s8 registers of
 * k32 step j / 2, half (j & 1) of its k32 (the low nibbles row gid, the high ones row gid + 8), bytes
 * 0..3 being k 4 tig + 0..3 of it; that is k16 step j of the slice, whose k-index pairs (2 tig, 2 tig
 * + 1) and (2 tig + 8, 2 tig + 9) take bytes (0, 1) and (2, 3). wb_widen_fp8_f16 pairs the
 * activations the same way, so each step's dot product is unchanged. prmt spreads bytes (0, 1) and
 * (2, 3) to the two halves, one lop3 per half takes a nibble, flips its sign bit and sets the f16
 * exponent of 1024 ((a & b) ^ c: 1024 + n + 8 low, 1024 + 16 (n + 8) high), one fma per pair takes the
 * bias away (low: - 1032; high: x / 16 - 72): 10 instructions a word. a[step * 4 + reg] as
 * mma_steps_in reads it. */
void wb_widen_int4_f16(lw *L, const wb_reg *q, wb_reg *a)
{
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text("dequant rule: int4 (W8A8 packing) -> f16 pairs: prmt bytes to halves, lop3 (nibble ^ 8) "
                    "under the exponent of 1024, fma takes 1032 away (high nibbles: x/16 - 72); exact"));
    wb_reg one = mov(L, "b32", WB_RC_B32, wb_hex(0x3C003C00u)), lo_bias = mov(L, "b32", WB_RC_B32, wb_hex(0xE408E408u));
    wb_reg sixteenth = mov(L, "b32", WB_RC_B32, wb_hex(0x2C002C00u)), hi_bias = mov(L, "b32", WB_RC_B32, wb_hex(0xD480D480u));
    for (int j = 0; j < 4; j++)
        for (int pair = 0; pair < 2; pair++) { /* bytes (0, 1), then (2, 3) */
            wb_reg p = wb_new_reg(L->f, WB_RC_B32);
            wb_emit(L->f, WB_OP_PRMT, NULL, 4, wb_r(p), wb_r(q[j]), wb_imm(0), wb_hex(pair ? 0x4342u : 0x4140u));
            for (int row = 0; row < 2; row++) { /* the low nibbles: row gid; the high ones: gid + 8 */
                wb_reg x = wb_new_reg(L->f, WB_RC_B32);
                wb_emit(L->f, WB_OP_LOP3, NULL, 5, wb_r(x), wb_r(p), wb_hex(row ? 0x00F000F0u : 0x000F000Fu),
                        wb_hex(row ? 0x64806480u : 0x64086408u), wb_hex(0x6A)); /* (a & b) ^ c */
                wb_reg d = a[j * 4 + pair * 2 + row] = wb_new_reg(L->f, WB_RC_B32);
                wb_emit(L->f, WB_OP_FMA_X2, "f16x2", 4, wb_r(d), wb_r(x), wb_r(row ? sixteenth : one),
                        wb_r(row ? hi_bias : lo_bias));
            }
        }
}

/* The activations' 8-bit B registers of a slice (b8[mt * 4 + c]: k 4 tig + 0..3 of k16 step c in the
 * pairing above) -> their f16 pairs b[(mt * 4 + c) * 2 + h], bytes (0, 1) then (2, 3), by the
 * hardware conversion (exact: every finite e4m3 and e5m2 value is an f16). */
void wb_widen_fp8_f16(lw *L, const wb_reg *b8, wb_reg *b)
{
    const char *cv = L->fmt->a.ebits == 4 ? "rn.f16x2.e4m3x2" : "rn.f16x2.e5m2x2";
    for (int i = 0; i < L->cfg->m_tiles * 4; i++) {
        wb_reg h[2] = {wb_new_reg(L->f, WB_RC_B16), wb_new_reg(L->f, WB_RC_B16)};
        wb_emit(L->f, WB_OP_UNPACK_B16X2, NULL, 3, wb_r(h[0]), wb_r(h[1]), wb_r(b8[i]));
        for (int half = 0; half < 2; half++) {
            b[i * 2 + half] = wb_new_reg(L->f, WB_RC_B32);
            wb_emit(L->f, WB_OP_CVT, cv, 2, wb_r(b[i * 2 + half]), wb_r(h[half]));
        }
    }
}
