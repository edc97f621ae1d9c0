/* wb_layer without a GPU: NULL handles and the no-driver path, then a whole layer on the fake driver
 * (packing, upload, config choice, kernel cache, launch parameters, no allocation or sync in gemm). */
#include <stdlib.h>
#include <string.h>
#include "fake_cuda.h"
#include "lower/lower.h"

/* Host weights for a format: zeroed buffers big enough for any element type, NULL where unused. */
typedef struct {
    wb_host_weights w;
    void *buf[4];
} host_weights;

static void host_weights_make(host_weights *h, const wb_format *f, int64_t n, int64_t k)
{
    memset(h, 0, sizeof *h);
    size_t nk = (size_t)(n * k);
    h->buf[0] = calloc(nk, 1);
    h->buf[1] = calloc(nk, 4);
    h->buf[2] = f->zp != WB_ZP_NONE ? calloc(nk, 4) : NULL;
    h->buf[3] = calloc((size_t)n, 8);
    static const float one = 1.0f;
    h->w.w = h->buf[0];
    h->w.w_scale = h->buf[1];
    h->w.w_zero = h->buf[2];
    h->w.w_global = f->wgs ? &one : NULL;
    h->w.bias = f->bias ? h->buf[3] : NULL;
}

/* Codes that vary and are finite in any weight type (6 bits at most), and scales of 1.0. */
static void host_weights_vary(host_weights *h, const wb_format *f, int64_t n, int64_t k)
{
    uint8_t *codes = h->buf[0], *scales = h->buf[1];
    int mask = f->w.bits >= 8 ? 0x3f : (1 << f->w.bits) - 1, bytes = (f->ws.bits + 7) / 8;
    for (int64_t i = 0; i < n * k; i++)
        codes[i] = (uint8_t)((i * 37 + i / 7) & mask);
    uint32_t one = wb_type_encode(f->ws, 1.0);
    for (int64_t i = 0; i < n * k; i++)
        memcpy(scales + i * bytes, &one, (size_t)bytes); /* little-endian: the code's low bytes */
}

static void host_weights_free(host_weights *h)
{
    for (int i = 0; i < 4; i++)
        free(h->buf[i]);
}

/* ---------------------------------------------------------------- no driver, NULL handles */

START_TEST(test_layer_null)
{
    wb_cuda_set_library("/nonexistent/libcuda.so.1");
    wb_gpu *g = NULL;
    ck_assert_int_eq(wb_gpu_create(0, &g), WB_ERR_NO_DRIVER);
    wb_format f;
    ck_assert_int_eq(wb_format_parse("w4a16", &f), WB_OK);
    host_weights h;
    host_weights_make(&h, &f, 256, 1024);
    wb_layer *l = (wb_layer *)&l;
    wb_config cfg = {0};
    char sha[65];
    ck_assert_error(wb_layer_create(g, &f, 256, 1024, &h.w, &l), WB_ERR_INVALID, "wb_layer_create", "gpu");
    ck_assert_ptr_null(l);
    ck_assert_error(wb_layer_set_config(NULL, &cfg), WB_ERR_INVALID, "wb_layer_set_config");
    ck_assert_error(wb_layer_gemm(NULL, 1, 0x1000, 0x2000, NULL), WB_ERR_INVALID, "wb_layer_gemm");
    ck_assert_error(wb_layer_last_kernel(NULL, &cfg, sha), WB_ERR_INVALID, "wb_layer_last_kernel");
    wb_layer_destroy(NULL);
    host_weights_free(&h);
    wb_cuda_set_library(NULL);
}
END_TEST

/* ---------------------------------------------------------------- fake driver */

static wb_layer *make_layer(wb_gpu *g, const char *spec, int64_t n, int64_t k)
{
    wb_format f;
    ck_assert_int_eq(wb_format_parse(spec, &f), WB_OK);
    host_weights h;
    host_weights_make(&h, &f, n, k);
    wb_layer *l = NULL;
    wb_status st = wb_layer_create(g, &f, n, k, &h.w, &l);
    ck_assert_msg(st == WB_OK, "wb_layer_create: %s", wb_last_error());
    host_weights_free(&h);
    return l;
}

START_TEST(test_layer_bad_shape)
{
    wb_gpu *g = fake_gpu();
    wb_format f;
    ck_assert_int_eq(wb_format_parse("w4a16", &f), WB_OK);
    host_weights h;
    host_weights_make(&h, &f, 256, 1024);
    wb_layer *l = NULL;
    ck_assert_int_eq(wb_layer_create(g, &f, 256, 1000, &h.w, &l), WB_ERR_INVALID); /* g=128 must divide K */
    ck_assert_ptr_null(l);
    ck_assert_error(wb_layer_create(g, &f, 0, 1024, &h.w, &l), WB_ERR_INVALID, "wb_layer_create");
    ck_assert_int_eq(fake.alloc, 0);
    host_weights_free(&h);
    wb_gpu_destroy(g);
}
END_TEST

/* --load tma: every call encodes the activations' map (M x K, boxes of the block's tokens x 128 bytes,
 * or of half of them in clusters of two, 128-byte swizzle, zeros past M) and passes it by value as the
 * kernel's last parameter. */
START_TEST(test_layer_gemm_tma)
{
    wb_gpu *g = fake_gpu();
    fake.capture_layer_params = 1;
    wb_layer *l = make_layer(g, "w4a16,a=bf16,ws=bf16", 256, 1024);
    ck_assert_int_eq(wb_layer_set_config(l, &(wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .m_tiles = 16,
                                                           .cluster = 2}),
                     WB_OK);
    wb_status st = wb_layer_gemm(l, 300, 0xA000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm: %s", wb_last_error());
    wb_config cfg;
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, NULL), WB_OK);
    ck_assert_int_eq(cfg.load, WB_LOAD_TMA);
    ck_assert_int_eq(fake.maps, 1);
    ck_assert_int_eq(fake.map_dtype, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    ck_assert_uint_eq(fake.map_rank, 2);
    ck_assert_ptr_eq(fake.map_address, (void *)(uintptr_t)0xA000);
    ck_assert_uint_eq(fake.map_dims[0], 1024); /* k, innermost */
    ck_assert_uint_eq(fake.map_dims[1], 300);
    ck_assert_uint_eq(fake.map_stride, 2048);
    ck_assert_uint_eq(fake.map_box[0], 64);
    ck_assert_int_eq(cfg.cluster, 2); /* pairs of channel tiles: each block copies half */
    ck_assert_uint_eq(fake.map_box[1], 8 * (unsigned)cfg.m_tiles / 2);
    ck_assert_int_eq(fake.map_swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
    ck_assert_int_eq(fake.map_oob, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    ck_assert_uint_eq(fake.launch_map0, 0x7e45011ull + 1);
    ck_assert_int_eq(wb_layer_gemm(l, 7, 0xA000, 0xB000, NULL), WB_OK); /* a new map per call */
    ck_assert_int_eq(fake.maps, 2);
    ck_assert_uint_eq(fake.map_dims[1], 7);
    ck_assert_uint_eq(fake.launch_map0, 0x7e45011ull + 2);
    wb_layer_destroy(l);
    /* 8-bit activations: a map of bytes (rows of K bytes, boxes of 128), after the token scales */
    l = make_layer(g, "fp8", 256, 1024);
    ck_assert_int_eq(wb_layer_set_config(l, &(wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .cluster = 1}),
                     WB_OK);
    st = wb_layer_gemm_q(l, 300, 0xA000, 0xC000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm_q: %s", wb_last_error());
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, NULL), WB_OK);
    ck_assert_int_eq(fake.maps, 3);
    ck_assert_int_eq(fake.map_dtype, CU_TENSOR_MAP_DATA_TYPE_UINT8);
    ck_assert_uint_eq(fake.map_dims[0], 1024);
    ck_assert_uint_eq(fake.map_dims[1], 300);
    ck_assert_uint_eq(fake.map_stride, 1024);
    ck_assert_uint_eq(fake.map_box[0], 128);
    ck_assert_int_le(cfg.cluster, 1); /* single blocks, forced: the whole token tile a box */
    ck_assert_uint_eq(fake.map_box[1], 8 * (unsigned)cfg.m_tiles);
    ck_assert_uint_eq(fake.launch_p8, 0xC000);
    ck_assert_uint_eq(fake.launch_map0, 0x7e45011ull + 3);
    ck_assert_uint_eq(fake.launch_dims[3], 32 * (unsigned)cfg.warps_n + 128); /* the producer warpgroup */
    wb_layer_destroy(l);
    wb_gpu_destroy(g);
}
END_TEST

/* --persistent: the grid is the blocks the device holds at once, asked once a kernel: the SMs (132),
 * or in clusters of two the driver's count of co-resident clusters times two, or, where that call
 * fails, the SMs rounded down to pairs; fewer blocks where there are fewer tiles. */
START_TEST(test_layer_persistent_grid)
{
    static const struct { int cluster, max_clusters; int64_t m; unsigned grid; } cases[] = {
        {1, 50, 16384, 132}, {2, 50, 16384, 100}, {2, 0, 16384, 132}, {2, 50, 300, 96}, {1, 0, 100, 32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_gpu *g = fake_gpu();
        fake.max_clusters = cases[i].max_clusters;
        fake.occupancy_calls = 0;
        wb_layer *l = make_layer(g, "fp8", 4096, 1024);
        wb_config c = {.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .m_tiles = 16, .warps_n = 8, .persistent = 1,
                       .cluster = cases[i].cluster};
        ck_assert_int_eq(wb_layer_set_config(l, &c), WB_OK);
        for (int call = 0; call < 2; call++) {
            wb_status st = wb_layer_gemm_q(l, cases[i].m, 0xA000, 0xC000, 0xB000, NULL);
            ck_assert_msg(st == WB_OK, "wb_layer_gemm_q: %s", wb_last_error());
            ck_assert_msg(fake.launch_dims[0] == cases[i].grid && fake.launch_dims[1] == 1,
                          "case %zu: grid %u x %u, want %u", i, fake.launch_dims[0], fake.launch_dims[1],
                          cases[i].grid);
        }
        ck_assert_msg(fake.occupancy_calls == (cases[i].cluster > 1), "case %zu: %d occupancy calls", i,
                      fake.occupancy_calls); /* once a kernel, for clusters only */
        if (cases[i].cluster > 1)
            ck_assert_uint_eq(fake.occupancy_block, 384);
        wb_layer_destroy(l);
        wb_gpu_destroy(g);
    }
}
END_TEST

/* gemv: the layer's kernel at M = 1 for int2 is the matrix-vector one, at M = 2 not; a forced gemv config
 * is refused at M = 2 before any launch, and set_config refuses a gemv value other than -1, 0 or 1. */
START_TEST(test_layer_gemv)
{
    wb_gpu *g = fake_gpu();
    wb_layer *l = make_layer(g, "a=f16,w=int2,g=128", 4096, 1024);
    wb_config cfg;
    ck_assert_int_eq(wb_layer_gemm(l, 1, 0xA000, 0xB000, NULL), WB_OK);
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, NULL), WB_OK);
    ck_assert_int_eq(cfg.gemv, 1);
    ck_assert_int_eq(wb_layer_gemm(l, 2, 0xA000, 0xB000, NULL), WB_OK);
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, NULL), WB_OK);
    ck_assert_int_eq(cfg.gemv, 0);
    ck_assert_error(wb_layer_set_config(l, &(wb_config){.gemv = 2}), WB_ERR_INVALID, "gemv must be");
    ck_assert_int_eq(wb_layer_set_config(l, &(wb_config){.gemv = 1}), WB_OK);
    int launches = fake.launches;
    ck_assert_error(wb_layer_gemm(l, 2, 0xA000, 0xB000, NULL), WB_ERR_INVALID, "M = 1 only");
    ck_assert_int_eq(fake.launches, launches);
    ck_assert_int_eq(wb_layer_set_config(l, &(wb_config){.gemv = -1}), WB_OK);
    ck_assert_int_eq(wb_layer_gemm(l, 1, 0xA000, 0xB000, NULL), WB_OK);
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, NULL), WB_OK);
    ck_assert_int_le(cfg.gemv, 0);
    wb_layer_destroy(l);
    wb_gpu_destroy(g);
}
END_TEST

/* Misaligned device pointers are refused before any launch, naming the pointer (a fault there would
 * spoil the caller's CUDA context): activations 16 bytes, output 2, f32 scales and a_global 4; the
 * quantizer's x, codes and f32 scales 4. */
START_TEST(test_layer_misaligned)
{
    wb_gpu *g = fake_gpu();
    wb_layer *l = make_layer(g, "w4a16", 256, 1024);
    ck_assert_error(wb_layer_gemm(l, 16, 0xA008, 0xB000, NULL), WB_ERR_INVALID, "misaligned activation pointer");
    ck_assert_error(wb_layer_gemm(l, 16, 0xA000, 0xB001, NULL), WB_ERR_INVALID, "misaligned output pointer");
    ck_assert_int_eq(wb_layer_gemm(l, 16, 0xA000, 0xB002, NULL), WB_OK); /* an output one column on */
    wb_layer_destroy(l);
    l = make_layer(g, "int8", 256, 1024);
    ck_assert_error(wb_layer_gemm_q(l, 16, 0xA000, 0xC002, 0xB000, NULL), WB_ERR_INVALID,
                    "misaligned a_scale pointer");
    wb_layer_destroy(l);
    int launches = fake.launches;
    wb_format fp8, nv;
    wb_type f16;
    ck_assert(wb_format_parse("fp8", &fp8) == WB_OK && wb_format_parse("nvfp4", &nv) == WB_OK &&
              wb_type_parse("f16", &f16) == WB_OK);
    ck_assert_error(wb_gpu_quantize_acts(g, &fp8, f16, 16, 1024, 0xA002, 0xD000, 0xC000, NULL), WB_ERR_INVALID,
                    "misaligned x pointer");
    ck_assert_error(wb_gpu_quantize_acts(g, &fp8, f16, 16, 1024, 0xA000, 0xD000, 0xC001, NULL), WB_ERR_INVALID,
                    "misaligned scales pointer");
    ck_assert_error(wb_gpu_quantize_acts_g(g, &nv, f16, 16, 1024, 0xA000, 0xD000, 0xC001, 0xE000, NULL),
                    WB_ERR_INVALID, "misaligned scales pointer");
    ck_assert_error(wb_gpu_quantize_acts_g(g, &nv, f16, 16, 1024, 0xA000, 0xD000, 0xC000, 0xE002, NULL),
                    WB_ERR_INVALID, "misaligned a_global pointer");
    ck_assert_int_eq(fake.launches, launches);
    wb_gpu_destroy(g);
}
END_TEST

START_TEST(test_layer_gemm)
{
    wb_gpu *g = fake_gpu();
    fake.capture_layer_params = 1;
    wb_layer *l = make_layer(g, "w4a16", 256, 1024);
    int allocs = fake.alloc, uploads = fake.htod;
    ck_assert_int_ge(allocs, 1);
    ck_assert_int_eq(uploads, allocs);
    wb_config cfg;
    char sha[65];
    ck_assert_error(wb_layer_last_kernel(l, &cfg, sha), WB_ERR_INVALID, "no wb_layer_gemm");

    wb_status st = wb_layer_gemm(l, 16, 0xA000, 0xB000, (void *)(uintptr_t)0x5700);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm: %s", wb_last_error());
    ck_assert_int_eq(fake.launches, 1);
    ck_assert_int_eq(fake.loads, 1);
    ck_assert_ptr_eq(fake.launch_stream, (CUstream)(uintptr_t)0x5700);
    ck_assert_uint_eq(fake.launch_u64[0], 0xB000); /* out */
    ck_assert_uint_eq(fake.launch_u64[1], 0xA000); /* a */
    ck_assert_uint_ne(fake.launch_u64[2], 0);      /* packed codes */
    ck_assert_uint_eq(fake.launch_u32[0], 16);
    ck_assert_uint_eq(fake.launch_u32[1], 256);
    ck_assert_uint_eq(fake.launch_u32[2], 1024);
    /* no allocation, copy or synchronization on the launch path */
    ck_assert_int_eq(fake.alloc, allocs);
    ck_assert_int_eq(fake.htod, uploads);
    ck_assert_int_eq(fake.sync, 0);

    /* the recorded kernel is the one the pipeline builds for that config */
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, sha), WB_OK);
    wb_format f;
    ck_assert_int_eq(wb_format_parse("w4a16", &f), WB_OK);
    char *ptx = NULL;
    ck_assert_int_eq(wb_kernel_ptx(&f, WB_ARCH_SM90A, &cfg, 0, &ptx), WB_OK);
    char want[65];
    wb_sha256_hex(ptx, strlen(ptx), want);
    free(ptx);
    ck_assert_str_eq(sha, want);

    /* same config again: no second JIT */
    ck_assert_int_eq(wb_layer_gemm(l, 16, 0xA000, 0xB000, NULL), WB_OK);
    ck_assert_int_eq(fake.loads, 1);
    ck_assert_int_eq(fake.launches, 2);
    ck_assert_error(wb_layer_gemm(l, 0, 0xA000, 0xB000, NULL), WB_ERR_INVALID, "wb_layer_gemm");
    ck_assert_int_eq(fake.launches, 2);

    wb_layer_destroy(l);
    ck_assert_int_eq(fake.free_, allocs);
    wb_gpu_destroy(g);
    ck_assert_int_eq(fake.unloads, fake.loads);
}
END_TEST

/* W8A8 (a=s8): wb_layer_gemm_q passes the token scales as the ninth parameter; each call refuses the
 * other kind of layer. */
START_TEST(test_layer_gemm_q)
{
    wb_gpu *g = fake_gpu();
    fake.capture_layer_params = 1;
    wb_layer *l = make_layer(g, "int8", 256, 1024);
    ck_assert_error(wb_layer_gemm(l, 16, 0xA000, 0xB000, NULL), WB_ERR_INVALID, "use wb_layer_gemm_q");
    ck_assert_error(wb_layer_gemm_q(l, 16, 0xA000, 0, 0xB000, NULL), WB_ERR_INVALID, "activation scale");
    ck_assert_int_eq(fake.launches, 0);
    wb_status st = wb_layer_gemm_q(l, 16, 0xA000, 0xC000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm_q: %s", wb_last_error());
    ck_assert_int_eq(fake.launches, 1);
    ck_assert_uint_eq(fake.launch_u64[0], 0xB000); /* out */
    ck_assert_uint_eq(fake.launch_u64[1], 0xA000); /* a: the s8 codes */
    ck_assert_uint_ne(fake.launch_u64[2], 0);      /* packed codes */
    ck_assert_uint_eq(fake.launch_u64[3], 0);      /* no scale records */
    ck_assert_uint_ne(fake.launch_u64[4], 0);      /* the channel scales */
    ck_assert_uint_eq(fake.launch_p8, 0xC000); /* the token scales */
    wb_config cfg;
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, NULL), WB_OK);
    ck_assert_int_eq(cfg.mma, WB_MMA_SYNC); /* also on sm_90a */
    wb_layer_destroy(l);
    /* fp8 W8A8 layers take wb_layer_gemm_q too; on this fake sm_90a their kernel is wgmma at every M
     * (fp8 mma.sync is only emulated there) */
    l = make_layer(g, "fp8", 256, 1024);
    ck_assert_error(wb_layer_gemm(l, 16, 0xA000, 0xB000, NULL), WB_ERR_INVALID, "use wb_layer_gemm_q");
    ck_assert_int_eq(fake.launches, 1);
    st = wb_layer_gemm_q(l, 16, 0xA000, 0xC000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm_q: %s", wb_last_error());
    ck_assert_int_eq(fake.launches, 2);
    ck_assert_uint_eq(fake.launch_p8, 0xC000);
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, NULL), WB_OK);
    ck_assert_int_eq(cfg.mma, WB_MMA_WGMMA);
    wb_layer_destroy(l);
    l = make_layer(g, "w4a16", 256, 1024);
    ck_assert_error(wb_layer_gemm_q(l, 16, 0xA000, 0xC000, 0xB000, NULL), WB_ERR_INVALID, "use wb_layer_gemm");
    ck_assert_int_eq(fake.launches, 2);
    wb_layer_destroy(l);
    /* NVFP4 (ags=1): the activation tensor scale's address is the tenth parameter, so the layer takes
     * wb_layer_gemm_qg; without ags it must be 0 */
    l = make_layer(g, "nvfp4", 256, 1024);
    ck_assert_error(wb_layer_gemm_q(l, 16, 0xA000, 0xC000, 0xB000, NULL), WB_ERR_INVALID, "ags=1",
                    "wb_layer_gemm_qg");
    ck_assert_error(wb_layer_gemm_qg(l, 16, 0xA000, 0, 0xD000, 0xB000, NULL), WB_ERR_INVALID, "activation scale");
    ck_assert_int_eq(fake.launches, 2);
    st = wb_layer_gemm_qg(l, 16, 0xA000, 0xC000, 0xD000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm_qg: %s", wb_last_error());
    ck_assert_int_eq(fake.launches, 3);
    ck_assert_uint_eq(fake.launch_u64[1], 0xA000); /* the e2m1 codes */
    ck_assert_uint_ne(fake.launch_u64[3], 0);      /* scale records */
    ck_assert_uint_ne(fake.launch_u64[4], 0);      /* chan: the weight tensor scale */
    ck_assert_uint_eq(fake.launch_p8, 0xC000);     /* the block scales */
    ck_assert_uint_eq(fake.launch_p9, 0xD000);     /* the activation tensor scale */
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, NULL), WB_OK);
    ck_assert_int_eq(cfg.mma, WB_MMA_SYNC);
    wb_layer_destroy(l);
    l = make_layer(g, "nvfp4,ags=0", 256, 1024);
    ck_assert_error(wb_layer_gemm_qg(l, 16, 0xA000, 0xC000, 0xD000, 0xB000, NULL), WB_ERR_INVALID, "ags=0");
    ck_assert_int_eq(fake.launches, 3);
    st = wb_layer_gemm_q(l, 300, 0xA000, 0xC000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm_q: %s", wb_last_error());
    ck_assert_int_eq(wb_layer_last_kernel(l, &cfg, NULL), WB_OK);
    ck_assert_int_eq(cfg.mma, WB_MMA_WGMMA); /* above M = 64 on sm_90a, on the 16-bit tile */
    wb_layer_destroy(l);
    wb_gpu_destroy(g);
}
END_TEST

/* wb_layer_gemm_x: the activation quantizer, then the GEMM on its codes, two launches on the stream;
 * each kernel JITs once. Refused for f16 layers, f32 input and shapes the quantizer does not take. */
START_TEST(test_layer_gemm_x)
{
    wb_gpu *g = fake_gpu();
    wb_type f16, f32;
    ck_assert(wb_type_parse("f16", &f16) == WB_OK && wb_type_parse("f32", &f32) == WB_OK);
    wb_layer *l = make_layer(g, "w4a16", 256, 1024);
    ck_assert_error(wb_layer_gemm_x(l, 16, f16, 0xA000, 0xD000, 0xC000, 0xB000, NULL), WB_ERR_INVALID,
                    "use wb_layer_gemm");
    wb_layer_destroy(l);
    l = make_layer(g, "int8", 256, 1024);
    ck_assert_error(wb_layer_gemm_x(l, 16, f32, 0xA000, 0xD000, 0xC000, 0xB000, NULL), WB_ERR_INVALID,
                    "f16 or bf16");
    ck_assert_error(wb_layer_gemm_x(NULL, 16, f16, 0xA000, 0xD000, 0xC000, 0xB000, NULL), WB_ERR_INVALID,
                    "layer is NULL");
    ck_assert_int_eq(fake.launches, 0);
    int loads = fake.loads;
    wb_status st = wb_layer_gemm_x(l, 16, f16, 0xA000, 0xD000, 0xC000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm_x: %s", wb_last_error());
    ck_assert_int_eq(fake.launches, 2);
    ck_assert_int_eq(fake.loads, loads + 2); /* the quantizer and the GEMM */
    st = wb_layer_gemm_x(l, 300, f16, 0xA000, 0xD000, 0xC000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm_x: %s", wb_last_error());
    ck_assert_int_eq(fake.launches, 4);
    ck_assert_int_le(fake.loads, loads + 3); /* the quantizer again from its cache; maybe another GEMM */
    wb_layer_destroy(l);
    l = make_layer(g, "int8", 256, 1088); /* K = 1088: not a multiple of 128 */
    ck_assert_error(wb_layer_gemm_x(l, 16, f16, 0xA000, 0xD000, 0xC000, 0xB000, NULL), WB_ERR_INVALID,
                    "K a multiple of 128");
    ck_assert_int_eq(fake.launches, 4);
    wb_layer_destroy(l);
    wb_gpu_destroy(g);
}
END_TEST

/* e2m1 activations: MX (block scales only) through wb_layer_gemm_x, two launches; nvfp4 (a tensor
 * scale) through wb_gpu_quantize_acts_g, the tensor-scale pass and the quantizer, two launches (three at
 * prefill sizes: the pass's reduce launch), its kernels JITted once; each entry point refuses the other
 * kind of format. */
START_TEST(test_layer_fp4_quantizer)
{
    wb_gpu *g = fake_gpu();
    wb_type f16;
    ck_assert_int_eq(wb_type_parse("f16", &f16), WB_OK);
    wb_layer *l = make_layer(g, "a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", 256, 1024);
    int launches = fake.launches, loads = fake.loads;
    wb_status st = wb_layer_gemm_x(l, 16, f16, 0xA000, 0xD000, 0xC000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "wb_layer_gemm_x: %s", wb_last_error());
    ck_assert_int_eq(fake.launches, launches + 2);
    ck_assert_int_eq(fake.loads, loads + 2);
    wb_layer_destroy(l);
    l = make_layer(g, "nvfp4", 256, 1024);
    ck_assert_error(wb_layer_gemm_x(l, 16, f16, 0xA000, 0xD000, 0xC000, 0xB000, NULL), WB_ERR_INVALID,
                    "wb_gpu_quantize_acts_g, then wb_layer_gemm_qg");
    wb_layer_destroy(l);
    wb_format nv, mx;
    ck_assert(wb_format_parse("nvfp4", &nv) == WB_OK &&
              wb_format_parse("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", &mx) == WB_OK);
    ck_assert_error(wb_gpu_quantize_acts(g, &nv, f16, 16, 1024, 0xA000, 0xD000, 0xC000, NULL), WB_ERR_INVALID,
                    "use wb_gpu_quantize_acts_g");
    ck_assert_error(wb_gpu_quantize_acts_g(g, &mx, f16, 16, 1024, 0xA000, 0xD000, 0xC000, 0xE000, NULL),
                    WB_ERR_INVALID, "has no tensor scale");
    ck_assert_error(wb_gpu_quantize_acts_g(g, &nv, f16, 16, 1024, 0xA000, 0xD000, 0xC000, 0, NULL), WB_ERR_INVALID,
                    "NULL a_global");
    launches = fake.launches, loads = fake.loads;
    for (int i = 0; i < 2; i++) {
        st = wb_gpu_quantize_acts_g(g, &nv, f16, 16, 1024, 0xA000, 0xD000, 0xC000, 0xE000, NULL);
        ck_assert_msg(st == WB_OK, "wb_gpu_quantize_acts_g: %s", wb_last_error());
    }
    ck_assert_int_eq(fake.launches, launches + 4);
    ck_assert_int_eq(fake.loads, loads + 2); /* the pass and the quantizer, from the cache the second time */
    /* prefill: the pass in 1024 blocks, each block's maximum into the scale buffer, a reduce launch of
     * one block over them (the scale buffer as its input), then the quantizer */
    launches = fake.launches, loads = fake.loads;
    fake.capture_layer_params = 0;
    st = wb_gpu_quantize_acts_g(g, &nv, f16, 4096, 8192, 0xA000, 0xD000, 0xC000, 0xE000, NULL);
    ck_assert_msg(st == WB_OK, "wb_gpu_quantize_acts_g: %s", wb_last_error());
    ck_assert_int_eq(fake.launches, launches + 3);
    ck_assert_int_eq(fake.loads, loads);
    ck_assert_int_eq(wb_quant_global_blocks(4096 * 8192 / 4), 1024);
    ck_assert_int_eq(wb_quant_global_blocks(16 * 1024 / 4), 1);
    ck_assert_int_eq(wb_quant_global_blocks(4097), 2);
    wb_gpu_destroy(g);
}
END_TEST

/* The quantizers a wb_gpu keeps are told apart by everything their PTX depends on: nvfp4's reads the
 * tensor scale, so after "a=e2m1,ag=16,as=e4m3" (nvfp4 without it: the same code, scale and block
 * types) on the same wb_gpu, nvfp4 loads its own quantizer and launches it, not the first one's (which
 * ignores p_global: scales and codes off by the tensor scale, as `selftest` saw on an H100); and the
 * other way round. Both orders, each kernel JITted once. */
START_TEST(test_quantizer_cache_keys)
{
    wb_type f16;
    wb_format nv, blocks;
    ck_assert_int_eq(wb_type_parse("f16", &f16), WB_OK);
    ck_assert(wb_format_parse("nvfp4", &nv) == WB_OK &&
              wb_format_parse("a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16", &blocks) == WB_OK);
    ck_assert(nv.ags && !blocks.ags && nv.ag == blocks.ag && nv.as.kind == blocks.as.kind);
    for (int order = 0; order < 2; order++) {
        wb_gpu *g = fake_gpu();
        CUfunction fn[2]; /* [0]: the quantizer without the tensor scale, [1]: nvfp4's */
        for (int i = 0; i < 2; i++) {
            int which = order ? 1 - i : i, loads = fake.loads;
            wb_status st = which ? wb_gpu_quantize_acts_g(g, &nv, f16, 16, 1024, 0xA000, 0xD000, 0xC000, 0xE000, NULL)
                                 : wb_gpu_quantize_acts(g, &blocks, f16, 16, 1024, 0xA000, 0xD000, 0xC000, NULL);
            ck_assert_msg(st == WB_OK, "%s: %s", which ? "nvfp4" : "ags=0", wb_last_error());
            ck_assert_msg(fake.loads == loads + 1 + which, "%s after %s: %d modules loaded, not %d",
                          which ? "nvfp4" : "ags=0", i ? (which ? "ags=0" : "nvfp4") : "nothing",
                          fake.loads - loads, 1 + which);
            fn[which] = fake.launch_fn;
        }
        ck_assert_ptr_ne(fn[0], fn[1]);
        for (int which = 0; which < 2; which++) { /* again: from the cache, each its own */
            int loads = fake.loads;
            wb_status st = which ? wb_gpu_quantize_acts_g(g, &nv, f16, 16, 1024, 0xA000, 0xD000, 0xC000, 0xE000, NULL)
                                 : wb_gpu_quantize_acts(g, &blocks, f16, 16, 1024, 0xA000, 0xD000, 0xC000, NULL);
            ck_assert_msg(st == WB_OK, "%s", wb_last_error());
            ck_assert_int_eq(fake.loads, loads);
            ck_assert_ptr_eq(fake.launch_fn, fn[which]);
        }
        wb_gpu_destroy(g);
    }
}
END_TEST

/* A forced config is used as given and remembered by last_kernel; NULL goes back to the heuristic. */
START_TEST(test_layer_forced_config)
{
    wb_gpu *g = fake_gpu();
    wb_layer *l = make_layer(g, "w4a16", 256, 1024);
    ck_assert_int_eq(wb_layer_gemm(l, 1, 0xA000, 0xB000, NULL), WB_OK);
    wb_config chosen, forced, last;
    ck_assert_int_eq(wb_layer_last_kernel(l, &chosen, NULL), WB_OK);
    forced = chosen;
    forced.stages = chosen.stages == 2 ? 3 : 2; /* legal for every load kind */
    ck_assert_int_eq(wb_layer_set_config(l, &forced), WB_OK);
    wb_status st = wb_layer_gemm(l, 1, 0xA000, 0xB000, NULL);
    ck_assert_msg(st == WB_OK, "forced config: %s", wb_last_error());
    ck_assert_int_eq(wb_layer_last_kernel(l, &last, NULL), WB_OK);
    ck_assert_int_eq(last.stages, forced.stages);
    ck_assert_int_eq(fake.loads, 2);
    ck_assert_int_eq(wb_layer_set_config(l, NULL), WB_OK);
    ck_assert_int_eq(wb_layer_gemm(l, 1, 0xA000, 0xB000, NULL), WB_OK);
    ck_assert_int_eq(wb_layer_last_kernel(l, &last, NULL), WB_OK);
    ck_assert_int_eq(last.stages, chosen.stages);
    ck_assert_int_eq(fake.loads, 2); /* back to the first kernel, still cached */
    wb_layer_destroy(l);
    wb_gpu_destroy(g);
}
END_TEST

/* A JIT failure on the first gemm is reported as WB_ERR_JIT and nothing is launched. */
START_TEST(test_layer_jit_failure)
{
    wb_gpu *g = fake_gpu();
    wb_layer *l = make_layer(g, "w4a16", 256, 1024);
    fake.jit_result = CUDA_ERROR_INVALID_PTX;
    ck_assert_error(wb_layer_gemm(l, 4, 0xA000, 0xB000, NULL), WB_ERR_JIT, "Unknown symbol 'foo'");
    ck_assert_int_eq(fake.launches, 0);
    fake.jit_result = CUDA_SUCCESS;
    ck_assert_int_eq(wb_layer_gemm(l, 4, 0xA000, 0xB000, NULL), WB_OK);
    ck_assert_int_eq(fake.launches, 1);
    wb_layer_destroy(l);
    wb_gpu_destroy(g);
}
END_TEST

/* wb_layer_create_packed: weights packed once make a layer that uploads the very bytes wb_layer_create's
 * own packing does (formats of both packing families, a bias, zero points, fp8 in sm_90a's layout);
 * weights packed for another target serve where the layout is the same (w4a16 from sm_80), not where
 * it differs (fp8 from sm_80 on this sm_90a device); wrong sizes, a NULL buffer and an unknown target
 * are refused with reasons. wb_packed_sizes gives wb_pack_weights' sizes. */
START_TEST(test_layer_create_packed)
{
    wb_gpu *g = fake_gpu();
    static const char *specs[] = {"w4a16", "a=f16,w=uint4,ws=f16,g=64,zp=int,bias=1", "fp8", "fp8-block",
                                  "a=e4m3,w=int4,ws=f32,g=0,bias=1", "nvfp4"};
    const int64_t n = 256, k = 1024;
    for (size_t i = 0; i < WB_COUNT(specs); i++) {
        wb_format f;
        ck_assert_int_eq(wb_format_parse(specs[i], &f), WB_OK);
        host_weights h;
        host_weights_make(&h, &f, n, k);
        host_weights_vary(&h, &f, n, k);
        wb_layer *a = NULL, *b = NULL;
        fake.htod = 0, fake.htod_sum = 0;
        ck_assert_msg(wb_layer_create(g, &f, n, k, &h.w, &a) == WB_OK, "%s: %s", specs[i], wb_last_error());
        int uploads = fake.htod;
        uint64_t sum = fake.htod_sum;
        wb_packed p, sizes;
        ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM90A, n, k, &h.w, &p), WB_OK);
        ck_assert_int_eq(wb_packed_sizes(&f, n, k, &sizes), WB_OK);
        ck_assert(sizes.w_bytes == p.w_bytes && sizes.scale_bytes == p.scale_bytes && sizes.chan_bytes == p.chan_bytes);
        ck_assert(!sizes.w && !sizes.scale && !sizes.chan);
        fake.htod = 0, fake.htod_sum = 0;
        ck_assert_msg(wb_layer_create_packed(g, &f, WB_ARCH_SM90A, n, k, &p, &b) == WB_OK, "%s: %s", specs[i],
                      wb_last_error());
        ck_assert_int_eq(fake.htod, uploads);
        ck_assert_msg(fake.htod_sum == sum, "%s: the packed layer uploaded other bytes", specs[i]);
        if (f.a.bits == 16) /* the layer runs (8-bit activations take wb_layer_gemm_q) */
            ck_assert_msg(wb_layer_gemm(b, 16, 0x1000, 0x2000, NULL) == WB_OK, "%s", wb_last_error());
        wb_layer_destroy(b);
        wb_packed bad = p;
        bad.w_bytes--;
        ck_assert_error(wb_layer_create_packed(g, &f, WB_ARCH_SM90A, n, k, &bad, &b), WB_ERR_INVALID,
                        "wb_layer_create_packed", "the codes are", "wb_packed_sizes");
        ck_assert_ptr_null(b);
        bad = p;
        bad.scale = NULL;
        if (p.scale_bytes)
            ck_assert_error(wb_layer_create_packed(g, &f, WB_ARCH_SM90A, n, k, &bad, &b), WB_ERR_INVALID,
                            "the scales are", "at NULL");
        ck_assert_error(wb_layer_create_packed(g, &f, WB_ARCH_COUNT, n, k, &p, &b), WB_ERR_INVALID, "unknown target");
        ck_assert_error(wb_layer_create_packed(g, &f, WB_ARCH_SM90A, n, k, NULL, &b), WB_ERR_INVALID, "NULL weights");
        wb_packed_free(&p);
        wb_layer_destroy(a);
        host_weights_free(&h);
    }
    /* packed for sm_80: the same layout for w4a16, not for fp8 (wgmma's shared-memory operand here) */
    static const char *across[] = {"w4a16", "fp8"};
    for (int i = 0; i < 2; i++) {
        wb_format f;
        ck_assert_int_eq(wb_format_parse(across[i], &f), WB_OK);
        host_weights h;
        host_weights_make(&h, &f, n, k);
        host_weights_vary(&h, &f, n, k);
        wb_packed p;
        ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM80, n, k, &h.w, &p), WB_OK);
        wb_layer *l = NULL;
        if (i == 0) {
            ck_assert_int_eq(wb_layer_create_packed(g, &f, WB_ARCH_SM80, n, k, &p, &l), WB_OK);
            wb_layer_destroy(l);
        } else {
            ck_assert_error(wb_layer_create_packed(g, &f, WB_ARCH_SM80, n, k, &p, &l), WB_ERR_INVALID,
                            "packed for sm_80 are not laid out as sm_90a reads them", "pack them for sm_90a");
            ck_assert_ptr_null(l);
        }
        wb_packed_free(&p);
        host_weights_free(&h);
    }
    wb_format f;
    ck_assert_int_eq(wb_format_parse("w4a16", &f), WB_OK);
    wb_packed sizes;
    ck_assert_int_eq(wb_packed_sizes(&f, 256, 1000, &sizes), WB_ERR_INVALID); /* g=128 must divide K */
    ck_assert_error(wb_packed_sizes(NULL, 256, 1024, &sizes), WB_ERR_INVALID, "wb_packed_sizes", "format");
    wb_gpu_destroy(g);
}
END_TEST

static Suite *layer_suite(void)
{
    Suite *s = suite_create("layer");
    TCase *a = tcase_create("no driver");
    tcase_add_test(a, test_layer_null);
    suite_add_tcase(s, a);
    TCase *b = tcase_create("fake driver");
    tcase_add_checked_fixture(b, fake_setup, fake_teardown);
    tcase_add_test(b, test_layer_bad_shape);
    tcase_add_test(b, test_layer_gemm);
    tcase_add_test(b, test_layer_misaligned);
    tcase_add_test(b, test_layer_gemm_tma);
    tcase_add_test(b, test_layer_persistent_grid);
    tcase_add_test(b, test_layer_gemv);
    tcase_add_test(b, test_layer_gemm_q);
    tcase_add_test(b, test_layer_gemm_x);
    tcase_add_test(b, test_layer_fp4_quantizer);
    tcase_add_test(b, test_quantizer_cache_keys);
    tcase_add_test(b, test_layer_forced_config);
    tcase_add_test(b, test_layer_jit_failure);
    tcase_add_test(b, test_layer_create_packed);
    suite_add_tcase(s, b);
    return s;
}

int main(void) { return wbt_run(layer_suite()); }
