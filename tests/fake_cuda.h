/* A fake CUDA driver table for the runtime tests: counts calls, records the last launch (and copies
 * its parameter values, since they live on the caller's stack), and fails on request. Header-only:
 * each test program includes it once. */
#ifndef WB_FAKE_CUDA_H
#define WB_FAKE_CUDA_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/cuda_api.h"
#include "testutil.h"

/* ---------------------------------------------------------------- the fake driver */

static struct {
    int device_count;
    CUresult init_result, alloc_result, set_current_result, jit_result;
    int set_current, alloc, free_, htod, dtoh, memset_, sync, retain, release;
    uint64_t htod_sum;        /* FNV-1a over every byte uploaded, in order (0: start again) */
    int loads, unloads, get_function, set_attribute, launches, event_create, event_destroy, records;
    int elapsed_calls;
    int pdl_launches;         /* launches through cuLaunchKernelEx with programmatic serialization */
    int capture_layer_params; /* copy launch params as the layer kernel's (u64 x 5, u32 x 3) */
    const float *elapsed_ms; /* per cuEventElapsedTime call */
    CUcontext current;
    CUdeviceptr next_ptr;
    /* the last launch */
    CUfunction launch_fn;
    unsigned launch_dims[7];
    CUstream launch_stream;
    void **launch_params;
    uint64_t launch_u64[5]; /* the layer kernel's parameters: out, a, w, scale, chan */
    uint32_t launch_u32[3]; /* m, n, k */
    uint64_t launch_p8;     /* with capture_layer_params: params[8] (W8A8 and fp4 activations: p_ascale) */
    uint64_t launch_p9;     /* with capture_layer_params: params[9] (fp4 activations with ags=1: p_aglobal) */
    uint64_t launch_map0;   /* with capture_layer_params on a TMA kernel: the first word of its map */
    /* the last cuTensorMapEncodeTiled */
    int maps, map_dtype, map_swizzle, map_oob;
    unsigned map_rank, map_box[2];
    unsigned long long map_dims[2], map_stride;
    void *map_address;
    int attrib, attrib_value;
    /* cuOccupancyMaxActiveClusters: the count it gives (0: it fails) and the last config's block and
     * shared memory */
    int max_clusters, occupancy_calls;
    unsigned occupancy_block, occupancy_smem;
    /* the cuLink* JIT and cuModuleLoadData (the disk cache) */
    int driver_version;                      /* 0 = 13000 */
    CUresult link_create_result, link_add_result, link_complete_result, load_data_result;
    int link_create, link_add, link_complete, link_destroy, links_live, load_data;
    CUjitInputType add_type;
    size_t add_size;
    char add_name[32];
    unsigned char loaded_image[64]; /* the last cuModuleLoadData image up to its first NUL, at most 64 */
    pthread_mutex_t lock;
} fake;

/* The fake's cubin for a PTX text: 64 bytes, an ELF magic, a tag and the PTX's hash. cuModuleLoadData
 * accepts an image with this magic and tag and refuses anything else (CUDA_ERROR_INVALID_IMAGE). */
enum { FAKE_CUBIN_SIZE = 64 };
static const char fake_cubin_tag[] = "\x7f" "ELF fake cubin ";
static void fake_cubin(const char *ptx, unsigned char out[FAKE_CUBIN_SIZE])
{
    memset(out, 0, FAKE_CUBIN_SIZE);
    memcpy(out, fake_cubin_tag, sizeof fake_cubin_tag - 1);
    char sha[65];
    wb_sha256_hex(ptx, strlen(ptx), sha);
    memcpy(out + sizeof fake_cubin_tag - 1, sha, 40);
}

typedef struct fake_link {
    char *error_log;
    size_t log_size;
    unsigned char cubin[FAKE_CUBIN_SIZE];
} fake_link;

static const char *jit_log = "ptxas application ptx input, line 3; error   : Unknown symbol 'foo'\n"
                             "ptxas fatal   : Ptx assembly aborted due to errors\n\n";

static CUresult f_init(unsigned flags) { return flags ? CUDA_ERROR_INVALID_VALUE : fake.init_result; }
static CUresult f_driver_version(int *v) { *v = fake.driver_version ? fake.driver_version : 13000; return CUDA_SUCCESS; }
static CUresult f_device_get(CUdevice *d, int ordinal) { *d = ordinal; return CUDA_SUCCESS; }
static CUresult f_device_count(int *n) { *n = fake.device_count; return CUDA_SUCCESS; }
static CUresult f_device_name(char *name, int len, CUdevice d)
{
    (void)d;
    strncpy(name, "Fake H200", (size_t)len);
    return CUDA_SUCCESS;
}
static CUresult f_device_attribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}
static CUresult f_retain(CUcontext *c, CUdevice d)
{
    (void)d;
    fake.retain++;
    *c = (CUcontext)(uintptr_t)0xC0;
    return CUDA_SUCCESS;
}
static CUresult f_release(CUdevice d) { (void)d; fake.release++; return CUDA_SUCCESS; }
static CUresult f_set_current(CUcontext c)
{
    pthread_mutex_lock(&fake.lock);
    fake.set_current++;
    pthread_mutex_unlock(&fake.lock);
    if (fake.set_current_result)
        return fake.set_current_result;
    fake.current = c;
    return CUDA_SUCCESS;
}
static CUresult f_get_current(CUcontext *c) { *c = fake.current; return CUDA_SUCCESS; }
static CUresult f_ctx_sync(void) { fake.sync++; return CUDA_SUCCESS; }
static CUresult f_alloc(CUdeviceptr *p, size_t bytes)
{
    (void)bytes;
    fake.alloc++;
    if (fake.alloc_result)
        return fake.alloc_result;
    *p = fake.next_ptr += 0x10000;
    return CUDA_SUCCESS;
}
static CUresult f_free(CUdeviceptr p) { (void)p; fake.free_++; return CUDA_SUCCESS; }
static CUresult f_htod(CUdeviceptr d, const void *s, size_t n)
{
    (void)d;
    if (!fake.htod_sum)
        fake.htod_sum = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        fake.htod_sum = (fake.htod_sum ^ ((const unsigned char *)s)[i]) * 0x100000001b3ull;
    fake.htod++;
    return CUDA_SUCCESS;
}
static CUresult f_dtoh(void *d, CUdeviceptr s, size_t n) { (void)s; memset(d, 0x5a, n); fake.dtoh++; return CUDA_SUCCESS; }
static CUresult f_memset(CUdeviceptr d, unsigned char c, size_t n) { (void)d, (void)c, (void)n; fake.memset_++; return CUDA_SUCCESS; }

static CUresult f_load(CUmodule *m, const void *image, unsigned n, CUjit_option *opts, void **values)
{
    (void)image;
    pthread_mutex_lock(&fake.lock);
    int id = ++fake.loads;
    pthread_mutex_unlock(&fake.lock);
    if (fake.jit_result) {
        char *log = NULL;
        size_t size = 0;
        for (unsigned i = 0; i < n; i++) {
            if (opts[i] == CU_JIT_ERROR_LOG_BUFFER)
                log = values[i];
            if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
                size = (size_t)(uintptr_t)values[i];
        }
        if (log && size)
            snprintf(log, size, "%s", jit_log);
        return fake.jit_result;
    }
    *m = (CUmodule)(uintptr_t)(0x1000 * id);
    return CUDA_SUCCESS;
}
static CUresult f_load_data(CUmodule *m, const void *image)
{
    pthread_mutex_lock(&fake.lock);
    int id = ++fake.load_data;
    const unsigned char *p = image; /* a fake cubin has no NUL before its padding */
    memset(fake.loaded_image, 0, sizeof fake.loaded_image);
    for (size_t i = 0; i < sizeof fake.loaded_image && (i == 0 || p[i - 1]); i++)
        fake.loaded_image[i] = p[i];
    pthread_mutex_unlock(&fake.lock);
    if (fake.load_data_result)
        return fake.load_data_result;
    if (strncmp(image, fake_cubin_tag, sizeof fake_cubin_tag - 1) ||
        strnlen(image, FAKE_CUBIN_SIZE) != sizeof fake_cubin_tag - 1 + 40)
        return CUDA_ERROR_INVALID_IMAGE;
    *m = (CUmodule)(uintptr_t)(0x1000000 + 0x1000 * id);
    return CUDA_SUCCESS;
}

/* The link state keeps the error log buffer of cuLinkCreate, as the driver does. */
static CUresult f_link_create(unsigned n, CUjit_option *opts, void **values, CUlinkState *state)
{
    pthread_mutex_lock(&fake.lock);
    fake.link_create++;
    pthread_mutex_unlock(&fake.lock);
    if (fake.link_create_result)
        return fake.link_create_result;
    fake_link *l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < n; i++) {
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER)
            l->error_log = values[i];
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            l->log_size = (size_t)(uintptr_t)values[i];
    }
    pthread_mutex_lock(&fake.lock);
    fake.links_live++;
    pthread_mutex_unlock(&fake.lock);
    *state = (CUlinkState)l;
    return CUDA_SUCCESS;
}
static void fake_link_log(fake_link *l)
{
    if (l->error_log && l->log_size)
        snprintf(l->error_log, l->log_size, "%s", jit_log);
}
static CUresult f_link_add(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
                           unsigned n, CUjit_option *opts, void **values)
{
    (void)n, (void)opts, (void)values;
    fake_link *l = (fake_link *)state;
    pthread_mutex_lock(&fake.lock);
    fake.link_add++;
    fake.add_type = type;
    fake.add_size = size;
    snprintf(fake.add_name, sizeof fake.add_name, "%s", name ? name : "(null)");
    pthread_mutex_unlock(&fake.lock);
    if (fake.link_add_result) {
        fake_link_log(l);
        return fake.link_add_result;
    }
    if (type != CU_JIT_INPUT_PTX || size != strlen(data) + 1)
        return CUDA_ERROR_INVALID_VALUE;
    fake_cubin(data, l->cubin);
    return CUDA_SUCCESS;
}
static CUresult f_link_complete(CUlinkState state, void **cubin, size_t *size)
{
    fake_link *l = (fake_link *)state;
    pthread_mutex_lock(&fake.lock);
    fake.link_complete++;
    pthread_mutex_unlock(&fake.lock);
    if (fake.link_complete_result) {
        fake_link_log(l);
        return fake.link_complete_result;
    }
    *cubin = l->cubin;
    *size = sizeof l->cubin;
    return CUDA_SUCCESS;
}
static CUresult f_link_destroy(CUlinkState state)
{
    pthread_mutex_lock(&fake.lock);
    fake.link_destroy++;
    fake.links_live--;
    pthread_mutex_unlock(&fake.lock);
    free(state); /* the cubin goes with it: ASan catches a use after this */
    return CUDA_SUCCESS;
}
static CUresult f_unload(CUmodule m) { (void)m; fake.unloads++; return CUDA_SUCCESS; }
static CUresult f_get_function(CUfunction *f, CUmodule m, const char *name)
{
    fake.get_function++;
    if (!strcmp(name, "missing"))
        return CUDA_ERROR_NOT_FOUND;
    *f = (CUfunction)((uintptr_t)m + strlen(name));
    return CUDA_SUCCESS;
}
static CUresult f_set_attribute(CUfunction f, CUfunction_attribute a, int v)
{
    (void)f;
    fake.set_attribute++;
    fake.attrib = a;
    fake.attrib_value = v;
    return CUDA_SUCCESS;
}
static CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned smem, CUstream s, void **params, void **extra)
{
    fake.launches++;
    fake.launch_fn = f;
    unsigned dims[7] = {gx, gy, gz, bx, by, bz, smem};
    memcpy(fake.launch_dims, dims, sizeof dims);
    fake.launch_stream = s;
    fake.launch_params = params;
    if (fake.capture_layer_params) {
        for (int i = 0; i < 5; i++)
            memcpy(&fake.launch_u64[i], params[i], 8);
        for (int i = 0; i < 3; i++)
            memcpy(&fake.launch_u32[i], params[5 + i], 4);
        /* the runtime passes its kernel's parameters and a NULL after them; a TMA kernel's map is last */
        int n = 8;
        while (n < 11 && params[n])
            n++;
        if (fake.maps && n > 8)
            memcpy(&fake.launch_map0, params[--n], 8);
        if (n > 8) /* W8A8 and fp4 activations: the token scales */
            memcpy(&fake.launch_p8, params[8], 8);
        if (n > 9) /* fp4 activations with ags=1: p_aglobal */
            memcpy(&fake.launch_p9, params[9], 8);
    }
    return extra ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
static CUresult f_max_clusters(int *clusters, CUfunction f, const CUlaunchConfig *c)
{
    (void)f;
    fake.occupancy_calls++;
    fake.occupancy_block = c->block_x;
    fake.occupancy_smem = c->smem_bytes;
    if (fake.max_clusters < 1)
        return CUDA_ERROR_INVALID_VALUE;
    *clusters = fake.max_clusters;
    return CUDA_SUCCESS;
}

static CUresult f_tensor_map(CUtensorMap *map, int dtype, unsigned rank, void *address,
                             const unsigned long long *dims, const unsigned long long *strides, const unsigned *box,
                             const unsigned *element_strides, int interleave, int swizzle, int l2_promotion,
                             int oob_fill)
{
    (void)element_strides, (void)interleave, (void)l2_promotion;
    fake.maps++;
    fake.map_dtype = dtype, fake.map_rank = rank, fake.map_address = address, fake.map_swizzle = swizzle;
    fake.map_oob = oob_fill;
    memcpy(fake.map_dims, dims, sizeof fake.map_dims);
    fake.map_stride = strides[0];
    memcpy(fake.map_box, box, sizeof fake.map_box);
    memset(map, 0, sizeof *map);
    map->opaque[0] = 0x7e45011ull + (uint64_t)fake.maps; /* a marker the launch should carry */
    return CUDA_SUCCESS;
}
static CUresult f_launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    if (!c || c->num_attrs != 1 || !c->attrs ||
        c->attrs[0].id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION ||
        c->attrs[0].value.programmatic_stream_serialization_allowed != 1)
        return CUDA_ERROR_INVALID_VALUE;
    fake.pdl_launches++;
    return f_launch(f, c->grid_x, c->grid_y, c->grid_z, c->block_x, c->block_y, c->block_z, c->smem_bytes,
                    c->stream, params, extra);
}
static CUresult f_stream_sync(CUstream s) { (void)s; return CUDA_SUCCESS; }
static CUresult f_event_create(CUevent *e, unsigned flags)
{
    (void)flags;
    *e = (CUevent)(uintptr_t)(0xE0 + ++fake.event_create);
    return CUDA_SUCCESS;
}
static CUresult f_event_record(CUevent e, CUstream s) { (void)e, (void)s; fake.records++; return CUDA_SUCCESS; }
static CUresult f_event_sync(CUevent e) { (void)e; return CUDA_SUCCESS; }
static CUresult f_elapsed(float *ms, CUevent a, CUevent b)
{
    (void)a, (void)b;
    *ms = fake.elapsed_ms ? fake.elapsed_ms[fake.elapsed_calls] : 1.0f;
    fake.elapsed_calls++;
    return CUDA_SUCCESS;
}
static CUresult f_event_destroy(CUevent e) { (void)e; fake.event_destroy++; return CUDA_SUCCESS; }

static const struct {
    CUresult r;
    const char *name, *text;
} errors[] = {
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
};
static CUresult f_error_name(CUresult r, const char **s)
{
    for (size_t i = 0; i < WB_COUNT(errors); i++)
        if (errors[i].r == r) {
            *s = errors[i].name;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE;
}
static CUresult f_error_string(CUresult r, const char **s)
{
    for (size_t i = 0; i < WB_COUNT(errors); i++)
        if (errors[i].r == r) {
            *s = errors[i].text;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE;
}

static const wb_cuda_api fake_api = {
    .cuInit = f_init,
    .cuDriverGetVersion = f_driver_version,
    .cuDeviceGet = f_device_get,
    .cuDeviceGetCount = f_device_count,
    .cuDeviceGetName = f_device_name,
    .cuDeviceGetAttribute = f_device_attribute,
    .cuDevicePrimaryCtxRetain = f_retain,
    .cuDevicePrimaryCtxRelease = f_release,
    .cuCtxSetCurrent = f_set_current,
    .cuCtxGetCurrent = f_get_current,
    .cuCtxSynchronize = f_ctx_sync,
    .cuMemAlloc = f_alloc,
    .cuMemFree = f_free,
    .cuMemcpyHtoD = f_htod,
    .cuMemcpyDtoH = f_dtoh,
    .cuMemsetD8 = f_memset,
    .cuModuleLoadDataEx = f_load,
    .cuModuleLoadData = f_load_data,
    .cuModuleUnload = f_unload,
    .cuLinkCreate = f_link_create,
    .cuLinkAddData = f_link_add,
    .cuLinkComplete = f_link_complete,
    .cuLinkDestroy = f_link_destroy,
    .cuModuleGetFunction = f_get_function,
    .cuFuncSetAttribute = f_set_attribute,
    .cuLaunchKernel = f_launch,
    .cuLaunchKernelEx = f_launch_ex,
    .cuTensorMapEncodeTiled = f_tensor_map,
    .cuOccupancyMaxActiveClusters = f_max_clusters,
    .cuStreamSynchronize = f_stream_sync,
    .cuEventCreate = f_event_create,
    .cuEventRecord = f_event_record,
    .cuEventSynchronize = f_event_sync,
    .cuEventElapsedTime = f_elapsed,
    .cuEventDestroy = f_event_destroy,
    .cuGetErrorName = f_error_name,
    .cuGetErrorString = f_error_string,
};

static void fake_setup(void)
{
    memset(&fake, 0, sizeof fake);
    pthread_mutex_init(&fake.lock, NULL);
    fake.device_count = 1;
    wb_cuda_install_fake(&fake_api);
}

static void fake_teardown(void)
{
    wb_cuda_install_fake(NULL);
    pthread_mutex_destroy(&fake.lock);
}

static wb_gpu *fake_gpu(void)
{
    wb_gpu *g = NULL;
    ck_assert_int_eq(wb_gpu_create(0, &g), WB_OK);
    ck_assert_ptr_nonnull(g);
    return g;
}

#define ck_assert_error(call, status, ...)                                                        \
    do {                                                                                          \
        ck_assert_int_eq((call), (status));                                                       \
        const char *msg_ = wb_last_error();                                                       \
        ck_assert_msg(msg_[0] != 0, "empty message after %s", #call);                             \
        ck_assert_msg(!strchr(msg_, '\n'), "message is not one line: %s", msg_);                  \
        const char *want_[] = {__VA_ARGS__};                                                      \
        for (size_t i_ = 0; i_ < WB_COUNT(want_); i_++)                                           \
            ck_assert_msg(strstr(msg_, want_[i_]), "'%s' not in message: %s", want_[i_], msg_);  \
    } while (0)

#endif
