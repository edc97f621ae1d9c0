/* Block tile sizes and shared-memory offsets from a config. */
#include "lower/layout.h"
#include "dsl/tile.h"
#include "lower/isa.h"
#include "lower/target.h"

int wb_tc_widens_s8(const wb_format *f, const wb_config *cfg, wb_arch arch)
{
    return cfg->mma == WB_MMA_TCGEN05 && wb_format_w8a8(f) && !wb_format_w8a8_fp8(f) &&
           wb_isa_get(arch, WB_ISA_TC05_I8) != WB_ISA_NATIVE;
}

int wb_w4a8_f16(const wb_format *f, wb_arch arch)
{
    return wb_format_w8a8_fp8(f) && f->w.kind == WB_KIND_INT && f->w.bits == 4 &&
           wb_isa_get(arch, WB_ISA_MMA_FP8) != WB_ISA_NATIVE && wb_isa_get(arch, WB_ISA_WGMMA_FP8) == WB_ISA_NATIVE &&
           (wb_target_get(arch)->features & WB_FEAT_CVT_FP8);
}

void wb_layout_get(const wb_format *f, const wb_config *cfg, wb_arch arch, wb_layout *L)
{
    L->tc_wide = wb_tc_widens_s8(f, cfg, arch);
    /* W8A8 on wgmma and tcgen05: k128 slices, so that a token's 8-bit row is 128 bytes (the 128B swizzle of the
     * 16-bit kernels) and an iteration holds four k32 MMA steps, as the 16-bit one holds four k16 */
    L->slice_k = wb_format_w8a8(f) && (cfg->mma == WB_MMA_WGMMA || cfg->mma == WB_MMA_TCGEN05) ? 2 * WB_KW : WB_KW;
    /* a stage is laid out for warps_k * k_slices warp slices along K; warp wk takes slices
     * wk * k_slices .. + k_slices - 1 of it */
    L->ks = wb_config_ks(cfg);
    L->vk = cfg->warps_k * L->ks;
    L->bm = 8 * cfg->m_tiles;
    L->bn = 16 * cfg->warps_n;
    L->bk = L->slice_k * L->vk;
    L->consumers = 32 * cfg->warps_n * cfg->warps_k;
    /* TMA loads: a producer warpgroup, last (one warp of it copies; a whole warpgroup, so that it can
     * hand its registers to the consumers: lower_tma.c) */
    L->threads = L->consumers + (cfg->load == WB_LOAD_TMA ? 128 : 0);
    L->rec_bytes = f->zp != WB_ZP_NONE ? 64 : 32;
    L->groups_per_chunk = f->g > 0 && f->g < WB_KW ? WB_KW / f->g : 1;
    int warps = cfg->warps_n * L->vk; /* warp slices of a stage */
    /* a warp's k64 slice of one token: 64 two-byte activations, 64 8-bit codes (W8A8) or 64 s4 codes
     * two to a byte (W4A4) */
    L->a_bits = wb_format_w8a8(f) ? f->a.bits : 16;
    L->a_row = L->slice_k * L->a_bits / 8;
    L->a_stage = L->bm * L->a_row * L->vk;
    /* fp4 activations: their codes land beside the 16-bit tile they become (lower_act4.c) */
    L->q_row = wb_format_fp4_acts(f) ? L->slice_k * f->a.bits / 8 : 0;
    L->q_stage = L->bm * L->q_row * L->vk;
    L->w_bytes = 2 * L->slice_k * f->w.bits;
    L->w_stage = warps * L->w_bytes;
    /* W8A8 streams no scale records: its scales are read once, in the epilogue */
    L->s_stage = wb_format_w8a8(f) ? 0 : warps * L->groups_per_chunk * L->rec_bytes;
    L->a_off = 0;
    L->q_off = L->a_stage;
    L->w_off = L->q_off + L->q_stage;
    L->s_off = L->w_off + L->w_stage;
    L->stage = L->s_off + L->s_stage;
    if (cfg->mma == WB_MMA_WGMMA || cfg->mma == WB_MMA_TCGEN05) /* read in 1024-byte swizzle atoms */
        L->stage = (L->stage + 1023) / 1024 * 1024;
    L->red_bytes = (cfg->warps_k - 1) * cfg->warps_n * cfg->m_tiles * 4 * 32 * 4;
    L->smem = L->stage * cfg->stages;
    L->mbar_off = L->smem;
    if (cfg->load == WB_LOAD_TMA)
        L->smem += 16 * cfg->stages;
    L->out_row = L->out_bytes = L->out_off = 0;
    if (cfg->load == WB_LOAD_TMA && cfg->mma == WB_MMA_WGMMA) {
        L->out_row = 2 * L->bn + 16;
        L->out_bytes = L->bm * L->out_row;
        if (cfg->persistent || L->out_bytes > L->stage * cfg->stages) {
            L->out_off = L->smem;
            L->smem += L->out_bytes;
        }
    }
    L->tc_a_off = L->tc_mbar_off = L->tc_tmem_off = L->tc_x_off = L->tc_sf_off = 0;
    L->tc_bs = cfg->mma == WB_MMA_TCGEN05 ? wb_isa_tc_block_scale_vec(f, arch) : 0;
    if (cfg->mma == WB_MMA_TCGEN05) {
        int halves = L->tc_wide ? 2 : 1; /* widened: a k128 tile is two k64 halves of 16-bit values */
        L->tc_a_off = L->smem;
        L->tc_x_off = L->tc_a_off + 2 * halves * WB_TC_M * 128;
        L->tc_sf_off = L->tc_x_off + (L->tc_wide ? 2 * halves * L->bm * 128 : 0);
        L->tc_mbar_off = L->tc_sf_off + (L->tc_bs ? 2 * (512 + 1024) : 0);
        L->tc_tmem_off = L->tc_mbar_off + 16;
        L->smem = L->tc_tmem_off + 16;
    }
    if (L->red_bytes > L->smem)
        L->smem = L->red_bytes;
    /* split_k: the second block's sums land in the first's shared memory, over its stages (the
     * mbarriers after them stay untouched: legalize checks they fit) */
    L->split_bytes = cfg->split_k > 1 ? L->consumers * cfg->m_tiles * 4 * 4 : 0;
    if (L->split_bytes > L->smem)
        L->smem = L->split_bytes;
}

int wb_layout_copy_slots(const wb_layout *L)
{
    int row = L->q_row ? L->q_row : L->a_row, a = L->bm * (row / 16) * L->vk, w = L->w_stage / 16, s = L->s_stage / 16;
    int most = a > w ? a : w;
    most = most > s ? most : s;
    return (most + L->threads - 1) / L->threads;
}

int64_t wb_layout_groups(const wb_format *f, int64_t k)
{
    return f->g > 0 ? k / f->g : 1;
}

int wb_w8_smem_operand(const wb_format *f, wb_arch arch)
{
    return arch == WB_ARCH_SM90A && wb_format_w8a8_fp8(f) && f->w.kind == WB_KIND_FLOAT && f->w.bits == 8;
}
