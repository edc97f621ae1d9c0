/* A layer: one weight matrix in a format, packed and uploaded once, plus the kernels built for it, one
 * per config. wb_layer_gemm (wb_layer_gemm_q for quantized activations) is the launch path: it checks
 * the shape, picks a config, builds the kernel the first time (PTX -> JIT through the gpu's module
 * cache) and launches it; no device allocation and no synchronization. */
#include "runtime/gpu_internal.h"
#include "dsl/tile.h"
#include "lower/layout.h"

#include <stdlib.h>
#include <string.h>

typedef struct layer_kernel {
    wb_config cfg; /* complete */
    void *fn;
    char sha256[65];
    int resident; /* cfg.persistent: the blocks the device holds at once (the grid's cap) */
} layer_kernel;

struct wb_layer {
    wb_gpu *gpu;
    wb_format f;
    wb_arch arch;
    int64_t n, k;
    wb_devptr w, scale, chan; /* 0 when the format has no such buffer */
    int has_forced;
    wb_config forced;
    pthread_mutex_t lock; /* guards kernels and last */
    layer_kernel *kernels;
    int nkernels, cap;
    int has_last;
    wb_config last_cfg;
    char last_sha256[65];
};

static int config_complete(const wb_config *c)
{
    return c->m_tiles && c->warps_n && c->warps_k && c->stages && c->load && c->mma;
}

/* Allocate and fill one device buffer (none for 0 bytes). */
static wb_status upload_buffer(wb_gpu *gpu, const void *host, size_t bytes, wb_devptr *out)
{
    wb_status st = wb_gpu_alloc(gpu, bytes, out);
    if (!st && bytes)
        st = wb_gpu_upload(gpu, *out, host, bytes);
    return st;
}

/* A layer with no buffers yet, once its arguments pass (`who` names the call in messages). */
static wb_status layer_new(wb_gpu *gpu, const wb_format *f, int64_t n, int64_t k, const void *w, wb_layer **out,
                           const char *who)
{
    if (out)
        *out = NULL;
    if (!gpu || !f || !w || !out)
        return wb_fail(WB_ERR_INVALID, "%s: NULL %s", who, !gpu ? "gpu" : !f ? "format" : !w ? "weights" : "out");
    if (n < 1 || k < 1 || n > INT32_MAX || k > INT32_MAX)
        return wb_fail(WB_ERR_INVALID, "%s: n and k must be in [1, 2^31) (got %lld, %lld)", who, (long long)n,
                       (long long)k);
    wb_status st = wb_format_check_shape(f, 1, n, k);
    if (st)
        return st;
    wb_layer *l = calloc(1, sizeof *l);
    if (!l)
        return wb_fail(WB_ERR_NOMEM, "%s: out of memory", who);
    if (pthread_mutex_init(&l->lock, NULL) != 0) {
        free(l);
        return wb_fail(WB_ERR_NOMEM, "%s: pthread_mutex_init failed", who);
    }
    l->gpu = gpu;
    l->f = *f;
    l->arch = wb_gpu_arch(gpu);
    l->n = n;
    l->k = k;
    *out = l;
    return WB_OK;
}

/* The packed buffers to the layer's device memory. */
static wb_status layer_upload(wb_layer *l, const wb_packed *p)
{
    wb_status st = upload_buffer(l->gpu, p->w, p->w_bytes, &l->w);
    if (!st)
        st = upload_buffer(l->gpu, p->scale, p->scale_bytes, &l->scale);
    if (!st)
        st = upload_buffer(l->gpu, p->chan, p->chan_bytes, &l->chan);
    return st;
}

/* A layer that failed after layer_new: destroyed, *out NULL, st returned. */
static wb_status layer_drop(wb_layer **out, wb_status st)
{
    wb_layer_destroy(*out);
    *out = NULL;
    return st;
}

wb_status wb_layer_create(wb_gpu *gpu, const wb_format *f, int64_t n, int64_t k,
                          const wb_host_weights *w, wb_layer **out)
{
    wb_status st = layer_new(gpu, f, n, k, w, out, "wb_layer_create");
    if (st)
        return st;
    wb_packed p;
    if (!(st = wb_pack_weights(f, (*out)->arch, n, k, w, &p))) {
        st = layer_upload(*out, &p);
        wb_packed_free(&p);
    }
    return st ? layer_drop(out, st) : WB_OK;
}

/* Weights packed for target `arch` fit N x K of format f on target `gpu_arch`: their sizes and layout. */
static wb_status check_packed(const wb_format *f, wb_arch arch, wb_arch gpu_arch, int64_t n, int64_t k,
                              const wb_packed *p)
{
    wb_packed want;
    wb_packed_sizes(f, n, k, &want);
    const struct {
        const char *what;
        const void *at;
        size_t bytes, want;
    } bufs[3] = {{"codes", p->w, p->w_bytes, want.w_bytes},
                 {"scales", p->scale, p->scale_bytes, want.scale_bytes},
                 {"channel values", p->chan, p->chan_bytes, want.chan_bytes}};
    for (int i = 0; i < 3; i++)
        if (bufs[i].bytes != bufs[i].want || (bufs[i].want && !bufs[i].at))
            return wb_fail(WB_ERR_INVALID, "wb_layer_create_packed: the %s are %zu bytes%s, where %lld x %lld weights "
                           "of this format take %zu (wb_packed_sizes)", bufs[i].what, bufs[i].bytes,
                           bufs[i].at ? "" : " at NULL", (long long)n, (long long)k, bufs[i].want);
    if ((unsigned)arch >= WB_ARCH_COUNT)
        return wb_fail(WB_ERR_INVALID, "wb_layer_create_packed: unknown target %d", (int)arch);
    if (!wb_packed_layout_same(f, arch, gpu_arch))
        return wb_fail(WB_ERR_INVALID, "wb_layer_create_packed: weights of this format packed for %s are not laid "
                       "out as %s reads them; pack them for %s", wb_arch_name(arch), wb_arch_name(gpu_arch),
                       wb_arch_name(gpu_arch));
    return WB_OK;
}

wb_status wb_layer_create_packed(wb_gpu *gpu, const wb_format *f, wb_arch arch, int64_t n, int64_t k,
                                 const wb_packed *p, wb_layer **out)
{
    wb_status st = layer_new(gpu, f, n, k, p, out, "wb_layer_create_packed");
    if (st)
        return st;
    if (!(st = check_packed(f, arch, (*out)->arch, n, k, p)))
        st = layer_upload(*out, p);
    return st ? layer_drop(out, st) : WB_OK;
}

void wb_layer_destroy(wb_layer *layer)
{
    if (!layer)
        return;
    /* Frees are best effort: a destroy cannot report, and must not overwrite the message of the
     * failure that led here (wb_layer_create cleans up through this), so the driver is called directly. */
    wb_devptr bufs[3] = {layer->w, layer->scale, layer->chan};
    const wb_cuda_api *api = layer->gpu->api;
    if (bufs[0] || bufs[1] || bufs[2])
        api->cuCtxSetCurrent(layer->gpu->ctx);
    for (int i = 0; i < 3; i++)
        if (bufs[i])
            api->cuMemFree(bufs[i]);
    free(layer->kernels); /* the functions belong to the gpu's module cache */
    pthread_mutex_destroy(&layer->lock);
    free(layer);
}

wb_status wb_layer_set_config(wb_layer *layer, const wb_config *cfg)
{
    if (!layer)
        return wb_fail(WB_ERR_INVALID, "wb_layer_set_config: layer is NULL");
    if (cfg && (cfg->m_tiles < 0 || cfg->warps_n < 0 || cfg->warps_k < 0 || cfg->stages < 0 ||
                cfg->load < 0 || cfg->mma < 0))
        return wb_fail(WB_ERR_INVALID, "wb_layer_set_config: negative config field");
    if (cfg && cfg->batch_invariant != 0 && cfg->batch_invariant != 1)
        return wb_fail(WB_ERR_INVALID, "wb_layer_set_config: batch_invariant must be 0 or 1 (got %d)",
                       cfg->batch_invariant);
    if (cfg && cfg->persistent != 0 && cfg->persistent != 1)
        return wb_fail(WB_ERR_INVALID, "wb_layer_set_config: persistent must be 0 or 1 (got %d)", cfg->persistent);
    if (cfg && (cfg->cluster < 0 || cfg->cluster == 3 || cfg->cluster > 4))
        return wb_fail(WB_ERR_INVALID, "wb_layer_set_config: cluster must be 0, 1, 2 or 4 (got %d)", cfg->cluster);
    if (cfg && (cfg->split_k < 0 || cfg->split_k > 2))
        return wb_fail(WB_ERR_INVALID, "wb_layer_set_config: split_k must be 0, 1 or 2 (got %d)", cfg->split_k);
    if (cfg && (cfg->gemv < -1 || cfg->gemv > 1))
        return wb_fail(WB_ERR_INVALID, "wb_layer_set_config: gemv must be -1, 0 or 1 (got %d)", cfg->gemv);
    pthread_mutex_lock(&layer->lock);
    layer->has_forced = cfg != NULL;
    if (cfg)
        layer->forced = *cfg;
    pthread_mutex_unlock(&layer->lock);
    return WB_OK;
}

/* The kernel of a complete config: from the layer's list, else built and loaded. Lock held. */
static wb_status find_kernel(wb_layer *l, const wb_config *cfg, layer_kernel **out)
{
    for (int i = 0; i < l->nkernels; i++)
        if (wb_config_equal(&l->kernels[i].cfg, cfg)) {
            *out = &l->kernels[i];
            return WB_OK;
        }
    if (l->nkernels == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        layer_kernel *k = realloc(l->kernels, sizeof *k * (size_t)cap);
        if (!k)
            return wb_fail(WB_ERR_NOMEM, "wb_layer_gemm: out of memory");
        l->kernels = k;
        l->cap = cap;
    }
    layer_kernel *kern = &l->kernels[l->nkernels];
    memset(kern, 0, sizeof *kern);
    kern->cfg = *cfg;
    char *ptx = NULL;
    wb_status st = wb_kernel_ptx(&l->f, l->arch, cfg, 0, &ptx);
    if (!st) {
        wb_sha256_hex(ptx, strlen(ptx), kern->sha256);
        st = wb_gpu_load(l->gpu, ptx, wb_kernel_entry(), &kern->fn);
    }
    free(ptx);
    wb_launch_dims d;
    if (!st && cfg->persistent && !(st = wb_kernel_dims(&l->f, l->arch, cfg, 1, l->n, l->k, &d)))
        kern->resident = wb_gpu_resident_blocks(l->gpu, kern->fn, &d, cfg->cluster > 1 ? cfg->cluster : 1);
    if (st)
        return st;
    l->nkernels++;
    *out = kern;
    return WB_OK;
}

/* Shape checks, config choice and the kernel, with the layer lock held. */
static wb_status prepare(wb_layer *l, int64_t m, wb_config *cfg, void **fn, int *resident)
{
    wb_status st = wb_format_check_shape(&l->f, m, l->n, l->k);
    if (st)
        return st;
    memset(cfg, 0, sizeof *cfg);
    if (l->has_forced)
        *cfg = l->forced;
    if (!config_complete(cfg) && (st = wb_config_choose(&l->f, l->arch, m, l->n, l->k, cfg)))
        return st;
    if ((st = wb_kernel_check_shape(&l->f, cfg, m, l->n, l->k)))
        return st;
    layer_kernel *kern = NULL;
    if ((st = find_kernel(l, cfg, &kern)))
        return st;
    *fn = kern->fn;
    *resident = kern->resident;
    l->has_last = 1;
    l->last_cfg = *cfg;
    memcpy(l->last_sha256, kern->sha256, sizeof l->last_sha256);
    return WB_OK;
}

/* Formats whose activations are quantized codes with a scale per token (W8A8): wb_layer_gemm_q. */
static int quantized_acts(const wb_format *f)
{
    return f->a.kind != WB_KIND_F16 && f->a.kind != WB_KIND_BF16;
}

/* The launch behind wb_layer_gemm and wb_layer_gemm_q(g) (a_scale 0 for f16/bf16 activations,
 * a_global 0 without ags). */
static wb_status launch(wb_layer *layer, const char *call, int64_t m, wb_devptr a, wb_devptr a_scale,
                        wb_devptr a_global, wb_devptr out, void *stream)
{
    if (m < 1 || m > INT32_MAX)
        return wb_fail(WB_ERR_INVALID, "%s: m must be in [1, 2^31) (got %lld)", call, (long long)m);
    if (!a || !out)
        return wb_fail(WB_ERR_INVALID, "%s: NULL %s pointer", call, !a ? "activation" : "output");
    /* what the kernels' accesses need (a misaligned one would fault and spoil the CUDA context) */
    int f32_scales = quantized_acts(&layer->f) && !wb_format_fp4_acts(&layer->f);
    if (a % 16 || out % 2 || (f32_scales && a_scale % 4) || a_global % 4)
        return wb_fail(WB_ERR_INVALID, "%s: misaligned %s pointer %#llx (activations: 16 bytes, copied in 16-byte "
                                       "chunks; output: 2; f32 scales: 4)", call,
                       a % 16 ? "activation" : out % 2 ? "output" : a_global % 4 ? "a_global" : "a_scale",
                       (unsigned long long)(a % 16 ? a : out % 2 ? out : a_global % 4 ? a_global : a_scale));
    wb_config cfg;
    void *fn = NULL;
    int resident = 0;
    pthread_mutex_lock(&layer->lock);
    wb_status st = prepare(layer, m, &cfg, &fn, &resident);
    pthread_mutex_unlock(&layer->lock);
    if (st)
        return st;
    wb_launch_dims d;
    if ((st = wb_kernel_dims(&layer->f, layer->arch, &cfg, m, layer->n, layer->k, &d)))
        return st;
    if (cfg.persistent && resident > 0 && d.grid[0] > (unsigned)resident) /* the device's, not the target's hint */
        d.grid[0] = (unsigned)resident;
    /* Kernel parameters, in this order: out, a, w, scale, chan (u64), m, n, k (u32), then with quantized
     * activations their scales (u64) and with ags=1 the address of the activation tensor scale, then
     * with TMA loads the map of the activations (M x K, boxes of the block's tokens x 128 bytes). */
    uint64_t p_out = out, p_a = a, p_w = layer->w, p_scale = layer->scale, p_chan = layer->chan, p_ascale = a_scale;
    uint64_t p_aglobal = a_global;
    uint32_t p_m = (uint32_t)m, p_n = (uint32_t)layer->n, p_k = (uint32_t)layer->k;
    CUtensorMap map;
    void *params[12] = {&p_out, &p_a, &p_w, &p_scale, &p_chan, &p_m, &p_n, &p_k}; /* NULL after the last */
    int np = 8;
    if (quantized_acts(&layer->f))
        params[np++] = &p_ascale;
    if (wb_format_fp4_acts(&layer->f) && layer->f.ags)
        params[np++] = &p_aglobal;
    if (cfg.load == WB_LOAD_TMA) {
        params[np++] = &map;
        if ((st = wb_gpu_tensor_map(layer->gpu, &map, layer->f.a, a, (uint64_t)m, (uint64_t)layer->k,
                                    (unsigned)(8 * cfg.m_tiles / (cfg.cluster > 1 ? 2 : 1)))))
            return st;
    }
    return wb_gpu_launch(layer->gpu, fn, &d, stream, params);
}

wb_status wb_layer_gemm(wb_layer *layer, int64_t m, wb_devptr a, wb_devptr out, void *stream)
{
    if (!layer)
        return wb_fail(WB_ERR_INVALID, "wb_layer_gemm: layer is NULL");
    if (quantized_acts(&layer->f))
        return wb_fail(WB_ERR_INVALID, "wb_layer_gemm: this layer's activations are quantized codes with a scale "
                                       "per token: use wb_layer_gemm_q");
    return launch(layer, "wb_layer_gemm", m, a, 0, 0, out, stream);
}

static wb_status gemm_q(wb_layer *layer, const char *call, int64_t m, wb_devptr a, wb_devptr a_scale,
                        wb_devptr a_global, wb_devptr out, void *stream)
{
    if (!layer)
        return wb_fail(WB_ERR_INVALID, "%s: layer is NULL", call);
    if (!quantized_acts(&layer->f))
        return wb_fail(WB_ERR_INVALID, "%s: this layer's activations are f16 or bf16: use wb_layer_gemm", call);
    if (!a_scale)
        return wb_fail(WB_ERR_INVALID, "%s: NULL activation scale pointer", call);
    if (layer->f.ags && !a_global)
        return wb_fail(WB_ERR_INVALID, "%s: this layer's format has ags=1: pass the activation tensor scale's "
                                       "address (wb_layer_gemm_qg)", call);
    if (!layer->f.ags && a_global)
        return wb_fail(WB_ERR_INVALID, "%s: this layer's format has ags=0: a_global must be 0", call);
    return launch(layer, call, m, a, a_scale, a_global, out, stream);
}

wb_status wb_layer_gemm_q(wb_layer *layer, int64_t m, wb_devptr a, wb_devptr a_scale, wb_devptr out,
                          void *stream)
{
    return gemm_q(layer, "wb_layer_gemm_q", m, a, a_scale, 0, out, stream);
}

wb_status wb_layer_gemm_qg(wb_layer *layer, int64_t m, wb_devptr a, wb_devptr a_scale, wb_devptr a_global,
                           wb_devptr out, void *stream)
{
    return gemm_q(layer, "wb_layer_gemm_qg", m, a, a_scale, a_global, out, stream);
}

wb_status wb_layer_gemm_x(wb_layer *layer, int64_t m, wb_type x_type, wb_devptr x, wb_devptr codes,
                          wb_devptr scales, wb_devptr out, void *stream)
{
    if (!layer)
        return wb_fail(WB_ERR_INVALID, "wb_layer_gemm_x: layer is NULL");
    if (!quantized_acts(&layer->f))
        return wb_fail(WB_ERR_INVALID, "wb_layer_gemm_x: this layer's activations are f16 or bf16: use "
                                       "wb_layer_gemm");
    if (layer->f.ags)
        return wb_fail(WB_ERR_INVALID, "wb_layer_gemm_x: this format has a tensor scale (ags=1), which needs its "
                                       "own 4 bytes: wb_gpu_quantize_acts_g, then wb_layer_gemm_qg");
    wb_status st = wb_gpu_quantize_acts(layer->gpu, &layer->f, x_type, m, layer->k, x, codes, scales, stream);
    return st ? st : wb_layer_gemm_q(layer, m, codes, scales, out, stream);
}

wb_status wb_layer_last_kernel(const wb_layer *layer, wb_config *cfg, char sha256_hex[65])
{
    if (!layer)
        return wb_fail(WB_ERR_INVALID, "wb_layer_last_kernel: layer is NULL");
    wb_layer *l = (wb_layer *)layer; /* the lock is not part of the logical state */
    pthread_mutex_lock(&l->lock);
    int has = l->has_last;
    if (has && cfg)
        *cfg = l->last_cfg;
    if (has && sha256_hex)
        memcpy(sha256_hex, l->last_sha256, 65);
    pthread_mutex_unlock(&l->lock);
    if (!has)
        return wb_fail(WB_ERR_INVALID, "wb_layer_last_kernel: no wb_layer_gemm call on this layer yet");
    return WB_OK;
}
