/* The opt-in on-disk cubin cache behind the in-memory module cache: warm starts skip ptxas. Off unless
 * $WARBLE_CACHE_DIR names a folder. Internal: not installed. */
#ifndef WB_DISK_CACHE_H
#define WB_DISK_CACHE_H

#include "runtime/gpu_internal.h"

/* The last line of the text that names a cubin (after the PTX, the driver version and the compute
 * capability): what the JIT is asked to do. Change it whenever the link options change, so cubins built
 * with other options are not reused. */
#define WB_DISK_CACHE_JIT_OPTIONS "warble cubin v1: cuLinkAddData PTX, no compile options, log buffers only"

/* $WARBLE_CACHE_DIR, or NULL when it is unset or empty (the cache is off: cuModuleLoadDataEx as always). */
const char *wb_disk_cache_dir(void);

/* PTX -> module through the cubin cache in `dir`. The file is <dir>/<key>.cubin, where key is the sha256
 * of PTX "\n" driver version "\n" major.minor "\n" WB_DISK_CACHE_JIT_OPTIONS. A hit loads the file with
 * cuModuleLoadData; a file that does not load is deleted and treated as a miss. A miss JITs through
 * cuLinkCreate/AddData/Complete, loads the cubin and then stores it (write to <file>.tmp.<pid>, rename).
 * The cache is best effort: a folder or file that cannot be made, read or written never fails the load.
 * JIT failures are WB_ERR_JIT with the log, as from cuModuleLoadDataEx. Called with cache_lock held. */
wb_status wb_disk_cache_load(wb_gpu *gpu, const char *dir, const char *ptx, CUmodule *module);

#endif
