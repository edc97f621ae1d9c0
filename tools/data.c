/* Host-side data of one GEMM: which interchange files a format uses and their sizes (contract
 * section 3), the bytes a GEMM moves (for effective bandwidth), and random test data. */
#include "tools/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const cli_file_opt[F_COUNT] = {
    [F_A] = "--a",         [F_ASCALE] = "--a-scale", [F_AGLOBAL] = "--a-global",
    [F_W] = "--w",         [F_WSCALE] = "--w-scale", [F_WZERO] = "--w-zero",
    [F_WGLOBAL] = "--w-global", [F_BIAS] = "--bias", [F_OUT] = "--out",
};

int cli_acts_quantized(const wb_format *f)
{
    return f->a.kind != WB_KIND_F16 && f->a.kind != WB_KIND_BF16;
}

static void set_file(cli_layout *l, cli_file i, wb_type t, int64_t count)
{
    l->type[i] = t;
    l->count[i] = count;
    l->bytes[i] = (size_t)count * (size_t)wb_type_file_bytes(t);
    /* One-byte codes of fewer than 8 bits must have zero high bits. */
    if (wb_type_file_bytes(t) == 1 && t.bits < 8 && t.kind != WB_KIND_E8M0)
        l->code_bits[i] = t.bits;
}

void cli_file_layout(const wb_format *f, int64_t m, int64_t n, int64_t k, cli_layout *l)
{
    static const wb_type f32 = {WB_KIND_F32, 32, 0, 0};
    memset(l, 0, sizeof *l);
    set_file(l, F_A, f->a, m * k);
    if (cli_acts_quantized(f))
        set_file(l, F_ASCALE, f->as, m * (f->ag ? k / f->ag : 1));
    if (f->ags)
        set_file(l, F_AGLOBAL, f32, 1);
    set_file(l, F_W, f->w, n * k);
    int64_t gn = f->g && f->gn > 0 ? f->gn : 1;
    int64_t nscale = (n / gn) * (f->g ? k / f->g : 1);
    set_file(l, F_WSCALE, f->ws, nscale);
    if (f->zp == WB_ZP_INT)
        set_file(l, F_WZERO, f->w, nscale);
    else if (f->zp == WB_ZP_FP)
        set_file(l, F_WZERO, f->ws, nscale);
    if (f->wgs)
        set_file(l, F_WGLOBAL, f32, 1);
    if (f->bias)
        set_file(l, F_BIAS, f->out, n);
    set_file(l, F_OUT, f->out, m * n);
}

/* Bits one element occupies once packed (codes at their width, values at their storage size). */
static double packed_bits(wb_type t) { return t.bits; }

double cli_gemm_bytes(const wb_format *f, int64_t m, int64_t n, int64_t k, double *weight_side)
{
    cli_layout l;
    cli_file_layout(f, m, n, k, &l);
    double w = 0, total = 0;
    for (int i = 0; i < F_COUNT; i++) {
        double b = l.count[i] * packed_bits(l.type[i]) / 8.0;
        total += b;
        if (i == F_W || i == F_WSCALE || i == F_WZERO || i == F_WGLOBAL || i == F_BIAS)
            w += b;
    }
    if (weight_side)
        *weight_side = w;
    return total;
}

/* ---- random numbers: splitmix64 */

uint64_t cli_rng_next(cli_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double cli_rng_uniform(cli_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (double)(cli_rng_next(r) >> 11) * 0x1.0p-53;
}

void cli_put_value(wb_type t, void *base, size_t i, double v)
{
    switch (wb_type_file_bytes(t)) {
    case 2:
        ((uint16_t *)base)[i] = t.kind == WB_KIND_BF16 ? wb_bf16_from_double(v) : wb_f16_from_double(v);
        break;
    case 4: ((float *)base)[i] = (float)v; break;
    default: ((uint8_t *)base)[i] = (uint8_t)wb_type_encode(t, v); break;
    }
}

double cli_get_value(wb_type t, const void *base, size_t i)
{
    switch (wb_type_file_bytes(t)) {
    case 2: {
        uint16_t h = ((const uint16_t *)base)[i];
        return t.kind == WB_KIND_BF16 ? wb_bf16_to_double(h) : wb_f16_to_double(h);
    }
    case 4: return ((const float *)base)[i];
    default: return wb_type_decode(t, ((const uint8_t *)base)[i]);
    }
}

/* A random code of a 1-byte type whose value is finite. */
/* Random elements: 1-byte types get uniform codes among those with a finite value (a table of them,
 * built once per call: weight tensors have tens of millions of codes; `w`, when given, values weight
 * codes through the format, which holds a user table); wider types uniform values in [lo, hi]. */
static void fill_random(wb_type t, const wb_format *w, void *base, int64_t count, double lo, double hi, cli_rng *r)
{
    if (wb_type_file_bytes(t) != 1) {
        for (int64_t i = 0; i < count; i++)
            cli_put_value(t, base, (size_t)i, cli_rng_uniform(r, lo, hi));
        return;
    }
    uint8_t finite[256];
    unsigned nfinite = 0, ncodes = t.bits >= 8 ? 256u : 1u << t.bits;
    for (unsigned c = 0; c < ncodes; c++)
        if (isfinite(w ? wb_format_weight_value(w, c) : wb_type_decode(t, c)))
            finite[nfinite++] = (uint8_t)c;
    for (int64_t i = 0; i < count; i++) /* every type has finite codes (zero among them) */
        ((uint8_t *)base)[i] = nfinite ? finite[cli_rng_next(r) % nfinite] : 0;
}

/* Scales: 0.5..1.5 times 1/8, one in ten negative. */
static void fill_scales(wb_type t, void *base, int64_t count, cli_rng *r)
{
    for (int64_t i = 0; i < count; i++) {
        double v = cli_rng_uniform(r, 0.5, 1.5) / 8;
        if (cli_rng_next(r) % 10 == 0)
            v = -v;
        cli_put_value(t, base, (size_t)i, v);
    }
}

int cli_host_alloc(cli_host *h, const wb_format *f, int64_t m, int64_t n, int64_t k)
{
    memset(h, 0, sizeof *h);
    h->f = *f;
    h->m = m, h->n = n, h->k = k;
    cli_file_layout(f, m, n, k, &h->lay);
    for (int i = 0; i < F_COUNT; i++) {
        if (!h->lay.bytes[i])
            continue;
        h->buf[i] = calloc(1, h->lay.bytes[i]);
        if (!h->buf[i]) {
            cli_host_free(h);
            return cli_fail(CLI_FAILED, "out of host memory (%zu bytes)", h->lay.bytes[i]);
        }
    }
    h->ha.a = h->buf[F_A];
    h->ha.a_scale = h->buf[F_ASCALE];
    h->ha.a_global = h->buf[F_AGLOBAL];
    h->hw.w = h->buf[F_W];
    h->hw.w_scale = h->buf[F_WSCALE];
    h->hw.w_zero = h->buf[F_WZERO];
    h->hw.w_global = h->buf[F_WGLOBAL];
    h->hw.bias = h->buf[F_BIAS];
    return 0;
}

void cli_host_random_acts(cli_host *h, cli_rng *r)
{
    fill_random(h->f.a, NULL, h->buf[F_A], h->lay.count[F_A], -1, 1, r);
    if (h->buf[F_ASCALE])
        for (int64_t i = 0; i < h->lay.count[F_ASCALE]; i++)
            cli_put_value(h->f.as, h->buf[F_ASCALE], (size_t)i, cli_rng_uniform(r, 0.5, 1.5) / 16);
    if (h->buf[F_AGLOBAL])
        *(float *)h->buf[F_AGLOBAL] = (float)cli_rng_uniform(r, 0.5, 2);
}

void cli_host_random_weights(cli_host *h, cli_rng *r)
{
    const wb_format *f = &h->f;
    fill_random(f->w, f, h->buf[F_W], h->lay.count[F_W], -1, 1, r);
    fill_scales(f->ws, h->buf[F_WSCALE], h->lay.count[F_WSCALE], r);
    if (f->zp == WB_ZP_INT) {
        fill_random(f->w, NULL, h->buf[F_WZERO], h->lay.count[F_WZERO], 0, 0, r);
    } else if (f->zp == WB_ZP_FP) {
        /* A zero inside the value range of the weight codes. */
        double lo = 0, hi = 0;
        for (uint32_t c = 0; c < (1u << (f->w.bits < 8 ? f->w.bits : 8)); c++) {
            double v = wb_format_weight_value(f, c);
            if (isfinite(v))
                lo = fmin(lo, v), hi = fmax(hi, v);
        }
        fill_random(f->ws, NULL, h->buf[F_WZERO], h->lay.count[F_WZERO], lo / 2, hi / 2, r);
    }
    if (h->buf[F_WGLOBAL])
        *(float *)h->buf[F_WGLOBAL] = (float)cli_rng_uniform(r, 0.5, 2);
    if (h->buf[F_BIAS])
        fill_random(f->out, NULL, h->buf[F_BIAS], h->lay.count[F_BIAS], -1, 1, r);
}

void cli_host_free(cli_host *h)
{
    for (int i = 0; i < F_COUNT; i++) {
        free(h->buf[i]);
        h->buf[i] = NULL;
    }
}

wb_status cli_upload_acts(wb_gpu *gpu, const wb_format *f, int64_t m, int64_t k, const void *codes, size_t bytes,
                          wb_devptr dst)
{
    if (f->a.bits != 4)
        return wb_gpu_upload(gpu, dst, codes, bytes);
    size_t packed_bytes = (size_t)wb_acts_bytes(f, m, k);
    void *packed = malloc(packed_bytes ? packed_bytes : 1);
    if (!packed)
        return WB_ERR_NOMEM;
    wb_status s = wb_pack_acts(f, m, k, codes, packed);
    if (s == WB_OK)
        s = wb_gpu_upload(gpu, dst, packed, packed_bytes);
    free(packed);
    return s;
}
