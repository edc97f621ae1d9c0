/* Loading the CUDA driver with dlopen into a table of function pointers, and turning CUresults into
 * warble errors. One process-wide table behind a mutex; tests swap in a fake table. */
#include "runtime/cuda_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static const wb_cuda_api *fake_api; /* set by tests */
static wb_cuda_api real_api;
static int real_loaded;
static char library_path[512]; /* "" = $WARBLE_LIBCUDA or libcuda.so.1 */

void wb_cuda_install_fake(const wb_cuda_api *api)
{
    pthread_mutex_lock(&load_lock);
    fake_api = api;
    pthread_mutex_unlock(&load_lock);
}

void wb_cuda_set_library(const char *path)
{
    pthread_mutex_lock(&load_lock);
    snprintf(library_path, sizeof library_path, "%s", path ? path : "");
    real_loaded = 0; /* an earlier handle stays open: live objects may still use it */
    pthread_mutex_unlock(&load_lock);
}

static const char *library_name(void)
{
    if (library_path[0])
        return library_path;
    const char *env = getenv("WARBLE_LIBCUDA");
    return env && env[0] ? env : "libcuda.so.1";
}

/* dlopen the library and resolve every symbol of the table; called with load_lock held. */
static wb_status load_real(void)
{
    const char *name = library_name();
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return wb_fail(WB_ERR_NO_DRIVER, "%s not found: %s", name, why ? why : "dlopen failed");
    }
    wb_cuda_api api;
    memset(&api, 0, sizeof api);
    void *sym;
#define WB_CUDA_RESOLVE(member, symbol, params)                                                      \
    sym = dlsym(h, symbol);                                                                          \
    if (!sym) {                                                                                      \
        dlclose(h);                                                                                  \
        return wb_fail(WB_ERR_NO_DRIVER, "%s: symbol %s not found (driver too old?)", name, symbol); \
    }                                                                                                \
    memcpy(&api.member, &sym, sizeof sym);
    WB_CUDA_FUNCS(WB_CUDA_RESOLVE)
#undef WB_CUDA_RESOLVE
#define WB_CUDA_RESOLVE_OPTIONAL(member, symbol, params) \
    sym = dlsym(h, symbol);                              \
    memcpy(&api.member, &sym, sizeof sym);
    WB_CUDA_OPTIONAL_FUNCS(WB_CUDA_RESOLVE_OPTIONAL)
#undef WB_CUDA_RESOLVE_OPTIONAL
    real_api = api;
    real_loaded = 1;
    return WB_OK;
}

wb_status wb_cuda_load(const wb_cuda_api **out)
{
    wb_status st = WB_OK;
    pthread_mutex_lock(&load_lock);
    if (fake_api)
        *out = fake_api;
    else if (real_loaded || (st = load_real()) == WB_OK)
        *out = &real_api;
    pthread_mutex_unlock(&load_lock);
    return st;
}

wb_status wb_cuda_fail(const wb_cuda_api *api, CUresult r, wb_status status, const char *call)
{
    const char *name = NULL, *text = NULL;
    if (api && api->cuGetErrorName && api->cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = NULL;
    if (api && api->cuGetErrorString && api->cuGetErrorString(r, &text) != CUDA_SUCCESS)
        text = NULL;
    if (!name)
        return wb_fail(status, "%s failed: CUresult %d (%s)", call, r, text ? text : "unknown error");
    return wb_fail(status, "%s failed: %s (%s)", call, name, text ? text : "no description");
}
