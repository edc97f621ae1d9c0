/* The wb_gpu handle, shared by gpu.c (device, memory, launch, timing), module_cache.c (PTX -> function),
 * disk_cache.c (the opt-in cubin cache) and layer.c. Internal: not installed. */
#ifndef WB_GPU_INTERNAL_H
#define WB_GPU_INTERNAL_H

#include <pthread.h>
#include "runtime/cuda_api.h"

typedef struct wb_module_entry wb_module_entry; /* module_cache.c */

struct wb_gpu {
    const wb_cuda_api *api;
    CUdevice dev;
    CUcontext ctx;
    wb_arch arch;
    int cc_major, cc_minor;
    int sm_count;
    int smem_optin;             /* dynamic shared memory a block may opt in to; every function is opted in at load */
    int pdl;                    /* launch with programmatic stream serialization (sm_90+, WARBLE_PDL != 0) */
    char name[256];
    pthread_mutex_t cache_lock; /* guards `modules` */
    wb_module_entry *modules;   /* loaded modules, by PTX sha256 */
    struct {                    /* the activation quantizers loaded (quant.c), by what their PTX depends on */
        uint64_t key;
        void *fn;
    } quant[16];
    int nquant;                 /* guarded by cache_lock too */
};

/* Every entry point taking a wb_gpu starts here: NULL -> WB_ERR_INVALID naming `fn`; then makes the
 * gpu's context current on the calling thread. */
wb_status wb_gpu_enter(wb_gpu *gpu, const char *fn);

/* A 2-D TMA map of a row-major activation matrix (rows x cols of type a: f16, bf16 or an 8-bit code;
 * 16-byte aligned rows) read in boxes of box_rows x 128 bytes with the 128-byte swizzle; rows past the
 * end read as zeros. WB_ERR_UNSUPPORTED when the driver has no cuTensorMapEncodeTiled. */
wb_status wb_gpu_tensor_map(wb_gpu *gpu, CUtensorMap *map, wb_type a, wb_devptr base, uint64_t rows, uint64_t cols,
                            unsigned box_rows);

/* The blocks of `fn` (launched as d says, in clusters of `cluster` blocks) that the device holds at
 * once: what a persistent grid may take. Clusters: the driver's count of co-resident clusters
 * (cuOccupancyMaxActiveClusters) times their size, or without that call the SMs rounded down to whole
 * clusters; otherwise the SMs (the persistent kernels take one block an SM). */
int wb_gpu_resident_blocks(wb_gpu *gpu, void *fn, const wb_launch_dims *d, int cluster);

/* Unload every cached module (wb_gpu_destroy; the context must be current). */
void wb_module_cache_free(wb_gpu *gpu);

/* The JIT's error and info log buffers and the four options that hand them to the driver
 * (cuModuleLoadDataEx and cuLinkCreate take the same ones). */
enum { WB_JIT_LOG = 16384 };
typedef struct wb_jit_logs {
    char *error, *info;
    CUjit_option opts[4];
    void *values[4];
} wb_jit_logs;
wb_status wb_jit_logs_init(wb_jit_logs *l);
void wb_jit_logs_free(wb_jit_logs *l);

/* A failed JIT as WB_ERR_JIT: "<call> failed: CUDA_ERROR_X (text): <the JIT log on one line>". */
wb_status wb_jit_fail(const wb_cuda_api *api, CUresult r, const char *call, wb_jit_logs *logs);

#endif
