/* wb_gpu_quantize_acts: the activation quantizer (lower/lower_quant.c) of a format's activation type
 * and an input type, JIT-compiled on its first call on a wb_gpu and kept, then launched on the
 * caller's stream with no allocation and no synchronization. */
#include <stdlib.h>

#include "lower/lower.h"
#include "runtime/gpu_internal.h"

/* What the kernel is specialized on: the code type and the input type; for e2m1, the block scale's type
 * and the block size too (lower_quant_fp4) */
static uint32_t quant_key(const wb_format *f, wb_type x)
{
    uint32_t fp4 = (uint32_t)wb_format_fp4_acts(f);
    return (uint32_t)f->a.kind | (uint32_t)f->a.bits << 4 | (uint32_t)f->a.ebits << 8 | (uint32_t)f->a.mbits << 12 |
           (uint32_t)x.kind << 16 | (fp4 ? (uint32_t)f->as.kind << 20 | (uint32_t)f->ag << 24 : 0);
}

static void *cached(wb_gpu *gpu, uint32_t key)
{
    void *fn = NULL;
    pthread_mutex_lock(&gpu->cache_lock);
    for (int i = 0; i < gpu->nquant && !fn; i++)
        if (gpu->quant[i].key == key)
            fn = gpu->quant[i].fn;
    pthread_mutex_unlock(&gpu->cache_lock);
    return fn;
}

static wb_status quant_function(wb_gpu *gpu, const wb_format *f, wb_type x, int global, void **fn)
{
    uint32_t key = quant_key(f, x) ^ (uint32_t)global << 31; /* global: the tensor-scale pass */
    if ((*fn = cached(gpu, key)) != NULL)
        return WB_OK;
    char *ptx = NULL;
    wb_status s = global ? wb_quant_global_ptx(f, x, gpu->arch, &ptx) : wb_quant_ptx(f, x, gpu->arch, &ptx);
    if (!s) /* the module cache owns the function */
        s = wb_gpu_load(gpu, ptx, global ? wb_quant_global_entry() : wb_quant_entry(), fn);
    free(ptx);
    if (s)
        return s;
    pthread_mutex_lock(&gpu->cache_lock);
    if (gpu->nquant < (int)(sizeof gpu->quant / sizeof gpu->quant[0])) {
        gpu->quant[gpu->nquant].key = key;
        gpu->quant[gpu->nquant++].fn = *fn;
    }
    pthread_mutex_unlock(&gpu->cache_lock);
    return WB_OK;
}

static wb_status quantize(wb_gpu *gpu, const char *call, const wb_format *f, wb_type x_type, int64_t m, int64_t k,
                          wb_devptr x, wb_devptr codes, wb_devptr scales, wb_devptr global, void *stream)
{
    wb_status s = wb_gpu_enter(gpu, call);
    if (s)
        return s;
    if (!f || !x || !codes || !scales)
        return wb_fail(WB_ERR_INVALID, "%s: NULL %s", call, !f ? "format" : !x ? "x" : !codes ? "codes" : "scales");
    if (f->ags && !global)
        return wb_fail(WB_ERR_INVALID, "%s: a format with a tensor scale (ags=1) writes it too: use "
                                       "wb_gpu_quantize_acts_g with its address", call);
    if (!f->ags && global)
        return wb_fail(WB_ERR_INVALID, "%s: the format has no tensor scale (ags=0): use wb_gpu_quantize_acts", call);
    if ((s = wb_quant_check(f, x_type, gpu->arch)) != WB_OK)
        return s;
    wb_launch_dims d;
    uint32_t groups, gsize;
    if ((s = wb_quant_dims(f, m, k, &d, &groups, &gsize)) != WB_OK)
        return s;
    void *fn = NULL;
    if (global) { /* the tensor scale first, which the quantizer reads */
        wb_launch_dims gd;
        wb_quant_global_dims(&gd);
        uint32_t n4 = (uint32_t)(m * k / 4);
        void *gparams[] = {&x, &global, &n4};
        if ((s = quant_function(gpu, f, x_type, 1, &fn)) != WB_OK ||
            (s = wb_gpu_launch(gpu, fn, &gd, stream, gparams)) != WB_OK)
            return s;
    }
    if ((s = quant_function(gpu, f, x_type, 0, &fn)) != WB_OK)
        return s;
    void *params[] = {&x, &codes, &scales, &groups, &gsize, &global};
    return wb_gpu_launch(gpu, fn, &d, stream, params);
}

wb_status wb_gpu_quantize_acts(wb_gpu *gpu, const wb_format *f, wb_type x_type, int64_t m, int64_t k, wb_devptr x,
                               wb_devptr codes, wb_devptr scales, void *stream)
{
    return quantize(gpu, "wb_gpu_quantize_acts", f, x_type, m, k, x, codes, scales, 0, stream);
}

wb_status wb_gpu_quantize_acts_g(wb_gpu *gpu, const wb_format *f, wb_type x_type, int64_t m, int64_t k, wb_devptr x,
                                 wb_devptr codes, wb_devptr scales, wb_devptr a_global, void *stream)
{
    if (!a_global)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_quantize_acts_g: NULL a_global");
    return quantize(gpu, "wb_gpu_quantize_acts_g", f, x_type, m, k, x, codes, scales, a_global, stream);
}
