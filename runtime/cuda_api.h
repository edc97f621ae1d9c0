/* The CUDA driver as warble sees it: a table of function pointers, filled by dlopen("libcuda.so.1")
 * at run time so the library builds and runs without the CUDA toolkit. Tests install a fake table to
 * drive the no-driver and failure paths. The few types and constants below are copied from cuda.h
 * (same numeric values); nothing here includes it. Internal: not installed. */
#ifndef WB_CUDA_API_H
#define WB_CUDA_API_H

#include <stddef.h>
#include "dsl/common.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;
typedef int CUjit_option;
typedef int CUjitInputType;
typedef struct CUlinkState_st *CUlinkState;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_NOT_FOUND = 500,
};

enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };

enum {
    CU_JIT_INFO_LOG_BUFFER = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

enum { CU_JIT_INPUT_CUBIN = 0, CU_JIT_INPUT_PTX = 1 }; /* CUjitInputType */

enum { CU_EVENT_DEFAULT = 0 };

/* cuLaunchKernelEx (CUDA 12.0 and newer drivers), for programmatic dependent launch */
enum { CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6 };
typedef struct CUlaunchAttribute {
    int id;
    char pad[4];
    union {
        char pad[64];
        int programmatic_stream_serialization_allowed;
    } value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig {
    unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, smem_bytes;
    CUstream stream;
    CUlaunchAttribute *attrs;
    unsigned num_attrs;
} CUlaunchConfig;

/* X-macro: member name, exported symbol, return type and parameter list. The symbol is the versioned
 * name the driver exports for the API of current headers (cuMemAlloc -> cuMemAlloc_v2, ...). */
#define WB_CUDA_FUNCS(X)                                                                            \
    X(cuInit, "cuInit", (unsigned flags))                                                           \
    X(cuDriverGetVersion, "cuDriverGetVersion", (int *version))                                     \
    X(cuDeviceGet, "cuDeviceGet", (CUdevice * dev, int ordinal))                                    \
    X(cuDeviceGetCount, "cuDeviceGetCount", (int *count))                                           \
    X(cuDeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice dev))                      \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *pi, CUdevice_attribute attrib, CUdevice dev)) \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext * pctx, CUdevice dev))       \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice dev))                    \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext ctx))                                          \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", (CUcontext * pctx))                                       \
    X(cuCtxSynchronize, "cuCtxSynchronize", (void))                                                 \
    X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr * dptr, size_t bytes))                              \
    X(cuMemFree, "cuMemFree_v2", (CUdeviceptr dptr))                                                \
    X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr dst, const void *src, size_t bytes))            \
    X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *dst, CUdeviceptr src, size_t bytes))                  \
    X(cuMemsetD8, "cuMemsetD8_v2", (CUdeviceptr dst, unsigned char uc, size_t n))                   \
    X(cuModuleLoadDataEx, "cuModuleLoadDataEx",                                                     \
      (CUmodule * module, const void *image, unsigned n_options, CUjit_option *options, void **values)) \
    X(cuModuleLoadData, "cuModuleLoadData", (CUmodule * module, const void *image))                 \
    X(cuModuleUnload, "cuModuleUnload", (CUmodule module))                                          \
    X(cuLinkCreate, "cuLinkCreate_v2",                                                              \
      (unsigned n_options, CUjit_option *options, void **values, CUlinkState *state))               \
    X(cuLinkAddData, "cuLinkAddData_v2",                                                            \
      (CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,           \
       unsigned n_options, CUjit_option *options, void **values))                                   \
    X(cuLinkComplete, "cuLinkComplete", (CUlinkState state, void **cubin, size_t *size))            \
    X(cuLinkDestroy, "cuLinkDestroy", (CUlinkState state))                                          \
    X(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction * fn, CUmodule module, const char *name)) \
    X(cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction fn, CUfunction_attribute attrib, int value)) \
    X(cuLaunchKernel, "cuLaunchKernel",                                                             \
      (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,  \
       unsigned smem, CUstream stream, void **params, void **extra))                                \
    X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream stream))                                \
    X(cuEventCreate, "cuEventCreate", (CUevent * ev, unsigned flags))                               \
    X(cuEventRecord, "cuEventRecord", (CUevent ev, CUstream stream))                                \
    X(cuEventSynchronize, "cuEventSynchronize", (CUevent ev))                                       \
    X(cuEventElapsedTime, "cuEventElapsedTime", (float *ms, CUevent start, CUevent end))           \
    X(cuEventDestroy, "cuEventDestroy_v2", (CUevent ev))                                            \
    X(cuGetErrorName, "cuGetErrorName", (CUresult err, const char **name))                          \
    X(cuGetErrorString, "cuGetErrorString", (CUresult err, const char **str))

/* cuTensorMapEncodeTiled (CUDA 12.0 and newer drivers), for TMA loads: an opaque 128-byte map */
typedef struct CUtensorMap {
    _Alignas(128) unsigned long long opaque[16];
} CUtensorMap;
enum { CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0, CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9 };
enum { CU_TENSOR_MAP_INTERLEAVE_NONE = 0, CU_TENSOR_MAP_SWIZZLE_128B = 3, CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0 };

/* Functions used when the driver has them (NULL otherwise): an older driver still runs warble. */
#define WB_CUDA_OPTIONAL_FUNCS(X)                                                                   \
    X(cuLaunchKernelEx, "cuLaunchKernelEx",                                                         \
      (const CUlaunchConfig *config, CUfunction f, void **params, void **extra))                    \
    X(cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters",                                 \
      (int *clusters, CUfunction f, const CUlaunchConfig *config))                                  \
    X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled",                                             \
      (CUtensorMap * map, int dtype, unsigned rank, void *address, const unsigned long long *dims,  \
       const unsigned long long *strides, const unsigned *box, const unsigned *element_strides,     \
       int interleave, int swizzle, int l2_promotion, int oob_fill))

typedef struct wb_cuda_api {
#define WB_CUDA_MEMBER(name, sym, params) CUresult (*name) params;
    WB_CUDA_FUNCS(WB_CUDA_MEMBER)
    WB_CUDA_OPTIONAL_FUNCS(WB_CUDA_MEMBER)
#undef WB_CUDA_MEMBER
} wb_cuda_api;

/* The driver table: the fake one when installed, else libcuda loaded on first use (kept loaded for
 * the life of the process). WB_ERR_NO_DRIVER with the dlopen/dlsym message when it cannot be loaded. */
wb_status wb_cuda_load(const wb_cuda_api **out);

/* Tests: install a fake table used by every later wb_cuda_load (NULL goes back to the real driver). */
void wb_cuda_install_fake(const wb_cuda_api *api);
/* Tests and tools: the library that wb_cuda_load opens (NULL = $WARBLE_LIBCUDA, else "libcuda.so.1").
 * Forgets an earlier load, so the next wb_cuda_load opens the new path. */
void wb_cuda_set_library(const char *path);

/* WB_OK when r is CUDA_SUCCESS; else wb_fail(status, "<call> failed: CUDA_ERROR_X (text)"). */
wb_status wb_cuda_fail(const wb_cuda_api *api, CUresult r, wb_status status, const char *call);
static inline wb_status wb_cuda_check(const wb_cuda_api *api, CUresult r, const char *call)
{
    return r == CUDA_SUCCESS ? WB_OK : wb_cuda_fail(api, r, WB_ERR_DRIVER, call);
}

#endif
