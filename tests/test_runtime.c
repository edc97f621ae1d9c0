/* The GPU runtime without a GPU: the no-driver path through every public GPU entry point, and a fake
 * driver table for device setup, the module cache, JIT and driver failures, launch and timing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fake_cuda.h"

/* ---------------------------------------------------------------- (a) no driver */

static void nodriver_setup(void) { wb_cuda_set_library("/nonexistent/libcuda.so.1"); }
static void nodriver_teardown(void) { wb_cuda_set_library(NULL); }

static void fn_noop(void *arg) { (void)arg; }

START_TEST(test_nodriver_create)
{
    wb_gpu *g = (wb_gpu *)&g;
    ck_assert_error(wb_gpu_create(0, &g), WB_ERR_NO_DRIVER, "/nonexistent/libcuda.so.1 not found");
    ck_assert_ptr_null(g);
    ck_assert_error(wb_gpu_create(0, NULL), WB_ERR_INVALID, "wb_gpu_create");
}
END_TEST

START_TEST(test_nodriver_env)
{
    wb_cuda_set_library(NULL);
    setenv("WARBLE_LIBCUDA", "/nonexistent/env/libcuda.so", 1);
    wb_gpu *g = NULL;
    ck_assert_error(wb_gpu_create(0, &g), WB_ERR_NO_DRIVER, "/nonexistent/env/libcuda.so not found: ");
    ck_assert_ptr_null(g);
    unsetenv("WARBLE_LIBCUDA");
}
END_TEST

/* Every entry point that takes a wb_gpu, called with the NULL a failed create leaves behind. */
START_TEST(test_nodriver_null_gpu)
{
    wb_gpu *g = NULL;
    ck_assert_int_eq(wb_gpu_create(0, &g), WB_ERR_NO_DRIVER);
    wb_devptr p = 7;
    char host[16] = {0};
    void *fn = (void *)host;
    double us = -1;
    wb_launch_dims d = {{1, 1, 1}, {32, 1, 1}, 0};
    ck_assert_error(wb_gpu_alloc(g, 16, &p), WB_ERR_INVALID, "wb_gpu_alloc", "NULL");
    ck_assert_uint_eq(p, 0);
    ck_assert_error(wb_gpu_free(g, 0x1000), WB_ERR_INVALID, "wb_gpu_free");
    ck_assert_error(wb_gpu_upload(g, 0x1000, host, 16), WB_ERR_INVALID, "wb_gpu_upload");
    ck_assert_error(wb_gpu_download(g, host, 0x1000, 16), WB_ERR_INVALID, "wb_gpu_download");
    ck_assert_error(wb_gpu_memset(g, 0x1000, 0, 16), WB_ERR_INVALID, "wb_gpu_memset");
    ck_assert_error(wb_gpu_sync(g), WB_ERR_INVALID, "wb_gpu_sync");
    ck_assert_error(wb_gpu_load(g, ".version 8.0", "k", &fn), WB_ERR_INVALID, "wb_gpu_load");
    ck_assert_ptr_null(fn);
    ck_assert_error(wb_gpu_launch(g, host, &d, NULL, NULL), WB_ERR_INVALID, "wb_gpu_launch");
    ck_assert_error(wb_gpu_time(g, fn_noop, NULL, 1, 3, 1, &us), WB_ERR_INVALID, "wb_gpu_time");
    ck_assert_int_eq(wb_gpu_arch(g), WB_ARCH_COUNT);
    ck_assert_str_eq(wb_gpu_name(g), "");
    ck_assert_int_eq(wb_gpu_sm_count(g), 0);
    wb_gpu_destroy(g);
    wb_gpu_destroy(NULL);
}
END_TEST

/* ---------------------------------------------------------------- (b) fake driver */

START_TEST(test_fake_create)
{
    wb_gpu *g = fake_gpu();
    ck_assert_int_eq(wb_gpu_arch(g), WB_ARCH_SM90A);
    ck_assert_str_eq(wb_gpu_name(g), "Fake H200");
    ck_assert_int_eq(wb_gpu_sm_count(g), 132);
    ck_assert_int_eq(fake.retain, 1);
    ck_assert_ptr_eq(fake.current, (CUcontext)(uintptr_t)0xC0);
    wb_gpu_destroy(g);
    ck_assert_int_eq(fake.release, 1);
}
END_TEST

/* WARBLE_ARCH: an older target's kernels on this (fake sm_90) GPU, launched without PDL; never an 'a'
 * target or a newer one; a bad name is an error naming the variable. */
START_TEST(test_fake_older_arch)
{
    wb_gpu *g = NULL;
    setenv("WARBLE_ARCH", "ampere", 1);
    g = fake_gpu();
    ck_assert_int_eq(wb_gpu_arch(g), WB_ARCH_SM80);
    void *fn = NULL; /* sm_80 kernels do not wait in griddepcontrol.wait: a plain launch */
    ck_assert_int_eq(wb_gpu_load(g, "ptx", "kernel", &fn), WB_OK);
    wb_launch_dims d = {{1, 1, 1}, {32, 1, 1}, 0};
    ck_assert_int_eq(wb_gpu_launch(g, fn, &d, NULL, NULL), WB_OK);
    ck_assert_int_eq(fake.launches, 1);
    ck_assert_int_eq(fake.pdl_launches, 0);
    wb_gpu_destroy(g);
    setenv("WARBLE_ARCH", "sm_90a", 1);
    g = fake_gpu();
    ck_assert_int_eq(wb_gpu_arch(g), WB_ARCH_SM90A);
    wb_gpu_destroy(g);
    g = NULL;
    setenv("WARBLE_ARCH", "sm_100a", 1);
    ck_assert_error(wb_gpu_create(0, &g), WB_ERR_UNSUPPORTED, "WARBLE_ARCH=sm_100a: only the PTX of sm_75");
    ck_assert_ptr_null(g);
    setenv("WARBLE_ARCH", "sm_42", 1);
    ck_assert_error(wb_gpu_create(0, &g), WB_ERR_INVALID, "WARBLE_ARCH=sm_42: ");
    ck_assert_ptr_null(g);
    unsetenv("WARBLE_ARCH");
}
END_TEST

START_TEST(test_fake_no_device)
{
    wb_gpu *g = NULL;
    fake.device_count = 0;
    ck_assert_error(wb_gpu_create(0, &g), WB_ERR_NO_DRIVER, "no CUDA device");
    ck_assert_ptr_null(g);
    fake.device_count = 2;
    ck_assert_error(wb_gpu_create(2, &g), WB_ERR_INVALID, "device 2 out of range (2 devices)");
    ck_assert_error(wb_gpu_create(-1, &g), WB_ERR_INVALID, "device -1");
    fake.init_result = CUDA_ERROR_NO_DEVICE;
    ck_assert_error(wb_gpu_create(0, &g), WB_ERR_NO_DRIVER, "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable");
    ck_assert_ptr_null(g);
    ck_assert_int_eq(fake.retain, 0);
}
END_TEST

START_TEST(test_fake_alloc_failure)
{
    wb_gpu *g = fake_gpu();
    wb_devptr p = 7;
    fake.alloc_result = CUDA_ERROR_OUT_OF_MEMORY;
    ck_assert_error(wb_gpu_alloc(g, 1 << 20, &p), WB_ERR_DRIVER,
                    "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    ck_assert_uint_eq(p, 0);
    /* an unknown CUresult still gets a message with its number */
    fake.alloc_result = 999;
    ck_assert_error(wb_gpu_alloc(g, 16, &p), WB_ERR_DRIVER, "cuMemAlloc failed: CUresult 999");
    wb_gpu_destroy(g);
}
END_TEST

START_TEST(test_fake_memory)
{
    wb_gpu *g = fake_gpu();
    wb_devptr p = 0;
    ck_assert_int_eq(wb_gpu_alloc(g, 0, &p), WB_OK); /* 0 bytes: no allocation */
    ck_assert_uint_eq(p, 0);
    ck_assert_int_eq(fake.alloc, 0);
    ck_assert_int_eq(wb_gpu_alloc(g, 256, &p), WB_OK);
    ck_assert_uint_ne(p, 0);
    unsigned char host[256] = {0};
    ck_assert_int_eq(wb_gpu_upload(g, p, host, sizeof host), WB_OK);
    ck_assert_int_eq(wb_gpu_download(g, host, p, sizeof host), WB_OK);
    ck_assert_uint_eq(host[255], 0x5a);
    ck_assert_int_eq(wb_gpu_memset(g, p, 0, sizeof host), WB_OK);
    ck_assert_int_eq(wb_gpu_sync(g), WB_OK);
    ck_assert_error(wb_gpu_upload(g, p, NULL, 4), WB_ERR_INVALID, "wb_gpu_upload");
    ck_assert_error(wb_gpu_download(g, NULL, p, 4), WB_ERR_INVALID, "wb_gpu_download");
    ck_assert_error(wb_gpu_alloc(g, 4, NULL), WB_ERR_INVALID, "wb_gpu_alloc");
    ck_assert_int_eq(wb_gpu_free(g, p), WB_OK);
    ck_assert_int_eq(wb_gpu_free(g, 0), WB_OK);
    ck_assert_int_eq(fake.alloc, 1);
    ck_assert_int_eq(fake.free_, 1);
    ck_assert_int_eq(fake.htod, 1);
    ck_assert_int_eq(fake.dtoh, 1);
    ck_assert_int_eq(fake.memset_, 1);
    ck_assert_int_eq(fake.sync, 1);
    wb_gpu_destroy(g);
}
END_TEST

/* Every entry point makes the context current, and reports when it cannot. */
START_TEST(test_fake_context_current)
{
    wb_gpu *g = fake_gpu();
    wb_devptr p = 0;
    fake.current = NULL;
    int before = fake.set_current;
    ck_assert_int_eq(wb_gpu_sync(g), WB_OK);
    ck_assert_int_eq(fake.set_current, before + 1);
    ck_assert_ptr_eq(fake.current, (CUcontext)(uintptr_t)0xC0);
    fake.set_current_result = CUDA_ERROR_INVALID_VALUE;
    ck_assert_error(wb_gpu_alloc(g, 16, &p), WB_ERR_DRIVER, "cuCtxSetCurrent failed: CUDA_ERROR_INVALID_VALUE");
    ck_assert_int_eq(fake.alloc, 0);
    fake.set_current_result = CUDA_SUCCESS;
    wb_gpu_destroy(g);
}
END_TEST

START_TEST(test_fake_jit_failure)
{
    wb_gpu *g = fake_gpu();
    void *fn = (void *)&fn;
    fake.jit_result = CUDA_ERROR_INVALID_PTX;
    ck_assert_error(wb_gpu_load(g, "bad ptx", "kernel", &fn), WB_ERR_JIT,
                    "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX",
                    "line 3; error   : Unknown symbol 'foo' | ptxas fatal   : Ptx assembly aborted");
    ck_assert_ptr_null(fn);
    const char *msg = wb_last_error();
    ck_assert_msg(msg[strlen(msg) - 1] != ' ' && msg[strlen(msg) - 1] != '|', "trailing separator: %s", msg);
    /* a failure is not cached: the same PTX is compiled again */
    fake.jit_result = CUDA_SUCCESS;
    ck_assert_int_eq(wb_gpu_load(g, "bad ptx", "kernel", &fn), WB_OK);
    ck_assert_ptr_nonnull(fn);
    ck_assert_int_eq(fake.loads, 2);
    wb_gpu_destroy(g);
    ck_assert_int_eq(fake.unloads, 1);
}
END_TEST

START_TEST(test_fake_module_cache)
{
    wb_gpu *g = fake_gpu();
    void *f1 = NULL, *f2 = NULL, *f3 = NULL, *f4 = NULL;
    ck_assert_int_eq(wb_gpu_load(g, "ptx one", "kernel", &f1), WB_OK);
    ck_assert_int_eq(wb_gpu_load(g, "ptx one", "kernel", &f2), WB_OK);
    ck_assert_ptr_eq(f1, f2);
    ck_assert_int_eq(fake.loads, 1);
    ck_assert_int_eq(fake.get_function, 1);
    ck_assert_int_eq(wb_gpu_load(g, "ptx two", "kernel", &f3), WB_OK);
    ck_assert_ptr_ne(f1, f3);
    ck_assert_int_eq(fake.loads, 2);
    /* another entry of a loaded module: no second JIT */
    ck_assert_int_eq(wb_gpu_load(g, "ptx one", "other_kernel", &f4), WB_OK);
    ck_assert_ptr_ne(f4, f1);
    ck_assert_int_eq(fake.loads, 2);
    ck_assert_error(wb_gpu_load(g, "ptx one", "missing", &f4), WB_ERR_DRIVER,
                    "cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND", "'missing'");
    ck_assert_ptr_null(f4);
    ck_assert_error(wb_gpu_load(g, NULL, "kernel", &f4), WB_ERR_INVALID, "wb_gpu_load");
    ck_assert_error(wb_gpu_load(g, "ptx one", NULL, &f4), WB_ERR_INVALID, "wb_gpu_load");
    ck_assert_error(wb_gpu_load(g, "ptx one", "kernel", NULL), WB_ERR_INVALID, "wb_gpu_load");
    ck_assert_int_eq(fake.loads, 2);
    wb_gpu_destroy(g);
    ck_assert_int_eq(fake.unloads, 2);
}
END_TEST

typedef struct {
    wb_gpu *g;
    void *fn;
    wb_status st;
} load_job;

static void *load_thread(void *arg)
{
    load_job *j = arg;
    j->st = wb_gpu_load(j->g, "shared ptx", "kernel", &j->fn);
    return NULL;
}

START_TEST(test_fake_module_cache_threads)
{
    wb_gpu *g = fake_gpu();
    load_job jobs[8];
    pthread_t threads[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (load_job){.g = g};
        ck_assert_int_eq(pthread_create(&threads[i], NULL, load_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(threads[i], NULL);
        ck_assert_int_eq(jobs[i].st, WB_OK);
        ck_assert_ptr_eq(jobs[i].fn, jobs[0].fn);
    }
    ck_assert_int_eq(fake.loads, 1);
    wb_gpu_destroy(g);
}
END_TEST

/* WARBLE_PDL=0 launches plainly, through cuLaunchKernel */
START_TEST(test_fake_launch_no_pdl)
{
    setenv("WARBLE_PDL", "0", 1);
    wb_gpu *g = fake_gpu();
    unsetenv("WARBLE_PDL");
    void *fn = NULL;
    ck_assert_int_eq(wb_gpu_load(g, "ptx", "kernel", &fn), WB_OK);
    wb_launch_dims d = {{1, 1, 1}, {32, 1, 1}, 0};
    ck_assert_int_eq(wb_gpu_launch(g, fn, &d, NULL, NULL), WB_OK);
    ck_assert_int_eq(fake.launches, 1);
    ck_assert_int_eq(fake.pdl_launches, 0);
    wb_gpu_destroy(g);
}
END_TEST

START_TEST(test_fake_launch)
{
    wb_gpu *g = fake_gpu();
    void *fn = NULL;
    ck_assert_int_eq(wb_gpu_load(g, "ptx", "kernel", &fn), WB_OK);
    /* opted in once, at load, to the device's maximum: launches make no attribute call */
    ck_assert_int_eq(fake.set_attribute, 1);
    ck_assert_int_eq(fake.attrib, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
    ck_assert_int_eq(fake.attrib_value, 232448);
    int x = 0;
    void *params[1] = {&x};
    CUstream stream = (CUstream)(uintptr_t)0x5700;
    wb_launch_dims d = {{3, 2, 1}, {128, 1, 1}, 48 * 1024};
    ck_assert_int_eq(wb_gpu_launch(g, fn, &d, stream, params), WB_OK);
    ck_assert_ptr_eq(fake.launch_fn, fn);
    unsigned want[7] = {3, 2, 1, 128, 1, 1, 48 * 1024};
    ck_assert_mem_eq(fake.launch_dims, want, sizeof want);
    ck_assert_ptr_eq(fake.launch_stream, stream);
    ck_assert_ptr_eq(fake.launch_params, params);
    d.smem_bytes = 100 * 1024;
    ck_assert_int_eq(wb_gpu_launch(g, fn, &d, NULL, params), WB_OK);
    ck_assert_int_eq(fake.set_attribute, 1);
    ck_assert_uint_eq(fake.launch_dims[6], 100 * 1024);
    ck_assert_int_eq(fake.launches, 2);
    d.smem_bytes = 232448 + 16; /* past what the device allows */
    ck_assert_error(wb_gpu_launch(g, fn, &d, NULL, params), WB_ERR_INVALID, "dynamic shared memory");
    ck_assert_int_eq(fake.launches, 2);
    d.smem_bytes = 100 * 1024;
    ck_assert_int_eq(fake.pdl_launches, 2); /* the fake device is sm_90: programmatic dependent launch */
    ck_assert_error(wb_gpu_launch(g, NULL, &d, NULL, params), WB_ERR_INVALID, "wb_gpu_launch");
    ck_assert_error(wb_gpu_launch(g, fn, NULL, NULL, params), WB_ERR_INVALID, "wb_gpu_launch");
    wb_gpu_destroy(g);
}
END_TEST

static void count_call(void *arg) { ++*(int *)arg; }

START_TEST(test_fake_time)
{
    wb_gpu *g = fake_gpu();
    static const float ms[5] = {5.0f, 1.0f, 3.0f, 2.0f, 4.0f};
    fake.elapsed_ms = ms;
    int calls = 0;
    double us = 0;
    ck_assert_int_eq(wb_gpu_time(g, count_call, &calls, 2, 5, 4, &us), WB_OK);
    ck_assert_int_eq(calls, 2 + 5 * 4);
    ck_assert_double_eq_tol(us, 3000.0 / 4, 1e-6); /* median 3 ms over 4 calls */
    ck_assert_int_eq(fake.records, 10);
    ck_assert_int_eq(fake.event_create, 2);
    ck_assert_int_eq(fake.event_destroy, 2);
    /* an even count takes the mean of the middle two */
    fake.elapsed_calls = 0;
    ck_assert_int_eq(wb_gpu_time(g, count_call, &calls, 0, 4, 1, &us), WB_OK);
    ck_assert_double_eq_tol(us, 2500.0, 1e-6);
    ck_assert_error(wb_gpu_time(g, count_call, &calls, 0, 0, 1, &us), WB_ERR_INVALID, "reps");
    ck_assert_error(wb_gpu_time(g, NULL, NULL, 0, 1, 1, &us), WB_ERR_INVALID, "wb_gpu_time");
    wb_gpu_destroy(g);
}
END_TEST

static Suite *runtime_suite(void)
{
    Suite *s = suite_create("runtime");
    TCase *a = tcase_create("no driver");
    tcase_add_checked_fixture(a, nodriver_setup, nodriver_teardown);
    tcase_add_test(a, test_nodriver_create);
    tcase_add_test(a, test_nodriver_env);
    tcase_add_test(a, test_nodriver_null_gpu);
    suite_add_tcase(s, a);
    TCase *b = tcase_create("fake driver");
    tcase_add_checked_fixture(b, fake_setup, fake_teardown);
    tcase_add_test(b, test_fake_create);
    tcase_add_test(b, test_fake_no_device);
    tcase_add_test(b, test_fake_older_arch);
    tcase_add_test(b, test_fake_alloc_failure);
    tcase_add_test(b, test_fake_memory);
    tcase_add_test(b, test_fake_context_current);
    tcase_add_test(b, test_fake_jit_failure);
    tcase_add_test(b, test_fake_module_cache);
    tcase_add_test(b, test_fake_module_cache_threads);
    tcase_add_test(b, test_fake_launch);
    tcase_add_test(b, test_fake_launch_no_pdl);
    tcase_add_test(b, test_fake_time);
    suite_add_tcase(s, b);
    return s;
}

int main(void) { return wbt_run(runtime_suite()); }
