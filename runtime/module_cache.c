/* PTX -> CUmodule -> CUfunction, cached per wb_gpu by the sha256 of the PTX text, so a kernel is
 * JIT-compiled once per process and device. A list is enough: a process loads tens of kernels. The JIT
 * error log goes into the WB_ERR_JIT message, on one line. With $WARBLE_CACHE_DIR set, a module this
 * cache does not hold comes from the on-disk cubin cache (disk_cache.c) instead of cuModuleLoadDataEx. */
#include "runtime/disk_cache.h"
#include "runtime/gpu_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct wb_function_entry {
    struct wb_function_entry *next;
    CUfunction fn;
    char name[]; /* entry name */
} wb_function_entry;

struct wb_module_entry {
    wb_module_entry *next;
    CUmodule module;
    char sha256[65];
    wb_function_entry *functions;
};

void wb_module_cache_free(wb_gpu *gpu)
{
    for (wb_module_entry *m = gpu->modules, *next; m; m = next) {
        next = m->next;
        for (wb_function_entry *f = m->functions, *fnext; f; f = fnext) {
            fnext = f->next;
            free(f);
        }
        gpu->api->cuModuleUnload(m->module);
        free(m);
    }
    gpu->modules = NULL;
}

/* The log as one line: newlines become " | ", trailing blank lines are dropped. */
static void one_line(const char *log, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = log; *p && o + 4 < size; p++) {
        if (*p == '\r')
            continue;
        if (*p == '\n') {
            const char *q = p;
            while (*q == '\n' || *q == '\r')
                q++;
            if (!*q)
                break;
            memcpy(out + o, " | ", 3);
            o += 3;
            p = q - 1;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

wb_status wb_jit_logs_init(wb_jit_logs *l)
{
    l->error = calloc(2, WB_JIT_LOG);
    if (!l->error)
        return wb_fail(WB_ERR_NOMEM, "wb_gpu_load: out of memory");
    l->info = l->error + WB_JIT_LOG;
    CUjit_option opts[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *values[4] = {l->error, (void *)(uintptr_t)(WB_JIT_LOG - 1), l->info, (void *)(uintptr_t)(WB_JIT_LOG - 1)};
    memcpy(l->opts, opts, sizeof opts);
    memcpy(l->values, values, sizeof values);
    return WB_OK;
}

void wb_jit_logs_free(wb_jit_logs *l)
{
    free(l->error);
    l->error = l->info = NULL;
}

wb_status wb_jit_fail(const wb_cuda_api *api, CUresult r, const char *call, wb_jit_logs *logs)
{
    char line[1024];
    const char *log = logs->error;
    logs->error[WB_JIT_LOG - 1] = 0;
    one_line(log[0] ? log : "(empty JIT log)", line, sizeof line);
    wb_status st = wb_cuda_fail(api, r, WB_ERR_JIT, call);
    char head[512];
    strncpy(head, wb_last_error(), sizeof head - 1);
    head[sizeof head - 1] = 0;
    return wb_fail(st, "%s: %s", head, line);
}

/* JIT the PTX with error and info logs; WB_ERR_JIT with the log on failure. */
static wb_status jit(wb_gpu *gpu, const char *ptx, CUmodule *module)
{
    wb_jit_logs logs;
    wb_status st = wb_jit_logs_init(&logs);
    if (st)
        return st;
    CUresult r = gpu->api->cuModuleLoadDataEx(module, ptx, 4, logs.opts, logs.values);
    if (r != CUDA_SUCCESS)
        st = wb_jit_fail(gpu->api, r, "cuModuleLoadDataEx", &logs);
    wb_jit_logs_free(&logs);
    return st;
}

/* The module of this sha256, loading it if new; called with cache_lock held. */
static wb_status find_module(wb_gpu *gpu, const char *ptx, const char *sha, wb_module_entry **out)
{
    for (wb_module_entry *m = gpu->modules; m; m = m->next)
        if (!strcmp(m->sha256, sha)) {
            *out = m;
            return WB_OK;
        }
    wb_module_entry *m = calloc(1, sizeof *m);
    if (!m)
        return wb_fail(WB_ERR_NOMEM, "wb_gpu_load: out of memory");
    const char *dir = wb_disk_cache_dir();
    wb_status st = dir ? wb_disk_cache_load(gpu, dir, ptx, &m->module) : jit(gpu, ptx, &m->module);
    if (st) {
        free(m);
        return st;
    }
    memcpy(m->sha256, sha, sizeof m->sha256);
    m->next = gpu->modules;
    gpu->modules = m;
    *out = m;
    return WB_OK;
}

static wb_status find_function(wb_gpu *gpu, wb_module_entry *m, const char *entry, CUfunction *out)
{
    for (wb_function_entry *f = m->functions; f; f = f->next)
        if (!strcmp(f->name, entry)) {
            *out = f->fn;
            return WB_OK;
        }
    size_t len = strlen(entry);
    wb_function_entry *f = calloc(1, sizeof *f + len + 1);
    if (!f)
        return wb_fail(WB_ERR_NOMEM, "wb_gpu_load: out of memory");
    wb_status st = wb_cuda_check(gpu->api, gpu->api->cuModuleGetFunction(&f->fn, m->module, entry),
                                 "cuModuleGetFunction");
    if (st) {
        char head[768];
        strncpy(head, wb_last_error(), sizeof head - 1);
        head[sizeof head - 1] = 0;
        free(f);
        return wb_fail(st, "%s (entry '%.128s')", head, entry);
    }
    /* above 48 KiB, dynamic shared memory is opt-in per function: opt in once, to the device's maximum,
     * so that launches need no driver call for it */
    if (gpu->smem_optin > 48 * 1024 &&
        (st = wb_cuda_check(gpu->api, gpu->api->cuFuncSetAttribute(f->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                                   gpu->smem_optin),
                            "cuFuncSetAttribute"))) {
        free(f);
        return st;
    }
    memcpy(f->name, entry, len + 1);
    f->next = m->functions;
    m->functions = f;
    *out = f->fn;
    return WB_OK;
}

wb_status wb_gpu_load(wb_gpu *gpu, const char *ptx, const char *entry, void **function_out)
{
    if (function_out)
        *function_out = NULL;
    wb_status st = wb_gpu_enter(gpu, "wb_gpu_load");
    if (st)
        return st;
    if (!ptx || !entry || !function_out)
        return wb_fail(WB_ERR_INVALID, "wb_gpu_load: NULL %s",
                       !ptx ? "ptx" : !entry ? "entry" : "function_out");
    char sha[65];
    wb_sha256_hex(ptx, strlen(ptx), sha);
    pthread_mutex_lock(&gpu->cache_lock);
    wb_module_entry *m = NULL;
    CUfunction fn = NULL;
    st = find_module(gpu, ptx, sha, &m);
    if (!st)
        st = find_function(gpu, m, entry, &fn);
    pthread_mutex_unlock(&gpu->cache_lock);
    if (!st)
        *function_out = fn;
    return st;
}
