/* The W8A8, W4A8, W4A4, fp8, fp4-activation and weight-only kernels and the activation quantizer, run
 * on the CPU interpreter of tests/interp.c (whose head comment describes its model and the bounds these
 * tests check against): random data, packed by wb_pack_weights / wb_pack_acts, every kernel's whole
 * grid, each output against the float64 reference (wb_reference_gemm, wb_reference_quantize_acts),
 * bit for bit where the sums are exact. Then a hand-built cluster kernel and its mutants, each of which
 * must fail in the interpreter with its message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/tile.h"
#include "interp.h"
#include "lower/isa.h"
#include "lower/lower.h"
#include "testutil.h"

/* A random fp8 weight code whose value is finite and at most 448 in magnitude (e5m2's larger ones would
 * only push f16 outputs past their range), subnormals included. */
static uint8_t random_fp8(wb_type t, uint64_t *st)
{
    for (;;) {
        uint8_t c = (uint8_t)wbt_next(st);
        if (fabs(wb_type_decode(t, c)) <= 448)
            return c;
    }
}

/* One output of f32 sums (fp8; group scales of weights or activations, whose scaled slices are added
 * in f32) against the float64 reference: within one rounding of the output type plus 2^-20 of the sum
 * of |products| (interp.c's head comment). ws: [N/gn][K/g] (g = 0: [N]); as: [M][K/ag] (ag = 0: [M]). */
static void check_bounded_output(const wb_format *f, const char *spec, wb_arch arch, const char *conf, int64_t row,
                                 int64_t col, int64_t k, const uint8_t *acodes, const uint8_t *w, const float *ws,
                                 const float *as, uint16_t got, double ref)
{
    int bf = f->out.kind == WB_KIND_BF16;
    int64_t groups = f->g ? k / f->g : 1, agroups = f->ag ? k / f->ag : 1;
    double mag = 0;
    for (int64_t j = 0; j < k; j++)
        mag += fabs(wb_type_decode(f->a, acodes[row * k + j]) * wb_type_decode(f->w, w[col * k + j]) *
                    (double)ws[(f->g ? col / f->gn : col) * groups + (f->g ? j / f->g : 0)] *
                    (double)as[row * agroups + (f->ag ? j / f->ag : 0)]);
    double o = bf ? wb_bf16_to_double(got) : wb_f16_to_double(got);
    double tol = fabs(ref) * (bf ? 0x1p-8 : 0x1p-11) + mag * 0x1p-20 + 0x1p-24;
    CHECK(isfinite(o) && fabs(o - ref) <= tol, "%s %s [%s]: out[%lld][%lld] = %g, reference %g (bound %g)", spec,
          wb_arch_name(arch), conf, (long long)row, (long long)col, o, ref, tol);
}

/* A kernel built for (spec, arch, config at M): its format, config and instruction IR. */
typedef struct built {
    wb_format f;
    wb_config cfg;
    wb_kernel *kern;
    wb_func fn;
} built;

static void build_case(const char *spec, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config forced, built *b)
{
    ck_assert_int_eq(wb_format_parse(spec, &b->f), WB_OK);
    b->cfg = forced;
    ck_assert_int_eq(wb_config_choose(&b->f, arch, m, n, k, &b->cfg), WB_OK);
    ck_assert_int_eq(wb_kernel_check_shape(&b->f, &b->cfg, m, n, k), WB_OK);
    const wb_target *t = wb_target_get(arch);
    ck_assert_int_eq(wb_legalize(&b->f, t, &b->cfg), WB_OK);
    b->kern = wb_build_gemm(&b->f, &b->cfg, wb_isa_block_scale_vec(&b->f, arch));
    ck_assert_int_eq(wb_kernel_validate(b->kern), WB_OK);
    wb_func_init(&b->fn, b->kern->arena);
    b->fn.target = t;
    ck_assert_int_eq(wb_lower_gemm(b->kern, t, 0, &b->fn), WB_OK);
}

/* Run the whole grid of b on params (NPARAMS values) with the global buffers bufs. A TMA kernel gets
 * the activations' tensor map as runtime/layer.c encodes it: the M x K matrix at p_a (f16 / bf16, or
 * 8-bit codes copied as bytes), boxes of the block's tokens (8 m_tiles) x 128 bytes; in clusters of two
 * or four (cfg.cluster 2, 4), boxes of half the block's tokens, each block of a pair on one token tile
 * copying one half into both. Fails on
 * a bank conflict of any shared access of an mma.sync or wgmma kernel, and of any but the 4-byte
 * loads and stores of a tcgen05 kernel (interp_shared_extra). */
static void run_grid(const built *b, int64_t m, int64_t n, int64_t k, const uint64_t *params, const gbuf *bufs,
                     int nbufs)
{
    wb_launch_dims dims;
    ck_assert_int_eq(wb_kernel_dims(&b->f, b->fn.target->arch, &b->cfg, m, n, k, &dims), WB_OK);
    if (b->cfg.persistent) { /* a grid of one block per SM (as a GPU with 3 SMs; in clusters of two, 4), so
                                each walks several tiles */
        unsigned sms = b->cfg.cluster > 1 ? 4 : 3;
        ck_assert_uint_eq(dims.grid[1], 1);
        ck_assert_uint_eq(dims.grid[0] % (b->cfg.cluster > 1 ? 2 : 1), 0);
        dims.grid[0] = dims.grid[0] < sms ? dims.grid[0] : sms;
    }
    /* the blocks sharing an activation tile: a pair (clusters of two, and the channel pairs of four) */
    int elem = b->f.a.bits / 8, cl = b->cfg.cluster > 1 ? 2 : 1;
    CHECK(8 * b->cfg.m_tiles % cl == 0, "a pair of blocks cannot split %d tokens", 8 * b->cfg.m_tiles);
    fake_tmap tm = {.base = params[1], .rows = m, .cols = k, .elem = elem, .box_rows = 8 * b->cfg.m_tiles / cl,
                    .box_cols = elem ? 128 / elem : 0};
    int tma = b->cfg.load == WB_LOAD_TMA;
    ck_assert(!tma || ((elem == 1 || elem == 2) && b->f.a.bits % 8 == 0 && tm.box_rows <= 256));
    run_func(&b->fn, &dims, params, bufs, nbufs, tma ? &tm : NULL, b->cfg.split_k > 1 ? 2 : b->cfg.cluster);
    /* every shared load and store of the mma.sync and wgmma kernels (code words, 8-bit ones swapped
     * where gid is odd; activations by ldmatrix; scales; the epilogue) is free of bank conflicts, and
     * so are tcgen05's but its 4-byte ones: the stores of the weight tiles (two lanes to a bank where
     * sm_103a widens s8 weights to f16) and the block-scaled kernels' sign flip of the activation codes
     * under a negative scale, which only some data takes (docs/perf.md) */
    for (int i = 0; i < INTERP_SH_KINDS; i++)
        if (b->cfg.mma != WB_MMA_TCGEN05 || (i != INTERP_SH_ST4 && i != INTERP_SH_LD4))
            CHECK(interp_shared_extra(i) == 0, "%s with bank conflicts: %ld extra wavefronts", interp_shared_kind(i),
                  interp_shared_extra(i));
}

static gbuf buf_of(const void *p, size_t bytes, int kind, const char *name)
{
    return (gbuf){(uintptr_t)p, (uintptr_t)p + bytes, kind, name};
}

/* The output at 2 bytes past a 16-byte boundary (1), as the API allows, or aligned (0): run_case and
 * run_case_a16 */
static int out_shift;

/* Build the kernel of (spec, arch, config at M) and run its whole grid on random quantized data. */
static void run_case(const char *spec, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config forced)
{
    built b;
    build_case(spec, arch, m, n, k, forced, &b);
    const wb_format f = b.f;
    const wb_config cfg = b.cfg;

    /* data: s8 weight codes, f32 channel scales, a bias; f32 activations quantized per token */
    uint64_t st = wbt_seed() ^ (uint64_t)(m * 131 + arch);
    uint8_t *w = malloc((size_t)(n * k)), *acodes = malloc((size_t)(m * k));
    int64_t groups = f.g ? k / f.g : 1, wrows = f.g ? n / f.gn : n, agroups = f.ag ? k / f.ag : 1;
    float *ws = malloc((size_t)(wrows * groups) * 4), *as = malloc((size_t)(m * agroups) * 4);
    float *x = malloc((size_t)(m * k) * 4);
    uint16_t *bias = malloc((size_t)n * 2), *out_buf = malloc((size_t)(m * n + 8) * 2), *out = out_buf + out_shift;
    double *ref = malloc((size_t)(m * n) * sizeof *ref);
    ck_assert(w && acodes && ws && as && x && bias && out_buf && ref);
    int fp8 = wb_format_w8a8_fp8(&f);
    for (int64_t i = 0; i < n * k; i++)
        w[i] = wb_type_fp8(f.w) ? random_fp8(f.w, &st) : (uint8_t)(wbt_next(&st) & ((1u << f.w.bits) - 1)); /* int8, int4 */
    for (int64_t i = 0; i < wrows * groups; i++)
        ws[i] = (float)((double)(wbt_next(&st) % 1000 + 1) / 64000.0);
    for (int64_t i = 0; i < n; i++) {
        bias[i] = f.out.kind == WB_KIND_BF16 ? wb_bf16_from_double((double)(wbt_next(&st) % 200) / 50.0 - 2)
                                             : wb_f16_from_double((double)(wbt_next(&st) % 200) / 50.0 - 2);
    }
    for (int64_t i = 0; i < m * k; i++)
        x[i] = (float)((double)(wbt_next(&st) % 20001) / 10000.0 - 1.0);
    ck_assert_int_eq(wb_reference_quantize_acts(&f, m, k, x, acodes, as, NULL), WB_OK);
    wb_host_weights hw = {.w = w, .w_scale = ws, .bias = f.bias ? bias : NULL};
    wb_host_acts ha = {.a = acodes, .a_scale = as};
    ck_assert_int_eq(wb_reference_gemm(&f, m, n, k, &ha, &hw, ref), WB_OK);
    wb_packed p;
    ck_assert_int_eq(wb_pack_weights(&f, arch, n, k, &hw, &p), WB_OK);
    memset(out, 0xFF, (size_t)(m * n) * 2); /* NaN bits: an unwritten output fails */

    /* the kernels' activation layout: 8-bit codes as they are, s4 two to a byte (wb_pack_acts) */
    size_t abytes = (size_t)wb_acts_bytes(&f, m, k);
    uint8_t *apacked = malloc(abytes);
    ck_assert_ptr_nonnull(apacked);
    ck_assert_int_eq(wb_pack_acts(&f, m, k, acodes, apacked), WB_OK);
    uint64_t params[NPARAMS] = {(uintptr_t)out, (uintptr_t)apacked, (uintptr_t)p.w, (uintptr_t)p.scale,
                                (uintptr_t)p.chan, (uint64_t)m, (uint64_t)n, (uint64_t)k, (uintptr_t)as, 0};
    gbuf bufs[] = {buf_of(out, (size_t)(m * n) * 2, BUF_OUT, "output"),
                   buf_of(apacked, abytes, BUF_INPUT, "activations"), buf_of(p.w, p.w_bytes, BUF_LAYER, "weights"),
                   buf_of(p.scale, p.scale_bytes, BUF_LAYER, "group scales"),
                   buf_of(p.chan, p.chan_bytes, BUF_LAYER, "channel array"),
                   buf_of(as, (size_t)(m * agroups) * 4, BUF_INPUT, "token scales")};
    run_grid(&b, m, n, k, params, bufs, (int)(sizeof bufs / sizeof bufs[0]));
    char conf[128];
    wb_config_print(&cfg, conf, sizeof conf);
    int exact = !fp8 && !f.g && !f.ag;
    for (int64_t i = 0; !exact && i < m * n; i++)
        check_bounded_output(&f, spec, arch, conf, i / n, i % n, k, acodes, w, ws, as, out[i], ref[i]);
    for (int64_t i = 0; exact && i < m * n; i++) {
        /* bitwise: the exact s32 sum, to f32, times ws[n], times as[m], plus the bias, rounded once */
        int64_t row = i / n, col = i % n;
        double sum = 0; /* exact: integer or e2m1 (half-integer) weights */
        for (int64_t j = 0; j < k; j++)
            sum += wb_type_decode(f.a, acodes[row * k + j]) * wb_type_decode(f.w, w[col * k + j]);
        float v = (float)sum * ws[col] * as[row];
        if (f.bias)
            v += f.out.kind == WB_KIND_BF16 ? (float)wb_bf16_to_double(bias[col]) : (float)wb_f16_to_double(bias[col]);
        uint16_t want = f.out.kind == WB_KIND_BF16 ? wb_bf16_from_double(v) : wb_f16_from_double(v);
        CHECK(out[i] == want, "%s %s m=%lld: out[%lld][%lld] = 0x%04x, want 0x%04x", spec, wb_arch_name(arch),
              (long long)m, (long long)row, (long long)col, out[i], want);
        double o = f.out.kind == WB_KIND_BF16 ? wb_bf16_to_double(out[i]) : wb_f16_to_double(out[i]);
        double tol = fabs(ref[i]) * (f.out.kind == WB_KIND_BF16 ? 0x1p-8 : 0x1p-10) + 1e-6;
        CHECK(fabs(o - ref[i]) <= tol, "%s %s [%s] m=%lld: out[%lld][%lld] = %g, reference %g", spec,
              wb_arch_name(arch), conf, (long long)m, (long long)(i / n), (long long)(i % n), o, ref[i]);
    }
    wb_packed_free(&p);
    free(apacked);
    free(w), free(acodes), free(ws), free(as), free(x), free(bias), free(out_buf), free(ref);
    wb_kernel_destroy(b.kern);
}

/* A random scale code of type t (ws, in its interchange storage) whose value keeps every dequantized
 * weight exact in the compute type: e8m0 2^-7 .. 2^7; any other type +-(1 + j/8) x 2^(-4..3) (a 4-bit
 * significand, like e4m3's: times an int4 or e2m1 code it fits f16 and bf16). */
static uint32_t random_scale(wb_type t, uint64_t *st)
{
    if (t.kind == WB_KIND_E8M0)
        return 120 + (uint32_t)(wbt_next(st) % 15);
    uint64_t r = wbt_next(st);
    double v = ldexp(1.0 + (double)(r % 8) / 8.0, (int)(r / 8 % 8) - 4) * (r / 64 % 2 ? -1.0 : 1.0);
    uint32_t code = wb_type_encode(t, v);
    CHECK(wb_type_decode(t, code) == v, "scale %g is not exact in its type", v);
    return code;
}

/* Value i of an array of type t in its interchange storage (little endian, 1, 2 or 4 bytes). */
static double stored_value(wb_type t, const uint8_t *base, int64_t i)
{
    int bytes = wb_type_file_bytes(t);
    uint32_t code = 0;
    for (int j = 0; j < bytes; j++)
        code |= (uint32_t)base[i * bytes + j] << (8 * j);
    return wb_type_decode(t, code);
}

/* fp4 activations (a=e2m1): the 16-bit kernel on the 16-bit tile the block makes of them. Data: random
 * weight codes (every code of the type), random scales (random_scale), a weight tensor scale (wgs=1),
 * a bias; f32 activations whose magnitude changes every 16 along K (2^-6 .. 2^3, a sixteenth of the
 * blocks zero: small, subnormal and zero block scales), quantized by wb_reference_quantize_acts, then a
 * quarter of the e4m3 activation scales negated (a caller's scales may have either sign). Each
 * output against the float64 reference within one rounding of the output type plus 2^-20 of the sum of
 * |products| (interp.c's head comment); finite, written (outputs start as NaN bits), and no access outside the
 * case's buffers. */
static void run_case_fp4(const char *spec, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config forced)
{
    built b;
    build_case(spec, arch, m, n, k, forced, &b);
    const wb_format *f = &b.f;
    ck_assert(wb_format_fp4_acts(f));
    ck_assert_int_eq(wb_type_file_bytes(f->as), 1);
    uint64_t seed = wbt_seed(), st = seed ^ (uint64_t)(m * 131 + arch) ^ (uint64_t)k << 20;
    int64_t groups = f->g ? k / f->g : 1, wrows = f->g ? n / f->gn : n, agroups = f->ag ? k / f->ag : 1;
    int sb = wb_type_file_bytes(f->ws), ob = f->out.kind == WB_KIND_BF16;
    uint8_t *w = malloc((size_t)(n * k)), *acodes = malloc((size_t)(m * k)), *ascale = malloc((size_t)(m * agroups));
    uint8_t *wscale = malloc((size_t)(wrows * groups * sb));
    float *x = malloc((size_t)(m * k) * 4), *aglobal = malloc(4), wglobal;
    uint16_t *bias = malloc((size_t)n * 2), *out = malloc((size_t)(m * n) * 2);
    double *ref = malloc((size_t)(m * n) * sizeof *ref), *av = malloc((size_t)(m * k) * sizeof *av);
    double *wv = malloc((size_t)k * sizeof *wv);
    ck_assert(w && acodes && ascale && wscale && x && aglobal && bias && out && ref && av && wv);
    for (int64_t i = 0; i < n * k; i++)
        w[i] = (uint8_t)(wbt_next(&st) & ((1u << f->w.bits) - 1)); /* e2m1, int4: every code is finite */
    for (int64_t i = 0; i < wrows * groups; i++) {
        uint32_t c = random_scale(f->ws, &st);
        for (int j = 0; j < sb; j++)
            wscale[i * sb + j] = (uint8_t)(c >> (8 * j));
    }
    wglobal = (float)((double)(wbt_next(&st) % 1000 + 500) / 1024.0);
    for (int64_t i = 0; i < n; i++)
        bias[i] = (uint16_t)wbt_double_to_half(ob, (double)(wbt_next(&st) % 200) / 50.0 - 2);
    for (int64_t i = 0; i < m * k; i += 16) {
        uint64_t r = wbt_next(&st);
        double mag = r % 16 == 0 ? 0 : ldexp(1.0, (int)(r / 16 % 10) - 6);
        for (int j = 0; j < 16; j++)
            x[i + j] = (float)(((double)(wbt_next(&st) % 20001) / 10000.0 - 1.0) * mag);
    }
    *aglobal = 0;
    ck_assert_int_eq(wb_reference_quantize_acts(f, m, k, x, acodes, ascale, f->ags ? aglobal : NULL), WB_OK);
    for (int64_t i = 0; f->as.kind != WB_KIND_E8M0 && i < m * agroups; i++) /* e4m3 scales of either sign */
        ascale[i] ^= (uint8_t)(wbt_next(&st) % 4 == 0 ? 0x80 : 0);
    wb_host_weights hw = {.w = w, .w_scale = wscale, .w_global = f->wgs ? &wglobal : NULL,
                          .bias = f->bias ? bias : NULL};
    wb_host_acts ha = {.a = acodes, .a_scale = ascale, .a_global = f->ags ? aglobal : NULL};
    ck_assert_int_eq(wb_reference_gemm(f, m, n, k, &ha, &hw, ref), WB_OK);
    wb_packed p;
    ck_assert_int_eq(wb_pack_weights(f, arch, n, k, &hw, &p), WB_OK);
    size_t abytes = (size_t)wb_acts_bytes(f, m, k);
    uint8_t *apacked = malloc(abytes);
    ck_assert_ptr_nonnull(apacked);
    ck_assert_int_eq(wb_pack_acts(f, m, k, acodes, apacked), WB_OK);
    memset(out, 0xFF, (size_t)(m * n) * 2); /* NaN bits: an unwritten output fails */

    uint64_t params[NPARAMS] = {(uintptr_t)out, (uintptr_t)apacked, (uintptr_t)p.w, (uintptr_t)p.scale,
                                (uintptr_t)p.chan, (uint64_t)m, (uint64_t)n, (uint64_t)k, (uintptr_t)ascale,
                                f->ags ? (uintptr_t)aglobal : 0};
    gbuf bufs[] = {buf_of(out, (size_t)(m * n) * 2, BUF_OUT, "output"),
                   buf_of(apacked, abytes, BUF_INPUT, "activations"), buf_of(p.w, p.w_bytes, BUF_LAYER, "weights"),
                   buf_of(p.scale, p.scale_bytes, BUF_LAYER, "scale records"),
                   buf_of(p.chan, p.chan_bytes, BUF_LAYER, "channel array"),
                   buf_of(ascale, (size_t)(m * agroups), BUF_INPUT, "activation scales"),
                   buf_of(aglobal, f->ags ? 4 : 0, BUF_INPUT, "activation tensor scale")};
    run_grid(&b, m, n, k, params, bufs, (int)(sizeof bufs / sizeof bufs[0]));

    char conf[128];
    wb_config_print(&b.cfg, conf, sizeof conf);
    /* the values the reference multiplies, for the bound: activations, then one weight row at a time */
    for (int64_t i = 0; i < m * k; i++) {
        int64_t si = i / k * agroups + (f->ag ? i % k / f->ag : 0);
        av[i] = wb_type_decode(f->a, acodes[i]) * wb_type_decode(f->as, ascale[si]) * (f->ags ? (double)*aglobal : 1.0);
    }
    for (int64_t col = 0; col < n; col++) {
        for (int64_t j = 0; j < k; j++)
            wv[j] = wb_format_weight_value(f, w[col * k + j]) *
                    stored_value(f->ws, wscale, f->g ? col / f->gn * groups + j / f->g : col) *
                    (f->wgs ? (double)wglobal : 1.0);
        for (int64_t row = 0; row < m; row++) {
            double mag = 0, r = ref[row * n + col];
            for (int64_t j = 0; j < k; j++)
                mag += fabs(av[row * k + j] * wv[j]);
            double o = wbt_half_to_double(ob, out[row * n + col]);
            double tol = fabs(r) * (ob ? 0x1p-8 : 0x1p-11) + mag * 0x1p-20 + 0x1p-24;
            CHECK(isfinite(r), "%s: the reference of out[%lld][%lld] is not finite", spec, (long long)row,
                  (long long)col);
            CHECK(isfinite(o) && fabs(o - r) <= tol,
                  "%s %s [%s] M=%lld K=%lld (WB_SEED=%llu): out[%lld][%lld] = %.9g (0x%04x), reference %.9g "
                  "(bound %g)", spec, wb_arch_name(arch), conf, (long long)m, (long long)k, (unsigned long long)seed,
                  (long long)row, (long long)col, o, out[row * n + col], r, tol);
        }
    }
    wb_packed_free(&p);
    free(apacked);
    free(w), free(acodes), free(ascale), free(wscale), free(x), free(aglobal), free(bias), free(out), free(ref);
    free(av), free(wv);
    wb_kernel_destroy(b.kern);
}

/* Weight-only formats (16-bit activations): random codes (every code of the type), random scales
 * (random_scale), random zero codes with zp=int, a bias; f16/bf16 activations in [-1, 1]. Each output
 * against the float64 reference within one rounding of the output type plus 2^-20 of the sum of
 * |products|; finite, written, and no access outside the case's buffers. */
static void run_case_a16(const char *spec, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config forced)
{
    built b;
    build_case(spec, arch, m, n, k, forced, &b);
    const wb_format *f = &b.f;
    ck_assert(f->a.bits == 16);
    uint64_t seed = wbt_seed(), st = seed ^ (uint64_t)(m * 131 + arch) ^ (uint64_t)k << 20;
    int64_t groups = f->g ? k / f->g : 1, wrows = f->g ? n / f->gn : n;
    int sb = wb_type_file_bytes(f->ws), ab = f->a.kind == WB_KIND_BF16, ob = f->out.kind == WB_KIND_BF16;
    uint8_t *w = malloc((size_t)(n * k)), *wscale = malloc((size_t)(wrows * groups * sb));
    uint8_t *wzero = malloc((size_t)(wrows * groups));
    uint16_t *a = malloc((size_t)(m * k) * 2), *bias = malloc((size_t)n * 2);
    uint16_t *out_buf = malloc((size_t)(m * n + 8) * 2), *out = out_buf + out_shift;
    double *ref = malloc((size_t)(m * n) * sizeof *ref);
    ck_assert(w && wscale && wzero && a && bias && out_buf && ref);
    for (int64_t i = 0; i < n * k; i++)
        w[i] = (uint8_t)(wbt_next(&st) & ((1u << f->w.bits) - 1));
    for (int64_t i = 0; i < wrows * groups; i++) {
        uint32_t c = random_scale(f->ws, &st);
        for (int j = 0; j < sb; j++)
            wscale[i * sb + j] = (uint8_t)(c >> (8 * j));
        wzero[i] = (uint8_t)(wbt_next(&st) & ((1u << f->w.bits) - 1));
    }
    for (int64_t i = 0; i < n; i++)
        bias[i] = (uint16_t)wbt_double_to_half(ob, (double)(wbt_next(&st) % 200) / 50.0 - 2);
    for (int64_t i = 0; i < m * k; i++)
        a[i] = (uint16_t)wbt_double_to_half(ab, (double)(wbt_next(&st) % 20001) / 10000.0 - 1.0);
    wb_host_weights hw = {.w = w, .w_scale = wscale, .w_zero = f->zp == WB_ZP_INT ? wzero : NULL,
                          .bias = f->bias ? bias : NULL};
    wb_host_acts ha = {.a = a};
    ck_assert_int_eq(wb_reference_gemm(f, m, n, k, &ha, &hw, ref), WB_OK);
    wb_packed p;
    ck_assert_int_eq(wb_pack_weights(f, arch, n, k, &hw, &p), WB_OK);
    memset(out, 0xFF, (size_t)(m * n) * 2); /* NaN bits: an unwritten output fails */
    uint64_t params[NPARAMS] = {(uintptr_t)out, (uintptr_t)a, (uintptr_t)p.w, (uintptr_t)p.scale,
                                (uintptr_t)p.chan, (uint64_t)m, (uint64_t)n, (uint64_t)k, 0, 0};
    gbuf bufs[] = {buf_of(out, (size_t)(m * n) * 2, BUF_OUT, "output"),
                   buf_of(a, (size_t)(m * k) * 2, BUF_INPUT, "activations"),
                   buf_of(p.w, p.w_bytes, BUF_LAYER, "weights"),
                   buf_of(p.scale, p.scale_bytes, BUF_LAYER, "scale records"),
                   buf_of(p.chan, p.chan_bytes, BUF_LAYER, "channel array")};
    run_grid(&b, m, n, k, params, bufs, (int)(sizeof bufs / sizeof bufs[0]));
    char conf[128];
    wb_config_print(&b.cfg, conf, sizeof conf);
    for (int64_t col = 0; col < n; col++)
        for (int64_t row = 0; row < m; row++) {
            double mag = 0, r = ref[row * n + col];
            for (int64_t j = 0; j < k; j++) {
                int64_t si = f->g ? col / f->gn * groups + j / f->g : col;
                double z = f->zp == WB_ZP_INT ? wzero[si] : 0;
                double wv = (f->zp == WB_ZP_INT ? (double)w[col * k + j] - z : wb_format_weight_value(f, w[col * k + j])) *
                            stored_value(f->ws, wscale, si);
                mag += fabs(wbt_half_to_double(ab, a[row * k + j]) * wv);
            }
            double o = wbt_half_to_double(ob, out[row * n + col]);
            double tol = fabs(r) * (ob ? 0x1p-8 : 0x1p-11) + mag * 0x1p-20 + 0x1p-24;
            if (!ob && fabs(r) - tol > 65504) { /* past the f16 range (int8 x f16 scales over long K): saturated */
                CHECK(fabs(o) >= 65504 && (o > 0) == (r > 0), "%s %s [%s]: out[%lld][%lld] = %g, reference %g past "
                      "the f16 range", spec, wb_arch_name(arch), conf, (long long)row, (long long)col, o, r);
                continue;
            }
            CHECK(isfinite(o) && fabs(o - r) <= tol,
                  "%s %s [%s] M=%lld K=%lld (WB_SEED=%llu): out[%lld][%lld] = %.9g (0x%04x), reference %.9g "
                  "(bound %g)", spec, wb_arch_name(arch), conf, (long long)m, (long long)k, (unsigned long long)seed,
                  (long long)row, (long long)col, o, out[row * n + col], r, tol);
        }
    wb_packed_free(&p);
    free(w), free(wscale), free(wzero), free(a), free(bias), free(out_buf), free(ref);
    wb_kernel_destroy(b.kern);
}

/* The heuristic's kernels for decode and prefill shapes: split K (s32 reduction), several m-tiles,
 * tails past M; m16n8k32 with cp.async (sm_80, sm_90a) and m8n8k16 with plain loads (sm_75). On sm_90a
 * mma.sync is forced (above M = 64 the heuristic picks wgmma: w8a8_wgmma_kernel_matches_reference). */
START_TEST(w8a8_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 7, 16, 37, 100, 300};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("int8", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case("int8,bias=1", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){.mma = WB_MMA_SYNC});
        run_case("int8,out=f16,bias=1", WB_ARCH_SM75, ms[i], 128, 512, (wb_config){0});
    }
    run_case("int8", WB_ARCH_SM100A, 1, 256, 4096, (wb_config){0}); /* the widest split K */
}
END_TEST

/* The wgmma kernels of sm_90a (M > 64 for s8; every M for fp8): k128 slices, the 128B-swizzled 8-bit
 * tile read through descriptors, the rotated loop, fp8's two-level sums; 128- and 256-token tiles,
 * tails past M. */
START_TEST(w8a8_wgmma_kernel_matches_reference)
{
    run_case("int8", WB_ARCH_SM90A, 100, 256, 1024, (wb_config){0});
    run_case("int8,out=f16,bias=1", WB_ARCH_SM90A, 300, 128, 512, (wb_config){0});
    run_case("int8", WB_ARCH_SM90A, 257, 128, 512, (wb_config){.m_tiles = 32, .warps_n = 8});
    run_case("a=s8,w=int4,ws=f32,g=0,bias=1", WB_ARCH_SM90A, 100, 128, 1024, (wb_config){0});
    run_case("fp8", WB_ARCH_SM90A, 1, 128, 1024, (wb_config){0});
    run_case("fp8,out=f16,bias=1", WB_ARCH_SM90A, 100, 128, 512, (wb_config){0});
    run_case("a=e5m2,w=e4m3,ws=f32,g=0", WB_ARCH_SM90A, 16, 256, 512, (wb_config){0});
    /* an odd number of k128 tiles: K ends after the first half of the two-tile loop */
    run_case("fp8", WB_ARCH_SM90A, 100, 128, 384, (wb_config){0});
    /* cp.async at 16 token tiles, K of 5 tiles and of 4 */
    run_case("a=e5m2,w=e4m3,ws=f32,g=0,bias=1", WB_ARCH_SM90A, 130, 256, 640,
             (wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_CP_ASYNC, .m_tiles = 16, .warps_n = 8});
    run_case("fp8", WB_ARCH_SM90A, 130, 256, 512,
             (wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_CP_ASYNC, .m_tiles = 16, .warps_n = 8});
    run_case("int8,bias=1", WB_ARCH_SM90A, 100, 128, 640, (wb_config){0});
    run_case("a=e4m3,w=int4,ws=f32,g=0", WB_ARCH_SM90A, 70, 128, 128, (wb_config){0});
}
END_TEST

/* Integer weights with f32 scales per group of 128 or 256 along K (w4a8-int8 and its int8 sibling):
 * each slice's exact s32 product times its group's scale, into f32 sums; split K, the m8n8k16 shape,
 * and wgmma. */
START_TEST(w8a8_groups_match_reference)
{
    static const int64_t ms[] = {1, 16, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("w4a8-int8", WB_ARCH_SM80, ms[i], 128, 1024, (wb_config){0});
        run_case("a=s8,w=int8,ws=f32,g=256,out=f16,bias=1", WB_ARCH_SM75, ms[i], 128, 1024, (wb_config){0});
        run_case("w4a8-int8,bias=1", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
    }
    run_case("a=s8,w=int8,ws=f32,g=128", WB_ARCH_SM89, 7, 128, 2048,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
}
END_TEST

/* W4A8 (s8 x int4): the int4 words widened to s8 in registers, then the same kernel, bit for bit. */
START_TEST(w4a8_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 16, 37, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case("a=s8,w=int4,ws=f32,g=0,bias=1", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){.mma = WB_MMA_SYNC});
        run_case("a=s8,w=int4,ws=f32,g=0,out=f16", WB_ARCH_SM75, ms[i], 128, 512, (wb_config){0});
    }
    run_case("a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM89, 7, 256, 1024,
             (wb_config){.m_tiles = 1, .warps_n = 2, .warps_k = 8, .stages = 2});
}
END_TEST

/* W4A8 with fp8 activations (w4a8-fp8 and per channel): int4 words widened to the e4m3 codes of
 * n x 2^-9 (subnormals and 2^-6), the fp8 MMA, x 2^9 after K; mma.sync on sm_89 / sm_120a (split K,
 * groups), wgmma on sm_90a at every M (two-level sums, group scales at each slice's promote). */
START_TEST(w4a8_fp8_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 16, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("w4a8-fp8", WB_ARCH_SM89, ms[i], 128, 1024, (wb_config){0});
        run_case("a=e4m3,w=int4,ws=f32,g=0,out=f16,bias=1", WB_ARCH_SM120A, ms[i], 128, 512, (wb_config){0});
        run_case("w4a8-fp8,bias=1", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
        run_case("a=e4m3,w=int4,ws=f32,g=0", WB_ARCH_SM90A, ms[i], 256, 512, (wb_config){0});
    }
    run_case("a=e5m2,w=int4,ws=f32,g=256,out=f16", WB_ARCH_SM89, 7, 128, 2048,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
    run_case("a=e5m2,w=int4,ws=f32,g=0", WB_ARCH_SM90A, 37, 128, 512, (wb_config){0});
    /* sm_90a at decode: mma.sync with both operands widened to f16 (the fp8 mma.sync is only emulated
     * there); groups, per channel, e5m2, split K, two m-tiles */
    static const int64_t dec[] = {1, 5, 16};
    for (size_t i = 0; i < sizeof dec / sizeof dec[0]; i++) {
        run_case("w4a8-fp8", WB_ARCH_SM90A, dec[i], 256, 1024, (wb_config){.mma = WB_MMA_SYNC});
        run_case("a=e5m2,w=int4,ws=f32,g=0,out=f16,bias=1", WB_ARCH_SM90A, dec[i], 128, 512, (wb_config){0});
    }
    run_case("a=e4m3,w=int4,ws=f32,g=256", WB_ARCH_SM90A, 9, 128, 2048,
             (wb_config){.m_tiles = 2, .warps_n = 1, .warps_k = 8, .stages = 3});
    /* token groups too (each slice's factors: its channels' group scales times its tokens') */
    run_case("a=e4m3,ag=128,w=int4,ws=f32,g=128", WB_ARCH_SM90A, 5, 256, 1024, (wb_config){0});
    run_case("a=e4m3,ag=128,w=int4,ws=f32,g=0,bias=1,out=f16", WB_ARCH_SM90A, 12, 256, 1024, (wb_config){0});
}
END_TEST

/* 8-bit activations with two or four slices a warp: per-channel weight scales and per-token
 * activation scales (W4A8-fp8 widened to f16 on sm_90a at one and two m-tiles, int8 (s32 sums),
 * s8 x int4, fp8 on sm_89), and scale groups along K that span the warp's slices (their product
 * summed, then scaled once: W4A8-fp8 in groups of 128 and 256, activation groups, s8 x int4 and
 * fp8 on sm_89 in groups); refused where a group is narrower than the warp's slices. */
START_TEST(w8a8_k_slices)
{
    static const struct { const char *spec; wb_arch arch; int64_t m, k; wb_config c; } cases[] = {
        {"a=e4m3,w=int4,ws=f32,g=0", WB_ARCH_SM90A, 1, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 2, .warps_k = 2, .k_slices = 4, .stages = 3}},
        {"a=e4m3,w=int4,ws=f32,g=0,bias=1,out=f16", WB_ARCH_SM90A, 16, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 2, .warps_n = 1, .warps_k = 4, .k_slices = 2, .stages = 3}},
        {"a=e5m2,w=int4,ws=f32,g=0", WB_ARCH_SM90A, 11, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 2, .warps_n = 2, .warps_k = 1, .k_slices = 2, .stages = 2}},
        {"int8,bias=1", WB_ARCH_SM80, 5, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 3}},
        {"a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM90A, 16, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 2, .warps_n = 2, .warps_k = 2, .k_slices = 4, .stages = 2}},
        {"fp8,out=f16", WB_ARCH_SM89, 3, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 4, .k_slices = 2, .stages = 2}},
        {"w4a8-fp8", WB_ARCH_SM90A, 16, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 2, .warps_n = 2, .warps_k = 4, .k_slices = 2, .stages = 3}},
        {"a=e4m3,w=int4,ws=f32,g=256,bias=1,out=f16", WB_ARCH_SM90A, 13, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 2, .warps_n = 1, .warps_k = 2, .k_slices = 4, .stages = 2}},
        {"a=e4m3,ag=128,w=int4,ws=f32,g=128", WB_ARCH_SM90A, 5, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 3}},
        {"a=s8,w=int4,ws=f32,g=128", WB_ARCH_SM90A, 16, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 2, .warps_n = 2, .warps_k = 2, .k_slices = 2, .stages = 2}},
        {"a=e4m3,w=e4m3,ws=f32,g=128", WB_ARCH_SM89, 7, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(cases[i].spec, cases[i].arch, cases[i].m, 64, cases[i].k, cases[i].c);
    static const struct { const char *spec; int ks; const char *why; } refused[] = {
        {"w4a8-fp8", 4, "g=128, ag=0"}, {"a=e4m3,ag=128,w=int4,ws=f32,g=0", 4, "g=0, ag=128"},
        {"w4a4-int4", 2, "k_slices > 1"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        wb_format f;
        ck_assert_int_eq(wb_format_parse(refused[i].spec, &f), WB_OK);
        wb_config c = {.mma = WB_MMA_SYNC, .k_slices = refused[i].ks};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 1, 4096, 4096, &c), WB_OK);
        ck_assert_int_eq(wb_legalize(&f, wb_target_get(WB_ARCH_SM90A), &c), WB_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(wb_last_error(), refused[i].why));
    }
}
END_TEST

/* W4A8 with e2m1 weights: to s8 (2v, x 1/2 after K: bit for bit the exact sum) and to e4m3 (the code
 * of 2v x 2^-9, x 2^8 after K), through the prmt table; mma.sync on every target that has the
 * activation type's MMA, wgmma on sm_90a (the unrolled loop), groups of 128. */
START_TEST(w4a8_e2m1_matches_reference)
{
    static const int64_t ms[] = {1, 16, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("a=s8,w=e2m1,ws=f32,g=0", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case("a=s8,w=e2m1,ws=f32,g=0,out=f16,bias=1", WB_ARCH_SM75, ms[i], 128, 512, (wb_config){0});
        run_case("a=s8,w=e2m1,ws=f32,g=0", WB_ARCH_SM90A, ms[i], 128, 640, (wb_config){0});
        run_case("a=e4m3,w=e2m1,ws=f32,g=0", WB_ARCH_SM89, ms[i], 128, 512, (wb_config){0});
        run_case("a=e4m3,w=e2m1,ws=f32,g=128,bias=1", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
        run_case("a=e5m2,w=e2m1,ws=f32,g=0,out=f16", WB_ARCH_SM120A, ms[i], 128, 512, (wb_config){0});
    }
    run_case("a=s8,w=e2m1,ws=f32,g=256", WB_ARCH_SM86, 7, 128, 1024,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
}
END_TEST

/* Scales per group of K on the activations (ag) and per block of channels x K on the weights (gn x g):
 * fp8-block (128 x 128 blocks, 1 x 128 token groups) and its relatives, each slice's product scaled by
 * its token's and its channel's factors; mma.sync (split K) and wgmma (tails past M, where the token
 * scales of absent rows must not be read). */
START_TEST(w8a8_act_groups_match_reference)
{
    static const int64_t ms[] = {1, 16, 37};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("fp8-block", WB_ARCH_SM89, ms[i], 256, 1024, (wb_config){0});
        run_case("fp8-block,out=f16,bias=1", WB_ARCH_SM90A, ms[i], 256, 1024, (wb_config){0});
        run_case("a=e4m3,ag=256,w=int4,ws=f32,g=128,gn=64", WB_ARCH_SM120A, ms[i], 128, 1024, (wb_config){0});
        run_case("a=s8,ag=128,w=int8,ws=f32,g=0", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){0});
    }
    run_case("fp8-block", WB_ARCH_SM90A, 100, 256, 512, (wb_config){0});
    run_case("a=s8,ag=128,w=int4,ws=f32,g=256,gn=32", WB_ARCH_SM90A, 100, 128, 512, (wb_config){0});
    run_case("a=e5m2,ag=128,w=e4m3,ws=f32,g=0", WB_ARCH_SM89, 7, 128, 1024,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
}
END_TEST

/* Forced shapes: every m_tiles, warps_k 1 to 8, two to four stages, plain loads; batch-invariant. */
START_TEST(w8a8_kernel_forced_configs)
{
    static const wb_config cfgs[] = {
        {.m_tiles = 1, .warps_n = 2, .warps_k = 8, .stages = 2},
        {.m_tiles = 2, .warps_n = 1, .warps_k = 4, .stages = 3},
        {.m_tiles = 4, .warps_n = 2, .warps_k = 2, .stages = 4},
        {.m_tiles = 8, .warps_n = 4, .warps_k = 1, .stages = 2},
    };
    run_case("int8,bias=1", WB_ARCH_SM89, 45, 128, 1024, (wb_config){.batch_invariant = 1});
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        run_case("int8", WB_ARCH_SM120A, 45, 128, 1024, cfgs[i]);
        wb_config ldg = cfgs[i];
        ldg.stages = 1, ldg.load = WB_LOAD_LDG;
        if (ldg.m_tiles <= 4)
            run_case("int8,out=f16", WB_ARCH_SM75, 45, 128, 1024, ldg);
    }
}
END_TEST

/* fp8 W8A8 on sm_89 and sm_120a: every pair of e4m3/e5m2, both outputs, a bias; the heuristic's
 * kernels (split K up to 16, several m-tiles, tails past M) and forced shapes. */
START_TEST(fp8_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 7, 37, 300};
    static const char *const specs[] = {"fp8", "a=e4m3,w=e5m2,ws=f32,g=0,out=f16,bias=1",
                                        "a=e5m2,w=e4m3,ws=f32,g=0,bias=1", "a=e5m2,w=e5m2,ws=f32,g=0,out=f16"};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++)
            run_case(specs[s], (i + s) % 2 ? WB_ARCH_SM120A : WB_ARCH_SM89, ms[i], 128, 512, (wb_config){0});
    run_case("fp8", WB_ARCH_SM89, 1, 256, 4096, (wb_config){0}); /* the widest split K */
    static const wb_config cfgs[] = {
        {.m_tiles = 1, .warps_n = 2, .warps_k = 8, .stages = 2},
        {.m_tiles = 8, .warps_n = 4, .warps_k = 1, .stages = 3},
        {.m_tiles = 4, .warps_n = 2, .warps_k = 2, .stages = 4, .batch_invariant = 0},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
        run_case("fp8,out=f16,bias=1", WB_ARCH_SM120A, 45, 128, 1024, cfgs[i]);
    run_case("fp8,bias=1", WB_ARCH_SM89, 45, 128, 1024, (wb_config){.batch_invariant = 1});
}
END_TEST

/* W4A4 (s4 x int4): the native s4 MMA (m16n8k64 on sm_80..sm_89, two m8n8k32 per k32 step on sm_75)
 * and both operands widened to s8 (sm_90a and the Blackwells, whose s4 MMA is emulated); split K,
 * odd and even m-tile counts (ldmatrix .x2 and .x4), tails past M, group scales of weights and
 * activations, plain loads; bit for bit where no group scale rounds a slice. */
START_TEST(w4a4_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 16, 37, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("a=s4,w=int4,ws=f32,g=0", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case("a=s4,w=int4,ws=f32,g=0,bias=1", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){0});
        run_case("a=s4,w=int4,ws=f32,g=0,out=f16", WB_ARCH_SM75, ms[i], 128, 512, (wb_config){0});
        run_case("a=s4,ag=128,w=int4,ws=f32,g=256,out=f16", WB_ARCH_SM103A, ms[i], 128, 1024, (wb_config){0});
    }
    run_case("a=s4,w=int4,ws=f32,g=128,bias=1", WB_ARCH_SM89, 45, 128, 1024,
             (wb_config){.m_tiles = 4, .warps_n = 2, .warps_k = 2, .stages = 3});
    run_case("a=s4,w=int4,ws=f32,g=0", WB_ARCH_SM86, 7, 128, 2048,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
    run_case("a=s4,w=int4,ws=f32,g=0,out=f16", WB_ARCH_SM80, 21, 128, 512,
             (wb_config){.m_tiles = 4, .warps_n = 2, .warps_k = 1, .stages = 1, .load = WB_LOAD_LDG});
}
END_TEST

/* fp4 activations (a=e2m1): NVFP4 (e4m3 block scales of 16, both tensor scales; f16 m16n8k16) on
 * sm_80, sm_90a and sm_120a (the hardware e2m1 conversion of the weights), with a bias and f16 output;
 * MX (e8m0 scales of 32; bf16 m16n8k16) on sm_90a and sm_100a; f16 m16n8k8 with plain loads on sm_75;
 * per-token scales with int4 weights per group of 128 (the slice's product scaled in f32) and groups of
 * 64; M = 1, 7, 16, 37 (tails past M, several m-tiles); then forced shapes: m_tiles 1, 2, 4, warps_k 1
 * to 8, two to four stages, plain loads, batch-invariant. */
START_TEST(fp4_acts_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 7, 16, 37};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case_fp4("nvfp4", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
        run_case_fp4("nvfp4", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("nvfp4", WB_ARCH_SM120A, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM89, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM100A, ms[i], 128, 512,
                     (wb_config){0});
        run_case_fp4("a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16,out=f16", WB_ARCH_SM75, ms[i], 128, 512,
                     (wb_config){0});
        run_case_fp4("a=e2m1,ag=0,as=e4m3,w=int4,ws=f16,g=128,out=f16", WB_ARCH_SM80, ms[i], 128, 1024,
                     (wb_config){0});
        run_case_fp4("a=e2m1,ag=64,as=e4m3,w=e2m1,ws=e4m3,g=64", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){0});
        /* bf16 with e4m3 activation scales (e8m0 weight scales), and with e8m0 ones, e4m3 weight scales */
        run_case_fp4("a=e2m1,ag=16,as=e4m3,ags=1,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e4m3,g=16,wgs=1,out=f16", WB_ARCH_SM120A, ms[i], 128, 512,
                     (wb_config){0});
        /* sm_120a's block-scaled MMA: NVFP4 x NVFP4 (kind::mxf4nvf4 4X), MXFP4 x MXFP4 (kind::mxf4 2X) */
        run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM120A, ms[i], 128, 1024, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM120A, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,ags=1,w=e2m1,ws=e8m0,g=32,wgs=1,bias=1", WB_ARCH_SM120A, ms[i], 128, 512,
                     (wb_config){0});
    }
    static const wb_config cfgs[] = {
        {.m_tiles = 1, .warps_n = 2, .warps_k = 8, .stages = 2},
        {.m_tiles = 2, .warps_n = 1, .warps_k = 4, .stages = 3},
        {.m_tiles = 4, .warps_n = 2, .warps_k = 2, .stages = 4},
        {.m_tiles = 4, .warps_n = 4, .warps_k = 1, .stages = 2},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        run_case_fp4("nvfp4,bias=1", WB_ARCH_SM90A, 45, 128, 1024, cfgs[i]);
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM100A, 45, 128, 1024, cfgs[i]);
        run_case_fp4("a=e2m1,ag=0,as=e4m3,w=int4,ws=f16,g=128,out=f16", WB_ARCH_SM89, 45, 128, 1024, cfgs[i]);
        run_case_fp4("nvfp4", WB_ARCH_SM120A, 45, 128, 1024, cfgs[i]);
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM120A, 45, 128, 1024, cfgs[i]);
        wb_config ldg = cfgs[i];
        ldg.stages = 1, ldg.load = WB_LOAD_LDG;
        run_case_fp4("a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16,out=f16", WB_ARCH_SM75, 45, 128, 1024, ldg);
        run_case_fp4("nvfp4,out=f16", WB_ARCH_SM120A, 45, 128, 1024, ldg);
    }
    run_case_fp4("nvfp4", WB_ARCH_SM120A, 45, 128, 1024, (wb_config){.batch_invariant = 1});
}
END_TEST

/* fp4 activations on wgmma (sm_90a, forced: the heuristic keeps them on mma.sync): the block's 16-bit
 * tile of dequantized activations read through descriptors by m64nNk16 .f32.T.T (128B swizzle, k16
 * steps of 32 bytes, fenced for the async proxy, not rewritten while a group reads it), the weights
 * dequantized into the A registers. The heuristic's shape (32 tokens) for NVFP4 (f16) and MX (bf16,
 * e8m0 scales, a bias), tails past M; then forced ones: N = 8 to 256 tokens, two warpgroups of
 * channels, split K over 2 and 4 warpgroups, three to five stages. */
START_TEST(wgmma16_kernel_matches_reference)
{
    static const int64_t ms[] = {100, 300};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        run_case_fp4("nvfp4", WB_ARCH_SM90A, ms[i], 256, 1024, (wb_config){.mma = WB_MMA_WGMMA});
    run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM90A, 129, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA});
    run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM90A, 37, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA, .m_tiles = 1, .warps_n = 4, .warps_k = 4, .stages = 3});
    run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, 300, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA, .m_tiles = 8, .warps_n = 4, .warps_k = 2, .stages = 4});
    run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM90A, 300, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA, .m_tiles = 16, .warps_n = 8, .warps_k = 2, .stages = 4});
    run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, 300, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA, .m_tiles = 32, .warps_n = 8, .warps_k = 1, .stages = 5});
}
END_TEST

/* tcgen05 (sm_100a, sm_103a; --mma tcgen05): weight-only kernels on kind::f16 with the sums in tensor
 * memory, the dequantized weights through swizzled shared tiles, mbarrier commits; the heuristic's
 * config and forced ones (16 to 256 tokens a block, 3 to 8 stages, tails past M, one and many k tiles);
 * W8A8 and W4A8 on kind::i8 and kind::f8f6f4; fp4 activations on kind::f16. */
typedef struct tc_case {
    const char *spec;
    wb_arch arch;
    int64_t m, n, k;
    wb_config cfg;
} tc_case;

START_TEST(tcgen05_kernel_matches_reference)
{
    static const tc_case cases[] = {
        {"w4a16", WB_ARCH_SM100A, 100, 256, 1024, {.mma = WB_MMA_TCGEN05}},
        {"w4a16,bias=1", WB_ARCH_SM103A, 5, 128, 128, {.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 3}},
        {"a=f16,w=int4,ws=f16,g=64", WB_ARCH_SM100A, 16, 128, 64, {.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 3}},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", WB_ARCH_SM103A, 37, 256, 512,
         {.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 3}},
        {"a=f16,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM100A, 300, 128, 512, {.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4}},
        {"a=f16,w=int8,ws=f16,g=0,bias=1", WB_ARCH_SM103A, 20, 128, 1024, {.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 8}},
        {"a=bf16,w=int3,ws=f32,g=128", WB_ARCH_SM100A, 64, 128, 768, {.mma = WB_MMA_TCGEN05, .m_tiles = 4, .stages = 5}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case_a16(cases[i].spec, cases[i].arch, cases[i].m, cases[i].n, cases[i].k, cases[i].cfg);
    /* W8A8 on kind::i8 (sm_100a: exact s32 sums) and kind::f8f6f4 (both targets), W4A8 widened to s8 and
     * e4m3: k128 tiles of 8-bit codes */
    run_case("int8", WB_ARCH_SM100A, 100, 256, 1024, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case("int8,bias=1,out=f16", WB_ARCH_SM100A, 7, 128, 128, (wb_config){.mma = WB_MMA_TCGEN05, .stages = 3});
    run_case("fp8", WB_ARCH_SM103A, 300, 128, 512, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4});
    run_case("a=e5m2,w=e4m3,ws=f32,g=0,bias=1", WB_ARCH_SM100A, 37, 128, 256,
             (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 5});
    run_case("a=e4m3,w=int4,ws=f32,g=0", WB_ARCH_SM100A, 64, 128, 512, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case("a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM100A, 20, 128, 384, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 2});
    /* sm_103a (no kind::i8): s8 x s8 and W4A8 s8 widened exactly to f16 on kind::f16, two k64 halves a
     * tile; the f32 sums of integers stay exact here, so the output is checked bit for bit */
    run_case("int8", WB_ARCH_SM103A, 100, 256, 1024, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case("int8,bias=1,out=f16", WB_ARCH_SM103A, 7, 128, 128, (wb_config){.mma = WB_MMA_TCGEN05, .stages = 3});
    run_case("int8", WB_ARCH_SM103A, 130, 128, 2048, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 16, .stages = 3});
    run_case("a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM103A, 37, 128, 384, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 8});
    /* W8A8 with scales per group along K (fp8-block, W4A8 in groups, token groups): each tile's product
     * in its own TMEM buffer, scaled into f32 sums in registers two tiles later; one tile, two, many */
    run_case("fp8-block", WB_ARCH_SM100A, 100, 256, 1024, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case("fp8-block,out=f16,bias=1", WB_ARCH_SM103A, 37, 128, 128, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 3});
    run_case("w4a8-fp8", WB_ARCH_SM103A, 130, 128, 256, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 16, .stages = 3});
    run_case("w4a8-int8", WB_ARCH_SM100A, 20, 128, 640, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 2});
    run_case("w4a8-int8", WB_ARCH_SM103A, 7, 128, 384, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 4});
    run_case("a=s8,ag=128,w=int8,ws=f32,g=0,bias=1", WB_ARCH_SM100A, 64, 128, 512, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 4});
    /* fp4 activations made a 16-bit tile by the block (lower_act4.c), then kind::f16; tensor scales */
    run_case_fp4("nvfp4", WB_ARCH_SM100A, 100, 256, 512, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM103A, 37, 128, 256,
                 (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 3});
    run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM100A, 129, 128, 512,
                 (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4});
}
END_TEST

/* Weight-only kernels on mma.sync with k_slices 1, 2 and 4 (a warp takes 2 or 4 k64 slices of each
 * stage: the K loop's body lowered once per slice, fragment addresses a slice apart), split K over
 * warps, several m-tiles, tails past M; int4 and int2 per group of 128 (the slice's product scaled in
 * f32), uint3 and uint4 with integer zero points per group of 64, int8 per channel (bf16), e2m1 with
 * e8m0 scales per 32, uint4 and int4 per group of 32 (one f32 product per group), plain loads, and the
 * most copies per thread that legalize admits. */
START_TEST(a16_kernel_k_slices)
{
    static const struct { const char *spec; wb_arch arch; int64_t m, n, k; wb_config c; } cases[] = {
        {"w4a16", WB_ARCH_SM90A, 1, 64, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 2, .warps_k = 4, .k_slices = 2, .stages = 3}},
        {"w4a16", WB_ARCH_SM90A, 1, 64, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 4, .stages = 4}},
        {"w4a16", WB_ARCH_SM90A, 1, 64, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 8, .k_slices = 1, .stages = 2}},
        {"a=f16,w=int2,ws=f16,g=128,bias=1", WB_ARCH_SM80, 13, 32, 1024, {.m_tiles = 2, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 2}},
        {"a=f16,w=uint3,ws=f16,g=64,zp=int,out=f16", WB_ARCH_SM90A, 3, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 2, .warps_k = 2, .k_slices = 4, .stages = 3}},
        {"a=f16,w=uint4,ws=f16,g=64,zp=int", WB_ARCH_SM86, 37, 32, 1024, {.m_tiles = 4, .warps_n = 1, .warps_k = 1, .k_slices = 2, .stages = 4}},
        {"a=bf16,w=int8,ws=bf16,g=0", WB_ARCH_SM90A, 9, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 2, .warps_n = 2, .warps_k = 2, .k_slices = 2, .stages = 2}},
        {"w4a16", WB_ARCH_SM90A, 16, 64, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 2, .warps_n = 2, .warps_k = 4, .k_slices = 2, .stages = 3}},
        {"a=f16,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, 1, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 4, .k_slices = 2, .stages = 3}},
        {"w4a16", WB_ARCH_SM75, 5, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 1, .load = WB_LOAD_LDG}},
        /* groups of 32 at one m-tile: one f32 product per group (mma_scaled), zero points per group */
        {"a=f16,w=uint4,ws=f16,g=32,zp=int", WB_ARCH_SM80, 3, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 2}},
        {"a=f16,w=int4,ws=bf16,g=32,out=f16", WB_ARCH_SM90A, 1, 64, 2048, {0}},
        /* codes the raw rule once took and the magic rule has again: unsigned, 1-bit, per channel,
         * m16n8k8 (sm_75) */
        {"a=f16,w=uint2,ws=f16,g=64", WB_ARCH_SM90A, 1, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 3}},
        {"a=f16,w=int1,ws=f16,g=128,bias=1", WB_ARCH_SM86, 3, 32, 1024, {.m_tiles = 1, .warps_n = 2, .warps_k = 2, .k_slices = 2, .stages = 2}},
        {"a=f16,w=int4,ws=f16,g=0", WB_ARCH_SM80, 11, 32, 1024, {.m_tiles = 2, .warps_n = 1, .warps_k = 2, .k_slices = 1, .stages = 2}},
        {"a=f16,w=int2,ws=f16,g=128", WB_ARCH_SM75, 2, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 1, .load = WB_LOAD_LDG}},
        /* four slices a warp, the heuristic's choice for codes of 2 bits or fewer at one m-tile */
        {"a=f16,w=int2,ws=f16,g=128", WB_ARCH_SM90A, 1, 64, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 2, .warps_k = 2, .k_slices = 4, .stages = 3}},
        {"a=f16,w=uint1,ws=f16,g=0,bias=1", WB_ARCH_SM90A, 5, 32, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 4, .stages = 3}},
        {"a=bf16,w=int1,ws=bf16,g=64", WB_ARCH_SM80, 1, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 1, .k_slices = 4, .stages = 2}},
        /* the raw rule (f16, 3-bit codes, no zero record, one token tile): slices paired in groups of
         * 128 and per channel, the bias MMA (signed), none (unsigned), m16n8k8 (sm_75), groups of 64 */
        {"a=f16,w=int3,ws=f16,g=128", WB_ARCH_SM90A, 1, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 3}},
        {"a=f16,w=uint3,ws=f32,g=0,bias=1", WB_ARCH_SM80, 5, 32, 1024, {.m_tiles = 1, .warps_n = 2, .warps_k = 1, .k_slices = 2, .stages = 2}},
        {"a=f16,w=int3,ws=f16,g=64", WB_ARCH_SM75, 3, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 1, .load = WB_LOAD_LDG}},
        /* gemv (M = 1): the raw rule's bias from the token's activation sums, one MMA of ones per 8 k16
         * chunks: int2 paired in groups of 128 (the heuristic's pick, then forced), in groups of 32 (a
         * sum per k32 piece), per channel on one slice a warp (ldmatrix.x2, m16n8k8 on sm_75), int3 in
         * groups of 64 (unpaired) */
        {"a=f16,w=int2,ws=f16,g=128", WB_ARCH_SM90A, 1, 64, 2048, {0}},
        {"a=f16,w=int2,ws=f16,g=128,bias=1", WB_ARCH_SM90A, 1, 64, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 2, .warps_k = 2, .k_slices = 4, .stages = 3, .gemv = 1}},
        {"a=f16,w=int2,ws=f32,g=32", WB_ARCH_SM80, 1, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 2, .gemv = 1}},
        {"a=f16,w=int2,ws=f16,g=0", WB_ARCH_SM75, 1, 32, 1024, {.m_tiles = 1, .warps_n = 2, .warps_k = 2, .k_slices = 1, .stages = 1, .load = WB_LOAD_LDG, .gemv = 1}},
        {"a=f16,w=int3,ws=f16,g=64,out=f16", WB_ARCH_SM86, 1, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 1, .k_slices = 4, .stages = 2, .gemv = 1}},
        /* codes of two and three planes, and 3-bit codes at two token tiles (the magic rule) */
        {"a=f16,w=int3,ws=f16,g=128", WB_ARCH_SM86, 13, 32, 1024, {.m_tiles = 2, .warps_n = 1, .warps_k = 2, .k_slices = 1, .stages = 2}},
        {"a=f16,w=uint6,ws=f16,g=64", WB_ARCH_SM80, 5, 32, 1024, {.m_tiles = 1, .warps_n = 2, .warps_k = 1, .k_slices = 2, .stages = 2}},
        {"a=f16,w=int8,ws=f32,g=0", WB_ARCH_SM89, 9, 32, 1024, {.m_tiles = 2, .warps_n = 1, .warps_k = 2, .k_slices = 1, .stages = 2}},
        /* the most copies a thread makes: 64 tokens x 2 slices x 8 pieces of activations over 32 threads */
        {"w4a16", WB_ARCH_SM80, 64, 32, 1024, {.m_tiles = 8, .warps_n = 1, .warps_k = 1, .k_slices = 2, .stages = 2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case_a16(cases[i].spec, cases[i].arch, cases[i].m, cases[i].n, cases[i].k, cases[i].c);
}
END_TEST

/* A TMA pipeline case: spec, M, K, m_tiles, stages, persistent. */
typedef struct tma_case {
    const char *spec;
    int64_t m, k;
    int mt, stages, persistent;
} tma_case;

/* Each case on sm_90a's TMA pipeline (eight warps of channels) with N = n, in clusters of `cluster`. */
static void run_tma_cases(const tma_case *cases, size_t count, int64_t n, int cluster)
{
    for (size_t i = 0; i < count; i++) {
        wb_format f;
        ck_assert_int_eq(wb_format_parse(cases[i].spec, &f), WB_OK);
        wb_config c = {.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .warps_k = 1, .warps_n = 8, .m_tiles = cases[i].mt,
                       .stages = cases[i].stages, .persistent = cases[i].persistent, .cluster = cluster};
        (f.a.bits == 16 ? run_case_a16 : run_case)(cases[i].spec, WB_ARCH_SM90A, cases[i].m, n, cases[i].k, c);
    }
}

/* --load tma on sm_90a (wgmma): the warp-specialized pipeline (the consumer warpgroups, then a producer
 * warpgroup whose first warp issues per stage a TMA box of activations and cp.async.bulk copies of the
 * weights and scale records, counted on the stage's full mbarrier; each consumer warp releases the
 * stage on its empty one). The fake tensor map is the runtime's (run_grid): 16-bit activations, or
 * 8-bit codes (boxes of 128 a row: fp8 and int8). 64- and 128-token tiles, two warpgroups of channels,
 * three and four stages, tails past M (rows the TMA fills with zeros), f16 and bf16 activations,
 * per-group and per-channel scales, a bias; more token tiles than a raster group, and fewer. Any read
 * of a stage before its full phase was seen, a copy
 * into a chunk a wgmma still reads or a thread read with no release since, or a deadlock between
 * producer and consumers fails the case. */
START_TEST(tma_kernel_matches_reference)
{
    static const tma_case cases[] = {
        {"w4a16", 100, 1024, 8, 3, 0},
        {"w4a16", 300, 512, 16, 4, 0},
        {"a=bf16,w=int4,ws=bf16,g=128,bias=1", 100, 512, 16, 3, 0},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int", 300, 1024, 8, 4, 0},
        {"a=f16,w=int8,ws=f16,g=0,out=f16", 300, 512, 16, 3, 0},
        {"fp8", 100, 1024, 8, 3, 0},
        {"fp8,out=f16,bias=1", 300, 512, 16, 4, 0},
        {"int8", 100, 512, 16, 4, 0},
        {"int8,bias=1", 300, 1024, 8, 3, 0},
        /* 10 token tiles: a group of 8 and one of 2 (raster) */
        {"w4a16", 300, 512, 4, 3, 0},
        {"fp8", 300, 512, 4, 3, 0},
        /* 3 tiles: K ends after the first half of the two-tile loop; fp8 also 1 and 2 (its slice
         * products promoted a tile late: the tails after either half) */
        {"fp8,bias=1", 100, 384, 8, 3, 0},
        {"fp8", 100, 128, 8, 3, 0},
        {"fp8,out=f16", 100, 256, 8, 4, 0},
        /* 16-bit activations: 1, 3 and 5 tiles of k64 (each group waited for a tile late) */
        {"a=f16,w=int4,ws=f16,g=0", 100, 64, 8, 3, 0},
        {"a=f16,w=int4,ws=f16,g=0,bias=1", 300, 192, 16, 3, 0},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int", 100, 320, 8, 4, 0},
        /* W4A8 (int4 widened in registers): e4m3 activations (two-level sums) and s8, 1, 2 and 3 tiles */
        {"a=e4m3,w=int4,ws=f32,g=0", 100, 128, 8, 3, 0},
        {"a=e4m3,w=int4,ws=f32,g=0,bias=1", 300, 384, 16, 3, 0},
        {"a=s8,w=int4,ws=f32,g=0", 100, 256, 8, 4, 0},
        {"a=s8,w=int4,ws=f32,g=0,out=f16", 100, 384, 8, 3, 0},
        {"int8", 100, 384, 8, 3, 0},
        /* 192-token tiles (fp8 without the late loop: its sums and one product set fill the registers),
         * M past one tile and 3 or 4 tiles of K; int8 and 16-bit activations at 24 m-tiles too */
        {"fp8,bias=1", 300, 384, 24, 3, 0},
        {"fp8,out=f16", 100, 512, 24, 4, 0},
        {"int8", 300, 512, 24, 3, 0},
        {"w4a16", 300, 512, 24, 3, 0},
        {"fp8,out=f16,bias=1", 500, 384, 24, 3, 1}, /* persistent: 3 blocks, 2 strips x 3 token tiles */
        {"a=e4m3,w=int4,ws=f32,g=0,bias=1", 300, 384, 24, 3, 0}, /* W4A8: int4 widened in registers */
        {"a=e4m3,w=int4,ws=f32,g=0", 500, 256, 24, 4, 1},
        {"a=e4m3,w=int4,ws=f32,g=0,out=f16", 300, 384, 4, 3, 1}, /* persistent, K ending after a first half */
        /* persistent: 3 blocks walk 2 strips x 10 token tiles (w4a16, fp8 with an odd tile count) or
         * 2 x 2 (int8, uint4 with zero points), the stages running on from one output tile to the next */
        {"w4a16", 300, 512, 4, 3, 1},
        {"fp8,out=f16,bias=1", 300, 384, 4, 4, 1},
        {"int8", 100, 512, 8, 3, 1},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", 100, 1024, 8, 4, 1},
    };
    run_tma_cases(cases, sizeof cases / sizeof cases[0], 256, 1);
    /* an output 2 bytes past a 16-byte boundary: the staged tile's rows leave by 2-byte stores (a 16-byte
     * store there faults in the interpreter) */
    out_shift = 1;
    wb_config c = {.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .warps_k = 1, .warps_n = 8, .m_tiles = 8, .stages = 3,
                   .cluster = 1};
    run_case("fp8,bias=1", WB_ARCH_SM90A, 100, 256, 384, c);
    c.persistent = 1;
    run_case_a16("w4a16", WB_ARCH_SM90A, 300, 256, 512, c);
    out_shift = 0;
}
END_TEST

/* --cluster 2 (lower_tma.c): pairs of blocks on neighbouring channel tiles, each copying half of the
 * activation tile into both by TMA multicast, both blocks' consumer warps releasing each stage to both
 * producers, the pair meeting at barrier.cluster after setup and at the end; run two blocks at a time
 * against the float64 reference: 4 channel tiles (2 pairs, the raster order over pairs), token tiles
 * whose second half lies partly (M = 300, 100 with 64-row tiles) or wholly (M = 100 with 128-row
 * tiles: rows 64..127 of the second tile are past M, its second half wholly) past M, 16-bit and 8-bit
 * activations, fp8's two-level sums with a bias, s8, zero points. Persistent (--persistent): two pairs
 * walk the pairs of tiles, the stages running on across them (10 pairs of tiles: 5 each; 8: 4 each;
 * 2: one each), meeting once after their last. 192-token tiles as the heuristic takes them at large M
 * (16-bit activations of several formats in persistent pairs, e4m3 x int4 with a bias in plain ones). */
START_TEST(tma_cluster_matches_reference)
{
    static const tma_case cases[] = {
        {"fp8", 300, 512, 4, 3, 0},
        {"fp8,out=f16,bias=1", 100, 384, 8, 4, 0},
        {"fp8", 500, 512, 24, 3, 0},
        {"fp8,bias=1", 500, 512, 24, 3, 1},
        {"int8", 100, 512, 16, 3, 0},
        {"w4a16", 300, 512, 4, 3, 0},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", 100, 1024, 8, 4, 0},
        {"a=e4m3,w=int4,ws=f32,g=0", 300, 512, 8, 3, 0},
        {"fp8", 300, 512, 8, 3, 1},
        {"fp8,out=f16,bias=1", 100, 384, 4, 4, 1},
        {"int8", 30, 512, 4, 3, 1},
        {"w4a16", 300, 512, 8, 3, 1},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", 100, 1024, 4, 4, 1},
        {"a=e4m3,w=int4,ws=f32,g=0", 300, 512, 8, 3, 1},
        /* the heuristic's large-M picks on 192-token tiles: W4A16 formats persistent, W4A8 plain */
        {"w4a16", 500, 512, 24, 3, 1},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", 500, 512, 24, 4, 1},
        {"a=f16,w=int2,g=128", 500, 256, 24, 3, 1},
        {"mxfp4", 500, 256, 24, 3, 1},
        {"a=e4m3,w=int4,ws=f32,g=0,out=f16,bias=1", 500, 384, 24, 3, 0},
    };
    run_tma_cases(cases, sizeof cases / sizeof cases[0], 512, 2);
}
END_TEST

/* --cluster 4 (lower_tma.c): quads of blocks on two neighbouring channel tiles of two neighbouring token
 * tiles; each producer multicasts its half of the activation tile into its channel neighbour and itself
 * and its half of the weight tile's warp slices (and scale records) into its token neighbour and
 * itself, and each consumer warp releases a stage to the three producers that fill it; run four blocks
 * at a time against the float64 reference: 4 channel tiles (2 quads across), token tiles whose count is
 * odd (the last quad's second token tile partly or wholly past M: M = 300 with 64-row tiles, 100 with
 * 128-row ones), 16-bit and 8-bit activations, fp8's two-level sums with a bias, s8, W4A8, zero points,
 * one consumer warpgroup (its four warp slices split two and two). */
START_TEST(tma_cluster4_matches_reference)
{
    static const tma_case cases[] = {
        {"fp8", 300, 512, 8, 3, 0},
        {"fp8,out=f16,bias=1", 100, 384, 16, 4, 0},
        {"int8", 300, 512, 8, 3, 0},
        {"w4a16", 300, 512, 8, 3, 0},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", 100, 1024, 16, 4, 0},
        {"a=e4m3,w=int4,ws=f32,g=0", 300, 512, 8, 3, 0},
    };
    run_tma_cases(cases, sizeof cases / sizeof cases[0], 512, 4);
    wb_config c = {.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .warps_k = 1, .warps_n = 4, .m_tiles = 8, .stages = 3,
                   .cluster = 4};
    run_case_a16("w4a16", WB_ARCH_SM90A, 300, 256, 512, c);
    run_case("fp8,bias=1", WB_ARCH_SM90A, 100, 256, 384, c);
}
END_TEST

/* --split-k 2: pairs of blocks on one output tile, each taking half of K, the second's sums stored into
 * the first's shared memory (st.shared::cluster) and added there between two cluster barriers; run two
 * blocks at a time against the float64 reference: the TMA pipeline (16-bit activations, zero points,
 * fp8's two-level sums with a bias, s8's s32 sums) and the cp.async wgmma loop (one warpgroup, warps_k
 * 2 with its own reduction after), tails past M, halves of one and of several block tiles. */
START_TEST(split_k_matches_reference)
{
    static const struct { const char *spec; int64_t m, n, k; int load, mt, wn, wk, stages; } cases[] = {
        {"w4a16", 300, 256, 512, WB_LOAD_TMA, 4, 8, 1, 3},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", 100, 256, 256, WB_LOAD_TMA, 8, 8, 1, 4},
        {"fp8,out=f16,bias=1", 100, 256, 768, WB_LOAD_TMA, 8, 8, 1, 3},
        {"int8", 100, 256, 512, WB_LOAD_TMA, 16, 8, 1, 3},
        {"w4a16", 70, 128, 1024, WB_LOAD_CP_ASYNC, 8, 4, 2, 3},
        {"a=f16,w=int4,ws=f16,g=0", 37, 128, 256, WB_LOAD_CP_ASYNC, 4, 4, 1, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_format f;
        ck_assert_int_eq(wb_format_parse(cases[i].spec, &f), WB_OK);
        wb_config c = {.mma = WB_MMA_WGMMA, .load = cases[i].load, .warps_k = cases[i].wk, .warps_n = cases[i].wn,
                       .m_tiles = cases[i].mt, .stages = cases[i].stages, .cluster = 1, .split_k = 2};
        (f.a.bits == 16 ? run_case_a16 : run_case)(cases[i].spec, WB_ARCH_SM90A, cases[i].m, cases[i].n, cases[i].k, c);
    }
}
END_TEST

/* --split-k 2 on the mma.sync kernels: each block of a pair reduces its warps' K split through its own
 * shared memory first, then the second's sums go into the first's (the others of its warps have
 * ended): 16-bit activations at two m-tiles with k-slices, the gemv kernel (its token's sums per
 * group), groups of 32, per channel with one warp along K (no reduction of its own), zero points and
 * bf16, plain loads (no cp.async), s8 and e4m3 activations (the widened W4A8 kernel), and on sm_120a
 * int8 and s4 x int4 (activations two to a byte). */
START_TEST(split_k_mma_sync_matches_reference)
{
    static const struct { const char *spec; wb_arch arch; int64_t m, n, k; wb_config c; } cases[] = {
        {"w4a16", WB_ARCH_SM90A, 16, 64, 2048, {.m_tiles = 2, .warps_n = 2, .warps_k = 4, .k_slices = 2, .stages = 3}},
        {"a=f16,w=int2,ws=f16,g=128,bias=1", WB_ARCH_SM90A, 1, 64, 4096, {.m_tiles = 1, .warps_n = 2, .warps_k = 2, .k_slices = 4, .stages = 4, .gemv = 1}},
        {"a=f16,w=int3,ws=f32,g=32", WB_ARCH_SM90A, 3, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 1, .stages = 2}},
        {"a=f16,w=int4,ws=f16,g=0,out=f16", WB_ARCH_SM120A, 13, 64, 512, {.m_tiles = 2, .warps_n = 4, .warps_k = 1, .stages = 3}},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int", WB_ARCH_SM100A, 9, 32, 1024, {.m_tiles = 2, .warps_n = 2, .warps_k = 2, .stages = 2}},
        {"w4a16", WB_ARCH_SM90A, 3, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .stages = 1, .load = WB_LOAD_LDG}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_config c = cases[i].c;
        c.mma = WB_MMA_SYNC, c.split_k = 2;
        run_case_a16(cases[i].spec, cases[i].arch, cases[i].m, cases[i].n, cases[i].k, c);
    }
    static const struct { const char *spec; wb_arch arch; int64_t m, n, k; wb_config c; } q[] = {
        {"a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM90A, 16, 64, 1024, {.m_tiles = 2, .warps_n = 2, .warps_k = 2, .stages = 3}},
        {"a=e4m3,w=int4,ws=f32,g=0,bias=1", WB_ARCH_SM90A, 5, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 4, .stages = 3}},
        {"int8", WB_ARCH_SM120A, 11, 32, 1024, {.m_tiles = 2, .warps_n = 2, .warps_k = 1, .stages = 2}},
        {"a=s4,w=int4,ws=f32,g=0", WB_ARCH_SM120A, 7, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .stages = 2}},
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        wb_config c = q[i].c;
        c.mma = WB_MMA_SYNC, c.split_k = 2;
        run_case(q[i].spec, q[i].arch, q[i].m, q[i].n, q[i].k, c);
    }
}
END_TEST

/* The activation quantizer (lower/lower_quant.c) on the interpreter: f16 or bf16 activations (values of
 * three magnitudes, outliers, an all-zero row) -> codes and scales, byte for byte those of the host
 * reference (dsl/quantize.c), for s8, e4m3, e5m2 and s4, per token and per group of K, and e2m1 with
 * e8m0 or e4m3 block scales. Mutants of its round-to-odd quotient, the shuffle trees, the e2m1
 * midpoints and the e8m0 exponent fail here. */
/* One of the quantizer's kernels (global: the tensor-scale pass) into fn, on a new arena (returned). */
static wb_arena *quant_func(const wb_format *f, wb_type xt, wb_arch arch, int global, wb_func *fn)
{
    wb_arena *arena = wb_arena_create();
    ck_assert_ptr_nonnull(arena);
    wb_func_init(fn, arena);
    wb_status s = global ? wb_lower_quant_global(f, xt, arch, fn) : wb_lower_quant(f, xt, arch, fn);
    ck_assert_msg(s == WB_OK, "%s", wb_last_error());
    return arena;
}

static void run_quant(const char *spec, int bf16, wb_arch arch, int64_t m, int64_t k)
{
    wb_format f;
    ck_assert_int_eq(wb_format_parse(spec, &f), WB_OK);
    wb_type xt = {bf16 ? WB_KIND_BF16 : WB_KIND_F16, 16, 0, 0};
    wb_func fn;
    wb_arena *arena = quant_func(&f, xt, arch, 0, &fn);
    wb_launch_dims dims;
    uint32_t groups, gsize;
    ck_assert_int_eq(wb_quant_dims(&f, m, k, &dims, &groups, &gsize), WB_OK);
    uint64_t st = wbt_seed() ^ (uint64_t)(m * 977 + k + bf16);
    size_t n = (size_t)(m * k), nc = (size_t)wb_acts_bytes(&f, m, k);
    uint16_t *x = malloc(n * 2);
    float *xf = malloc(n * 4), *sc = malloc((size_t)groups * 4), *gs = malloc((size_t)groups * 4);
    uint8_t *codes = malloc(n), *packed = malloc(n), *gc = malloc(nc);
    ck_assert(x && xf && sc && gs && codes && packed && gc);
    for (size_t i = 0; i < n; i++) {
        int64_t row = (int64_t)(i / (size_t)k);
        double v = ((double)(wbt_next(&st) % 2000001) / 1e6 - 1.0) * (row % 3 == 0 ? 1e-3 : row % 3 == 1 ? 1.0 : 300.0);
        if (wbt_next(&st) % 500 == 0)
            v *= 50; /* outliers */
        if (m > 1 && row == m / 2)
            v = 0; /* scale 0, codes 0 */
        x[i] = (uint16_t)wbt_double_to_half(bf16, v);
        xf[i] = (float)wbt_half_to_double(bf16, x[i]);
    }
    if (f.ags) { /* the tensor's largest |x| at one place, five eighths in: a pass that skips a part misses it */
        double top = 0;
        for (size_t i = 0; i < n; i++)
            top = fmax(top, fabs((double)xf[i]));
        size_t at = n * 5 / 8;
        x[at] = (uint16_t)wbt_double_to_half(bf16, -2 * top);
        xf[at] = (float)wbt_half_to_double(bf16, x[at]);
    }
    float global = 0, gg = -1; /* the tensor scale (ags=1): the reference's, the kernels' (poison) */
    ck_assert_int_eq(wb_reference_quantize_acts(&f, m, k, xf, codes, sc, &global), WB_OK);
    ck_assert_int_eq(wb_pack_acts(&f, m, k, codes, packed), WB_OK);
    memset(gc, 0xA5, nc);
    memset(gs, 0xFF, (size_t)groups * 4);
    uint64_t params[NPARAMS] = {0};
    params[10] = (uintptr_t)x, params[11] = (uintptr_t)gc, params[12] = (uintptr_t)gs;
    params[13] = groups, params[14] = gsize, params[15] = (uintptr_t)&gg, params[16] = (uint64_t)(n / 4);
    gbuf bufs[] = {buf_of(x, n * 2, BUF_INPUT, "activations"), buf_of(gc, nc, BUF_OUT, "codes"),
                   buf_of(gs, (size_t)groups * wb_type_file_bytes(f.as), BUF_OUT, "scales"),
                   buf_of(&gg, 4, BUF_OUT, "tensor scale")};
    if (f.ags) { /* the tensor-scale pass first (its blocks' maxima through the scale buffer, then a reduce
                  * launch, where it takes more than one block), then the quantizer reads it */
        wb_func gfn;
        wb_arena *ga = quant_func(&f, xt, arch, 1, &gfn);
        wb_launch_dims gd;
        int blocks = wb_quant_global_blocks((int64_t)(n / 4));
        wb_quant_global_dims(&gd, blocks);
        params[17] = (uintptr_t)gs, params[18] = 0;
        run_func(&gfn, &gd, params, bufs, 4, NULL, 0);
        if (blocks > 1) {
            uint64_t rp[NPARAMS];
            memcpy(rp, params, sizeof rp);
            rp[10] = (uintptr_t)gs, rp[16] = (uint64_t)blocks, rp[18] = 1;
            wb_quant_global_dims(&gd, 1);
            run_func(&gfn, &gd, rp, bufs, 4, NULL, 0);
        }
        CHECK(!memcmp(&gg, &global, 4), "quantizer %s: tensor scale %a, reference %a (%d blocks)", spec, (double)gg,
              (double)global, blocks);
        wb_arena_destroy(ga);
    }
    run_func(&fn, &dims, params, bufs, 4, NULL, 0);
    for (size_t i = 0; i < nc; i++)
        CHECK(gc[i] == packed[i], "quantizer %s x=%s %s: code byte %zu = 0x%02x, reference 0x%02x (x = %g)", spec,
              bf16 ? "bf16" : "f16", wb_arch_name(arch), i, gc[i], packed[i], (double)xf[f.a.bits == 4 ? 2 * i : i]);
    int sb = wb_type_file_bytes(f.as); /* f32, or one byte (e8m0, e4m3 block scales) */
    for (uint32_t g = 0; g < groups; g++)
        CHECK(!memcmp((uint8_t *)gs + (size_t)g * sb, (uint8_t *)sc + (size_t)g * sb, (size_t)sb),
              "quantizer %s %s: scale %u differs from the reference's (0x%08x, 0x%08x as words)", spec,
              wb_arch_name(arch), g, sb == 4 ? (unsigned)((uint32_t *)gs)[g] : ((uint8_t *)gs)[g],
              sb == 4 ? (unsigned)((uint32_t *)sc)[g] : ((uint8_t *)sc)[g]);
    for (size_t i = (size_t)groups * sb; i < (size_t)groups * 4; i++) /* past the scales: the poison */
        CHECK(((uint8_t *)gs)[i] == 0xFF, "quantizer %s: a byte past the scales was written", spec);
    free(x), free(xf), free(sc), free(gs), free(codes), free(packed), free(gc);
    wb_arena_destroy(arena);
}

START_TEST(quantizer_matches_reference)
{
    static const struct { const char *spec; wb_arch arch; int64_t m, k; } cases[] = {
        {"int8", WB_ARCH_SM90A, 7, 1024}, {"int8,ag=128", WB_ARCH_SM80, 5, 512}, {"fp8", WB_ARCH_SM90A, 4, 512},
        {"a=e5m2,ag=256,w=e4m3,ws=f32,g=0", WB_ARCH_SM89, 3, 768}, {"w4a4-int4", WB_ARCH_SM90A, 5, 256},
        {"w4a4-int4,ag=128", WB_ARCH_SM75, 2, 384},
        /* e2m1 with block scales: MX (e8m0 per 32), NVFP4's e4m3 per 16 without the tensor scale, 64, 128 */
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, 6, 512},
        {"a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16", WB_ARCH_SM90A, 5, 256},
        {"a=e2m1,ag=64,as=e8m0,w=int4,g=128", WB_ARCH_SM80, 4, 256},
        {"a=e2m1,ag=128,as=e4m3,w=e2m1,ws=e4m3,g=16", WB_ARCH_SM100A, 3, 384},
        /* and the tensor scale (ags=1): nvfp4, MX with one */
        /* one block; two (a reduce launch); five, the last one's share cut short */
        {"nvfp4", WB_ARCH_SM90A, 6, 512}, {"nvfp4", WB_ARCH_SM120A, 1, 4096}, {"nvfp4", WB_ARCH_SM100A, 9, 2048},
        {"nvfp4", WB_ARCH_SM90A, 17, 4096},
        {"a=e2m1,ag=32,as=e8m0,ags=1,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM80, 3, 256},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int bf16 = 0; bf16 < 2; bf16++)
            if (!bf16 || cases[i].arch != WB_ARCH_SM75)
                run_quant(cases[i].spec, bf16, cases[i].arch, cases[i].m, cases[i].k);
}
END_TEST

/* tcgen05 block-scaled fp4 (sm_100a, sm_103a; --mma tcgen05): NVFP4 x NVFP4 on kind::mxf4nvf4
 * .scale_vec::4X and MXFP4 x MXFP4 on kind::mxf4 .scale_vec::2X, the e2m1 codes of both operands through
 * 32B-swizzled shared tiles, the scale factors copied into tensor memory by tcgen05.cp (modelled from the
 * PTX ISA: duplicated to the four lane quarters, row i at lane i % 32 and column i / 32), negative e4m3
 * scales of either operand (their signs onto the codes), tensor scales and a bias. The heuristic's
 * config and forced ones: 16 to 256 tokens a block (two SFB chunks at 256), tails past M, one and many
 * k tiles, 3 to 8 stages, both targets. */
START_TEST(tcgen05_block_scaled_matches_reference)
{
    static const tc_case cases[] = {
        {"nvfp4", WB_ARCH_SM100A, 100, 256, 512, {.mma = WB_MMA_TCGEN05}},
        {"nvfp4,out=f16,bias=1", WB_ARCH_SM103A, 37, 128, 256, {.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 3}},
        {"nvfp4", WB_ARCH_SM103A, 5, 128, 64, {.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 3}},
        {"nvfp4,bias=1", WB_ARCH_SM100A, 300, 128, 1024, {.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4}},
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM100A, 129, 128, 512,
         {.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4}},
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM103A, 20, 256, 1024, {.mma = WB_MMA_TCGEN05}},
        {"a=e2m1,ag=32,as=e8m0,ags=1,w=e2m1,ws=e8m0,g=32,wgs=1,out=f16", WB_ARCH_SM103A, 70, 128, 128,
         {.mma = WB_MMA_TCGEN05, .m_tiles = 16, .stages = 5}},
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM100A, 16, 128, 64, {.mma = WB_MMA_TCGEN05, .m_tiles = 2,
                                                                                   .stages = 3}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case_fp4(cases[i].spec, cases[i].arch, cases[i].m, cases[i].n, cases[i].k, cases[i].cfg);
}
END_TEST

/* Thread block clusters (cfg.cluster 2: TMA multicast of the activations), before the kernel that uses
 * them: a hand-built kernel of two-block clusters, run by the interpreter as the pairs of a grid of 4 x
 * 2 blocks of 64 threads. In each block thread 0 initializes a full and an empty mbarrier per stage
 * (two stages of a 16-row box of 128 bytes), then after a cluster barrier (the peer's mbarriers must
 * be initialized before a multicast completes on them) produces: per use, it posts the whole box's
 * bytes on its full barrier and multicasts its half of the box (rows rank * 8.. of the cluster's box,
 * 1024 bytes at offset rank * 1024 of the stage) into both blocks; from the third use on it first waits
 * until both blocks' consumers have released the stage (its empty barrier). Warp 1 consumes: per use it
 * waits on its own block's full barrier, copies the stage (the swizzled image a plain TMA of the whole
 * box would have made) to its block's part of the output, meets at bar.warp.sync, and lane 0 releases
 * the stage on its own empty barrier and, through mapa, on the peer's. A cluster barrier holds both
 * blocks until neither can touch the other. mc_kernel names the mutations. */
typedef struct mc_kernel {
    int uses;           /* boxes each block reads: 1, or 4 through the two stages in turn */
    int init_sync;      /* a cluster barrier between mbarrier.init and the first multicast */
    int init_arrive;    /* that barrier's arrive (0: its wait has none before it) */
    int end_sync;       /* a cluster barrier before the end */
    int mapa_rank;      /* the rank a consumer maps the peer's empty barrier to (-1: the peer's) */
    int mask;           /* the multicast's ctaMask */
    int remote_release; /* 1: each consumer warp releases a stage on both blocks' empty barriers (each
                           expects two arrivals); 0: CTA 1's on its own alone (CTA 0's expects one) */
    int gx;             /* the grid's blocks along x */
} mc_kernel;

enum { MC_THREADS = 64, MC_STAGE = 2048, MC_HALF = 1024, MC_MBAR = 2 * MC_STAGE, MC_SMEM = MC_MBAR + 32, MC_GY = 2 };

static wb_reg mc_special(wb_func *f, const char *name)
{
    wb_reg r = wb_new_reg(f, WB_RC_B32);
    wb_emit(f, WB_OP_SPECIAL, NULL, 2, wb_r(r), wb_text(name));
    return r;
}

/* d = a op b in a new register of class rc */
static wb_reg mc_op(wb_func *f, wb_op op, const char *ty, wb_rc rc, wb_opnd a, wb_opnd b)
{
    wb_reg r = wb_new_reg(f, rc);
    wb_emit(f, op, ty, 3, wb_r(r), a, b);
    return r;
}

static wb_reg mc_mad(wb_func *f, wb_opnd a, wb_opnd b, wb_opnd c)
{
    wb_reg r = wb_new_reg(f, WB_RC_B32);
    wb_emit(f, WB_OP_MAD_LO, "u32", 4, wb_r(r), a, b, c);
    return r;
}

/* Spin until the phase of parity `parity` of the mbarrier at mb has completed. */
static void mc_wait(wb_func *f, wb_reg mb, int parity)
{
    const char *spin = wb_new_label(f, "spin");
    wb_reg done = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(spin));
    wb_emit(f, WB_OP_MBAR_TRY_WAIT, NULL, 3, wb_r(done), wb_r(mb), wb_imm(parity));
    wb_emit(f, WB_OP_BRA_IFNOT, NULL, 2, wb_r(done), wb_text(spin));
}

static void mc_cluster_sync(wb_func *f, int arrive)
{
    if (arrive)
        wb_emit(f, WB_OP_CLUSTER_ARRIVE, NULL, 0);
    wb_emit(f, WB_OP_CLUSTER_WAIT, NULL, 0);
}

/* Use it of the box: its stage (two stages in turn, one when there is a single use) and its use of
 * that stage. */
static int mc_stage(const mc_kernel *k, int it) { return k->uses > 1 ? it % 2 : 0; }
static int mc_use(const mc_kernel *k, int it) { return k->uses > 1 ? it / 2 : 0; }

/* Thread 0: the copies (see above). */
static void mc_produce(const mc_kernel *k, wb_func *f, wb_reg smem, wb_reg tmap, const wb_reg *full,
                       const wb_reg *empty)
{
    wb_reg cx = mc_special(f, "%ctaid.x"), cy = mc_special(f, "%ctaid.y"), ncx = mc_special(f, "%nctaid.x");
    wb_reg rank = mc_special(f, "%cluster_ctarank"), nrank = mc_special(f, "%cluster_nctarank");
    wb_reg bytes = mc_op(f, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(nrank), wb_imm(MC_HALF));
    /* the cluster's index in the grid: (x / 2, y) */
    wb_reg ci = mc_mad(f, wb_r(cy), wb_r(mc_op(f, WB_OP_SHR, "u32", WB_RC_B32, wb_r(ncx), wb_imm(1))),
                       wb_r(mc_op(f, WB_OP_SHR, "u32", WB_RC_B32, wb_r(cx), wb_imm(1))));
    wb_reg row0 = mc_mad(f, wb_r(ci), wb_imm(16 * k->uses), wb_r(mc_op(f, WB_OP_SHL, "u32", WB_RC_B32, wb_r(rank),
                                                                        wb_imm(3))));
    wb_reg half = mc_mad(f, wb_r(rank), wb_imm(MC_HALF), wb_r(smem));
    for (int it = 0; it < k->uses; it++) {
        int s = mc_stage(k, it), u = mc_use(k, it);
        if (u > 0) /* both blocks' consumers are done with use u - 1 */
            mc_wait(f, empty[s], (u - 1) & 1);
        wb_emit(f, WB_OP_MBAR_EXPECT_TX, NULL, 2, wb_r(full[s]), wb_r(bytes));
        wb_reg row = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(row0), wb_imm(16 * it));
        wb_reg dst = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(half), wb_imm(s * MC_STAGE));
        wb_emit(f, WB_OP_TMA_LOAD_2D_MC, NULL, 6, wb_r(dst), wb_r(tmap), wb_imm(0), wb_r(row), wb_r(full[s]),
                wb_imm(k->mask));
    }
}

/* Warp 1: the reads, the output, the releases (see above). */
static void mc_consume(const mc_kernel *k, wb_func *f, wb_reg tid, wb_reg smem, const wb_reg *empty,
                       const wb_reg *full)
{
    wb_reg cx = mc_special(f, "%ctaid.x"), cy = mc_special(f, "%ctaid.y"), ncx = mc_special(f, "%nctaid.x");
    wb_reg rank = mc_special(f, "%cluster_ctarank");
    wb_reg lane = mc_op(f, WB_OP_SUB, "u32", WB_RC_B32, wb_r(tid), wb_imm(32));
    wb_reg lead = mc_op(f, WB_OP_SETP_EQ, "u32", WB_RC_PRED, wb_r(lane), wb_imm(0)), remote = lead;
    if (!k->remote_release) /* CTA 0's warp alone releases remotely */
        remote = mc_op(f, WB_OP_AND, "pred", WB_RC_PRED, wb_r(lead),
                       wb_r(mc_op(f, WB_OP_SETP_EQ, "u32", WB_RC_PRED, wb_r(rank), wb_imm(0))));
    wb_reg peer = k->mapa_rank < 0 ? mc_op(f, WB_OP_XOR, "b32", WB_RC_B32, wb_r(rank), wb_imm(1))
                                   : mc_op(f, WB_OP_MOV, "u32", WB_RC_B32, wb_imm(k->mapa_rank), wb_imm(0));
    wb_reg sl = mc_mad(f, wb_r(lane), wb_imm(4), wb_r(smem));
    wb_reg po = wb_new_reg(f, WB_RC_B64), out = wb_new_reg(f, WB_RC_B64);
    wb_emit(f, WB_OP_LD_PARAM, "u64", 2, wb_r(po), wb_text("p_out"));
    wb_emit(f, WB_OP_CVTA_GLOBAL, NULL, 2, wb_r(out), wb_r(po));
    wb_reg cta = mc_mad(f, wb_r(cy), wb_r(ncx), wb_r(cx));
    wb_reg ob = mc_op(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(out),
                      wb_r(mc_op(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(cta), wb_imm(k->uses * MC_STAGE))));
    ob = mc_op(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(ob),
               wb_r(mc_op(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(lane), wb_imm(4))));
    for (int it = 0; it < k->uses; it++) {
        int s = mc_stage(k, it);
        mc_wait(f, full[s], mc_use(k, it) & 1);
        for (int q = 0; q < MC_STAGE / 128; q++) {
            wb_reg v = wb_new_reg(f, WB_RC_B32);
            wb_reg at = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(sl), wb_imm(s * MC_STAGE + 128 * q));
            wb_emit(f, WB_OP_LD_SHARED, "u32", 2, wb_r(v), wb_r(at));
            wb_reg g = mc_op(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(ob), wb_imm(it * MC_STAGE + 128 * q));
            wb_emit(f, WB_OP_ST_GLOBAL, "u32", 2, wb_r(g), wb_r(v));
        }
        wb_emit(f, WB_OP_BAR_WARP_SYNC, NULL, 0);
        wb_emit(f, WB_OP_MBAR_ARRIVE, NULL, 1, wb_r(empty[s]));
        wb_guard_last(f, lead, 0);
        wb_reg there = wb_new_reg(f, WB_RC_B32);
        wb_emit(f, WB_OP_MAPA, NULL, 3, wb_r(there), wb_r(empty[s]), wb_r(peer));
        wb_emit(f, WB_OP_MBAR_ARRIVE_REMOTE, NULL, 1, wb_r(there));
        wb_guard_last(f, remote, 0);
    }
}

static void mc_build(const mc_kernel *k, wb_func *f)
{
    wb_emit(f, WB_OP_GRIDDEP_WAIT, NULL, 0);
    wb_reg tid = mc_special(f, "%tid.x"), rank = mc_special(f, "%cluster_ctarank");
    wb_reg smem = wb_new_reg(f, WB_RC_B32), tmap = wb_new_reg(f, WB_RC_B64);
    wb_emit(f, WB_OP_SMEM_BASE, NULL, 2, wb_r(smem), wb_text("smem"));
    wb_emit(f, WB_OP_CVTA_PARAM, NULL, 2, wb_r(tmap),
            wb_r(mc_op(f, WB_OP_MOV, "u64", WB_RC_B64, wb_text("p_tmap"), wb_imm(0))));
    wb_reg first = mc_op(f, WB_OP_SETP_EQ, "u32", WB_RC_PRED, wb_r(tid), wb_imm(0)), full[2], empty[2];
    wb_opnd count = k->remote_release ? wb_imm(2) : wb_r(mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(rank), wb_imm(1)));
    for (int s = 0; s < 2; s++) {
        full[s] = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(smem), wb_imm(MC_MBAR + 8 * s));
        empty[s] = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(smem), wb_imm(MC_MBAR + 16 + 8 * s));
        wb_emit(f, WB_OP_MBAR_INIT, NULL, 2, wb_r(full[s]), wb_imm(1));
        wb_guard_last(f, first, 0);
        wb_emit(f, WB_OP_MBAR_INIT, NULL, 2, wb_r(empty[s]), count);
        wb_guard_last(f, first, 0);
    }
    wb_emit(f, WB_OP_FENCE_MBAR_INIT, NULL, 0);
    if (k->init_sync)
        mc_cluster_sync(f, k->init_arrive);
    const char *consume = wb_new_label(f, "consume"), *finish = wb_new_label(f, "finish");
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(mc_op(f, WB_OP_SETP_GE, "u32", WB_RC_PRED, wb_r(tid), wb_imm(32))),
            wb_text(consume));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(mc_op(f, WB_OP_SETP_NE, "u32", WB_RC_PRED, wb_r(tid), wb_imm(0))),
            wb_text(finish));
    mc_produce(k, f, smem, tmap, full, empty);
    wb_emit(f, WB_OP_BRA, NULL, 1, wb_text(finish));
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(consume));
    mc_consume(k, f, tid, smem, empty, full);
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(finish));
    if (k->end_sync)
        mc_cluster_sync(f, 1);
    wb_emit(f, WB_OP_RET, NULL, 0);
}

/* Build the kernel, run it on a random 128-byte-wide matrix (rows for every cluster's boxes) and
 * check that each block's output holds, per use, the image of its cluster's box under the 128B
 * swizzle: byte b of chunk j of box row r at 128 r + 16 (j ^ (r % 8)) + b. */
static void mc_run(const mc_kernel *k)
{
    wb_arena *arena = wb_arena_create();
    ck_assert_ptr_nonnull(arena);
    wb_func f;
    wb_func_init(&f, arena);
    f.target = wb_target_get(WB_ARCH_SM90A);
    mc_build(k, &f);
    ck_assert(!f.oom);
    int gx = k->gx ? k->gx : 4, blocks = gx * MC_GY;
    int64_t rows = (int64_t)(gx / 2) * MC_GY * k->uses * 16;
    size_t obytes = (size_t)blocks * (size_t)k->uses * MC_STAGE;
    uint8_t *src = malloc((size_t)rows * 128), *out = malloc(obytes);
    ck_assert(src && out);
    uint64_t st = wbt_seed();
    for (int64_t i = 0; i < rows * 128; i++)
        src[i] = (uint8_t)wbt_next(&st);
    memset(out, 0xFF, obytes);
    uint64_t params[NPARAMS] = {(uintptr_t)out};
    gbuf bufs[] = {buf_of(out, obytes, BUF_OUT, "output"), buf_of(src, (size_t)rows * 128, BUF_INPUT, "source")};
    fake_tmap tm = {.base = (uintptr_t)src, .rows = rows, .cols = 128, .elem = 1, .box_rows = 8, .box_cols = 128};
    wb_launch_dims d = {{(unsigned)gx, MC_GY, 1}, {MC_THREADS, 1, 1}, MC_SMEM};
    run_func(&f, &d, params, bufs, 2, &tm, 2);
    for (int b = 0; b < blocks; b++)
        for (int it = 0; it < k->uses; it++) {
            int64_t box = (int64_t)(b / gx * (gx / 2) + b % gx / 2) * k->uses + it;
            const uint8_t *img = out + ((size_t)b * (size_t)k->uses + (size_t)it) * MC_STAGE;
            for (int r = 0; r < 16; r++)
                for (int j = 0; j < 8; j++)
                    for (int q = 0; q < 16; q++)
                        CHECK(img[128 * r + 16 * (j ^ (r & 7)) + q] == src[(box * 16 + r) * 128 + 16 * j + q],
                              "cluster kernel: block %d use %d: box row %d byte %d is 0x%02x, want 0x%02x", b, it, r,
                              16 * j + q, img[128 * r + 16 * (j ^ (r & 7)) + q],
                              src[(box * 16 + r) * 128 + 16 * j + q]);
        }
    free(src), free(out);
    wb_arena_destroy(arena);
}

static void mc_run_any(const void *k) { mc_run(k); }

/* The hand-built cluster kernel runs (one use of a stage; four through two stages, refilled only once
 * both blocks' consumers have released them), and each of its mutants fails with its message: no
 * cluster barrier after mbarrier.init (the multicast finds the peer's mbarrier uninitialized); none
 * before the end (CTA 1 ends first here, and CTA 0's remote release arrives on its mbarrier after);
 * mapa to rank 2; a multicast mask with rank 2, or none; a mask of CTA 0 alone (both halves land there,
 * none in CTA 1, whose consumers wait for their bytes forever: the cluster is stuck); a cluster wait
 * with no arrive; an odd grid.x; and CTA 1's consumers releasing a stage to their own block alone,
 * which CTA 0's next multicast into it then overwrites: a write-after-read race, although CTA 1's own
 * producer is ordered. */
START_TEST(cluster_multicast_kernel)
{
    const mc_kernel one = {.uses = 1, .init_sync = 1, .init_arrive = 1, .end_sync = 1, .mapa_rank = -1, .mask = 3,
                           .remote_release = 1};
    mc_kernel four = one;
    four.uses = 4;
    mc_run(&one);
    mc_run(&four);
    static const struct {
        const char *what, *want, *want2;
        int uses, init_sync, init_arrive, end_sync, mapa_rank, mask, remote_release, gx;
    } mutants[] = {
        {"no cluster barrier after init", "thread 0 of CTA 0 (insn", "no mbarrier was initialized at shared 4096 of "
         "CTA 1", 1, 0, 1, 1, -1, 3, 1, 0},
        {"no cluster barrier at the end", "thread 32 of CTA 0 (insn", "an mbarrier arrival into CTA 1, whose threads "
         "have all ended", 1, 1, 1, 0, -1, 3, 1, 0},
        {"mapa rank 2", "mapa to rank 2, outside the cluster of 2 CTAs", NULL, 1, 1, 1, 1, 2, 3, 1, 0},
        {"multicast mask 5", "multicast ctaMask 0x5 names a rank outside the cluster", NULL, 1, 1, 1, 1, -1, 5, 1, 0},
        {"multicast mask 0", "multicast ctaMask 0 names no CTA", NULL, 1, 1, 1, 1, -1, 0, 1, 0},
        {"multicast to CTA 0 alone", "the cluster of blocks (0, 0) and (1, 0) is stuck", "CTA 1: 64 threads live, 0 at "
         "a barrier; warp 0: 32 lanes at insn 128 (barrier.cluster.wait); warp 1: 32 lanes at insn 56 (mbarrier spin) "
         "on mbarrier 0, parity 0: 0 phases done, 0 arrivals and 2048 bytes to come", 1, 1, 1, 1, -1, 1, 1, 0},
        {"cluster wait with no arrive", "barrier.cluster.wait with no barrier.cluster.arrive before it", NULL, 1, 1, 0,
         1, -1, 3, 1, 0},
        {"odd grid.x", "needs an even grid.x, not 3", NULL, 1, 1, 1, 1, -1, 3, 1, 3},
        {"CTA 1 releases to itself alone", "thread 0 of CTA 0's async copy (insn", "overwrites shared 0 of CTA 1, "
         "which thread 32 of CTA 1 read", 4, 1, 1, 1, -1, 3, 0, 0},
    };
    for (size_t i = 0; i < sizeof mutants / sizeof mutants[0]; i++) {
        const mc_kernel k = {mutants[i].uses, mutants[i].init_sync, mutants[i].init_arrive, mutants[i].end_sync,
                             mutants[i].mapa_rank, mutants[i].mask, mutants[i].remote_release, mutants[i].gx};
        expect_failure(mc_run_any, &k, mutants[i].what, mutants[i].want, mutants[i].want2);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("w8a8 kernel");
    TCase *t = tcase_create("w8a8 kernel");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, w8a8_kernel_matches_reference);
    tcase_add_test(t, quantizer_matches_reference);
    tcase_add_test(t, w8a8_kernel_forced_configs);
    tcase_add_test(t, w4a8_kernel_matches_reference);
    tcase_add_test(t, w8a8_wgmma_kernel_matches_reference);
    tcase_add_test(t, w8a8_groups_match_reference);
    tcase_add_test(t, fp8_kernel_matches_reference);
    tcase_add_test(t, w4a8_fp8_kernel_matches_reference);
    tcase_add_test(t, w8a8_act_groups_match_reference);
    tcase_add_test(t, w4a8_e2m1_matches_reference);
    tcase_add_test(t, w4a4_kernel_matches_reference);
    tcase_add_test(t, fp4_acts_kernel_matches_reference);
    tcase_add_test(t, wgmma16_kernel_matches_reference);
    tcase_add_test(t, a16_kernel_k_slices);
    tcase_add_test(t, w8a8_k_slices);
    tcase_add_test(t, tcgen05_kernel_matches_reference);
    suite_add_tcase(s, t);
    /* its own case, so that CK_RUN_CASE=tma runs the TMA pipeline alone */
    TCase *tma = tcase_create("tma");
    tcase_set_timeout(tma, 600);
    tcase_add_test(tma, tma_kernel_matches_reference);
    suite_add_tcase(s, tma);
    TCase *sk = tcase_create("split_k"); /* CK_RUN_CASE=split_k: --split-k 2 alone */
    tcase_set_timeout(sk, 600);
    tcase_add_test(sk, split_k_matches_reference);
    tcase_add_test(sk, split_k_mma_sync_matches_reference);
    suite_add_tcase(s, sk);
    TCase *cl = tcase_create("cluster"); /* CK_RUN_CASE=cluster: the interpreter's thread block clusters */
    tcase_set_timeout(cl, 600);
    tcase_add_test(cl, cluster_multicast_kernel);
    tcase_add_test(cl, tma_cluster_matches_reference);
    tcase_add_test(cl, tma_cluster4_matches_reference);
    suite_add_tcase(s, cl);
    TCase *bs = tcase_create("tcgen05 block-scaled"); /* CK_RUN_CASE="tcgen05 block-scaled" */
    tcase_set_timeout(bs, 600);
    tcase_add_test(bs, tcgen05_block_scaled_matches_reference);
    suite_add_tcase(s, bs);
    return wbt_run(s);
}
