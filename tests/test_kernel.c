/* Tile-IR builder and validator, the legalizer's decisions per architecture, configs and PTX emission. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/tile.h"
#include "lower/isa.h"
#include "lower/layout.h"
#include "lower/lower.h"
#include "lower/target.h"
#include "testutil.h"

static wb_format fmt(const char *spec)
{
    wb_format f;
    ck_assert_int_eq(wb_format_parse(spec, &f), WB_OK);
    return f;
}

static wb_config full_config(const wb_format *f, wb_arch arch, int64_t m)
{
    wb_config c = {0};
    ck_assert_int_eq(wb_config_choose(f, arch, m, 4096, 4096, &c), WB_OK);
    return c;
}

START_TEST(builder_errors_are_sticky)
{
    wb_format f = fmt("w4a16");
    wb_config c = full_config(&f, WB_ARCH_SM90A, 1);
    wb_kernel *k = wb_kernel_create(&f, &c);
    int w = wb_load_tile(k, WB_OPERAND_W, 2);
    ck_assert_int_ge(w, 0);
    ck_assert_int_eq(wb_load_frag(k, w), -1); /* outside the loop */
    ck_assert_str_eq(k->error, "wb_load_frag: fragments are loaded inside the K loop");
    wb_kloop(k); /* harmless now */
    ck_assert_int_eq(k->nops, 1);
    ck_assert_int_eq(wb_kernel_validate(k), WB_ERR_INVALID);
    ck_assert_str_eq(wb_last_error(), "wb_load_frag: fragments are loaded inside the K loop");
    wb_kernel_destroy(k);
}
END_TEST

START_TEST(builder_checks_operand_kinds)
{
    wb_format f = fmt("w4a16");
    wb_config c = full_config(&f, WB_ARCH_SM90A, 1);
    wb_kernel *k = wb_kernel_create(&f, &c);
    int a = wb_load_tile(k, WB_OPERAND_A, 2);
    int acc = wb_acc(k);
    wb_kloop(k);
    int af = wb_load_frag(k, a);
    ck_assert_int_eq(wb_dequant(k, af, -1), -1);
    ck_assert_str_eq(k->error, "wb_dequant: codes must be a W fragment, scales a SCALE fragment");
    (void)acc;
    wb_kernel_destroy(k);
    /* dequant_tile: an A tile of fp4 activations with its ASCALE tile, inside the loop */
    k = wb_kernel_create(&f, &c);
    a = wb_load_tile(k, WB_OPERAND_A, 2);
    int as = wb_load_tile(k, WB_OPERAND_ASCALE, 2);
    ck_assert_int_eq(wb_dequant_tile(k, a, as), -1);
    ck_assert_str_eq(k->error, "wb_dequant_tile: tiles are dequantized inside the K loop");
    wb_kernel_destroy(k);
    k = wb_kernel_create(&f, &c);
    a = wb_load_tile(k, WB_OPERAND_A, 2);
    as = wb_load_tile(k, WB_OPERAND_ASCALE, 2);
    wb_kloop(k);
    ck_assert_int_eq(wb_dequant_tile(k, a, as), -1); /* w4a16 has 16-bit activations */
    ck_assert_str_eq(k->error, "wb_dequant_tile: dequantizes the A tile of fp4 activations (a=e2m1) with its "
                               "ASCALE tile");
    wb_kernel_destroy(k);

    k = wb_kernel_create(&f, &c);
    wb_kloop(k);
    wb_kloop_end(k);
    wb_kloop_end(k);
    ck_assert_str_eq(k->error, "wb_kloop_end: no open K loop");
    wb_kernel_destroy(k);
}
END_TEST

START_TEST(scale_goes_to_the_product_when_it_pays)
{
    /* one scale per k64 slice and few m-tiles, or groups of 32 and one m-tile: unscaled dequant +
     * mma_scaled; else the weights are scaled */
    struct { const char *spec; int64_t m; int scaled_product; } cases[] = {
        {"w4a16", 1, 1}, {"w4a16,g=0", 16, 1}, {"w4a16-zp", 1, 1}, {"w4a16,g=32", 1, 1}, {"w4a16,g=32", 16, 0},
        {"w4a16,g=16", 1, 0}, {"a=f16,w=uint4,zp=fp,g=128", 1, 0}, {"w4a16", 4096, 0}, {"mxfp4", 1, 1},
        {"nvfp4-a16", 1, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_format f = fmt(cases[i].spec);
        wb_config c = full_config(&f, WB_ARCH_SM90A, cases[i].m);
        wb_kernel *k = wb_build_gemm(&f, &c, 0);
        ck_assert_int_eq(wb_kernel_validate(k), WB_OK);
        wb_buf b = {0};
        wb_kernel_print(k, &b);
        ck_assert_msg((strstr(b.data, "mma_scaled") != NULL) == cases[i].scaled_product &&
                      (strstr(b.data, "(unscaled)") != NULL) == cases[i].scaled_product, "%s m=%lld:\n%s",
                      cases[i].spec, (long long)cases[i].m, b.data);
        wb_buf_free(&b);
        wb_kernel_destroy(k);
    }
    /* the builder refuses the mismatched pairs */
    wb_format f = fmt("w4a16");
    wb_config c = full_config(&f, WB_ARCH_SM90A, 1);
    wb_kernel *k = wb_kernel_create(&f, &c);
    int a = wb_load_tile(k, WB_OPERAND_A, 2), w = wb_load_tile(k, WB_OPERAND_W, 2);
    int s = wb_load_tile(k, WB_OPERAND_SCALE, 2), acc = wb_acc(k);
    wb_kloop(k);
    int wf = wb_load_frag(k, w), sf = wb_load_frag(k, s), af = wb_load_frag(k, a);
    wb_mma(k, acc, wb_dequant_unscaled(k, wf, sf), af);
    ck_assert_str_eq(k->error, "wb_mma: unscaled weights need their scale: use wb_mma_scaled");
    wb_kernel_destroy(k);
    f = fmt("w4a16,g=16");
    k = wb_kernel_create(&f, &c);
    a = wb_load_tile(k, WB_OPERAND_A, 2), w = wb_load_tile(k, WB_OPERAND_W, 2);
    s = wb_load_tile(k, WB_OPERAND_SCALE, 2), acc = wb_acc(k);
    wb_kloop(k);
    wf = wb_load_frag(k, w), sf = wb_load_frag(k, s), af = wb_load_frag(k, a);
    wb_mma_scaled(k, acc, wb_dequant_unscaled(k, wf, sf), af, sf);
    ck_assert_str_eq(k->error, "wb_mma_scaled: scaled f32 products need a SCALE fragment and g = 0, 32 or a "
                               "multiple of 64");
    wb_kernel_destroy(k);
    f = fmt("a=f16,w=uint4,zp=fp,g=128");
    k = wb_kernel_create(&f, &c);
    w = wb_load_tile(k, WB_OPERAND_W, 2), s = wb_load_tile(k, WB_OPERAND_SCALE, 2);
    wb_kloop(k);
    wf = wb_load_frag(k, w), sf = wb_load_frag(k, s);
    ck_assert_int_eq(wb_dequant_unscaled(k, wf, sf), -1);
    ck_assert_str_eq(k->error, "wb_dequant_unscaled: a float zero point (zp=fp) is added after scaling: dequant "
                               "with the scales");
    wb_kernel_destroy(k);
}
END_TEST

START_TEST(standard_gemm_validates_and_prints)
{
    wb_format f = fmt("w4a16-zp");
    wb_config c = full_config(&f, WB_ARCH_SM80, 64);
    wb_kernel *k = wb_build_gemm(&f, &c, 0);
    ck_assert_int_eq(wb_kernel_validate(k), WB_OK);
    wb_buf b = {0};
    wb_kernel_print(k, &b);
    ck_assert_ptr_nonnull(strstr(b.data, "%7 = dequant %4 %5"));
    ck_assert_ptr_nonnull(strstr(b.data, "epilogue %3"));
    wb_buf_free(&b);
    wb_kernel_destroy(k);
}
END_TEST

static wb_status ptx_for(const char *spec, wb_arch arch, wb_config c, char **ptx)
{
    wb_format f = fmt(spec);
    wb_status s = wb_config_choose(&f, arch, 16, 4096, 4096, &c);
    ck_assert_int_eq(s, WB_OK);
    return wb_kernel_ptx(&f, arch, &c, 0, ptx);
}

START_TEST(legalizer_refuses_with_reasons)
{
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("w4a16,a=bf16", WB_ARCH_SM75, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "bf16 needs sm_80 or newer"));
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM80, (wb_config){.mma = WB_MMA_WGMMA}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_str_eq(wb_last_error(), "sm_80 has no wgmma (sm_90a only)");
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_TCGEN05}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "sm_90a has no tcgen05"));
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM75, (wb_config){.load = WB_LOAD_CP_ASYNC}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "sm_75 has no cp.async"));
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM80, (wb_config){.load = WB_LOAD_CP_ASYNC, .stages = 1}, &ptx),
                     WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "2..8 stages"));
    ck_assert_int_eq(ptx_for("w4a16,acc=f16", WB_ARCH_SM90A, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "acc=f16 is not supported by this build"));
    ck_assert_int_eq(ptx_for("a=f16,w=e5m1,g=64", WB_ARCH_SM90A, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "exceed the f16 range"));
    ck_assert_int_eq(ptx_for("a=e4m3,w=int8,ws=f32,g=0", WB_ARCH_SM90A, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=e4m3 with w=int8 is not supported by this build yet (f16 and "
                                                  "bf16 activations, s8 with w=int8, int4 or e2m1, s4 with w=int4, "
                                                  "e4m3/e5m2 with w=e4m3, e5m2, int4 or e2m1, and e2m1 with any "
                                                  "16-bit kernel weight, only)"));
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "its native instruction on sm_90a is wgmma e4m3/e5m2 "
                                                  "(mma.sync m16n8k32 e4m3/e5m2 is only emulated there)"));
    ck_assert_int_eq(ptx_for("w4a8-fp8", WB_ARCH_SM90A, (wb_config){0}, &ptx), WB_OK);
    free(ptx);
    ptx = NULL;
    ck_assert_int_eq(ptx_for("w4a8-int8,g=64", WB_ARCH_SM103A, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=s8 with w=int4 is supported with f32 weight scales per output "
                                                  "channel (g=0) or per block of gn channels x g along K, g a "
                                                  "multiple of 128"));
    ck_assert_int_eq(ptx_for("w4a8-int8", WB_ARCH_SM103A, (wb_config){0}, &ptx), WB_OK);
    free(ptx);
    ptx = NULL;
    ck_assert_int_eq(ptx_for("a=s8,w=int3,ws=f32,g=0", WB_ARCH_SM103A, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "its native instruction on sm_103a is mma.sync m16n8k32 s8"));
    /* W8A8 is built for one f32 scale per token, f32 weight scales per channel or per group of 128k, bf16
     * output from sm_80 */
    ck_assert_int_eq(ptx_for("int8,g=64", WB_ARCH_SM80, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "g a multiple of 128 (ws=f32, wgs=0, zp=none)"));
    ck_assert_int_eq(ptx_for("int8,ag=64", WB_ARCH_SM80, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "per token and group of a multiple of 128 along K (as=f32, ags=0) "
                                                  "in this build (got ag=64)"));
    ck_assert_int_eq(ptx_for("int8,g=128,gn=128,ag=128", WB_ARCH_SM80, (wb_config){0}, &ptx), WB_OK);
    free(ptx);
    ptx = NULL;
    ck_assert_int_eq(ptx_for("a=s8,w=uint8,ws=f32,g=0", WB_ARCH_SM80, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=s8 with w=uint8 is not supported by this build yet"));
    ck_assert_int_eq(ptx_for("int8", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_TCGEN05}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "sm_90a has no tcgen05"));
    ck_assert_int_eq(ptx_for("int8", WB_ARCH_SM80, (wb_config){.mma = WB_MMA_WGMMA}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "sm_80 has no wgmma"));
    ck_assert_int_eq(ptx_for("int8", WB_ARCH_SM75, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "out=bf16 needs sm_80 or newer"));
    ck_assert_int_eq(ptx_for("a=e2m1,w=int8,ws=f32,g=0,as=f32", WB_ARCH_SM120A, (wb_config){0}, &ptx),
                     WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=e2m1 needs as=e4m3 (NVFP4) or as=e8m0 (MX)"));
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM80, (wb_config){.m_tiles = 3}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "m_tiles must be 1, 2, 4 or 8"));
    ck_assert_ptr_null(ptx);
}
END_TEST

START_TEST(ptx_per_architecture)
{
    static const struct {
        wb_arch arch;
        const char *target, *mma, *load;
    } cases[] = {
        {WB_ARCH_SM75, ".target sm_75", "m16n8k8.row.col.f32.f16", "ld.global.nc.v4.u32"},
        {WB_ARCH_SM80, ".target sm_80", "m16n8k16.row.col.f32.f16", "cp.async.cg.shared.global"},
        {WB_ARCH_SM90A, ".target sm_90a", "m16n8k16.row.col.f32.f16", "cp.async.cg.shared.global"},
        {WB_ARCH_SM103A, ".target sm_103a", "m16n8k16.row.col.f32.f16", "cp.async.cg.shared.global"},
        {WB_ARCH_SM120A, ".target sm_120a", "m16n8k16.row.col.f32.f16", "cp.async.cg.shared.global"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *ptx = NULL, *again = NULL;
        ck_assert_int_eq(ptx_for("w4a16", cases[i].arch, (wb_config){0}, &ptx), WB_OK);
        ck_assert_ptr_nonnull(strstr(ptx, cases[i].target));
        ck_assert_ptr_nonnull(strstr(ptx, cases[i].mma));
        ck_assert_ptr_nonnull(strstr(ptx, cases[i].load));
        ck_assert_ptr_nonnull(strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
        ck_assert_ptr_null(strstr(ptx, "// ir:"));
        ck_assert_int_eq(ptx_for("w4a16", cases[i].arch, (wb_config){0}, &again), WB_OK);
        ck_assert_str_eq(ptx, again); /* deterministic */
        free(ptx);
        free(again);
    }
}
END_TEST

/* The part of an annotated kernel's text before its epilogue (a copy: free it). */
static char *before_epilogue(const char *ptx)
{
    const char *at = strstr(ptx, "// ir: epilogue");
    ck_assert_ptr_nonnull(at);
    return strndup(ptx, (size_t)(at - ptx));
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* mma.sync on cp.async with K split inside the block: with 8-bit activations the warps of one wk meet
 * on barrier 1 + wk, counting their 32 x warps_n threads; with 16-bit activations every warp meets at
 * the block's barrier. */
START_TEST(kloop_barrier_per_k_warp_group)
{
    wb_config c = {.mma = WB_MMA_SYNC, .load = WB_LOAD_CP_ASYNC, .m_tiles = 2, .warps_n = 2, .warps_k = 4,
                   .stages = 3};
    wb_format f8 = fmt("w4a8-fp8"), f16 = fmt("w4a16");
    char *ptx = NULL;
    ck_assert_msg(wb_kernel_ptx(&f8, WB_ARCH_SM90A, &c, WB_EMIT_ANNOTATE, &ptx) == WB_OK, "%s", wb_last_error());
    char *loop = before_epilogue(ptx);
    free(ptx);
    ck_assert_int_eq(count_of(loop, "bar.sync %r"), 1);
    const char *id = strstr(loop, "bar.sync %r") + strlen("bar.sync %r");
    id += strspn(id, "0123456789");
    ck_assert_int_eq(strncmp(id, ", 64;", 5), 0); /* 32 x warps_n threads */
    free(loop);
    ck_assert_msg(wb_kernel_ptx(&f16, WB_ARCH_SM90A, &c, WB_EMIT_ANNOTATE, &ptx) == WB_OK, "%s", wb_last_error());
    loop = before_epilogue(ptx);
    free(ptx);
    ck_assert_int_eq(count_of(loop, "bar.sync %r"), 0);
    ck_assert_int_ge(count_of(loop, "bar.sync 0;"), 1);
    free(loop);
}
END_TEST

/* W8A8 on every target: the integer MMA on the code words as loaded (no cvt of weights, no dequant
 * arithmetic), s32 sums reduced across warps_k in s32, the per-token scales read from p_ascale; the
 * heuristic picks mma.sync also on sm_90a. */
/* W8A8 on sm_90a above M = 64: wgmma m64nNk32 s8 with the code words as its register A operand (four
 * per k128 slice, double-buffered across the two halves of the unrolled loop) and the s8 tile read through
 * 128B-swizzle descriptors; s32 sums converted once, after K; the stages filled by the warp-specialized
 * TMA pipeline (per-channel W8A8 above M = 64: lower_tma.c). K not a multiple of 128: mma.sync.
 * Forced choices: mma.sync stays legal, and so does cp.async; grouped W8A8 keeps cp.async. */
START_TEST(w8a8_wgmma)
{
    wb_format f = fmt("int8");
    static const int64_t ms[] = {100, 300, 1000, 16384};
    for (size_t j = 0; j < 4; j++) {
        wb_config c = {0};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, ms[j], 8192, 8192, &c), WB_OK);
        ck_assert_int_eq(c.mma, WB_MMA_WGMMA);
        ck_assert_int_eq(c.load, WB_LOAD_TMA);
        char *ptx = NULL, shape[64];
        ck_assert_msg(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, WB_EMIT_ANNOTATE, &ptx) == WB_OK, "%s", wb_last_error());
        snprintf(shape, sizeof shape, "wgmma.mma_async.sync.aligned.m64n%dk32.s32.s8.s8 {", 8 * c.m_tiles);
        /* the loop unrolled by two, four wgmma a half */
        ck_assert_int_eq(count_of(ptx, shape), 8);
        ck_assert_int_eq(count_of(ptx, "wgmma.mma_async"), 8);
        /* 16 code words a lane: before the loop, then for the next tile in each half, into the other
         * half's registers (a wgmma's registers are never written while it runs) */
        char *loop = before_epilogue(ptx);
        ck_assert_int_eq(count_of(loop, "ld.shared.v4.u32"), 12);
        free(loop);
        ck_assert_ptr_nonnull(strstr(ptx, "mma rule: s8 x s8 -> s32, wgmma m64n"));
        ck_assert_ptr_null(strstr(ptx, "ldmatrix")); /* wgmma reads the activations itself */
        ck_assert_ptr_null(strstr(ptx, "mma.sync"));
        ck_assert_ptr_null(strstr(ptx, "fma.rn"));
        ck_assert_ptr_nonnull(strstr(ptx, "0x40000040")); /* descriptor high word: 128B swizzle, 1024-byte stride */
        ck_assert_int_eq(count_of(ptx, "cvt.rn.f32.s32"), c.m_tiles * 4);
        free(ptx);
    }
    wb_config c = {.load = WB_LOAD_CP_ASYNC};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 300, 8192, 8192, &c), WB_OK);
    ck_assert_int_eq(c.mma, WB_MMA_WGMMA);
    ck_assert_int_eq(c.load, WB_LOAD_CP_ASYNC);
    wb_format grouped = fmt("w4a8-int8");
    c = (wb_config){0};
    ck_assert_int_eq(wb_config_choose(&grouped, WB_ARCH_SM90A, 300, 8192, 8192, &c), WB_OK);
    ck_assert_int_eq(c.load, WB_LOAD_CP_ASYNC);
    c = (wb_config){0};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 300, 4096, 4096 + 64, &c), WB_OK);
    ck_assert_int_eq(c.mma, WB_MMA_SYNC);
    c = (wb_config){.mma = WB_MMA_WGMMA};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 300, 4096, 4096 + 64, &c), WB_OK);
    ck_assert_int_eq(wb_kernel_check_shape(&f, &c, 300, 4096, 4096 + 64), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "K a multiple of 128"));
    c = (wb_config){.mma = WB_MMA_SYNC};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 300, 4096, 4096, &c), WB_OK);
    char *ptx = NULL;
    ck_assert_int_eq(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, 0, &ptx), WB_OK);
    ck_assert_ptr_nonnull(strstr(ptx, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"));
    free(ptx);
}
END_TEST

/* The heuristic's load path and tile for 16-bit activations on sm_90a: the TMA pipeline above M = 64
 * where the block has two consumer warpgroups, cp.async with one (64 channels a block) and for fp4
 * activations (their consumers convert a cp.async tile), mma.sync at decode sizes; 256-token tiles
 * from one and a half waves of them (192-token ones in persistent blocks where an SM works through at
 * most 5% more token rows with them: fp8_wide_tiles) or in one wave for more than half the SMs,
 * 128 x 128 ones where they give half the SMs a block, else a 128-token tile split along K whose pairs
 * give more than half of them one (where K halves), clusters of two from a wave of blocks, a second
 * warpgroup along K for one-warpgroup tiles over a long K; a load asked for is kept. At M = 9 to 16
 * on mma.sync, pairs of blocks of two warps along N splitting a long K where one warp would stay;
 * persistent blocks for 128 x 128 TMA tiles in one wave. */
START_TEST(a16_load_choice)
{
    static const struct {
        const char *spec;
        int64_t m, n, k;
        int mma, load, warps_n, m_tiles, cluster, split_k;
    } cases[] = {
        {"w4a16", 16384, 8192, 8192, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 24, 2, 0}, /* 192 tokens, persistent */
        {"w4a16", 1024, 8192, 8192, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 32, 2, 0},
        {"w4a16", 256, 8192, 8192, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 16, 0, 0}, /* 128 blocks: fewer than SMs */
        {"w4a16", 512, 8192, 8192, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 32, 0, 0},  /* one wave of 256-token tiles */
        {"w4a16", 1024, 4096, 14336, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 32, 0, 0}, /* the same */
        {"w4a16", 1024, 6144, 4096, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 16, 2, 0},  /* 192 of them: two waves */
        {"a=bf16,w=int3,ws=bf16,g=128", 4096, 28672, 4096, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 24, 2, 0},
        {"w4a16", 256, 28672, 4096, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 32, 2, 0},  /* 224 blocks: 1.7 waves */
        {"w4a16", 256, 6144, 4096, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 16, 0, 0},   /* 96 blocks */
        {"w4a16", 256, 4096, 14336, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 16, 0, 2}, /* 128 x 128: 64 tiles, split */
        {"w4a16", 128, 8192, 8192, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 16, 0, 2},  /* the same */
        {"w4a16", 128, 6144, 4096, WB_MMA_WGMMA, WB_LOAD_TMA, 8, 16, 0, 2},  /* 48 tiles: 96 blocks */
        {"w4a16", 128, 4096, 14336, WB_MMA_WGMMA, WB_LOAD_CP_ASYNC, 4, 16, 0, 2}, /* 32 of 128 x 128: 64 x 2 */
        {"w4a16", 128, 6144, 4224, WB_MMA_WGMMA, WB_LOAD_CP_ASYNC, 4, 8, 0, 0},  /* K / 2 not whole groups */
        {"fp8", 128, 6144, 4096, WB_MMA_WGMMA, WB_LOAD_TMA, 0, 0, 0, 0},        /* 16-bit activations only */
        {"nvfp4,out=f16", 4096, 8192, 8192, WB_MMA_WGMMA, WB_LOAD_CP_ASYNC, 8, 0, 0, 0},
        {"w4a16", 16, 8192, 8192, WB_MMA_SYNC, WB_LOAD_CP_ASYNC, 0, 0, 0, 0},
        /* two m-tiles where one warp along N would stay, over a long K whose halves take stages of 8
         * slices: two in pairs splitting K */
        {"w4a16", 16, 4096, 14336, WB_MMA_SYNC, WB_LOAD_CP_ASYNC, 2, 2, 0, 2},
        {"a=bf16,w=uint4,ws=bf16,g=128,zp=int", 9, 4096, 16384, WB_MMA_SYNC, WB_LOAD_CP_ASYNC, 2, 2, 0, 2},
        {"w4a16", 16, 4096, 11008, WB_MMA_SYNC, WB_LOAD_CP_ASYNC, 1, 2, 0, 0}, /* halves of 2 x 1 slices: not */
        {"w4a16", 16, 6144, 4096, WB_MMA_SYNC, WB_LOAD_CP_ASYNC, 1, 2, 0, 0},  /* K = 4096: not */
        {"w4a16", 8, 4096, 14336, WB_MMA_SYNC, WB_LOAD_CP_ASYNC, 0, 1, 0, 0},  /* one m-tile: not */
        {"a=e4m3,w=int4,ws=f32,g=0", 16, 4096, 14336, WB_MMA_SYNC, WB_LOAD_CP_ASYNC, 2, 2, 0, 0}, /* 8-bit: not */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_format f = fmt(cases[i].spec);
        wb_config c = {0};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, cases[i].m, cases[i].n, cases[i].k, &c), WB_OK);
        ck_assert_msg(c.mma == cases[i].mma && c.load == cases[i].load &&
                          (!cases[i].warps_n || c.warps_n == cases[i].warps_n) &&
                          (!cases[i].m_tiles || (c.m_tiles == cases[i].m_tiles && c.cluster == cases[i].cluster)) &&
                          (c.split_k > 1 ? 2 : 0) == cases[i].split_k,
                      "%s at m=%lld n=%lld: mma %d load %d warps_n %d m_tiles %d cluster %d split_k %d", cases[i].spec,
                      (long long)cases[i].m, (long long)cases[i].n, c.mma, c.load, c.warps_n, c.m_tiles, c.cluster,
                      c.split_k);
    }
    /* 128 x 128 TMA tiles in one wave: persistent blocks (not where they pair up, split K, or a tile
     * or a cluster is asked) */
    static const struct { int64_t m, n, k; wb_config asked; int persistent; } pw[] = {
        {256, 8192, 8192, {0}, 1}, {256, 6144, 4096, {0}, 1}, {256, 28672, 4096, {0}, 0},
        {256, 4096, 14336, {0}, 0}, {128, 8192, 8192, {0}, 0}, {256, 8192, 8192, {.m_tiles = 16}, 0},
        {256, 8192, 8192, {.cluster = 1}, 0}, {256, 8192, 8192, {.split_k = 1}, 1}};
    for (size_t i = 0; i < sizeof pw / sizeof pw[0]; i++) {
        wb_format f = fmt("w4a16");
        wb_config c = pw[i].asked;
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, pw[i].m, pw[i].n, pw[i].k, &c), WB_OK);
        ck_assert_msg(c.persistent == pw[i].persistent, "case %zu: persistent %d", i, c.persistent);
    }
    /* one-warpgroup tiles: a second warpgroup along K where K is long, not at K = 4096 */
    wb_format f = fmt("w4a16");
    wb_config c = {0};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 128, 4096, 14336, &c), WB_OK);
    ck_assert_int_eq(c.warps_k, 2);
    c = (wb_config){0};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 128, 6144, 4224, &c), WB_OK);
    ck_assert(c.warps_n == 4 && c.load == WB_LOAD_CP_ASYNC && c.warps_k == 1);
    /* a field asked for leaves the split out, and the tile is the unsplit rule's */
    c = (wb_config){.warps_k = 1};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 256, 4096, 14336, &c), WB_OK);
    ck_assert(c.warps_k == 1 && c.split_k < 2 && c.warps_n == 4 && c.load == WB_LOAD_CP_ASYNC);
    c = (wb_config){.load = WB_LOAD_TMA};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 256, 4096, 14336, &c), WB_OK);
    ck_assert(c.load == WB_LOAD_TMA && c.split_k < 2);
    c = (wb_config){.split_k = 1};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 128, 8192, 8192, &c), WB_OK);
    ck_assert(c.split_k < 2 && c.warps_n == 4);
    c = (wb_config){.load = WB_LOAD_CP_ASYNC};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 16384, 8192, 8192, &c), WB_OK);
    ck_assert_int_eq(c.load, WB_LOAD_CP_ASYNC);
}
END_TEST

/* The TMA pipeline's epilogue stages its output tile in shared memory: the consumers meet at a named
 * barrier before and after their 2-byte stores into it (one a sum), then each stores 16-byte chunks
 * of whole rows (or, behind a branch on the output pointer's alignment, eight 2-byte stores a chunk);
 * the tile's rows are padded by 16 bytes; over the stages unless persistent. The cp.async wgmma and the
 * mma.sync kernels store their sums from the registers. */
START_TEST(staged_epilogue)
{
    static const struct { const char *spec; int64_t m; wb_config c; } cases[] = {
        {"fp8", 16384, {0}},
        {"int8", 16384, {0}},
        {"w4a16", 4096, {0}},
        {"w4a16", 4096, {.persistent = 1}},
        {"a=e4m3,w=int4,ws=f32,g=0", 300, {.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .warps_n = 4}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_format f = fmt(cases[i].spec);
        wb_config c = cases[i].c;
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, cases[i].m, 8192, 8192, &c), WB_OK);
        ck_assert_int_eq(c.load, WB_LOAD_TMA);
        wb_layout lay;
        wb_layout_get(&f, &c, WB_ARCH_SM90A, &lay);
        ck_assert_int_eq(lay.out_row, 2 * lay.bn + 16);
        ck_assert_int_eq(lay.out_bytes, lay.bm * lay.out_row);
        ck_assert_int_eq(lay.out_off, c.persistent ? lay.mbar_off + 16 * c.stages : 0);
        char *ptx = NULL, bar[32];
        ck_assert_msg(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, WB_EMIT_ANNOTATE, &ptx) == WB_OK, "%s", wb_last_error());
        const char *epi = strstr(ptx, "// ir: epilogue");
        ck_assert_ptr_nonnull(epi);
        snprintf(bar, sizeof bar, "bar.sync 1, %d;", lay.consumers);
        int chunks = lay.bm * lay.bn / 8 / lay.consumers; /* 16-byte chunks a thread */
        ck_assert_int_eq(count_of(epi, bar), 2);
        ck_assert_ptr_nonnull(strstr(epi, "// store rule: the output tile staged in shared memory"));
        ck_assert_int_eq(count_of(epi, "st.shared.b16"), c.m_tiles * 4);
        ck_assert_int_eq(count_of(epi, "ld.shared.v4.u32"), chunks);
        ck_assert_int_eq(count_of(epi, "st.global.v4.u32"), chunks);
        ck_assert_int_eq(count_of(epi, "st.global.b16"), 8 * chunks);
        free(ptx);
    }
    wb_format f = fmt("w4a16");
    wb_config c = {.mma = WB_MMA_WGMMA, .load = WB_LOAD_CP_ASYNC};
    char *ptx = NULL;
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 4096, 8192, 8192, &c), WB_OK);
    ck_assert_int_eq(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, 0, &ptx), WB_OK);
    ck_assert_ptr_null(strstr(ptx, "bar.sync 1,"));
    ck_assert_ptr_null(strstr(ptx, "st.global.v4"));
    ck_assert_int_eq(count_of(ptx, "st.global.b16"), c.m_tiles * 4);
    free(ptx);
}
END_TEST

/* --persistent: the TMA pipeline with a block per SM at most (the target's count; the runtime takes the
 * device's), a one-dimensional grid whatever the tile count, the same tile, stages and clusters as
 * without it (in clusters of two: an even grid, the pair walking pairs of tiles and meeting once at
 * the end); refused off the TMA pipeline. */
START_TEST(persistent_grid)
{
    static const struct { const char *spec; int64_t m, n; unsigned grid; } cases[] = {
        {"w4a16", 4096, 8192, 132}, /* 64 strips x 16 token tiles */
        {"w4a16", 256, 8192, 128},  /* 64 strips x 2 token tiles of 128: too few for clusters */
        {"fp8", 16384, 8192, 132},
        {"int8", 16384, 28672, 132},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_format f = fmt(cases[i].spec);
        wb_config c = {.persistent = 1}, plain = {.load = WB_LOAD_TMA};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, cases[i].m, cases[i].n, 8192, &c), WB_OK);
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, cases[i].m, cases[i].n, 8192, &plain), WB_OK);
        ck_assert_int_eq(c.load, WB_LOAD_TMA);
        /* the epilogue's staged output tile has its own place beside the stages: a stage fewer where
         * both do not fit; 192-token tiles are persistent unasked, and 16-bit activations' 128 x 128
         * tiles in one wave */
        ck_assert(c.m_tiles == plain.m_tiles && c.warps_n == plain.warps_n && c.stages <= plain.stages &&
                  c.stages >= 3);
        ck_assert_int_eq(plain.persistent, plain.m_tiles == 24 || i == 1);
        ck_assert_int_eq(c.cluster, plain.cluster);
        ck_assert_int_eq(c.cluster, i == 1 ? 0 : 2);
        wb_launch_dims d, dp;
        ck_assert_int_eq(wb_kernel_dims(&f, WB_ARCH_SM90A, &c, cases[i].m, cases[i].n, 8192, &d), WB_OK);
        ck_assert_int_eq(wb_kernel_dims(&f, WB_ARCH_SM90A, &plain, cases[i].m, cases[i].n, 8192, &dp), WB_OK);
        ck_assert_uint_eq(d.grid[0], cases[i].grid);
        ck_assert_uint_eq(d.grid[1], 1);
        wb_layout lay;
        wb_layout_get(&f, &c, WB_ARCH_SM90A, &lay);
        ck_assert(d.block[0] == dp.block[0] && lay.out_off >= lay.stage * c.stages && d.smem_bytes <= 232448);
        char *ptx = NULL;
        ck_assert_msg(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, 0, &ptx) == WB_OK, "%s", wb_last_error());
        ck_assert_ptr_null(strstr(ptx, "%nctaid.y")); /* the tiles come from the walk, not the grid's shape */
        ck_assert_int_eq(count_of(ptx, "barrier.cluster.arrive.release"), c.cluster == 2);
        ck_assert_int_eq(count_of(ptx, ".multicast::cluster"), c.cluster == 2);
        free(ptx);
    }
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM90A,
                             (wb_config){.persistent = 1, .load = WB_LOAD_CP_ASYNC, .mma = WB_MMA_WGMMA}, &ptx),
                     WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "TMA pipeline"));
}
END_TEST

/* --cluster 2: the TMA pipeline in pairs of blocks (.reqnctapercluster 2, 1, 1) on an even grid of
 * channel tiles, the same tile, stages and shared memory as without it, each block multicasting half
 * of the activation tile; refused off the TMA pipeline, with an odd m_tiles or an odd count of channel
 * tiles. */
START_TEST(cluster_pairs)
{
    static const char *const specs[] = {"w4a16", "fp8", "int8"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        wb_format f = fmt(specs[i]);
        wb_config c = {.cluster = 2}, plain = {.load = WB_LOAD_TMA, .cluster = 1};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 4096, 8192, 8192, &c), WB_OK);
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 4096, 8192, 8192, &plain), WB_OK);
        ck_assert_int_eq(c.load, WB_LOAD_TMA);
        ck_assert(c.m_tiles == plain.m_tiles && c.warps_n == plain.warps_n && c.stages == plain.stages);
        ck_assert(!wb_config_equal(&c, &plain));
        wb_launch_dims d, dp;
        ck_assert_int_eq(wb_kernel_dims(&f, WB_ARCH_SM90A, &c, 4096, 8192, 8192, &d), WB_OK);
        ck_assert_int_eq(wb_kernel_dims(&f, WB_ARCH_SM90A, &plain, 4096, 8192, 8192, &dp), WB_OK);
        ck_assert(d.grid[0] == dp.grid[0] && d.grid[1] == dp.grid[1] && d.grid[0] % 2 == 0);
        ck_assert(d.block[0] == dp.block[0] && d.smem_bytes == dp.smem_bytes);
        char *ptx = NULL;
        ck_assert_msg(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, 0, &ptx) == WB_OK, "%s", wb_last_error());
        ck_assert_ptr_nonnull(strstr(ptx, ".reqnctapercluster 2, 1, 1\n"));
        ck_assert_ptr_nonnull(strstr(ptx, "%cluster_ctarank"));
        ck_assert_ptr_nonnull(strstr(ptx, ".multicast::cluster"));
        ck_assert_ptr_nonnull(strstr(ptx, "mbarrier.arrive.shared::cluster.b64 _, ["));
        free(ptx);
        ck_assert_int_eq(wb_kernel_ptx(&f, WB_ARCH_SM90A, &plain, 0, &ptx), WB_OK);
        ck_assert_ptr_null(strstr(ptx, "cluster_ctarank"));
        ck_assert_ptr_null(strstr(ptx, "reqnctapercluster"));
        free(ptx);
        /* 8192 / 128 channel tiles pair up; 384 / 128 do not */
        ck_assert_int_eq(wb_kernel_check_shape(&f, &c, 4096, 8192, 8192), WB_OK);
        if (c.warps_n == 8) {
            ck_assert_int_eq(wb_kernel_check_shape(&f, &c, 4096, 384, 8192), WB_ERR_INVALID);
            ck_assert_ptr_nonnull(strstr(wb_last_error(), "two channel tiles"));
        }
    }
    const wb_config bad[] = {
        {.cluster = 2, .load = WB_LOAD_CP_ASYNC, .mma = WB_MMA_WGMMA},
        {.cluster = 2, .load = WB_LOAD_TMA, .mma = WB_MMA_WGMMA, .m_tiles = 9},
        {.cluster = 3, .load = WB_LOAD_TMA, .mma = WB_MMA_WGMMA},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *ptx = NULL;
        ck_assert_int_eq(ptx_for("fp8", WB_ARCH_SM90A, bad[i], &ptx), WB_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(wb_last_error(), "cluster"));
    }
}
END_TEST

/* --split-k 2: a pair of blocks (.reqnctapercluster 2, 1, 1) on each output tile, twice the blocks along
 * x, the same tile as without it; the second block's sums stored into the first's shared memory between
 * two cluster barriers; asking for it asks for wgmma; refused on mma.sync, with --persistent or
 * --cluster 2, for grouped W8A8 and fp4 activations, for K that does not halve into whole block tiles
 * and scale groups, and where the sums would not fit over the TMA stages. */
START_TEST(split_k_pairs)
{
    static const struct { const char *spec; int load; } cases[] = {
        {"w4a16", WB_LOAD_TMA}, {"fp8", WB_LOAD_TMA}, {"int8", WB_LOAD_TMA}, {"w4a16", WB_LOAD_CP_ASYNC}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_format f = fmt(cases[i].spec);
        wb_config c = {.split_k = 2, .load = cases[i].load}, plain = {.load = cases[i].load, .cluster = 1};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 256, 6144, 4096, &c), WB_OK);
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 256, 6144, 4096, &plain), WB_OK);
        ck_assert_int_eq(c.mma, WB_MMA_WGMMA);
        ck_assert(c.m_tiles == plain.m_tiles && c.warps_n == plain.warps_n && c.cluster <= 1);
        ck_assert(!wb_config_equal(&c, &plain));
        wb_launch_dims d, dp;
        ck_assert_int_eq(wb_kernel_dims(&f, WB_ARCH_SM90A, &c, 256, 6144, 4096, &d), WB_OK);
        ck_assert_int_eq(wb_kernel_dims(&f, WB_ARCH_SM90A, &plain, 256, 6144, 4096, &dp), WB_OK);
        ck_assert(d.grid[0] == 2 * dp.grid[0] && d.grid[1] == dp.grid[1] && d.block[0] == dp.block[0]);
        char *ptx = NULL;
        ck_assert_msg(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, 0, &ptx) == WB_OK, "%s", wb_last_error());
        ck_assert_ptr_nonnull(strstr(ptx, ".reqnctapercluster 2, 1, 1\n"));
        ck_assert_int_eq(count_of(ptx, "barrier.cluster.wait"), 3); /* the second block's two, the first's second */
        ck_assert_int_eq(count_of(ptx, "st.shared::cluster."), c.m_tiles * 4);
        ck_assert_ptr_null(strstr(ptx, ".multicast::cluster"));
        free(ptx);
        ck_assert_int_eq(wb_kernel_check_shape(&f, &c, 256, 6144, 4096 + 128), WB_ERR_INVALID);
        ck_assert_ptr_nonnull(strstr(wb_last_error(), "--split-k 2 needs K a multiple of"));
    }
    /* g = 128 at K = 384: halves of 192 hold no whole group */
    wb_format f = fmt("a=f16,w=int4,ws=f16,g=128");
    wb_config c = {.split_k = 2, .load = WB_LOAD_CP_ASYNC, .m_tiles = 8, .warps_n = 4};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 256, 4096, 384, &c), WB_OK);
    ck_assert_int_eq(wb_kernel_check_shape(&f, &c, 256, 4096, 384), WB_ERR_INVALID);
    const struct { const char *spec; wb_config c; const char *why; } bad[] = {
        {"w4a16", {.split_k = 2, .load = WB_LOAD_TMA, .mma = WB_MMA_WGMMA, .persistent = 1}, "without --persistent"},
        {"w4a16", {.split_k = 2, .load = WB_LOAD_TMA, .mma = WB_MMA_WGMMA, .cluster = 2}, "--cluster 2"},
        {"fp8-block", {.split_k = 2, .mma = WB_MMA_WGMMA}, "groups along K"},
        {"nvfp4", {.split_k = 2, .mma = WB_MMA_WGMMA}, "fp4 activations"},
        {"w4a16", {.split_k = 3, .mma = WB_MMA_WGMMA}, "must be 1 or 2"},
        {"w4a16", {.split_k = 2, .load = WB_LOAD_TMA, .mma = WB_MMA_WGMMA, .m_tiles = 32, .warps_n = 8, .stages = 3},
         "over the stages"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *ptx = NULL;
        ck_assert_int_eq(ptx_for(bad[i].spec, WB_ARCH_SM90A, bad[i].c, &ptx), WB_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(wb_last_error(), bad[i].why), "%s: %s", bad[i].why, wb_last_error());
    }
    /* no clusters before sm_90; tcgen05 has no pairs of its own */
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM89, (wb_config){.split_k = 2}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "thread block cluster, which sm_89 does not have"));
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM100A, (wb_config){.split_k = 2, .mma = WB_MMA_TCGEN05}, &ptx),
                     WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "built for the wgmma and mma.sync kernels"));
}
END_TEST

/* --split-k 2 on mma.sync (sm_90 and newer, forced): at decode the blocks count twice where the
 * heuristic fits its split and stages, each takes half of K (whole stages: warps_k and k_slices from
 * that half), the grid doubles, the pair meets around the second's store of its reduced sums (three
 * cluster waits), and K that does not halve into whole stages is refused. */
START_TEST(split_k_mma_sync)
{
    const wb_arch arches[] = {WB_ARCH_SM90A, WB_ARCH_SM100A, WB_ARCH_SM120A};
    for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++) {
        wb_format f = fmt("w4a16");
        wb_config c = {.split_k = 2, .mma = WB_MMA_SYNC}, plain = {.mma = WB_MMA_SYNC, .warps_n = 2};
        ck_assert_int_eq(wb_config_choose(&f, arches[i], 16, 4096, 14336, &c), WB_OK);
        ck_assert_int_eq(wb_config_choose(&f, arches[i], 16, 4096, 14336, &plain), WB_OK);
        ck_assert_int_eq(c.mma, WB_MMA_SYNC);
        ck_assert_int_eq(c.m_tiles, 2);
        ck_assert_int_eq(14336 / 2 % (64 * c.warps_k * wb_config_ks(&c)), 0);
        wb_launch_dims d, dp;
        ck_assert_int_eq(wb_kernel_dims(&f, arches[i], &c, 16, 4096, 14336, &d), WB_OK);
        ck_assert_int_eq(wb_kernel_dims(&f, arches[i], &plain, 16, 4096, 14336, &dp), WB_OK);
        ck_assert_uint_eq(d.grid[0] * 16u * (unsigned)c.warps_n, 2u * 4096u);
        char *ptx = NULL;
        ck_assert_msg(wb_kernel_ptx(&f, arches[i], &c, 0, &ptx) == WB_OK, "%s", wb_last_error());
        ck_assert_ptr_nonnull(strstr(ptx, ".reqnctapercluster 2, 1, 1\n"));
        ck_assert_int_eq(count_of(ptx, "barrier.cluster.wait"), 3);
        ck_assert_int_eq(count_of(ptx, "st.shared::cluster."), c.m_tiles * 4);
        free(ptx);
        /* K one stage more (an odd count of stages): its halves are not whole stages */
        ck_assert_int_eq(wb_kernel_check_shape(&f, &c, 16, 4096, 14336 + 64 * c.warps_k * wb_config_ks(&c)),
                         WB_ERR_INVALID);
        ck_assert_ptr_nonnull(strstr(wb_last_error(), "--split-k 2 needs K a multiple of"));
    }
}
END_TEST

/* --load tma (lower_tma.c): a producer warpgroup after the consumers, one lane of it copying each stage
 * (one TMA copy of the activation tile, one bulk copy of each warp slice's code words and, with scale
 * records, of its records) under the stage's full mbarrier; the consumers wait for full, release each
 * stage with one arrival on its empty mbarrier after their group's wait, make no copies and meet at no
 * block barrier after the setup. Two consumer warpgroups take the producer's registers (setmaxnreg);
 * one does not need them. 16-bit and 8-bit activations alike; fp4 activations, split K and mma.sync
 * refused. */
START_TEST(tma_warp_specialized)
{
    static const char *const specs[] = {"w4a16", "w4a16-zp", "fp8", "int8", "a=e4m3,w=int4,ws=f32,g=0", "w4a8-int8"};
    static const int64_t ms[] = {100, 4096};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        for (size_t j = 0; j < 2; j++) {
            wb_format f = fmt(specs[i]);
            wb_config c = {.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .cluster = 1};
            ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, ms[j], 8192, 8192, &c), WB_OK);
            char *ptx = NULL;
            ck_assert_msg(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, 0, &ptx) == WB_OK, "%s: %s", specs[i], wb_last_error());
            int consumers = 32 * c.warps_n, records = !wb_format_w8a8(&f);
            char ntid[32];
            snprintf(ntid, sizeof ntid, ".maxntid %d, 1, 1", consumers + 128);
            ck_assert_ptr_nonnull(strstr(ptx, ntid));
            ck_assert_int_eq(count_of(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile"), 1);
            ck_assert_int_eq(count_of(ptx, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"),
                             c.warps_n * (1 + records)); /* one lane issues them all, a warp slice each */
            ck_assert_int_eq(count_of(ptx, "elect.sync"), 1);
            ck_assert_int_eq(count_of(ptx, "mbarrier.arrive.expect_tx"), 1);
            /* a stage released once a half: W8A8 with A registers unrolls the loop by two for them; 16-bit
             * activations and fp8 (weights by descriptor) unroll it to wait for each group a tile late,
             * with two tails; fp8 sums per channel with A registers (e4m3 x int4) wait for the first
             * half's group in the second half (wait_group 1), whose group adds onto the same product,
             * and K ending after the first half has a tail */
            int late = wb_w8_smem_operand(&f, WB_ARCH_SM90A) || !wb_format_w8a8(&f);
            int pair = !late && f.a.kind == WB_KIND_FLOAT && !f.g && !f.ag, releases = late ? 4 : pair ? 3 : 2;
            ck_assert_int_eq(count_of(ptx, "mbarrier.arrive.shared::cta.b64"), releases);
            ck_assert_int_eq(count_of(ptx, "wgmma.wait_group.sync.aligned 1;"), late ? 2 : pair);
            ck_assert_int_eq(count_of(ptx, "wgmma.wait_group.sync.aligned 0;"), 2);
            ck_assert_int_eq(count_of(ptx, "bar.sync 0;"), 1); /* after the mbarriers' init, none after */
            ck_assert_ptr_null(strstr(ptx, "cp.async.cg"));
            ck_assert_ptr_null(strstr(ptx, "cp.async.wait_group"));
            ck_assert_int_eq(count_of(ptx, "setmaxnreg.dec.sync.aligned.u32 40;"), consumers > 128);
            ck_assert_int_eq(count_of(ptx, "setmaxnreg.inc.sync.aligned.u32 232;"), consumers > 128);
            free(ptx);
        }
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("nvfp4", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA}, &ptx),
                     WB_ERR_UNSUPPORTED);
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .warps_k = 2},
                             &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "it needs warps_k 1 and k_slices 1"));
    ck_assert_int_eq(ptx_for("w4a16", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_SYNC, .load = WB_LOAD_TMA}, &ptx),
                     WB_ERR_UNSUPPORTED);
    ck_assert_ptr_null(ptx);
}
END_TEST

START_TEST(w8a8_per_architecture)
{
    static const wb_arch archs[] = {WB_ARCH_SM75, WB_ARCH_SM80, WB_ARCH_SM86, WB_ARCH_SM89, WB_ARCH_SM90A,
                                    WB_ARCH_SM100A, WB_ARCH_SM103A, WB_ARCH_SM120A};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        wb_format f = fmt(archs[i] == WB_ARCH_SM75 ? "int8,out=f16" : "int8");
        static const int64_t ms[] = {1, 16, 300};
        for (size_t j = 0; j < 3; j++) {
            wb_config c = {0};
            ck_assert_int_eq(wb_config_choose(&f, archs[i], ms[j], 4096, 4096, &c), WB_OK);
            if (archs[i] == WB_ARCH_SM90A && ms[j] > 64) { /* wgmma_s8 below */
                ck_assert_int_eq(c.mma, WB_MMA_WGMMA);
                continue;
            }
            ck_assert_int_eq(c.mma, WB_MMA_SYNC);
            char *ptx = NULL;
            ck_assert_msg(wb_kernel_ptx(&f, archs[i], &c, 0, &ptx) == WB_OK, "%s", wb_last_error());
            const char *mma = archs[i] == WB_ARCH_SM75 ? "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32"
                                                       : "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32";
            /* per m-tile and k64 slice: two m16n8k32, or eight m8n8k16 */
            ck_assert_int_eq(count_of(ptx, mma), c.m_tiles * (archs[i] == WB_ARCH_SM75 ? 8 : 2));
            ck_assert_ptr_null(strstr(ptx, ".f16.f16.f32"));
            ck_assert_ptr_null(strstr(ptx, ".bf16.bf16.f32"));
            ck_assert_ptr_null(strstr(ptx, "fma.rn"));     /* no dequant arithmetic */
            ck_assert_ptr_null(strstr(ptx, "lop3.b32"));  /* no code unpacking */
            ck_assert_ptr_null(strstr(ptx, "prmt.b32"));
            ck_assert_int_eq(count_of(ptx, "cvt.rn.f32.s32"), c.m_tiles * 4); /* once per sum, after K */
            ck_assert_ptr_nonnull(strstr(ptx, ".param .u64 p_ascale"));
            ck_assert_int_eq(count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), c.m_tiles);
            if (c.warps_k > 1) {
                ck_assert_ptr_nonnull(strstr(ptx, "st.shared.s32"));
                ck_assert_ptr_nonnull(strstr(ptx, "add.s32"));
                ck_assert_ptr_null(strstr(ptx, "st.shared.f32"));
                ck_assert_ptr_null(strstr(ptx, "add.rn.f32"));
            }
            free(ptx);
        }
    }
    /* the annotated PTX names the path: on sm_103a the legacy mma.sync, since its tcgen05 has no kind::i8 */
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        wb_format f = fmt(archs[i] == WB_ARCH_SM75 ? "int8,out=f16" : "int8");
        wb_config c = full_config(&f, archs[i], 16);
        char *ptx = NULL;
        ck_assert_int_eq(wb_kernel_ptx(&f, archs[i], &c, WB_EMIT_ANNOTATE, &ptx), WB_OK);
        ck_assert_ptr_nonnull(strstr(ptx, "mma rule: s8 x s8 -> s32, "));
        ck_assert_msg(!!strstr(ptx, "tcgen05 has no kind::i8") == (archs[i] == WB_ARCH_SM103A), "%s",
                      wb_arch_name(archs[i]));
        ck_assert_ptr_null(strstr(ptx, "\n    tcgen05")); /* no tcgen05 instruction */
        free(ptx);
    }
    /* exact s32 sums: K below 2^17 */
    wb_format f8 = fmt("int8");
    wb_config c8 = full_config(&f8, WB_ARCH_SM80, 1);
    ck_assert_int_eq(wb_kernel_check_shape(&f8, &c8, 1, 4096, 131072), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "needs K below 131072"));
    ck_assert_int_eq(wb_kernel_check_shape(&f8, &c8, 1, 4096, 131072 - 1024), WB_OK);
    /* the other kernels keep their parameter list */
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("w8a16", WB_ARCH_SM80, (wb_config){0}, &ptx), WB_OK);
    ck_assert_ptr_null(strstr(ptx, "p_ascale"));
    free(ptx);
}
END_TEST

/* fp8 W8A8 (every pair of e4m3/e5m2, f16 and bf16 output, a bias): built on sm_89 and sm_120a, where
 * mma.sync m16n8k32 e4m3/e5m2 is one QMMA, with the weight type first (A is the weights), f32 sums
 * (no cvt from s32; split K reduced in f32) and PTX 8.4 or newer; refused where ptxas only emulates it
 * (sm_90a, sm_100a, sm_103a: the message names the native instruction) or has none (sm_75..sm_86). */
/* fp8 W8A8 on sm_90a: wgmma m64nNk32 with the weight type first, at every M (its mma.sync fp8 is only
 * emulated: refused even when forced), each k128 slice's product summed from zero (scale-d false on
 * its first step) and added to the f32 sums after the group completes; at most 128 tokens a tile. */
/* W4A4 (s4 x int4): the native s4 MMA where the table says native (m16n8k64 on sm_80..sm_89, m8n8k32
 * on sm_75), never where ptxas emulates it (sm_90a and later: s8 with both operands widened); always
 * mma.sync; s4 with other weights, and wgmma, refused with the reason. */
START_TEST(w4a4_per_architecture)
{
    static const wb_arch archs[] = {WB_ARCH_SM75, WB_ARCH_SM80, WB_ARCH_SM86, WB_ARCH_SM89, WB_ARCH_SM90A,
                                    WB_ARCH_SM100A, WB_ARCH_SM103A, WB_ARCH_SM120A};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        wb_format f = fmt(archs[i] == WB_ARCH_SM75 ? "w4a4-int4,out=f16" : "w4a4-int4");
        static const int64_t ms[] = {1, 16, 300};
        for (size_t j = 0; j < 3; j++) {
            wb_config c = {0};
            ck_assert_int_eq(wb_config_choose(&f, archs[i], ms[j], 4096, 4096, &c), WB_OK);
            ck_assert_int_eq(c.mma, WB_MMA_SYNC);
            char *ptx = NULL;
            ck_assert_msg(wb_kernel_ptx(&f, archs[i], &c, 0, &ptx) == WB_OK, "%s", wb_last_error());
            int k64 = wb_isa_get(archs[i], WB_ISA_MMA_S4) == WB_ISA_NATIVE;
            int k32 = wb_isa_get(archs[i], WB_ISA_MMA_S4_K32) == WB_ISA_NATIVE;
            ck_assert_int_eq(k64, archs[i] >= WB_ARCH_SM80 && archs[i] <= WB_ARCH_SM89);
            /* per m-tile and k64 slice: one m16n8k64, four m8n8k32, or two widened m16n8k32 s8 */
            ck_assert_int_eq(count_of(ptx, "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32"), k64 ? c.m_tiles : 0);
            ck_assert_int_eq(count_of(ptx, "mma.sync.aligned.m8n8k32.row.col.s32.s4.s4.s32"),
                             !k64 && k32 ? 4 * c.m_tiles : 0);
            ck_assert_int_eq(count_of(ptx, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
                             !k64 && !k32 ? 2 * c.m_tiles : 0);
            ck_assert_int_eq(!k64 && !k32, strstr(ptx, "0x78787878") != NULL); /* the widening */
            ck_assert_ptr_null(strstr(ptx, "wgmma"));
            ck_assert_int_eq(count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), c.m_tiles / 2);
            ck_assert_int_eq(count_of(ptx, "ldmatrix.sync.aligned.m8n8.x2.shared.b16"), c.m_tiles % 2);
            free(ptx);
        }
    }
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("w4a4-int4", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_WGMMA}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "W4A4 (a=s4, w=int4) runs on mma.sync"));
    ck_assert_int_eq(ptx_for("a=s4,w=int8,ws=f32,g=0", WB_ARCH_SM80, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=s4 with w=int8 is not supported by this build yet"));
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "its native instruction on sm_80 is mma.sync m16n8k64 s4"));
    ck_assert_int_eq(ptx_for("w4a4-int4,ag=64", WB_ARCH_SM80, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=s4 is supported with f32 scales per token (ag=0)"));
}
END_TEST

/* tcgen05 on fp4 x fp4 (--mma tcgen05, sm_100a and sm_103a): NVFP4 x NVFP4 on kind::mxf4nvf4
 * .scale_vec::4X (ue4m3 scale type, PTX 8.7 on sm_100a), MXFP4 x MXFP4 on kind::mxf4 .scale_vec::2X
 * (ue8m0); one MMA per k64 tile after the scale factors' tcgen05.cp (SFA, one SFB chunk per 128 tokens);
 * no 16-bit tile. Other e2m1-activation formats stay on kind::f16 and the annotation says why; the
 * default (mma.sync) kernel does not change. */
START_TEST(tcgen05_block_scaled_kinds)
{
    static const wb_arch archs[] = {WB_ARCH_SM100A, WB_ARCH_SM103A};
    for (size_t i = 0; i < 2; i++)
        for (int nv = 0; nv < 2; nv++)
            for (int mt = 2; mt <= 32; mt *= 4) {
                const char *spec = nv ? "nvfp4" : "a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32";
                wb_format f = fmt(spec);
                ck_assert_int_eq(wb_isa_tc_block_scale_vec(&f, archs[i]), nv ? 4 : 2);
                ck_assert_int_eq(wb_isa_block_scale_vec(&f, archs[i]), 0); /* packing: the 16-bit layout */
                char *ptx = NULL;
                wb_config c = {.mma = WB_MMA_TCGEN05, .m_tiles = mt};
                ck_assert_int_eq(wb_config_choose(&f, archs[i], 16, 4096, 4096, &c), WB_OK);
                ck_assert_msg(wb_kernel_ptx(&f, archs[i], &c, WB_EMIT_ANNOTATE, &ptx) == WB_OK, "%s", wb_last_error());
                const char *mma = nv ? "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X ["
                                     : "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::2X [";
                ck_assert_int_eq(count_of(ptx, mma), 1);
                ck_assert_int_eq(count_of(ptx, "tcgen05.mma.cta_group"), 1);
                ck_assert_int_eq(count_of(ptx, "tcgen05.cp.cta_group::1.32x128b.warpx4 ["), mt == 32 ? 3 : 2);
                ck_assert_ptr_null(strstr(ptx, "kind::f16"));
                ck_assert_ptr_null(strstr(ptx, "dequant rule (activations)"));
                ck_assert_ptr_nonnull(strstr(ptx, nv ? "ue4m3 block scales per 16 applied by the MMA"
                                                     : "ue8m0 block scales per 32 applied by the MMA"));
                ck_assert_ptr_nonnull(strstr(ptx, nv && archs[i] == WB_ARCH_SM100A ? ".version 8.7\n"
                                                                                   : archs[i] == WB_ARCH_SM100A
                                                                                       ? ".version 8.6\n"
                                                                                       : ".version 8.8\n"));
                free(ptx);
            }
    /* e8m0 activation scales with e4m3 weight scales: not one scale type, so kind::f16 on the 16-bit tile */
    wb_format mixed = fmt("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e4m3,g=16");
    ck_assert_int_eq(wb_isa_tc_block_scale_vec(&mixed, WB_ARCH_SM100A), 0);
    char *ptx = NULL;
    wb_config c = {.mma = WB_MMA_TCGEN05};
    ck_assert_int_eq(wb_config_choose(&mixed, WB_ARCH_SM100A, 16, 4096, 4096, &c), WB_OK);
    ck_assert_int_eq(wb_kernel_ptx(&mixed, WB_ARCH_SM100A, &c, WB_EMIT_ANNOTATE, &ptx), WB_OK);
    ck_assert_ptr_nonnull(strstr(ptx, "tcgen05.mma.cta_group::1.kind::f16 ["));
    ck_assert_ptr_nonnull(strstr(ptx, "takes NVFP4 x NVFP4 and MXFP4 x MXFP4 only"));
    free(ptx);
    /* no tcgen05 elsewhere; sm_120a keeps its block-scaled mma.sync */
    ck_assert_int_eq(wb_isa_tc_block_scale_vec(&mixed, WB_ARCH_SM120A), 0);
    wb_format nvf = fmt("nvfp4");
    ck_assert_int_eq(wb_isa_tc_block_scale_vec(&nvf, WB_ARCH_SM120A), 0);
    ck_assert_int_eq(wb_isa_tc_block_scale_vec(&nvf, WB_ARCH_SM90A), 0);
    ck_assert_int_eq(ptx_for("nvfp4", WB_ARCH_SM120A, (wb_config){.mma = WB_MMA_TCGEN05}, &ptx), WB_ERR_UNSUPPORTED);
}
END_TEST

/* fp4 activations (a=e2m1): the 16-bit mma.sync kernel at every M and on every target that has the
 * compute type (f16 with e4m3 scales, down to sm_75's m16n8k8; bf16 with e8m0 ones, sm_80 up), the
 * activation codes dequantized in registers after one ldmatrix per two m-tiles; the tensor scales
 * read once in the epilogue; refusals name the reason. */
START_TEST(fp4_acts_per_architecture)
{
    static const char *const specs[] = {"nvfp4", "a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,out=f16"};
    for (int a = 0; a < WB_ARCH_COUNT; a++)
        for (size_t sp = 0; sp < 2; sp++) {
            int bf = sp == 1;
            wb_format f = fmt(a == WB_ARCH_SM75 ? "nvfp4,out=f16" : specs[sp]);
            if (a == WB_ARCH_SM75 && bf) {
                char *ptx = NULL;
                ck_assert_int_eq(ptx_for(specs[sp], (wb_arch)a, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
                ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=e2m1 multiplies in bf16 with e8m0"));
                continue;
            }
            static const int64_t ms[] = {1, 16, 300, 4096};
            for (size_t j = 0; j < 4; j++) {
                wb_config c = {0};
                ck_assert_int_eq(wb_config_choose(&f, (wb_arch)a, ms[j], 4096, 4096, &c), WB_OK);
                /* wgmma above M = 64 on sm_90a, on the 16-bit tile; mma.sync elsewhere */
                int wg = a == WB_ARCH_SM90A && ms[j] > 64;
                ck_assert_int_eq(c.mma, wg ? WB_MMA_WGMMA : WB_MMA_SYNC);
                char *ptx = NULL;
                ck_assert_msg(wb_kernel_ptx(&f, (wb_arch)a, &c, WB_EMIT_ANNOTATE, &ptx) == WB_OK, "%s",
                              wb_last_error());
                if (a == WB_ARCH_SM120A) { /* the block-scaled MMA: no dequant, one MMA per m-tile and k64 */
                    const char *mma = bf ? "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X"
                                           ".f32.e2m1.e2m1.f32.ue8m0 {"
                                         : "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale"
                                           ".scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3 {";
                    ck_assert_int_eq(count_of(ptx, mma), c.m_tiles);
                    ck_assert_int_eq(count_of(ptx, "mma.sync.aligned"), c.m_tiles);
                    ck_assert_int_eq(count_of(ptx, "{0, 0};"), c.m_tiles); /* both selectors {0, 0} */
                    ck_assert_ptr_null(strstr(ptx, "dequant rule"));
                    ck_assert_ptr_nonnull(strstr(ptx, "applied by the MMA"));
                    /* e4m3: each m-tile's two B registers take their blocks' signs (prmt + lop3) */
                    ck_assert_int_eq(count_of(ptx, "prmt.b32"), bf ? 0 : 2 * c.m_tiles);
                    ck_assert_int_eq(strstr(ptx, "p_aglobal") != NULL, f.ags);
                    free(ptx);
                    continue;
                }
                ck_assert_ptr_nonnull(strstr(ptx, "dequant rule (activations): e2m1 -> "));
                ck_assert_int_eq(strstr(ptx, "p_aglobal") != NULL, f.ags);
                if (wg) { /* each landed tile converted, fenced for the async proxy, then read by wgmma */
                    ck_assert_int_ge(count_of(ptx, "wgmma.mma_async"), 4);
                    ck_assert_int_ge(count_of(ptx, "fence.proxy.async.shared::cta"), 3);
                    ck_assert_int_eq(count_of(ptx, "mma.sync.aligned"), 0);
                    free(ptx);
                    continue;
                }
                const char *t = bf ? "bf16" : "f16";
                char mma[96];
                snprintf(mma, sizeof mma, "mma.sync.aligned.m16n8k%d.row.col.f32.%s.%s.f32", a == WB_ARCH_SM75 ? 8 : 16,
                         t, t);
                ck_assert_int_eq(count_of(ptx, mma), 4 * c.m_tiles * (a == WB_ARCH_SM75 ? 2 : 1));
                ck_assert_int_eq(count_of(ptx, "mma.sync.aligned"), count_of(ptx, mma));
                /* the 16-bit tile the block made of them: the 16-bit kernel's fragments */
                ck_assert_int_eq(count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 2 * c.m_tiles);
                ck_assert_int_eq(count_of(ptx, "ldmatrix.sync.aligned.m8n8.x2.shared.b16"), 0);
                ck_assert_ptr_null(strstr(ptx, "wgmma"));
                ck_assert_ptr_nonnull(strstr(ptx, "dequant rule (activations): e2m1 -> "));
                ck_assert_int_ge(count_of(ptx, "st.shared.v4.u32"), 1);
                /* where tcgen05 has a block-scaled fp4 MMA, the annotation says it takes these formats there */
                ck_assert_int_eq(strstr(ptx, "kind::mxf4nvf4) runs this format with --mma tcgen05") != NULL,
                                 a == WB_ARCH_SM100A || a == WB_ARCH_SM103A);
                /* a word of 8 codes: 4 pairs, each a prmt and two multiplies */
                char fma[32];
                snprintf(fma, sizeof fma, "fma.rn.%sx2", t);
                ck_assert_int_ge(count_of(ptx, fma), 8);
                ck_assert_int_eq(strstr(ptx, "p_aglobal") != NULL, f.ags);
                free(ptx);
            }
        }
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("nvfp4", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA}, &ptx),
                     WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=e2m1 activations are loaded by cp.async"));
    ck_assert_int_eq(ptx_for("nvfp4", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_WGMMA}, &ptx), WB_OK);
    ck_assert_ptr_nonnull(strstr(ptx, "wgmma.mma_async.sync.aligned.m64n"));
    free(ptx);
    ptx = NULL;
    ck_assert_int_eq(ptx_for("nvfp4,as=f32", WB_ARCH_SM90A, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=e2m1 needs as=e4m3 (NVFP4) or as=e8m0"));
    ck_assert_int_eq(ptx_for("nvfp4,ag=48", WB_ARCH_SM90A, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a power of two from 16 up"));
    ck_assert_int_eq(ptx_for("nvfp4,ag=8", WB_ARCH_SM90A, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
}
END_TEST

/* On the TMA pipeline fp8 and e4m3 x int4 (from 128-token tiles) and W4A16 (from 256-token ones) take
 * 192-token tiles in persistent blocks where, in whole waves of one block an SM, an SM works through
 * at most 5% more token rows and they make one and a half waves (e4m3 x int4 in plain blocks); not
 * where a choice that changes the kernel around them was asked (--persistent does not, but for
 * e4m3 x int4), and not for s8 activations (not measured). */
START_TEST(fp8_wide_tiles)
{
    static const struct { const char *spec; int64_t m, n; wb_config asked; int mt; } cases[] = {
        {"fp8", 16384, 8192, {0}, 24},
        {"fp8", 4096, 8192, {0}, 24},
        {"fp8", 2048, 8192, {0}, 16},  /* 6 waves of 192 rows against 8 of 128: 12.5% more */
        {"fp8", 2048, 28672, {0}, 24}, /* 19 of 192 against 28 of 128: 1.8% more */
        {"fp8", 4096, 4096, {0}, 16},
        {"fp8", 16384, 28672, {0}, 24},
        {"fp8", 1024, 8192, {0}, 16},
        {"fp8", 256, 8192, {0}, 16},
        {"fp8", 16384, 8192, {.persistent = 1}, 24},
        {"fp8", 16384, 8192, {.cluster = 1}, 16},
        {"fp8", 16384, 8192, {.cluster = 2}, 16},
        {"fp8", 16384, 8192, {.load = WB_LOAD_CP_ASYNC}, 16},
        {"fp8", 16384, 8192, {.m_tiles = 8}, 8},
        {"a=e4m3,w=int4,ws=f32,g=0", 16384, 8192, {0}, 24},
        {"a=e4m3,w=int4,ws=f32,g=0", 1024, 8192, {0}, 16},
        {"a=e4m3,w=int4,ws=f32,g=0", 16384, 8192, {.persistent = 1}, 16},
        {"w4a16", 16384, 8192, {0}, 24},
        {"w4a16", 2048, 28672, {0}, 24},
        {"w4a16", 4096, 8192, {0}, 24}, /* 11 waves of 192 rows against 8 of 256: 3% more */
        {"w4a16", 4096, 4096, {0}, 32}, /* 6 waves of 192 rows against 4 of 256: 12.5% more */
        {"w4a16", 1024, 8192, {0}, 32},
        {"a=s8,w=int4,ws=f32,g=0", 16384, 8192, {0}, 32},
        {"int8", 16384, 8192, {0}, 32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_format f = fmt(cases[i].spec);
        wb_config c = cases[i].asked;
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, cases[i].m, cases[i].n, 8192, &c), WB_OK);
        ck_assert_msg(c.m_tiles == cases[i].mt, "case %zu: m_tiles %d", i, c.m_tiles);
        /* in persistent blocks, but e4m3 x int4 (even there; its A registers leave a bias no room) */
        int persistent = c.m_tiles == 24 ? !strstr(cases[i].spec, "w=int4") : cases[i].asked.persistent;
        ck_assert_int_eq(c.persistent, persistent);
    }
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("fp8", WB_ARCH_SM90A, (wb_config){.m_tiles = 24, .load = WB_LOAD_CP_ASYNC}, &ptx),
                     WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "or 24 on the TMA pipeline"));
    ck_assert_int_eq(ptx_for("a=e4m3,w=int4,ws=f32,g=128", WB_ARCH_SM90A, (wb_config){.m_tiles = 24}, &ptx),
                     WB_ERR_UNSUPPORTED); /* groups: their factors are registers too */
    ck_assert_int_eq(ptx_for("a=e4m3,w=int4,ws=f32,g=0", WB_ARCH_SM90A,
                             (wb_config){.m_tiles = 24, .load = WB_LOAD_TMA}, &ptx), WB_OK);
    free(ptx);
}
END_TEST

START_TEST(fp8_wgmma)
{
    static const char *const pairs[][2] = {{"e4m3", "e4m3"}, {"e4m3", "e5m2"}, {"e5m2", "e4m3"}, {"e5m2", "e5m2"}};
    static const int64_t ms[] = {1, 16, 100, 16384};
    for (size_t p = 0; p < 4; p++)
        for (size_t j = 0; j < 4; j++) {
            char spec[96], shape[96];
            snprintf(spec, sizeof spec, "a=%s,w=%s,ws=f32,g=0,out=%s,bias=%d", pairs[p][0], pairs[p][1],
                     j & 1 ? "f16" : "bf16", (int)(j & 1));
            wb_format f = fmt(spec);
            wb_config c = {0};
            ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, ms[j], 8192, 8192, &c), WB_OK);
            ck_assert_int_eq(c.mma, WB_MMA_WGMMA);
            /* 192-token tiles at M = 16384 (TMA, one slice product set), at most 128 below */
            if (ms[j] == 16384)
                ck_assert_int_eq(c.m_tiles, 24);
            else
                ck_assert_int_le(c.m_tiles, 16);
            char *ptx = NULL;
            ck_assert_msg(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, WB_EMIT_ANNOTATE, &ptx) == WB_OK, "%s", wb_last_error());
            snprintf(shape, sizeof shape, "wgmma.mma_async.sync.aligned.m64n%dk32.f32.%s.%s {", 8 * c.m_tiles,
                     pairs[p][1], pairs[p][0]);
            /* one k128 slice: four k32 steps; on the TMA pipeline at up to 128 tokens the slice products
             * have two register sets, the loop two halves, each waiting for the other's group
             * (wait_group 1), and two tails; 192-token tiles wait within the iteration */
            int sp = c.load == WB_LOAD_TMA && c.m_tiles <= 16;
            ck_assert_int_eq(count_of(ptx, shape), sp ? 8 : 4);
            ck_assert_int_eq(count_of(ptx, "wgmma.mma_async"), sp ? 8 : 4);
            ck_assert_int_eq(count_of(ptx, "wgmma.wait_group.sync.aligned 1;"), sp ? 2 : 0);
            ck_assert_int_eq(count_of(ptx, "wgmma.wait_group.sync.aligned 0;"), sp ? 2 : 1);
            ck_assert_ptr_nonnull(strstr(ptx, "mma rule: w="));
            /* both operands by descriptor: the weight tile is never loaded into registers */
            ck_assert_ptr_nonnull(strstr(ptx, "A: the weight tile in shared memory"));
            char *loop = before_epilogue(ptx);
            ck_assert_ptr_null(strstr(loop, "ld.shared.v4"));
            free(loop);
            ck_assert_ptr_null(strstr(ptx, "mma.sync"));
            ck_assert_ptr_null(strstr(ptx, "s32"));
            ck_assert_ptr_nonnull(strstr(ptx, "setp.eq.u32")); /* the false scale-d */
            /* the promotion: one f32 add per sum after the slice's wait (sp: after each tail's; the
             * epilogue adds the split K's partial sums, and a bias) */
            const char *wait = strstr(ptx, "wgmma.wait_group.sync.aligned 0;");
            ck_assert_ptr_nonnull(wait);
            ck_assert_int_eq(count_of(wait, "add.rn.f32"), c.m_tiles * 4 * (c.warps_k + (int)(j & 1) + sp));
            ck_assert_int_eq(count_of(ptx, "add.rn.f32"), c.m_tiles * 4 * (c.warps_k + (int)(j & 1) + 3 * sp));
            ck_assert_int_eq(c.warps_k, ms[j] <= 16 ? 4 : 1); /* decode: warpgroups split K */
            free(ptx);
        }
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("fp8", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_SYNC}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "mma.sync m16n8k32 e4m3/e5m2 is only emulated on sm_90a"));
    ck_assert_int_eq(ptx_for("fp8", WB_ARCH_SM90A, (wb_config){.m_tiles = 32}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "fp8 on wgmma needs m_tiles 16 or fewer"));
    ck_assert_int_eq(ptx_for("fp8", WB_ARCH_SM90A, (wb_config){.load = WB_LOAD_TMA}, &ptx), WB_OK);
    ck_assert_ptr_nonnull(strstr(ptx, "cp.async.bulk.tensor.2d"));
    free(ptx);
}
END_TEST

/* W4A8 with fp8 activations and int4 weights on sm_90a: at decode (M <= 16) mma.sync with both operands
 * widened to f16 (the fp8 mma.sync is only emulated there), four f16 m16n8k16 MMAs a slice and m-tile,
 * each 8-bit activation register converted in two halves; above M = 16 the fp8 wgmma kernel. e2m1
 * weights stay on wgmma (forced mma.sync refused), and no other target takes this kernel. */
START_TEST(w4a8_fp8_decode_on_f16)
{
    static const char *const specs[] = {"w4a8-fp8", "a=e5m2,w=int4,ws=f32,g=0,out=f16,bias=1"};
    static const int64_t ms[] = {1, 5, 16, 17, 64};
    for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) {
            wb_format f = fmt(specs[i]);
            wb_config c = {0};
            ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, ms[j], 8192, 8192, &c), WB_OK);
            ck_assert_int_eq(c.mma, ms[j] <= 16 ? WB_MMA_SYNC : WB_MMA_WGMMA);
            char *ptx = NULL;
            ck_assert_msg(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, WB_EMIT_ANNOTATE, &ptx) == WB_OK, "%s", wb_last_error());
            if (ms[j] > 16) {
                ck_assert_ptr_null(strstr(ptx, "mma.sync.aligned"));
                free(ptx);
                continue;
            }
            ck_assert_int_eq(count_of(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), 4 * c.m_tiles);
            ck_assert_int_eq(count_of(ptx, "mma.sync.aligned"), 4 * c.m_tiles);
            ck_assert_int_eq(count_of(ptx, i ? "cvt.rn.f16x2.e5m2x2" : "cvt.rn.f16x2.e4m3x2"), 8 * c.m_tiles);
            ck_assert_int_eq(count_of(ptx, "lop3.b32"), 16); /* 4 words: two pairs of two nibbles each */
            ck_assert_ptr_null(strstr(ptx, "wgmma."));
            ck_assert_ptr_null(strstr(ptx, "0x90909090")); /* no int4 -> e4m3 widening */
            ck_assert_ptr_nonnull(strstr(ptx, "mma rule: w=int4 x a="));
            ck_assert_ptr_nonnull(strstr(ptx, "both widened to f16 exactly"));
            free(ptx);
        }
    /* the decode configs (lower/config.c tune_w4a8_f16): per channel at one m-tile (and at two in
     * blocks under 16 warps or grids of at most a block an SM), where the grid fills its waves, the
     * fewest stages that keep a block beyond the SM's share out (8192 x 8192 at M = 1: 256 blocks of
     * 16 warps, two an SM: 7 stages of 12 KB; 28672 x 4096 at M = 16: 896 blocks of 4 warps, 7 an SM;
     * 4096 x 14336 at M = 16: 128 blocks of 16 warps, 8 stages); else, and with group scales,
     * 3 stages; two warps along N, K split up to 32 warps an SM at two m-tiles; there, with group
     * scales, two slices a warp and half the warps where the split leaves an SM under 30 warps (not on
     * 8192 x 8192: 31) */
    static const struct {
        const char *spec;
        int64_t m, n, k;
        int wn, wk, stages, ks;
    } picks[] = {
        {"a=e4m3,w=int4,ws=f32,g=0", 1, 8192, 8192, 2, 8, 7, 1},  {"w4a8-fp8", 1, 8192, 8192, 2, 8, 3, 1},
        {"a=e4m3,w=int4,ws=f32,g=0", 16, 8192, 8192, 2, 8, 3, 1}, {"w4a8-fp8", 16, 28672, 4096, 2, 1, 3, 2},
        {"a=e4m3,w=int4,ws=f32,g=0", 16, 4096, 14336, 2, 8, 8, 1}, {"w4a8-fp8", 16, 8192, 8192, 2, 8, 3, 1},
        {"a=e4m3,w=int4,ws=f32,g=0", 16, 28672, 4096, 2, 2, 7, 1},
        {"w4a8-fp8", 16, 4096, 14336, 2, 4, 3, 2}, {"a=e4m3,ag=128,w=int4,ws=f32,g=0", 16, 6144, 4096, 2, 4, 3, 2},
        /* 192 blocks on 132 SMs: a wave not filled, so no deepening; two warps along N at one m-tile
         * where the blocks of 32 channels give every SM one */
        {"a=e4m3,w=int4,ws=f32,g=0", 1, 6144, 4096, 2, 8, 3, 1},  {"w4a8-fp8", 1, 6144, 4096, 2, 8, 3, 1},
        {"a=e4m3,w=int4,ws=f32,g=0", 1, 4096, 14336, 1, 16, 5, 1},
    };
    for (size_t i = 0; i < sizeof picks / sizeof picks[0]; i++) {
        wb_format f = fmt(picks[i].spec);
        wb_config c = {0};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, picks[i].m, picks[i].n, picks[i].k, &c), WB_OK);
        ck_assert_msg(c.mma == WB_MMA_SYNC && c.warps_n == picks[i].wn && c.warps_k == picks[i].wk &&
                          c.stages == picks[i].stages && c.k_slices == picks[i].ks,
                      "%s M=%lld: wn=%d wk=%d stages=%d ks=%d", picks[i].spec, (long long)picks[i].m, c.warps_n,
                      c.warps_k, c.stages, c.k_slices);
        wb_config forced = {.stages = 4, .warps_k = 4};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, picks[i].m, picks[i].n, picks[i].k, &forced), WB_OK);
        ck_assert_int_eq(forced.stages, 4);
        ck_assert_int_eq(forced.warps_k, 4);
    }
    /* the same residency rule for s8 activations per channel at one m-tile (keep_extra_blocks_out): 7
     * stages on 8192 x 8192, where 4 left room for a third block of 16 warps; not with groups, not int8
     * (its 80 KB stages leave none), and not before sm_90 (no PDL at the top) */
    static const struct {
        const char *spec;
        wb_arch arch;
        int stages;
    } s8acts[] = {{"a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM90A, 7}, {"w4a8-int8", WB_ARCH_SM90A, 4},
                  {"int8", WB_ARCH_SM90A, 4}, {"a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM80, 4}};
    for (size_t i = 0; i < sizeof s8acts / sizeof s8acts[0]; i++) {
        wb_format g = fmt(s8acts[i].spec);
        wb_config c = {0};
        ck_assert_int_eq(wb_config_choose(&g, s8acts[i].arch, 1, 8192, 8192, &c), WB_OK);
        ck_assert_msg(c.mma == WB_MMA_SYNC && c.stages == s8acts[i].stages, "%s on %s: stages %d", s8acts[i].spec,
                      wb_arch_name(s8acts[i].arch), c.stages);
    }
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("a=e4m3,w=e2m1,ws=f32,g=0", WB_ARCH_SM90A, (wb_config){.mma = WB_MMA_SYNC}, &ptx),
                     WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "mma.sync m16n8k32 e4m3/e5m2 is only emulated on sm_90a"));
    wb_format f = fmt("w4a8-fp8");
    ck_assert(wb_w4a8_f16(&f, WB_ARCH_SM90A));
    ck_assert(!wb_w4a8_f16(&f, WB_ARCH_SM89) && !wb_w4a8_f16(&f, WB_ARCH_SM120A) && !wb_w4a8_f16(&f, WB_ARCH_SM100A));
    wb_format s8 = fmt("w4a8-int8");
    ck_assert(!wb_w4a8_f16(&s8, WB_ARCH_SM90A));
}
END_TEST

START_TEST(fp8_w8a8_per_architecture)
{
    static const char *const pairs[][2] = {{"e4m3", "e4m3"}, {"e4m3", "e5m2"}, {"e5m2", "e4m3"}, {"e5m2", "e5m2"}};
    static const wb_arch built[] = {WB_ARCH_SM89, WB_ARCH_SM120A};
    for (size_t p = 0; p < 4; p++)
        for (int out = 0; out < 2; out++)
            for (size_t i = 0; i < 2; i++) {
                char spec[96], mma[96];
                snprintf(spec, sizeof spec, "a=%s,w=%s,ws=f32,g=0,out=%s,bias=%d", pairs[p][0], pairs[p][1],
                         out ? "f16" : "bf16", out);
                snprintf(mma, sizeof mma, "mma.sync.aligned.m16n8k32.row.col.f32.%s.%s.f32 ", pairs[p][1], pairs[p][0]);
                wb_format f = fmt(spec);
                static const int64_t ms[] = {1, 16, 300};
                for (size_t j = 0; j < 3; j++) {
                    wb_config c = {0};
                    ck_assert_int_eq(wb_config_choose(&f, built[i], ms[j], 4096, 4096, &c), WB_OK);
                    ck_assert_int_eq(c.mma, WB_MMA_SYNC);
                    char *ptx = NULL;
                    ck_assert_msg(wb_kernel_ptx(&f, built[i], &c, 0, &ptx) == WB_OK, "%s: %s", spec, wb_last_error());
                    ck_assert_int_eq(count_of(ptx, mma), c.m_tiles * 2);
                    ck_assert_int_eq(count_of(ptx, "mma.sync.aligned"), c.m_tiles * 2);
                    ck_assert_ptr_null(strstr(ptx, "cvt.rn.f32.s32"));
                    ck_assert_ptr_null(strstr(ptx, "s32"));
                    ck_assert_ptr_null(strstr(ptx, "fma.rn"));
                    ck_assert_ptr_null(strstr(ptx, "cvt.rn.f16x2.e"));  /* no conversion of the codes */
                    ck_assert_ptr_nonnull(strstr(ptx, ".param .u64 p_ascale"));
                    ck_assert_int_eq(count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), c.m_tiles);
                    ck_assert_ptr_nonnull(strstr(ptx, built[i] == WB_ARCH_SM89 ? ".version 8.4" : ".version 8.7"));
                    if (c.warps_k > 1) {
                        ck_assert_ptr_nonnull(strstr(ptx, "st.shared.f32"));
                        ck_assert_ptr_nonnull(strstr(ptx, "add.rn.f32"));
                    }
                    free(ptx);
                }
            }
    /* the annotated PTX names the rule */
    for (size_t i = 0; i < 2; i++) {
        wb_format f = fmt("a=e5m2,w=e4m3,ws=f32,g=0");
        wb_config c = full_config(&f, built[i], 16);
        char *ptx = NULL, rule[160];
        ck_assert_int_eq(wb_kernel_ptx(&f, built[i], &c, WB_EMIT_ANNOTATE, &ptx), WB_OK);
        snprintf(rule, sizeof rule, "mma rule: w=e4m3 x a=e5m2 -> f32, mma.sync m16n8k32 e4m3.e5m2, native on %s",
                 wb_arch_name(built[i]));
        ck_assert_ptr_nonnull(strstr(ptx, rule));
        free(ptx);
    }
    /* other kernels on sm_89 keep its .version 7.8 */
    char *ptx = NULL;
    ck_assert_int_eq(ptx_for("int8", WB_ARCH_SM89, (wb_config){0}, &ptx), WB_OK);
    ck_assert_ptr_nonnull(strstr(ptx, ".version 7.8"));
    free(ptx);
    /* emulated: refused, naming the native instruction; absent: refused, naming where it runs */
    static const struct {
        wb_arch arch;
        const char *why;
    } refused[] = {
        {WB_ARCH_SM100A, "runs on sm_100a only with --mma tcgen05: tcgen05.mma kind::f8f6f4 (its native fp8 MMA) is "
                         "built but has not run on that GPU yet"},
        {WB_ARCH_SM103A, "runs on sm_103a only with --mma tcgen05: tcgen05.mma kind::f8f6f4 (its native fp8 MMA) is "
                         "built but has not run on that GPU yet"},
        {WB_ARCH_SM86, "sm_86 has no fp8 MMA: a=e4m3 with w=e4m3 needs mma.sync m16n8k32 e4m3/e5m2, native on sm_89 "
                       "and sm_120a"},
        {WB_ARCH_SM80, "sm_80 has no fp8 MMA"},
        {WB_ARCH_SM75, "sm_75 has no fp8 MMA"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ck_assert_int_eq(ptx_for("fp8", refused[i].arch, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(wb_last_error(), refused[i].why), "%s", wb_last_error());
        ck_assert_ptr_null(ptx);
    }
    ck_assert_int_eq(ptx_for("a=e5m2,w=e4m3,ws=f32,g=0", WB_ARCH_SM100A, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "a=e5m2 with w=e4m3 runs on sm_100a only with --mma tcgen05"));
    /* with --mma tcgen05: kind::f8f6f4 on both Blackwell targets (e5m2 activations: B type 1) */
    ck_assert_int_eq(ptx_for("a=e5m2,w=e4m3,ws=f32,g=0", WB_ARCH_SM103A, (wb_config){.mma = WB_MMA_TCGEN05}, &ptx),
                     WB_OK);
    ck_assert_ptr_nonnull(strstr(ptx, "tcgen05.mma.cta_group::1.kind::f8f6f4"));
    ck_assert_ptr_null(strstr(ptx, "mma.sync"));
    free(ptx);
    ptx = NULL;
    /* other fp8 formats: refused, naming what is built */
    static const struct {
        const char *spec, *why;
    } formats[] = {
        {"fp8-block,ag=64", "a=e4m3 is supported with f32 scales per token (ag=0) or per token and group of a "
                            "multiple of 128 along K (as=f32, ags=0) in this build (got ag=64)"},
        {"fp8,g=64", "a=e4m3 with w=e4m3 is supported with f32 weight scales per output channel (g=0) or per "
                     "block of gn channels x g along K, g a multiple of 128"},
        {"fp8,ws=bf16", "f32 weight scales per output channel (g=0) or per block"},
        {"fp8,as=e4m3", "a=e4m3 is supported with f32 scales per token (ag=0)"},
        {"fp8,acc=f16", "a=e4m3 needs acc=f32 and out=f16 or bf16 (got acc=f16, out=bf16)"},
        {"w4a8-fp8,wgs=1", "(ws=f32, wgs=0, zp=none)"},
        {"a=e4m3,w=int8,ws=f32,g=0", "a=e4m3 with w=int8 is not supported by this build yet"},
        {"a=e4m3,w=e3m4,ws=f32,g=0", "a=e4m3 with w=e3m4 is not supported by this build yet"},
    };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        ck_assert_int_eq(ptx_for(formats[i].spec, WB_ARCH_SM89, (wb_config){0}, &ptx), WB_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(wb_last_error(), formats[i].why), "%s: %s", formats[i].spec, wb_last_error());
    }
    ck_assert_int_eq(ptx_for("fp8", WB_ARCH_SM89, (wb_config){.mma = WB_MMA_WGMMA}, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "sm_89 has no wgmma"));
    /* f32 sums: no K limit */
    wb_format f8 = fmt("fp8");
    wb_config c8 = full_config(&f8, WB_ARCH_SM89, 1);
    ck_assert_int_eq(wb_kernel_check_shape(&f8, &c8, 1, 4096, 1 << 18), WB_OK);
}
END_TEST

START_TEST(annotated_ptx_names_ops_and_rules)
{
    wb_format f = fmt("w4a16,a=bf16");
    wb_config c = full_config(&f, WB_ARCH_SM90A, 1);
    char *ptx = NULL;
    ck_assert_int_eq(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, WB_EMIT_ANNOTATE, &ptx), WB_OK);
    ck_assert_ptr_nonnull(strstr(ptx, "// ir: %7 = dequant %4 %5"));
    ck_assert_ptr_nonnull(strstr(ptx, "dequant rule: 4-bit integer codes in 1 plane(s) gathered by lop3 into bf16 magic 0x4300"));
    ck_assert_ptr_nonnull(strstr(ptx, "fma.rn.bf16x2"));
    free(ptx);
    /* e2m1 into f16: the hardware conversion where the target has it, the bit moves elsewhere */
    f = fmt("a=f16,w=e2m1,ws=e8m0,g=32");
    for (int a = 0; a < WB_ARCH_COUNT; a++) {
        int hw = (wb_target_get((wb_arch)a)->features & WB_FEAT_CVT_FP4) != 0;
        char rule[128];
        snprintf(rule, sizeof rule, "dequant rule: e2m1 -> f16 by the hardware cvt.rn.f16x2.e2m1x2 (%s)",
                 wb_arch_name((wb_arch)a));
        c = full_config(&f, (wb_arch)a, 16);
        ck_assert_int_eq(wb_kernel_ptx(&f, (wb_arch)a, &c, WB_EMIT_ANNOTATE, &ptx), WB_OK);
        ck_assert_msg(!!strstr(ptx, rule) == hw, "%s: %s", wb_arch_name((wb_arch)a), rule);
        ck_assert(!!strstr(ptx, "cvt.rn.f16x2.e2m1x2 %r") == hw);
        ck_assert(!!strstr(ptx, "dequant rule: small float e2m1 -> f16") == !hw);
        free(ptx);
    }
    /* e4m3 and e5m2 into f16: the hardware fp8 conversion where the target has it; bf16 keeps the bit moves */
    const char *fp8[] = {"a=f16,w=e4m3,ws=f32,g=0", "a=f16,w=e5m2,ws=f16,g=64", "a=bf16,w=e4m3,ws=f32,g=0"};
    for (size_t i = 0; i < sizeof fp8 / sizeof fp8[0]; i++) {
        f = fmt(fp8[i]);
        const char *w = f.w.ebits == 4 ? "e4m3" : "e5m2";
        for (int a = 0; a < WB_ARCH_COUNT; a++) {
            if (f.a.kind == WB_KIND_BF16 && !(wb_target_get((wb_arch)a)->features & WB_FEAT_BF16))
                continue; /* sm_75: no bf16 */
            int hw = (wb_target_get((wb_arch)a)->features & WB_FEAT_CVT_FP8) != 0 && f.a.kind == WB_KIND_F16;
            char rule[128], cvt[64], bits[64];
            snprintf(rule, sizeof rule, "dequant rule: %s -> f16 by the hardware cvt.rn.f16x2.%sx2 (%s)", w, w,
                     wb_arch_name((wb_arch)a));
            snprintf(cvt, sizeof cvt, "cvt.rn.f16x2.%sx2 %%r", w);
            snprintf(bits, sizeof bits, "dequant rule: small float %s -> %s", w, f.a.kind == WB_KIND_F16 ? "f16" : "bf16");
            c = full_config(&f, (wb_arch)a, 16);
            ck_assert_int_eq(wb_kernel_ptx(&f, (wb_arch)a, &c, WB_EMIT_ANNOTATE, &ptx), WB_OK);
            ck_assert_msg(!!strstr(ptx, rule) == hw, "%s on %s: %s", fp8[i], wb_arch_name((wb_arch)a), rule);
            ck_assert(!!strstr(ptx, cvt) == hw);
            ck_assert(!!strstr(ptx, bits) == !hw);
            free(ptx);
        }
    }
}
END_TEST

START_TEST(config_choice_and_shape_rules)
{
    wb_format f = fmt("w4a16");
    for (int64_t m = 1; m <= 8192; m *= 2) {
        wb_config c = full_config(&f, WB_ARCH_SM90A, m);
        ck_assert_int_eq(wb_kernel_check_shape(&f, &c, m, 4096, 4096), WB_OK);
        char *ptx = NULL;
        ck_assert_int_eq(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, 0, &ptx), WB_OK);
        free(ptx);
        wb_launch_dims d;
        ck_assert_int_eq(wb_kernel_dims(&f, WB_ARCH_SM90A, &c, m, 4096, 4096, &d), WB_OK);
        if (c.persistent) { /* (192-token tiles from M = 2048; 128 x 128 ones in one wave, M = 512 here)
                               a block per SM at most, tiles walked */
            ck_assert((m >= 2048 || (m == 512 && c.m_tiles == 16)) && d.grid[0] <= 132 && d.grid[1] == 1);
            continue;
        }
        ck_assert_uint_eq(d.grid[0] * 16u * (unsigned)c.warps_n, 4096u * (c.split_k > 1 ? 2 : 1));
        ck_assert_uint_ge(d.grid[1] * 8u * (unsigned)c.m_tiles, (unsigned)m);
    }
    wb_config c = full_config(&f, WB_ARCH_SM90A, 1);
    ck_assert_int_eq(wb_kernel_check_shape(&f, &c, 1, 4100, 4096), WB_ERR_INVALID);
    ck_assert_int_eq(wb_kernel_check_shape(&f, &c, 1, 4096, 4160), WB_ERR_INVALID); /* not a multiple of g */
    wb_format pc = fmt("w4a16,g=0");
    wb_config c2 = {.warps_k = 4};
    ck_assert_int_eq(wb_config_choose(&pc, WB_ARCH_SM90A, 1, 4096, 4096, &c2), WB_OK);
    ck_assert_int_eq(wb_kernel_check_shape(&pc, &c2, 1, 4096, 4160), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "K a multiple of 256"));
    char buf[128];
    wb_config_print(&c, buf, sizeof buf);
    ck_assert_str_eq(buf, "mt=1,wn=1,wk=8,stages=4,load=cp.async,mma=mma.sync,ks=2");
    /* decode: K split among warp slices until about 24..36 per SM of the H200 (132 SMs), half the warps
     * taking two slices each */
    struct { int64_t n, k; int wn, wk; } dec[] = {{8192, 8192, 2, 8}, {28672, 4096, 2, 4}, {4096, 14336, 1, 16},
                                                   {6144, 4096, 1, 8}, {4096, 64 * 4 * 3, 1, 4}};
    for (size_t i = 0; i < sizeof dec / sizeof dec[0]; i++) {
        wb_config d = {0};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 1, dec[i].n, dec[i].k, &d), WB_OK);
        ck_assert_msg(d.warps_n == dec[i].wn && d.warps_k * 2 == dec[i].wk && d.k_slices == 2,
                      "%lld x %lld: wn=%d wk=%d ks=%d", (long long)dec[i].n, (long long)dec[i].k, d.warps_n,
                      d.warps_k, d.k_slices);
    }
    /* ... but never so many that the blocks stop fitting on the SMs at once (a second wave): 512
     * blocks of 8 warps at M = 16 would need 83 KB each, two per SM; int8 at M = 1 likewise */
    wb_config d16 = {0}, d8 = {0};
    wb_format i8 = fmt("a=f16,w=int8,g=128");
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 16, 8192, 8192, &d16), WB_OK);
    ck_assert_int_eq(d16.warps_k, 4);
    ck_assert_int_eq(d16.k_slices, 2); /* two m-tiles: the same warps, two slices each (config.c) */
    ck_assert_int_eq(d16.stages, 3);
    /* one m-tile, 256 blocks of two warps along N only where no third block fits an SM beside them:
     * int4 and int5 take two, int3 (smaller stages) one; int2 two, its four-slice kernel's registers
     * (94) hold an SM to two blocks */
    const char *wn_of[][2] = {{"w4a16", "2"}, {"a=f16,w=int5,g=128", "2"}, {"a=f16,w=int3,g=128", "1"},
                              {"a=f16,w=int2,g=128", "2"}};
    for (int i = 0; i < 4; i++) {
        wb_format g = fmt(wn_of[i][0]);
        wb_config d = {0};
        ck_assert_int_eq(wb_config_choose(&g, WB_ARCH_SM90A, 1, 8192, 8192, &d), WB_OK);
        ck_assert_msg(d.warps_n == atoi(wn_of[i][1]), "%s: wn=%d", wn_of[i][0], d.warps_n);
    }
    /* codes of 2 bits or fewer at one m-tile: four slices a warp, 3 stages (the H100 sweeps' best on
     * the two shapes of issue 3's bar), 4 for the gemv kernels (M = 1: signed codes without zero
     * points), whose fewer registers would let a third block in at 3; at M = 2 int2 is no gemv kernel;
     * 3-bit codes keep two slices; a forced warps_k keeps one */
    struct { const char *spec; int64_t m, n, k; int wn, wk, ks, st, gemv; } four[] = {
        {"a=f16,w=int2,g=128", 1, 8192, 8192, 2, 4, 4, 4, 1}, {"a=f16,w=int2,g=128", 1, 28672, 4096, 2, 2, 4, 4, 1},
        {"a=f16,w=int2,g=128", 2, 8192, 8192, 2, 4, 4, 3, 0}, {"a=f16,w=uint1,g=0", 1, 28672, 4096, 2, 2, 4, 3, 0},
        {"a=f16,w=int3,g=128", 1, 28672, 4096, 2, 2, 2, 3, 1}, {"a=f16,w=int3,g=128", 1, 8192, 8192, 1, 4, 2, 4, 1}};
    for (size_t i = 0; i < sizeof four / sizeof four[0]; i++) {
        wb_format g = fmt(four[i].spec);
        wb_config d = {0};
        ck_assert_int_eq(wb_config_choose(&g, WB_ARCH_SM90A, four[i].m, four[i].n, four[i].k, &d), WB_OK);
        ck_assert_msg(d.warps_n == four[i].wn && d.warps_k == four[i].wk && d.k_slices == four[i].ks &&
                      d.stages == four[i].st && d.gemv == four[i].gemv, "%s M=%lld %lld x %lld: wn=%d wk=%d ks=%d "
                      "stages=%d gemv=%d", four[i].spec, (long long)four[i].m, (long long)four[i].n,
                      (long long)four[i].k, d.warps_n, d.warps_k, d.k_slices, d.stages, d.gemv);
    }
    /* gemv: M = 1 only, and only where it changes the kernel (--gemv off keeps the kernel before it) */
    wb_format w4 = fmt("w4a16"), zp = fmt("a=f16,w=uint2,g=128,zp=int");
    wb_config on = {.gemv = 1}, off = {.gemv = -1}, none = {0};
    ck_assert_int_eq(wb_config_choose(&w4, WB_ARCH_SM90A, 1, 8192, 8192, &none), WB_OK);
    ck_assert_int_eq(none.gemv, 0);
    ck_assert_int_eq(wb_config_choose(&zp, WB_ARCH_SM90A, 1, 8192, 8192, &none), WB_OK);
    ck_assert_int_eq(none.gemv, 0);
    ck_assert_int_eq(wb_config_choose(&w4, WB_ARCH_SM90A, 1, 8192, 8192, &on), WB_OK);
    ck_assert_int_eq(wb_legalize(&w4, wb_target_get(WB_ARCH_SM90A), &on), WB_ERR_UNSUPPORTED);
    wb_format i2g = fmt("a=f16,w=int2,g=128");
    ck_assert_int_eq(wb_config_choose(&i2g, WB_ARCH_SM90A, 1, 8192, 8192, &off), WB_OK);
    ck_assert_int_eq(off.gemv, -1);
    ck_assert_int_eq(off.stages, 3);
    wb_config g1 = {0};
    ck_assert_int_eq(wb_config_choose(&i2g, WB_ARCH_SM90A, 1, 8192, 8192, &g1), WB_OK);
    ck_assert_int_eq(wb_kernel_check_shape(&i2g, &g1, 1, 8192, 8192), WB_OK);
    ck_assert_int_eq(wb_kernel_check_shape(&i2g, &g1, 2, 8192, 8192), WB_ERR_INVALID);
    wb_format i2 = fmt("a=f16,w=int2,g=128");
    wb_config fk = {.warps_k = 4};
    ck_assert_int_eq(wb_config_choose(&i2, WB_ARCH_SM90A, 1, 8192, 8192, &fk), WB_OK);
    ck_assert_int_eq(fk.k_slices, 1);
    /* two m-tiles: two warps along N from 256 blocks, at most 24 warps an SM (the split halved to 2
     * where 4 would pass it: 28672 x 4096), and not doubled past it; a split of 4 warps or more takes
     * two slices a warp where two blocks of it fit an SM (not 4096 x 14336's 8 warps without pairs,
     * split_k 1; with them, the default, two warps along N in pairs splitting K) */
    struct { int64_t n, k; int wn, wk, ks, split_k; } d2[] = {
        {8192, 8192, 2, 4, 2, 0}, {28672, 4096, 2, 2, 1, 0}, {4096, 14336, 1, 8, 1, 1}, {4096, 14336, 2, 4, 2, 0},
        {6144, 4096, 1, 4, 2, 0}};
    for (size_t i = 0; i < sizeof d2 / sizeof d2[0]; i++) {
        wb_config d = {.split_k = d2[i].split_k};
        ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 16, d2[i].n, d2[i].k, &d), WB_OK);
        ck_assert_msg(d.m_tiles == 2 && d.warps_n == d2[i].wn && d.warps_k == d2[i].wk && d.k_slices == d2[i].ks,
                      "M = 16, %lld x %lld: wn=%d wk=%d ks=%d", (long long)d2[i].n, (long long)d2[i].k, d.warps_n,
                      d.warps_k, d.k_slices);
    }
    ck_assert_int_eq(wb_config_choose(&i8, WB_ARCH_SM90A, 1, 8192, 8192, &d8), WB_OK);
    wb_launch_dims dd; /* int8: 256 blocks of 8 warps, two an SM by shared memory and threads */
    ck_assert_int_eq(wb_kernel_dims(&i8, WB_ARCH_SM90A, &d8, 1, 8192, 8192, &dd), WB_OK);
    ck_assert_int_eq(dd.grid[0] * dd.grid[1], 256);
    ck_assert_uint_le(2 * dd.smem_bytes, wb_target_get(WB_ARCH_SM90A)->smem_max);
    ck_assert_uint_le(2 * dd.block[0], 2048);
    /* k_slices stays 1 where it was not measured to pay or is not built: W8A8, fp4 activations,
     * batch-invariant */
    const char *one_slice[] = {"int8", "nvfp4", "w4a16"};
    for (int i = 0; i < 3; i++) {
        wb_format g = fmt(one_slice[i]);
        wb_config e = {.batch_invariant = i == 2};
        ck_assert_int_eq(wb_config_choose(&g, WB_ARCH_SM90A, 1, 8192, 8192, &e), WB_OK);
        ck_assert_msg(e.k_slices == 1, "%s: k_slices %d", one_slice[i], e.k_slices);
    }
    wb_config forced16 = {.k_slices = 1};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 16, 8192, 8192, &forced16), WB_OK);
    ck_assert_int_eq(forced16.k_slices, 1);
    ck_assert_int_eq(forced16.stages, 4);
}
END_TEST

/* The instruction table holds the facts of ../shared/ptx/MATRIX.md that lowering depends on, agrees with
 * the targets' feature bits, and every MMA or copy form the kernels emit is native where emitted. */
/* Batch-invariant configs: mma.sync with one split-K at every M (the f32 sums of a row happen in the
 * same order), the scale always on the weights, and wgmma refused; the flag is part of the config's
 * identity. Without it, the heuristic does pick different instructions and splits across M. */
START_TEST(batch_invariant_configs)
{
    static const int64_t ms[] = {1, 7, 16, 64, 300, 4096};
    const char *specs[] = {"w4a16", "mxfp4", "a=f16,w=int8,g=0"};
    for (int s = 0; s < 3; s++) {
        wb_format f = fmt(specs[s]);
        int wk = -1, plain_mma = 0, plain_wk = -1, plain_varies = 0;
        for (int i = 0; i < 6; i++) {
            wb_config c = {.batch_invariant = 1}, p = {0};
            ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, ms[i], 4096, 8192, &c), WB_OK);
            ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, ms[i], 4096, 8192, &p), WB_OK);
            ck_assert_int_eq(c.mma, WB_MMA_SYNC);
            ck_assert_int_eq(c.batch_invariant, 1);
            if (wk < 0)
                wk = c.warps_k, plain_wk = p.warps_k;
            ck_assert_int_eq(c.warps_k, wk);
            plain_varies |= p.warps_k != plain_wk;
            plain_mma |= p.mma == WB_MMA_WGMMA;
            char *ptx = NULL;
            ck_assert_int_eq(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, WB_EMIT_ANNOTATE, &ptx), WB_OK);
            ck_assert_ptr_null(strstr(ptx, "mma_scaled"));
            free(ptx);
            ck_assert(!wb_config_equal(&c, &(wb_config){c.m_tiles, c.warps_n, c.warps_k, c.stages, c.load, c.mma, 0, c.k_slices, 0, 0, 0, 0}));
        }
        ck_assert(plain_varies && plain_mma); /* the property is not free */
    }
    wb_format f = fmt("w4a16");
    wb_config c = {.batch_invariant = 1, .mma = WB_MMA_WGMMA};
    ck_assert_int_eq(wb_config_choose(&f, WB_ARCH_SM90A, 4096, 4096, 4096, &c), WB_OK);
    char *ptx = NULL;
    ck_assert_int_eq(wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, 0, &ptx), WB_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "batch-invariant mode uses mma.sync"));
    ck_assert_ptr_null(ptx);
}
END_TEST

START_TEST(instruction_table)
{
    struct { int family; wb_arch arch; wb_isa_status want; } facts[] = {
        {WB_ISA_MMA_FP8, WB_ARCH_SM89, WB_ISA_NATIVE},       {WB_ISA_MMA_FP8, WB_ARCH_SM90A, WB_ISA_EMULATED},
        {WB_ISA_MMA_FP8, WB_ARCH_SM100A, WB_ISA_EMULATED},   {WB_ISA_MMA_FP8, WB_ARCH_SM103A, WB_ISA_EMULATED},
        {WB_ISA_MMA_FP8, WB_ARCH_SM120A, WB_ISA_NATIVE},     {WB_ISA_MMA_S4, WB_ARCH_SM89, WB_ISA_NATIVE},
        {WB_ISA_MMA_S4, WB_ARCH_SM90A, WB_ISA_EMULATED},     {WB_ISA_MMA_S4, WB_ARCH_SM120A, WB_ISA_EMULATED},
        {WB_ISA_MMA_S8, WB_ARCH_SM103A, WB_ISA_NATIVE},      {WB_ISA_TC05_I8, WB_ARCH_SM100A, WB_ISA_NATIVE},
        {WB_ISA_TC05_I8, WB_ARCH_SM103A, WB_ISA_ABSENT},     {WB_ISA_TC05_F16, WB_ARCH_SM120A, WB_ISA_ABSENT},
        {WB_ISA_WGMMA_F16, WB_ARCH_SM100A, WB_ISA_ABSENT},   {WB_ISA_MMA_MXF4NVF4, WB_ARCH_SM120A, WB_ISA_NATIVE},
        {WB_ISA_MMA_MXF4NVF4, WB_ARCH_SM100A, WB_ISA_ABSENT}, {WB_ISA_CVT_FP4, WB_ARCH_SM90A, WB_ISA_ABSENT},
        {WB_ISA_CVT_FP8, WB_ARCH_SM89, WB_ISA_NATIVE},       {WB_ISA_MMA_F16_K16, WB_ARCH_SM75, WB_ISA_ABSENT},
    };
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++)
        ck_assert_msg(wb_isa_get(facts[i].arch, facts[i].family) == facts[i].want, "%s on %s",
                      wb_isa_name(facts[i].family), wb_arch_name(facts[i].arch));
    ck_assert_int_eq(wb_isa_get(WB_ARCH_COUNT, 0), WB_ISA_ABSENT);
    ck_assert_str_eq(wb_isa_name(-1), "?");
    for (int a = 0; a < WB_ARCH_COUNT; a++) {
        const wb_target *t = wb_target_get((wb_arch)a);
        struct { unsigned feat; int family; } same[] = {
            {WB_FEAT_MMA_K16, WB_ISA_MMA_F16_K16}, {WB_FEAT_BF16, WB_ISA_MMA_BF16_K16},
            {WB_FEAT_CP_ASYNC, WB_ISA_CP_ASYNC},   {WB_FEAT_WGMMA, WB_ISA_WGMMA_F16},
            {WB_FEAT_TMA, WB_ISA_TMA},             {WB_FEAT_TCGEN05, WB_ISA_TC05_F16},
            {WB_FEAT_CVT_FP4, WB_ISA_CVT_FP4}};
        for (size_t j = 0; j < sizeof same / sizeof same[0]; j++)
            ck_assert_msg(!!(t->features & same[j].feat) == (wb_isa_get((wb_arch)a, same[j].family) == WB_ISA_NATIVE),
                          "%s: feature bit and table disagree on %s", t->name, wb_isa_name(same[j].family));
        /* the fp8 conversion: native per the table, and the PTX version of the target has it (sm_90 and
         * newer: any; sm_89: 8.1, which its .version 7.8 here is not, so sm_89 keeps the bit moves) */
        int fp8 = wb_isa_get((wb_arch)a, WB_ISA_CVT_FP8) == WB_ISA_NATIVE &&
                  (t->cc_major >= 9 || strcmp(t->ptx_version, "8.1") >= 0);
        ck_assert_msg(!!(t->features & WB_FEAT_CVT_FP8) == fp8, "%s: WB_FEAT_CVT_FP8 and the table disagree", t->name);
        /* what the kernels emit */
        struct { const char *spec, *text; int family; } forms[] = {
            {"w4a16", "mma.sync.aligned.m16n8k16.row.col.f32.f16", WB_ISA_MMA_F16_K16},
            {"w4a16", "mma.sync.aligned.m16n8k8.row.col.f32.f16", WB_ISA_MMA_F16_K8},
            {"w4a16", "cp.async.cg", WB_ISA_CP_ASYNC},
            {"mxfp4", "mma.sync.aligned.m16n8k16.row.col.f32.bf16", WB_ISA_MMA_BF16_K16},
            {"a=f16,w=e2m1,ws=e8m0,g=32", "cvt.rn.f16x2.e2m1x2", WB_ISA_CVT_FP4}};
        for (size_t j = 0; j < sizeof forms / sizeof forms[0]; j++) {
            wb_format f = fmt(forms[j].spec);
            wb_config c = {0};
            char *ptx = NULL;
            ck_assert_int_eq(wb_config_choose(&f, (wb_arch)a, 16, 4096, 4096, &c), WB_OK);
            if (wb_kernel_ptx(&f, (wb_arch)a, &c, 0, &ptx) != WB_OK) {
                ck_assert_msg(!(t->features & WB_FEAT_BF16), "%s %s: %s", t->name, forms[j].spec, wb_last_error());
                continue;
            }
            if (strstr(ptx, forms[j].text))
                ck_assert_msg(wb_isa_get((wb_arch)a, forms[j].family) == WB_ISA_NATIVE, "%s emits %s, not native there",
                              t->name, wb_isa_name(forms[j].family));
            ck_assert_ptr_null(strstr(ptx, "wgmma"));
            ck_assert_ptr_null(strstr(ptx, "tcgen05"));
            free(ptx);
        }
    }
}
END_TEST

START_TEST(arch_names)
{
    wb_arch a;
    ck_assert_int_eq(wb_arch_parse("hopper", &a), WB_OK);
    ck_assert_int_eq(a, WB_ARCH_SM90A);
    ck_assert_int_eq(wb_arch_parse("b300", &a), WB_OK);
    ck_assert_int_eq(a, WB_ARCH_SM103A);
    ck_assert_int_eq(wb_arch_parse("sm_91", &a), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "unknown architecture 'sm_91'"));
    ck_assert_int_eq(wb_arch_from_cc(9, 0, &a), WB_OK);
    ck_assert_int_eq(a, WB_ARCH_SM90A);
    ck_assert_int_eq(wb_arch_from_cc(8, 7, &a), WB_OK);
    ck_assert_int_eq(a, WB_ARCH_SM86);
    ck_assert_int_eq(wb_arch_from_cc(7, 0, &a), WB_ERR_UNSUPPORTED);
    for (int i = 0; i < WB_ARCH_COUNT; i++) {
        ck_assert_int_eq(wb_arch_parse(wb_arch_name((wb_arch)i), &a), WB_OK);
        ck_assert_int_eq(a, i);
    }
}
END_TEST

/* --mma tcgen05 (issue 5's matrix): the kind each format takes on sm_100a and sm_103a, one MMA issued
 * per k step by thread 0 and nothing else tensor-wise (no mma.sync, no wgmma); kind::i8 never on sm_103a
 * (its s8 x s8 is widened to f16 on kind::f16 there: eight k16 MMAs a k128 tile; the legacy mma.sync
 * stays the default); the default stays mma.sync. */
START_TEST(tcgen05_per_architecture)
{
    static const struct {
        const char *spec, *kind100, *kind103; /* NULL: refused */
        int mmas100, mmas103;                 /* MMAs a tile */
    } cases[] = {
        {"w4a16", "kind::f16", "kind::f16", 4, 4},
        {"a=bf16,w=e3m3,ws=e5m2,g=64", "kind::f16", "kind::f16", 4, 4},
        /* fp4 x fp4: the block-scaled kinds, one k64 MMA a tile; scales of two types: the 16-bit tile */
        {"nvfp4", "kind::mxf4nvf4.block_scale.scale_vec::4X", "kind::mxf4nvf4.block_scale.scale_vec::4X", 1, 1},
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", "kind::mxf4.block_scale.scale_vec::2X",
         "kind::mxf4.block_scale.scale_vec::2X", 1, 1},
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e4m3,g=16", "kind::f16", "kind::f16", 4, 4},
        {"int8", "kind::i8", "kind::f16", 4, 8},
        {"a=s8,w=int4,ws=f32,g=0", "kind::i8", "kind::f16", 4, 8},
        {"fp8", "kind::f8f6f4", "kind::f8f6f4", 4, 4},
        {"a=e4m3,w=int4,ws=f32,g=0", "kind::f8f6f4", "kind::f8f6f4", 4, 4},
        {"fp8-block", "kind::f8f6f4", "kind::f8f6f4", 4, 4},
        {"w4a8-int8", "kind::i8", "kind::f16", 4, 8},
        {"w4a4-int4", NULL, NULL, 0, 0},
    };
    static const wb_arch archs[] = {WB_ARCH_SM100A, WB_ARCH_SM103A};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int a = 0; a < 2; a++) {
            const char *kind = a ? cases[i].kind103 : cases[i].kind100;
            char *ptx = NULL;
            wb_status st = ptx_for(cases[i].spec, archs[a], (wb_config){.mma = WB_MMA_TCGEN05}, &ptx);
            ck_assert_msg(st == (kind ? WB_OK : WB_ERR_UNSUPPORTED), "%s on %s: %s", cases[i].spec,
                          wb_arch_name(archs[a]), wb_last_error());
            if (!kind)
                continue;
            char want[96];
            snprintf(want, sizeof want, "tcgen05.mma.cta_group::1.%s ", kind);
            int mmas = a ? cases[i].mmas103 : cases[i].mmas100;
            ck_assert_msg(count_of(ptx, want) == mmas, "%s on %s: %d x %s", cases[i].spec, wb_arch_name(archs[a]),
                          count_of(ptx, want), want);
            ck_assert_int_eq(count_of(ptx, "tcgen05.mma"), mmas);
            ck_assert_int_eq(count_of(ptx, "tcgen05.commit"), 1);
            ck_assert_ptr_null(strstr(ptx, "mma.sync"));
            ck_assert_ptr_null(strstr(ptx, "wgmma"));
            ck_assert(archs[a] != WB_ARCH_SM103A || !strstr(ptx, "kind::i8"));
            free(ptx);
            ptx = NULL;
            /* the default: fp8 refused (its mma.sync is only emulated), everything else on mma.sync */
            int fp8 = strstr(cases[i].spec, "fp8") || strstr(cases[i].spec, "a=e4m3");
            ck_assert_int_eq(ptx_for(cases[i].spec, archs[a], (wb_config){0}, &ptx), fp8 ? WB_ERR_UNSUPPORTED : WB_OK);
            if (ptx)
                ck_assert_ptr_null(strstr(ptx, "tcgen05.mma"));
            free(ptx);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel");
    TCase *t = tcase_create("kernel");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, builder_errors_are_sticky);
    tcase_add_test(t, builder_checks_operand_kinds);
    tcase_add_test(t, standard_gemm_validates_and_prints);
    tcase_add_test(t, scale_goes_to_the_product_when_it_pays);
    tcase_add_test(t, legalizer_refuses_with_reasons);
    tcase_add_test(t, kloop_barrier_per_k_warp_group);
    tcase_add_test(t, ptx_per_architecture);
    tcase_add_test(t, w8a8_per_architecture);
    tcase_add_test(t, w4a4_per_architecture);
    tcase_add_test(t, fp4_acts_per_architecture);
    tcase_add_test(t, tcgen05_block_scaled_kinds);
    tcase_add_test(t, w8a8_wgmma);
    tcase_add_test(t, a16_load_choice);
    tcase_add_test(t, persistent_grid);
    tcase_add_test(t, staged_epilogue);
    tcase_add_test(t, cluster_pairs);
    tcase_add_test(t, split_k_pairs);
    tcase_add_test(t, split_k_mma_sync);
    tcase_add_test(t, tma_warp_specialized);
    tcase_add_test(t, fp8_w8a8_per_architecture);
    tcase_add_test(t, fp8_wgmma);
    tcase_add_test(t, fp8_wide_tiles);
    tcase_add_test(t, w4a8_fp8_decode_on_f16);
    tcase_add_test(t, annotated_ptx_names_ops_and_rules);
    tcase_add_test(t, config_choice_and_shape_rules);
    tcase_add_test(t, instruction_table);
    tcase_add_test(t, batch_invariant_configs);
    tcase_add_test(t, arch_names);
    tcase_add_test(t, tcgen05_per_architecture);
    suite_add_tcase(s, t);
    return wbt_run(s);
}
