/* wb_gpu_quantize_acts: the activation quantizer (lower/lower_quant.c) of a format's activation type
 * and an input type, JIT-compiled on its first call on a wb_gpu and kept, then launched on the
 * caller's stream with no allocation and no synchronization. */
#include <stdlib.h>

#include "lower/lower.h"
#include "runtime/gpu_internal.h"

/* What a kernel's PTX depends on, each in bits of its own: the code type and the input type; for e2m1,
 * the block scale's type, the block size and whether the quantizer reads a tensor scale (ags: nvfp4's
 * divides by p_global, "a=e2m1,ag=16,as=e4m3" without it does not, and both have the same types and
 * block); and which of the two kernels (global: the tensor-scale pass). Every field is below 256
 * (wb_quant_check has taken the format: ag is 16 to 128 for e2m1, and no other kernel reads it). */
static uint64_t quant_key(const wb_format *f, wb_type x, int global)
{
    uint64_t key = (uint64_t)f->a.kind | (uint64_t)f->a.bits << 8 | (uint64_t)f->a.ebits << 16 |
                   (uint64_t)f->a.mbits << 24 | (uint64_t)x.kind << 32;
    if (wb_format_fp4_acts(f))
        key |= (uint64_t)f->as.kind << 40 | (uint64_t)f->ag << 48 | (uint64_t)(f->ags != 0) << 56;
    return key | (uint64_t)(global != 0) << 63;
}

static void *cached(wb_gpu *gpu, uint64_t key)
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
    uint64_t key = quant_key(f, x, global); /* global: the tensor-scale pass */
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
    /* x is read and codes written in 4-byte words, f32 scales and the tensor scale as f32 (and with a
     * tensor scale, the blocks' maxima go through the scale buffer as f32) */
    int f32_scales = !wb_format_fp4_acts(f) || f->ags;
    if (x % 4 || codes % 4 || (f32_scales && scales % 4) || global % 4)
        return wb_fail(WB_ERR_INVALID, "%s: misaligned %s pointer (x, codes, a_global: 4 bytes; scales: 4, or 1 "
                                       "for the block scales of e2m1 without a tensor scale)", call,
                       x % 4 ? "x" : codes % 4 ? "codes" : global % 4 ? "a_global" : "scales");
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
    if (global) { /* the tensor scale first, which the quantizer reads (at prefill sizes a reduce launch
                   * too: the blocks' maxima go through the scale buffer, which the quantizer then writes) */
        wb_launch_dims gd;
        uint32_t n4 = (uint32_t)(m * k / 4), blocks = (uint32_t)wb_quant_global_blocks(m * k / 4), no = 0, yes = 1;
        wb_quant_global_dims(&gd, (int)blocks);
        void *gparams[] = {&x, &global, &n4, &scales, &no};
        void *rparams[] = {&scales, &global, &blocks, &scales, &yes};
        if ((s = quant_function(gpu, f, x_type, 1, &fn)) != WB_OK ||
            (s = wb_gpu_launch(gpu, fn, &gd, stream, gparams)) != WB_OK)
            return s;
        wb_quant_global_dims(&gd, 1);
        if (blocks > 1 && (s = wb_gpu_launch(gpu, fn, &gd, stream, rparams)) != WB_OK)
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
