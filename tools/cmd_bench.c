/* `warble bench`: time the GEMM of a format on the GPU, per M (docs BENCH.md). R layers, each with
 * its own device buffers of one packing of random weights, together over 256 MB (4 x the H200's L2),
 * are cycled through so the weights come from device memory; wb_gpu_time takes the median of 15
 * event-timed batches of back-to-back calls.
 * --sweep also times every legal config (wgmma with both load paths, cp.async and TMA, the latter in
 * clusters of two where the tiles pair up, in single blocks and in persistent blocks, and pairs of
 * blocks splitting K) and reports the best; choices given on the command line (--m-tiles, --warps-n,
 * --warps-k, --k-slices, --stages, --load, --cluster, --split-k, --persistent) stay fixed; --sweep
 * --list --arch prints them, no GPU needed. A swept config is first probed with one call per layer;
 * one slower than SWEEP_PRUNE x the best so far in two probes running is reported as "pruned" with
 * that probe's time and not timed fully (at M = 16384 a full timing of a small-tile config took tens
 * of seconds). --dispatch also times the host side of a wb_layer_gemm call (issue to return, no
 * synchronization inside a batch). */
#include "tools/cli.h"

#include <stdlib.h>
#include <time.h>
#include <string.h>

#define MAX_LAYERS 64
#define L2_BYTES_X4 (256.0 * 1024 * 1024)
#define REPS 15
#define WARMUP 3
#define SWEEP_PRUNE 1.3

typedef struct bench {
    const cli_args *args;
    wb_format f;
    char spec[512];
    wb_gpu *gpu;
    wb_arch arch;
    wb_layer *layer[MAX_LAYERS];
    int nlayers;
    wb_devptr a, a_scale, a_global, out; /* quantized activations: their scales (and ags=1 tensor scale), else 0 */
    int64_t m;       /* current M */
    int next;        /* next layer to call */
    wb_status err;   /* first failure inside the timed callback */
    char err_msg[512];
} bench;

/* The timed callback: one GEMM on the next layer. */
static void bench_call(void *arg)
{
    bench *b = arg;
    wb_layer *l = b->layer[b->next];
    b->next = (b->next + 1) % b->nlayers;
    wb_status s = b->a_scale ? wb_layer_gemm_qg(l, b->m, b->a, b->a_scale, b->a_global, b->out, NULL)
                             : wb_layer_gemm(l, b->m, b->a, b->out, NULL);
    if (s != WB_OK && b->err == WB_OK) {
        b->err = s;
        snprintf(b->err_msg, sizeof b->err_msg, "%s", wb_last_error());
    }
}

static int create_layers(bench *b, double weight_bytes)
{
    const cli_args *a = b->args;
    int r = (int)(L2_BYTES_X4 / weight_bytes) + 1;
    b->nlayers = r > MAX_LAYERS ? MAX_LAYERS : r;
    cli_host h;
    int rc = cli_host_alloc(&h, &b->f, 1, a->n, a->k);
    if (rc)
        return rc;
    cli_rng rng = {0x5eed0000u};
    cli_host_random_weights(&h, &rng);
    /* one packing, uploaded into every layer's own buffers: L2 holds addresses, not contents, so the
     * rotation streams the weights from DRAM all the same, and packing once per layer took most of a
     * short run's time (0.7 s a layer of 8192 x 8192 int4 on one core) */
    wb_packed p;
    wb_arch arch = wb_gpu_arch(b->gpu);
    wb_status s = wb_pack_weights(&b->f, arch, a->n, a->k, &h.hw, &p);
    if (s != WB_OK)
        rc = cli_lib_fail(s, "wb_pack_weights");
    for (int i = 0; i < b->nlayers && !rc; i++)
        if ((s = wb_layer_create_packed(b->gpu, &b->f, arch, a->n, a->k, &p, &b->layer[i])) != WB_OK)
            rc = cli_lib_fail(s, "wb_layer_create_packed");
    wb_packed_free(&p);
    cli_host_free(&h);
    return rc;
}

/* Time the current config at b->m; returns 0 and the median in *us, or an exit status. */
static int time_one(bench *b, double *us)
{
    int inner = b->nlayers * (b->nlayers >= 100 ? 1 : (100 + b->nlayers - 1) / b->nlayers);
    b->err = WB_OK;
    b->next = 0;
    wb_status s = wb_gpu_time(b->gpu, bench_call, b, WARMUP * b->nlayers, REPS, inner, us);
    if (b->err != WB_OK)
        return cli_fail(cli_status_exit(b->err), "wb_layer_gemm: %s", b->err_msg);
    if (s != WB_OK)
        return cli_lib_fail(s, "wb_gpu_time");
    return 0;
}

/* A sweep's first look at the current config: one call per layer after one warm-up round, in one batch. */
static int probe_one(bench *b, double *us)
{
    b->err = WB_OK;
    b->next = 0;
    wb_status s = wb_gpu_time(b->gpu, bench_call, b, b->nlayers, 1, b->nlayers, us);
    if (b->err != WB_OK)
        return cli_fail(cli_status_exit(b->err), "wb_layer_gemm: %s", b->err_msg);
    if (s != WB_OK)
        return cli_lib_fail(s, "wb_gpu_time");
    return 0;
}

static int set_config(bench *b, const wb_config *cfg)
{
    for (int i = 0; i < b->nlayers; i++) {
        wb_status s = wb_layer_set_config(b->layer[i], cfg);
        if (s != WB_OK)
            return cli_lib_fail(s, "wb_layer_set_config");
    }
    return 0;
}

static void report(const bench *b, const wb_config *cfg, double us, const char *tag)
{
    const cli_args *a = b->args;
    double bytes = cli_gemm_bytes(&b->f, b->m, a->n, a->k, NULL);
    double tbps = bytes / (us * 1e-6) / 1e12;
    double tflops = 2.0 * (double)b->m * (double)a->n * (double)a->k / (us * 1e-6) / 1e12;
    char cs[160];
    wb_config_print(cfg, cs, sizeof cs);
    if (cli_has(a, O_JSON))
        printf("{\"spec\":\"%s\",\"arch\":\"%s\",\"gpu\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
               "\"us\":%.3f,\"tbps\":%.4f,\"tflops\":%.3f,\"config\":\"%s\",\"layers\":%d,"
               "\"kind\":\"%s\"}\n",
               b->spec, wb_arch_name(b->arch), wb_gpu_name(b->gpu), (long long)b->m, (long long)a->n,
               (long long)a->k, us, tbps, tflops, cs, b->nlayers, tag);
    else
        printf("%-6s m=%-6lld n=%lld k=%lld  %10.2f us  %6.3f TB/s  %8.2f TFLOP/s  %s\n", tag,
               (long long)b->m, (long long)a->n, (long long)a->k, us, tbps, tflops, cs);
    fflush(stdout);
}

/* Is this forced config legal here (the library decides)? Completes it in place. */
static int config_legal(bench *b, wb_config *cfg)
{
    const cli_args *a = b->args;
    if (wb_config_choose(&b->f, b->arch, b->m, a->n, a->k, cfg) != WB_OK ||
        wb_kernel_check_shape(&b->f, cfg, b->m, a->n, a->k) != WB_OK)
        return 0;
    char *ptx = NULL;
    wb_status s = wb_kernel_ptx(&b->f, b->arch, cfg, 0, &ptx);
    free(ptx);
    return s == WB_OK;
}

/* Every legal config a sweep tries, in order, each passed to visit:
 * both MMAs, the tile, warps, stages and k-slices, wgmma's load paths (cp.async, TMA as the heuristic
 * takes it, TMA in single blocks), pairs of blocks splitting K (--split-k 2) beside mma.sync's
 * kernel and beside each of wgmma's first two, and TMA in persistent blocks; at M = 1, each gemv
 * kernel and the same config without it. Choices given on the command line stay fixed. */
static void sweep_each(bench *b, void (*visit)(bench *, const wb_config *, void *), void *ctx)
{
    static const int mmas[] = {WB_MMA_SYNC, WB_MMA_WGMMA}, mts[] = {1, 2, 4, 8, 16, 24, 32}, wns[] = {1, 2, 4, 8},
                     wks[] = {1, 2, 4, 8, 16}, kss[] = {1, 2, 4};
    /* wgmma's load paths: cp.async, TMA as the heuristic takes it (clusters of two where the tiles pair
     * up), TMA in single blocks; then the first two split along K; then TMA in persistent blocks */
    enum { LOAD_PATHS = 6 };
    static const int loads[LOAD_PATHS] = {WB_LOAD_CP_ASYNC, WB_LOAD_TMA, WB_LOAD_TMA,
                                          WB_LOAD_CP_ASYNC, WB_LOAD_TMA, WB_LOAD_TMA},
                     clusters[LOAD_PATHS] = {0, 0, 1, 0, 0, 0}, splits[LOAD_PATHS] = {0, 0, 0, 2, 2, 0},
                     persists[LOAD_PATHS] = {0, 0, 0, 0, 0, 1};
    const wb_config *forced = &b->args->cfg; /* a choice given on the command line is not swept */
    int tried = 0;
    for (int mi = 0; mi < 2; mi++)
    for (int i = 0; i < (int)(sizeof mts / sizeof mts[0]); i++)
        for (int j = 0; j < 4; j++)
            for (int q = 0; q < 5; q++)
                for (int st = 1; st <= 8; st++)
                for (int ki = 0; ki < 3; ki++)
                for (int li = 0; li < LOAD_PATHS; li++) { /* wgmma: every load path (TMA is wgmma's only) */
                    wb_config cfg = *forced;
                    if ((forced->mma && mi) || (forced->m_tiles && i) || (forced->warps_n && j) ||
                        (forced->warps_k && q) || (forced->stages && st > 1) || (forced->k_slices && ki) ||
                        (forced->load && li != 0 && li != 3 && li != 5) || (forced->cluster && li == 2) ||
                        (forced->split_k && (li == 3 || li == 4)) || (forced->persistent && li == 5))
                        continue;
                    int mma = forced->mma ? forced->mma : mmas[mi];
                    if (mma == WB_MMA_WGMMA) {
                        if (!forced->load)
                            cfg.load = loads[li];
                        if (!forced->cluster)
                            cfg.cluster = clusters[li];
                        if (!forced->split_k)
                            cfg.split_k = splits[li];
                        if (!forced->persistent)
                            cfg.persistent = persists[li];
                    } else if (li == 3 && !forced->split_k) { /* mma.sync: pairs of blocks splitting K */
                        cfg.split_k = 2;
                    } else if (li) {
                        continue;
                    }
                    cfg.k_slices = forced->k_slices ? forced->k_slices : kss[ki];
                    cfg.mma = mma;
                    cfg.m_tiles = forced->m_tiles ? forced->m_tiles : mts[i];
                    cfg.warps_n = forced->warps_n ? forced->warps_n : wns[j];
                    cfg.warps_k = forced->warps_k ? forced->warps_k : wks[q];
                    cfg.stages = forced->stages ? forced->stages : st;
                    if (li == 2) { /* single blocks: unless the heuristic's TMA kernel (li 1) is that already */
                        wb_config paired = cfg;
                        paired.cluster = 0;
                        if (!config_legal(b, &paired) || paired.cluster != 2)
                            continue;
                    }
                    wb_config plain = cfg;
                    if (!config_legal(b, &cfg))
                        continue;
                    tried++;
                    visit(b, &cfg, ctx);
                    plain.gemv = -1; /* M = 1: the kernel without gemv beside the gemv one */
                    if (cfg.gemv > 0 && !forced->gemv && config_legal(b, &plain)) {
                        tried++;
                        visit(b, &plain, ctx);
                    }
                }
    if (!tried)
        fprintf(stderr, "warble: bench: no legal config to sweep at m=%lld\n", (long long)b->m);
}

typedef struct sweep_best {
    wb_config cfg;
    double us;
} sweep_best;

/* A swept config on the GPU: probed, then (unless slower than SWEEP_PRUNE x the best twice running)
 * timed. A probe over the bound is taken again at once: the first can meet a clock that dropped
 * while the kernel was compiled (an H100 pruned persistent 192-token kernels on a first probe of
 * 2.3x the time they ran in, docs/perf.md). */
static void sweep_time(bench *b, const wb_config *cfg, void *ctx)
{
    sweep_best *best = ctx;
    double us;
    if (set_config(b, cfg) != 0 || probe_one(b, &us) != 0)
        return;
    if (us > SWEEP_PRUNE * best->us && probe_one(b, &us) != 0)
        return;
    if (us > SWEEP_PRUNE * best->us) {
        report(b, cfg, us, "pruned");
        return;
    }
    if (time_one(b, &us) != 0)
        return;
    report(b, cfg, us, "sweep");
    if (us < best->us)
        best->us = us, best->cfg = *cfg;
}

static int sweep(bench *b, const wb_config *best_default, double default_us)
{
    sweep_best best = {*best_default, default_us};
    sweep_each(b, sweep_time, &best);
    report(b, &best.cfg, best.us, "best");
    return set_config(b, NULL);
}

/* --sweep --list: the configs a sweep would time, one a line (no GPU: --arch names the target) */
static void sweep_print(bench *b, const wb_config *cfg, void *ctx)
{
    (void)ctx;
    char cs[160];
    wb_config_print(cfg, cs, sizeof cs);
    printf("m=%lld n=%lld k=%lld %s\n", (long long)b->m, (long long)b->args->n, (long long)b->args->k, cs);
}

static int sweep_list(bench *b)
{
    for (int i = 0; i < b->args->nm; i++) {
        b->m = b->args->m[i];
        sweep_each(b, sweep_print, NULL);
    }
    fflush(stdout);
    return 0;
}

static double now_ms(void);

static int cmp_us(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Host time per wb_layer_gemm (or _q) call: REPS batches of DISPATCH_CALLS calls, each batch timed on the host
 * clock with nothing synchronized inside it (the launch queue holds them), then synchronized; the
 * median batch, per call. The kernel is already built (bench_m timed it first). */
#define DISPATCH_CALLS 100
static int bench_dispatch(bench *b, const wb_config *cfg)
{
    double per_call[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ms();
        for (int i = 0; i < DISPATCH_CALLS; i++)
            bench_call(b);
        per_call[r] = (now_ms() - t0) * 1e3 / DISPATCH_CALLS;
        wb_status s = wb_gpu_sync(b->gpu);
        if (b->err != WB_OK)
            return cli_fail(CLI_FAILED, "bench: %s", b->err_msg);
        if (s != WB_OK)
            return cli_lib_fail(s, "wb_gpu_sync");
    }
    qsort(per_call, REPS, sizeof per_call[0], cmp_us);
    char cs[160];
    wb_config_print(cfg, cs, sizeof cs);
    if (cli_has(b->args, O_JSON))
        printf("{\"spec\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"dispatch_us\":%.3f,\"config\":\"%s\","
               "\"kind\":\"dispatch\"}\n", b->spec, (long long)b->m, (long long)b->args->n, (long long)b->args->k,
               per_call[REPS / 2], cs);
    else
        printf("dispatch m=%-6lld n=%lld k=%lld  %8.2f us per call on the host (median of %d batches of %d)\n",
               (long long)b->m, (long long)b->args->n, (long long)b->args->k, per_call[REPS / 2], REPS,
               DISPATCH_CALLS);
    fflush(stdout);
    return 0;
}

static int bench_m(bench *b)
{
    const cli_args *a = b->args;
    wb_config cfg = a->cfg;
    wb_status s = wb_config_choose(&b->f, b->arch, b->m, a->n, a->k, &cfg);
    if (s == WB_OK)
        s = wb_kernel_check_shape(&b->f, &cfg, b->m, a->n, a->k);
    if (s != WB_OK)
        return cli_lib_fail(s, wb_arch_name(b->arch));
    int rc = set_config(b, a->have_cfg ? &cfg : NULL);
    double us;
    if (rc || (rc = time_one(b, &us)))
        return rc;
    report(b, &cfg, us, "bench");
    if (cli_has(a, O_DISPATCH) && (rc = bench_dispatch(b, &cfg)))
        return rc;
    return cli_has(a, O_SWEEP) ? sweep(b, &cfg, us) : 0;
}

static int bench_all(bench *b)
{
    const cli_args *a = b->args;
    int64_t mmax = 0;
    for (int i = 0; i < a->nm; i++)
        mmax = a->m[i] > mmax ? a->m[i] : mmax;
    cli_layout l;
    cli_file_layout(&b->f, mmax, a->n, a->k, &l);
    int device, rc = cli_device(a, &device);
    if (rc || (rc = cli_lib_fail_if(wb_gpu_create(device, &b->gpu), "wb_gpu_create")))
        return rc;
    b->arch = wb_gpu_arch(b->gpu);
    double weight_bytes;
    cli_gemm_bytes(&b->f, 1, a->n, a->k, &weight_bytes);
    if ((rc = create_layers(b, weight_bytes)))
        return rc;
    if ((rc = cli_lib_fail_if(wb_gpu_alloc(b->gpu, l.bytes[F_A], &b->a), "wb_gpu_alloc")) ||
        (rc = cli_lib_fail_if(wb_gpu_alloc(b->gpu, l.bytes[F_OUT], &b->out), "wb_gpu_alloc")))
        return rc;
    /* Activations: random, uploaded once (they stay in L2 like a real decode step's would). */
    cli_host h;
    if ((rc = cli_host_alloc(&h, &b->f, mmax, 1, a->k)))
        return rc;
    cli_rng rng = {0xacc0u};
    cli_host_random_acts(&h, &rng);
    rc = cli_lib_fail_if(cli_upload_acts(b->gpu, &b->f, mmax, a->k, h.buf[F_A], l.bytes[F_A], b->a), "wb_gpu_upload");
    if (!rc && l.bytes[F_ASCALE] && /* quantized activations: their scales too */
        !(rc = cli_lib_fail_if(wb_gpu_alloc(b->gpu, l.bytes[F_ASCALE], &b->a_scale), "wb_gpu_alloc")))
        rc = cli_lib_fail_if(wb_gpu_upload(b->gpu, b->a_scale, h.buf[F_ASCALE], l.bytes[F_ASCALE]), "wb_gpu_upload");
    if (!rc && l.bytes[F_AGLOBAL] && /* and the tensor scale (ags=1) */
        !(rc = cli_lib_fail_if(wb_gpu_alloc(b->gpu, 4, &b->a_global), "wb_gpu_alloc")))
        rc = cli_lib_fail_if(wb_gpu_upload(b->gpu, b->a_global, h.buf[F_AGLOBAL], 4), "wb_gpu_upload");
    cli_host_free(&h);
    if (!cli_has(a, O_JSON))
        printf("# %s on %s (%s), %d layers of %.1f MB weights\n", b->spec, wb_gpu_name(b->gpu),
               wb_arch_name(b->arch), b->nlayers, weight_bytes / 1e6);
    for (int i = 0; i < a->nm && !rc; i++) {
        b->m = a->m[i];
        rc = bench_m(b);
    }
    return rc;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* --compile: the time from a spec to a loaded CUfunction, per distinct kernel of the M list and for
 * all of them (the kernels of one layer shape). Cold means the driver's JIT cache is off
 * (CUDA_CACHE_DISABLE=1 in the environment) and warble's module cache is empty (a fresh process). */
static int bench_compile(const cli_args *a, const wb_format *f)
{
    wb_gpu *gpu = NULL;
    int device, rc = cli_device(a, &device);
    if (rc || (rc = cli_lib_fail_if(wb_gpu_create(device, &gpu), "wb_gpu_create")))
        return rc;
    const char *cache = getenv("CUDA_CACHE_DISABLE");
    printf("compile: driver JIT cache %s (CUDA_CACHE_DISABLE=%s)\n", cache && !strcmp(cache, "1") ? "off" : "on",
           cache ? cache : "unset");
    wb_config seen[CLI_MAX_M];
    int nseen = 0;
    double total = 0, t_start = now_ms();
    for (int i = 0; i < a->nm && !rc; i++) {
        wb_config c = a->cfg;
        char *ptx = NULL, conf[128];
        void *fn = NULL;
        double t0 = now_ms();
        wb_status s = wb_config_choose(f, wb_gpu_arch(gpu), a->m[i], a->n, a->k, &c);
        int dup = 0;
        for (int j = 0; j < nseen; j++)
            dup |= wb_config_equal(&seen[j], &c);
        if (s == WB_OK && dup)
            continue;
        if (s == WB_OK)
            s = wb_kernel_ptx(f, wb_gpu_arch(gpu), &c, 0, &ptx);
        double t1 = now_ms();
        if (s == WB_OK)
            s = wb_gpu_load(gpu, ptx, wb_kernel_entry(), &fn);
        double t2 = now_ms();
        free(ptx);
        if (s != WB_OK) {
            rc = cli_lib_fail(s, "compile");
            break;
        }
        seen[nseen++] = c;
        wb_config_print(&c, conf, sizeof conf);
        total += t2 - t0;
        printf("compile m=%-6lld %s: emit %.2f ms, JIT %.1f ms, spec to CUfunction %.1f ms\n", (long long)a->m[i],
               conf, t1 - t0, t2 - t1, t2 - t0);
    }
    if (!rc)
        printf("compile: %d kernel(s) of %s, %lld x %lld: %.1f ms in all (wall %.1f ms)\n", nseen,
               wb_arch_name(wb_gpu_arch(gpu)), (long long)a->n, (long long)a->k, total, now_ms() - t_start);
    wb_gpu_destroy(gpu);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    cli_args a;
    bench b;
    memset(&b, 0, sizeof b);
    uint64_t allowed = CLI_SHAPE_OPTS | CLI_CONFIG_OPTS | OPT(O_JSON) | OPT(O_SWEEP) | OPT(O_DEVICE) | OPT(O_COMPILE) |
                       OPT(O_DISPATCH) | OPT(O_LIST) | OPT(O_ARCH);
    int rc = cli_parse(argc, argv, allowed, 1, &a);
    if (rc || (rc = cli_parse_spec(a.spec, &b.f)))
        return rc;
    if (!a.nm || !a.n || !a.k)
        return cli_fail(CLI_USAGE, "bench: --m, --n and --k are required");
    if (cli_has(&a, O_COMPILE))
        return bench_compile(&a, &b.f);
    for (int i = 0; i < a.nm; i++) {
        wb_status s = wb_format_check_shape(&b.f, a.m[i], a.n, a.k);
        if (s != WB_OK)
            return cli_lib_fail(s, NULL);
    }
    b.args = &a;
    cli_spec_str(&b.f, b.spec, sizeof b.spec);
    if (cli_has(&a, O_LIST) || cli_has(&a, O_ARCH)) { /* the sweep's configs for a target, no GPU */
        if (!cli_has(&a, O_LIST) || !cli_has(&a, O_SWEEP) || !cli_has(&a, O_ARCH))
            return cli_fail(CLI_USAGE, "bench: --list and --arch go together, with --sweep (the configs a sweep "
                                       "would time on that target)");
        b.arch = a.arch;
        return sweep_list(&b);
    }
    rc = bench_all(&b);
    for (int i = 0; i < b.nlayers; i++)
        wb_layer_destroy(b.layer[i]);
    if (b.gpu) {
        if (b.a)
            wb_gpu_free(b.gpu, b.a);
        if (b.out)
            wb_gpu_free(b.gpu, b.out);
        if (b.a_scale)
            wb_gpu_free(b.gpu, b.a_scale);
        if (b.a_global)
            wb_gpu_free(b.gpu, b.a_global);
    }
    wb_gpu_destroy(b.gpu);
    return rc;
}
