/* Element and scale types: names, code <-> value, and exact f16/bf16 conversions (contract section 1).
 *
 * Every float-like type is rounded by one routine, round_mag(): a non-negative value is put on the
 * grid of a binary format with `mbits` fraction bits and minimum exponent `emin` (subnormals below),
 * round to nearest even, and returned as the magnitude of its code. The magnitude code grows with
 * the value, so overflow is a comparison with the largest finite code. Conventions of encode:
 * finite values beyond the range saturate to the largest finite value; an infinity maps to the
 * infinity code where the type has one (f16, bf16, f32, e5m2), else it saturates too; NaN maps to
 * a NaN code where the type has one, else to code 0. With no fraction bits (eXm0, e8m0) a tie
 * between 2^e and 2^(e+1) goes to 2^(e+1), the even integer multiple of the quantum 2^e.
 */
#include "dsl/common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double nf4_table[16] = {
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
};

/* ---- names */

const char *wb_type_name(wb_type t, char buf[8])
{
    switch (t.kind) {
    case WB_KIND_INT: snprintf(buf, 8, "int%d", t.bits); return buf;
    case WB_KIND_UINT: snprintf(buf, 8, "uint%d", t.bits); return buf;
    case WB_KIND_FLOAT: snprintf(buf, 8, "e%dm%d", t.ebits, t.mbits); return buf;
    case WB_KIND_F16: return "f16";
    case WB_KIND_BF16: return "bf16";
    case WB_KIND_F32: return "f32";
    case WB_KIND_E8M0: return "e8m0";
    case WB_KIND_TABLE: return t.ebits ? "lut4" : "nf4";
    case WB_KIND_NONE: break;
    }
    return "none";
}

/* One decimal digit 1..8 that ends the string ("int4" -> 4); 0 when it is not that. */
static int bits_suffix(const char *s)
{
    return s[0] >= '1' && s[0] <= '8' && s[1] == 0 ? s[0] - '0' : 0;
}

int wb_type_parse(const char *name, wb_type *out)
{
    static const struct { const char *name; wb_type t; } fixed[] = {
        {"f16", {WB_KIND_F16, 16, 0, 0}},  {"bf16", {WB_KIND_BF16, 16, 0, 0}},
        {"f32", {WB_KIND_F32, 32, 0, 0}},  {"e8m0", {WB_KIND_E8M0, 8, 0, 0}},
        {"nf4", {WB_KIND_TABLE, 4, 0, 0}}, {"s8", {WB_KIND_INT, 8, 0, 0}},
        {"s4", {WB_KIND_INT, 4, 0, 0}},
    };
    if (!name)
        return -1;
    for (size_t i = 0; i < WB_COUNT(fixed); i++)
        if (!strcmp(name, fixed[i].name)) {
            *out = fixed[i].t;
            return 0;
        }
    wb_type t = {WB_KIND_NONE, 0, 0, 0};
    if (!strncmp(name, "int", 3) && (t.bits = bits_suffix(name + 3)))
        t.kind = WB_KIND_INT;
    else if (!strncmp(name, "uint", 4) && (t.bits = bits_suffix(name + 4)))
        t.kind = WB_KIND_UINT;
    else if (name[0] == 'e' && name[1] >= '1' && name[1] <= '7' && name[2] == 'm' &&
             name[3] >= '0' && name[3] <= '6' && name[4] == 0) {
        t.ebits = name[1] - '0';
        t.mbits = name[3] - '0';
        if (t.ebits + t.mbits > 7)
            return -1;
        t.kind = WB_KIND_FLOAT;
        t.bits = 1 + t.ebits + t.mbits;
    }
    if (t.kind == WB_KIND_NONE)
        return -1;
    *out = t;
    return 0;
}

int wb_type_file_bytes(wb_type t)
{
    switch (t.kind) {
    case WB_KIND_F16:
    case WB_KIND_BF16: return 2;
    case WB_KIND_F32: return 4;
    case WB_KIND_NONE: return 0;
    default: return 1;
    }
}

/* ---- the shared rounding step */

/* Magnitude code of a >= 0 (finite) on the grid of a binary format: mbits fraction bits, minimum
 * normal exponent emin, subnormals below. Unbounded above: the caller compares with its max code
 * (a double's exponent is at most 1023 and emin >= -126 here, so the shift cannot overflow). */
static uint64_t round_mag(double a, int emin, int mbits)
{
    if (a == 0)
        return 0;
    int e2;
    frexp(a, &e2);
    int ex = e2 - 1; /* a = 1.f * 2^ex */
    if (ex < emin)
        ex = emin;
    double r = nearbyint(ldexp(a, mbits - ex)); /* exact scaling, then round to nearest even */
    return ((uint64_t)(ex - emin) << mbits) + (uint64_t)r;
}

/* Decode a magnitude code of the same grid (no specials). */
static double mag_value(uint32_t mag, int emin, int mbits)
{
    uint32_t e = mag >> mbits, m = mag & ((1u << mbits) - 1);
    if (e == 0)
        return ldexp((double)m, emin - mbits);
    return ldexp((double)(m | (1u << mbits)), emin + (int)e - 1 - mbits);
}

/* ---- IEEE-like formats with infinities: f16 (5,10), bf16 (8,7) */

static uint32_t ieee_from_double(double v, int ebits, int mbits)
{
    uint32_t sign = signbit(v) ? 1u << (ebits + mbits) : 0;
    uint32_t inf = ((1u << ebits) - 1) << mbits;
    if (isnan(v))
        return inf | (1u << (mbits - 1)); /* quiet NaN, sign dropped */
    if (isinf(v))
        return sign | inf;
    int emin = 2 - (1 << (ebits - 1));
    uint64_t mag = round_mag(fabs(v), emin, mbits);
    return sign | (mag >= inf ? inf : (uint32_t)mag);
}

static double ieee_to_double(uint32_t h, int ebits, int mbits)
{
    uint32_t inf = ((1u << ebits) - 1) << mbits, mag = h & ((1u << (ebits + mbits)) - 1);
    int neg = (h >> (ebits + mbits)) & 1;
    double v;
    if ((mag & inf) == inf)
        v = (mag & ((1u << mbits) - 1)) ? NAN : INFINITY;
    else
        v = mag_value(mag, 2 - (1 << (ebits - 1)), mbits);
    return neg ? -v : v;
}

uint16_t wb_f16_from_double(double v) { return (uint16_t)ieee_from_double(v, 5, 10); }
double wb_f16_to_double(uint16_t h) { return ieee_to_double(h, 5, 10); }
uint16_t wb_bf16_from_double(double v) { return (uint16_t)ieee_from_double(v, 8, 7); }
double wb_bf16_to_double(uint16_t h) { return ieee_to_double(h, 8, 7); }

/* ---- small floats eXmY */

/* The largest finite magnitude code of eXmY (e4m3 loses S.1111.111 to NaN, e5m2 its top binade). */
static uint32_t small_max(wb_type t)
{
    uint32_t all = (1u << (t.ebits + t.mbits)) - 1;
    if (t.ebits == 4 && t.mbits == 3)
        return all - 1;
    if (t.ebits == 5 && t.mbits == 2)
        return all - 4;
    return all;
}

static int small_is_e5m2(wb_type t) { return t.ebits == 5 && t.mbits == 2; }

static double small_decode(wb_type t, uint32_t code)
{
    int nb = t.ebits + t.mbits;
    uint32_t mag = code & ((1u << nb) - 1);
    int neg = (code >> nb) & 1;
    double v;
    if (mag > small_max(t))
        v = small_is_e5m2(t) && mag == small_max(t) + 1 ? INFINITY : NAN;
    else
        v = mag_value(mag, 2 - (1 << (t.ebits - 1)), t.mbits);
    return neg ? -v : v;
}

static uint32_t small_encode(wb_type t, double v)
{
    int nb = t.ebits + t.mbits;
    uint32_t sign = signbit(v) ? 1u << nb : 0;
    uint32_t max = small_max(t);
    if (isnan(v))
        return (t.ebits == 4 && t.mbits == 3) || small_is_e5m2(t) ? (1u << nb) - 1 : 0;
    if (isinf(v))
        return sign | (small_is_e5m2(t) ? max + 1 : max);
    uint64_t mag = round_mag(fabs(v), 2 - (1 << (t.ebits - 1)), t.mbits);
    return sign | (mag > max ? max : (uint32_t)mag);
}

/* ---- e8m0: 2^(code-127), 255 is NaN */

static uint32_t e8m0_encode(double v)
{
    if (isnan(v))
        return 255;
    if (v <= 0)
        return 0; /* the nearest of the positive powers of two is the smallest */
    if (isinf(v))
        return 254;
    int e2;
    double f = frexp(v, &e2); /* v = f * 2^e2, f in [0.5, 1) */
    int e = e2 - 1 + (f >= 0.75); /* 1.5 * 2^e ties to 2^(e+1) */
    e += 127;
    return e < 0 ? 0 : e > 254 ? 254 : (uint32_t)e;
}

/* ---- integers and the table */

static uint32_t int_encode(wb_type t, double v)
{
    double lo = t.kind == WB_KIND_INT ? -ldexp(1, t.bits - 1) : 0;
    double hi = t.kind == WB_KIND_INT ? ldexp(1, t.bits - 1) - 1 : ldexp(1, t.bits) - 1;
    if (isnan(v))
        return 0;
    double r = nearbyint(v);
    r = r < lo ? lo : r > hi ? hi : r;
    return (uint32_t)(int32_t)r & ((1u << t.bits) - 1);
}

static uint32_t table_encode(double v)
{
    uint32_t best = 7; /* 0.0 for NaN */
    if (isnan(v))
        return best;
    for (uint32_t i = 0; i < 16; i++) {
        double d = fabs(nf4_table[i] - v), bd = fabs(nf4_table[best] - v);
        if (d < bd || (d == bd && !(i & 1) && (best & 1)))
            best = i;
    }
    return best;
}

/* ---- decode / encode */

/* Codes of a malformed type (what wb_type_parse never returns) decode to NaN and encode to 0. */
static int well_formed(wb_type t)
{
    switch (t.kind) {
    case WB_KIND_INT:
    case WB_KIND_UINT: return t.bits >= 1 && t.bits <= 8;
    case WB_KIND_FLOAT:
        return t.ebits >= 1 && t.mbits >= 0 && t.ebits + t.mbits <= 7 && t.bits == 1 + t.ebits + t.mbits;
    case WB_KIND_NONE: return 0;
    default: return 1;
    }
}

double wb_type_decode(wb_type t, uint32_t code)
{
    if (!well_formed(t))
        return NAN;
    uint32_t mask = t.bits >= 32 || t.bits <= 0 ? 0xffffffffu : (1u << t.bits) - 1;
    code &= mask;
    switch (t.kind) {
    case WB_KIND_INT:
        return code >> (t.bits - 1) ? (double)code - ldexp(1, t.bits) : (double)code;
    case WB_KIND_UINT: return (double)code;
    case WB_KIND_FLOAT: return small_decode(t, code);
    case WB_KIND_F16: return wb_f16_to_double((uint16_t)code);
    case WB_KIND_BF16: return wb_bf16_to_double((uint16_t)code);
    case WB_KIND_F32: {
        float f;
        memcpy(&f, &code, sizeof f);
        return f;
    }
    case WB_KIND_E8M0: return code == 255 ? NAN : ldexp(1, (int)code - 127);
    case WB_KIND_TABLE: return t.ebits ? NAN : nf4_table[code & 15]; /* lut4: wb_format_weight_value */
    case WB_KIND_NONE: break;
    }
    return NAN;
}

uint32_t wb_type_encode(wb_type t, double v)
{
    if (!well_formed(t))
        return 0;
    switch (t.kind) {
    case WB_KIND_INT:
    case WB_KIND_UINT: return int_encode(t, v);
    case WB_KIND_FLOAT: return small_encode(t, v);
    case WB_KIND_F16:
    case WB_KIND_BF16:
    case WB_KIND_F32: {
        int eb = t.kind == WB_KIND_F16 ? 5 : 8;
        int mb = t.kind == WB_KIND_F16 ? 10 : t.kind == WB_KIND_BF16 ? 7 : 23;
        uint32_t inf = ((1u << eb) - 1) << mb, sign = signbit(v) ? 1u << (eb + mb) : 0;
        uint32_t c = ieee_from_double(v, eb, mb);
        if (isfinite(v) && (c & ~sign) == inf)
            c = sign | (inf - 1); /* saturate finite overflow */
        return c;
    }
    case WB_KIND_E8M0: return e8m0_encode(v);
    case WB_KIND_TABLE: return table_encode(v);
    case WB_KIND_NONE: break;
    }
    return 0;
}
