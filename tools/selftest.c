/* `warble selftest`: GPU correctness against the library's float64 reference (contract section 2).
 * The plan: (a) the W4A16 family (96 formats) on small shapes, compared element by element; (b) four
 * formats on large shapes, compared on a random sample plus whole edge rows and tile-edge columns;
 * (c) the weight catalog, batch invariance, TMA loads, k_slices 4, split K and gemv; (e) W8A8 (a=s8,
 * w=int8; and e4m3/e5m2 fp8 on the targets this build runs it on), W4A8 and W4A4, W4A8 at decode on
 * two layer shapes too, through wb_layer_gemm_q, with activations quantized by
 * wb_reference_quantize_acts. The plan is the same on every target except for the cases of (e) that a
 * target cannot build (fp8): `--list` without `--arch` prints the cases common to every target.
 * The output is poisoned with NaN bits before each launch, so unwritten elements fail. Every kernel
 * that passed all its cases is appended once (by PTX sha256) to the ledger, which `ledger_check.sh`
 * compares against the kernels warble emits: as soon as its last case in the plan passes, so that a
 * run cut short keeps what it validated. */
#include "tools/cli.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_LEDGER "tests/gpu/ledger.tsv"
#define LEDGER_HEADER "sha256\tspec\tarch\tconfig\tmax_rel_err\tgpu\tdate_utc\n"
#define SAMPLES 4096
#define MAX_THREADS 32

typedef struct plan_case {
    char spec[512];
    int64_t m, n, k;
    int full;      /* compare every element */
    int invariant; /* batch-invariant mode: rows of M = m must match rows of M = INVARIANT_M bitwise */
    int tma;       /* forced: the TMA pipeline in the variant tma_variants[tma] (0: not forced) */
    int slices;    /* forced: mma.sync, two warps along K taking four k64 slices each (--k-slices 4) */
    int split;     /* forced: pairs of blocks each taking half of K (--split-k 2) */
} plan_case;

/* The specs of the forced TMA cases (plan_tma): 16-bit activations of both types with scale records of
 * 32 and 64 bytes (a zero point) and two groups a slice (g=32), then 8-bit ones from TMA_FIRST_8BIT
 * (fp8 with its two-level sums, s8, int4 widened to e4m3, weight groups), which only a target with
 * wgmma builds. */
static const char *const tma_specs[] = {"w4a16", "w4a16,a=bf16,ws=bf16", "w4a16-zp", "a=f16,w=int4,g=32",
                                        "fp8", "int8", "a=e4m3,w=int4,ws=f32,g=0", "w4a8-int8"};
enum { TMA_FIRST_8BIT = 4 };

/* The forced variants of the TMA pipeline (plan_case.tma): the choices as CLI words, the config fields
 * they set (cluster 0: the heuristic's), the label of the result line, and (from 2 on) which of
 * tma_specs run them (bit i: tma_specs[i]) at which two M on 4096 x 4096 (quick: the first). */
static const struct tma_variant {
    const char *choices;
    int persistent, cluster, m_tiles;
    const char *label;
    unsigned specs;
    int64_t m[2];
} tma_variants[] = {
    [1] = {"--mma,wgmma,--load,tma,--cluster,1", 0, 1, 0, " (TMA loads)", 0, {0, 0}},
    /* more output tiles than a GPU has SMs, each block walking several; a tail token tile at 2500 */
    [2] = {"--mma,wgmma,--load,tma,--persistent,--cluster,1", 1, 1, 0, " (TMA, persistent)", 0x55, {4096, 2500}},
    /* each block multicasts half the activation tile into both; a tail token tile at 1000 (the second
     * half of its box partly or wholly past M) */
    [3] = {"--mma,wgmma,--load,tma,--cluster,2", 0, 2, 0, " (TMA, cluster of 2)", 0x79, {1000, 4096}},
    /* pairs of blocks walking pairs of tiles */
    [4] = {"--mma,wgmma,--load,tma,--persistent,--cluster,2", 1, 2, 0, " (TMA, persistent, cluster of 2)", 0x79,
           {2500, 4096}},
    /* two channel tiles of two token tiles, activation and weight halves multicast; 3 token tiles of
     * 128 at 300 (the last quad's second token tile past M) */
    [5] = {"--mma,wgmma,--load,tma,--cluster,4", 0, 4, 0, " (TMA, cluster of 4)", 0x79, {300, 4096}},
    /* fp8 without the late loop, W4A8's pp loop */
    [6] = {"--mma,wgmma,--load,tma,--m-tiles,24", 0, 0, 24, " (TMA, 192-token tiles)", 0x71, {1000, 4096}},
    /* fp8's and W4A16's pick at large M; W4A8's forced (docs/perf.md) */
    [7] = {"--mma,wgmma,--load,tma,--m-tiles,24,--persistent", 1, 0, 24, " (TMA, 192-token tiles, persistent)", 0x51,
           {2500, 4096}},
};

/* The choices a case forces, as comma-separated CLI words (the fifth column of --list). */
static const char *case_choices(const plan_case *c)
{
    return c->invariant ? "--batch-invariant"
           : c->tma     ? tma_variants[c->tma].choices
           : c->slices  ? "--mma,mma.sync,--warps-k,2,--k-slices,4"
           : c->split   ? "--split-k,2"
                        : "";
}

/* The batch-invariance cases run M = INVARIANT_M and compare every smaller M's rows against it. */
#define INVARIANT_M 300

typedef struct plan {
    plan_case *c;
    int count, cap;
} plan;

static int plan_add(plan *p, const char *spec, int64_t m, int64_t n, int64_t k, int full)
{
    if (p->count == p->cap) {
        int cap = p->cap ? 2 * p->cap : 256;
        plan_case *c = realloc(p->c, (size_t)cap * sizeof *c);
        if (!c)
            return cli_fail(CLI_FAILED, "out of host memory");
        p->c = c, p->cap = cap;
    }
    plan_case *c = &p->c[p->count++];
    snprintf(c->spec, sizeof c->spec, "%s", spec);
    c->m = m, c->n = n, c->k = k, c->full = full, c->invariant = 0, c->tma = 0, c->slices = 0;
    return 0;
}

/* Part (a): every combination of the W4A16 family; all three shapes, or one (rotating) when quick. */
static int plan_small(plan *p, int quick)
{
    static const int64_t shapes[3][3] = {{1, 128, 256}, {7, 256, 512}, {100, 128, 1024}};
    static const char *const acts[] = {"f16", "bf16"}, *const scales[] = {"f16", "bf16"};
    static const char *const weights[] = {"w=int4", "w=uint4", "w=uint4,zp=int"};
    static const int groups[] = {0, 32, 64, 128};
    int idx = 0, rc = 0;
    for (int a = 0; a < 2; a++)
        for (int w = 0; w < 3; w++)
            for (int s = 0; s < 2; s++)
                for (int g = 0; g < 4; g++)
                    for (int b = 0; b < 2; b++, idx++) {
                        char spec[96];
                        snprintf(spec, sizeof spec, "a=%s,%s,ws=%s,g=%d,bias=%d", acts[a], weights[w],
                                 scales[s], groups[g], b);
                        for (int i = 0; i < 3 && !rc; i++)
                            if (!quick || i == idx % 3)
                                rc = plan_add(p, spec, shapes[i][0], shapes[i][1], shapes[i][2], 1);
                    }
    return rc;
}

/* Part (c): the weight catalog. Every element type (intB, uintB with and without zero points, every
 * small float eXmY the activation type allows), each with a scale type and group size taken in turn,
 * plus the presets; one small shape each (every other one when quick). */
static int plan_catalog(plan *p, int quick)
{
    static const char *const scale_any[] = {"f16", "bf16", "f32", "e8m0", "e4m3", "e5m2"};
    static const char *const scale_fp[] = {"f16", "bf16", "f32"};
    static const int groups[] = {0, 16, 32, 64, 128};
    static const char *const presets[] = {"mxfp4", "nvfp4-a16", "mxint4", "gptq-int3", "w8a16",
                                          "a=bf16,w=int4,ws=f32,g=128,gn=128", "a=f16,w=uint8,zp=int,ws=f32,g=64,gn=16,wgs=1"};
    static const char *const acts[] = {"f16", "bf16"};
    char spec[128];
    int idx = 0, rc = 0;
    for (int a = 0; a < 2 && !rc; a++) {
        for (int b = 1; b <= 8 && !rc; b++) {
            const char *kinds[] = {"w=int%d", "w=uint%d", "w=uint%d,zp=int", "w=int%d,zp=fp", "w=uint%d,zp=fp"};
            for (int z = 0; z < 5 && !rc; z++, idx++) {
                char w[32];
                snprintf(w, sizeof w, kinds[z], b);
                const char *ws = z >= 3 ? scale_fp[idx % 3] : scale_any[idx % 6];
                snprintf(spec, sizeof spec, "a=%s,%s,ws=%s,g=%d,bias=%d", acts[a], w, ws, groups[idx % 5], idx % 2);
                if (!quick || idx % 2 == 0)
                    rc = plan_add(p, spec, 7, 256, 512, 1);
            }
        }
        for (int x = 1; x <= 7 && !rc; x++)
            for (int y = 0; x + y <= 7 && !rc; y++, idx++) {
                if (a == 0 && (x > 5 || (x == 5 && y != 2)))
                    continue; /* beyond f16 */
                snprintf(spec, sizeof spec, "a=%s,w=e%dm%d,ws=%s,g=%d", acts[a], x, y, scale_any[idx % 6],
                         groups[idx % 5]);
                if (!quick || idx % 2 == 0)
                    rc = plan_add(p, spec, 7, 256, 512, 1);
            }
    }
    for (size_t i = 0; i < sizeof presets / sizeof presets[0] && !rc; i++)
        rc = plan_add(p, presets[i], 100, 256, 1024, 1);
    /* lookup tables: nf4 and a user table (lut4) */
    static const char *const tables[] = {
        "a=f16,w=nf4,g=64", "a=bf16,w=nf4,ws=e8m0,g=32,bias=1",
        "a=f16,w=lut4:-8:-5.5:-3.25:-2:-1.5:-1:-0.5:-0.125:0:0.25:0.75:1:2:3.5:6:100,g=128",
        "a=bf16,w=lut4:1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16,ws=f32,g=0"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0] && !rc; i++)
        rc = plan_add(p, tables[i], i % 2 ? 100 : 7, 256, 1024, 1);
    /* large shapes for the formats the issue names */
    static const char *const big[] = {"a=f16,w=int2,g=128", "gptq-int3", "a=f16,w=int8,g=128", "mxfp4",
                                      "nvfp4-a16", "a=f16,w=e4m3,ws=f32,g=0", "a=bf16,w=int4,ws=f32,g=128,gn=128"};
    static const int64_t ms[] = {1, 16, 256, 4096};
    static const int64_t nk[2][2] = {{4096, 4096}, {8192, 8192}};
    for (size_t i = 0; i < sizeof big / sizeof big[0] && !rc; i++)
        for (int j = 0; j < 2 && !rc; j++)
            for (int m = 0; m < 4 && !rc; m++)
                if (!quick || (j == 0 && m == (int)i % 4))
                    rc = plan_add(p, big[i], ms[m], nk[j][0], nk[j][1], 0);
    return rc;
}

/* Part (c): the batch-invariant mode, for a few formats: each M's rows against M = INVARIANT_M. */
static int plan_invariant(plan *p, int quick)
{
    static const char *const specs[] = {"w4a16", "w4a16,a=bf16,ws=bf16", "w4a16-zp", "mxfp4", "a=f16,w=int8,g=128"};
    static const int64_t ms[] = {1, 7, 16, 64, INVARIANT_M};
    int rc = 0;
    for (size_t s = 0; s < sizeof specs / sizeof specs[0] && !rc; s++)
        for (size_t i = 0; i < sizeof ms / sizeof ms[0] && !rc; i++)
            if (!quick || s == 0)
                if (!(rc = plan_add(p, specs[s], ms[i], 1024, 2048, 0)))
                    p->c[p->count - 1].invariant = 1;
    return rc;
}

/* This build emits the kernel of `spec` for `arch` with the choices in c (none: all the heuristic's; the
 * legalizer's answer: the plan holds no case the target must refuse). */
static int builds_on(const char *spec, wb_arch arch, wb_config c)
{
    wb_format f;
    char *ptx = NULL;
    int ok = wb_format_parse(spec, &f) == WB_OK && wb_config_choose(&f, arch, 16, 256, 1024, &c) == WB_OK &&
             wb_kernel_ptx(&f, arch, &c, 0, &ptx) == WB_OK;
    free(ptx);
    return ok;
}

/* Part (d): the warp-specialized TMA pipeline of the wgmma kernel, forced: each of tma_specs (the 8-bit
 * ones on a target with wgmma, arch; -1: none) at three M, one and two consumer warpgroups and tails,
 * then the variants of tma_variants that take it. */
static int plan_tma(plan *p, int quick, int arch)
{
    static const int64_t ms[] = {100, 256, 1000};
    int rc = 0;
    for (size_t s = 0; s < sizeof tma_specs / sizeof tma_specs[0] && !rc; s++) {
        if (s >= TMA_FIRST_8BIT && (arch < 0 || !builds_on(tma_specs[s], (wb_arch)arch,
                                                              (wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA})))
            continue;
        for (size_t i = 0; i < sizeof ms / sizeof ms[0] && !rc; i++)
            if (!quick || i == s % 3)
                if (!(rc = plan_add(p, tma_specs[s], ms[i], 4096, 4096, 0)))
                    p->c[p->count - 1].tma = 1;
        for (int v = 2; v < (int)(sizeof tma_variants / sizeof tma_variants[0]) && !rc; v++)
            for (int i = 0; (tma_variants[v].specs >> s & 1) && i < (quick ? 1 : 2) && !rc; i++)
                if (!(rc = plan_add(p, tma_specs[s], tma_variants[v].m[i], 4096, 4096, 0)))
                    p->c[p->count - 1].tma = v;
    }
    return rc;
}

/* Every spec at every M on 4096 x 4096 (quick: the first spec), each case forcing the choice whose flag
 * is the int at `flag` in plan_case; specs from `first_8bit` on only where arch (-1: none) builds
 * them with `forced`. */
static int plan_forced(plan *p, int quick, int arch, const char *const *specs, size_t nspecs, size_t first_8bit,
                       const int64_t *ms, size_t nms, size_t flag, wb_config forced)
{
    int rc = 0;
    for (size_t s = 0; s < nspecs && !rc; s++) {
        if (s >= first_8bit && (arch < 0 || !builds_on(specs[s], (wb_arch)arch, forced)))
            continue;
        for (size_t i = 0; i < nms && !rc; i++)
            if (!quick || s == 0)
                if (!(rc = plan_add(p, specs[s], ms[i], 4096, 4096, 0)))
                    *(int *)((char *)&p->c[p->count - 1] + flag) = 1;
    }
    return rc;
}

/* Part (e): k_slices 4, forced (the heuristic picks 2 at decode, 4 for codes of 2 bits or fewer;
 * the sweep and users may force 4), on 16-bit activations and on 8-bit ones (W4A8-fp8 widened to f16
 * on sm_90a, int8) */
static int plan_slices(plan *p, int quick, int arch)
{
    static const char *const specs[] = {"w4a16", "a=f16,w=int2,g=128", "mxfp4", "w4a16-zp",
                                        "a=e4m3,w=int4,ws=f32,g=0", "int8"};
    static const int64_t ms[] = {1, 7};
    return plan_forced(p, quick, arch, specs, sizeof specs / sizeof specs[0], 4, ms, sizeof ms / sizeof ms[0],
                       offsetof(plan_case, slices),
                       (wb_config){.mma = WB_MMA_SYNC, .warps_k = 2, .k_slices = 4});
}

/* Part (c), with TMA loads and k_slices 4: --split-k 2, forced: 16-bit activations on mma.sync (M = 1
 * and 16), on wgmma's cp.async kernel (one warpgroup, M = 256) and on the TMA pipeline (M = 1000), zero
 * points; on a target with wgmma fp8 and int8 too. Then the heuristic's split at M = 16 on issue 4's
 * 4096 x 14336 (on 4096 x 11008: part (b)). */
static int plan_split(plan *p, int quick, int arch)
{
    static const char *const specs[] = {"w4a16", "w4a16-zp", "fp8", "int8"};
    static const int64_t ms[] = {256, 1000, 1, 16};
    int rc = plan_forced(p, quick, arch, specs, sizeof specs / sizeof specs[0], 2, ms, sizeof ms / sizeof ms[0],
                         offsetof(plan_case, split), (wb_config){.split_k = 2});
    return rc ? rc : quick ? 0 : plan_add(p, "w4a16", 16, 4096, 14336, 0);
}

/* Part (c): the gemv kernels, the heuristic's at M = 1 for int2 and int3 without zero points: groups
 * of 128 on issue 3's two layer shapes (int2 on 8192 x 8192 is part (b)'s), of 32, per channel. */
static int plan_gemv(plan *p, int quick)
{
    static const struct { const char *spec; int64_t n, k; } cases[] = {
        {"a=f16,w=int2,g=128", 28672, 4096}, {"a=f16,w=int3,g=128", 8192, 8192}, {"a=f16,w=int3,g=128", 28672, 4096},
        {"a=f16,w=int2,ws=f32,g=32", 4096, 4096}, {"a=f16,w=int3,g=0,bias=1", 4096, 4096}};
    int rc = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0] && !rc; i++)
        if (!quick || i == 1)
            rc = plan_add(p, cases[i].spec, 1, cases[i].n, cases[i].k, 0);
    return rc;
}

static int plan_big(plan *p, int quick)
{
    static const char *const specs[] = {"w4a16", "w4a16,a=bf16,ws=bf16", "w4a16-zp", "a=f16,w=int4,g=0"};
    static const int64_t ms[] = {1, 7, 16, 64, 256, 1000, 4096};
    static const int64_t nk[4][2] = {{4096, 4096}, {11008, 4096}, {4096, 11008}, {8192, 8192}};
    int rc = 0;
    if (quick) {
        rc = plan_add(p, specs[0], 1, 4096, 4096, 0);
        rc = rc ? rc : plan_add(p, specs[2], 16, 11008, 4096, 0);
        rc = rc ? rc : plan_add(p, specs[1], 256, 4096, 11008, 0);
        return rc;
    }
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 7 && !rc; i++)
                rc = plan_add(p, specs[s], ms[i], nk[j][0], nk[j][1], 0);
    return rc;
}

/* Part (e): W8A8. s8 x int8 on the integer MMA (every target), and s8 x int4 (W4A8, the int4 words
 * widened to s8; e2m1 weights too), per channel and with f32 scales per group of 128 or 256 (w4a8-int8;
 * the activations' too, ag=128), and s4 x int4 (W4A4, mma.sync at every M): a bf16-output
 * spec and an f16-output one with a bias (the one sm_75 runs), at M =
 * 1, 7, 16, 100, 300, every element
 * compared (100 and 300 run wgmma on sm_90a), then M = 1000 and 4096 on bigger shapes (the wide
 * wgmma tiles), sampled. fp8 (e4m3/e5m2 x e4m3/e5m2 or int4, f32 sums) only for a target `arch` that
 * builds it (arch < 0: none; today sm_89 and sm_120a on mma.sync, sm_90a on wgmma; e2m1 weights too): the fp8 preset,
 * w4a8-fp8 and their per-channel f16-output variants with a bias, and fp8-block, at those Ms and
 * shapes, and the other pairs of types, each with both outputs, at one M. One M of each list, rotating, when quick. */
static int plan_w8a8(plan *p, int quick, int arch)
{
    static const char *const specs[] = {"int8", "int8,out=f16,bias=1", "a=s8,w=int4,ws=f32,g=0",
                                        "a=s8,w=int4,ws=f32,g=0,out=f16,bias=1", "w4a8-int8",
                                        "a=s8,w=int8,ws=f32,g=256,out=f16,bias=1", "a=s8,ag=128,w=int4,ws=f32,g=128",
                                        "a=s8,w=e2m1,ws=f32,g=0,out=f16,bias=1", "w4a4-int4",
                                        "w4a4-int4,ag=128,g=128,out=f16,bias=1"};
    /* the first `full` at every M and shape, the rest at one M */
    enum { full = 5 };
    static const char *const fp8[] = {"fp8", "fp8,out=f16,bias=1", "w4a8-fp8", "a=e4m3,w=int4,ws=f32,g=0,out=f16,bias=1",
                                      "fp8-block", "fp8-block,out=f16,bias=1,a=e5m2",
                                      "a=e4m3,w=e5m2,ws=f32,g=0", "a=e4m3,w=e5m2,ws=f32,g=0,out=f16,bias=1",
                                      "a=e5m2,w=e4m3,ws=f32,g=0", "a=e5m2,w=e4m3,ws=f32,g=0,out=f16,bias=1",
                                      "a=e5m2,w=e5m2,ws=f32,g=0,bias=1", "a=e5m2,w=e5m2,ws=f32,g=0,out=f16",
                                      "a=e5m2,w=int4,ws=f32,g=0", "a=e5m2,w=int4,ws=f32,g=256,out=f16",
                                      "a=e4m3,w=e2m1,ws=f32,g=128", "a=e4m3,w=e2m1,ws=f32,g=0,out=f16,bias=1",
                                      "a=e4m3,ag=128,w=int4,ws=f32,g=128",
                                      "a=e4m3,ag=128,w=int4,ws=f32,g=0,out=f16,bias=1"};
    static const int64_t ms[] = {1, 7, 16, 100, 300};
    static const int64_t big[][3] = {{1000, 4096, 4096}, {4096, 2048, 8192}};
    int rc = 0;
    for (size_t s = 0; s < sizeof specs / sizeof specs[0] && !rc; s++) {
        for (size_t i = 0; i < sizeof ms / sizeof ms[0] && !rc; i++)
            if (!quick || i == (s + 1) % 5)
                rc = plan_add(p, specs[s], ms[i], 256, 1024, 1);
        for (size_t i = 0; i < sizeof big / sizeof big[0] && !rc; i++)
            if (!quick || i == s % 2)
                rc = plan_add(p, specs[s], big[i][0], big[i][1], big[i][2], 0);
    }
    /* fp4 activations (a=e2m1, both operands dequantized in registers, mma.sync at every M): NVFP4, MX
     * (e8m0 scales, bf16 products), e2m1 with int4 weights, per-token and k64 activation scales */
    static const char *const fp4[] = {"nvfp4", "nvfp4,out=f16,bias=1", "a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32",
                                      "a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,out=f16,bias=1",
                                      "a=e2m1,ag=16,as=e4m3,w=int4,ws=f16,g=128,out=f16",
                                      "a=e2m1,ag=64,as=e4m3,w=e2m1,ws=e4m3,g=64,wgs=1",
                                      "a=e2m1,as=e4m3,ags=1,w=uint4,ws=bf16,g=32,zp=int"};
    for (size_t s = 0; arch >= 0 && s < sizeof fp4 / sizeof fp4[0] && !rc; s++) {
        if (!builds_on(fp4[s], (wb_arch)arch, (wb_config){0}))
            continue;
        for (size_t i = 0; i < sizeof ms / sizeof ms[0] && !rc; i++)
            if ((s < 3 && !quick) || i == s % 5)
                rc = plan_add(p, fp4[s], ms[i], 256, 1024, 1);
        for (size_t i = 0; s < 3 && i < sizeof big / sizeof big[0] && !rc; i++)
            if (!quick || i == s % 2)
                rc = plan_add(p, fp4[s], big[i][0], big[i][1], big[i][2], 0);
    }
    for (size_t s = 0; arch >= 0 && s < sizeof fp8 / sizeof fp8[0] && !rc; s++) {
        if (!builds_on(fp8[s], (wb_arch)arch, (wb_config){0}))
            continue;
        for (size_t i = 0; i < sizeof ms / sizeof ms[0] && !rc; i++)
            if ((s < full && !quick) || i == s % 5)
                rc = plan_add(p, fp8[s], ms[i], 256, 1024, 1);
        for (size_t i = 0; s < full && i < sizeof big / sizeof big[0] && !rc; i++)
            if (!quick || i == s % 2)
                rc = plan_add(p, fp8[s], big[i][0], big[i][1], big[i][2], 0);
    }
    /* W4A8 at decode on layer shapes, where the heuristic's configs differ from the small shapes' (the
     * grid fills its waves: deeper stages, two warps along N; with groups at M = 16, two slices a warp
     * with 4 warps along K on 6144 x 4096, with one on 28672 x 4096; per channel at M = 16 on
     * 4096 x 14336, one block an SM: 8 stages), sampled: per channel and in groups, s8 activations
     * everywhere and e4m3 where fp8 builds */
    static const char *const dec[] = {"a=s8,w=int4,ws=f32,g=0", "w4a8-int8", "a=e4m3,w=int4,ws=f32,g=0", "w4a8-fp8"};
    static const int64_t dec_nk[][2] = {{8192, 8192}, {6144, 4096}, {28672, 4096}, {4096, 14336}};
    for (size_t s = 0; s < 4 && !rc; s++) {
        if (s >= 2 && (arch < 0 || !builds_on(dec[s], (wb_arch)arch, (wb_config){0})))
            continue;
        for (size_t j = 0; j < sizeof dec_nk / sizeof dec_nk[0] && !rc; j++)
            for (int64_t m = 1; m <= 16 && !rc; m += 15)
                if (!quick || (j == s % 2 && m == 1)) /* quick: one case a spec */
                    rc = plan_add(p, dec[s], m, dec_nk[j][0], dec_nk[j][1], 0);
    }
    return rc;
}

/* ---- the ledger of validated kernels */

typedef struct kernel_rec {
    char sha[65], spec[512], cfg[160];
    double worst;
    int failed;
    int left;    /* the plan's cases of this kernel not run yet (counted before the run; 0 or less for
                  * a kernel the count missed) */
    int written; /* in the ledger already: its last case passed before the run ended */
} kernel_rec;

typedef struct selftest {
    wb_gpu *gpu;
    uint64_t seed;
    kernel_rec *k;
    int nk, capk;
    const char *ledger; /* where validated kernels go (append_ledger) */
    int passed, failed;
} selftest;

/* The record of kernel sha (a new one, empty, when there is none; NULL when out of memory). */
static kernel_rec *kernel_of(selftest *t, const char *sha)
{
    for (int i = 0; i < t->nk; i++)
        if (strcmp(t->k[i].sha, sha) == 0)
            return &t->k[i];
    if (t->nk == t->capk) {
        int cap = t->capk ? 2 * t->capk : 64;
        kernel_rec *k = realloc(t->k, (size_t)cap * sizeof *k);
        if (!k)
            return NULL; /* the ledger just misses it */
        t->k = k, t->capk = cap;
    }
    kernel_rec *r = &t->k[t->nk++];
    memset(r, 0, sizeof *r);
    snprintf(r->sha, sizeof r->sha, "%s", sha);
    return r;
}

static int append_ledger(const selftest *t, const char *path, const kernel_rec *only, int *added);

/* A case of kernel sha ran (failed: it did not pass). Once the plan's last case of the kernel has
 * passed, with every earlier one, the kernel goes into the ledger at once: a run cut short by a time
 * limit keeps what it validated. */
static void record_kernel(selftest *t, const char *sha, const char *spec, const char *cfg, double err,
                          int failed)
{
    kernel_rec *r = kernel_of(t, sha);
    if (!r)
        return;
    if (!r->spec[0]) {
        snprintf(r->spec, sizeof r->spec, "%s", spec);
        snprintf(r->cfg, sizeof r->cfg, "%s", cfg);
        r->worst = err;
    }
    r->worst = fmax(r->worst, err);
    r->failed |= failed;
    if (--r->left == 0 && !r->failed && t->ledger) /* (a failure to write shows at the end's append) */
        append_ledger(t, t->ledger, r, &r->written);
}

static int ledger_has(FILE *fp, const char *sha)
{
    char line[2048];
    rewind(fp);
    while (fgets(line, sizeof line, fp))
        if (strncmp(line, sha, 64) == 0 && line[64] == '\t')
            return 1;
    return 0;
}

/* The choices a case forces (batch-invariant, TMA loads, k_slices 4); the rest the heuristic's. */
static wb_config case_forced(const plan_case *pc)
{
    wb_config c = {.batch_invariant = pc->invariant};
    if (pc->tma) {
        const struct tma_variant *v = &tma_variants[pc->tma];
        c.mma = WB_MMA_WGMMA, c.load = WB_LOAD_TMA, c.persistent = v->persistent, c.cluster = v->cluster,
        c.m_tiles = v->m_tiles;
    }
    if (pc->slices)
        c.mma = WB_MMA_SYNC, c.warps_k = 2, c.k_slices = 4;
    if (pc->split)
        c.split_k = 2;
    return c;
}

/* The sha256 of the PTX a case's kernel has at M = m on arch (its choices forced as run_case forces
 * them), as `warble ptx --hash` and the runtime compute it; 0 on success. */
static int case_kernel_sha(const plan_case *pc, wb_arch arch, int64_t m, char sha[65])
{
    wb_format f;
    wb_config c = case_forced(pc);
    char *ptx = NULL;
    if (wb_format_parse(pc->spec, &f) != WB_OK || wb_config_choose(&f, arch, m, pc->n, pc->k, &c) != WB_OK ||
        wb_kernel_ptx(&f, arch, &c, 0, &ptx) != WB_OK)
        return 1;
    wb_sha256_hex(ptx, strlen(ptx), sha);
    free(ptx);
    return 0;
}

/* --pending: keep only the cases whose kernel (or, batch-invariant, either kernel) is not in the
 * ledger yet, so that a GPU run validates what a change touched and nothing twice. -1 (errno set)
 * where the ledger cannot be read: every case would be pending, which is never what was meant. */
static int keep_pending(plan *p, wb_arch arch, const char *ledger)
{
    FILE *fp = fopen(ledger, "r");
    if (!fp)
        return -1;
    int kept = 0;
    for (int i = 0; i < p->count; i++) {
        const plan_case *pc = &p->c[i];
        char sha[65], sha2[65];
        int known = !case_kernel_sha(pc, arch, pc->invariant ? INVARIANT_M : pc->m, sha) && ledger_has(fp, sha);
        if (known && pc->invariant)
            known = !case_kernel_sha(pc, arch, pc->m, sha2) && ledger_has(fp, sha2);
        if (!known)
            p->c[kept++] = *pc;
    }
    p->count = kept;
    fclose(fp);
    return 0;
}

/* Kernels this run validated leave pending.tsv (the file beside the ledger), if it exists. */
static int clear_pending(const selftest *t, const char *ledger)
{
    char path[1024];
    const char *slash = strrchr(ledger, '/');
    snprintf(path, sizeof path, "%.*spending.tsv", slash ? (int)(slash - ledger + 1) : 0, ledger);
    FILE *in = fopen(path, "r");
    if (!in)
        return 0;
    char line[2048], *kept = NULL;
    size_t len = 0, cap = 0;
    int cleared = 0;
    while (fgets(line, sizeof line, in)) {
        int validated = 0;
        for (int i = 0; i < t->nk && !validated; i++)
            validated = !t->k[i].failed && !strncmp(line, t->k[i].sha, 64) && line[64] == '\t';
        if (validated) {
            cleared++;
            continue;
        }
        size_t n = strlen(line);
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *p = realloc(kept, cap);
            if (!p) {
                free(kept);
                fclose(in);
                return cli_fail(CLI_FAILED, "out of host memory");
            }
            kept = p;
        }
        memcpy(kept + len, line, n + 1);
        len += n;
    }
    fclose(in);
    FILE *out = cleared ? fopen(path, "w") : NULL;
    if (out) {
        fwrite(kept ? kept : "", 1, len, out);
        fclose(out);
        printf("selftest: %d kernel(s) cleared from %s\n", cleared, path);
    }
    free(kept);
    return 0;
}

/* Append the kernels that passed every case they ran and are not in the ledger yet (only: that one
 * kernel, whose cases have all passed); *added: how many lines went in. */
static int append_ledger(const selftest *t, const char *path, const kernel_rec *only, int *added_out)
{
    FILE *fp = fopen(path, "a+");
    if (!fp)
        return cli_fail(CLI_FAILED, "cannot open the ledger '%s'", path);
    fseek(fp, 0, SEEK_END);
    if (ftell(fp) == 0)
        fputs(LEDGER_HEADER, fp);
    char date[32], gpu[128];
    time_t now = time(NULL);
    struct tm tm;
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    snprintf(gpu, sizeof gpu, "%s", wb_gpu_name(t->gpu));
    for (char *c = gpu; *c; c++)
        if (*c == '\t' || *c == '\n')
            *c = ' ';
    int added = 0;
    for (int i = 0; i < t->nk; i++) {
        const kernel_rec *r = &t->k[i];
        if ((only && r != only) || !r->spec[0] || r->failed || ledger_has(fp, r->sha))
            continue;
        fseek(fp, 0, SEEK_END);
        fprintf(fp, "%s\t%s\t%s\t%s\t%.3e\t%s\t%s\n", r->sha, r->spec, wb_arch_name(wb_gpu_arch(t->gpu)),
                r->cfg, r->worst, gpu, date);
        added++;
    }
    if (fclose(fp) != 0)
        return cli_fail(CLI_FAILED, "writing the ledger '%s' failed", path);
    *added_out = added;
    if (only)
        return 0;
    for (int i = 0; i < t->nk; i++) /* those written as their last case passed */
        added += t->k[i].written;
    printf("selftest: %d new kernel(s) added to %s\n", added, path);
    return clear_pending(t, path);
}

/* ---- comparing against the reference */

typedef struct sample_job {
    const cli_host *h;
    const int64_t *idx; /* flattened m * N + n */
    double *ref;
    int64_t begin, end;
} sample_job;

static void *sample_worker(void *arg)
{
    sample_job *j = arg;
    const cli_host *h = j->h;
    for (int64_t i = j->begin; i < j->end; i++)
        j->ref[i] = wb_reference_element(&h->f, j->idx[i] / h->n, j->idx[i] % h->n, h->k, &h->ha, &h->hw);
    return NULL;
}

/* Reference values of the listed elements, on all cores. */
static void reference_sample(const cli_host *h, const int64_t *idx, int64_t count, double *ref)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = cores < 1 ? 1 : cores > MAX_THREADS ? MAX_THREADS : (int)cores;
    pthread_t th[MAX_THREADS];
    sample_job jobs[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int t = 0; t < nt; t++) {
        jobs[t] = (sample_job){h, idx, ref, count * t / nt, count * (t + 1) / nt};
        started[t] = pthread_create(&th[t], NULL, sample_worker, &jobs[t]) == 0;
        if (!started[t])
            sample_worker(&jobs[t]);
    }
    for (int t = 0; t < nt; t++)
        if (started[t])
            pthread_join(th[t], NULL);
}

/* The elements a large case compares: rows 0 and M-1, tile-edge columns, and random ones. */
static int64_t *sample_indices(const cli_host *h, cli_rng *r, int64_t *count)
{
    const int64_t cols[] = {0, 15, 16, 63, 64, h->n - 1};
    int64_t cap = 2 * h->n + 6 * h->m + SAMPLES, c = 0;
    int64_t *idx = malloc((size_t)cap * sizeof *idx);
    if (!idx)
        return NULL;
    for (int64_t n = 0; n < h->n; n++) {
        idx[c++] = n;
        if (h->m > 1)
            idx[c++] = (h->m - 1) * h->n + n;
    }
    for (int j = 0; j < 6; j++)
        if (cols[j] < h->n)
            for (int64_t m = 0; m < h->m; m++)
                idx[c++] = m * h->n + cols[j];
    for (int i = 0; i < SAMPLES; i++)
        idx[c++] = (int64_t)(cli_rng_next(r) % (uint64_t)(h->m * h->n));
    *count = c;
    return idx;
}

static double tolerance(const wb_format *f)
{
    if (f->acc.kind == WB_KIND_F16 || f->a.bits <= 4)
        return 2e-2;
    if (f->a.kind == WB_KIND_BF16 || f->out.kind == WB_KIND_BF16)
        return 8e-3;
    return 1e-3;
}

/* ||out - ref|| / ||ref|| over the compared elements; non-finite outputs where ref is finite count. */
static int compare(const cli_host *h, cli_rng *r, int full, double *err, int64_t *bad)
{
    int64_t count = h->m * h->n, *idx = NULL;
    double *ref = malloc((size_t)(full ? count : 2 * h->n + 6 * h->m + SAMPLES) * sizeof *ref);
    if (!ref)
        return cli_fail(CLI_FAILED, "out of host memory");
    if (full) {
        wb_status s = wb_reference_gemm(&h->f, h->m, h->n, h->k, &h->ha, &h->hw, ref);
        if (s != WB_OK) {
            free(ref);
            return cli_lib_fail(s, "wb_reference_gemm");
        }
    } else {
        idx = sample_indices(h, r, &count);
        if (!idx) {
            free(ref);
            return cli_fail(CLI_FAILED, "out of host memory");
        }
        reference_sample(h, idx, count, ref);
    }
    double num = 0, den = 0, tol = tolerance(&h->f);
    double top = wb_type_decode(h->f.out, wb_type_encode(h->f.out, 1e300)); /* largest finite output */
    *bad = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t e = idx ? idx[i] : i;
        double o = cli_get_value(h->f.out, h->buf[F_OUT], (size_t)e), x = ref[i];
        if (!isfinite(x))
            continue;
        /* at the edge of the output's range, rounding within the tolerance may round to infinity, and
         * a reference beyond the range rounds to infinity itself: compare both saturated to the range */
        if (isinf(o) && (o > 0) == (x > 0) && fabs(x) >= top * (1 - tol))
            o = copysign(top, o);
        x = fmax(-top, fmin(top, x));
        if (!isfinite(o)) {
            (*bad)++;
            continue;
        }
        num += (o - x) * (o - x);
        den += x * x;
    }
    *err = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
    free(idx);
    free(ref);
    return 0;
}

/* ---- one case on the GPU */

typedef struct dev {
    wb_layer *layer;
    wb_devptr a, a_scale, a_global, out; /* a_scale: quantized activations only; a_global: ags=1 */
} dev;

static int quantized_acts(const wb_format *f) { return f->a.kind != WB_KIND_F16 && f->a.kind != WB_KIND_BF16; }

/* Quantized activations come from random f32 ones through the library's quantizer (codes and the
 * scale of each token), as a model would feed them; the reference then runs on the same codes. */
static int quantize_random_acts(cli_host *h, cli_rng *r)
{
    float *x = malloc((size_t)(h->m * h->k) * sizeof *x);
    if (!x)
        return cli_fail(CLI_FAILED, "out of host memory");
    for (int64_t i = 0; i < h->m * h->k; i++)
        x[i] = (float)cli_rng_uniform(r, -1, 1);
    wb_status s = wb_reference_quantize_acts(&h->f, h->m, h->k, x, h->buf[F_A], h->buf[F_ASCALE], h->buf[F_AGLOBAL]);
    free(x);
    return s ? cli_lib_fail(s, "wb_reference_quantize_acts") : 0;
}

/* Poison, launch the first m rows, sync, download into dst. */
static wb_status launch_m(selftest *t, dev *d, const cli_host *h, int64_t m, void *dst)
{
    size_t ob = h->lay.bytes[F_OUT] / (size_t)h->m * (size_t)m;
    wb_status s = wb_gpu_memset(t->gpu, d->out, 0xFF, h->lay.bytes[F_OUT]);
    if (s == WB_OK)
        s = d->a_scale ? wb_layer_gemm_qg(d->layer, m, d->a, d->a_scale, d->a_global, d->out, NULL)
                       : wb_layer_gemm(d->layer, m, d->a, d->out, NULL);
    if (s == WB_OK)
        s = wb_gpu_sync(t->gpu);
    if (s == WB_OK)
        s = wb_gpu_download(t->gpu, dst, d->out, ob);
    return s;
}

static wb_status launch(selftest *t, dev *d, const cli_host *h, void *dst)
{
    return launch_m(t, d, h, h->m, dst);
}

/* Batch invariance: the first m rows at M = m must be the bits of the M = h->m run (in h's output).
 * Returns 0 and fills sha/cfg of the M = m kernel, or fills why. */
static int check_invariant(selftest *t, dev *d, const cli_host *h, int64_t m, char *sha, char *cfg, char *why,
                           size_t wsz)
{
    size_t bytes = h->lay.bytes[F_OUT] / (size_t)h->m * (size_t)m;
    void *rows = malloc(bytes);
    wb_config c;
    wb_status s = rows ? launch_m(t, d, h, m, rows) : WB_ERR_NOMEM;
    if (s == WB_OK)
        s = wb_layer_last_kernel(d->layer, &c, sha);
    int rc = s != WB_OK;
    if (rc)
        snprintf(why, wsz, "M=%lld: %s", (long long)m, rows ? wb_last_error() : "out of host memory");
    else if (memcmp(rows, h->buf[F_OUT], bytes) != 0)
        snprintf(why, wsz, "not batch-invariant: rows at M=%lld differ bitwise from M=%lld", (long long)m,
                 (long long)h->m), rc = 1;
    if (s == WB_OK)
        wb_config_print(&c, cfg, 160);
    free(rows);
    return rc;
}

/* Run a case; returns 0 and fills cfg/sha, or fills why. With `twice`, also checks determinism; with
 * `invariant_m` (> 0), runs in batch-invariant mode and checks the rows of M = invariant_m too, whose
 * kernel goes to sha2/cfg2. */
static int run_gpu(selftest *t, cli_host *h, int twice, int64_t invariant_m, const wb_config *forced, char *sha,
                   char *cfg, char *sha2, char *cfg2, char *why, size_t wsz)
{
    dev d = {0};
    const char *step = "wb_layer_create";
    wb_status s = wb_layer_create(t->gpu, &h->f, h->n, h->k, &h->hw, &d.layer);
    if (s == WB_OK && forced && (step = "wb_layer_set_config", 1))
        s = wb_layer_set_config(d.layer, forced);
    if (s == WB_OK && (step = "wb_gpu_alloc", 1))
        s = wb_gpu_alloc(t->gpu, h->lay.bytes[F_A], &d.a);
    if (s == WB_OK)
        s = wb_gpu_alloc(t->gpu, h->lay.bytes[F_OUT], &d.out);
    if (s == WB_OK && quantized_acts(&h->f))
        s = wb_gpu_alloc(t->gpu, h->lay.bytes[F_ASCALE], &d.a_scale);
    if (s == WB_OK && (step = "wb_gpu_upload", 1))
        s = cli_upload_acts(t->gpu, &h->f, h->m, h->k, h->buf[F_A], h->lay.bytes[F_A], d.a);
    if (s == WB_OK && d.a_scale)
        s = wb_gpu_upload(t->gpu, d.a_scale, h->buf[F_ASCALE], h->lay.bytes[F_ASCALE]);
    if (s == WB_OK && h->f.ags && (s = wb_gpu_alloc(t->gpu, 4, &d.a_global)) == WB_OK)
        s = wb_gpu_upload(t->gpu, d.a_global, h->buf[F_AGLOBAL], 4);
    if (s == WB_OK && (step = "gemm", 1))
        s = launch(t, &d, h, h->buf[F_OUT]);
    wb_config c;
    if (s == WB_OK && (step = "wb_layer_last_kernel", 1) && (s = wb_layer_last_kernel(d.layer, &c, sha)) == WB_OK)
        wb_config_print(&c, cfg, 160);
    int rc = s == WB_OK ? 0 : 1;
    if (rc)
        snprintf(why, wsz, "%s: %s", step, *wb_last_error() ? wb_last_error() : wb_status_str(s));
    if (!rc && twice) {
        void *again = malloc(h->lay.bytes[F_OUT]);
        if (!again || (s = launch(t, &d, h, again)) != WB_OK)
            snprintf(why, wsz, "second run: %s", again ? wb_last_error() : "out of host memory"), rc = 1;
        else if (memcmp(again, h->buf[F_OUT], h->lay.bytes[F_OUT]) != 0)
            snprintf(why, wsz, "not deterministic: two runs differ bitwise"), rc = 1;
        free(again);
    }
    if (!rc && invariant_m > 0)
        rc = check_invariant(t, &d, h, invariant_m, sha2, cfg2, why, wsz);
    if (d.a)
        wb_gpu_free(t->gpu, d.a);
    if (d.a_scale)
        wb_gpu_free(t->gpu, d.a_scale);
    if (d.a_global)
        wb_gpu_free(t->gpu, d.a_global);
    if (d.out)
        wb_gpu_free(t->gpu, d.out);
    wb_layer_destroy(d.layer);
    return rc;
}

static void run_case(selftest *t, const plan_case *pc, int index, int twice)
{
    wb_format f;
    cli_host h;
    char spec[512] = "", why[768] = "", sha[65] = "", cfg[160] = "", sha2[65] = "", cfg2[160] = "";
    /* an invariance case computes M = INVARIANT_M against the reference and its own M against that */
    int64_t m = pc->invariant ? INVARIANT_M : pc->m, invariant_m = pc->invariant ? pc->m : 0;
    double err = NAN;
    int64_t bad = 0;
    int ok = 0;
    cli_rng rng = {t->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(index + 1))};
    if (wb_format_parse(pc->spec, &f) != WB_OK) {
        snprintf(why, sizeof why, "bad spec: %s", wb_last_error());
    } else if (cli_host_alloc(&h, &f, m, pc->n, pc->k) != 0) {
        snprintf(why, sizeof why, "out of host memory");
    } else {
        cli_spec_str(&f, spec, sizeof spec);
        cli_host_random_acts(&h, &rng);
        cli_host_random_weights(&h, &rng);
        if (quantized_acts(&f) && quantize_random_acts(&h, &rng) != 0)
            snprintf(why, sizeof why, "quantizing the activations failed: %s", wb_last_error());
        wb_config forced = case_forced(pc);
        int forces = pc->invariant || pc->tma || pc->slices || pc->split;
        if (!why[0] &&
            run_gpu(t, &h, twice, invariant_m, forces ? &forced : NULL, sha, cfg, sha2, cfg2, why, sizeof why) == 0 &&
            compare(&h, &rng, pc->full, &err, &bad) == 0) {
            double tol = tolerance(&f);
            if (bad)
                snprintf(why, sizeof why, "%lld non-finite outputs where the reference is finite", (long long)bad);
            else if (!(err <= tol))
                snprintf(why, sizeof why, "relative error %.3e > %.0e", err, tol);
            else
                ok = 1;
        } else if (!why[0]) {
            snprintf(why, sizeof why, "compare failed");
        }
        cli_host_free(&h);
    }
    if (sha[0])
        record_kernel(t, sha, spec, cfg, isnan(err) ? 0 : err, !ok);
    if (sha2[0])
        record_kernel(t, sha2, spec, cfg2, isnan(err) ? 0 : err, !ok);
    if (ok)
        t->passed++;
    else
        t->failed++;
    printf("%s %s m=%lld n=%lld k=%lld%s %s err=%.3e%s%s\n", ok ? "ok  " : "FAIL", pc->spec,
           (long long)pc->m, (long long)pc->n, (long long)pc->k,
           pc->invariant ? " (batch-invariant: rows bitwise equal at M 300)" :
           pc->tma ? tma_variants[pc->tma].label :
           pc->slices ? " (k_slices 4)" :
           pc->split ? " (split K, pairs)" :
           twice ? " (twice, bitwise)" : "",
           cfg2[0] ? cfg2 : cfg[0] ? cfg : "-", err, ok ? "" : ": ", why);
    fflush(stdout);
}

/* ---- the activation quantizer on the GPU (wb_gpu_quantize_acts) against the host reference, byte for
 * byte: s8, s4, e4m3 and e5m2 codes per token and per group, e2m1 with e8m0 or e4m3 block scales, from
 * f16 and bf16, on random values with an
 * all-zero row, outliers and values near zero. One line per case; its kernel goes into the ledger. */

/* Returns 1 for a case in this GPU's plan (its kernel builds for the GPU's target), which it runs when
 * `run`; 0 for one not in it. */
static int quant_case(selftest *t, const char *spec, int bf16, int64_t m, int64_t k, int index, int run)
{
    wb_format f;
    wb_type xt = {bf16 ? WB_KIND_BF16 : WB_KIND_F16, 16, 0, 0};
    char *ptx = NULL, sha[65] = "", cfg[32];
    if (wb_format_parse(spec, &f) != WB_OK || wb_quant_ptx(&f, xt, wb_gpu_arch(t->gpu), &ptx) != WB_OK)
        return 0; /* not built for this GPU: not in its plan */
    wb_sha256_hex(ptx, strlen(ptx), sha);
    free(ptx);
    if (!run)
        return 1;
    int64_t groups = m * (f.ag ? k / f.ag : 1);
    size_t n = (size_t)(m * k), sbytes = (size_t)groups * (size_t)wb_type_file_bytes(f.as); /* f32, or e8m0/e4m3 */
    uint16_t *x = malloc(n * 2);
    float *xf = malloc(n * sizeof *xf), *sc = malloc((size_t)groups * 4), *gs = malloc((size_t)groups * 4);
    uint8_t *codes = malloc(n), *gc = malloc(n);
    wb_devptr dx = 0, dc = 0, ds = 0, dg = 0;
    int64_t bad = 0;
    float global = 0, gg = -1; /* the tensor scale (ags=1): the reference's, the GPU's */
    cli_rng r = {t->seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(index + 1))};
    wb_status s = x && xf && sc && gs && codes && gc ? WB_OK : WB_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++) {
        double v = cli_rng_uniform(&r, -1, 1) * ((i / (size_t)k) % 3 == 0 ? 1e-3 : 1.0);
        if (cli_rng_next(&r) % 1000 == 0)
            v *= 50; /* outliers */
        if (m > 1 && (int64_t)(i / (size_t)k) == m / 2)
            v = 0; /* a row of zeros: scale 0, codes 0 */
        x[i] = bf16 ? wb_bf16_from_double(v) : wb_f16_from_double(v);
        xf[i] = (float)(bf16 ? wb_bf16_to_double(x[i]) : wb_f16_to_double(x[i]));
    }
    if (!s)
        s = wb_reference_quantize_acts(&f, m, k, xf, codes, sc, &global);
    size_t nc = (size_t)wb_acts_bytes(&f, m, k); /* the codes in the kernels' layout (s4: two to a byte) */
    if (!s && f.a.bits == 4 && !(s = wb_pack_acts(&f, m, k, codes, gc)))
        memcpy(codes, gc, nc);
    if (!s && !(s = wb_gpu_alloc(t->gpu, n * 2, &dx)) && !(s = wb_gpu_alloc(t->gpu, n, &dc)))
        s = wb_gpu_alloc(t->gpu, sbytes, &ds);
    if (!s && !(s = wb_gpu_upload(t->gpu, dx, x, n * 2)) && !(s = wb_gpu_memset(t->gpu, dc, 0xA5, n)))
        s = wb_gpu_memset(t->gpu, ds, 0xFF, sbytes); /* poison */
    if (!s && f.ags && !(s = wb_gpu_alloc(t->gpu, 4, &dg)))
        s = wb_gpu_memset(t->gpu, dg, 0xFF, 4);
    if (!s)
        s = f.ags ? wb_gpu_quantize_acts_g(t->gpu, &f, xt, m, k, dx, dc, ds, dg, NULL)
                  : wb_gpu_quantize_acts(t->gpu, &f, xt, m, k, dx, dc, ds, NULL);
    if (!s && !(s = wb_gpu_sync(t->gpu)) && !(s = wb_gpu_download(t->gpu, gc, dc, n)))
        s = wb_gpu_download(t->gpu, gs, ds, sbytes);
    if (!s && dg && !(s = wb_gpu_download(t->gpu, &gg, dg, 4)))
        bad += memcmp(&gg, &global, 4) != 0;
    for (size_t i = nc; !s && i < n; i++) /* past the packed codes: still the poison */
        bad += gc[i] != 0xA5;
    for (size_t i = 0; !s && i < nc; i++)
        bad += gc[i] != codes[i];
    bad += !s && memcmp(gs, sc, sbytes) != 0;
    int ok = !s && !bad;
    snprintf(cfg, sizeof cfg, "quantizer,x=%s", bf16 ? "bf16" : "f16");
    record_kernel(t, sha, spec, cfg, 0, !ok);
    printf("%s quant %s x=%s m=%lld k=%lld%s%s\n", ok ? "ok  " : "FAIL", spec, bf16 ? "bf16" : "f16", (long long)m,
           (long long)k, s ? ": " : bad ? ": codes or scales differ from the host reference" : "",
           s ? wb_last_error() : "");
    fflush(stdout);
    if (ok)
        t->passed++;
    else
        t->failed++;
    if (dx)
        wb_gpu_free(t->gpu, dx);
    if (dc)
        wb_gpu_free(t->gpu, dc);
    if (ds)
        wb_gpu_free(t->gpu, ds);
    if (dg)
        wb_gpu_free(t->gpu, dg);
    free(x), free(xf), free(sc), free(gs), free(codes), free(gc);
    return 1;
}

/* The quantizer's cases in this GPU's plan: run them when `run`; returns how many there are. */
static int run_quant_cases(selftest *t, int quick, int run)
{
    static const char *const specs[] = {"int8", "int8,ag=128", "fp8", "fp8-block", "a=e5m2,w=e4m3,ws=f32,g=0",
                                        "a=e5m2,ag=256,w=e4m3,ws=f32,g=0", "w4a4-int4", "w4a4-int4,ag=128",
                                        "a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32",
                                        "a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16", "nvfp4"};
    static const int64_t shapes[][2] = {{1, 4096}, {77, 1024}, {300, 8192}};
    int index = 0, count = 0;
    for (size_t sp = 0; sp < sizeof specs / sizeof specs[0]; sp++)
        for (int bf16 = 0; bf16 < 2; bf16++)
            for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
                if (!quick || sh == (sp + (size_t)bf16) % 3)
                    count += quant_case(t, specs[sp], bf16, shapes[sh][0], shapes[sh][1], index++, run);
    return count;
}

int cmd_selftest(int argc, char **argv)
{
    cli_args a;
    plan p = {0};
    selftest t = {0};
    uint64_t allowed = OPT(O_QUICK) | OPT(O_LIST) | OPT(O_PENDING) | OPT(O_LEDGER) | OPT(O_SEED) | OPT(O_DEVICE) | OPT(O_M) | OPT(O_ONLY) | OPT(O_SKIP) | OPT(O_ARCH);
    int device, rc = cli_parse(argc, argv, allowed, 0, &a);
    if (rc || (rc = cli_device(&a, &device)))
        return rc;
    int quick = cli_has(&a, O_QUICK), list = cli_has(&a, O_LIST);
    if (cli_has(&a, O_ARCH) && !list)
        return cli_fail(CLI_USAGE, "selftest: --arch goes with --list (a run takes the GPU's architecture)");
    if (cli_has(&a, O_SEED)) {
        int64_t seed;
        if ((rc = cli_parse_i64("--seed", a.val[O_SEED], 0, INT64_MAX, &seed)))
            return rc;
        t.seed = (uint64_t)seed;
    } else {
        t.seed = ((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20)) & INT64_MAX;
    }
    /* the plan's target: the GPU's, or --arch's for --list (none: the cases common to every target) */
    if (!list && (rc = cli_lib_fail_if(wb_gpu_create(device, &t.gpu), "wb_gpu_create")))
        goto done;
    int arch = t.gpu ? (int)wb_gpu_arch(t.gpu) : cli_has(&a, O_ARCH) ? (int)a.arch : -1;
    if ((rc = plan_small(&p, quick)) || (rc = plan_big(&p, quick)) || (rc = plan_catalog(&p, quick)) ||
        (rc = plan_invariant(&p, quick)) || (rc = plan_tma(&p, quick, arch)) || (rc = plan_slices(&p, quick, arch)) ||
        (rc = plan_split(&p, quick, arch)) || (rc = plan_w8a8(&p, quick, arch)) || (rc = plan_gemv(&p, quick)))
        goto done;
    if (cli_has(&a, O_M)) { /* --m LIST: only the cases of these M (to re-validate kernels a change touched) */
        int kept = 0;
        for (int i = 0; i < p.count; i++)
            for (int j = 0; j < a.nm; j++)
                if (p.c[i].m == a.m[j]) {
                    p.c[kept++] = p.c[i];
                    break;
                }
        p.count = kept;
    }
    if (cli_has(&a, O_ONLY) || cli_has(&a, O_SKIP)) { /* --only/--skip TEXT: keep or drop the cases whose
                                                         spec or forced choices contain TEXT */
        int kept = 0;
        for (int i = 0; i < p.count; i++) {
            char text[600];
            snprintf(text, sizeof text, "%s %s", p.c[i].spec, case_choices(&p.c[i]));
            if ((!cli_has(&a, O_ONLY) || strstr(text, a.val[O_ONLY])) &&
                (!cli_has(&a, O_SKIP) || !strstr(text, a.val[O_SKIP])))
                p.c[kept++] = p.c[i];
        }
        p.count = kept;
    }
    const char *ledger = cli_has(&a, O_LEDGER) ? a.val[O_LEDGER] : DEFAULT_LEDGER;
    if (cli_has(&a, O_PENDING)) {
        if (arch < 0) {
            rc = cli_fail(CLI_USAGE, "selftest: --pending --list needs --arch (whose kernels to look up)");
            goto done;
        }
        if (keep_pending(&p, (wb_arch)arch, ledger)) {
            rc = cli_fail(CLI_USAGE,
                          "selftest --pending: cannot read the ledger %s (%s), so every case would be pending; "
                          "copy tests/gpu/ledger.tsv there first (--ledger names the file read and appended to), "
                          "or leave out --pending to run every case",
                          ledger, strerror(errno));
            goto done;
        }
    }
    if (cli_has(&a, O_LIST)) {
        for (int i = 0; i < p.count; i++)
            /* choices the case forces, comma-separated CLI words (tests/ledger_check.sh) */
            printf("%s\t%lld\t%lld\t%lld%s%s\n", p.c[i].spec, (long long)p.c[i].m, (long long)p.c[i].n,
                   (long long)p.c[i].k, *case_choices(&p.c[i]) ? "\t" : "", case_choices(&p.c[i]));
        goto done;
    }
    /* the activation quantizer's cases too: with the whole plan (--pending included: they are not in
     * p), or when --only names them */
    int quant = (!cli_has(&a, O_ONLY) && !cli_has(&a, O_M)) || (cli_has(&a, O_ONLY) && strstr("quant", a.val[O_ONLY]));
    int cases = p.count + (quant ? run_quant_cases(&t, quick, 0) : 0);
    printf("selftest: %d cases on %s (%s), seed %llu (rerun with --seed %llu)\n", cases,
           wb_gpu_name(t.gpu), wb_arch_name(wb_gpu_arch(t.gpu)), (unsigned long long)t.seed,
           (unsigned long long)t.seed);
    fflush(stdout);
    /* Determinism: the first multi-row small case runs twice and must agree bitwise. */
    int twice_at = 0;
    for (int i = 0; i < p.count; i++)
        if (p.c[i].m > 1) {
            twice_at = i;
            break;
        }
    /* each kernel's cases in the plan, so that it goes into the ledger as soon as its last one passes */
    for (int i = 0; i < p.count; i++) {
        char sha[65];
        wb_arch ga = wb_gpu_arch(t.gpu);
        kernel_rec *r;
        if (!case_kernel_sha(&p.c[i], ga, p.c[i].invariant ? INVARIANT_M : p.c[i].m, sha) && (r = kernel_of(&t, sha)))
            r->left++;
        if (p.c[i].invariant && !case_kernel_sha(&p.c[i], ga, p.c[i].m, sha) && (r = kernel_of(&t, sha)))
            r->left++;
    }
    t.ledger = ledger;
    for (int i = 0; i < p.count; i++)
        run_case(&t, &p.c[i], i, i == twice_at);
    if (quant)
        run_quant_cases(&t, quick, 1);
    int added = 0;
    rc = append_ledger(&t, ledger, NULL, &added);
    printf("selftest: %d passed, %d failed\n", t.passed, t.failed);
    if (t.failed)
        rc = cli_fail(CLI_FAILED, "selftest: %d of %d cases failed (seed %llu)", t.failed, cases,
                      (unsigned long long)t.seed);
done:
    free(p.c);
    free(t.k);
    wb_gpu_destroy(t.gpu);
    return rc;
}
