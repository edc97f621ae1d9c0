/* The reference dynamic quantizer of activations: f32 values -> codes of the activation type, one
 * scale per token or per token and `ag` elements of K, and the tensor scale with ags=1, in the
 * interchange storage of contract section 3. Round to nearest even with saturation throughout.
 *
 *   tensor scale (ags=1): amax(x) / (max_a * 448) when as=e4m3 (the NVFP4 recipe: the group scales
 *                         then use e4m3's whole range), else amax(x) / max_a; 1 when x is all zero
 *   group scale s:        f32 and e4m3: amax(group) / max_a / tensor scale, rounded to the type
 *                         e8m0 (OCP MX): 2^(floor(log2(amax(group) / tensor scale)) - emax), emax the
 *                         exponent of max_a (e2m1: 2, e4m3: 8, s8: 6); values above max_a * s saturate
 *   code:                 encode_a(x / (s * tensor scale)); 0 where s is 0
 * max_a is the type's largest finite value (e4m3 448, e5m2 57344, e2m1 6, s8 127, s4 7). */
#include "dsl/common.h"

#include <math.h>
#include <string.h>

static void store(wb_type t, void *base, int64_t i, uint32_t code)
{
    uint8_t *b = (uint8_t *)base + (size_t)i * (size_t)wb_type_file_bytes(t);
    for (int j = 0; j < wb_type_file_bytes(t); j++)
        b[j] = (uint8_t)(code >> (8 * j));
}

static double largest(wb_type t) { return wb_type_decode(t, wb_type_encode(t, 1e300)); }

/* The group scale in the `as` type: its code and its value. */
static uint32_t group_scale(const wb_format *f, double amax, double global, double max_a, double *value)
{
    if (f->as.kind == WB_KIND_E8M0) {
        int e = -127;
        if (amax > 0)
            e = (int)floor(log2(amax / global)) - (int)floor(log2(max_a));
        e = e < -127 ? -127 : e > 127 ? 127 : e;
        *value = ldexp(1.0, e);
        return (uint32_t)(e + 127);
    }
    uint32_t code = wb_type_encode(f->as, amax / max_a / global);
    *value = wb_type_decode(f->as, code);
    return code;
}

wb_status wb_reference_quantize_acts(const wb_format *f, int64_t m, int64_t k, const float *x, void *codes,
                                     void *scales, float *global)
{
    if (!f || !x || !codes || !scales || m < 1 || k < 1)
        return wb_fail(WB_ERR_INVALID, "wb_reference_quantize_acts: bad argument");
    if (f->a.kind == WB_KIND_F16 || f->a.kind == WB_KIND_BF16)
        return wb_fail(WB_ERR_INVALID, "wb_reference_quantize_acts: a=%s activations are not quantized",
                       f->a.kind == WB_KIND_F16 ? "f16" : "bf16");
    if (f->ags && !global)
        return wb_fail(WB_ERR_INVALID, "wb_reference_quantize_acts: ags=1 needs the tensor scale output");
    if (f->ag && k % f->ag)
        return wb_fail(WB_ERR_INVALID, "K=%lld is not a multiple of ag=%d", (long long)k, f->ag);
    for (int64_t i = 0; i < m * k; i++)
        if (!isfinite(x[i]))
            return wb_fail(WB_ERR_INVALID, "wb_reference_quantize_acts: x[%lld] is not finite", (long long)i);
    double max_a = largest(f->a), g = 1.0;
    if (f->ags) {
        double amax = 0;
        for (int64_t i = 0; i < m * k; i++)
            amax = fmax(amax, fabs(x[i]));
        g = amax > 0 ? (double)(float)(amax / max_a / (f->as.kind == WB_KIND_FLOAT ? largest(f->as) : 1.0)) : 1.0;
        *global = (float)g;
    }
    int64_t group = f->ag ? f->ag : k;
    for (int64_t r = 0; r < m; r++)
        for (int64_t k0 = 0; k0 < k; k0 += group) {
            const float *v = x + r * k + k0;
            double amax = 0, s;
            for (int64_t j = 0; j < group; j++)
                amax = fmax(amax, fabs(v[j]));
            store(f->as, scales, r * (k / group) + k0 / group, group_scale(f, amax, g, max_a, &s));
            for (int64_t j = 0; j < group; j++) {
                uint32_t c = s > 0 ? wb_type_encode(f->a, v[j] / (s * g)) : wb_type_encode(f->a, 0.0);
                ((uint8_t *)codes)[r * k + k0 + j] = (uint8_t)(c & ((1u << f->a.bits) - 1));
            }
        }
    return WB_OK;
}
