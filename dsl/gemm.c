/* The standard quantized GEMM, written in tile ops. Every format and target shares this kernel;
 * the format only changes what DEQUANT means and which tiles exist. */
#include "dsl/tile.h"

static int needs_scale_tile(const wb_format *f)
{
    (void)f;
    return 1; /* per-channel scales are one group spanning K, so every format streams scale records */
}

/* One scale per channel covers a warp's whole k64 slice (per-channel scales, or groups of a multiple
 * of 64): apply it to the slice's f32 product (4 fmas per m-tile) instead of to its weights (16 paired
 * fmas), which pays while m_tiles <= 2. Groups of 32 at one m-tile likewise, one product per group
 * (8 fmas against 16). A float zero point is added after scaling, so it keeps the scale in the
 * dequant. (wgmma and tcgen05 tiles are wide: they scale the weights. So does the batch-invariant mode, whose
 * rounding must not change with m_tiles.) */
int wb_gemm_scales_products(const wb_format *f, const wb_config *cfg)
{
    int slice = f->g % WB_SLICE_K == 0 && cfg->m_tiles <= 2, half = f->g == WB_SLICE_K / 2 && cfg->m_tiles == 1;
    return (slice || half) && f->zp != WB_ZP_FP && cfg->mma != WB_MMA_WGMMA && cfg->mma != WB_MMA_TCGEN05 &&
           !cfg->batch_invariant;
}

/* W8A8: the code fragment goes straight into the integer MMA; the per-channel and per-token scales
 * are applied to the exact s32 sums in the epilogue, so there is no scale tile in the K loop. */
static wb_kernel *build_w8a8(wb_kernel *k)
{
    int a = wb_load_tile(k, WB_OPERAND_A, k->cfg.stages);
    int w = wb_load_tile(k, WB_OPERAND_W, k->cfg.stages);
    int acc = wb_acc(k);
    wb_kloop(k);
    int wf = wb_load_frag(k, w);
    int af = wb_load_frag(k, a);
    wb_mma(k, acc, wf, af);
    wb_kloop_end(k);
    wb_epilogue(k, acc);
    return k;
}

/* fp4 x fp4 where the MMA applies the block scales: codes and scale bytes of both operands go to the
 * MMA as they are; the tensor scales multiply the f32 sums in the epilogue. */
static wb_kernel *build_block_scaled(wb_kernel *k)
{
    int a = wb_load_tile(k, WB_OPERAND_A, k->cfg.stages);
    int w = wb_load_tile(k, WB_OPERAND_W, k->cfg.stages);
    int s = wb_load_tile(k, WB_OPERAND_SCALE, k->cfg.stages);
    int as = wb_load_tile(k, WB_OPERAND_ASCALE, k->cfg.stages);
    int acc = wb_acc(k);
    wb_kloop(k);
    int wf = wb_load_frag(k, w);
    int sf = wb_load_frag(k, s);
    int af = wb_load_frag(k, a);
    int asf = wb_load_frag(k, as);
    wb_mma_block(k, acc, wf, sf, af, asf);
    wb_kloop_end(k);
    wb_epilogue(k, acc);
    return k;
}

wb_kernel *wb_build_gemm(const wb_format *f, const wb_config *cfg, int block_scale)
{
    wb_kernel *k = wb_kernel_create(f, cfg);
    if (!k)
        return NULL;
    k->block_scale = block_scale;
    if (block_scale)
        return build_block_scaled(k);
    if (wb_format_w8a8(f))
        return build_w8a8(k);
    int a = wb_load_tile(k, WB_OPERAND_A, cfg->stages);
    int w = wb_load_tile(k, WB_OPERAND_W, cfg->stages);
    int s = needs_scale_tile(f) ? wb_load_tile(k, WB_OPERAND_SCALE, cfg->stages) : -1;
    /* fp4 activations: codes and block scales become a 16-bit tile, once per block and stage */
    int as = wb_format_fp4_acts(f) ? wb_load_tile(k, WB_OPERAND_ASCALE, cfg->stages) : -1;
    int acc = wb_acc(k);
    wb_kloop(k);
    int at = as >= 0 ? wb_dequant_tile(k, a, as) : a;
    int wf = wb_load_frag(k, w);
    int sf = s >= 0 ? wb_load_frag(k, s) : -1;
    int af = wb_load_frag(k, at);
    if (wb_gemm_scales_products(f, cfg)) {
        int wd = wb_dequant_unscaled(k, wf, sf);
        wb_mma_scaled(k, acc, wd, af, sf);
    } else {
        wb_mma(k, acc, wb_dequant(k, wf, sf), af);
    }
    wb_kloop_end(k);
    wb_epilogue(k, acc);
    return k;
}
