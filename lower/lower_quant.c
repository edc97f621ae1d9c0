/* The activation quantizer on the GPU: f16/bf16 activations -> the codes of a W8A8 format's `a` type
 * (s8, e4m3, e5m2: one byte each; s4: two to a byte, as wb_pack_acts) and one f32 scale per token (ag=0) or per token and `ag` elements of
 * K, bit for bit the host reference (dsl/quantize.c): s = f32(amax / max_a), code = RNE-saturate(x / s);
 * or e2m1 codes with e8m0 / e4m3 block scales (lower_quant_fp4, below).
 *
 * One warp per group. Groups are contiguous in the row-major M x K input (group gw starts at element
 * gw * gsize and its scale is scales[gw]), so the kernel takes the group count and size, not M and K.
 * A lane reads 4 activations (8 bytes) of every 128; the group is read twice: the absolute maximum
 * (a shuffle tree), then the codes.
 *
 * Exact rounding without f64 division per element: q = x / s rounded toward zero in f32 (div.rz), its
 * remainder fma(q, s, -x) (exact for a faithful quotient) says whether q is exact, and an inexact q
 * gets its last bit set: round to odd at 24 bits, which rounds to 8 bits or fewer (cvt.rni to s32,
 * cvt.rn.satfinite to e4m3/e5m2) as the true quotient would. The reference divides in f64 and rounds
 * once more; for an f32 x and s its f64 quotient is never a false tie at 8 bits, so both agree. The
 * scale itself is one f64 division per group, as in the reference. */
#include <stdio.h>
#include <string.h>

#include "dsl/tile.h"
#include "emit/emit_ptx.h"
#include "lower/isa.h"
#include "lower/lower.h"
#include "lower/target.h"

enum { QUANT_WARPS = 8 };

/* One instruction into a new register of class rc, from one, two or three operands. */
static wb_reg op3(wb_func *f, wb_op o, const char *ty, wb_rc rc, wb_opnd a, wb_opnd b, wb_opnd c)
{
    wb_reg d = wb_new_reg(f, rc);
    wb_emit(f, o, ty, 4, wb_r(d), a, b, c);
    return d;
}

static wb_reg op2(wb_func *f, wb_op o, const char *ty, wb_rc rc, wb_opnd a, wb_opnd b)
{
    wb_reg d = wb_new_reg(f, rc);
    wb_emit(f, o, ty, 3, wb_r(d), a, b);
    return d;
}

static wb_reg op1(wb_func *f, wb_op o, const char *ty, wb_rc rc, wb_opnd a)
{
    wb_reg d = wb_new_reg(f, rc);
    wb_emit(f, o, ty, 2, wb_r(d), a);
    return d;
}

static wb_reg param(wb_func *f, const char *name, const char *ty, wb_rc rc)
{
    wb_reg r = wb_new_reg(f, rc);
    wb_emit(f, WB_OP_LD_PARAM, ty, 2, wb_r(r), wb_text(name));
    if (rc != WB_RC_B64)
        return r;
    wb_reg g = wb_new_reg(f, WB_RC_B64);
    wb_emit(f, WB_OP_CVTA_GLOBAL, NULL, 2, wb_r(g), wb_r(r));
    return g;
}

/* The 4 activations at addr (8 bytes) as f32 bit patterns in v[0..3]; where `pred` (id >= 0) is false,
 * nothing is read and they are 0. */
static void load4_if(wb_func *f, int bf16, wb_reg addr, wb_reg pred, wb_reg v[4])
{
    for (int w = 0; w < 2; w++) {
        wb_reg word = wb_new_reg(f, WB_RC_B32);
        if (pred.id >= 0)
            wb_emit(f, WB_OP_MOV, "u32", 2, wb_r(word), wb_imm(0));
        wb_emit(f, WB_OP_LD_GLOBAL, "u32", 2, wb_r(word), wb_r(op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(addr), wb_imm(4 * w))));
        if (pred.id >= 0)
            wb_guard_last(f, pred, 0);
        if (bf16) { /* bf16 -> f32: the 16 bits on top */
            v[2 * w] = op2(f, WB_OP_SHL, "b32", WB_RC_B32, wb_r(word), wb_imm(16));
            v[2 * w + 1] = op2(f, WB_OP_AND, "b32", WB_RC_B32, wb_r(word), wb_hex(0xFFFF0000u));
            continue;
        }
        wb_reg h[2] = {wb_new_reg(f, WB_RC_B16), wb_new_reg(f, WB_RC_B16)};
        wb_emit(f, WB_OP_UNPACK_B16X2, NULL, 3, wb_r(h[0]), wb_r(h[1]), wb_r(word));
        for (int i = 0; i < 2; i++)
            v[2 * w + i] = op1(f, WB_OP_CVT, "f32.f16", WB_RC_F32, wb_r(h[i]));
    }
}

static void load4(wb_func *f, int bf16, wb_reg addr, wb_reg v[4]) { load4_if(f, bf16, addr, (wb_reg){-1}, v); }

/* x / s, rounded to odd at 24 bits (head comment); 0 where s is 0 (zero). */
static wb_reg quotient(wb_func *f, wb_reg x, wb_reg s, wb_reg zero)
{
    wb_reg q = op2(f, WB_OP_DIV, "rz.f32", WB_RC_F32, wb_r(x), wb_r(s));
    wb_reg rem = op3(f, WB_OP_FMA_X2, "f32", WB_RC_F32, wb_r(q), wb_r(s), wb_r(op1(f, WB_OP_NEG, "f32", WB_RC_F32, wb_r(x))));
    wb_reg inexact = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_NE, "f32", 3, wb_r(inexact), wb_r(rem), wb_f32(0.0f));
    wb_reg odd = op3(f, WB_OP_SELP, "b32", WB_RC_B32, wb_imm(1), wb_imm(0), wb_r(inexact));
    q = op2(f, WB_OP_OR, "b32", WB_RC_B32, wb_r(q), wb_r(odd));
    return op3(f, WB_OP_SELP, "b32", WB_RC_B32, wb_imm(0), wb_r(q), wb_r(zero));
}

/* Four quotients -> one word of four codes, element 0 in the low byte; s4: 16 bits of four codes,
 * element 0 in the low nibble (the kernels' layout, wb_pack_acts). */
static wb_reg encode4(wb_func *f, wb_type a, const wb_reg q[4])
{
    if (a.kind == WB_KIND_FLOAT) {
        char ty[24];
        snprintf(ty, sizeof ty, "%sx2.f32", a.ebits == 4 ? "e4m3" : "e5m2");
        const char *t = wb_arena_strdup(f->arena, ty);
        wb_reg lo = wb_new_reg(f, WB_RC_B16), hi = wb_new_reg(f, WB_RC_B16);
        /* the first source goes to the upper byte */
        wb_emit(f, WB_OP_CVT_F8X2, t, 3, wb_r(lo), wb_r(q[1]), wb_r(q[0]));
        wb_emit(f, WB_OP_CVT_F8X2, t, 3, wb_r(hi), wb_r(q[3]), wb_r(q[2]));
        return op2(f, WB_OP_PACK_B16X2, NULL, WB_RC_B32, wb_r(lo), wb_r(hi));
    }
    wb_reg c[4];
    int lo_code = -(1 << (a.bits - 1)), hi_code = (1 << (a.bits - 1)) - 1;
    for (int i = 0; i < 4; i++) { /* RNE, then the type's range as the reference's encoder saturates */
        c[i] = op1(f, WB_OP_CVT, "rni.s32.f32", WB_RC_B32, wb_r(q[i]));
        c[i] = op2(f, WB_OP_MIN, "s32", WB_RC_B32, wb_r(op2(f, WB_OP_MAX, "s32", WB_RC_B32, wb_r(c[i]), wb_imm(lo_code))),
                   wb_imm(hi_code));
    }
    if (a.bits == 4) {
        wb_reg w = op2(f, WB_OP_AND, "b32", WB_RC_B32, wb_r(c[0]), wb_imm(15));
        for (int i = 1; i < 4; i++) {
            wb_reg nib = op2(f, WB_OP_AND, "b32", WB_RC_B32, wb_r(c[i]), wb_imm(15));
            w = op2(f, WB_OP_OR, "b32", WB_RC_B32, wb_r(w), wb_r(op2(f, WB_OP_SHL, "b32", WB_RC_B32, wb_r(nib), wb_imm(4 * i))));
        }
        return w;
    }
    wb_reg lo = op3(f, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(c[0]), wb_r(c[1]), wb_hex(0x0040));
    wb_reg hi = op3(f, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(c[2]), wb_r(c[3]), wb_hex(0x0040));
    return op3(f, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(lo), wb_r(hi), wb_hex(0x5410));
}

/* x = the maximum of x over the lanes l ^ d for d = from, from / 2, .., 1 (a butterfly: every lane of
 * each aligned group of 2 from lanes gets the group's maximum) */
static void max_butterfly(wb_func *f, wb_reg x, int from)
{
    for (int d = from; d >= 1; d /= 2)
        wb_emit(f, WB_OP_MAX, "f32", 3, wb_r(x), wb_r(x), wb_r(op2(f, WB_OP_SHFL_BFLY, NULL, WB_RC_B32, wb_r(x), wb_imm(d))));
}

/* The quantizer's parameters and the thread's coordinates. */
typedef struct qargs {
    wb_reg x, codes, scales, groups, gsize, tid, cta, lane;
} qargs;

static qargs prologue(wb_func *f)
{
    if (f->target->features & WB_FEAT_GRIDDEP) /* launched with PDL: the input is the previous kernel's */
        wb_emit(f, WB_OP_GRIDDEP_WAIT, NULL, 0);
    qargs q;
    q.x = param(f, "p_x", "u64", WB_RC_B64), q.codes = param(f, "p_codes", "u64", WB_RC_B64);
    q.scales = param(f, "p_scales", "u64", WB_RC_B64);
    q.groups = param(f, "p_groups", "u32", WB_RC_B32), q.gsize = param(f, "p_gsize", "u32", WB_RC_B32);
    q.tid = op1(f, WB_OP_SPECIAL, NULL, WB_RC_B32, wb_text("%tid.x"));
    q.cta = op1(f, WB_OP_SPECIAL, NULL, WB_RC_B32, wb_text("%ctaid.x"));
    q.lane = op2(f, WB_OP_AND, "b32", WB_RC_B32, wb_r(q.tid), wb_imm(31));
    return q;
}

static void lower_quant(wb_func *f, const wb_format *fm, int bf16)
{
    qargs qa = prologue(f);
    wb_reg x = qa.x, codes = qa.codes, scales = qa.scales, groups = qa.groups, gsize = qa.gsize, tid = qa.tid,
           cta = qa.cta, lane = qa.lane;
    wb_reg gw = op3(f, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(cta), wb_imm(QUANT_WARPS),
                    wb_r(op2(f, WB_OP_SHR, "u32", WB_RC_B32, wb_r(tid), wb_imm(5))));
    const char *done = wb_new_label(f, "done");
    wb_reg past = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_GE, "u32", 3, wb_r(past), wb_r(gw), wb_r(groups));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(past), wb_text(done));
    /* the lane's first activation and code: element gw * gsize + 4 * lane */
    wb_reg first = op2(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(gw), wb_r(gsize));
    first = op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(first), wb_r(op1(f, WB_OP_CVT, "u64.u32", WB_RC_B64,
                                                                  wb_r(op2(f, WB_OP_SHL, "b32", WB_RC_B32, wb_r(lane), wb_imm(2))))));
    wb_reg xa0 = op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(x), wb_r(op2(f, WB_OP_SHL, "b64", WB_RC_B64, wb_r(first), wb_imm(1))));
    /* codes: one byte each, or s4 two to a byte */
    int s4 = fm->a.bits == 4;
    wb_reg ca0 = op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(codes),
                     wb_r(s4 ? op2(f, WB_OP_SHR, "u64", WB_RC_B64, wb_r(first), wb_imm(1)) : first));
    wb_reg steps = op2(f, WB_OP_SHR, "u32", WB_RC_B32, wb_r(gsize), wb_imm(7));

    /* pass 1: the group's largest |x| */
    wb_reg amax = op1(f, WB_OP_MOV, "f32", WB_RC_F32, wb_f32(0.0f)), xa = op1(f, WB_OP_MOV, "u64", WB_RC_B64, wb_r(xa0));
    wb_reg j = op1(f, WB_OP_MOV, "u32", WB_RC_B32, wb_imm(0));
    const char *l1 = wb_new_label(f, "amax");
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(l1));
    wb_reg v[4];
    load4(f, bf16, xa, v);
    for (int i = 0; i < 4; i++)
        wb_emit(f, WB_OP_MAX, "f32", 3, wb_r(amax), wb_r(amax), wb_r(op1(f, WB_OP_ABS, "f32", WB_RC_F32, wb_r(v[i]))));
    wb_emit(f, WB_OP_ADD, "u64", 3, wb_r(xa), wb_r(xa), wb_imm(256));
    wb_emit(f, WB_OP_ADD, "u32", 3, wb_r(j), wb_r(j), wb_imm(1));
    wb_reg more = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_LT, "u32", 3, wb_r(more), wb_r(j), wb_r(steps));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(more), wb_text(l1));
    max_butterfly(f, amax, 16);

    /* the scale: f32(amax / max_a), the division in f64 as the reference's */
    double max_a = wb_type_decode(fm->a, wb_type_encode(fm->a, 1e300));
    wb_reg num = op1(f, WB_OP_CVT, "f64.f32", WB_RC_B64, wb_r(amax));
    wb_reg den = op1(f, WB_OP_CVT, "f64.f32", WB_RC_B64, wb_r(op1(f, WB_OP_MOV, "f32", WB_RC_F32, wb_f32((float)max_a))));
    wb_reg s = op1(f, WB_OP_CVT, "rn.f32.f64", WB_RC_F32, wb_r(op2(f, WB_OP_DIV, "rn.f64", WB_RC_B64, wb_r(num), wb_r(den))));
    wb_reg lead = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_EQ, "u32", 3, wb_r(lead), wb_r(lane), wb_imm(0));
    wb_emit(f, WB_OP_ST_GLOBAL, "f32", 2,
            wb_r(op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(scales), wb_r(op2(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(gw), wb_imm(4))))),
            wb_r(s));
    wb_guard_last(f, lead, 0);
    wb_reg zero = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_EQ, "f32", 3, wb_r(zero), wb_r(s), wb_f32(0.0f));

    /* pass 2: the codes, four bytes a lane a step */
    wb_emit(f, WB_OP_MOV, "u64", 2, wb_r(xa), wb_r(xa0));
    wb_reg ca = op1(f, WB_OP_MOV, "u64", WB_RC_B64, wb_r(ca0));
    wb_emit(f, WB_OP_MOV, "u32", 2, wb_r(j), wb_imm(0));
    const char *l2 = wb_new_label(f, "codes");
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(l2));
    load4(f, bf16, xa, v);
    wb_reg q[4];
    for (int i = 0; i < 4; i++)
        q[i] = quotient(f, v[i], s, zero);
    wb_emit(f, WB_OP_ST_GLOBAL, s4 ? "u16" : "u32", 2, wb_r(ca), wb_r(encode4(f, fm->a, q)));
    wb_emit(f, WB_OP_ADD, "u64", 3, wb_r(xa), wb_r(xa), wb_imm(256));
    wb_emit(f, WB_OP_ADD, "u64", 3, wb_r(ca), wb_r(ca), wb_imm(s4 ? 64 : 128));
    wb_emit(f, WB_OP_ADD, "u32", 3, wb_r(j), wb_r(j), wb_imm(1));
    wb_emit(f, WB_OP_SETP_LT, "u32", 3, wb_r(more), wb_r(j), wb_r(steps));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(more), wb_text(l2));
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(done));
    wb_emit(f, WB_OP_RET, NULL, 0);
}

/* e2m1 activations (NVFP4 / MX without a tensor scale): a lane quantizes 4 consecutive activations,
 * a group of ag (16 to 128) is ag / 4 neighbouring lanes, whose absolute maximum a butterfly over
 * those lanes gives. The scale: e8m0, 2^(floor(log2 amax) - 2) (the exponent field of amax in f64,
 * clamped to -127..127; 2^-127 for amax = 0); or e4m3, amax / 6 divided in f64 and rounded to odd at
 * f32 before the rounding to e4m3 (so that it rounds once, as the reference's), its value read back
 * by the e4m3 -> f16 conversion. The codes: x / s divided in f64, as the reference does, then rounded
 * to nearest even among 0, 0.5, 1, 1.5, 2, 3, 4, 6 by comparing |q| with the midpoints (a tie goes to
 * the even code: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4), saturating at
 * 6, the sign from q's sign bit (-0 included, as the reference's encoder keeps it); four codes a lane
 * into 16 bits, element 0 in the low nibble (wb_pack_acts). */
static wb_reg f64_of(wb_func *f, wb_reg x32) { return op1(f, WB_OP_CVT, "f64.f32", WB_RC_B64, wb_r(x32)); }

static wb_reg f64_const(wb_func *f, double v) { return op1(f, WB_OP_MOV, "f64", WB_RC_B64, wb_f64(v)); }

/* |q| (an f64) -> the e2m1 magnitude code 0..7, rounded to nearest even, saturating */
static wb_reg e2m1_magnitude(wb_func *f, wb_reg q)
{
    static const struct { double t; int strict; } mid[] = {{0.25, 1}, {0.75, 0}, {1.25, 1}, {1.75, 0},
                                                           {2.5, 1},  {3.5, 0},  {5.0, 1}};
    wb_reg a = op1(f, WB_OP_ABS, "f64", WB_RC_B64, wb_r(q)), code = op1(f, WB_OP_MOV, "u32", WB_RC_B32, wb_imm(0));
    for (size_t i = 0; i < sizeof mid / sizeof mid[0]; i++) {
        wb_reg p = wb_new_reg(f, WB_RC_PRED), t = f64_const(f, mid[i].t);
        if (mid[i].strict) /* past the midpoint: a tie stays on the even code below */
            wb_emit(f, WB_OP_SETP_LT, "f64", 3, wb_r(p), wb_r(t), wb_r(a));
        else /* at or past it: a tie goes up to the even code */
            wb_emit(f, WB_OP_SETP_GE, "f64", 3, wb_r(p), wb_r(a), wb_r(t));
        code = op2(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(code), wb_r(op3(f, WB_OP_SELP, "b32", WB_RC_B32, wb_imm(1),
                                                                       wb_imm(0), wb_r(p))));
    }
    return code;
}

static void lower_quant_fp4(wb_func *f, const wb_format *fm, int bf16)
{
    qargs qa = prologue(f);
    wb_reg x = qa.x, codes = qa.codes, scales = qa.scales, groups = qa.groups, gsize = qa.gsize, tid = qa.tid,
           cta = qa.cta, lane = qa.lane;
    wb_reg gl = op3(f, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(cta), wb_imm(32 * QUANT_WARPS), wb_r(tid));
    /* lanes past the last 4 activations: whole warps (M x K is a multiple of 128) */
    wb_reg lanes = op2(f, WB_OP_SHR, "u32", WB_RC_B32, wb_r(op2(f, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(groups), wb_r(gsize))),
                       wb_imm(2));
    const char *done = wb_new_label(f, "done");
    wb_reg past = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_GE, "u32", 3, wb_r(past), wb_r(gl), wb_r(lanes));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(past), wb_text(done));
    wb_reg xa = op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(x), wb_r(op2(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(gl), wb_imm(8))));
    wb_reg v[4];
    load4(f, bf16, xa, v);
    wb_reg amax = op1(f, WB_OP_MOV, "f32", WB_RC_F32, wb_f32(0.0f));
    for (int i = 0; i < 4; i++)
        wb_emit(f, WB_OP_MAX, "f32", 3, wb_r(amax), wb_r(amax), wb_r(op1(f, WB_OP_ABS, "f32", WB_RC_F32, wb_r(v[i]))));
    max_butterfly(f, amax, fm->ag / 8); /* the block's ag / 4 lanes */
    /* the tensor scale g (ags=1): the f32 that wb_quant_global wrote; else 1. The block's amax / g is
     * what the scale rounds, as the reference divides it */
    wb_reg a64 = f64_of(f, amax), code, s64, g64 = {-1};
    if (fm->ags) {
        wb_reg gp = param(f, "p_global", "u64", WB_RC_B64), g32 = wb_new_reg(f, WB_RC_F32);
        wb_emit(f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(g32), wb_r(gp));
        g64 = f64_of(f, g32);
        a64 = op2(f, WB_OP_DIV, "rn.f64", WB_RC_B64, wb_r(a64), wb_r(g64));
    }
    if (fm->as.kind == WB_KIND_E8M0) {
        wb_reg ex = op1(f, WB_OP_CVT, "u32.u64", WB_RC_B32,
                        wb_r(op2(f, WB_OP_SHR, "u64", WB_RC_B64, wb_r(a64), wb_imm(52)))); /* |amax|: no sign */
        wb_reg e = op2(f, WB_OP_SUB, "u32", WB_RC_B32, wb_r(ex), wb_imm(1023 + 2));
        e = op2(f, WB_OP_MIN, "s32", WB_RC_B32, wb_r(op2(f, WB_OP_MAX, "s32", WB_RC_B32, wb_r(e), wb_imm(-127))), wb_imm(127));
        code = op2(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(e), wb_imm(127));
        wb_reg bias = op1(f, WB_OP_CVT, "u64.u32", WB_RC_B64, wb_r(op2(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(e), wb_imm(1023))));
        s64 = op2(f, WB_OP_SHL, "b64", WB_RC_B64, wb_r(bias), wb_imm(52));
    } else { /* e4m3 */
        wb_reg t = op2(f, WB_OP_DIV, "rn.f64", WB_RC_B64, wb_r(a64), wb_r(f64_const(f, 6.0)));
        wb_reg r = op1(f, WB_OP_CVT, "rz.f32.f64", WB_RC_F32, wb_r(t)), inexact = wb_new_reg(f, WB_RC_PRED);
        wb_emit(f, WB_OP_SETP_NE, "f64", 3, wb_r(inexact), wb_r(f64_of(f, r)), wb_r(t));
        r = op2(f, WB_OP_OR, "b32", WB_RC_B32, wb_r(r),
                wb_r(op3(f, WB_OP_SELP, "b32", WB_RC_B32, wb_imm(1), wb_imm(0), wb_r(inexact))));
        wb_reg pair = wb_new_reg(f, WB_RC_B16);
        wb_emit(f, WB_OP_CVT_F8X2, "e4m3x2.f32", 3, wb_r(pair), wb_r(op1(f, WB_OP_MOV, "f32", WB_RC_F32, wb_f32(0.0f))), wb_r(r));
        code = op2(f, WB_OP_AND, "b32", WB_RC_B32, wb_r(op1(f, WB_OP_CVT, "u32.u16", WB_RC_B32, wb_r(pair))), wb_imm(0xFF));
        wb_reg h2 = wb_new_reg(f, WB_RC_B32), h[2] = {wb_new_reg(f, WB_RC_B16), wb_new_reg(f, WB_RC_B16)};
        wb_emit(f, WB_OP_CVT, "rn.f16x2.e4m3x2", 2, wb_r(h2), wb_r(pair));
        wb_emit(f, WB_OP_UNPACK_B16X2, NULL, 3, wb_r(h[0]), wb_r(h[1]), wb_r(h2));
        s64 = f64_of(f, op1(f, WB_OP_CVT, "f32.f16", WB_RC_F32, wb_r(h[0])));
    }
    wb_reg s_code = s64; /* zero test on the scale itself */
    if (fm->ags) /* x / (s g): s g is exact in f64 (4 + 24 significant bits at most) */
        s64 = op2(f, WB_OP_MUL_F64, NULL, WB_RC_B64, wb_r(s64), wb_r(g64));
    /* the group's first lane stores its scale byte: group gl / (ag / 4) */
    wb_reg lead = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_EQ, "u32", 3, wb_r(lead), wb_r(op2(f, WB_OP_AND, "b32", WB_RC_B32, wb_r(lane), wb_imm(fm->ag / 4 - 1))),
            wb_imm(0));
    wb_reg gidx = op2(f, WB_OP_SHR, "u32", WB_RC_B32, wb_r(gl), wb_imm(__builtin_ctz((unsigned)fm->ag / 4)));
    wb_reg sa = op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(scales), wb_r(op1(f, WB_OP_CVT, "u64.u32", WB_RC_B64, wb_r(gidx))));
    wb_emit(f, WB_OP_ST_GLOBAL, "u8", 2, wb_r(sa), wb_r(code));
    wb_guard_last(f, lead, 0);
    wb_reg zero = wb_new_reg(f, WB_RC_PRED); /* e4m3 scale 0: codes 0 */
    wb_emit(f, WB_OP_SETP_EQ, "f64", 3, wb_r(zero), wb_r(s_code), wb_r(f64_const(f, 0.0)));
    wb_reg word = op1(f, WB_OP_MOV, "u32", WB_RC_B32, wb_imm(0));
    for (int i = 0; i < 4; i++) {
        wb_reg q = op2(f, WB_OP_DIV, "rn.f64", WB_RC_B64, wb_r(f64_of(f, v[i])), wb_r(s64));
        q = op3(f, WB_OP_SELP, "b64", WB_RC_B64, wb_r(f64_const(f, 0.0)), wb_r(q), wb_r(zero));
        wb_reg sign = op1(f, WB_OP_CVT, "u32.u64", WB_RC_B32, wb_r(op2(f, WB_OP_SHR, "u64", WB_RC_B64, wb_r(q), wb_imm(60))));
        wb_reg c = op2(f, WB_OP_OR, "b32", WB_RC_B32, wb_r(e2m1_magnitude(f, q)),
                       wb_r(op2(f, WB_OP_AND, "b32", WB_RC_B32, wb_r(sign), wb_imm(8))));
        word = op2(f, WB_OP_OR, "b32", WB_RC_B32, wb_r(word), wb_r(op2(f, WB_OP_SHL, "b32", WB_RC_B32, wb_r(c), wb_imm(4 * i))));
    }
    wb_reg ca = op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(codes), wb_r(op2(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(gl), wb_imm(2))));
    wb_emit(f, WB_OP_ST_GLOBAL, "u16", 2, wb_r(ca), wb_r(word));
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(done));
    wb_emit(f, WB_OP_RET, NULL, 0);
}

const char *wb_quant_entry(void) { return "wb_quant"; }

wb_status wb_quant_check(const wb_format *f, wb_type x, wb_arch arch)
{
    const wb_target *t = wb_target_get(arch);
    char ab[8];
    if (!f || !t)
        return wb_fail(WB_ERR_INVALID, "wb_quant: bad argument");
    const char *an = wb_format_act_name(f->a, ab);
    if (x.kind != WB_KIND_F16 && x.kind != WB_KIND_BF16)
        return wb_fail(WB_ERR_INVALID, "the GPU quantizer reads f16 or bf16 activations");
    int ints = f->a.kind == WB_KIND_INT && (f->a.bits == 8 || f->a.bits == 4), fp8 = wb_type_fp8(f->a);
    if (wb_format_fp4_acts(f)) { /* e2m1: block scales (lower_quant_fp4) */
        int e4m3 = f->as.kind == WB_KIND_FLOAT;
        if (f->ag < 16 || f->ag > 128 || (f->ag & (f->ag - 1)))
            return wb_fail(WB_ERR_UNSUPPORTED, "the GPU quantizer takes e2m1 blocks of 16, 32, 64 or 128 along K "
                                               "(got ag=%d)", f->ag);
        if (e4m3 && !(t->features & WB_FEAT_CVT_FP8) && wb_isa_get(arch, WB_ISA_MMA_FP8) != WB_ISA_NATIVE)
            return wb_fail(WB_ERR_UNSUPPORTED, "%s has no f32 -> e4m3 conversion for the block scales "
                                               "(cvt.rn.satfinite.e4m3x2.f32: sm_89 and newer; as=e8m0 works here)",
                           t->name);
        return WB_OK;
    }
    if (!ints && !fp8)
        return wb_fail(WB_ERR_UNSUPPORTED, "the GPU quantizer is built for a=s8, s4, e4m3, e5m2 and e2m1 with block "
                                           "scales (got a=%s; the host reference quantizes every type: warble quant "
                                           "without --device)", an);
    if (f->as.kind != WB_KIND_F32 || f->ags || f->ag % 128)
        return wb_fail(WB_ERR_UNSUPPORTED, "the GPU quantizer writes f32 scales per token (ag=0) or per token and "
                                           "group of a multiple of 128 (as=f32, ags=0)");
    if (fp8 && !(t->features & WB_FEAT_CVT_FP8) && wb_isa_get(arch, WB_ISA_MMA_FP8) != WB_ISA_NATIVE)
        return wb_fail(WB_ERR_UNSUPPORTED, "%s has no f32 -> %s conversion (cvt.rn.satfinite.%sx2.f32: sm_89 and "
                                           "newer)", t->name, an, an);
    return WB_OK;
}

wb_status wb_quant_dims(const wb_format *f, int64_t m, int64_t k, wb_launch_dims *d, uint32_t *groups,
                        uint32_t *gsize)
{
    int64_t g = f->ag ? f->ag : k;
    if (m < 1 || k < 1 || k % 128 || k % g || m * (k / g) >= (1ll << 31) || m * k >= (1ll << 40) ||
        (wb_format_fp4_acts(f) && m * k >= (1ll << 32)))
        return wb_fail(WB_ERR_INVALID, "the GPU quantizer needs K a multiple of 128 and of ag (got M=%lld, K=%lld)",
                       (long long)m, (long long)k);
    memset(d, 0, sizeof *d);
    *groups = (uint32_t)(m * (k / g));
    *gsize = (uint32_t)g;
    /* one warp a group, or with e2m1 one lane for every 4 activations */
    int64_t warps = wb_format_fp4_acts(f) ? m * k / 128 : *groups;
    d->grid[0] = (unsigned)((warps + QUANT_WARPS - 1) / QUANT_WARPS);
    d->grid[1] = d->grid[2] = 1;
    d->block[0] = 32 * QUANT_WARPS;
    d->block[1] = d->block[2] = 1;
    return WB_OK;
}

wb_status wb_lower_quant(const wb_format *f, wb_type x, wb_arch arch, wb_func *fn)
{
    wb_status s = wb_quant_check(f, x, arch);
    if (s)
        return s;
    fn->target = wb_target_get(arch);
    if (wb_format_fp4_acts(f))
        lower_quant_fp4(fn, f, x.kind == WB_KIND_BF16);
    else
        lower_quant(fn, f, x.kind == WB_KIND_BF16);
    return fn->oom ? wb_fail(WB_ERR_NOMEM, "out of memory building the quantizer") : WB_OK;
}

/* The tensor scale of e2m1 activations with ags=1, ahead of the quantizer, over the whole M x K input:
 * blocks of 1024 threads (wb_quant_global_blocks: one for decode sizes, up to 1024 at prefill), 16
 * activations a lane a step (four 8-byte loads in flight), block after block along the input; a
 * butterfly per warp and one over the 32 warps' maxima (shared memory) give the block's amax. One block:
 * thread 0 writes g = f32(amax / 6 / 448) (e4m3 block scales; amax / 6 with e8m0 ones), the divisions in
 * f64 as the reference's, or 1 where amax is 0. More: each block writes its amax to p_part[block] (the
 * quantizer's scale buffer, which it overwrites later: no scratch of its own), and a second launch of
 * the same kernel with p_reduce set, one block, takes those p_n4 maxima as its input and writes g.
 * Maxima in any order give the same bits: deterministic, with no atomics and no word to zero first. */
enum { GLOBAL_THREADS = 1024, GLOBAL_STEP = 4 * GLOBAL_THREADS /* chunks of 4 a block step */ };

/* The block's amax: the warps' maxima through shared memory, into warp 0's lanes (the others branch to
 * done). */
static wb_reg block_amax(wb_func *f, wb_reg amax, wb_reg tid, wb_reg lane, wb_reg first, const char *done)
{
    max_butterfly(f, amax, 16);
    wb_reg smem = wb_new_reg(f, WB_RC_B32);
    wb_emit(f, WB_OP_SMEM_BASE, NULL, 2, wb_r(smem), wb_text("smem"));
    wb_reg slot = op3(f, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(op2(f, WB_OP_SHR, "u32", WB_RC_B32, wb_r(tid), wb_imm(5))),
                      wb_imm(4), wb_r(smem));
    wb_emit(f, WB_OP_ST_SHARED, "f32", 2, wb_r(slot), wb_r(amax));
    wb_guard_last(f, first, 0);
    wb_emit(f, WB_OP_BAR_SYNC, NULL, 0);
    wb_reg notw0 = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_GE, "u32", 3, wb_r(notw0), wb_r(tid), wb_imm(32));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(notw0), wb_text(done));
    wb_reg all = wb_new_reg(f, WB_RC_F32);
    wb_emit(f, WB_OP_LD_SHARED, "f32", 2, wb_r(all), wb_r(op3(f, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(lane), wb_imm(4), wb_r(smem))));
    max_butterfly(f, all, 16);
    return all;
}

static void lower_quant_global(wb_func *f, const wb_format *fm, int bf16)
{
    if (f->target->features & WB_FEAT_GRIDDEP)
        wb_emit(f, WB_OP_GRIDDEP_WAIT, NULL, 0);
    wb_reg x = param(f, "p_x", "u64", WB_RC_B64), gp = param(f, "p_global", "u64", WB_RC_B64);
    wb_reg n4 = param(f, "p_n4", "u32", WB_RC_B32), part = param(f, "p_part", "u64", WB_RC_B64);
    wb_reg reduce = param(f, "p_reduce", "u32", WB_RC_B32);
    wb_reg tid = op1(f, WB_OP_SPECIAL, NULL, WB_RC_B32, wb_text("%tid.x"));
    wb_reg cta = op1(f, WB_OP_SPECIAL, NULL, WB_RC_B32, wb_text("%ctaid.x"));
    wb_reg ncta = op1(f, WB_OP_SPECIAL, NULL, WB_RC_B32, wb_text("%nctaid.x"));
    wb_reg lane = op2(f, WB_OP_AND, "b32", WB_RC_B32, wb_r(tid), wb_imm(31));
    wb_reg amax = op1(f, WB_OP_MOV, "f32", WB_RC_F32, wb_f32(0.0f));
    const char *loop = wb_new_label(f, "amax"), *reduce_l = wb_new_label(f, "reduce"), *parts = wb_new_label(f, "parts");
    wb_reg is_reduce = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_NE, "u32", 3, wb_r(is_reduce), wb_r(reduce), wb_imm(0));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(is_reduce), wb_text(parts));
    /* the input: chunk i = block * STEP + tid, + 1024 u, then STEP * blocks on */
    wb_reg i = op3(f, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(cta), wb_imm(GLOBAL_STEP), wb_r(tid));
    wb_reg stride = op2(f, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(ncta), wb_imm(GLOBAL_STEP));
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(loop));
    wb_reg end = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_GE, "u32", 3, wb_r(end), wb_r(i), wb_r(n4));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(end), wb_text(reduce_l));
    wb_reg v[4][4];
    for (int u = 0; u < 4; u++) { /* chunks i, i + 1024, ..: the loads first, then the maxima */
        wb_reg at = op2(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(i), wb_imm(u * GLOBAL_THREADS)), in = wb_new_reg(f, WB_RC_PRED);
        wb_emit(f, WB_OP_SETP_LT, "u32", 3, wb_r(in), wb_r(at), wb_r(n4));
        load4_if(f, bf16, op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(x), wb_r(op2(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(at), wb_imm(8)))),
                 in, v[u]);
    }
    for (int u = 0; u < 4; u++)
        for (int j = 0; j < 4; j++)
            wb_emit(f, WB_OP_MAX, "f32", 3, wb_r(amax), wb_r(amax), wb_r(op1(f, WB_OP_ABS, "f32", WB_RC_F32, wb_r(v[u][j]))));
    wb_emit(f, WB_OP_ADD, "u32", 3, wb_r(i), wb_r(i), wb_r(stride));
    wb_emit(f, WB_OP_BRA, NULL, 1, wb_text(loop));
    /* the reduce launch: the first launch's p_n4 block maxima (at most one a thread) */
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(parts));
    wb_reg in = wb_new_reg(f, WB_RC_PRED), pv = wb_new_reg(f, WB_RC_F32);
    wb_emit(f, WB_OP_SETP_LT, "u32", 3, wb_r(in), wb_r(tid), wb_r(n4));
    wb_emit(f, WB_OP_LD_GLOBAL, "f32", 2, wb_r(pv), wb_r(op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(part),
                                                          wb_r(op2(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(tid), wb_imm(4))))));
    wb_guard_last(f, in, 0);
    wb_emit(f, WB_OP_MAX, "f32", 3, wb_r(amax), wb_r(amax), wb_r(pv));
    wb_guard_last(f, in, 0);
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(reduce_l));
    const char *done = wb_new_label(f, "done"), *write_g = wb_new_label(f, "g");
    wb_reg first = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_EQ, "u32", 3, wb_r(first), wb_r(lane), wb_imm(0));
    wb_reg all = block_amax(f, amax, tid, lane, first, done);
    /* one of several blocks of the first launch: its maximum, for the reduce launch */
    wb_reg one = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_EQ, "u32", 3, wb_r(one), wb_r(ncta), wb_imm(1));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(one), wb_text(write_g));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(is_reduce), wb_text(write_g));
    wb_emit(f, WB_OP_ST_GLOBAL, "f32", 2, wb_r(op2(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(part),
                                                 wb_r(op2(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(cta), wb_imm(4))))),
            wb_r(all));
    wb_guard_last(f, first, 0);
    wb_emit(f, WB_OP_BRA, NULL, 1, wb_text(done));
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(write_g));
    wb_reg t = op2(f, WB_OP_DIV, "rn.f64", WB_RC_B64, wb_r(f64_of(f, all)), wb_r(f64_const(f, 6.0)));
    if (fm->as.kind == WB_KIND_FLOAT) /* e4m3 block scales then use e4m3's whole range */
        t = op2(f, WB_OP_DIV, "rn.f64", WB_RC_B64, wb_r(t), wb_r(f64_const(f, 448.0)));
    wb_reg g = op1(f, WB_OP_CVT, "rn.f32.f64", WB_RC_F32, wb_r(t)), zero = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_SETP_EQ, "f32", 3, wb_r(zero), wb_r(all), wb_f32(0.0f));
    g = op3(f, WB_OP_SELP, "b32", WB_RC_B32, wb_hex(0x3F800000u), wb_r(g), wb_r(zero)); /* 1.0f */
    wb_emit(f, WB_OP_ST_GLOBAL, "f32", 2, wb_r(gp), wb_r(g));
    wb_guard_last(f, first, 0);
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(done));
    wb_emit(f, WB_OP_RET, NULL, 0);
}

const char *wb_quant_global_entry(void) { return "wb_quant_global"; }

wb_status wb_lower_quant_global(const wb_format *f, wb_type x, wb_arch arch, wb_func *fn)
{
    wb_status s = wb_quant_check(f, x, arch);
    if (s)
        return s;
    if (!f->ags)
        return wb_fail(WB_ERR_INVALID, "wb_quant_global: the format has no tensor scale (ags=0)");
    fn->target = wb_target_get(arch);
    lower_quant_global(fn, f, x.kind == WB_KIND_BF16);
    return fn->oom ? wb_fail(WB_ERR_NOMEM, "out of memory building the quantizer") : WB_OK;
}

int wb_quant_global_blocks(int64_t n4)
{
    int64_t b = (n4 + GLOBAL_STEP - 1) / GLOBAL_STEP;
    return b < 1 ? 1 : b > GLOBAL_THREADS ? GLOBAL_THREADS : (int)b;
}

void wb_quant_global_dims(wb_launch_dims *d, int blocks)
{
    memset(d, 0, sizeof *d);
    d->grid[0] = (unsigned)blocks, d->grid[1] = d->grid[2] = 1;
    d->block[0] = GLOBAL_THREADS, d->block[1] = d->block[2] = 1;
    d->smem_bytes = 4 * GLOBAL_THREADS / 32;
}

/* Print one of the two kernels (global: the tensor-scale pass) */
static wb_status print_ptx(const wb_format *f, wb_type x, wb_arch arch, int global, char **ptx_out)
{
    if (!ptx_out)
        return wb_fail(WB_ERR_INVALID, "wb_quant_ptx: bad argument");
    *ptx_out = NULL;
    const wb_target *t = wb_target_get(arch);
    wb_arena *arena = wb_arena_create();
    if (!arena)
        return wb_fail(WB_ERR_NOMEM, "out of memory building the quantizer");
    wb_func fn;
    wb_func_init(&fn, arena);
    wb_status s = global ? wb_lower_quant_global(f, x, arch, &fn) : wb_lower_quant(f, x, arch, &fn);
    if (s) {
        wb_arena_destroy(arena);
        return s;
    }
    static const char *const params[] = {"u64 p_x", "u64 p_codes", "u64 p_scales", "u32 p_groups", "u32 p_gsize",
                                         "u64 p_global"};
    static const char *const gparams[] = {"u64 p_x", "u64 p_global", "u32 p_n4", "u64 p_part", "u32 p_reduce"};
    char an[8], sn[8], title[128];
    if (global)
        snprintf(title, sizeof title, "activation quantizer, tensor scale: %s -> f32 amax-based scale",
                 x.kind == WB_KIND_BF16 ? "bf16" : "f16");
    else
        snprintf(title, sizeof title, "activation quantizer: %s -> a=%s, %s scales per group",
                 x.kind == WB_KIND_BF16 ? "bf16" : "f16", wb_type_name(f->a, an), wb_type_name(f->as, sn));
    /* f32 -> fp8 conversions on sm_89 need PTX 8.1 (sm_89 is otherwise emitted as 7.8); 8.4 as its fp8 GEMM */
    int to_fp8 = wb_type_fp8(f->a) || (wb_format_fp4_acts(f) && f->as.kind == WB_KIND_FLOAT); /* e4m3 block scales */
    const char *version = strcmp(t->ptx_version, "8.1") < 0 && to_fp8 && !global ? "8.4" : t->ptx_version;
    wb_ptx_header h = {version, t->ptx_target, global ? wb_quant_global_entry() : wb_quant_entry(),
                       global ? gparams : params, global ? (int)WB_COUNT(gparams) : (int)WB_COUNT(params),
                       global ? 16 : 0, global ? GLOBAL_THREADS : 32 * QUANT_WARPS, title, 0};
    if (!fn.oom)
        *ptx_out = wb_emit_ptx(&fn, &h, 0);
    s = *ptx_out ? WB_OK : wb_fail(WB_ERR_NOMEM, "out of memory printing the quantizer");
    wb_arena_destroy(arena);
    return s;
}

wb_status wb_quant_ptx(const wb_format *f, wb_type x, wb_arch arch, char **ptx_out)
{
    return print_ptx(f, x, arch, 0, ptx_out);
}

wb_status wb_quant_global_ptx(const wb_format *f, wb_type x, wb_arch arch, char **ptx_out)
{
    return print_ptx(f, x, arch, 1, ptx_out);
}
