/* Kernel configs: the shape heuristic, the shape rules, printing and launch geometry. */
#include <stdio.h>

#include "lower/isa.h"
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
 * an estimated 64 a thread (the decode kernels take 50 to 80; 96 with four slices a warp, whose
 * int2 kernel takes 94). */
static int64_t resident_blocks(const wb_target *t, const wb_format *f, const wb_config *c)
{
    wb_layout lay;
    wb_layout_get(f, c, t->arch, &lay);
    int64_t by_smem = lay.smem ? t->smem_max / lay.smem : 32, by_threads = 2048 / lay.threads;
    int64_t by_regs = 65536 / ((c->k_slices == 4 ? 96 : 64) * lay.threads);
    int64_t b = by_smem < by_threads ? by_smem : by_threads;
    return b < by_regs ? b : by_regs;
}

/* wgmma tile shapes (m_tiles, warps_n) in order of preference, from `warble bench --sweep` on the
 * H200 at M = 256 (docs/perf.md): 128 tokens x 128 channels (two warpgroups) was best on 8192 x 8192,
 * 128 x 64 on 4096 x 14336 (where 128 x 128 leaves half the SMs idle); a wgmma of 64 tokens or fewer
 * pays the iteration's barrier, copies and dequant for too little MMA work. */
static const int wgmma_shapes[][2] = {{16, 8}, {16, 4}, {8, 8}, {8, 4}, {4, 4}};

/* The token tiles of a config over M (the last one partly past M) */
static int64_t token_tiles(const wb_config *c, int64_t m)
{
    return (m + 8 * c->m_tiles - 1) / (8 * c->m_tiles);
}

static int64_t wgmma_blocks(const wb_config *c, int64_t m, int64_t n)
{
    return n / (16 * c->warps_n) * token_tiles(c, m);
}

/* The token rows an SM works through when the blocks run in whole waves of one an SM */
static int64_t wave_rows(const wb_config *c, int64_t m, int64_t n, int64_t sms)
{
    return (wgmma_blocks(c, m, n) + sms - 1) / sms * 8 * c->m_tiles;
}

/* The deepest pipeline that fits beside the blocks an SM runs at once, 3 to 8 stages */
static int wgmma_stages(const wb_target *t, const wb_format *f, const wb_config *c, int64_t m, int64_t n)
{
    wb_config one = *c;
    one.stages = 1;
    wb_layout lay;
    wb_layout_get(f, &one, t->arch, &lay);
    int64_t sms = t->sm_count_hint, threads = 32 * c->warps_n * c->warps_k;
    int64_t by_regs = 65536 / ((c->m_tiles * 4 + 80) * threads), per_sm = (wgmma_blocks(c, m, n) + sms - 1) / sms;
    per_sm = per_sm < by_regs ? per_sm : by_regs;
    per_sm = per_sm < 1 ? 1 : per_sm;
    /* persistent: the epilogue's output tile has its own place beside the stages (wb_layout_get) */
    int64_t fit = c->persistent && lay.out_off ? (t->smem_max / per_sm - lay.out_bytes) / (lay.stage + 16)
                                               : t->smem_max / (per_sm * lay.stage);
    return fit > 8 ? 8 : fit < 3 ? 3 : (int)fit;
}

/* K halves into whole block tiles and scale groups (wb_kernel_check_shape's rule for split_k) */
static int split_fits(const wb_format *f, const wb_config *c, int64_t k)
{
    wb_layout lay;
    wb_layout_get(f, c, WB_ARCH_SM90A, &lay);
    return k % (2 * lay.bk) == 0 && (f->g <= 0 || (k / 2) % f->g == 0);
}

/* Split K over a pair of blocks (16-bit activations, the wgmma kernel): where 128 x 128 tiles would give
 * fewer than half the SMs a block, the widest 128-token tile (128 or 64 channels) whose pairs give more
 * than half the SMs a block in one wave, when K halves into whole block tiles and groups. W4A16 on an
 * H200 (2026-12-06, three rounds interleaved, docs/perf.md): at M = 128 on 8192 x 8192 30.5 us against
 * 35.6, on 6144 x 4096 18.4 against 23.3, on 4096 x 14336 (128 x 64) 34.6 against 42.1; at M = 256 on
 * 4096 x 14336 52.2 against 64.4. Pairs of 48 tiles of 256 x 128 lost to 96 single tiles of 128 x 128
 * (31.6 against 27.4 us at M = 256 on 6144 x 4096), and pairs of 32 tiles (64 blocks) lost on
 * 4096 x 14336 at both M. Sets the tile and split_k where a tile qualifies. */
static void split_tile(const wb_target *t, const wb_format *f, int64_t m, int64_t n, int64_t k, wb_config *c)
{
    int64_t sms = t->sm_count_hint;
    wb_config x = *c;
    x.m_tiles = 16, x.warps_n = 8, x.split_k = 2;
    if (n % 128 == 0 && wgmma_blocks(&x, m, n) * 2 >= sms)
        return;
    for (int wn = 8; wn >= 4; wn /= 2) {
        x.warps_n = wn;
        int64_t pairs = wgmma_blocks(&x, m, n);
        if (n % (16 * wn) || 4 * pairs <= sms || 2 * pairs > sms || !split_fits(f, &x, k))
            continue;
        /* on the TMA pipeline (two consumer warpgroups) the other block's sums land over the stages
         * the heuristic gives it */
        wb_config tma = x;
        tma.load = WB_LOAD_TMA;
        tma.stages = wgmma_stages(t, f, &tma, m, n);
        wb_layout lay;
        wb_layout_get(f, &tma, t->arch, &lay);
        if (wn == 8 && lay.split_bytes > lay.mbar_off)
            continue;
        *c = x;
        return;
    }
}

/* wgmma (M > 64 on sm_90a, or forced): 256 x 128 tiles when there are more than one and a half waves of
 * them (the fewest bytes per MMA; 570 to 590 TFLOP/s at M = 1024 to 16384 on 8192 x 8192; at M = 256 on
 * 28672 x 4096, 1.7 waves, 106 us against 127 for 128 x 128 tiles, H100 sweep 2026-12-06), or, for
 * 16-bit activations, one wave of them for more than half the SMs, where 128 x 128 tiles take two
 * (W4A16, 128 blocks, H100: 185 against 204 us at M = 1024 on 4096 x 14336, 107 against 117 at
 * M = 512 on 8192 x 8192), else, for 16-bit activations, 128 x 128 (two consumer warpgroups) where
 * they give half the SMs a block or more (W4A16 on 6144 x 4096 at M = 256: 96 blocks in 27.4 us
 * against 34.7 for 192 blocks of 128 x 64; 4096 x 14336: 64 blocks in 84 us against 74 for 128 of
 * 128 x 64), else the first preferred shape with a block for nearly every SM, else the shape with the
 * most blocks; where 128 x 128 tiles leave over half the SMs idle, 16-bit activations split K over
 * pairs instead (split_tile). Then the deepest pipeline that fits beside the blocks an SM runs at
 * once, up to 8 stages (6 to 8 beat 4 by 10 to 25% in the same sweeps). */
static void choose_wgmma(const wb_target *t, const wb_format *f, int64_t m, int64_t n, int64_t k, wb_config *c)
{
    /* The warp-specialized TMA pipeline (lower_tma.c) above M = 64 for W8A8 with per-channel and
     * per-token scales and for 16-bit activations: on an H100 (docs/perf.md, 2026-12-05) int8 ran 8-12%
     * faster on it at M = 256 to 16384, W4A8 (e4m3 x int4) 5% and fp8 0-5%, and with its blocks rastered
     * and one lane issuing the copies (2026-12-06, M = 16384) int8 16% and fp8 22%; on the H200
     * (2026-12-06, beside torch) W4A16 2% faster at M = 256, 16% at 1024, 5% at 4096, 6% at 16384.
     * Grouped W8A8 was not measured; fp4 activations are converted by the consumers from a cp.async
     * tile. Decode (M <= 64) splits K, which it does not. */
    int tma_w8a8 = wb_format_w8a8(f) && !f->g && !f->ag, tma_a16 = f->a.bits == 16;
    int tma = (tma_w8a8 || tma_a16) && m > 64 && (t->features & WB_FEAT_TMA) && c->warps_k <= 1 && c->k_slices <= 1;
    int load_asked = c->load != 0;
    if (!c->load)
        c->load = tma ? WB_LOAD_TMA : WB_LOAD_CP_ASYNC;
    int forced_wk = c->warps_k != 0;
    const wb_config asked = *c;
    if (!c->warps_k)
        c->warps_k = 1;
    int64_t sms = t->sm_count_hint;
    /* no wider wgmma than M needs (wgmma forced at small M); fp8 and grouped integer W8A8 hold their
     * sums and a slice's product (two tiles): at most 128 tokens */
    int mt_cap = 1, mt_max = wb_format_w8a8(f) ? wb_format_w8a8_max_mtiles(f) : 32;
    while (8 * mt_cap < m && mt_cap < mt_max)
        mt_cap *= 2;
    wb_config big = *c, best = *c;
    big.m_tiles = c->m_tiles ? c->m_tiles : mt_cap;
    big.warps_n = c->warps_n ? c->warps_n : 8;
    int64_t best_blocks = -1;
    int64_t big_blocks = wgmma_blocks(&big, m, n);
    if (n % (16 * big.warps_n) == 0 &&
        (big_blocks * 2 > 3 * sms || (tma_a16 && big_blocks * 2 > sms && big_blocks <= sms))) {
        best = big;
    } else {
        for (size_t i = 0; i < WB_COUNT(wgmma_shapes); i++) {
            wb_config x = *c;
            x.m_tiles = c->m_tiles ? c->m_tiles : wgmma_shapes[i][0] < mt_cap ? wgmma_shapes[i][0] : mt_cap;
            x.warps_n = c->warps_n ? c->warps_n : wgmma_shapes[i][1];
            if (n % (16 * x.warps_n))
                continue;
            int64_t blocks = wgmma_blocks(&x, m, n);
            if (blocks * 10 >= sms * 9 || (i == 0 && tma_a16 && blocks * 2 >= sms)) {
                best = x;
                break;
            }
            if (blocks > best_blocks)
                best = x, best_blocks = blocks;
        }
    }
    *c = best;
    if (!asked.split_k && !asked.m_tiles && !asked.warps_n && !asked.cluster && !asked.persistent && !load_asked &&
        !forced_wk && tma_a16 && tma && mt_cap >= 16)
        split_tile(t, f, m, n, k, c);
    /* 16-bit activations with one consumer warpgroup (64 channels a block) have no second one to run
     * its MMAs while the first dequantizes: cp.async there. Measured across two H200 runs only
     * (docs/perf.md, 2026-12-06): at M = 256 on 4096 x 14336 and 6144 x 4096 the TMA kernel took 6%
     * and 14% longer than the cp.async one had (0.68x and 0.54x torch f16 against 0.84x and 0.63x). */
    if (!load_asked && tma_a16 && c->load == WB_LOAD_TMA && c->warps_n && c->warps_n < 8)
        c->load = WB_LOAD_CP_ASYNC;
    /* ... and over a long K a second warpgroup taking half of each block tile's K: W4A16 on an H100
     * (2026-12-06, three rounds, docs/perf.md) at M = 256 on 4096 x 14336 in 64.8 us against 72.1 with
     * one, at M = 128 on 8192 x 8192 in 36.7 against 41.6, on 4096 x 14336 in 42.3 against 63.9; at
     * K = 4096 (6144 x 4096, M = 256, sweep) 37 against 35 */
    if (tma_a16 && !forced_wk && c->load == WB_LOAD_CP_ASYNC && c->warps_n == 4 && m > 64 && k >= 8192 &&
        k % (2 * WB_KW) == 0) {
        c->warps_k = 2;
        if (c->split_k > 1 && !split_fits(f, c, k)) /* (a split block's K: two halves of k128 tiles) */
            c->warps_k = 1;
    }
    if (!c->m_tiles)
        c->m_tiles = mt_cap < 4 ? mt_cap : 4;
    if (!c->warps_n)
        c->warps_n = 4;
    /* decode (wgmma at M <= 16: fp8 on sm_90a, or forced): each block's warpgroups split K, up to
     * 24 warps per SM, as the mma.sync kernel's warps do: one warpgroup per 64 channels leaves too
     * few bytes in flight to stream the weights */
    int slice_k = wb_format_w8a8(f) ? 2 * WB_KW : WB_KW;
    while (!forced_wk && m <= 16 && c->load != WB_LOAD_TMA && c->warps_n * c->warps_k * 2 <= 16 &&
           k % (slice_k * c->warps_k * 2) == 0 &&
           wgmma_blocks(c, m, n) * c->warps_n * c->warps_k < 24 * t->sm_count_hint)
        c->warps_k *= 2;
    /* 192-token tiles (wgmma N = 192) on the TMA pipeline where, in whole waves of one block an SM,
     * each SM works through at most 5% more token rows than with the tile they replace, and they
     * still make one and a half waves: fp8 and e4m3 x int4 in place of 128-token tiles, 16-bit
     * activations in place of 256-token ones. Per k128 slice, fp8's 128-token block moves 80 KB
     * through shared memory (160 B a cycle at the MMA rate, against 128 served); the 192-token one
     * moves 104 KB for 1.5 times the work and holds one slice product set (no late loop;
     * docs/perf.md). On an H100 (events, interleaved, two rounds), 192 against 128 tokens: fp8 1.079x
     * at M = 16384 and 1.042x at 4096 on 8192 x 8192, 1.097x at 16384 on 28672 x 4096 (2026-12-07);
     * e4m3 x int4 1.091x and 1.056x; W4A16 1.104x (M = 16384; 2026-12-14). Then in persistent
     * blocks: fp8 1.019x, 1.025x and 1.070x at those three; e4m3 x int4 even (1.003x), so it stays
     * plain (its A registers leave a bias's epilogue no room there: spills). --persistent asked alone
     * takes them too (not for e4m3 x int4). W4A16 in persistent blocks beside its 256-token tiles
     * (H100, three rounds beside torch; docs/perf.md, twenty-ninth session): 1.03x to 1.14x at
     * M = 16384 on the suite, so a row costs 3-12% less and a few more rows pay; 12.5% more did not:
     * at M = 4096 on 4096 x 14336 (6 waves of 192 rows against 4 of 256) 713.4 us against 684.3,
     * where 3% more (8192 x 8192: 11 waves against 8) ran 726.0 against 784.4. */
    int wide_from = tma_w8a8 && wb_format_w8a8_fp8(f) ? 16 : tma_a16 ? 32 : 0;
    int a_regs8 = wide_from == 16 && !wb_w8_smem_operand(f, t->arch); /* e4m3 x int4: not persistent */
    wb_config wide = *c;
    wide.m_tiles = 24;
    if (!asked.m_tiles && !asked.cluster && !asked.split_k && !(a_regs8 && asked.persistent) &&
        c->load == WB_LOAD_TMA && c->m_tiles == wide_from && c->warps_n == 8 &&
        wave_rows(&wide, m, n, sms) * 100 <= wave_rows(c, m, n, sms) * 105 &&
        wgmma_blocks(&wide, m, n) * 2 > 3 * sms) {
        c->m_tiles = 24;
        c->persistent = !a_regs8;
    }
    /* 16-bit activations on 128 x 128 tiles in one wave (no more blocks than SMs, no split): in
     * persistent blocks, each of which walks its one tile. H100 (docs/perf.md, thirty-first session;
     * events, three interleaved rounds): W4A16 at M = 256 on 8192 x 8192 1.064x (49.7 against 52.9 us),
     * on 6144 x 4096 1.024x; the sweep of every wgmma config had put them first there too */
    if (tma_a16 && !asked.persistent && !asked.cluster && !asked.m_tiles && c->split_k < 2 &&
        !c->persistent && c->load == WB_LOAD_TMA && c->m_tiles == 16 && c->warps_n == 8 &&
        wgmma_blocks(c, m, n) <= sms)
        c->persistent = 1;
    if (!c->stages)
        c->stages = wgmma_stages(t, f, c, m, n);
    /* The TMA pipeline in clusters of two wherever the channel tiles pair up and the activation tile
     * halves into whole swizzle atoms: each block reads a quarter (fp8, int8) to a third (16-bit
     * activations) fewer bytes from L2. On an H100 (2026-12-06, docs/perf.md) fp8 gained 6-7% at
     * M = 4096 and 16384, W4A16 6%, int8 0-3%; with fewer blocks than SMs they lost or tied (W4A16 at
     * M = 256 on 6144 x 4096: 96 blocks, 29.2 us against 27.4; on 8192 x 8192, 128 blocks: 55.8 against
     * 54.3 in one run, 55.5 against 56.4 in another; 224 blocks on 28672 x 4096: even). cluster = 1
     * (forced) keeps single blocks. */
    if (!c->cluster && c->split_k < 2 && c->load == WB_LOAD_TMA && c->m_tiles % 2 == 0 &&
        n % (2 * 16 * c->warps_n) == 0 && wgmma_blocks(c, m, n) >= sms)
        c->cluster = 2;
}

/* tcgen05 (sm_100a / sm_103a, --mma tcgen05): blocks of 128 channels (the MMA's M) by the widest token
 * tile up to 256 that still gives every SM a block, then the deepest pipeline that fits, 3 to 8 stages.
 * Not measured on a GPU yet: no Blackwell GPU was available to this project (docs/architecture.md). */
static void choose_tcgen05(const wb_target *t, const wb_format *f, int64_t m, int64_t n, wb_config *c)
{
    if (!c->load)
        c->load = WB_LOAD_CP_ASYNC;
    if (!c->warps_n)
        c->warps_n = WB_TC_M / 16;
    if (!c->warps_k)
        c->warps_k = 1;
    if (!c->m_tiles) {
        int mt = 2;
        while (8 * mt < m && mt < 32)
            mt *= 2;
        while (mt > 2 && n / WB_TC_M * ((m + 8 * mt - 1) / (8 * mt)) < t->sm_count_hint)
            mt /= 2;
        /* ... at most 128 tokens with W8A8 groups (their f32 sums are in registers), and room for 3
         * stages (s8 widened to f16 keeps 16-bit copies of both tiles) */
        if (wb_format_w8a8(f) && (f->g || f->ag) && mt > 16)
            mt = 16;
        for (;; mt /= 2) {
            wb_config three = *c;
            three.m_tiles = mt, three.stages = 3;
            wb_layout lay;
            wb_layout_get(f, &three, t->arch, &lay);
            if (mt == 2 || lay.smem <= t->smem_max)
                break;
        }
        c->m_tiles = mt;
    }
    if (!c->stages) {
        wb_config one = *c;
        one.stages = 1;
        wb_layout lay;
        wb_layout_get(f, &one, t->arch, &lay);
        int64_t fit = (t->smem_max - (lay.smem - lay.stage)) / lay.stage;
        c->stages = fit > 8 ? 8 : fit < 3 ? 3 : (int)fit;
    }
}

/* Where a grid of `blocks` fills its waves (within 10%), the fewest stages from c's (3 or 4) to 8 that
 * leave an SM no room for a block beyond its share of the wave; else the stages stay. A kernel that
 * lets the next one in at the top (PDL at one m-tile) and holds few registers otherwise shares its SMs
 * with the next kernel's early blocks: per channel at M = 1 on 8192 x 8192 (H100, docs/perf.md)
 * W4A8-fp8 ran 14.8 us at 6 stages of 12 KB (three blocks of 16 warps an SM) and 11.8 at 7, s8 x int4
 * 14.1 at 4 and 12.3 at 7; where a wave is not filled the extra room serves (6144 x 4096). */
static void keep_extra_blocks_out(const wb_target *t, const wb_format *f, wb_config *c, int64_t blocks)
{
    int64_t sms = t->sm_count_hint, per_sm = (blocks + sms - 1) / sms;
    if (blocks * 10 < per_sm * sms * 9)
        return;
    for (; c->stages < 8; c->stages++) {
        wb_layout lay;
        wb_layout_get(f, c, t->arch, &lay);
        if (t->smem_max / (lay.smem + 1024) <= per_sm)
            break;
    }
}

/* W4A8-fp8 at decode on the f16 mma.sync (wb_w4a8_f16), from `warble bench --sweep` of its ~98 configs
 * on the four suite shapes at M = 1 and 16, per channel and in groups of 128 (H100, docs/perf.md):
 * the picks are within 5% of the best on 12 of the 16, at most 17% behind. Two warps along N wherever
 * blocks of 32 channels give every SM one (6144 x 4096 in groups at M = 1: 7.7 us against 9.5 for
 * one), and at two m-tiles K split up to 32 warps an SM (the 16-bit kernel's cap of 24 cost 15% on
 * 8192 x 8192). Stages: 3, the fastest or within 2% with group scales on 7 of 8 shapes (deeper ones
 * lost up to 13%); per channel at one m-tile, whose kernel holds fewer registers (40) and lets the
 * next kernel in at the top (lower_kloop), where the grid fills its waves, the fewest that leave no
 * room for a block beyond the SM's share: a third block of 16 warps beside the two of a wave ran
 * 8192 x 8192 at M = 1 in 14.8 us, two alone in 11.8 (where a wave is not filled, the extra room
 * served: 6144 x 4096). At two m-tiles the next kernel comes in after the K loop, and blocks of 16
 * warps take 3 stages per channel too: 13.84 us on 8192 x 8192 at M = 16 against 14.35 at 4 and
 * 15.30 at the residency rule's 5 (H100, `--sweep`, one sample a config, docs/perf.md). Smaller
 * blocks (28672 x 4096: 4 warps) and grids of at most one block an SM keep the rule's stages: H100,
 * events, three rounds interleaved (docs/perf.md, thirty-seventh session): 27.1 us at 7 against 28.5
 * at 3 on 28672 x 4096, 13.0 at 8 against 18.4 at 3 on 4096 x 14336 (128 blocks of 16 warps).
 * Forced fields stay. */
static void tune_w4a8_f16(const wb_target *t, const wb_format *f, const wb_config *asked, int64_t m, int64_t n,
                          int64_t k, wb_config *c)
{
    int64_t sms = t->sm_count_hint, mblocks = token_tiles(c, m) * (c->split_k > 1 ? 2 : 1); /* k: a block's */
    if (!asked->warps_n && n % 32 == 0 && (c->m_tiles > 1 || n / 32 * mblocks >= sms) &&
        (!asked->warps_k || asked->warps_k <= 8)) { /* 16 warps a block at most */
        c->warps_n = 2;
        if (c->warps_k > 8)
            c->warps_k = 8;
    }
    int64_t blocks = n / (16 * c->warps_n) * mblocks;
    if (c->m_tiles > 1 && !asked->warps_k) {
        c->warps_k = 8;
        while (c->warps_k > 1 && (k % (WB_KW * c->warps_k) || blocks * c->warps_n * c->warps_k > 32 * sms))
            c->warps_k /= 2;
        /* scale groups along K where that split leaves an SM under 30 warps: half the warps, each taking
         * two slices of a stage (one group: legalize) and scaling their product once. H100, events,
         * two rounds (docs/perf.md): 20.0 against 23.0 us on 4096 x 14336 (15.5 warps an SM), 8.70
         * against 9.57 on 6144 x 4096 (23), 27.8 against 28.1 on 28672 x 4096 (27); at 31 warps an SM
         * (8192 x 8192) 17.52 against 17.30, so it stays there. */
        if ((f->g || f->ag) && !asked->k_slices && c->warps_k > 1 && wb_k_slices_share_scales(f, 2) &&
            blocks * c->warps_n * c->warps_k < 30 * sms)
            c->warps_k /= 2, c->k_slices = 2;
    }
    if (asked->stages)
        return;
    c->stages = 3;
    if (!f->g && !f->ag && (c->m_tiles == 1 || c->warps_n * c->warps_k < 16 || blocks <= sms))
        keep_extra_blocks_out(t, f, c, blocks);
}

/* The heuristic picks wgmma where the target has it, M > 64 and no forced field rules it out. Up to
 * M = 64 the split-K mma.sync kernel below was faster on 3 of the 4 suite shapes (H200, docs/perf.md):
 * wgmma's per-iteration barrier, copies and dequant outweigh an MMA of 32 or 64 tokens. */
static int wants_wgmma(const wb_target *t, const wb_format *f, const wb_config *c, int64_t m, int64_t n, int64_t k)
{
    /* W8A8's wgmma kernel takes K in k128 slices */
    return (t->features & WB_FEAT_WGMMA) && m > 64 && n % 64 == 0 && (!wb_format_w8a8(f) || k % 128 == 0) &&
           !wb_format_w4a4(f) &&
           (c->load == WB_LOAD_AUTO || c->load == WB_LOAD_CP_ASYNC || c->load == WB_LOAD_TMA) && c->warps_k <= 1 &&
           (c->warps_n == 0 || c->warps_n == 4 || c->warps_n == 8);
}

wb_status wb_config_choose(const wb_format *f, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config *c)
{
    const wb_target *t = wb_target_get(arch);
    if (!t || !f || !c)
        return wb_fail(WB_ERR_INVALID, "wb_config_choose: bad argument");
    wb_status ks = wb_legalize_k_slices(c);
    if (ks)
        return ks;
    const wb_config asked = *c;
    if ((c->persistent || c->cluster > 1) && !c->load) /* the persistent and cluster kernels are the TMA pipeline's */
        c->load = WB_LOAD_TMA;
    /* TMA loads exist only in the wgmma kernel: asking for them asks for it */
    int tma_wgmma = c->load == WB_LOAD_TMA && (t->features & WB_FEAT_WGMMA);
    /* fp8 W8A8 where mma.sync fp8 is only emulated and wgmma native (sm_90a): wgmma at every M, but for
     * W4A8 with int4 weights at decode (M <= 16), whose mma.sync kernel widens both operands to f16 */
    int fp8_wgmma = wb_format_w8a8_fp8(f) && wb_isa_get(arch, WB_ISA_MMA_FP8) != WB_ISA_NATIVE &&
                    wb_isa_get(arch, WB_ISA_WGMMA_FP8) == WB_ISA_NATIVE && !(wb_w4a8_f16(f, arch) && m <= 16);
    if (!c->mma)
        c->mma = fp8_wgmma || (!c->batch_invariant && (tma_wgmma || wants_wgmma(t, f, c, m, n, k))) ? WB_MMA_WGMMA
                                                                                              : WB_MMA_SYNC;
    if (c->mma == WB_MMA_WGMMA) {
        choose_wgmma(t, f, m, n, k, c);
        return WB_OK;
    }
    if (c->mma == WB_MMA_TCGEN05) {
        choose_tcgen05(t, f, m, n, c);
        return WB_OK;
    }
    if (!c->load)
        c->load = t->features & WB_FEAT_CP_ASYNC ? WB_LOAD_CP_ASYNC : WB_LOAD_LDG;
    /* without cp.async the whole tile lives in registers on its way to shared memory: stay smaller */
    int mt_max = c->load == WB_LOAD_CP_ASYNC ? 8 : 4;
    /* up to M = 64, 32-token blocks: at M = 64 on 8192 x 8192 they ran in 38 us against 51 us for
     * 64-token blocks (H200 sweep, docs/perf.md): twice the blocks for the same warps */
    if (!c->m_tiles)
        c->m_tiles = m <= 8 ? 1 : m <= 16 ? 2 : m <= 64 ? 4 : mt_max;
    /* M = 1: the matrix-vector kernel where it differs (wb_config.gemv) */
    if (!c->gemv && m == 1 && wb_gemv_applies(f, c))
        c->gemv = 1;
    int small = m <= 64, decode = m <= 16;
    /* batch-invariant: the K split, and so the order of the f32 sums, depends on K alone */
    if (c->batch_invariant && !c->warps_k)
        c->warps_k = k % (4 * WB_KW) == 0 ? 4 : k % (2 * WB_KW) == 0 ? 2 : 1;
    int forced_wk = c->warps_k != 0, forced_stages = c->stages != 0 && c->load == WB_LOAD_CP_ASYNC;
    if (!c->stages)
        c->stages = c->load == WB_LOAD_CP_ASYNC ? 4 : 1;
    /* split_k (forced): each tile's pair of blocks counts twice, and each takes half of K */
    int splits = c->split_k > 1 ? 2 : 1;
    int64_t mblocks = token_tiles(c, m) * splits, kb = k / splits;
    if (!c->warps_n) {
        /* decode (M <= 16): narrow blocks, so that there are enough of them for every SM (two warps
         * along N from nearly two blocks an SM: 256 on the 132 SMs of an H100/H200, where they ran
         * 11 to 15% faster than one at M = 1 for int5, int6 and int8 and 2 to 4% at M = 16 for int4
         * on 8192 x 8192, docs/perf.md);
         * above that, wide blocks share each activation tile among more warps (2.5x at M = 64 on the
         * H200) */
        c->warps_n = decode ? 2 : 4;
        while (c->warps_n > 1 && (n % (16 * c->warps_n) || c->warps_n * c->warps_k > 16 || /* a forced split */
                                  (decode && n / (16 * c->warps_n) * mblocks * 10 < 19 * t->sm_count_hint)))
            c->warps_n /= 2;
        /* one m-tile, under two blocks an SM: two warps along N only where the SMs hold the wave's blocks
         * and no more. Where their stages leave room for another block (the narrow int2 and int3, with
         * 3 to 5 stages), the next kernel's blocks come in early and run beside them: 33 to 35% slower
         * than one warp at M = 1 on 8192 x 8192 (H100, docs/perf.md) */
        int64_t blocks2 = n / 32 * mblocks;
        if (decode && c->m_tiles == 1 && c->warps_n == 2 && blocks2 < 2 * t->sm_count_hint) {
            wb_config two = asked;
            two.warps_n = 2;
            int64_t wave = (blocks2 + t->sm_count_hint - 1) / t->sm_count_hint;
            if (wb_config_choose(f, arch, m, n, k, &two) == WB_OK && resident_blocks(t, f, &two) <= wave) {
                *c = two;
                return WB_OK;
            }
            c->warps_n = 1;
        }
    }
    /* two m-tiles (9 <= M <= 16) on 16-bit activations where blocks of one warp along N stay (N too
     * small for two), over a long K: blocks of two warps in pairs splitting K instead (--split-k 2),
     * so that each block reads the 16 tokens' activations for 32 channels, not 16, where each half of
     * K still takes stages of 8 k64 slices (4 warps of two). H100 (docs/perf.md): 13.7 against 15.2 us
     * on 4096 x 14336; on 4096 x 11008, whose halves take stages of 2 warps of one slice, 16.0 against
     * 13.7; on 6144 x 4096 (K = 4096) the best split config ran 7.3 against the pick's 7.1, and on
     * 8192 x 8192 and 28672 x 4096, which have two warps along N, four with the split did not beat
     * them (14.4 against 14.3, 24.0 against 23.4). */
    if (decode && c->m_tiles == 2 && c->warps_n == 1 && !asked.warps_n && !asked.split_k && k >= 8192 &&
        n % 32 == 0 && (t->features & WB_FEAT_CLUSTER) && !c->batch_invariant && !wb_format_w8a8(f) &&
        !wb_format_fp4_acts(f)) {
        wb_config pair = asked;
        pair.split_k = 2, pair.warps_n = 2;
        if (wb_config_choose(f, arch, m, n, k, &pair) == WB_OK && split_fits(f, &pair, k) &&
            pair.warps_k * wb_config_ks(&pair) >= 8) {
            *c = pair;
            return WB_OK;
        }
    }
    if (!c->warps_k) {
        /* split each block's K among warps: a decode GEMM is bound by the latency of each warp's
         * dequant-and-MMA chain, so it wants 24 or more warps per SM, from blocks that all stay
         * resident at once (a second wave costs more than the warps gain) */
        int want = small ? 2 : 1;
        if (decode) {
            /* two m-tiles (9 <= M <= 16, no k-slices below): at most 24 warps per SM, the split
             * halved down to 2 to stay there (28672 x 4096 at M = 16: 2 warps 13% faster than 4) */
            int64_t blocks = n / (16 * c->warps_n) * mblocks, sms = t->sm_count_hint;
            /* per: with the cap, the warps of the doubled split are checked, not the current one's */
            int cap24 = c->m_tiles > 1, per = c->warps_n * (cap24 ? 2 : 1);
            for (want = 4; cap24 && want > 2 && blocks * c->warps_n * want > 24 * sms; want /= 2)
                ;
            for (; want < 16 && c->warps_n * want < 16 && blocks * per * want < 24 * sms; want *= 2) {
                wb_config wider = *c;
                wider.warps_k = want * 2;
                if (kb % (WB_KW * wider.warps_k) || blocks > resident_blocks(t, f, &wider) * sms)
                    break;
            }
        }
        c->warps_k = 1;
        for (int wk = want; wk > 1; wk /= 2)
            if (kb % (WB_KW * wk) == 0) {
                c->warps_k = wk;
                break;
            }
    }
    /* one m-tile (M <= 8) on 16-bit activations: half the warps, each taking two k64 slices of a stage
     * (the same K per stage; half the barriers, copy issue and loop control per slice), as deep a
     * pipeline as the blocks of one SM hold, 3 to 5 stages. On the four suite shapes at M = 1 this
     * ran 6 to 16% faster than split K alone, within 6% of the best of 90 to 166 configs (H200 sweeps,
     * docs/perf.md); two m-tiles keep their warps instead (below). */
    int slices = !c->k_slices && c->m_tiles == 1 && decode && !forced_wk && !c->batch_invariant &&
                 c->warps_k >= 4 && !wb_format_w8a8(f) && !wb_format_fp4_acts(f);
    /* codes of 2 bits or fewer: four slices a warp (twice the K a stage), 3 stages. Their dequant costs
     * as many instructions a weight as int4's on half the bytes, so a warp wants more independent work
     * per barrier: H100 sweeps at M = 1 (docs/perf.md) ran int2 in 8.40 (two warps along N, 3 stages;
     * 8.66 at 4, which keep a third block out) against 9.11 us on 8192 x 8192 and 13.28 against 15.37
     * on 28672 x 4096, the best of either sweep, as the tenth session's H200 sweeps had found
     * (8.36 / 13.24 against 8.73 / 13.90); one warp along N at 3 stages ran 11.8 there */
    int four = slices && f->w.bits <= 2 && kb % (WB_KW * (c->warps_k / 2) * 4) == 0;
    if (slices) {
        c->warps_k /= 2;
        c->k_slices = four ? 4 : 2;
    }
    if (slices && !forced_stages && c->load == WB_LOAD_CP_ASYNC) {
        wb_layout one;
        c->stages = 1;
        wb_layout_get(f, c, t->arch, &one);
        int64_t blocks = n / (16 * c->warps_n) * mblocks, per_sm = (blocks + t->sm_count_hint - 1) / t->sm_count_hint;
        int64_t fit = t->smem_max / (per_sm * (one.stage + 1024)); /* 1 KB a block the SM keeps */
        c->stages = fit > 5 ? 5 : fit < 3 ? 3 : (int)fit;
        /* 3 (gemv: 4), or where the grid fills its waves the fewest that keep a block beyond them out. The
         * gemv kernels hold 70 registers to the others' 94, so at 3 stages a third block of 8 warps fits
         * an SM beside the wave's two on 8192 x 8192, and int2 ran 9.9 us there against 7.9 at 4; on
         * 28672 x 4096 4 stages ran 12.8 against 13.1 (H100, docs/perf.md) */
        if (four) {
            c->stages = c->gemv > 0 ? 4 : 3;
            keep_extra_blocks_out(t, f, c, blocks);
        }
    }
    /* two m-tiles (9 <= M <= 16) on 16-bit activations, K split 4 warps or more: the same warps, each
     * taking two slices of a stage (twice the K a stage), 3 stages, where two blocks of it still fit
     * an SM. H100 (docs/perf.md): 14.3 against 15.3 us on 8192 x 8192 and 7.2 against 7.5 on
     * 6144 x 4096, the best of the 83 and 52 configs of two sweeps; on 4096 x 14336 its 8 warps would
     * have to halve to fit (16.3 against 15.2 us), so it stays. The tenth session's H200 sweeps had not
     * found it worth taking. */
    if (!c->k_slices && c->m_tiles == 2 && decode && !forced_wk && !c->batch_invariant && c->warps_k >= 4 &&
        kb % (2 * WB_KW * c->warps_k) == 0 && !wb_format_w8a8(f) && !wb_format_fp4_acts(f)) {
        wb_config two = *c;
        two.k_slices = 2;
        two.stages = forced_stages ? c->stages : 3;
        wb_layout lay2;
        wb_layout_get(f, &two, t->arch, &lay2);
        if (2 * lay2.smem <= t->smem_max)
            *c = two;
    }
    if (!c->k_slices)
        c->k_slices = 1;
    /* fit at least two blocks per SM: fewer stages down to 3, then less split K, then 2 stages */
    wb_layout lay;
    for (;;) {
        wb_layout_get(f, c, t->arch, &lay);
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
    if (decode && wb_w4a8_f16(f, arch))
        tune_w4a8_f16(t, f, &asked, m, n, kb, c);
    else if (c->m_tiles == 1 && decode && wb_format_w8a8(f) && wb_type_w4(f->w) && !f->g && !f->ag &&
             !forced_stages && (t->features & WB_FEAT_GRIDDEP)) { /* W4A8 s8 per channel; int8 streams at
                                                                     the copy's speed already */
        c->stages = 3;
        keep_extra_blocks_out(t, f, c, n / (16 * c->warps_n) * mblocks);
    }
    return WB_OK;
}

wb_status wb_kernel_check_shape(const wb_format *f, const wb_config *c, int64_t m, int64_t n, int64_t k)
{
    wb_status s = wb_format_check_shape(f, m, n, k);
    if (s)
        return s;
    wb_layout lay;
    wb_layout_get(f, c, WB_ARCH_SM90A, &lay); /* bn and bk are the same on every target */
    int bn = lay.bn, bk = lay.bk; /* bk: k64 per warp slice, k128 for W8A8 on wgmma */
    if (n % 16 || k % WB_KW)
        return wb_fail(WB_ERR_INVALID, "N must be a multiple of 16 and K a multiple of 64 (got N=%lld, K=%lld)",
                       (long long)n, (long long)k);
    if (c->gemv > 0 && m != 1)
        return wb_fail(WB_ERR_INVALID, "a gemv config (a matrix-vector kernel) takes M = 1 only (got M=%lld)",
                       (long long)m);
    if (n % bn || k % bk)
        return wb_fail(WB_ERR_INVALID, "this config (warps_n=%d, warps_k=%d, k_slices=%d) needs N a multiple of %d "
                                       "and K a multiple of %d (got N=%lld, K=%lld)", c->warps_n, c->warps_k,
                       lay.ks, bn, bk, (long long)n, (long long)k);
    if (c->split_k > 1 && !split_fits(f, c, k))
        return wb_fail(WB_ERR_INVALID, "--split-k 2 needs K a multiple of %d (two halves of whole block tiles%s; "
                                       "got K=%lld)", 2 * bk, f->g > 0 ? " and scale groups" : "", (long long)k);
    if (c->cluster > 1 && n % (2 * bn)) /* the blocks of a cluster take neighbouring channel tiles */
        return wb_fail(WB_ERR_INVALID, "--cluster %d with warps_n=%d needs N a multiple of %d (two channel tiles of "
                                       "%d; got N=%lld)", c->cluster, c->warps_n, 2 * bn, bn, (long long)n);
    /* s8 W8A8 sums are exact s32: K products of at most 128 x 2^(B-1) stay below 2^31 only for
     * K < 2^(25-B): 2^17 with int8 weights, 2^21 with int4; e2m1 widens to at most 12 (2 x 6): 2^20
     * (fp8 W8A8 sums are f32: no such limit) */
    int64_t kmax = f->w.kind == WB_KIND_FLOAT ? 1ll << 20 : 1ll << (25 - f->w.bits);
    char wn[8];
    if (wb_format_w8a8(f) && !wb_format_w8a8_fp8(f) && !f->g && !f->ag && k >= kmax) /* grouped: f32 sums */
        return wb_fail(WB_ERR_INVALID, "a=s8 with w=%s needs K below %lld (its s32 sums could overflow; got "
                                       "K=%lld)", wb_type_name(f->w, wn), (long long)kmax, (long long)k);
    if (m * n >= (1ll << 32) || n * k >= (1ll << 34) || m >= (1ll << 31))
        return wb_fail(WB_ERR_INVALID, "shape too large: M*N must be below 2^32 and N*K below 2^34");
    return WB_OK;
}

int wb_config_equal(const wb_config *a, const wb_config *b)
{
    return a->m_tiles == b->m_tiles && a->warps_n == b->warps_n && a->warps_k == b->warps_k &&
           a->stages == b->stages && a->load == b->load && a->mma == b->mma &&
           a->batch_invariant == b->batch_invariant && wb_config_ks(a) == wb_config_ks(b) &&
           a->persistent == b->persistent && (a->cluster > 1 ? a->cluster : 1) == (b->cluster > 1 ? b->cluster : 1) &&
           (a->split_k > 1) == (b->split_k > 1) && (a->gemv > 0) == (b->gemv > 0);
}

int wb_config_print(const wb_config *c, char *buf, size_t size)
{
    char ks[16] = "", cl[24] = "";
    if (wb_config_ks(c) > 1)
        snprintf(ks, sizeof ks, ",ks=%d", wb_config_ks(c));
    if (c->cluster > 1)
        snprintf(cl, sizeof cl, ",cluster=%d", c->cluster);
    return snprintf(buf, size, "mt=%d,wn=%d,wk=%d,stages=%d,load=%s,mma=%s%s%s%s%s%s%s", c->m_tiles, c->warps_n,
                    c->warps_k, c->stages, wb_load_name(c->load), wb_mma_name(c->mma), ks,
                    c->batch_invariant ? ",bi=1" : "", c->persistent ? ",persistent=1" : "", cl,
                    c->split_k > 1 ? ",split_k=2" : "", c->gemv > 0 ? ",gemv=1" : "");
}

wb_status wb_kernel_dims(const wb_format *f, wb_arch arch, const wb_config *c, int64_t m, int64_t n, int64_t k,
                         wb_launch_dims *d)
{
    (void)k;
    wb_layout lay;
    wb_layout_get(f, c, arch, &lay);
    d->grid[0] = (unsigned)(n / lay.bn * (c->split_k > 1 ? 2 : 1)); /* split_k: a pair of blocks a tile */
    d->grid[1] = (unsigned)((m + lay.bm - 1) / lay.bm);
    if (c->cluster == 4) { /* quads of blocks along x, each on two channel tiles of two token tiles */
        d->grid[0] *= 2;
        d->grid[1] = (d->grid[1] + 1) / 2;
    }
    d->grid[2] = 1;
    if (c->persistent) { /* a block per SM at most (the runtime takes the device's count), tiles walked;
                            cluster 2: pairs of blocks on pairs of tiles */
        int pair = c->cluster > 1 ? 2 : 1;
        int64_t tiles = (int64_t)d->grid[0] * d->grid[1], sms = wb_target_get(arch)->sm_count_hint / pair * pair;
        d->grid[0] = (unsigned)(tiles < sms ? tiles : sms);
        d->grid[1] = 1;
    }
    d->block[0] = (unsigned)lay.threads;
    d->block[1] = d->block[2] = 1;
    d->smem_bytes = (unsigned)lay.smem;
    if (d->grid[1] > 65535)
        return wb_fail(WB_ERR_INVALID, "M=%lld needs more than 65535 row blocks", (long long)m);
    return WB_OK;
}
