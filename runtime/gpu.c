/* A GPU handle: the driver table, one device and its primary context; device memory helpers, kernel
 * launch and event timing. Every entry point makes the context current first, so a wb_gpu can be used
 * from any thread. */
#include "runtime/gpu_internal.h"
#include "lower/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

wb_status wb_gpu_enter(wb_gpu *gpu, const char *fn)
{
    if (!gpu)
        return wb_fail(WB_ERR_INVALID, "%s: gpu is NULL", fn);
    return wb_cuda_check(gpu->api, gpu->api->cuCtxSetCurrent(gpu->ctx), "cuCtxSetCurrent");
}

/* cuInit and the device count: a missing GPU is WB_ERR_NO_DRIVER, not a driver error. */
static wb_status find_device(const wb_cuda_api *api, int device, CUdevice *dev)
{
    CUresult r = api->cuInit(0);
    if (r != CUDA_SUCCESS)
        return wb_cuda_fail(api, r, WB_ERR_NO_DRIVER, "cuInit");
    int count = 0;
    r = api->cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS)
        return wb_cuda_fail(api, r, WB_ERR_NO_DRIVER, "cuDeviceGetCount");
    if (count <= 0)
        return wb_fail(WB_ERR_NO_DRIVER, "no CUDA device found");
    if (device < 0 || device >= count)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_create: device %d out of range (%d device%s)", device,
                       count, count == 1 ? "" : "s");
    return wb_cuda_check(api, api->cuDeviceGet(dev, device), "cuDeviceGet");
}

/* $WARBLE_ARCH = sm_75, sm_80, sm_86 or sm_89 (or an alias): emit the kernels of that older target
 * and let the driver JIT-compile their PTX forward to this GPU, so one GPU runs (and selftest
 * checks) the code paths of the targets before it. The 'a' targets' PTX runs only on its own GPU. */
static wb_status older_arch(wb_gpu *g)
{
    const char *env = getenv("WARBLE_ARCH");
    wb_arch a;
    if (!env || !*env)
        return WB_OK;
    if (wb_arch_parse(env, &a) != WB_OK)
        return wb_fail(WB_ERR_INVALID, "WARBLE_ARCH=%s: %s", env, wb_last_error());
    const wb_target *t = wb_target_get(a);
    if (a == g->arch)
        return WB_OK;
    if (a >= WB_ARCH_SM90A || t->cc_major * 10 + t->cc_minor > g->cc_major * 10 + g->cc_minor)
        return wb_fail(WB_ERR_UNSUPPORTED, "WARBLE_ARCH=%s: only the PTX of sm_75, sm_80, sm_86 and sm_89 runs on a "
                                           "newer GPU (this one is compute capability %d.%d)",
                       env, g->cc_major, g->cc_minor);
    g->arch = a;
    return WB_OK;
}

/* Name, compute capability, SM count and the warble architecture. */
static wb_status query_device(wb_gpu *g)
{
    const wb_cuda_api *api = g->api;
    wb_status st = wb_cuda_check(api, api->cuDeviceGetName(g->name, (int)sizeof g->name - 1, g->dev),
                                 "cuDeviceGetName");
    if (!st)
        st = wb_cuda_check(api, api->cuDeviceGetAttribute(&g->cc_major,
                                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev),
                           "cuDeviceGetAttribute");
    if (!st)
        st = wb_cuda_check(api, api->cuDeviceGetAttribute(&g->cc_minor,
                                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev),
                           "cuDeviceGetAttribute");
    if (!st)
        st = wb_cuda_check(api, api->cuDeviceGetAttribute(&g->sm_count,
                                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev),
                           "cuDeviceGetAttribute");
    if (!st)
        st = wb_cuda_check(api, api->cuDeviceGetAttribute(&g->smem_optin,
                                   CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, g->dev),
                           "cuDeviceGetAttribute");
    g->name[sizeof g->name - 1] = 0;
    if (!st && wb_arch_from_cc(g->cc_major, g->cc_minor, &g->arch) != WB_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", wb_last_error());
        st = wb_fail(WB_ERR_UNSUPPORTED, "%s (compute capability %d.%d) is not a warble target: %s",
                     g->name, g->cc_major, g->cc_minor, why);
    }
    if (!st)
        st = older_arch(g);
    /* the kernels of targets with griddepcontrol (sm_90 and newer; not those of an older WARBLE_ARCH)
     * wait in griddepcontrol.wait; WARBLE_PDL=0 launches them plainly */
    const char *env = getenv("WARBLE_PDL");
    g->pdl = !st && (wb_target_get(g->arch)->features & WB_FEAT_GRIDDEP) && api->cuLaunchKernelEx &&
             !(env && strcmp(env, "0") == 0);
    return st;
}

wb_status wb_gpu_create(int device, wb_gpu **out)
{
    if (!out)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_create: out is NULL");
    *out = NULL;
    const wb_cuda_api *api;
    wb_status st = wb_cuda_load(&api);
    if (st)
        return st;
    wb_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return wb_fail(WB_ERR_NOMEM, "wb_gpu_create: out of memory");
    g->api = api;
    st = find_device(api, device, &g->dev);
    if (st) {
        free(g);
        return st;
    }
    st = wb_cuda_check(api, api->cuDevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain");
    if (st) {
        free(g);
        return st;
    }
    st = wb_cuda_check(api, api->cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    if (!st)
        st = query_device(g);
    if (!st && pthread_mutex_init(&g->cache_lock, NULL) != 0)
        st = wb_fail(WB_ERR_NOMEM, "wb_gpu_create: pthread_mutex_init failed");
    if (st) {
        api->cuDevicePrimaryCtxRelease(g->dev);
        free(g);
        return st;
    }
    *out = g;
    return WB_OK;
}

void wb_gpu_destroy(wb_gpu *gpu)
{
    if (!gpu)
        return;
    gpu->api->cuCtxSetCurrent(gpu->ctx);
    wb_module_cache_free(gpu);
    pthread_mutex_destroy(&gpu->cache_lock);
    gpu->api->cuDevicePrimaryCtxRelease(gpu->dev);
    free(gpu);
}

wb_arch wb_gpu_arch(const wb_gpu *gpu) { return gpu ? gpu->arch : WB_ARCH_COUNT; }

const char *wb_gpu_name(const wb_gpu *gpu) { return gpu ? gpu->name : ""; }

int wb_gpu_sm_count(const wb_gpu *gpu) { return gpu ? gpu->sm_count : 0; }

/* ---- memory (synchronous helpers) */

wb_status wb_gpu_alloc(wb_gpu *gpu, size_t bytes, wb_devptr *out)
{
    if (!out)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_alloc: out is NULL");
    *out = 0;
    wb_status st = wb_gpu_enter(gpu, "wb_gpu_alloc");
    if (st || bytes == 0) /* 0 bytes: no allocation, the pointer is 0 */
        return st;
    CUdeviceptr p = 0;
    st = wb_cuda_check(gpu->api, gpu->api->cuMemAlloc(&p, bytes), "cuMemAlloc");
    if (!st)
        *out = p;
    return st;
}

wb_status wb_gpu_free(wb_gpu *gpu, wb_devptr p)
{
    wb_status st = wb_gpu_enter(gpu, "wb_gpu_free");
    if (st || p == 0)
        return st;
    return wb_cuda_check(gpu->api, gpu->api->cuMemFree(p), "cuMemFree");
}

wb_status wb_gpu_upload(wb_gpu *gpu, wb_devptr dst, const void *src, size_t bytes)
{
    wb_status st = wb_gpu_enter(gpu, "wb_gpu_upload");
    if (st || bytes == 0)
        return st;
    if (!src || !dst)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_upload: NULL %s", src ? "destination" : "source");
    return wb_cuda_check(gpu->api, gpu->api->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

wb_status wb_gpu_download(wb_gpu *gpu, void *dst, wb_devptr src, size_t bytes)
{
    wb_status st = wb_gpu_enter(gpu, "wb_gpu_download");
    if (st || bytes == 0)
        return st;
    if (!src || !dst)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_download: NULL %s", src ? "destination" : "source");
    return wb_cuda_check(gpu->api, gpu->api->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

wb_status wb_gpu_memset(wb_gpu *gpu, wb_devptr dst, uint8_t byte, size_t bytes)
{
    wb_status st = wb_gpu_enter(gpu, "wb_gpu_memset");
    if (st || bytes == 0)
        return st;
    if (!dst)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_memset: NULL destination");
    return wb_cuda_check(gpu->api, gpu->api->cuMemsetD8(dst, byte, bytes), "cuMemsetD8");
}

wb_status wb_gpu_sync(wb_gpu *gpu)
{
    wb_status st = wb_gpu_enter(gpu, "wb_gpu_sync");
    if (st)
        return st;
    return wb_cuda_check(gpu->api, gpu->api->cuCtxSynchronize(), "cuCtxSynchronize");
}

/* ---- launch */

wb_status wb_gpu_launch(wb_gpu *gpu, void *function, const wb_launch_dims *d, void *stream,
                        void **params)
{
    wb_status st = wb_gpu_enter(gpu, "wb_gpu_launch");
    if (st)
        return st;
    if (!function || !d)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_launch: NULL %s", function ? "dims" : "function");
    const wb_cuda_api *api = gpu->api;
    CUfunction fn = function;
    /* functions are opted in to the device's maximum when loaded (wb_gpu_load): no driver call here */
    if (d->smem_bytes > (unsigned)gpu->smem_optin && d->smem_bytes > 48 * 1024)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_launch: %u bytes of dynamic shared memory; %s allows %d",
                       d->smem_bytes, gpu->name, gpu->smem_optin);
    if (gpu->pdl) {
        /* programmatic dependent launch: the kernel may start while the previous one in the stream
         * finishes; it streams its first weight tiles and then waits in griddepcontrol.wait before it
         * touches the activations or the output */
        CUlaunchAttribute attr;
        memset(&attr, 0, sizeof attr);
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmatic_stream_serialization_allowed = 1;
        CUlaunchConfig c = {d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1], d->block[2],
                            d->smem_bytes, stream, &attr, 1};
        return wb_cuda_check(api, api->cuLaunchKernelEx(&c, fn, params, NULL), "cuLaunchKernelEx");
    }
    return wb_cuda_check(api, api->cuLaunchKernel(fn, d->grid[0], d->grid[1], d->grid[2], d->block[0],
                                                  d->block[1], d->block[2], d->smem_bytes, stream,
                                                  params, NULL),
                         "cuLaunchKernel");
}

int wb_gpu_resident_blocks(wb_gpu *gpu, void *fn, const wb_launch_dims *d, int cluster)
{
    int sms = gpu->sm_count;
    if (cluster < 2)
        return sms;
    int clusters = 0;
    CUlaunchConfig c = {d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1], d->block[2], d->smem_bytes,
                        NULL, NULL, 0};
    const wb_cuda_api *api = gpu->api;
    if (!api->cuOccupancyMaxActiveClusters || api->cuOccupancyMaxActiveClusters(&clusters, fn, &c) != CUDA_SUCCESS ||
        clusters < 1)
        clusters = sms / cluster;
    return clusters * cluster;
}

wb_status wb_gpu_tensor_map(wb_gpu *gpu, CUtensorMap *map, wb_type a, wb_devptr base, uint64_t rows, uint64_t cols,
                            unsigned box_rows)
{
    const wb_cuda_api *api = gpu->api;
    if (!api->cuTensorMapEncodeTiled)
        return wb_fail(WB_ERR_UNSUPPORTED, "--load tma needs cuTensorMapEncodeTiled (a CUDA 12 or newer driver)");
    int bytes = a.bits / 8; /* 2 (f16, bf16) or 1 (s8 and fp8 codes, copied as bytes) */
    int type = a.kind == WB_KIND_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                               : a.kind == WB_KIND_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                       : CU_TENSOR_MAP_DATA_TYPE_UINT8;
    unsigned long long dims[2] = {cols, rows}, strides[1] = {cols * (unsigned long long)bytes};
    unsigned box[2] = {128u / (unsigned)bytes, box_rows}, estrides[2] = {1, 1};
    return wb_cuda_check(api, api->cuTensorMapEncodeTiled(map, type, 2, (void *)(uintptr_t)base, dims, strides, box,
                                                          estrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                          CU_TENSOR_MAP_SWIZZLE_128B,
                                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                         "cuTensorMapEncodeTiled");
}

/* ---- timing */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* reps samples of `inner` calls between two events on the default stream. */
static wb_status time_samples(wb_gpu *gpu, CUevent ev[2], void (*fn)(void *), void *arg, int reps,
                              int inner, double *samples)
{
    const wb_cuda_api *api = gpu->api;
    wb_status st = WB_OK;
    for (int r = 0; r < reps && !st; r++) {
        st = wb_cuda_check(api, api->cuEventRecord(ev[0], NULL), "cuEventRecord");
        for (int i = 0; i < inner && !st; i++)
            fn(arg);
        if (!st)
            st = wb_cuda_check(api, api->cuEventRecord(ev[1], NULL), "cuEventRecord");
        if (!st)
            st = wb_cuda_check(api, api->cuEventSynchronize(ev[1]), "cuEventSynchronize");
        float ms = 0;
        if (!st)
            st = wb_cuda_check(api, api->cuEventElapsedTime(&ms, ev[0], ev[1]), "cuEventElapsedTime");
        samples[r] = (double)ms * 1000.0 / inner;
    }
    return st;
}

wb_status wb_gpu_time(wb_gpu *gpu, void (*fn)(void *arg), void *arg, int warmup, int reps, int inner,
                      double *median_us)
{
    wb_status st = wb_gpu_enter(gpu, "wb_gpu_time");
    if (st)
        return st;
    if (!fn || !median_us)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_time: NULL %s", fn ? "median_us" : "fn");
    if (warmup < 0 || reps < 1 || inner < 1)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_time: need warmup >= 0, reps >= 1, inner >= 1 (got %d, %d, %d)",
                       warmup, reps, inner);
    const wb_cuda_api *api = gpu->api;
    double *samples = malloc(sizeof(double) * (size_t)reps);
    if (!samples)
        return wb_fail(WB_ERR_NOMEM, "wb_gpu_time: out of memory");
    CUevent ev[2] = {NULL, NULL};
    st = wb_cuda_check(api, api->cuEventCreate(&ev[0], CU_EVENT_DEFAULT), "cuEventCreate");
    if (!st)
        st = wb_cuda_check(api, api->cuEventCreate(&ev[1], CU_EVENT_DEFAULT), "cuEventCreate");
    for (int i = 0; i < warmup && !st; i++)
        fn(arg);
    if (!st)
        st = time_samples(gpu, ev, fn, arg, reps, inner, samples);
    if (!st) {
        qsort(samples, (size_t)reps, sizeof(double), cmp_double);
        *median_us = reps % 2 ? samples[reps / 2] : 0.5 * (samples[reps / 2 - 1] + samples[reps / 2]);
    }
    for (int i = 0; i < 2; i++)
        if (ev[i])
            api->cuEventDestroy(ev[i]);
    free(samples);
    return st;
}
