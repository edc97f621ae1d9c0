/* The reference activation quantizer: scales follow the recipe of dsl/quantize.c (recomputed here
 * from frexp and the type tables, not from the library's own helpers), every code is a nearest value
 * of its type to x / scale with ties to the even code, values past the range saturate, and the GEMM
 * reference reads the result back to within one code's rounding. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static wb_format fmt(const char *spec)
{
    wb_format f;
    ck_assert_msg(wb_format_parse(spec, &f) == WB_OK, "%s: %s", spec, wb_last_error());
    return f;
}

static uint32_t load_code(wb_type t, const void *base, int64_t i)
{
    const uint8_t *b = (const uint8_t *)base + (size_t)i * (size_t)wb_type_file_bytes(t);
    uint32_t c = 0;
    for (int j = 0; j < wb_type_file_bytes(t); j++)
        c |= (uint32_t)b[j] << (8 * j);
    return c;
}

/* The largest finite value of a type, by scanning its codes (f32 is not scanned: never needed). */
static double type_max(wb_type t)
{
    double m = 0;
    for (uint32_t c = 0; c < (1u << t.bits); c++) {
        double v = wb_type_decode(t, c);
        if (isfinite(v))
            m = fmax(m, v);
    }
    return m;
}

/* code is a nearest value of type t to y (saturating), and the even one of a tie */
static void check_nearest(wb_type t, double y, uint32_t code, const char *what)
{
    double got = wb_type_decode(t, code), best = INFINITY, top = type_max(t);
    ck_assert_msg(isfinite(got), "%s: NaN code 0x%x for %g", what, code, y);
    double yc = fmax(-top, fmin(top, y));
    if (t.kind == WB_KIND_INT) /* symmetric or not, the range of a two's complement type */
        yc = fmax(-ldexp(1, t.bits - 1), fmin(ldexp(1, t.bits - 1) - 1, y));
    for (uint32_t c = 0; c < (1u << t.bits); c++) {
        double v = wb_type_decode(t, c);
        if (isfinite(v))
            best = fmin(best, fabs(v - yc));
    }
    ck_assert_msg(fabs(got - yc) == best, "%s: y=%.9g -> code 0x%x = %g, a nearer value is %g away", what, y, code,
                  got, best);
    for (uint32_t c = 0; c < (1u << t.bits); c++) {
        double v = wb_type_decode(t, c);
        if (isfinite(v) && v != got && fabs(v - yc) == best && !(v == 0 && got == 0))
            ck_assert_msg((code & 1) == 0, "%s: tie at y=%.9g went to the odd code 0x%x", what, y, code);
    }
}

static void check_spec(const char *spec, int64_t m, int64_t k, uint64_t *st)
{
    wb_format f = fmt(spec);
    int64_t group = f.ag ? f.ag : k, ng = k / group;
    float *x = malloc((size_t)(m * k) * sizeof *x);
    uint8_t *codes = malloc((size_t)(m * k));
    uint8_t *scales = malloc((size_t)(m * ng * 4));
    ck_assert(x && codes && scales);
    for (int64_t r = 0; r < m; r++)
        for (int64_t q = 0; q < ng; q++) {
            /* groups of very different magnitudes; row 1 all zero; some groups with exact ties */
            double mag = ldexp(1.0, (int)(wbt_next(st) % 24) - 12);
            for (int64_t j = 0; j < group; j++) {
                double u = (double)(wbt_next(st) % 2000001) / 1e6 - 1.0;
                x[r * k + q * group + j] = r == 1 ? 0.0f : (float)(u * mag);
            }
        }
    float global = -1;
    ck_assert_msg(wb_reference_quantize_acts(&f, m, k, x, codes, scales, &global) == WB_OK, "%s: %s", spec,
                  wb_last_error());
    double max_a = type_max(f.a), g = 1.0;
    if (f.ags) {
        double amax = 0;
        for (int64_t i = 0; i < m * k; i++)
            amax = fmax(amax, fabs(x[i]));
        double want = amax / max_a / (f.as.kind == WB_KIND_FLOAT ? 448.0 : 1.0);
        ck_assert_msg(global == (float)want, "%s: tensor scale %.9g, want %.9g", spec, global, want);
        g = global;
    }
    char what[160];
    for (int64_t r = 0; r < m; r++)
        for (int64_t q = 0; q < ng; q++) {
            double amax = 0;
            for (int64_t j = 0; j < group; j++)
                amax = fmax(amax, fabs(x[r * k + q * group + j]));
            uint32_t sc = load_code(f.as, scales, r * ng + q);
            double s = wb_type_decode(f.as, sc);
            if (f.as.kind == WB_KIND_E8M0) {
                int ea, emax;
                frexp(amax / g, &ea);     /* amax/g = f * 2^ea, f in [0.5, 1): floor(log2) = ea - 1 */
                frexp(max_a, &emax);
                int want = amax > 0 ? ea - 1 - (emax - 1) : -127;
                ck_assert_msg(s == ldexp(1.0, want), "%s: row %lld group %lld: e8m0 scale %g, want 2^%d", spec,
                              (long long)r, (long long)q, s, want);
            } else {
                ck_assert_msg(sc == wb_type_encode(f.as, amax / max_a / g), "%s: scale code 0x%x", spec, sc);
            }
            for (int64_t j = 0; j < group; j++) {
                int64_t i = r * k + q * group + j;
                uint32_t c = codes[i];
                ck_assert_msg(c < (1u << f.a.bits), "%s: code 0x%x has high bits", spec, c);
                snprintf(what, sizeof what, "%s [%lld][%lld]", spec, (long long)r, (long long)(q * group + j));
                if (s == 0)
                    ck_assert_msg(wb_type_decode(f.a, c) == 0, "%s: zero scale, nonzero code", what);
                else
                    check_nearest(f.a, x[i] / (s * g), c, what);
            }
        }
    /* the GEMM reference reads them back as the contract says: with W = identity (N = K, every weight
     * scale 1), out[m][n] = A(m,n) = val_a(code) * scale of (m, n's group) * tensor scale */
    uint8_t *w = calloc((size_t)(k * k), 1);
    float *ws = malloc((size_t)(k * k) * sizeof *ws), one = 1.0f;
    ck_assert(w && ws);
    for (int64_t i = 0; i < k; i++)
        w[i * k + i] = (uint8_t)wb_type_encode(f.w, 1.0);
    uint32_t one_code = wb_type_encode(f.ws, 1.0);
    for (int64_t i = 0; i < k * k; i++)
        memcpy((uint8_t *)ws + (size_t)i * (size_t)wb_type_file_bytes(f.ws), &one_code,
               (size_t)wb_type_file_bytes(f.ws));
    wb_host_weights hw = {.w = w, .w_scale = ws, .w_global = f.wgs ? &one : NULL};
    wb_host_acts ha = {.a = codes, .a_scale = scales, .a_global = f.ags ? &global : NULL};
    for (int64_t r = 0; r < m; r++)
        for (int64_t n = 0; n < k; n += group > 1 ? group - 1 : 1) {
            double got = wb_reference_element(&f, r, n, k, &ha, &hw);
            double want = wb_type_decode(f.a, codes[r * k + n]) * wb_type_decode(f.as, load_code(f.as, scales, r * ng + n / group)) * g;
            ck_assert_msg(got == want, "%s: reference reads A(%lld,%lld) = %g, want %g", spec, (long long)r,
                          (long long)n, got, want);
        }
    free(w);
    free(ws);
    free(x);
    free(codes);
    free(scales);
}

START_TEST(every_activation_type_and_scale)
{
    uint64_t st = wbt_seed() ^ 0x9a47;
    const char *acts[] = {"e4m3", "e5m2", "s8", "s4", "e2m1"};
    const char *ascales[] = {"f32", "e4m3", "e8m0"};
    char spec[160];
    for (size_t a = 0; a < 5; a++)
        for (size_t s = 0; s < 3; s++)
            for (int ag = 0; ag <= 32; ag += 16)
                for (int ags = 0; ags <= 1; ags++) {
                    snprintf(spec, sizeof spec, "a=%s,as=%s,ag=%d,ags=%d,w=int4,g=32,ws=f32", acts[a], ascales[s],
                             ag, ags);
                    check_spec(spec, 5, 64, &st);
                }
    check_spec("nvfp4", 7, 128, &st);
    check_spec("fp8-block", 3, 256, &st);
}
END_TEST

START_TEST(known_values_round_to_even_and_saturate)
{
    /* s8 per token: amax 63.5 gives the scale 0.5 exactly; 1.25 -> 2.5 -> 2, 1.75 -> 3.5 -> 4 */
    wb_format f = fmt("int8");
    float x[4] = {63.5f, 1.25f, 1.75f, -1.25f};
    uint8_t c[4];
    float s;
    ck_assert_int_eq(wb_reference_quantize_acts(&f, 1, 4, x, c, &s, NULL), WB_OK);
    ck_assert(s == 0.5f);
    ck_assert_int_eq(c[0], 127);
    ck_assert_int_eq(c[1], 2);
    ck_assert_int_eq(c[2], 4);
    ck_assert_int_eq(c[3], 0xFE); /* -2 */
    /* e2m1, e8m0 block (MXFP4 activations): amax 12 -> 2^(3 - 2) = 2; 10 -> 5 -> tie of 4 and 6 -> 4;
     * 15 -> 7.5 saturates to 6; 0.5 -> 0.25 -> tie of 0 and 0.5 -> 0 */
    wb_format mx = fmt("a=e2m1,as=e8m0,ag=32,w=e2m1,ws=e8m0,g=32");
    float y[32] = {12, 10, 15, 0.5f, -10};
    uint8_t cy[32], sy;
    ck_assert_int_eq(wb_reference_quantize_acts(&mx, 1, 32, y, cy, &sy, NULL), WB_OK);
    ck_assert_int_eq(sy, 128); /* 2^1 */
    ck_assert_int_eq(cy[1], 0x6); /* 4.0 */
    ck_assert_int_eq(cy[2], 0x7); /* 6.0 */
    ck_assert_int_eq(cy[3], 0x0);
    ck_assert_int_eq(cy[4], 0xE); /* -4.0 */
    /* NVFP4: tensor scale amax / (6 * 448) */
    wb_format nv = fmt("nvfp4");
    float z[16];
    for (int i = 0; i < 16; i++)
        z[i] = (float)(i - 8) * 0.375f;
    uint8_t cz[16], sz;
    float gz = 0;
    ck_assert_int_eq(wb_reference_quantize_acts(&nv, 1, 16, z, cz, &sz, &gz), WB_OK);
    ck_assert(gz == (float)(3.0 / 2688.0));
}
END_TEST

START_TEST(bad_input_is_refused)
{
    wb_format f16 = fmt("w4a16"), i8 = fmt("int8"), nv = fmt("nvfp4");
    float x[32] = {1}, g;
    uint8_t c[32], s[8];
    ck_assert_int_eq(wb_reference_quantize_acts(&f16, 1, 32, x, c, s, NULL), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=f16 activations are not quantized"));
    ck_assert_int_eq(wb_reference_quantize_acts(&nv, 1, 24, x, c, s, &g), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "not a multiple of ag=16"));
    ck_assert_int_eq(wb_reference_quantize_acts(&nv, 1, 16, x, c, s, NULL), WB_ERR_INVALID);
    x[3] = NAN;
    ck_assert_int_eq(wb_reference_quantize_acts(&i8, 1, 32, x, c, s, NULL), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "x[3] is not finite"));
    ck_assert_int_eq(wb_reference_quantize_acts(NULL, 1, 32, x, c, s, NULL), WB_ERR_INVALID);
}
END_TEST

/* The GPU quantizer's rounding (lower/lower_quant.c), modelled in C: q = x / s rounded toward zero in
 * f32, its last bit set when the remainder fma(q, s, -x) is not 0, then rounded to the code type.
 * Must give the code of the reference, which divides in f64 and rounds once, for any f32 x and s:
 * checked on random values and on the hard ones, quotients just around ties and the range's ends. */
static float div_rz(float x, float s)
{
    float q = (float)((double)x / (double)s);
    while (fabs(fma((double)q, (double)s, -(double)x)) > 0 && fabs((double)q * s) > fabs((double)x))
        q = nextafterf(q, 0.0f); /* (double)q * s is exact: two 24-bit significands */
    return q;
}

static uint32_t gpu_model_code(wb_type a, float x, float s)
{
    if (s == 0)
        return wb_type_encode(a, 0.0);
    float q = div_rz(x, s);
    if (fma((double)q, (double)s, -(double)x) != 0) {
        uint32_t b;
        memcpy(&b, &q, 4);
        b |= 1;
        memcpy(&q, &b, 4);
    }
    if (a.kind == WB_KIND_INT) { /* cvt.rni.s32.f32, then the s8 range */
        double r = nearbyint((double)q);
        return (uint32_t)(int32_t)fmin(127, fmax(-128, r)) & 0xFF;
    }
    return wb_type_encode(a, (double)q); /* cvt.rn.satfinite from the f32 q */
}

START_TEST(gpu_rounding_matches_reference)
{
    static const char *const types[] = {"int8", "e4m3", "e5m2"};
    uint64_t st = wbt_seed();
    for (size_t t = 0; t < 3; t++) {
        wb_type a;
        ck_assert(wb_type_parse(types[t], &a) == WB_OK);
        double max_a = type_max(a);
        long checked = 0;
        for (int i = 0; i < 400000; i++) {
            /* a scale as the quantizer makes them, from a random amax */
            float amax = ldexpf((float)(wbt_next(&st) % 1000000 + 1) / 1e6f, (int)(wbt_next(&st) % 40) - 20);
            float s = (float)((double)amax / max_a), x;
            if (i % 2) { /* near a tie of the code grid: (c + 1/2) * step * s, nudged by a few ulps */
                double c = (double)(wbt_next(&st) % 256) - 128, y = (c + 0.5) * (a.kind == WB_KIND_INT ? 1 : 0.125);
                x = (float)(y * s);
                for (int n = (int)(wbt_next(&st) % 5); n > 0; n--)
                    x = nextafterf(x, wbt_next(&st) & 1 ? INFINITY : -INFINITY);
            } else {
                x = (float)(((double)(wbt_next(&st) % 2000001) / 1e6 - 1.0) * amax);
            }
            if (fabsf(x) > amax)
                continue;
            uint32_t want = wb_type_encode(a, (double)x / (double)s) & 0xFF;
            uint32_t got = gpu_model_code(a, x, s);
            ck_assert_msg(got == want, "%s: x=%a s=%a: model 0x%02x, reference 0x%02x", types[t], (double)x, (double)s,
                          got, want);
            checked++;
        }
        ck_assert_int_gt(checked, 300000);
    }
}
END_TEST

/* The quantizer's PTX: what it is built for, the instructions of its rounding, and the refusals. */
START_TEST(gpu_quantizer_ptx)
{
    wb_type f16, bf16, f32;
    ck_assert(wb_type_parse("f16", &f16) == WB_OK && wb_type_parse("bf16", &bf16) == WB_OK &&
              wb_type_parse("f32", &f32) == WB_OK);
    char *ptx = NULL;
    wb_format f = fmt("fp8");
    ck_assert_msg(wb_quant_ptx(&f, f16, WB_ARCH_SM90A, &ptx) == WB_OK, "%s", wb_last_error());
    ck_assert_ptr_nonnull(strstr(ptx, "div.rz.f32"));
    ck_assert_ptr_nonnull(strstr(ptx, "shfl.sync.bfly.b32"));
    ck_assert_ptr_nonnull(strstr(ptx, "cvt.rn.satfinite.e4m3x2.f32"));
    ck_assert_ptr_nonnull(strstr(ptx, "div.rn.f64"));
    ck_assert_ptr_nonnull(strstr(ptx, "griddepcontrol.wait")); /* PDL-safe on sm_90 */
    free(ptx);
    f = fmt("int8,ag=128");
    ck_assert_msg(wb_quant_ptx(&f, bf16, WB_ARCH_SM75, &ptx) == WB_OK, "%s", wb_last_error());
    ck_assert_ptr_nonnull(strstr(ptx, "cvt.rni.s32.f32"));
    ck_assert_ptr_null(strstr(ptx, "griddepcontrol"));
    free(ptx);
    static const struct {
        const char *spec;
        wb_arch arch;
        int x; /* 0 f16, 1 bf16, 2 f32 */
        wb_status want;
        const char *why;
    } bad[] = {
        {"fp8", WB_ARCH_SM80, 0, WB_ERR_UNSUPPORTED, "sm_80 has no f32 -> e4m3 conversion"},
        {"nvfp4", WB_ARCH_SM86, 0, WB_ERR_UNSUPPORTED, "for the block scales"},
        {"a=e2m1,ag=48,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, 0, WB_ERR_UNSUPPORTED, "blocks of 16, 32, 64 or 128"},
        {"a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16", WB_ARCH_SM80, 0, WB_ERR_UNSUPPORTED, "for the block scales"},
        {"w4a16", WB_ARCH_SM90A, 0, WB_ERR_UNSUPPORTED, "built for a=s8, s4, e4m3, e5m2 and e2m1 with block scales (got a=f16"},
        {"int8,ag=64", WB_ARCH_SM90A, 0, WB_ERR_UNSUPPORTED, "group of a multiple of 128"},
        {"fp8,as=e4m3", WB_ARCH_SM90A, 0, WB_ERR_UNSUPPORTED, "(as=f32, ags=0)"},
        {"int8", WB_ARCH_SM90A, 2, WB_ERR_INVALID, "reads f16 or bf16 activations"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = fmt(bad[i].spec);
        ck_assert_int_eq(wb_quant_ptx(&f, bad[i].x == 2 ? f32 : bad[i].x ? bf16 : f16, bad[i].arch, &ptx), bad[i].want);
        ck_assert_msg(strstr(wb_last_error(), bad[i].why), "%s: %s", bad[i].spec, wb_last_error());
        ck_assert_ptr_null(ptx);
    }
    /* nvfp4 (ags=1): the tensor-scale pass and the quantizer that reads it; the pass only for ags=1 */
    f = fmt("nvfp4");
    ck_assert_int_eq(wb_quant_global_ptx(&f, bf16, WB_ARCH_SM90A, &ptx), WB_OK);
    ck_assert_ptr_nonnull(strstr(ptx, ".entry wb_quant_global("));
    ck_assert_ptr_nonnull(strstr(ptx, "bar.sync"));
    free(ptx);
    ck_assert_int_eq(wb_quant_ptx(&f, bf16, WB_ARCH_SM90A, &ptx), WB_OK);
    ck_assert_ptr_nonnull(strstr(ptx, "p_global"));
    free(ptx);
    f = fmt("int8");
    ck_assert_int_eq(wb_quant_global_ptx(&f, f16, WB_ARCH_SM90A, &ptx), WB_ERR_INVALID);
    ck_assert_ptr_null(ptx);
    ck_assert_int_eq(wb_gpu_quantize_acts(NULL, &f, f16, 1, 128, 1, 1, 1, NULL), WB_ERR_INVALID);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("quantize");
    TCase *t = tcase_create("quantize");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, every_activation_type_and_scale);
    tcase_add_test(t, known_values_round_to_even_and_saturate);
    tcase_add_test(t, bad_input_is_refused);
    tcase_add_test(t, gpu_rounding_matches_reference);
    tcase_add_test(t, gpu_quantizer_ptx);
    suite_add_tcase(s, t);
    return wbt_run(s);
}
