/* The opt-in on-disk cubin cache ($WARBLE_CACHE_DIR): PTX is JIT-compiled through the cuLink* calls,
 * which hand back the cubin (cuModuleLoadDataEx does not; CU_JIT_CACHE_MODE is an L1 option, not a disk
 * cache), and the cubin is kept in a file named by the hash of everything that decides it. A warm start
 * reads the file and loads it without running ptxas. The cache is best effort: any file system problem
 * makes it a miss or skips the store, never a failed load. */
#include "runtime/disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_CUBIN = 256 << 20 }; /* a bigger file is not one of ours: a miss */

/* Threads of one process share the pid in the temporary name: one writer at a time. */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

const char *wb_disk_cache_dir(void)
{
    const char *dir = getenv("WARBLE_CACHE_DIR");
    return dir && dir[0] ? dir : NULL;
}

/* <dir>/<key>.cubin into path; 0 on success. Fails when the driver version is unknown, memory runs out
 * or the path is too long: the load then goes on without the cache. */
static int cache_path(wb_gpu *gpu, const char *dir, const char *ptx, char *path, size_t size)
{
    int version = 0;
    if (gpu->api->cuDriverGetVersion(&version) != CUDA_SUCCESS)
        return -1;
    char tail[256];
    int t = snprintf(tail, sizeof tail, "\n%d\n%d.%d\n%s", version, gpu->cc_major, gpu->cc_minor,
                     WB_DISK_CACHE_JIT_OPTIONS);
    if (t < 0 || (size_t)t >= sizeof tail)
        return -1;
    size_t n = strlen(ptx);
    char *text = malloc(n + (size_t)t);
    if (!text)
        return -1;
    memcpy(text, ptx, n);
    memcpy(text + n, tail, (size_t)t);
    char key[65];
    wb_sha256_hex(text, n + (size_t)t, key);
    free(text);
    int w = snprintf(path, size, "%s/%s.cubin", dir, key);
    return w > 0 && (size_t)w < size ? 0 : -1;
}

/* The whole regular file, NUL-terminated (the driver reads an image that is not ELF as a PTX string);
 * NULL when it is absent, not a regular file, too big or unreadable. */
static unsigned char *read_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat sb;
    unsigned char *data = NULL;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size >= 0 && sb.st_size <= MAX_CUBIN)
        data = malloc((size_t)sb.st_size + 1);
    size_t n = 0;
    while (data && n < (size_t)sb.st_size) {
        ssize_t r = read(fd, data + n, (size_t)sb.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) { /* an error, or the file shrank under us */
            free(data);
            data = NULL;
        } else {
            n += (size_t)r;
        }
    }
    close(fd);
    if (data) {
        data[n] = 0;
        *size = n;
    }
    return data;
}

/* A hit: the cached cubin is loaded. A file that is there but is not an ELF image or that the driver
 * refuses is deleted, and the caller JITs (and stores a good one). */
static int load_cached(wb_gpu *gpu, const char *path, CUmodule *module)
{
    size_t size = 0;
    unsigned char *cubin = read_file(path, &size);
    if (!cubin)
        return 0;
    int ok = size >= 4 && !memcmp(cubin, "\x7f" "ELF", 4) &&
             gpu->api->cuModuleLoadData(module, cubin) == CUDA_SUCCESS;
    free(cubin);
    if (!ok)
        unlink(path);
    return ok;
}

/* mkdir -p, each folder it creates with mode 0700; 0 when `dir` is a folder at the end. */
static int make_dirs(const char *dir)
{
    char path[PATH_MAX];
    size_t len = strlen(dir);
    if (len >= sizeof path)
        return -1;
    memcpy(path, dir, len + 1);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(path, 0700) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    struct stat sb;
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return -1;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Store the cubin as <path>, atomically: readers see the old file, no file or the whole new one. No
 * fsync: a file cut short by a crash does not load and is deleted on the next read. Failures are
 * ignored (best effort); the temporary file is removed. */
static void store(const char *dir, const char *path, const void *cubin, size_t size)
{
    char tmp[PATH_MAX + 32];
    int w = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (w <= 0 || (size_t)w >= sizeof tmp || make_dirs(dir) != 0)
        return;
    pthread_mutex_lock(&write_lock);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
        int ok = write_all(fd, cubin, size) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, path) != 0)
            unlink(tmp);
    }
    pthread_mutex_unlock(&write_lock);
}

/* A miss: PTX -> cubin with the cuLink* calls (error and info logs as in module_cache.c's jit), the cubin
 * loaded, then stored when `path` is set. The cubin belongs to the link state: load and store it before
 * cuLinkDestroy. Storing after a successful load keeps a cubin that does not load out of the cache. */
static wb_status link_and_load(wb_gpu *gpu, const char *ptx, const char *dir, const char *path,
                               CUmodule *module)
{
    wb_jit_logs logs;
    wb_status st = wb_jit_logs_init(&logs);
    if (st)
        return st;
    const wb_cuda_api *api = gpu->api;
    CUlinkState link = NULL;
    void *cubin = NULL;
    size_t size = 0;
    const char *call = "cuLinkCreate";
    CUresult r = api->cuLinkCreate(4, logs.opts, logs.values, &link);
    int created = r == CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        call = "cuLinkAddData"; /* PTX must be NUL-terminated: the size counts the NUL */
        r = api->cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)ptx, strlen(ptx) + 1, "warble.ptx", 0,
                               NULL, NULL);
    }
    if (r == CUDA_SUCCESS) {
        call = "cuLinkComplete";
        r = api->cuLinkComplete(link, &cubin, &size);
    }
    if (r == CUDA_SUCCESS) {
        call = "cuModuleLoadData";
        r = api->cuModuleLoadData(module, cubin);
    }
    if (r != CUDA_SUCCESS)
        st = wb_jit_fail(api, r, call, &logs);
    else if (path && cubin && size > 0) {
        store(dir, path, cubin, size);
    }
    if (created)
        api->cuLinkDestroy(link);
    wb_jit_logs_free(&logs);
    return st;
}

wb_status wb_disk_cache_load(wb_gpu *gpu, const char *dir, const char *ptx, CUmodule *module)
{
    char path[PATH_MAX];
    int keyed = cache_path(gpu, dir, ptx, path, sizeof path) == 0;
    if (keyed && load_cached(gpu, path, module))
        return WB_OK;
    return link_and_load(gpu, ptx, dir, keyed ? path : NULL, module);
}
