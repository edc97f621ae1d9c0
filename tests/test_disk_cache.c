/* The opt-in on-disk cubin cache ($WARBLE_CACHE_DIR) with the fake driver: a miss links and stores, a
 * fresh handle loads the stored cubin without linking, a bad file is replaced, JIT failures keep their
 * log, file system trouble never fails a load, and without the variable nothing changes. */
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fake_cuda.h"
#include "runtime/disk_cache.h"

static const char *ptx_one = ".version 8.0\n.target sm_90a\n// kernel one\n";
static const char *ptx_two = ".version 8.0\n.target sm_90a\n// kernel two\n";

static char root[64];       /* a fresh temporary folder per test */
static char cache_dir[128]; /* root/cache/sub: made by the first store */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void dc_setup(void)
{
    fake_setup();
    snprintf(root, sizeof root, "/tmp/wb_disk_cache_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(cache_dir, sizeof cache_dir, "%s/cache/sub", root);
    setenv("WARBLE_CACHE_DIR", cache_dir, 1);
}

static void dc_teardown(void)
{
    unsetenv("WARBLE_CACHE_DIR");
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    fake_teardown();
}

/* Where the cache must put the cubin of `ptx` for the fake device (cc 9.0) and driver `version`. */
static void expected_path(const char *ptx, int version, char *path, size_t size)
{
    char *text = NULL;
    ck_assert_int_gt(asprintf(&text, "%s\n%d\n9.0\n%s", ptx, version, WB_DISK_CACHE_JIT_OPTIONS), 0);
    char key[65];
    wb_sha256_hex(text, strlen(text), key);
    free(text);
    snprintf(path, size, "%s/%s.cubin", cache_dir, key);
}

/* The file's bytes (at most `cap`), or -1 when it cannot be read. */
static long read_whole(const char *path, unsigned char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return (long)n;
}

static void write_whole(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Entries of the cache folder whose name contains `part` (0 when the folder does not exist). */
static int count_entries(const char *part)
{
    DIR *d = opendir(cache_dir);
    if (!d)
        return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

/* The file holds exactly the fake's cubin of `ptx`. */
static void assert_cubin_file(const char *path, const char *ptx)
{
    unsigned char want[FAKE_CUBIN_SIZE], got[2 * FAKE_CUBIN_SIZE];
    fake_cubin(ptx, want);
    ck_assert_int_eq(read_whole(path, got, sizeof got), FAKE_CUBIN_SIZE);
    ck_assert_mem_eq(got, want, FAKE_CUBIN_SIZE);
    ck_assert_int_eq(count_entries(".tmp."), 0);
}

static void assert_links(int create, int add, int complete, int destroy)
{
    ck_assert_int_eq(fake.link_create, create);
    ck_assert_int_eq(fake.link_add, add);
    ck_assert_int_eq(fake.link_complete, complete);
    ck_assert_int_eq(fake.link_destroy, destroy);
    ck_assert_int_eq(fake.links_live, 0);
}

static void load_ok(const char *ptx)
{
    wb_gpu *g = fake_gpu();
    void *fn = NULL;
    ck_assert_int_eq(wb_gpu_load(g, ptx, "kernel", &fn), WB_OK);
    ck_assert_ptr_nonnull(fn);
    wb_gpu_destroy(g);
}

/* ---------------------------------------------------------------- hits and misses */

START_TEST(test_miss_then_hit)
{
    char path[512];
    expected_path(ptx_one, 13000, path, sizeof path);
    wb_gpu *g = fake_gpu();
    void *f1 = NULL, *f2 = NULL;
    ck_assert_int_eq(wb_gpu_load(g, ptx_one, "kernel", &f1), WB_OK);
    ck_assert_ptr_nonnull(f1);
    assert_links(1, 1, 1, 1);
    ck_assert_int_eq(fake.add_type, CU_JIT_INPUT_PTX);
    ck_assert_uint_eq(fake.add_size, strlen(ptx_one) + 1);
    ck_assert_str_eq(fake.add_name, "warble.ptx");
    ck_assert_int_eq(fake.load_data, 1);
    ck_assert_int_eq(fake.loads, 0); /* not cuModuleLoadDataEx */
    assert_cubin_file(path, ptx_one);
    ck_assert_int_eq(count_entries(".cubin"), 1);
    /* the folders it made are private; so is the file */
    struct stat sb;
    ck_assert_int_eq(stat(cache_dir, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0700);
    char parent[160];
    snprintf(parent, sizeof parent, "%s/cache", root);
    ck_assert_int_eq(stat(parent, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0700);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0077, 0);
    /* the in-memory cache stays in front: no file access, no driver call */
    ck_assert_int_eq(wb_gpu_load(g, ptx_one, "kernel", &f2), WB_OK);
    ck_assert_ptr_eq(f1, f2);
    ck_assert_int_eq(fake.load_data, 1);
    wb_gpu_destroy(g);
    ck_assert_int_eq(fake.unloads, 1);

    /* a fresh handle (empty in-memory cache): the cubin comes from the file, nothing is linked */
    g = fake_gpu();
    memset(fake.loaded_image, 0, sizeof fake.loaded_image);
    ck_assert_int_eq(wb_gpu_load(g, ptx_one, "kernel", &f2), WB_OK);
    ck_assert_ptr_nonnull(f2);
    assert_links(1, 1, 1, 1);
    ck_assert_int_eq(fake.load_data, 2);
    ck_assert_int_eq(fake.loads, 0);
    unsigned char file[FAKE_CUBIN_SIZE];
    ck_assert_int_eq(read_whole(path, file, sizeof file), FAKE_CUBIN_SIZE);
    ck_assert_mem_eq(fake.loaded_image, file, FAKE_CUBIN_SIZE);
    wb_gpu_destroy(g);
    ck_assert_int_eq(fake.unloads, 2);
}
END_TEST

/* The key holds the PTX and the driver version: another PTX or a driver update is a miss. */
START_TEST(test_key)
{
    load_ok(ptx_one);
    load_ok(ptx_two);
    assert_links(2, 2, 2, 2);
    ck_assert_int_eq(count_entries(".cubin"), 2);
    load_ok(ptx_two);
    assert_links(2, 2, 2, 2);
    fake.driver_version = 13010;
    load_ok(ptx_one);
    assert_links(3, 3, 3, 3);
    char path[512];
    expected_path(ptx_one, 13010, path, sizeof path);
    assert_cubin_file(path, ptx_one);
    ck_assert_int_eq(count_entries(".cubin"), 3);
}
END_TEST

/* A file that does not load is deleted, the PTX is linked again and the file rewritten. An image that
 * is not ELF never reaches the driver (which would read it as PTX text). */
START_TEST(test_corrupt_file)
{
    static const struct {
        const char *data;
        int reaches_driver;
    } bad[] = {
        {"\x7f" "ELF but not a cubin", 1},
        {"\x7f" "ELF fake cubin 0123", 1}, /* cut short */
        {"garbage that is not ELF", 0},
        {"", 0},
        {"\x7f" "EL", 0},
    };
    char path[512];
    expected_path(ptx_one, 13000, path, sizeof path);
    load_ok(ptx_one);
    assert_cubin_file(path, ptx_one);
    int links = 1, loads = 1;
    for (size_t i = 0; i < WB_COUNT(bad); i++) {
        write_whole(path, bad[i].data, strlen(bad[i].data));
        load_ok(ptx_one);
        links++;
        loads += 1 + bad[i].reaches_driver;
        assert_links(links, links, links, links);
        ck_assert_int_eq(fake.load_data, loads);
        assert_cubin_file(path, ptx_one);
    }
    /* and the rewritten file is a hit again */
    load_ok(ptx_one);
    assert_links(links, links, links, links);
    /* the bad file is deleted before the JIT, so it is gone even when nothing replaces it */
    write_whole(path, "garbage", 7);
    fake.link_add_result = CUDA_ERROR_INVALID_PTX;
    wb_gpu *g = fake_gpu();
    void *fn = NULL;
    ck_assert_error(wb_gpu_load(g, ptx_one, "kernel", &fn), WB_ERR_JIT, "cuLinkAddData failed");
    wb_gpu_destroy(g);
    ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

/* ---------------------------------------------------------------- JIT failures */

/* The message after "<call> failed: ": the CUresult and the JIT log. */
static const char *after_call(const char *msg)
{
    const char *p = strstr(msg, " failed: ");
    ck_assert_ptr_nonnull(p);
    return p + strlen(" failed: ");
}

START_TEST(test_link_failure)
{
    void *fn = (void *)&fn;
    const char *log = "line 3; error   : Unknown symbol 'foo' | ptxas fatal   : Ptx assembly aborted";
    /* the old path's message, for comparison */
    unsetenv("WARBLE_CACHE_DIR");
    wb_gpu *g = fake_gpu();
    fake.jit_result = CUDA_ERROR_INVALID_PTX;
    ck_assert_error(wb_gpu_load(g, ptx_one, "kernel", &fn), WB_ERR_JIT,
                    "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX", log);
    char old_msg[1024];
    snprintf(old_msg, sizeof old_msg, "%s", after_call(wb_last_error()));
    fake.jit_result = CUDA_SUCCESS;
    setenv("WARBLE_CACHE_DIR", cache_dir, 1);

    fake.link_add_result = CUDA_ERROR_INVALID_PTX;
    ck_assert_error(wb_gpu_load(g, ptx_two, "kernel", &fn), WB_ERR_JIT,
                    "cuLinkAddData failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)", log);
    ck_assert_str_eq(after_call(wb_last_error()), old_msg);
    ck_assert_ptr_null(fn);
    assert_links(1, 1, 0, 1);
    fake.link_add_result = CUDA_SUCCESS;

    fake.link_complete_result = CUDA_ERROR_INVALID_PTX;
    ck_assert_error(wb_gpu_load(g, ptx_two, "kernel", &fn), WB_ERR_JIT,
                    "cuLinkComplete failed: CUDA_ERROR_INVALID_PTX", log);
    assert_links(2, 2, 1, 2);
    fake.link_complete_result = CUDA_SUCCESS;

    fake.link_create_result = CUDA_ERROR_OUT_OF_MEMORY;
    ck_assert_error(wb_gpu_load(g, ptx_two, "kernel", &fn), WB_ERR_JIT,
                    "cuLinkCreate failed: CUDA_ERROR_OUT_OF_MEMORY", "(empty JIT log)");
    assert_links(3, 2, 1, 2); /* no state was made: nothing to destroy */
    fake.link_create_result = CUDA_SUCCESS;

    fake.load_data_result = CUDA_ERROR_OUT_OF_MEMORY;
    ck_assert_error(wb_gpu_load(g, ptx_two, "kernel", &fn), WB_ERR_JIT,
                    "cuModuleLoadData failed: CUDA_ERROR_OUT_OF_MEMORY", "(empty JIT log)");
    assert_links(4, 3, 2, 3);
    ck_assert_int_eq(count_entries(".cubin"), 0); /* a cubin that did not load is not stored */
    fake.load_data_result = CUDA_SUCCESS;

    /* failures are not cached, in memory or on disk */
    ck_assert_int_eq(wb_gpu_load(g, ptx_two, "kernel", &fn), WB_OK);
    ck_assert_ptr_nonnull(fn);
    assert_links(5, 4, 3, 4);
    ck_assert_int_eq(count_entries(".cubin"), 1);
    wb_gpu_destroy(g);
}
END_TEST

/* ---------------------------------------------------------------- best effort */

START_TEST(test_unwritable)
{
    char file[128], dir[160];
    snprintf(file, sizeof file, "%s/file", root);
    write_whole(file, "x", 1);
    int links = 0;
    /* a folder that cannot be made (its parent is a file), and a file as the folder */
    snprintf(dir, sizeof dir, "%s/cache", file);
    const char *dirs[] = {dir, file};
    for (size_t i = 0; i < WB_COUNT(dirs); i++) {
        setenv("WARBLE_CACHE_DIR", dirs[i], 1);
        load_ok(ptx_one);
        load_ok(ptx_one); /* a miss again: nothing was stored */
        links += 2;
        assert_links(links, links, links, links);
    }
    /* a path too long to build */
    char *long_dir = malloc(6000);
    ck_assert_ptr_nonnull(long_dir);
    memset(long_dir, 'a', 5999);
    long_dir[0] = '/';
    long_dir[5999] = 0;
    setenv("WARBLE_CACHE_DIR", long_dir, 1);
    free(long_dir);
    load_ok(ptx_one);
    links++;
    assert_links(links, links, links, links);
    /* the cubin's name is taken by a folder: the rename fails, the temporary file is removed */
    setenv("WARBLE_CACHE_DIR", cache_dir, 1);
    char path[512];
    expected_path(ptx_one, 13000, path, sizeof path);
    char parent[160];
    snprintf(parent, sizeof parent, "%s/cache", root);
    ck_assert_int_eq(mkdir(parent, 0700), 0);
    ck_assert_int_eq(mkdir(cache_dir, 0700), 0);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    load_ok(ptx_one);
    links++;
    assert_links(links, links, links, links);
    ck_assert_int_eq(count_entries(".tmp."), 0);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert(S_ISDIR(sb.st_mode));
    /* a read-only folder (root writes anyway, so only for others) */
    if (geteuid() != 0) {
        rmdir(path);
        ck_assert_int_eq(chmod(cache_dir, 0500), 0);
        load_ok(ptx_one);
        links++;
        assert_links(links, links, links, links);
        ck_assert_int_eq(count_entries(".cubin"), 0);
        chmod(cache_dir, 0700);
    }
}
END_TEST

/* ---------------------------------------------------------------- off */

START_TEST(test_off)
{
    const char *values[] = {NULL, ""};
    for (size_t i = 0; i < WB_COUNT(values); i++) {
        if (values[i])
            setenv("WARBLE_CACHE_DIR", values[i], 1);
        else
            unsetenv("WARBLE_CACHE_DIR");
        wb_gpu *g = fake_gpu();
        void *fn = NULL;
        ck_assert_int_eq(wb_gpu_load(g, ptx_one, "kernel", &fn), WB_OK);
        ck_assert_ptr_nonnull(fn);
        ck_assert_int_eq(fake.loads, 1); /* cuModuleLoadDataEx, as always */
        assert_links(0, 0, 0, 0);
        ck_assert_int_eq(fake.load_data, 0);
        fake.jit_result = CUDA_ERROR_INVALID_PTX;
        ck_assert_error(wb_gpu_load(g, ptx_two, "kernel", &fn), WB_ERR_JIT,
                        "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX", "Unknown symbol 'foo'");
        fake.jit_result = CUDA_SUCCESS;
        fake.loads = 0;
        wb_gpu_destroy(g);
    }
    assert_links(0, 0, 0, 0);
    char parent[160];
    snprintf(parent, sizeof parent, "%s/cache", root);
    ck_assert_int_ne(access(parent, F_OK), 0); /* no folder made */
}
END_TEST

/* ---------------------------------------------------------------- threads */

typedef struct {
    wb_gpu *g;
    void *fn;
    wb_status st;
} load_job;

static void *load_thread(void *arg)
{
    load_job *j = arg;
    j->st = wb_gpu_load(j->g, ptx_one, "kernel", &j->fn);
    return NULL;
}

/* Handles of one process store the same cubin at once (same pid in the temporary name). */
START_TEST(test_threads)
{
    enum { N = 6 };
    load_job jobs[N];
    pthread_t threads[N];
    for (int i = 0; i < N; i++)
        jobs[i] = (load_job){.g = fake_gpu()};
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(pthread_create(&threads[i], NULL, load_thread, &jobs[i]), 0);
    for (int i = 0; i < N; i++) {
        pthread_join(threads[i], NULL);
        ck_assert_int_eq(jobs[i].st, WB_OK);
        ck_assert_ptr_nonnull(jobs[i].fn);
        wb_gpu_destroy(jobs[i].g);
    }
    ck_assert_int_eq(fake.links_live, 0);
    ck_assert_int_eq(fake.link_create, fake.link_destroy);
    char path[512];
    expected_path(ptx_one, 13000, path, sizeof path);
    assert_cubin_file(path, ptx_one);
    ck_assert_int_eq(count_entries(".cubin"), 1);
}
END_TEST

static Suite *disk_cache_suite(void)
{
    Suite *s = suite_create("disk cache");
    TCase *t = tcase_create("fake driver");
    tcase_add_checked_fixture(t, dc_setup, dc_teardown);
    tcase_add_test(t, test_miss_then_hit);
    tcase_add_test(t, test_key);
    tcase_add_test(t, test_corrupt_file);
    tcase_add_test(t, test_link_failure);
    tcase_add_test(t, test_unwritable);
    tcase_add_test(t, test_off);
    tcase_add_test(t, test_threads);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return wbt_run(disk_cache_suite()); }
