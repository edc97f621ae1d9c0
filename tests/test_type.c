/* Unit tests of dsl/type.c: type names, every code of every small type (decode against values
 * computed here independently, encode round trips and rounding), and the f16/bf16 conversions
 * (against the compiler's _Float16, the bf16-is-the-top-half-of-f32 identity, and nearest-neighbour
 * search on fresh random values). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "testutil.h"

static wb_type T(const char *name)
{
    wb_type t;
    ck_assert_msg(wb_type_parse(name, &t) == 0, "parse %s", name);
    return t;
}

/* Every type of at most 8 bits that specs can name. */
static int small_types(wb_type *out)
{
    int n = 0;
    char name[16];
    for (int b = 1; b <= 8; b++) {
        snprintf(name, sizeof name, "int%d", b);
        out[n++] = T(name);
        snprintf(name, sizeof name, "uint%d", b);
        out[n++] = T(name);
    }
    for (int x = 1; x <= 7; x++)
        for (int y = 0; x + y <= 7; y++) {
            snprintf(name, sizeof name, "e%dm%d", x, y);
            out[n++] = T(name);
        }
    out[n++] = T("e8m0");
    out[n++] = T("nf4");
    return n;
}

/* The value of eXmY code c from the definition, written with pow() instead of ldexp(). */
static double small_float_value(int x, int y, unsigned c)
{
    unsigned s = (c >> (x + y)) & 1, e = (c >> y) & ((1u << x) - 1), m = c & ((1u << y) - 1);
    int bias = (1 << (x - 1)) - 1;
    double v = e == 0 ? m / pow(2, y) * pow(2, 1 - bias) : (1 + m / pow(2, y)) * pow(2, (int)e - bias);
    if (x == 4 && y == 3 && e == 15 && m == 7)
        v = NAN;
    if (x == 5 && y == 2 && e == 31)
        v = m ? NAN : INFINITY;
    return s ? -v : v;
}

START_TEST(names)
{
    char buf[8];
    wb_type t, all[64];
    int n = small_types(all);
    ck_assert_int_eq(n, 16 + 28 + 2);
    for (int i = 0; i < n; i++) {
        const char *name = wb_type_name(all[i], buf);
        ck_assert_int_eq(wb_type_parse(name, &t), 0);
        ck_assert_int_eq(t.kind, all[i].kind);
        ck_assert_int_eq(t.bits, all[i].bits);
        ck_assert_int_eq(t.ebits, all[i].ebits);
        ck_assert_int_eq(t.mbits, all[i].mbits);
        ck_assert_int_le(t.bits, 8);
        ck_assert_int_eq(wb_type_file_bytes(t), 1);
    }
    const char *wide[] = {"f16", "bf16", "f32"};
    int bytes[] = {2, 2, 4};
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(wb_type_name(T(wide[i]), buf), wide[i]);
        ck_assert_int_eq(wb_type_file_bytes(T(wide[i])), bytes[i]);
    }
    t = T("s8");
    ck_assert(t.kind == WB_KIND_INT && t.bits == 8);
    t = T("s4");
    ck_assert(t.kind == WB_KIND_INT && t.bits == 4);
    t = T("e4m3");
    ck_assert(t.kind == WB_KIND_FLOAT && t.bits == 8 && t.ebits == 4 && t.mbits == 3);
    t = T("e2m1");
    ck_assert(t.kind == WB_KIND_FLOAT && t.bits == 4);
    t = T("e8m0");
    ck_assert(t.kind == WB_KIND_E8M0 && t.bits == 8);
    t = T("nf4");
    ck_assert(t.kind == WB_KIND_TABLE && t.bits == 4);
    const char *bad[] = {"", "int", "int0", "int9", "uint0", "uint9", "int10", "e0m3", "e8m1", "e4m4",
                         "e1m7", "e9m0", "e4m3x", "F16", "f8", "fp16", "s16", "s2", "e4", "em3", " f16"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(wb_type_parse(bad[i], &t) == -1, "'%s' parsed", bad[i]);
    ck_assert_int_eq(wb_type_parse(NULL, &t), -1);
    wb_type junk[] = {{WB_KIND_INT, 0, 0, 0}, {WB_KIND_UINT, 40, 0, 0}, {WB_KIND_FLOAT, 8, 0, 7},
                      {WB_KIND_NONE, 8, 0, 0}};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        ck_assert(isnan(wb_type_decode(junk[i], 1)));
        ck_assert_uint_eq(wb_type_encode(junk[i], 1.0), 0);
    }
}
END_TEST

START_TEST(decode_known_values)
{
    static const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    for (unsigned c = 0; c < 16; c++)
        ck_assert(wb_type_decode(T("e2m1"), c) == (c & 8 ? -e2m1[c & 7] : e2m1[c & 7]));
    ck_assert(wb_type_decode(T("e2m3"), 0x1f) == 7.5);
    ck_assert(wb_type_decode(T("e2m3"), 0x01) == 0.125);
    ck_assert(wb_type_decode(T("e3m2"), 0x1f) == 28);
    ck_assert(wb_type_decode(T("e3m2"), 0x01) == 0.0625);
    ck_assert(wb_type_decode(T("e4m3"), 0x7e) == 448);
    ck_assert(wb_type_decode(T("e4m3"), 0xfe) == -448);
    ck_assert(isnan(wb_type_decode(T("e4m3"), 0x7f)));
    ck_assert(isnan(wb_type_decode(T("e4m3"), 0xff)));
    ck_assert(wb_type_decode(T("e4m3"), 0x78) == 256);
    ck_assert(wb_type_decode(T("e4m3"), 0x01) == ldexp(1, -9));
    ck_assert(wb_type_decode(T("e4m3"), 0x38) == 1);
    ck_assert(wb_type_decode(T("e5m2"), 0x7b) == 57344);
    ck_assert(wb_type_decode(T("e5m2"), 0x7c) == INFINITY);
    ck_assert(wb_type_decode(T("e5m2"), 0xfc) == -INFINITY);
    for (unsigned c = 0x7d; c <= 0x7f; c++)
        ck_assert(isnan(wb_type_decode(T("e5m2"), c)));
    ck_assert(wb_type_decode(T("e5m2"), 0x01) == ldexp(1, -16));
    ck_assert(wb_type_decode(T("e5m2"), 0x3c) == 1);
    ck_assert(wb_type_decode(T("e1m0"), 1) == 2); /* bias 0: codes 0, 2 */
    ck_assert(wb_type_decode(T("e7m0"), 0x7f) == ldexp(1, 64));
    ck_assert(wb_type_decode(T("e8m0"), 127) == 1);
    ck_assert(wb_type_decode(T("e8m0"), 0) == ldexp(1, -127));
    ck_assert(wb_type_decode(T("e8m0"), 254) == ldexp(1, 127));
    ck_assert(isnan(wb_type_decode(T("e8m0"), 255)));
    ck_assert(wb_type_decode(T("int4"), 8) == -8);
    ck_assert(wb_type_decode(T("int4"), 15) == -1);
    ck_assert(wb_type_decode(T("int4"), 7) == 7);
    ck_assert(wb_type_decode(T("int1"), 1) == -1);
    ck_assert(wb_type_decode(T("s8"), 0x80) == -128);
    ck_assert(wb_type_decode(T("uint3"), 7) == 7);
    ck_assert(wb_type_decode(T("uint8"), 255) == 255);
    ck_assert(wb_type_decode(T("nf4"), 0) == -1.0);
    ck_assert(wb_type_decode(T("nf4"), 7) == 0.0);
    ck_assert(wb_type_decode(T("nf4"), 8) == 0.07958029955625534);
    ck_assert(wb_type_decode(T("nf4"), 13) == 0.5626170039176941);
    ck_assert(wb_type_decode(T("nf4"), 15) == 1.0);
    ck_assert(wb_type_decode(T("f32"), 0x3f800000u) == 1);
    ck_assert(wb_type_decode(T("f16"), 0x3c00) == 1);
    ck_assert(wb_type_decode(T("bf16"), 0x3f80) == 1);
}
END_TEST

/* Every code of every small type: the definition, and encode(decode(c)) == c. */
START_TEST(every_code_round_trips)
{
    wb_type all[64];
    int n = small_types(all);
    for (int i = 0; i < n; i++) {
        wb_type t = all[i];
        for (unsigned c = 0; c < (1u << t.bits); c++) {
            double v = wb_type_decode(t, c), want = v;
            if (t.kind == WB_KIND_INT)
                want = c >= (1u << (t.bits - 1)) ? (double)c - (1 << t.bits) : c;
            else if (t.kind == WB_KIND_UINT)
                want = c;
            else if (t.kind == WB_KIND_FLOAT)
                want = small_float_value(t.ebits, t.mbits, c);
            else if (t.kind == WB_KIND_E8M0)
                want = c == 255 ? NAN : pow(2, (int)c - 127);
            if (isnan(want)) {
                ck_assert(isnan(v));
                ck_assert(isnan(wb_type_decode(t, wb_type_encode(t, v)))); /* NaN -> a NaN code */
                continue;
            }
            ck_assert_msg(v == want && signbit(v) == signbit(want), "type %d/%d code %u: %g != %g",
                          t.ebits, t.mbits, c, v, want);
            ck_assert_msg(wb_type_encode(t, v) == c, "bits %d kind %d code %u", t.bits, t.kind, c);
            /* high bits of a code are ignored by decode */
            if (t.bits < 8)
                ck_assert(wb_type_decode(t, c | (1u << t.bits)) == v || isnan(v));
        }
    }
}
END_TEST

/* Midpoints between neighbouring values go to the even code; just off them, to the nearer one;
 * beyond the range, saturation. */
START_TEST(encode_rounds_to_nearest_even)
{
    wb_type all[64];
    int n = small_types(all);
    for (int i = 0; i < n; i++) {
        wb_type t = all[i];
        if (t.kind != WB_KIND_FLOAT)
            continue;
        unsigned sign = 1u << (t.bits - 1), maxc = 0;
        for (unsigned c = 0; c + 1 < sign; c++) {
            double lo = wb_type_decode(t, c), hi = wb_type_decode(t, c + 1);
            if (!isfinite(hi))
                break;
            maxc = c + 1;
            ck_assert(lo < hi);
            double mid = (lo + hi) / 2;
            unsigned even = (c & 1) ? c + 1 : c;
            if (t.mbits == 0 && c > 0)
                even = c + 1; /* no fraction bits: a tie goes to the larger power of two */
            ck_assert_msg(wb_type_encode(t, mid) == even, "e%dm%d mid %g", t.ebits, t.mbits, mid);
            ck_assert(wb_type_encode(t, -mid) == (even | sign));
            ck_assert(wb_type_encode(t, nextafter(mid, INFINITY)) == c + 1);
            ck_assert(wb_type_encode(t, nextafter(mid, -INFINITY)) == c);
        }
        double max = wb_type_decode(t, maxc);
        ck_assert(wb_type_encode(t, max * 1.49) == maxc);
        ck_assert(wb_type_encode(t, max * 1e30) == maxc);
        ck_assert(wb_type_encode(t, -max * 4) == (maxc | sign));
        ck_assert(wb_type_encode(t, 1e-300) == 0);
        ck_assert(wb_type_encode(t, -1e-300) == sign);
    }
    ck_assert_uint_eq(wb_type_encode(T("e2m1"), 5), 6);   /* tie 4|6 -> 4 (even code) */
    ck_assert_uint_eq(wb_type_encode(T("e2m1"), 2.5), 4); /* tie 2|3 -> 2 */
    ck_assert_uint_eq(wb_type_encode(T("e2m1"), 0.25), 0);
    ck_assert_uint_eq(wb_type_encode(T("e2m1"), 100), 7);
    ck_assert_uint_eq(wb_type_encode(T("e4m3"), 464), 0x7e);
    ck_assert_uint_eq(wb_type_encode(T("e4m3"), 1e9), 0x7e);
    ck_assert_uint_eq(wb_type_encode(T("e4m3"), NAN), 0x7f);
    ck_assert_uint_eq(wb_type_encode(T("e4m3"), INFINITY), 0x7e);
    ck_assert_uint_eq(wb_type_encode(T("e5m2"), 1e9), 0x7b);
    ck_assert_uint_eq(wb_type_encode(T("e5m2"), INFINITY), 0x7c);
    ck_assert_uint_eq(wb_type_encode(T("e5m2"), -INFINITY), 0xfc);
    ck_assert(isnan(wb_type_decode(T("e5m2"), wb_type_encode(T("e5m2"), NAN))));
    ck_assert_uint_eq(wb_type_encode(T("e2m3"), 100), 0x1f);
    ck_assert_uint_eq(wb_type_encode(T("e3m2"), 100), 0x1f);
    ck_assert_uint_eq(wb_type_encode(T("e8m0"), 1.5), 128);
    ck_assert_uint_eq(wb_type_encode(T("e8m0"), 1.49), 127);
    ck_assert_uint_eq(wb_type_encode(T("e8m0"), 0.75), 127);
    ck_assert_uint_eq(wb_type_encode(T("e8m0"), 0.74), 126);
    ck_assert_uint_eq(wb_type_encode(T("e8m0"), 1e300), 254);
    ck_assert_uint_eq(wb_type_encode(T("e8m0"), 0), 0);
    ck_assert_uint_eq(wb_type_encode(T("e8m0"), NAN), 255);
    ck_assert_uint_eq(wb_type_encode(T("int4"), 7.6), 7);
    ck_assert_uint_eq(wb_type_encode(T("int4"), -9), 8);
    ck_assert_uint_eq(wb_type_encode(T("int4"), 2.5), 2);
    ck_assert_uint_eq(wb_type_encode(T("int4"), 3.5), 4);
    ck_assert_uint_eq(wb_type_encode(T("int4"), -0.6), 15);
    ck_assert_uint_eq(wb_type_encode(T("int4"), NAN), 0);
    ck_assert_uint_eq(wb_type_encode(T("uint4"), -1), 0);
    ck_assert_uint_eq(wb_type_encode(T("uint4"), 16), 15);
    ck_assert_uint_eq(wb_type_encode(T("nf4"), 0.9), 15);
    ck_assert_uint_eq(wb_type_encode(T("nf4"), -0.01), 7);
    ck_assert_uint_eq(wb_type_encode(T("nf4"), 0.52), 13);
    ck_assert_uint_eq(wb_type_encode(T("f32"), 1.0), 0x3f800000u);
    ck_assert_uint_eq(wb_type_encode(T("f32"), 1e39), 0x7f7fffffu);
    ck_assert_uint_eq(wb_type_encode(T("f32"), -INFINITY), 0xff800000u);
    ck_assert_uint_eq(wb_type_encode(T("f16"), 1e6), 0x7bff);
    ck_assert_uint_eq(wb_type_encode(T("f16"), INFINITY), 0x7c00);
    ck_assert_uint_eq(wb_type_encode(T("bf16"), -1e39), 0xff7f);
}
END_TEST

/* Fresh random values: the code chosen is a nearest one among all finite codes. */
START_TEST(encode_is_nearest)
{
    uint64_t st = wbt_seed() + 1;
    wb_type all[64];
    int n = small_types(all);
    for (int i = 0; i < n; i++) {
        wb_type t = all[i];
        double vals[256], max = 0;
        int nv = 1 << t.bits;
        for (int c = 0; c < nv; c++) {
            vals[c] = wb_type_decode(t, (uint32_t)c);
            if (isfinite(vals[c]) && fabs(vals[c]) > max)
                max = fabs(vals[c]);
        }
        for (int r = 0; r < 2000; r++) {
            double u = (double)(wbt_next(&st) >> 11) / 9007199254740992.0;
            double v = (2 * u - 1) * max * 1.2;
            if (t.kind == WB_KIND_E8M0)
                v = ldexp(1 + u, (int)(wbt_next(&st) % 260) - 130);
            double got = wb_type_decode(t, wb_type_encode(t, v)), best = INFINITY;
            for (int c = 0; c < nv; c++)
                if (isfinite(vals[c]) && fabs(vals[c] - v) < best)
                    best = fabs(vals[c] - v);
            ck_assert_msg(fabs(got - v) == best, "seed %llu type %d bits %d v=%g got %g",
                          (unsigned long long)wbt_seed(), t.kind, t.bits, v, got);
        }
    }
}
END_TEST

#ifdef __FLT16_MAX__
static double f16_ref(uint16_t h)
{
    _Float16 x;
    memcpy(&x, &h, 2);
    return (double)x;
}
static uint16_t f16_ref_from(double v)
{
    _Float16 x = (_Float16)v;
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}
#endif

static double bf16_ref(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

START_TEST(f16_all_codes)
{
    for (uint32_t h = 0; h < 65536; h++) {
        double v = wb_f16_to_double((uint16_t)h);
        unsigned e = (h >> 10) & 31, m = h & 1023;
        double want = e == 0 ? m * pow(2, -24) : e == 31 ? (m ? NAN : INFINITY) : (1024 + m) * pow(2, (int)e - 25);
        if (h & 0x8000)
            want = -want;
#ifdef __FLT16_MAX__
        ck_assert(isnan(want) ? isnan(f16_ref((uint16_t)h)) : f16_ref((uint16_t)h) == want);
#endif
        if (isnan(want)) {
            ck_assert(isnan(v));
            ck_assert(isnan(wb_f16_to_double(wb_f16_from_double(v))));
            continue;
        }
        ck_assert_msg(v == want && signbit(v) == signbit(want), "f16 %04x", h);
        ck_assert_uint_eq(wb_f16_from_double(v), h);
        ck_assert_uint_eq(wb_type_encode(T("f16"), v), h);
    }
}
END_TEST

START_TEST(bf16_all_codes)
{
    for (uint32_t h = 0; h < 65536; h++) {
        double v = wb_bf16_to_double((uint16_t)h), want = bf16_ref((uint16_t)h);
        if (isnan(want)) {
            ck_assert(isnan(v));
            ck_assert(isnan(wb_bf16_to_double(wb_bf16_from_double(v))));
            continue;
        }
        ck_assert_msg(v == want && signbit(v) == signbit(want), "bf16 %04x", h);
        ck_assert_uint_eq(wb_bf16_from_double(v), h);
    }
}
END_TEST

START_TEST(half_rounding_cases)
{
    ck_assert_uint_eq(wb_f16_from_double(65504), 0x7bff);
    ck_assert_uint_eq(wb_f16_from_double(65519.99), 0x7bff);
    ck_assert_uint_eq(wb_f16_from_double(65520), 0x7c00); /* overflow -> inf */
    ck_assert_uint_eq(wb_f16_from_double(-1e10), 0xfc00);
    ck_assert_uint_eq(wb_f16_from_double(ldexp(1, -24)), 0x0001);
    ck_assert_uint_eq(wb_f16_from_double(ldexp(1, -25)), 0x0000); /* tie -> even (0) */
    ck_assert_uint_eq(wb_f16_from_double(nextafter(ldexp(1, -25), 1)), 0x0001);
    ck_assert_uint_eq(wb_f16_from_double(3 * ldexp(1, -25)), 0x0002); /* tie 1|2 quanta -> 2 */
    ck_assert_uint_eq(wb_f16_from_double(ldexp(1023, -24)), 0x03ff); /* largest subnormal */
    ck_assert_uint_eq(wb_f16_from_double(ldexp(2047, -25)), 0x0400); /* rounds up into normals */
    ck_assert_uint_eq(wb_f16_from_double(1 + ldexp(1, -11)), 0x3c00);
    ck_assert_uint_eq(wb_f16_from_double(1 + 3 * ldexp(1, -11)), 0x3c02);
    ck_assert_uint_eq(wb_f16_from_double(-0.0), 0x8000);
    ck_assert_uint_eq(wb_f16_from_double(1e-300), 0x0000);
    ck_assert(isnan(wb_f16_to_double(wb_f16_from_double(NAN))));
    ck_assert_uint_eq(wb_f16_from_double(INFINITY), 0x7c00);
    ck_assert_uint_eq(wb_bf16_from_double(1 + ldexp(1, -8)), 0x3f80);
    ck_assert_uint_eq(wb_bf16_from_double(1 + 3 * ldexp(1, -8)), 0x3f82);
    ck_assert_uint_eq(wb_bf16_from_double(ldexp(1, -133)), 0x0001);
    ck_assert_uint_eq(wb_bf16_from_double(ldexp(1, -134)), 0x0000);
    ck_assert_uint_eq(wb_bf16_from_double(ldexp(3, -134)), 0x0002);
    ck_assert_uint_eq(wb_bf16_from_double(ldexp(2 - ldexp(1, -7), 127)), 0x7f7f);
    ck_assert_uint_eq(wb_bf16_from_double(ldexp(2 - ldexp(1, -8), 127)), 0x7f80);
    ck_assert_uint_eq(wb_bf16_from_double(nextafter(ldexp(2 - ldexp(1, -8), 127), 0)), 0x7f7f);
    ck_assert_uint_eq(wb_bf16_from_double(-INFINITY), 0xff80);
    ck_assert(isnan(wb_bf16_to_double(wb_bf16_from_double(NAN))));
}
END_TEST

/* Nearest-neighbour check of one conversion result h for v (ties to the even code). */
static void check_nearest(double (*dec)(uint16_t), uint16_t h, double v, uint16_t maxfin)
{
    uint16_t mag = h & 0x7fff, sign = h & 0x8000;
    if (mag > maxfin)
        return; /* overflow, checked by the threshold cases */
    double d = fabs(dec(h) - v);
    if (mag < maxfin)
        ck_assert(d <= fabs(dec((uint16_t)(sign | (mag + 1))) - v));
    if (mag > 0)
        ck_assert(d <= fabs(dec((uint16_t)(sign | (mag - 1))) - v));
    if (mag < maxfin && d == fabs(dec((uint16_t)(sign | (mag + 1))) - v))
        ck_assert((mag & 1) == 0);
    if (mag > 0 && d == fabs(dec((uint16_t)(sign | (mag - 1))) - v))
        ck_assert((mag & 1) == 0);
}

START_TEST(half_random)
{
    uint64_t st = wbt_seed() + 2;
    for (int i = 0; i < 200000; i++) {
        uint64_t r = wbt_next(&st);
        double u = (double)(r >> 11) / 9007199254740992.0 + 0.5;
        double v = ldexp((r & 1) ? -u : u, (int)((r >> 1) % 60) - 30);
        double vb = ldexp(u, (int)((r >> 1) % 280) - 140);
        if (i % 7 == 0) { /* an exact tie: the midpoint of two neighbouring finite f16 values */
            uint16_t c = (uint16_t)((r >> 20) % 0x7bff);
            v = (wb_f16_to_double(c) + wb_f16_to_double((uint16_t)(c + 1))) / 2;
        }
        uint16_t h = wb_f16_from_double(v);
        check_nearest(wb_f16_to_double, h, v, 0x7bff);
#ifdef __FLT16_MAX__
        ck_assert_msg(h == f16_ref_from(v), "seed %llu v=%a", (unsigned long long)wbt_seed(), v);
#endif
        check_nearest(wb_bf16_to_double, wb_bf16_from_double(vb), vb, 0x7f7f);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("type");
    TCase *tc = tcase_create("type");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, names);
    tcase_add_test(tc, decode_known_values);
    tcase_add_test(tc, every_code_round_trips);
    tcase_add_test(tc, encode_rounds_to_nearest_even);
    tcase_add_test(tc, encode_is_nearest);
    tcase_add_test(tc, f16_all_codes);
    tcase_add_test(tc, bf16_all_codes);
    tcase_add_test(tc, half_rounding_cases);
    tcase_add_test(tc, half_random);
    suite_add_tcase(s, tc);
    return wbt_run(s);
}
