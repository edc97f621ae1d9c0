/* The float64 reference of the contract semantics (section 2) over the canonical host arrays of
 * section 3: out[m][n] = sum_k A(m,k) * W(n,k) + bias[n], before rounding to the out type.
 *
 * wb_reference_element() evaluates one output straight from the formulas; wb_reference_gemm()
 * decodes A once into doubles and W a few rows at a time, then runs plain dot products. Both add
 * the products in the same order (k = 0, 1, ...) from the same helpers, so they agree exactly.
 */
#include "dsl/common.h"

#include <math.h>
#include <stdlib.h>

/* Element i of an array of type t in its interchange storage (little endian). */
static double load(wb_type t, const void *p, int64_t i)
{
    const uint8_t *b = p;
    switch (wb_type_file_bytes(t)) {
    case 2: return wb_type_decode(t, (uint32_t)b[2 * i] | (uint32_t)b[2 * i + 1] << 8);
    case 4:
        return wb_type_decode(t, (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                                     (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24);
    default: return wb_type_decode(t, b[i]);
    }
}

static int acts_quantized(const wb_format *f)
{
    return f->a.kind != WB_KIND_F16 && f->a.kind != WB_KIND_BF16;
}

/* A(m,k) = val_a * ascale * aglobal. */
static double act_value(const wb_format *f, const wb_host_acts *x, int64_t m, int64_t k, int64_t kt)
{
    double v = load(f->a, x->a, m * kt + k);
    if (!acts_quantized(f))
        return v;
    int64_t si = f->ag ? m * (kt / f->ag) + k / f->ag : m;
    v *= load(f->as, x->a_scale, si);
    return f->ags ? v * (double)x->a_global[0] : v;
}

/* W(n,k) = (val_w - zero) * wscale * wglobal. */
static double weight_value(const wb_format *f, const wb_host_weights *w, int64_t n, int64_t k, int64_t kt)
{
    double v = wb_format_weight_value(f, w->w[n * kt + k]);
    int64_t gi = f->g ? (n / f->gn) * (kt / f->g) + k / f->g : n;
    if (f->zp == WB_ZP_INT)
        v -= (double)(((const uint8_t *)w->w_zero)[gi] & ((1u << f->w.bits) - 1));
    else if (f->zp == WB_ZP_FP)
        v -= load(f->ws, w->w_zero, gi);
    v *= load(f->ws, w->w_scale, gi);
    return f->wgs ? v * (double)w->w_global[0] : v;
}

static double bias_value(const wb_format *f, const wb_host_weights *w, int64_t n)
{
    return f->bias ? load(f->out, w->bias, n) : 0.0;
}

/* Every array the format needs is there (and only those are read). */
static wb_status check_arrays(const wb_format *f, const wb_host_acts *x, const wb_host_weights *w)
{
    const char *missing = !x || !x->a ? "a"
                          : acts_quantized(f) && !x->a_scale ? "a_scale"
                          : acts_quantized(f) && f->ags && !x->a_global ? "a_global"
                          : !w || !w->w ? "w"
                          : !w->w_scale ? "w_scale"
                          : f->zp != WB_ZP_NONE && !w->w_zero ? "w_zero"
                          : f->wgs && !w->w_global ? "w_global"
                          : f->bias && !w->bias ? "bias"
                          : NULL;
    if (missing)
        return wb_fail(WB_ERR_INVALID, "reference: the format needs %s, which is NULL", missing);
    return WB_OK;
}

double wb_reference_element(const wb_format *f, int64_t m, int64_t n, int64_t k_total,
                            const wb_host_acts *x, const wb_host_weights *w)
{
    if (!f || check_arrays(f, x, w))
        return NAN;
    double sum = 0;
    for (int64_t k = 0; k < k_total; k++)
        sum += act_value(f, x, m, k, k_total) * weight_value(f, w, n, k, k_total);
    return sum + bias_value(f, w, n);
}

enum { NB = 8 }; /* W rows per pass: each A row is read once per NB outputs */

/* out[m][n0..n0+nb) for every m, from nb decoded W rows. */
static void dot_block(const double *ad, const double *wd, int64_t m, int64_t n, int64_t k, int64_t n0,
                      int nb, const double *bias, double *out)
{
    for (int64_t i = 0; i < m; i++) {
        const double *ar = ad + i * k;
        double s[NB] = {0};
        if (nb == NB) {
            for (int64_t j = 0; j < k; j++)
                for (int r = 0; r < NB; r++)
                    s[r] += ar[j] * wd[r * k + j];
        } else {
            for (int r = 0; r < nb; r++)
                for (int64_t j = 0; j < k; j++)
                    s[r] += ar[j] * wd[r * k + j];
        }
        for (int r = 0; r < nb; r++)
            out[i * n + n0 + r] = s[r] + bias[r];
    }
}

wb_status wb_reference_gemm(const wb_format *f, int64_t m, int64_t n, int64_t k,
                            const wb_host_acts *x, const wb_host_weights *w, double *out)
{
    if (!f || !out)
        return wb_fail(WB_ERR_INVALID, "wb_reference_gemm: format or out is NULL");
    wb_status s = wb_format_validate(f);
    if (!s)
        s = wb_format_check_shape(f, m, n, k);
    if (!s)
        s = check_arrays(f, x, w);
    if (s)
        return s;
    double *ad = malloc((size_t)m * (size_t)k * sizeof *ad);
    double *wd = malloc((size_t)NB * (size_t)k * sizeof *wd);
    if (!ad || !wd) {
        free(ad);
        free(wd);
        return wb_fail(WB_ERR_NOMEM, "reference: out of memory for %lld x %lld doubles", (long long)m,
                       (long long)k);
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < k; j++)
            ad[i * k + j] = act_value(f, x, i, j, k);
    for (int64_t n0 = 0; n0 < n; n0 += NB) {
        int nb = n - n0 < NB ? (int)(n - n0) : NB;
        double bias[NB];
        for (int r = 0; r < nb; r++) {
            for (int64_t j = 0; j < k; j++)
                wd[r * k + j] = weight_value(f, w, n0 + r, j, k);
            bias[r] = bias_value(f, w, n0 + r);
        }
        dot_block(ad, wd, m, n, k, n0, nb, bias, out);
    }
    free(ad);
    free(wd);
    return WB_OK;
}
