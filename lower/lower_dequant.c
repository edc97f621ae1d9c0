/* wb_lower_dequant: packed codes of one warp's k64 slice -> 16-bit MMA A fragments, scaled.
 *
 * Three rules, chosen by the element type (annotated in the PTX), and one by the target:
 *  - integer codes: the planes of each register pair are gathered with lop3 straight into the
 *    mantissa of a magic number (1024 in f16, 128 in bf16); one fma subtracts magic + zero, exactly.
 *    A code of one plane (1, 2 or 4 bits) may sit `lift` bits up inside the mantissa, where a shift
 *    of its word already put it (or where it already is): then that fma multiplies by 2^-lift too,
 *    and a word needs one shift per 10 (f16) or 7 (bf16) bits instead of one per field.
 *    bf16 has only 7 mantissa bits, so 8-bit codes are gathered as two nibbles and joined by an fma.
 *  - small floats eXmY: sign, exponent and mantissa bits are moved into the 16-bit layout with shifts
 *    and one lop3 select; one multiply by 2^(bias16 - biasX) corrects the exponent (exact, subnormals
 *    included). Codes of one plane (1, 2 or 4 bits: e2m1) take their bits from two shifted copies of
 *    the code word that all registers of the word share: an and, a lop3 and the fma a register.
 *  - e2m1 into f16 where the target converts fp4 in hardware (WB_FEAT_CVT_FP4: sm_100a, sm_103a,
 *    sm_120a): the nibbles of a k16 step are regrouped into one byte per pair (shr, shl, two lop3, one
 *    unpacking mov) and one cvt.rn.f16x2.e2m1x2 per pair gives the exact f16 values: 9 instructions
 *    per step instead of the one-plane bit moves' 19 (13 and 23 with the scale fma). There is no
 *    bf16x2 form (ptxas 13.0: "Unexpected instruction types"), and the three fma a pair that took
 *    the f16 values to bf16 cost more than the bit moves (hw_e2m1), so bf16 keeps the bit moves.
 *  - e4m3 / e5m2 into f16 where the target converts fp8 in hardware (WB_FEAT_CVT_FP8: sm_90a,
 *    sm_100a, sm_103a, sm_120a): shl, shr and two lop3 join a step's two nibble planes into bytes,
 *    one prmt and one cvt.u16.u32 per pair make its .b16, one cvt.rn.f16x2.e4m3x2/e5m2x2 gives the
 *    exact values: 16 instructions per step instead of the bit moves' 34 (plus the scale fma). No
 *    bf16x2 form exists (ptxas 13.0), so bf16 keeps the bit moves.
 *  - lookup tables (nf4, lut4): the 16 values, rounded once to the compute type, sit in 8 registers;
 *    three levels of prmt pick each code's 16 bits (bits 0-1 of the code inside a group of four
 *    entries, then bit 2, then bit 3).
 *  - raw integer codes (mma.sync, f16, 3-bit codes without a zero point record, and 2-bit ones in a
 *    gemv kernel, the scale on the f32 product; wb_lower_dequant_raw below): the masked code bits are
 *    already an exact f16 subnormal, so no fma; the bias and the power of two are the caller's (a
 *    second MMA, or in a gemv kernel the token's activation sums; a multiply after K).
 *  - then one fma applies the group scale (and, with zp=fp, adds -zero*scale); or, when one scale
 *    covers the warp's whole k64 slice, no scale here: the MMA of the unscaled values goes to a
 *    fresh f32 accumulator and one f32 fma per channel scales it (lower_mma.c,
 *    wb_gemm_lower_mma_scaled).
 * Every step is exact except the final scaling, which rounds once to the compute type (and a table
 * value, rounded once to it); unscaled values are exact (a table value: rounded once to T). */
#include <stdio.h>
#include <string.h>

#include "lower/codes.h"
#include "lower/lower.h"

typedef struct dq {
    wb_func *f;
    const wb_format *fmt;
    const char *ty; /* f16x2 or bf16x2 */
    int bf;
    uint32_t magic;
    int nconst;          /* packed f16x2/bf16x2 operands must be registers: one mov per constant */
    uint32_t const_bits[32];
    wb_reg const_reg[32];
    int nshift;          /* shifted words, shared between fields */
    struct { int word, shift; wb_reg r; } shifted[32];
    int byte_step;       /* hardware e2m1: the step whose bytes are in byte[] (-1: none yet) */
    wb_reg byte[4];      /* its code pair bytes, per register */
} dq;

static wb_opnd konst(dq *d, uint32_t bits)
{
    for (int i = 0; i < d->nconst; i++)
        if (d->const_bits[i] == bits)
            return wb_r(d->const_reg[i]);
    wb_reg r = wb_new_reg(d->f, WB_RC_B32);
    wb_emit(d->f, WB_OP_MOV, "b32", 2, wb_r(r), wb_hex(bits));
    if (d->nconst < 32) {
        d->const_bits[d->nconst] = bits;
        d->const_reg[d->nconst++] = r;
    }
    return wb_r(r);
}

static wb_reg emit3(dq *d, wb_op op, const char *ty, wb_opnd a, wb_opnd b)
{
    wb_reg r = wb_new_reg(d->f, WB_RC_B32);
    wb_emit(d->f, op, ty, 3, wb_r(r), a, b);
    return r;
}

static wb_reg lop3(dq *d, wb_opnd a, wb_opnd b, wb_opnd c, int lut)
{
    wb_reg r = wb_new_reg(d->f, WB_RC_B32);
    wb_emit(d->f, WB_OP_LOP3, NULL, 5, wb_r(r), a, b, c, wb_imm(lut));
    return r;
}

static wb_reg fma2_as(dq *d, const char *ty, wb_reg a, wb_opnd b, wb_opnd c)
{
    wb_reg r = wb_new_reg(d->f, WB_RC_B32);
    wb_emit(d->f, WB_OP_FMA_X2, ty, 4, wb_r(r), wb_r(a), b, c);
    return r;
}

static wb_reg fma2(dq *d, wb_reg a, wb_opnd b, wb_opnd c) { return fma2_as(d, d->ty, a, b, c); }

static uint32_t pair(uint32_t h) { return h << 16 | h; }

static uint32_t mask_at(int width, int at) { return pair(((1u << width) - 1) << at); }

/* words[word] >> shift (<< -shift when negative), once per (word, shift) */
static wb_reg shifted(dq *d, const wb_reg *words, int word, int shift)
{
    if (!shift)
        return words[word];
    for (int i = 0; i < d->nshift; i++)
        if (d->shifted[i].word == word && d->shifted[i].shift == shift)
            return d->shifted[i].r;
    wb_reg r = shift > 0 ? emit3(d, WB_OP_SHR, "u32", wb_r(words[word]), wb_imm(shift))
                         : emit3(d, WB_OP_SHL, "b32", wb_r(words[word]), wb_imm(-shift));
    if (d->nshift < 32) {
        d->shifted[d->nshift].word = word;
        d->shifted[d->nshift].shift = shift;
        d->shifted[d->nshift++].r = r;
    }
    return r;
}

/* A split field (wb_plane_split), gathered bit by bit to `at`, clean: bit i from bit 15 of word i. */
static wb_reg split_field(dq *d, const wb_reg *words, const wb_plane *p, int step, int reg, int at)
{
    wb_reg acc = {-1};
    for (int i = 0; i < p->width; i++) {
        int word, bit;
        wb_plane_bit(p, step, reg, i, &word, &bit);
        wb_reg x = shifted(d, words, word, bit - (at + i));
        acc = acc.id < 0 ? emit3(d, WB_OP_AND, "b32", wb_r(x), wb_hex(mask_at(1, at + i)))
                         : lop3(d, wb_r(x), wb_hex(mask_at(1, at + i)), wb_r(acc), 0xEA);
    }
    return acc;
}

/* The field of plane p for (step, reg), moved so the code's bits [off, off+width) sit at `at` in
 * both halves (other bits unspecified: the caller masks; a split field's are clear). */
static wb_reg field(dq *d, const wb_reg *words, const wb_plane *p, int step, int reg, int at)
{
    int word, bit;
    if (wb_plane_split(p, step, reg))
        return split_field(d, words, p, step, reg, at);
    wb_plane_field(p, step, reg, &word, &bit);
    int shift = bit - at;
    if (!shift)
        return words[word];
    return shift > 0 ? emit3(d, WB_OP_SHR, "u32", wb_r(words[word]), wb_imm(shift))
                     : emit3(d, WB_OP_SHL, "b32", wb_r(words[word]), wb_imm(-shift));
}

/* OR the planes [first, last) of a code into `acc` (a register or the magic constant), each at its
 * bit offset minus `base`. */
static wb_reg gather(dq *d, const wb_reg *words, const wb_codes *cs, int first, int last, int base, int step,
                     int reg, wb_opnd acc)
{
    for (int p = first; p < last; p++) {
        const wb_plane *pl = &cs->plane[p];
        int at = pl->offset - base;
        wb_reg x = field(d, words, pl, step, reg, at);
        acc = wb_r(lop3(d, wb_r(x), wb_hex(mask_at(pl->width, at)), acc, 0xEA)); /* (a & b) | c */
    }
    return (wb_reg){(int)acc.v};
}

/* Codes of one plane of 1, 2 or 4 bits: a field of a word, its pair's fields side by side (lifted
 * codes); a 3-bit plane's fields are gathered like those of several planes. */
static int lifted_plane(const wb_codes *cs) { return cs->nplanes == 1 && cs->plane[0].width != 3; }

/* A one-plane integer code left `lift` bits up in the magic's mantissa: the shift already made for
 * its word that keeps it inside the mantissa, else none if it fits, else a new shift to bit 0. */
static wb_reg int_lifted(dq *d, const wb_reg *words, const wb_codes *cs, int step, int reg, wb_reg nz)
{
    const wb_plane *pl = &cs->plane[0];
    int word, bit, room = (d->bf ? 7 : 10) - pl->width;
    wb_plane_field(pl, step, reg, &word, &bit);
    int shift = bit;
    for (int i = 0; i < d->nshift; i++)
        if (d->shifted[i].word == word && bit >= d->shifted[i].shift && bit - d->shifted[i].shift <= room) {
            shift = d->shifted[i].shift;
            break;
        }
    if (bit <= room && shift == bit)
        shift = 0;
    int lift = bit - shift;
    wb_reg x = shifted(d, words, word, shift);
    wb_reg g = lop3(d, wb_r(x), wb_hex(mask_at(pl->width, lift)), wb_hex(pair(d->magic)), 0xEA);
    /* g = magic + u * 2^lift: g * 2^-lift - (magic * 2^-lift + zero) = u - zero, exactly */
    double inv = 1.0 / (double)(1 << lift), magic = d->bf ? 128.0 : 1024.0;
    uint32_t scale_bits = d->bf ? wb_bf16_from_double(inv) : wb_f16_from_double(inv);
    wb_opnd c;
    if (d->fmt->zp == WB_ZP_INT) /* the record holds -(magic + zero): add magic - magic * 2^-lift */
        c = lift ? wb_r(fma2(d, nz, konst(d, pair(d->bf ? 0x3F80 : 0x3C00)),
                             konst(d, pair(d->bf ? wb_bf16_from_double(magic - magic * inv)
                                                 : wb_f16_from_double(magic - magic * inv)))))
                 : wb_r(nz);
    else {
        int zconst = d->fmt->w.kind == WB_KIND_INT ? 1 << (pl->width - 1) : 0;
        double v = -(magic * inv + zconst);
        c = konst(d, pair(d->bf ? wb_bf16_from_double(v) : wb_f16_from_double(v)));
    }
    return fma2(d, g, konst(d, pair(scale_bits)), c);
}

/* Integer codes -> (u - zero) in T, exactly. */
static wb_reg int_value(dq *d, const wb_reg *words, const wb_codes *cs, int step, int reg, wb_reg nz)
{
    wb_opnd magic = wb_hex(pair(d->magic));
    if (lifted_plane(cs))
        return int_lifted(d, words, cs, step, reg, nz);
    if (!(d->bf && cs->bits == 8))
        return fma2(d, gather(d, words, cs, 0, cs->nplanes, 0, step, reg, magic), konst(d, pair(d->bf ? 0x3F80 : 0x3C00)),
                    wb_r(nz));
    /* bf16, 8 bits (7 mantissa bits): lo = 128 + low nibble, hi = 128 + high nibble,
     * u = (hi - 128) * 16 + (lo - 128), then u - zero; nz is -zero here. Every step is exact. */
    wb_reg lo = gather(d, words, cs, 0, 1, 0, step, reg, magic);
    wb_reg hi = gather(d, words, cs, 1, 2, 4, step, reg, magic);
    wb_opnd one = konst(d, pair(0x3F80)), neg_magic = konst(d, pair(0x8000 | d->magic));
    wb_reg l = fma2(d, lo, one, neg_magic), h = fma2(d, hi, one, neg_magic);
    wb_reg u = fma2(d, h, konst(d, pair(0x4180 /* 16.0 */)), wb_r(l));
    return fma2(d, u, one, wb_r(nz));
}

/* Small float codes -> their value in T, exactly. */
static wb_reg float_value(dq *d, const wb_reg *words, const wb_codes *cs, int step, int reg)
{
    int X = d->fmt->w.ebits, Y = d->fmt->w.mbits, B = cs->bits;
    int mant = d->bf ? 7 : 10, bias16 = d->bf ? 127 : 15, bias = (1 << (X - 1)) - 1;
    wb_reg t = gather(d, words, cs, 0, cs->nplanes, 0, step, reg, wb_hex(0));
    wb_reg mag = emit3(d, WB_OP_AND, "b32", wb_r(t), wb_hex(pair((1u << (X + Y)) - 1)));
    wb_reg a = mant - Y ? emit3(d, WB_OP_SHL, "b32", wb_r(mag), wb_imm(mant - Y)) : mag;
    wb_reg s = 16 - B ? emit3(d, WB_OP_SHL, "b32", wb_r(t), wb_imm(16 - B)) : t;
    wb_reg x = lop3(d, wb_r(a), wb_r(s), wb_hex(0x80008000u), 0xD8); /* sign from s, the rest from a */
    /* 2^(bias16 - bias), as T bits */
    uint32_t e = (uint32_t)(bias16 + bias16 - bias);
    uint32_t factor = d->bf ? e << 7 : e << 10;
    return fma2(d, x, konst(d, pair(factor)), konst(d, 0x80008000u));
}

/* One-plane small floats (B = 1, 2, 4: e2m1, ...): the same bits as float_value, from two shifted
 * copies of the code word that the registers of a word share (one puts the exponent and mantissa
 * bits under the T mantissa's top, one puts the sign at bit 15): an and, one lop3 and the fma a
 * register, about 2 shifts a word; e2m1 in f16 takes 4.75 instructions a register instead of 7. */
static wb_reg float1_value(dq *d, const wb_reg *words, const wb_codes *cs, int step, int reg)
{
    int X = d->fmt->w.ebits, Y = d->fmt->w.mbits, B = cs->bits;
    int mant = d->bf ? 7 : 10, bias16 = d->bf ? 127 : 15, bias = (1 << (X - 1)) - 1;
    int word, bit;
    wb_plane_field(&cs->plane[0], step, reg, &word, &bit);
    wb_reg m = shifted(d, words, word, bit - (mant - Y)), s = shifted(d, words, word, bit + B - 1 - 15);
    wb_reg mag = emit3(d, WB_OP_AND, "b32", wb_r(m), wb_hex(mask_at(X + Y, mant - Y)));
    wb_reg x = lop3(d, wb_r(mag), wb_r(s), wb_hex(0x80008000u), 0xF8); /* a | (b & c) */
    uint32_t e = (uint32_t)(bias16 + bias16 - bias);
    uint32_t factor = d->bf ? e << 7 : e << 10;
    return fma2(d, x, konst(d, pair(factor)), konst(d, 0x80008000u));
}

/* A step's e2m1 codes as one byte per register pair, low nibble the first code (the low half of the
 * pair, which cvt.rn.f16x2.e2m1x2 converts from the low nibble). The 4-bit plane keeps the step in
 * one word with register r's codes at bits 4r and 16 + 4r: nibbles n0..n3 are the first codes of
 * registers 0..3, n4..n7 the second ones. Bytes 0-1 keep n0, n2 and take n4, n6 from w >> 12;
 * bytes 2-3 keep n5, n7 and take n1, n3 from w << 12: bytes (n0,n4) (n2,n6) (n1,n5) (n3,n7) are
 * registers 0, 2, 1, 3. One mov unpacks them (no SASS of its own: the F2FP reads a byte of a
 * register). */
static void e2m1_bytes(dq *d, const wb_reg *words, const wb_codes *cs, int step)
{
    int word, bit;
    wb_plane_field(&cs->plane[0], step, 0, &word, &bit);
    wb_reg w = words[word];
    wb_reg down = emit3(d, WB_OP_SHR, "u32", wb_r(w), wb_imm(12));
    wb_reg up = emit3(d, WB_OP_SHL, "b32", wb_r(w), wb_imm(12));
    wb_reg x = lop3(d, wb_r(w), wb_r(down), wb_hex(0xF0F00F0Fu), 0xE4); /* (a & c) | (b & ~c) */
    wb_reg y = lop3(d, wb_r(up), wb_r(x), wb_hex(0x0F0F0000u), 0xE4);
    for (int r = 0; r < 4; r++)
        d->byte[r] = wb_new_reg(d->f, WB_RC_B8);
    wb_emit(d->f, WB_OP_UNPACK_B8X4, NULL, 5, wb_r(d->byte[0]), wb_r(d->byte[2]), wb_r(d->byte[1]),
            wb_r(d->byte[3]), wb_r(y));
    d->byte_step = step;
}

/* e2m1 codes -> their value in f16 by the hardware conversion, exactly (every e2m1 value is an f16). */
static wb_reg e2m1_cvt_value(dq *d, const wb_reg *words, const wb_codes *cs, int step, int reg)
{
    if (d->byte_step != step)
        e2m1_bytes(d, words, cs, step);
    wb_reg r = wb_new_reg(d->f, WB_RC_B32);
    wb_emit(d->f, WB_OP_CVT, "rn.f16x2.e2m1x2", 2, wb_r(r), wb_r(d->byte[reg]));
    return r;
}

/* A step's 8-bit codes (4+4 planes: low nibbles in word `step`, high nibbles in word 4 + step, the
 * first codes of registers 0..3 at nibbles 0..3, the second ones at 4..7) as one .b16 per register
 * pair, first code in the low byte (cvt.rn.f16x2.e4m3x2 converts the low byte into the low half).
 * x = lo & 0x0F0F0F0F | (hi << 4) & 0xF0F0F0F0 holds the codes of registers 0 and 2 (bytes: r0
 * first, r2 first, r0 second, r2 second), y = (lo >> 4) & 0x0F0F0F0F | hi & 0xF0F0F0F0 those of
 * registers 1 and 3; one prmt per register brings its two bytes into the low half, and cvt.u16.u32
 * takes that half. */
static wb_reg fp8_pair(dq *d, const wb_reg *words, const wb_codes *cs, int step, int reg)
{
    if (d->byte_step != step) {
        int wl, wh, bit;
        wb_plane_field(&cs->plane[0], step, 0, &wl, &bit);
        wb_plane_field(&cs->plane[1], step, 0, &wh, &bit);
        wb_reg up = emit3(d, WB_OP_SHL, "b32", wb_r(words[wh]), wb_imm(4));
        wb_reg down = emit3(d, WB_OP_SHR, "u32", wb_r(words[wl]), wb_imm(4));
        d->byte[0] = lop3(d, wb_r(words[wl]), wb_r(up), wb_hex(0x0F0F0F0Fu), 0xE4); /* (a & c) | (b & ~c) */
        d->byte[1] = lop3(d, wb_r(down), wb_r(words[wh]), wb_hex(0x0F0F0F0Fu), 0xE4);
        d->byte_step = step;
    }
    wb_reg p = wb_new_reg(d->f, WB_RC_B32);
    wb_emit(d->f, WB_OP_PRMT, NULL, 4, wb_r(p), wb_r(d->byte[reg & 1]), wb_imm(0), wb_hex(reg & 2 ? 0x31u : 0x20u));
    wb_reg h = wb_new_reg(d->f, WB_RC_B16);
    wb_emit(d->f, WB_OP_CVT, "u16.u32", 2, wb_r(h), wb_r(p));
    return h;
}

/* e4m3 / e5m2 codes -> their value in f16 by the hardware conversion, exactly (every finite e4m3 and
 * e5m2 value is an f16; the packer rejects the codes that are not finite). */
static wb_reg fp8_cvt_value(dq *d, const wb_reg *words, const wb_codes *cs, int step, int reg)
{
    wb_reg h = fp8_pair(d, words, cs, step, reg);
    wb_reg r = wb_new_reg(d->f, WB_RC_B32);
    wb_emit(d->f, WB_OP_CVT, d->fmt->w.ebits == 4 ? "rn.f16x2.e4m3x2" : "rn.f16x2.e5m2x2", 2, wb_r(r), wb_r(h));
    return r;
}

/* The fp8 hardware rule applies: e4m3 or e5m2 into f16 on a target with the fp8 conversion. bf16
 * keeps the bit moves: there is no bf16x2 form (ptxas 13.0), and f16 -> bf16 afterwards costs more
 * than it saves. */
static int hw_fp8(const wb_func *f, const wb_format *fmt)
{
    return wb_format_compute(fmt).kind == WB_KIND_F16 && fmt->w.kind == WB_KIND_FLOAT && fmt->w.bits == 8 &&
           ((fmt->w.ebits == 4 && fmt->w.mbits == 3) || (fmt->w.ebits == 5 && fmt->w.mbits == 2)) && f->target &&
           (f->target->features & WB_FEAT_CVT_FP8);
}

/* The hardware rule applies: e2m1 into f16 on a target with the fp4 conversion. Into bf16 (no bf16x2
 * form: three fma more a pair) the one-plane bit moves are cheaper: 140 against 144 SASS instructions
 * in the K loop of mxfp4 at M = 1 on sm_100a, 122 against 126 with bf16 scales (e2m1 in f16: 96 by
 * the hardware, 140 by the bit moves). */
static int hw_e2m1(const wb_func *f, const wb_format *fmt)
{
    return wb_format_compute(fmt).kind == WB_KIND_F16 && fmt->w.kind == WB_KIND_FLOAT &&
           fmt->w.ebits == 2 && fmt->w.mbits == 1 && f->target && (f->target->features & WB_FEAT_CVT_FP4);
}

static wb_reg prmt3(dq *d, wb_opnd a, wb_opnd b, wb_reg sel)
{
    wb_reg r = wb_new_reg(d->f, WB_RC_B32);
    wb_emit(d->f, WB_OP_PRMT, NULL, 4, wb_r(r), a, b, wb_r(sel));
    return r;
}

/* prmt selector from one bit (or two) of both codes: code bits [bit, bit+width) of the low half
 * and of the high half land at bits 0 and 8, then sel = that * mul + add. */
static wb_reg selector(dq *d, wb_reg t, int bit, int width, uint32_t mul, uint32_t add)
{
    wb_reg lo = bit ? emit3(d, WB_OP_SHR, "u32", wb_r(t), wb_imm(bit)) : t;
    wb_reg hi = emit3(d, WB_OP_SHR, "u32", wb_r(t), wb_imm(bit + 8));
    uint32_t m = (1u << width) - 1;
    wb_reg u = lop3(d, wb_r(lo), wb_r(hi), wb_hex(m | m << 8), 0xA8); /* (a | b) & c */
    wb_reg sel = wb_new_reg(d->f, WB_RC_B32);
    wb_emit(d->f, WB_OP_MAD_LO, "u32", 4, wb_r(sel), wb_r(u), wb_hex(mul), wb_hex(add));
    return sel;
}

/* Table codes -> their table value in T (the value rounded once to T). */
static wb_reg table_value(dq *d, const wb_reg *words, const wb_codes *cs, int step, int reg)
{
    /* entries 2j and 2j+1 in register j: entry e is bytes 2(e%4), 2(e%4)+1 of the pair {2g+1 : 2g} */
    wb_opnd pairs[8];
    for (int j = 0; j < 8; j++) {
        uint32_t lo, hi;
        lo = d->bf ? wb_bf16_from_double(wb_format_weight_value(d->fmt, 2 * j))
                   : wb_f16_from_double(wb_format_weight_value(d->fmt, 2 * j));
        hi = d->bf ? wb_bf16_from_double(wb_format_weight_value(d->fmt, 2 * j + 1))
                   : wb_f16_from_double(wb_format_weight_value(d->fmt, 2 * j + 1));
        pairs[j] = konst(d, lo | hi << 16);
    }
    wb_reg t = gather(d, words, cs, 0, cs->nplanes, 0, step, reg, wb_hex(0));
    wb_reg s1 = selector(d, t, 0, 2, 0x22, 0x1010); /* bytes 2c, 2c+1 for c = code & 3 */
    wb_reg r[4];
    for (int g = 0; g < 4; g++)
        r[g] = prmt3(d, pairs[2 * g], pairs[2 * g + 1], s1);
    wb_reg s2 = selector(d, t, 2, 1, 0x44, 0x3210); /* bit 2: the low or the high register of a pair */
    wb_reg q01 = prmt3(d, wb_r(r[0]), wb_r(r[1]), s2), q23 = prmt3(d, wb_r(r[2]), wb_r(r[3]), s2);
    wb_reg s3 = selector(d, t, 3, 1, 0x44, 0x3210); /* bit 3 */
    return prmt3(d, wb_r(q01), wb_r(q23), s3);
}

void wb_dequant_natural_groups(const wb_format *fmt, int groups_per_chunk, int group_of_step[4])
{
    for (int step = 0; step < 4; step++)
        group_of_step[step] = groups_per_chunk > 1 ? step * 16 / fmt->g : 0;
}

void wb_lower_dequant(wb_func *f, const wb_format *fmt, const int group_of_step[4], int scaled, const wb_reg *words,
                      const wb_reg *scales, wb_reg out[16])
{
    int bf = wb_format_compute(fmt).kind == WB_KIND_BF16;
    dq d = {.f = f, .fmt = fmt, .ty = bf ? "bf16x2" : "f16x2", .bf = bf, .byte_step = -1};
    d.magic = d.bf ? 0x4300 : 0x6400;
    wb_codes cs;
    wb_codes_get(fmt->w.bits, &cs);
    int is_float = fmt->w.kind == WB_KIND_FLOAT, is_table = fmt->w.kind == WB_KIND_TABLE, hw = hw_e2m1(f, fmt);
    int hw8 = hw_fp8(f, fmt);
    const char *scaling = scaled ? "one fma by the group scale" : "unscaled (the f32 product is scaled)";
    char note[320];
    if (hw)
        snprintf(note, sizeof note, "dequant rule: e2m1 -> f16 by the hardware cvt.rn.f16x2.e2m1x2 (%s): shr, shl "
                 "and two lop3 regroup a step's nibbles into a byte per pair, one mov unpacks them; %s",
                 f->target->name, scaling);
    else if (hw8)
        snprintf(note, sizeof note, "dequant rule: e%dm%d -> f16 by the hardware cvt.rn.f16x2.e%dm%dx2 (%s): shl, shr "
                 "and two lop3 join a step's nibble planes into bytes, one prmt and one cvt.u16.u32 per pair; %s",
                 fmt->w.ebits, fmt->w.mbits, fmt->w.ebits, fmt->w.mbits, f->target->name, scaling);
    else if (is_table)
        snprintf(note, sizeof note, "dequant rule: 16-entry table (%s) in 8 registers, three levels of prmt "
                 "pick each code's value; %s", fmt->w.ebits ? "lut4" : "nf4", scaling);
    else if (is_float)
        snprintf(note, sizeof note, "dequant rule: small float e%dm%d -> %s by moving bits (%s), one fma by "
                 "2^(bias difference); %s", fmt->w.ebits, fmt->w.mbits, d.bf ? "bf16" : "f16",
                 lifted_plane(&cs) ? "two shifted copies of each word, and, lop3" : "shl, lop3 select", scaling);
    else
        snprintf(note, sizeof note, "dequant rule: %d-bit integer codes in %d plane(s) gathered by lop3 into %s "
                 "magic 0x%04X%s, fma subtracts magic+zero; %s", cs.bits, cs.nplanes, d.bf ? "bf16" : "f16",
                 d.magic, lifted_plane(&cs) ? " (lifted: one shift per word, fma by 2^-lift)" : "", scaling);
    wb_emit(f, WB_OP_COMMENT, NULL, 1, wb_text(wb_arena_strdup(f->arena, note)));
    wb_reg nzc = {-1};
    if (!is_float && !is_table && !lifted_plane(&cs) && fmt->zp != WB_ZP_INT) {
        int zconst = fmt->w.kind == WB_KIND_INT ? 1 << (fmt->w.bits - 1) : 0;
        /* -(magic + bias of signed codes), as bits: the magic's ulp is 1 */
        uint32_t negz = 0x8000 | (d.magic + (uint32_t)zconst);
        if (d.bf && cs.bits == 8) /* the split path subtracts the magic itself: only -(bias of signed codes) */
            negz = zconst ? 0xC300 /* -128 */ : 0x8000;
        nzc = (wb_reg){(int)konst(&d, pair(negz)).v};
    }
    for (int step = 0; step < 4; step++) {
        int gi = group_of_step[step];
        for (int reg = 0; reg < 4; reg++) {
            int row = reg & 1; /* registers 0 and 2: channel gid; 1 and 3: gid + 8 */
            const wb_reg *rec = &scales[gi * 4];
            wb_reg v = hw         ? e2m1_cvt_value(&d, words, &cs, step, reg)
                       : hw8      ? fp8_cvt_value(&d, words, &cs, step, reg)
                       : is_table ? table_value(&d, words, &cs, step, reg)
                       : is_float && lifted_plane(&cs) ? float1_value(&d, words, &cs, step, reg)
                       : is_float ? float_value(&d, words, &cs, step, reg)
                                  : int_value(&d, words, &cs, step, reg, fmt->zp == WB_ZP_INT ? rec[2 + row] : nzc);
            if (!scaled) {
                out[step * 4 + reg] = v;
                continue;
            }
            wb_opnd add = fmt->zp == WB_ZP_FP ? wb_r(rec[2 + row]) : konst(&d, 0x80008000u);
            out[step * 4 + reg] = fma2(&d, v, wb_r(rec[row]), add);
        }
    }
}

/* ---- the raw rule (mma.sync, f16, integer codes of one plane without a zero point record): the code's
 * bits alone, with exponent field 0, are the f16 subnormal u * 2^(lift - 24), exact for any bits below
 * 2^10, so a register needs no fma: it is masked in place (one and). Registers 0 and 2 (channel gid)
 * keep lift 0, registers 1 and 3 (gid + 8) lift `width`, for the pair's fields sit side by side in a
 * word (in a 3-bit plane, but for its last two couples) and one shift serves both; the 3-bit plane's
 * split field is gathered at its lift. The MMA of these values is sum u b * 2^(lift - 24); a second
 * MMA with the constant registers -bias * 2^(lift - 24) (wb_dequant_raw_zero; none for unsigned codes)
 * subtracts bias * sum b (a gemv kernel takes it off each group through the token's sum of b instead:
 * lower_mma.c, gemv_sums); the caller multiplies each f32 sum by 2^(24 - lift) of its row after K.
 * This needs the MMA to take subnormal f16 operands as they are, not flushed to zero: every nonzero code
 * is one here, so the GPU selftest of any raw kernel fails at once if they are flushed (an H100 took
 * them, 2026-12-06). */
int wb_dequant_raw(const wb_format *fmt, int gemv)
{
    /* Measured on an H100 at M = 1 (docs/perf.md): int3 with the raw rule ran 1.26-1.34x faster than
     * with the magic rule (its first two-plane layout); int2 and int4 ran 3-4% slower, their bias MMAs
     * costing more than the fmas they save. So 3-bit codes only, and 2-bit ones in the matrix-vector
     * kernel (gemv), whose bias comes from the token's activation sums instead of those MMAs. */
    int bits = fmt->w.bits;
    return wb_format_compute(fmt).kind == WB_KIND_F16 && fmt->zp == WB_ZP_NONE &&
           (fmt->w.kind == WB_KIND_INT || fmt->w.kind == WB_KIND_UINT) && (bits == 3 || (gemv && bits == 2));
}

int wb_dequant_raw_lift(const wb_format *fmt, int reg) { return reg & 1 ? fmt->w.bits : 0; }

uint32_t wb_dequant_raw_zero(const wb_format *fmt, int reg)
{
    if (fmt->w.kind != WB_KIND_INT)
        return 0;
    uint32_t z = 1u << (fmt->w.bits - 1 + wb_dequant_raw_lift(fmt, reg)); /* the bits of bias * 2^lift * 2^-24 */
    return pair(0x8000 | z);
}

void wb_lower_dequant_raw(wb_func *f, const wb_format *fmt, int gemv, int steps, const wb_reg *words, wb_reg out[16])
{
    dq d = {.f = f, .fmt = fmt, .ty = "f16x2", .byte_step = -1};
    wb_codes cs;
    wb_codes_get(fmt->w.bits, &cs);
    const wb_plane *pl = &cs.plane[0];
    char note[320];
    char lifts[120] = "lift 2 x register: registers 0, 1 of steps 2j, 2j + 1 to one MMA, 2, 3 to another";
    if (!steps)
        snprintf(lifts, sizeof lifts, "lift 0 for channel gid, %d for gid + 8", fmt->w.bits);
    snprintf(note, sizeof note, "dequant rule: raw %d-bit integer codes as f16 subnormals u * 2^(lift - 24), masked "
             "in place (%s); no fma: %s", fmt->w.bits, lifts,
             fmt->w.kind != WB_KIND_INT ? "no bias"
             : gemv                     ? "the token's activation sums take off the bias (gemv)"
                                        : "a second MMA subtracts the bias");
    wb_emit(f, WB_OP_COMMENT, NULL, 1, wb_text(wb_arena_strdup(f->arena, note)));
    for (int step = 0; step < 4; step++)
        for (int reg = 0; reg < 4; reg++) {
            int word, bit, lift = steps ? 2 * reg : wb_dequant_raw_lift(fmt, reg);
            if (wb_plane_split(pl, step, reg)) {
                out[step * 4 + reg] = split_field(&d, words, pl, step, reg, lift);
                continue;
            }
            wb_plane_field(pl, step, reg, &word, &bit); /* the shift the pair's even register made, mostly */
            wb_reg x = shifted(&d, words, word, bit - lift);
            out[step * 4 + reg] = emit3(&d, WB_OP_AND, "b32", wb_r(x), wb_hex(mask_at(pl->width, lift)));
        }
}
