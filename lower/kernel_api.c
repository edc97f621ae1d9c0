/* The public kernel entry: format + arch + config -> PTX text. The pipeline, in order:
 * validate the format, legalize, build tile IR, validate it, lower to instruction IR, emit PTX. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit_ptx.h"
#include "lower/isa.h"
#include "lower/layout.h"
#include "lower/lower.h"

const char *wb_kernel_entry(void) { return "wb_gemm"; }

/* The parameters, in this order: out, a, w, scale, chan, m, n, k; then with quantized activations (W8A8:
 * the f32 scale of each token; fp4: the 8-bit scale codes, M x K/ag) p_ascale, and with ags=1 the
 * address of the f32 activation tensor scale; then with TMA loads the activations' tensor map, by value
 * (runtime/layer.c fills it per call). */
static int kernel_params(const wb_format *f, const wb_config *cfg, const char *out[11])
{
    static const char *const base[] = {"u64 p_out", "u64 p_a", "u64 p_w", "u64 p_scale", "u64 p_chan",
                                       "u32 p_m", "u32 p_n", "u32 p_k"};
    int n = 0;
    for (size_t i = 0; i < WB_COUNT(base); i++)
        out[n++] = base[i];
    if (wb_format_w8a8(f) || wb_format_fp4_acts(f))
        out[n++] = "u64 p_ascale";
    if (wb_format_fp4_acts(f) && f->ags)
        out[n++] = "u64 p_aglobal";
    if (cfg->load == WB_LOAD_TMA)
        out[n++] = "align 64 .b8 p_tmap[128]";
    return n;
}

/* The kernel's .version: the target's, raised where an instruction needs more. fp8 mma.sync m16n8k32
 * with f32 sums needs PTX 8.4 (shared/ptx/MATRIX.md section 1); sm_89 is otherwise emitted as 7.8, and
 * only its fp8 kernels move up, so no other kernel's PTX (or ledger hash) changes. Likewise tcgen05.mma
 * kind::mxf4nvf4 .scale_vec::4X needs 8.7 (MATRIX.md section 3), above sm_100a's 8.6. */
static const char *ptx_version(const wb_format *f, const wb_target *t, const wb_config *cfg)
{
    static const char fp8_mma[] = "8.4", tc_nvf4[] = "8.7";
    /* every version here is "D.D", so the strings compare as the numbers do (and strtod would follow
     * the caller's locale) */
    if (wb_format_w8a8_fp8(f) && strcmp(t->ptx_version, fp8_mma) < 0)
        return fp8_mma;
    if (cfg->mma == WB_MMA_TCGEN05 && wb_isa_tc_block_scale_vec(f, t->arch) == 4 && strcmp(t->ptx_version, tc_nvf4) < 0)
        return tc_nvf4;
    return t->ptx_version;
}

wb_status wb_kernel_ptx(const wb_format *f, wb_arch arch, const wb_config *cfg, int flags, char **ptx_out)
{
    const wb_target *t = wb_target_get(arch);
    if (!f || !cfg || !ptx_out || !t)
        return wb_fail(WB_ERR_INVALID, "wb_kernel_ptx: bad argument");
    *ptx_out = NULL;
    wb_status s = wb_format_validate(f);
    if (!s)
        s = wb_legalize(f, t, cfg);
    if (s)
        return s;
    wb_kernel *k = wb_build_gemm(f, cfg, wb_isa_block_scale_vec(f, arch));
    if (!k)
        return wb_fail(WB_ERR_NOMEM, "out of memory building a kernel");
    s = wb_kernel_validate(k);
    wb_func fn;
    wb_func_init(&fn, k->arena);
    fn.target = t; /* what the dequant may use (the hardware fp4 conversion) */
    int annotate = (flags & WB_EMIT_ANNOTATE) != 0;
    if (!s)
        s = wb_lower_gemm(k, t, annotate, &fn);
    if (!s) {
        char spec[512], conf[128], title[700];
        wb_format_print(f, spec, sizeof spec);
        wb_config_print(cfg, conf, sizeof conf);
        snprintf(title, sizeof title, "%s  [%s]", spec, conf);
        wb_layout lay;
        wb_layout_get(f, cfg, t->arch, &lay);
        const char *params[11];
        int nparams = kernel_params(f, cfg, params);
        wb_ptx_header h = {ptx_version(f, t, cfg), t->ptx_target, wb_kernel_entry(), params, nparams,
                           cfg->mma == WB_MMA_WGMMA || cfg->mma == WB_MMA_TCGEN05 ? 1024 : 128, lay.threads, title,
                           cfg->cluster > 1 ? cfg->cluster : cfg->split_k > 1 ? cfg->split_k : 1};
        if (annotate) {
            /* the tile IR goes on top as comments, each PTX block below says which op it lowers */
            wb_buf top = {0};
            wb_buf_printf(&top, "%s\n// tile IR:", title);
            for (int i = 0; i < k->nops; i++)
                wb_buf_printf(&top, "\n//   %s", wb_tile_op_text(k, &k->ops[i]));
            h.title = top.data ? wb_arena_strdup(k->arena, top.data) : title;
            wb_buf_free(&top);
        }
        *ptx_out = wb_emit_ptx(&fn, &h, annotate);
        if (!*ptx_out)
            s = wb_fail(WB_ERR_NOMEM, "out of memory printing PTX");
    }
    wb_kernel_destroy(k);
    return s;
}
