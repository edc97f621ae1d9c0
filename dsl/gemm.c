/* The standard quantized GEMM, written in tile ops. Every format and target shares this kernel;
 * the format only changes what DEQUANT means and which tiles exist. */
#include "dsl/tile.h"

static int needs_scale_tile(const wb_format *f)
{
    (void)f;
    return 1; /* per-channel scales are one group spanning K, so every format streams scale records */
}

wb_kernel *wb_build_gemm(const wb_format *f, const wb_config *cfg)
{
    wb_kernel *k = wb_kernel_create(f, cfg);
    if (!k)
        return NULL;
    int a = wb_load_tile(k, WB_OPERAND_A, cfg->stages);
    int w = wb_load_tile(k, WB_OPERAND_W, cfg->stages);
    int s = needs_scale_tile(f) ? wb_load_tile(k, WB_OPERAND_SCALE, cfg->stages) : -1;
    int acc = wb_acc(k);
    wb_kloop(k);
    int wf = wb_load_frag(k, w);
    int sf = s >= 0 ? wb_load_frag(k, s) : -1;
    int af = wb_load_frag(k, a);
    int wd = wb_dequant(k, wf, sf);
    wb_mma(k, acc, wd, af);
    wb_kloop_end(k);
    wb_epilogue(k, acc);
    return k;
}
