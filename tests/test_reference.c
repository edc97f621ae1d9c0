/* Unit tests of dsl/reference.c: hand-computed tiny GEMMs, then fresh random data over many formats
 * (groups along K and N, zero points, global scales, bias, quantized activations) against a naive
 * evaluation written here, and wb_reference_element against wb_reference_gemm. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "testutil.h"

static wb_format F(const char *spec)
{
    wb_format f;
    ck_assert_msg(wb_format_parse(spec, &f) == WB_OK, "%s: %s", spec, wb_last_error());
    return f;
}

/* Little-endian store of one code of type t at element i. */
static void put(wb_type t, void *p, int64_t i, uint32_t code)
{
    uint8_t *b = p;
    int nb = wb_type_file_bytes(t);
    for (int j = 0; j < nb; j++)
        b[i * nb + j] = (uint8_t)(code >> (8 * j));
}

START_TEST(hand_w4_groups_bias)
{
    /* A = [1 2 -1 0.5]; W rows [1 -2 3 7], [-8 0 1 1]; scales per 2 of K: [0.5 2], [1 -0.25]
     * out0 = (1 - 4) * 0.5 + (-3 + 3.5) * 2 = -0.5;  out1 = -8 * 1 + (-1 + 0.5) * -0.25 = -7.875 */
    wb_format f = F("w=int4,ws=f16,g=2,bias=1");
    uint16_t a[4], s[4], bias[2];
    double av[4] = {1, 2, -1, 0.5}, sv[4] = {0.5, 2, 1, -0.25};
    for (int i = 0; i < 4; i++) {
        a[i] = wb_f16_from_double(av[i]);
        s[i] = wb_f16_from_double(sv[i]);
    }
    bias[0] = wb_f16_from_double(1);
    bias[1] = wb_f16_from_double(2);
    uint8_t w[8] = {1, 0xe, 3, 7, 8, 0, 1, 1};
    wb_host_acts x = {.a = a};
    wb_host_weights wt = {.w = w, .w_scale = s, .bias = bias};
    double out[2];
    ck_assert_int_eq(wb_reference_gemm(&f, 1, 2, 4, &x, &wt, out), WB_OK);
    ck_assert(out[0] == -0.5 + 1);
    ck_assert(out[1] == -7.875 + 2);
    ck_assert(wb_reference_element(&f, 0, 1, 4, &x, &wt) == -5.875);
}
END_TEST

START_TEST(hand_zero_point_global)
{
    /* A = 1s; W codes [0 15 8 8], zero codes [8 4], scales [1 0.5], wglobal 2:
     * ((0-8) + (15-8)) * 1 + ((8-4) + (8-4)) * 0.5 = 3, times 2 = 6 */
    wb_format f = F("w=uint4,zp=int,ws=f32,g=2,wgs=1");
    uint16_t a[4];
    for (int i = 0; i < 4; i++)
        a[i] = wb_f16_from_double(1);
    float s[2] = {1, 0.5f}, wg = 2;
    uint8_t w[4] = {0, 15, 8, 8}, z[2] = {8, 4};
    wb_host_acts x = {.a = a};
    wb_host_weights wt = {.w = w, .w_scale = s, .w_zero = z, .w_global = &wg};
    double out;
    ck_assert_int_eq(wb_reference_gemm(&f, 1, 1, 4, &x, &wt, &out), WB_OK);
    ck_assert(out == 6);
    /* zp=fp: the stored value itself is subtracted */
    f = F("w=uint4,zp=fp,ws=f32,g=2,wgs=1");
    float zf[2] = {7.5f, -1};
    wt.w_zero = zf;
    ck_assert_int_eq(wb_reference_gemm(&f, 1, 1, 4, &x, &wt, &out), WB_OK);
    ck_assert(out == 2 * ((0 - 7.5 + 15 - 7.5) * 1 + (9 + 9) * 0.5));
}
END_TEST

START_TEST(hand_quantized_acts)
{
    /* a = [-1 2 3 -128] (s8), scales per 2 of K [0.5 0.25], aglobal 4, W = 1s with scale 1:
     * (-0.5 + 1 + 0.75 - 32) * 4 = -123 */
    wb_format f = F("a=s8,ag=2,as=f32,ags=1,w=int8,ws=f32,g=0");
    uint8_t a[4] = {0xff, 2, 3, 0x80}, w[4] = {1, 1, 1, 1};
    float as[2] = {0.5f, 0.25f}, ag = 4, ws = 1;
    wb_host_acts x = {.a = a, .a_scale = as, .a_global = &ag};
    wb_host_weights wt = {.w = w, .w_scale = &ws};
    double out;
    ck_assert_int_eq(wb_reference_gemm(&f, 1, 1, 4, &x, &wt, &out), WB_OK);
    ck_assert(out == -123);
    /* e8m0 weight scales on bf16 activations: 2^(130-127) = 8 */
    f = F("mxfp4");
    uint16_t ab[32];
    uint8_t w2[32], sc = 130;
    for (int i = 0; i < 32; i++) {
        ab[i] = wb_bf16_from_double(i % 2 ? 1 : -0.5);
        w2[i] = 0x7; /* e2m1 6.0 */
    }
    wb_host_acts xb = {.a = ab};
    wb_host_weights wb = {.w = w2, .w_scale = &sc};
    ck_assert_int_eq(wb_reference_gemm(&f, 1, 1, 32, &xb, &wb, &out), WB_OK);
    ck_assert(out == 16 * 0.5 * 6 * 8);
}
END_TEST

/* fp8 W8A8 (contract section 2): e4m3/e5m2 codes decoded exactly (max, subnormals, signs), one f32 scale
 * per token and per channel; every product and sum here is exact in double. */
START_TEST(hand_fp8)
{
    /* a e4m3 [448, 2^-9, -1, 1.5] x as 0.5; w e4m3 [1, 448, 2, -2] x ws 0.25:
     * (448 + 0.875 - 2 - 3) * 0.125 */
    wb_format f = F("fp8");
    uint8_t a[4] = {0x7e, 0x01, 0xb8, 0x3c}, w[4] = {0x38, 0x7e, 0x40, 0xc0};
    float as = 0.5f, ws = 0.25f;
    wb_host_acts x = {.a = a, .a_scale = &as};
    wb_host_weights wt = {.w = w, .w_scale = &ws};
    double out;
    ck_assert_int_eq(wb_reference_gemm(&f, 1, 1, 4, &x, &wt, &out), WB_OK);
    ck_assert(out == 443.875 * 0.125);
    ck_assert(wb_reference_element(&f, 0, 0, 4, &x, &wt) == out);
    /* a e5m2 [57344, 2^-16, -1, 0] x w e4m3 [2^-6, 448, 1, 448], scales 1: 896 + 448 * 2^-16 - 1 */
    f = F("a=e5m2,w=e4m3,ws=f32,g=0");
    uint8_t a2[4] = {0x7b, 0x01, 0xbc, 0x00}, w2[4] = {0x08, 0x7e, 0x38, 0x7e};
    float one = 1;
    wb_host_acts x2 = {.a = a2, .a_scale = &one};
    wb_host_weights wt2 = {.w = w2, .w_scale = &one};
    ck_assert_int_eq(wb_reference_gemm(&f, 1, 1, 4, &x2, &wt2, &out), WB_OK);
    ck_assert(out == 895 + 448 * 0x1p-16);
    /* e5m2 weights with e5m2 activations: 57344 * -57344 and a bias */
    f = F("a=e5m2,w=e5m2,ws=f32,g=0,out=f16,bias=1");
    uint8_t a3[4] = {0x7b, 0, 0, 0}, w3[4] = {0xfb, 0, 0, 0};
    uint16_t bias = wb_f16_from_double(-0.5);
    wb_host_acts x3 = {.a = a3, .a_scale = &one};
    wb_host_weights wt3 = {.w = w3, .w_scale = &one, .bias = &bias};
    ck_assert_int_eq(wb_reference_gemm(&f, 1, 1, 4, &x3, &wt3, &out), WB_OK);
    ck_assert(out == -57344.0 * 57344.0 - 0.5);
}
END_TEST

/* ---- random data over many formats */

typedef struct data {
    void *a, *as, *w, *ws, *wz, *bias;
    float ag, wg;
    wb_host_acts x;
    wb_host_weights wt;
} data;

/* A random code of t with a finite value (scales: also nonzero and moderate). */
static uint32_t rand_code(wb_type t, uint64_t *st, int scale)
{
    for (;;) {
        double u = (double)(wbt_next(st) >> 11) / 9007199254740992.0;
        uint32_t c;
        if (t.kind == WB_KIND_F16 || t.kind == WB_KIND_BF16 || t.kind == WB_KIND_F32)
            c = wb_type_encode(t, scale ? (u + 0.5) * ((wbt_next(st) & 1) ? 1 : -1) : 4 * u - 2);
        else if (t.kind == WB_KIND_E8M0)
            c = 124 + (uint32_t)(wbt_next(st) % 7);
        else
            c = (uint32_t)(wbt_next(st) & ((1u << t.bits) - 1));
        double v = wb_type_decode(t, c);
        if (isfinite(v) && (!scale || (v != 0 && fabs(v) < 1000)))
            return c;
    }
}

static void *rand_array(wb_type t, int64_t count, uint64_t *st, int scale)
{
    void *p = malloc((size_t)(count * wb_type_file_bytes(t)));
    for (int64_t i = 0; i < count; i++)
        put(t, p, i, rand_code(t, st, scale));
    return p;
}

static void make_data(const wb_format *f, int64_t m, int64_t n, int64_t k, uint64_t *st, data *d)
{
    memset(d, 0, sizeof *d);
    int quant = f->a.kind != WB_KIND_F16 && f->a.kind != WB_KIND_BF16;
    int64_t ns = f->g ? (n / f->gn) * (k / f->g) : n;
    wb_type u8 = {WB_KIND_UINT, f->w.bits, 0, 0};
    d->a = rand_array(f->a, m * k, st, 0);
    d->as = quant ? rand_array(f->as, f->ag ? m * (k / f->ag) : m, st, 1) : NULL;
    d->w = rand_array(f->w, n * k, st, 0);
    d->ws = rand_array(f->ws, ns, st, 1);
    d->wz = f->zp == WB_ZP_INT ? rand_array(u8, ns, st, 0) : f->zp == WB_ZP_FP ? rand_array(f->ws, ns, st, 0) : NULL;
    d->bias = f->bias ? rand_array(f->out, n, st, 0) : NULL;
    d->ag = 0.75f;
    d->wg = -1.5f;
    d->x = (wb_host_acts){.a = d->a, .a_scale = d->as, .a_global = quant && f->ags ? &d->ag : NULL};
    d->wt = (wb_host_weights){.w = d->w, .w_scale = d->ws, .w_zero = d->wz,
                              .w_global = f->wgs ? &d->wg : NULL, .bias = d->bias};
}

static void free_data(data *d)
{
    free(d->a);
    free(d->as);
    free(d->w);
    free(d->ws);
    free(d->wz);
    free(d->bias);
}

/* Value of element i of an array of type t (read back byte by byte). */
static double get(wb_type t, const void *p, int64_t i)
{
    const uint8_t *b = p;
    int nb = wb_type_file_bytes(t);
    uint32_t c = 0;
    for (int j = 0; j < nb; j++)
        c |= (uint32_t)b[i * nb + j] << (8 * j);
    return wb_type_decode(t, c);
}

/* The contract formulas, written out naively: dense A and W, then the triple loop. */
static double naive(const wb_format *f, const data *d, int64_t m, int64_t n, int64_t k, int64_t i, int64_t j)
{
    int quant = f->a.kind != WB_KIND_F16 && f->a.kind != WB_KIND_BF16;
    double sum = 0;
    for (int64_t kk = 0; kk < k; kk++) {
        double A = get(f->a, d->a, i * k + kk);
        if (quant) {
            A *= f->ag ? get(f->as, d->as, i * (k / f->ag) + kk / f->ag) : get(f->as, d->as, i);
            if (f->ags)
                A *= d->ag;
        }
        int64_t row = f->g ? j / f->gn : j, col = f->g ? kk / f->g : 0, cols = f->g ? k / f->g : 1;
        double zero = 0;
        if (f->zp == WB_ZP_INT)
            zero = ((const uint8_t *)d->wz)[row * cols + col];
        if (f->zp == WB_ZP_FP)
            zero = get(f->ws, d->wz, row * cols + col);
        double W = (get(f->w, d->w, j * k + kk) - zero) * get(f->ws, d->ws, row * cols + col);
        if (f->wgs)
            W *= d->wg;
        sum += A * W;
    }
    (void)m;
    (void)n;
    return sum + (f->bias ? get(f->out, d->bias, j) : 0);
}

START_TEST(random_formats)
{
    static const char *specs[] = {
        "w4a16", "w4a16-zp", "gptq-int3,bias=1", "w8a16", "fp8", "fp8-block", "int8", "w4a8-fp8",
        "w4a8-int8", "w4a4-int4", "mxfp4", "nvfp4", "nvfp4-a16", "mxint4",
        "a=bf16,w=uint4,zp=fp,ws=bf16,g=32,gn=2,wgs=1,bias=1",
        "a=s4,ag=32,as=e8m0,ags=1,w=nf4,ws=e5m2,g=64,gn=4",
        "a=e5m2,w=e3m2,ws=f16,out=f16,bias=1",
        "a=e2m1,ag=16,as=e4m3,w=int2,ws=e4m3,g=16,gn=8,zp=none",
        "a=bf16,w=e7m0,ws=e8m0,g=32,bias=1",
        "w=uint8,zp=int,g=64,gn=16,wgs=1",
    };
    uint64_t st = wbt_seed() + 4;
    for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
        wb_format f = F(specs[si]);
        int64_t m = 5, k = 256, n = f.gn == 1 ? 19 : 2 * f.gn;
        data d;
        make_data(&f, m, n, k, &st, &d);
        double *out = malloc((size_t)(m * n) * sizeof *out);
        ck_assert_msg(wb_reference_gemm(&f, m, n, k, &d.x, &d.wt, out) == WB_OK, "%s: %s", specs[si],
                      wb_last_error());
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double ref = naive(&f, &d, m, n, k, i, j), got = out[i * n + j];
                ck_assert_msg(fabs(got - ref) <= 1e-12 * (1 + fabs(ref)), "seed %llu %s [%lld,%lld]: %.17g vs %.17g",
                              (unsigned long long)wbt_seed(), specs[si], (long long)i, (long long)j, got, ref);
                ck_assert(wb_reference_element(&f, i, j, k, &d.x, &d.wt) == got);
            }
        free(out);
        free_data(&d);
    }
}
END_TEST

START_TEST(errors)
{
    wb_format f = F("w4a16,bias=1");
    uint64_t st = wbt_seed() + 5;
    data d;
    make_data(&f, 2, 8, 128, &st, &d);
    double out[16];
    ck_assert_int_eq(wb_reference_gemm(&f, 2, 8, 128, &d.x, &d.wt, out), WB_OK);
    ck_assert_int_eq(wb_reference_gemm(&f, 2, 8, 100, &d.x, &d.wt, out), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "K=100 is not a multiple of g=128"));
    ck_assert_int_eq(wb_reference_gemm(&f, 2, 8, 128, &d.x, &d.wt, NULL), WB_ERR_INVALID);
    ck_assert_int_eq(wb_reference_gemm(NULL, 2, 8, 128, &d.x, &d.wt, out), WB_ERR_INVALID);
    wb_host_weights wt = d.wt;
    wt.bias = NULL;
    ck_assert_int_eq(wb_reference_gemm(&f, 2, 8, 128, &d.x, &wt, out), WB_ERR_INVALID);
    ck_assert_str_eq(wb_last_error(), "reference: the format needs bias, which is NULL");
    ck_assert(isnan(wb_reference_element(&f, 0, 0, 128, &d.x, &wt)));
    wt = d.wt;
    wt.w_scale = NULL;
    ck_assert_int_eq(wb_reference_gemm(&f, 2, 8, 128, &d.x, &wt, out), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "w_scale"));
    ck_assert_int_eq(wb_reference_gemm(&f, 2, 8, 128, NULL, &d.wt, out), WB_ERR_INVALID);
    wb_format bad = f;
    bad.gn = 0;
    ck_assert_int_eq(wb_reference_gemm(&bad, 2, 8, 128, &d.x, &d.wt, out), WB_ERR_INVALID);
    free_data(&d);
    f = F("nvfp4");
    make_data(&f, 2, 8, 64, &st, &d);
    d.x.a_global = NULL;
    ck_assert_int_eq(wb_reference_gemm(&f, 2, 8, 64, &d.x, &d.wt, out), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a_global"));
    free_data(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reference");
    TCase *tc = tcase_create("reference");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, hand_w4_groups_bias);
    tcase_add_test(tc, hand_zero_point_global);
    tcase_add_test(tc, hand_quantized_acts);
    tcase_add_test(tc, hand_fp8);
    tcase_add_test(tc, random_formats);
    tcase_add_test(tc, errors);
    suite_add_tcase(s, tc);
    return wbt_run(s);
}
