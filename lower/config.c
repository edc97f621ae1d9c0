/* Kernel configs: the shape heuristic, the shape rules, printing and launch geometry. */
#include <stdio.h>

#include "lower/layout.h"
#include "lower/lower.h"

const char *wb_load_name(int load)
{
    static const char *const n[] = {"auto", "ldg", "cp.async", "tma"};
    return load >= 0 && load < 4 ? n[load] : "?";
}

const char *wb_mma_name(int mma)
{
    static const char *const n[] = {"auto", "mma.sync", "wgmma", "tcgen05"};
    return mma >= 0 && mma < 4 ? n[mma] : "?";
}

/* Blocks of a config that one SM holds at once: by shared memory, by threads, and by registers at
 * an estimated 64 a thread (the decode kernels take 50 to 80). */
static int64_t resident_blocks(const wb_target *t, const wb_format *f, const wb_config *c)
{
    wb_layout lay;
    wb_layout_get(f, c, &lay);
    int64_t by_smem = lay.smem ? t->smem_max / lay.smem : 32, by_threads = 2048 / lay.threads;
    int64_t by_regs = 65536 / (64 * lay.threads);
    int64_t b = by_smem < by_threads ? by_smem : by_threads;
    return b < by_regs ? b : by_regs;
}

/* Estimated time of a wgmma tile shape, in arbitrary units: an SM runs up to `resident` blocks side
 * by side, sharing its tensor cores, so a shape costs (rounds) x (blocks per SM at once) x tile area;
 * a tile that reads more bytes from L2 per MMA than 1 byte per 128 flops (short or narrow
 * tiles) runs slower in proportion. */
static double wgmma_cost(const wb_target *t, const wb_format *f, const wb_config *c, int64_t m, int64_t n)
{
    wb_layout lay;
    wb_layout_get(f, c, &lay);
    int64_t blocks = n / lay.bn * ((m + lay.bm - 1) / lay.bm);
    int64_t by_regs = 65536 / ((c->m_tiles * 4 + 80) * lay.threads), by_smem = t->smem_max / lay.smem;
    int64_t resident = by_regs < by_smem ? by_regs : by_smem;
    resident = resident < 1 ? 1 : resident;
    int64_t sms = t->sm_count_hint, per_sm = (blocks + sms - 1) / sms;
    per_sm = per_sm < resident ? per_sm : resident;
    int64_t rounds = (blocks + sms * per_sm - 1) / (sms * per_sm);
    double flops = 2.0 * lay.bm * lay.bn * WB_KW, bytes = lay.a_stage + lay.w_stage + lay.s_stage;
    double intensity = flops / bytes, slow = intensity < 128 ? 128 / intensity : 1;
    return (double)rounds * (double)per_sm * lay.bm * lay.bn * slow;
}

/* wgmma (M > 64 on sm_90a, or forced): the tile shape of least estimated time among 256, 128, 64 and 32 tokens
 * by one or two warpgroups (64 channels each), then as many stages as fit (4 at most). */
static void choose_wgmma(const wb_target *t, const wb_format *f, int64_t m, int64_t n, wb_config *c)
{
    static const int mts[] = {32, 16, 8, 4}, wns[] = {8, 4};
    if (!c->load)
        c->load = WB_LOAD_CP_ASYNC;
    if (!c->warps_k)
        c->warps_k = 1;
    int forced_stages = c->stages != 0;
    wb_config best = *c;
    double best_cost = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++) {
            wb_config x = *c;
            x.m_tiles = c->m_tiles ? c->m_tiles : mts[i];
            x.warps_n = c->warps_n ? c->warps_n : wns[j];
            x.stages = forced_stages ? c->stages : 3;
            if (n % (16 * x.warps_n))
                continue;
            double cost = wgmma_cost(t, f, &x, m, n);
            if (!best.m_tiles || !best.warps_n || cost < best_cost)
                best = x, best_cost = cost;
        }
    *c = best;
    if (!c->m_tiles)
        c->m_tiles = 8;
    if (!c->warps_n)
        c->warps_n = 4;
    if (!forced_stages) {
        wb_layout lay;
        for (c->stages = 4, wb_layout_get(f, c, &lay); c->stages > 3 && lay.smem > t->smem_max;
             wb_layout_get(f, c, &lay))
            c->stages--;
    }
}

/* The heuristic picks wgmma where the target has it, M > 64 and no forced field rules it out. Up to
 * M = 64 the split-K mma.sync kernel below was faster on 3 of the 4 suite shapes (H200, docs/perf.md):
 * wgmma's per-iteration barrier, copies and dequant outweigh an MMA of 32 or 64 tokens. */
static int wants_wgmma(const wb_target *t, const wb_config *c, int64_t m, int64_t n)
{
    return (t->features & WB_FEAT_WGMMA) && m > 64 && n % 64 == 0 &&
           (c->load == WB_LOAD_AUTO || c->load == WB_LOAD_CP_ASYNC) && c->warps_k <= 1 &&
           (c->warps_n == 0 || c->warps_n == 4 || c->warps_n == 8);
}

wb_status wb_config_choose(const wb_format *f, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config *c)
{
    const wb_target *t = wb_target_get(arch);
    if (!t || !f || !c)
        return wb_fail(WB_ERR_INVALID, "wb_config_choose: bad argument");
    if (!c->mma)
        c->mma = wants_wgmma(t, c, m, n) ? WB_MMA_WGMMA : WB_MMA_SYNC;
    if (c->mma == WB_MMA_WGMMA) {
        choose_wgmma(t, f, m, n, c);
        return WB_OK;
    }
    if (!c->load)
        c->load = t->features & WB_FEAT_CP_ASYNC ? WB_LOAD_CP_ASYNC : WB_LOAD_LDG;
    /* without cp.async the whole tile lives in registers on its way to shared memory: stay smaller */
    int mt_max = c->load == WB_LOAD_CP_ASYNC ? 8 : 4;
    if (!c->m_tiles)
        c->m_tiles = m <= 8 ? 1 : m <= 16 ? 2 : m <= 32 ? 4 : mt_max;
    int small = m <= 64, decode = m <= 16;
    int forced_wk = c->warps_k != 0, forced_stages = c->stages != 0 && c->load == WB_LOAD_CP_ASYNC;
    if (!c->stages)
        c->stages = c->load == WB_LOAD_CP_ASYNC ? 4 : 1;
    int64_t mblocks = (m + 8 * c->m_tiles - 1) / (8 * c->m_tiles);
    if (!c->warps_n) {
        /* decode (M <= 16): narrow blocks, so that there are enough of them for every SM; above that,
         * wide blocks share each activation tile among more warps (2.5x at M = 64 on the H200,
         * docs/perf.md) */
        c->warps_n = decode ? 2 : 4;
        while (c->warps_n > 1 && (n % (16 * c->warps_n) ||
                                  (decode && n / (16 * c->warps_n) * mblocks < 2 * t->sm_count_hint)))
            c->warps_n /= 2;
    }
    if (!c->warps_k) {
        /* split each block's K among warps: a decode GEMM is bound by the latency of each warp's
         * dequant-and-MMA chain, so it wants 24 or more warps per SM, from blocks that all stay
         * resident at once (a second wave costs more than the warps gain) */
        int want = small ? 2 : 1;
        if (decode) {
            int64_t blocks = n / (16 * c->warps_n) * mblocks, sms = t->sm_count_hint;
            for (want = 4; want < 16 && blocks * c->warps_n * want < 24 * sms; want *= 2) {
                wb_config wider = *c;
                wider.warps_k = want * 2;
                if (k % (WB_KW * wider.warps_k) || blocks > resident_blocks(t, f, &wider) * sms)
                    break;
            }
        }
        c->warps_k = 1;
        for (int wk = want; wk > 1; wk /= 2)
            if (k % (WB_KW * wk) == 0) {
                c->warps_k = wk;
                break;
            }
    }
    /* fit at least two blocks per SM: fewer stages down to 3, then less split K, then 2 stages */
    wb_layout lay;
    for (;;) {
        wb_layout_get(f, c, &lay);
        if (2 * lay.smem <= t->smem_max)
            break;
        if (!forced_stages && c->stages > 3)
            c->stages--;
        else if (!forced_wk && c->warps_k > 1)
            c->warps_k /= 2;
        else if (!forced_stages && c->stages > 2)
            c->stages--;
        else
            break;
    }
    return WB_OK;
}

wb_status wb_kernel_check_shape(const wb_format *f, const wb_config *c, int64_t m, int64_t n, int64_t k)
{
    wb_status s = wb_format_check_shape(f, m, n, k);
    if (s)
        return s;
    int bn = 16 * c->warps_n, bk = WB_KW * c->warps_k;
    if (n % 16 || k % WB_KW)
        return wb_fail(WB_ERR_INVALID, "N must be a multiple of 16 and K a multiple of 64 (got N=%lld, K=%lld)",
                       (long long)n, (long long)k);
    if (n % bn || k % bk)
        return wb_fail(WB_ERR_INVALID, "this config (warps_n=%d, warps_k=%d) needs N a multiple of %d and K a "
                                       "multiple of %d (got N=%lld, K=%lld)", c->warps_n, c->warps_k, bn, bk,
                       (long long)n, (long long)k);
    if (m * n >= (1ll << 32) || n * k >= (1ll << 34) || m >= (1ll << 31))
        return wb_fail(WB_ERR_INVALID, "shape too large: M*N must be below 2^32 and N*K below 2^34");
    return WB_OK;
}

int wb_config_print(const wb_config *c, char *buf, size_t size)
{
    return snprintf(buf, size, "mt=%d,wn=%d,wk=%d,stages=%d,load=%s,mma=%s", c->m_tiles, c->warps_n, c->warps_k,
                    c->stages, wb_load_name(c->load), wb_mma_name(c->mma));
}

wb_status wb_kernel_dims(const wb_format *f, const wb_config *c, int64_t m, int64_t n, int64_t k,
                         wb_launch_dims *d)
{
    (void)k;
    wb_layout lay;
    wb_layout_get(f, c, &lay);
    d->grid[0] = (unsigned)(n / lay.bn);
    d->grid[1] = (unsigned)((m + lay.bm - 1) / lay.bm);
    d->grid[2] = 1;
    d->block[0] = (unsigned)lay.threads;
    d->block[1] = d->block[2] = 1;
    d->smem_bytes = (unsigned)lay.smem;
    if (d->grid[1] > 65535)
        return wb_fail(WB_ERR_INVALID, "M=%lld needs more than 65535 row blocks", (long long)m);
    return WB_OK;
}
