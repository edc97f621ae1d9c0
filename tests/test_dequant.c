/* The dequant rules, checked exactly on the CPU: the instruction IR that wb_lower_dequant emits is
 * run by a small interpreter on packed codes and scale records from wb_pack_weights, for every lane
 * of a 16 x 64 tile, and each result must equal the 16-bit rounding of (val_w - zero) * scale, or, in
 * the unscaled mode (the scale goes to the f32 product), val_w - zero exactly. The hardware e2m1
 * rule (a target with WB_FEAT_CVT_FP4; f16 only: bf16 keeps the bit moves, which cost less) is run with cvt.rn.f16x2.e2m1x2 modelled from
 * the reference codec, on every pair of codes at every position of every lane, and must give the
 * same bits as the bit moves (-0 included); for mxfp4, nvfp4-a16 and one f16 format also with every
 * finite scale. The hardware e4m3/e5m2 rule into f16 (a target with WB_FEAT_CVT_FP8) is run with
 * cvt.rn.f16x2.e4m3x2/e5m2x2 modelled from the reference codec, with every finite code at every
 * position of every lane, and must give the same bits as the bit moves. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower/codes.h"
#include "lower/layout.h"
#include "lower/lower.h"
#include "testutil.h"

/* ck_assert_msg for the per-lane, per-value checks: Check logs every passed assertion (a write per
 * call in fork mode), which would dominate the exhaustive walks; this one reports only failures. */
#define CHECK(cond, ...)                 \
    do {                                 \
        if (!(cond))                     \
            ck_abort_msg(__VA_ARGS__);   \
    } while (0)


static uint32_t opnd(const uint32_t *regs, wb_opnd o)
{
    return o.kind == WB_O_REG ? regs[o.v] : (uint32_t)o.v;
}

/* cvt.rn.f16x2.e2m1x2 d, b: the low nibble of the byte b to the low half of d, the high nibble to
 * the high half (PTX ISA), each converted exactly (every e2m1 value is an f16). */
static uint32_t cvt_f16x2_e2m1x2(const wb_func *f, wb_opnd src, const uint32_t *regs)
{
    CHECK(src.kind == WB_O_REG && f->reg_class[src.v] == WB_RC_B8, "the e2m1x2 source must be a .b8 register");
    uint32_t b = regs[src.v];
    CHECK(b < 256, "a .b8 register holds 0x%x", b);
    static wb_type e2m1;
    if (!e2m1.bits)
        CHECK(wb_type_parse("e2m1", &e2m1) == 0, "e2m1 is a type");
    return wb_f16_from_double(wb_type_decode(e2m1, b & 15)) | (uint32_t)wb_f16_from_double(wb_type_decode(e2m1, b >> 4)) << 16;
}

/* cvt.rn.f16x2.e4m3x2 / e5m2x2 d, h: the low byte of the .b16 h to the low half of d, the high byte
 * to the high half (PTX ISA), each converted exactly (every finite e4m3 and e5m2 value is an f16). */
static uint32_t cvt_f16x2_fp8x2(const wb_func *f, const char *name, wb_opnd src, const uint32_t *regs)
{
    CHECK(src.kind == WB_O_REG && f->reg_class[src.v] == WB_RC_B16, "the %sx2 source must be a .b16 register", name);
    uint32_t h = regs[src.v];
    CHECK(h < 65536, "a .b16 register holds 0x%x", h);
    wb_type t;
    CHECK(wb_type_parse(name, &t) == 0, "%s is a type", name);
    double lo = wb_type_decode(t, h & 255), hi = wb_type_decode(t, h >> 8);
    CHECK(isfinite(lo) && isfinite(hi), "a code that is not finite reached the conversion: 0x%04x", h);
    return wb_f16_from_double(lo) | (uint32_t)wb_f16_from_double(hi) << 16;
}


static void run(const wb_func *f, uint32_t *regs)
{
    for (int i = 0; i < f->ninsns; i++) {
        const wb_insn *in = &f->insns[i];
        uint32_t *d = in->nopnds ? &regs[in->o[0].v] : NULL;
        switch (in->op) {
        case WB_OP_COMMENT: break;
        case WB_OP_MOV: *d = opnd(regs, in->o[1]); break;
        case WB_OP_SHR: *d = opnd(regs, in->o[1]) >> opnd(regs, in->o[2]); break;
        case WB_OP_SHL: *d = opnd(regs, in->o[1]) << opnd(regs, in->o[2]); break;
        case WB_OP_AND: *d = opnd(regs, in->o[1]) & opnd(regs, in->o[2]); break;
        case WB_OP_LOP3: {
            uint32_t a = opnd(regs, in->o[1]), b = opnd(regs, in->o[2]), c = opnd(regs, in->o[3]), r = 0;
            int lut = (int)in->o[4].v;
            for (int bit = 0; bit < 32; bit++) {
                int idx = (int)((a >> bit & 1) << 2 | (b >> bit & 1) << 1 | (c >> bit & 1));
                r |= (uint32_t)(lut >> idx & 1) << bit;
            }
            *d = r;
            break;
        }
        case WB_OP_MAD_LO: *d = opnd(regs, in->o[1]) * opnd(regs, in->o[2]) + opnd(regs, in->o[3]); break;
        case WB_OP_PRMT: {
            uint64_t bytes = opnd(regs, in->o[1]) | (uint64_t)opnd(regs, in->o[2]) << 32;
            uint32_t sel = opnd(regs, in->o[3]), r = 0;
            for (int b = 0; b < 4; b++) {
                int n = sel >> (4 * b) & 15;
                CHECK(n < 8, "prmt sign-replicate mode is not modelled");
                r |= (uint32_t)(bytes >> (8 * n) & 0xFF) << (8 * b);
            }
            *d = r;
            break;
        }
        case WB_OP_FMA_X2:
            *d = wbt_fma_x2(!strcmp(in->type, "bf16x2"), opnd(regs, in->o[1]), opnd(regs, in->o[2]), opnd(regs, in->o[3]));
            break;
        case WB_OP_UNPACK_B8X4: /* mov.b32 {d0, d1, d2, d3}, s: byte i of s to di */
            for (int b = 0; b < 4; b++) {
                CHECK(f->reg_class[in->o[b].v] == WB_RC_B8, "unpacking into a .b8 register");
                regs[in->o[b].v] = opnd(regs, in->o[4]) >> (8 * b) & 0xFF;
            }
            break;
        case WB_OP_CVT:
            if (!strcmp(in->type, "u16.u32")) { /* the low half of a .b32 into a .b16 */
                CHECK(f->reg_class[in->o[0].v] == WB_RC_B16, "cvt.u16.u32 into a .b16 register");
                *d = opnd(regs, in->o[1]) & 0xFFFF;
            } else if (!strcmp(in->type, "rn.f16x2.e4m3x2") || !strcmp(in->type, "rn.f16x2.e5m2x2")) {
                *d = cvt_f16x2_fp8x2(f, in->type[10] == '4' ? "e4m3" : "e5m2", in->o[1], regs);
            } else {
                CHECK(!strcmp(in->type, "rn.f16x2.e2m1x2"), "cvt.%s is not modelled", in->type);
                *d = cvt_f16x2_e2m1x2(f, in->o[1], regs);
            }
            break;
        default: ck_abort_msg("the dequant emitted an op the test does not model: %d", in->op);
        }
    }
}

/* The 16 x 32 register pairs of a tile (two k-adjacent 4-bit codes each) over 256 tiles: position
 * p of tile t holds the byte perm[p][t], first code in the low nibble, from a random permutation of
 * 0..255 per position. Every pair of codes comes at every position of every lane, while the codes
 * of different positions stay unrelated (a bug that mixes fields shows). */
typedef uint8_t pair_walk[16 * 32][256];

static void pair_walk_init(pair_walk w, uint64_t *st)
{
    for (int p = 0; p < 16 * 32; p++) {
        for (int t = 0; t < 256; t++)
            w[p][t] = (uint8_t)t;
        for (int t = 255; t > 0; t--) {
            int j = (int)(wbt_next(st) % (uint64_t)(t + 1));
            uint8_t x = w[p][t];
            w[p][t] = w[p][j];
            w[p][j] = x;
        }
    }
}

/* How one tile is checked: scaled or not, the target the dequant is lowered for (NULL: none, the
 * rules every target runs), and the codes: random, or (walk set, 4-bit codes) tile `tile` of it. */
typedef struct mode {
    int scaled;
    const wb_target *target;
    uint8_t (*walk)[256];
    int tile;
    uint8_t (*walk8)[256]; /* 8-bit codes: position row * 64 + col of tile `tile` holds walk8[pos][tile] */
} mode;

/* What the dequant emitted: instructions (comments excluded) and hardware e2m1 conversions. */
typedef struct emitted {
    int insns, cvts;
} emitted;

static uint8_t tile_code(const wb_format *f, uint64_t *st, const mode *md, int row, int col)
{
    if (md->walk)
        return (uint8_t)(md->walk[row * 32 + col / 2][md->tile] >> (4 * (col & 1)) & 15);
    if (md->walk8) { /* a code that is not finite (the packer rejects it) is replaced by 0 */
        uint8_t c = md->walk8[row * 64 + col][md->tile];
        return isfinite(wb_format_weight_value(f, c)) ? c : 0;
    }
    uint8_t c;
    do
        c = (uint8_t)(wbt_next(st) & ((1u << f->w.bits) - 1));
    while (!isfinite(wb_format_weight_value(f, c)));
    return c;
}

static emitted check_tile(const char *spec, uint64_t *st, const mode *md)
{
    int scaled = md->scaled;
    emitted em = {0, 0};
    wb_format f;
    ck_assert_msg(wb_format_parse(spec, &f) == WB_OK, "%s: %s", spec, wb_last_error());
    int bf = f.a.kind == WB_KIND_BF16, bits = f.w.bits;
    const int n = 16, k = 64;
    int g = f.g ? f.g : k, groups = k / g;
    uint8_t codes[16 * 64], zero[16 * 4];
    unsigned char scale[16 * 4 * 4], zf[16 * 4 * 4];
    int sb = wb_type_file_bytes(f.ws);
    ck_assert(!md->walk || bits == 4);
    ck_assert(!md->walk8 || bits == 8);
    for (int i = 0; i < n * k; i++)
        codes[i] = tile_code(&f, st, md, i / k, i % k);
    for (int i = 0; i < n * groups; i++) {
        zero[i] = (uint8_t)(wbt_next(st) & ((1u << bits) - 1));
        double s = ((double)(wbt_next(st) % 2000) / 1000.0 - 1.0) * 0.05 + 0.001;
        uint32_t c = wb_type_encode(f.ws, f.ws.kind == WB_KIND_E8M0 ? fabs(s) * 64 : s);
        memcpy(scale + i * sb, &c, (size_t)sb);
        uint32_t z = wb_type_encode(f.ws, (double)(wbt_next(st) % 64) / 7.0);
        memcpy(zf + i * sb, &z, (size_t)sb);
    }
    float global = 0.75f;
    wb_host_weights hw = {.w = codes, .w_scale = scale, .w_global = f.wgs ? &global : NULL,
                          .w_zero = f.zp == WB_ZP_INT ? (void *)zero : f.zp == WB_ZP_FP ? (void *)zf : NULL};
    wb_packed p;
    ck_assert_msg(wb_pack_weights(&f, WB_ARCH_SM90A, n, k, &hw, &p) == WB_OK, "%s: %s", spec, wb_last_error());

    wb_arena *arena = wb_arena_create();
    wb_func fn;
    wb_func_init(&fn, arena);
    fn.target = md->target;
    wb_layout lay;
    wb_config cfg = {.m_tiles = 1, .warps_n = 1, .warps_k = 1, .stages = 2, .load = WB_LOAD_CP_ASYNC, .mma = WB_MMA_SYNC};
    wb_layout_get(&f, &cfg, WB_ARCH_SM90A, &lay);
    int gpc = lay.groups_per_chunk;
    wb_reg words[8], recs[16], out[16];
    for (int i = 0; i < bits; i++)
        words[i] = wb_new_reg(&fn, WB_RC_B32);
    for (int i = 0; i < gpc * 4; i++)
        recs[i] = wb_new_reg(&fn, WB_RC_B32);
    if (!scaled && (f.zp == WB_ZP_FP || gpc != 1)) { /* the unscaled mode needs one scale per slice */
        wb_arena_destroy(arena);
        wb_packed_free(&p);
        return em;
    }
    int gos[4];
    wb_dequant_natural_groups(&f, gpc, gos);
    wb_lower_dequant(&fn, &f, gos, scaled, words, recs, out);
    ck_assert(!fn.oom);
    for (int i = 0; i < fn.ninsns; i++) {
        em.insns += fn.insns[i].op != WB_OP_COMMENT;
        em.cvts += fn.insns[i].op == WB_OP_CVT;
    }
    /* lowered for a target: the rules every target runs (no target), on the same registers, must give
     * the same bits */
    wb_func ref;
    wb_func_init(&ref, arena);
    wb_reg rwords[8], rrecs[16], rout[16];
    for (int i = 0; i < bits; i++)
        rwords[i] = wb_new_reg(&ref, WB_RC_B32);
    for (int i = 0; i < gpc * 4; i++)
        rrecs[i] = wb_new_reg(&ref, WB_RC_B32);
    if (md->target) {
        wb_lower_dequant(&ref, &f, gos, scaled, rwords, rrecs, rout);
        ck_assert(!ref.oom);
    }
    uint32_t *rregs = calloc((size_t)ref.nregs, sizeof *rregs);
    uint32_t *regs = calloc((size_t)fn.nregs, sizeof *regs);
    const uint32_t *pw = p.w;
    const uint16_t *ps = p.scale;
    int rec16 = lay.rec_bytes / 2;
    for (int lane = 0; lane < 32; lane++) {
        int gid = lane / 4, tig = lane % 4;
        for (int i = 0; i < bits; i++) /* the kernel's loads: 8-bit codes swapped where gid is odd */
            regs[words[i].id] = pw[lane * bits + (i ^ wb_code_word_swap(bits, lane))];
        for (int gi = 0; gi < gpc; gi++) {
            const uint16_t *r = ps + gi * rec16; /* chunk 0: groups 0.. */
            uint32_t sp = r[2 * gid] | (uint32_t)r[2 * gid + 1] << 16;
            regs[recs[gi * 4 + 0].id] = (sp & 0xFFFF) * 0x10001u;
            regs[recs[gi * 4 + 1].id] = (sp >> 16) * 0x10001u;
            if (rec16 == 32) {
                uint32_t zpair = r[16 + 2 * gid] | (uint32_t)r[16 + 2 * gid + 1] << 16;
                regs[recs[gi * 4 + 2].id] = (zpair & 0xFFFF) * 0x10001u;
                regs[recs[gi * 4 + 3].id] = (zpair >> 16) * 0x10001u;
            }
        }
        run(&fn, regs);
        if (md->target) {
            for (int i = 0; i < bits; i++)
                rregs[rwords[i].id] = regs[words[i].id];
            for (int i = 0; i < gpc * 4; i++)
                rregs[rrecs[i].id] = regs[recs[i].id];
            run(&ref, rregs);
            for (int i = 0; i < 16; i++)
                CHECK(regs[out[i].id] == rregs[rout[i].id], "%s on %s: lane %d register %d: 0x%08x, the bit moves "
                      "0x%08x", spec, md->target->name, lane, i, regs[out[i].id], rregs[rout[i].id]);
        }
        for (int step = 0; step < 4; step++)
            for (int reg = 0; reg < 4; reg++)
                for (int half = 0; half < 2; half++) {
                    int row = gid + (reg & 1) * 8, col = step * 16 + (reg >> 1) * 8 + tig * 2 + half;
                    int q = col / g, idx = row / f.gn * groups + q;
                    uint32_t sw;
                    memcpy(&sw, scale + idx * sb, 4);
                    double s_exact = wb_type_decode(f.ws, sw & ((1ull << (8 * sb)) - 1)) * (f.wgs ? global : 1.0);
                    double s = wbt_half_to_double(bf, wbt_double_to_half(bf, s_exact));
                    double v = wb_format_weight_value(&f, codes[row * k + col]), want;
                    if (f.w.kind == WB_KIND_TABLE) /* a table value is rounded once to the compute type */
                        v = wbt_half_to_double(bf, wbt_double_to_half(bf, v));
                    if (f.zp == WB_ZP_INT)
                        v -= zero[idx];
                    if (!scaled) {
                        want = v; /* exact: a 16-bit value (a table value rounded once) minus an integer */
                    } else if (f.zp == WB_ZP_FP) {
                        uint32_t zc;
                        memcpy(&zc, zf + idx * sb, 4);
                        double c = wbt_half_to_double(bf, wbt_double_to_half(bf, -wb_type_decode(f.ws, zc & ((1ull << (8 * sb)) - 1)) * s_exact));
                        want = wbt_half_to_double(bf, wbt_double_to_half(bf, v * s + c));
                    } else {
                        want = wbt_half_to_double(bf, wbt_double_to_half(bf, v * s));
                    }
                    double got = wbt_half_to_double(bf, regs[out[step * 4 + reg].id] >> (16 * half) & 0xFFFF);
                    CHECK(got == want || (got == 0 && want == 0), "%s: lane %d step %d reg %d half %d "
                                  "(row %d, col %d, code 0x%x): got %.9g, want %.9g", spec, lane, step, reg, half,
                                  row, col, codes[row * k + col], got, want);
                }
    }
    free(regs);
    free(rregs);
    wb_arena_destroy(arena);
    wb_packed_free(&p);
    return em;
}

static void check_mode(const char *spec, uint64_t *st, int scaled)
{
    mode md = {scaled, NULL, NULL, 0, NULL};
    check_tile(spec, st, &md);
}

static void check_format(const char *spec, uint64_t *st)
{
    check_mode(spec, st, 1);
    check_mode(spec, st, 0);
}

START_TEST(every_integer_width)
{
    uint64_t st = wbt_seed();
    const char *act[] = {"f16", "bf16"};
    char spec[128];
    for (int a = 0; a < 2; a++)
        for (int b = 1; b <= 8; b++) {
            snprintf(spec, sizeof spec, "a=%s,w=int%d,g=64", act[a], b);
            check_format(spec, &st);
            snprintf(spec, sizeof spec, "a=%s,w=uint%d,g=32", act[a], b);
            check_format(spec, &st);
            snprintf(spec, sizeof spec, "a=%s,w=uint%d,zp=int,g=64", act[a], b);
            check_format(spec, &st);
            snprintf(spec, sizeof spec, "a=%s,w=int%d,zp=fp,g=16", act[a], b);
            check_format(spec, &st);
            snprintf(spec, sizeof spec, "a=%s,w=uint%d,zp=fp,g=0,ws=f32", act[a], b);
            check_format(spec, &st);
        }
}
END_TEST

START_TEST(every_small_float)
{
    uint64_t st = wbt_seed() ^ 0xf10a7;
    char spec[128];
    for (int x = 1; x <= 7; x++)
        for (int y = 0; x + y <= 7; y++) {
            snprintf(spec, sizeof spec, "a=bf16,w=e%dm%d,g=32,ws=bf16", x, y);
            check_format(spec, &st);
            if (x < 5 || (x == 5 && y == 2)) { /* e5mY other than e5m2 has codes beyond f16 */
                snprintf(spec, sizeof spec, "a=f16,w=e%dm%d,g=0,ws=f16", x, y);
                check_format(spec, &st);
            }
        }
}
END_TEST

START_TEST(lookup_tables)
{
    uint64_t st = wbt_seed() ^ 0x7ab1e;
    const char *specs[] = {"a=f16,w=nf4,g=64", "a=bf16,w=nf4,ws=e8m0,g=32",
                           "a=f16,w=lut4:-8:-5.5:-3.25:-2:-1.5:-1:-0.5:-0.125:0:0.25:0.75:1:2:3.5:6:100,g=0",
                           "a=bf16,w=lut4:1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16,ws=f32,g=16"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        check_format(specs[i], &st);
}
END_TEST

START_TEST(scale_types_blocks_and_presets)
{
    uint64_t st = wbt_seed() ^ 0x5ca1e;
    const char *specs[] = {"mxfp4", "nvfp4-a16", "mxint4", "a=f16,w=e2m1,ws=e8m0,g=32", "a=f16,w=uint4,ws=f32,g=32,gn=4",
                           "a=f16,w=uint4,ws=f32,g=16,gn=16,wgs=1", "a=f16,w=e4m3,ws=e5m2,g=64",
                           "a=bf16,w=int8,ws=e4m3,g=0", "w4a16,g=64", "w4a16-zp,g=32", "gptq-int3,g=64", "w8a16"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        check_format(specs[i], &st);
}
END_TEST

static pair_walk walk;

/* The first `tiles` tiles of the pair walk, scaled and unscaled, lowered for `arch`; returns what the
 * scaled [1] and unscaled [0] tiles emitted (the same for every tile; zero where a mode is skipped). */
typedef struct both {
    emitted m[2];
} both;

static both check_e2m1_pairs(const char *spec, wb_arch arch, int tiles)
{
    both em = {{{0, 0}, {0, 0}}};
    uint64_t st = wbt_seed() ^ 0xe2a1;
    for (int t = 0; t < tiles; t++)
        for (int scaled = 1; scaled >= 0; scaled--) {
            mode md = {scaled, wb_target_get(arch), walk, t, NULL};
            em.m[scaled] = check_tile(spec, &st, &md);
        }
    return em;
}

START_TEST(hardware_e2m1)
{
    /* f16 and bf16 (mxfp4, nvfp4-a16: one scale per 32 or 16 codes; g=0 and g=64 also run unscaled) */
    const char *specs[] = {"a=f16,w=e2m1,ws=e8m0,g=32", "a=f16,w=e2m1,ws=f16,g=0", "a=f16,w=e2m1,ws=e4m3,g=16,wgs=1",
                           "a=f16,w=e2m1,ws=f32,g=64", "mxfp4", "nvfp4-a16", "a=bf16,w=e2m1,ws=bf16,g=0",
                           "a=bf16,w=e2m1,ws=f32,g=64"};
    uint64_t st = wbt_seed() ^ 0x3a1c;
    pair_walk_init(walk, &st);
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        both bits = check_e2m1_pairs(specs[i], WB_ARCH_SM90A, 1);
        for (int a = 0; a < WB_ARCH_COUNT; a++) {
            const wb_target *t = wb_target_get((wb_arch)a);
            /* all 256 tiles where the hardware rule is used; the bit moves are every_small_float's */
            wb_format fm;
            ck_assert_int_eq(wb_format_parse(specs[i], &fm), WB_OK);
            int hw = (t->features & WB_FEAT_CVT_FP4) && wb_format_compute(&fm).kind == WB_KIND_F16; /* bf16: bit moves */
            both e = check_e2m1_pairs(specs[i], (wb_arch)a, hw ? 256 : 1);
            /* the hardware rule where the target has it: one cvt per register pair, and fewer instructions */
            for (int scaled = 0; scaled < 2; scaled++) {
                if (!bits.m[scaled].insns)
                    continue; /* the unscaled mode needs one scale per slice */
                ck_assert_msg(e.m[scaled].cvts == (hw ? 16 : 0), "%s on %s: %d cvt", specs[i], t->name, e.m[scaled].cvts);
                ck_assert_msg(!hw || e.m[scaled].insns < bits.m[scaled].insns, "%s on %s (%s): %d instructions, the "
                              "bit moves %d", specs[i], t->name, scaled ? "scaled" : "unscaled", e.m[scaled].insns,
                              bits.m[scaled].insns);
            }
        }
    }
}
END_TEST

/* 8-bit codes: every code (0..255) at every position of the 16 x 64 tile over 256 tiles, from a random
 * permutation per position. */
static uint8_t walk8[16 * 64][256];

static both check_fp8_codes(const char *spec, wb_arch arch, int tiles)
{
    both em = {{{0, 0}, {0, 0}}};
    uint64_t st = wbt_seed() ^ 0xf8f8;
    for (int t = 0; t < tiles; t++)
        for (int scaled = 1; scaled >= 0; scaled--) {
            mode md = {scaled, wb_target_get(arch), NULL, t, walk8};
            em.m[scaled] = check_tile(spec, &st, &md);
        }
    return em;
}

START_TEST(hardware_fp8)
{
    /* f16 with e4m3 and e5m2 codes (w8a16-style; per-channel and grouped scales, g=0 also unscaled);
     * bf16 keeps the bit moves everywhere */
    const char *specs[] = {"a=f16,w=e4m3,ws=f32,g=0", "a=f16,w=e5m2,ws=f32,g=0", "a=f16,w=e4m3,ws=f16,g=64",
                           "a=f16,w=e5m2,ws=f16,g=32", "a=f16,w=e4m3,ws=e8m0,g=32", "a=bf16,w=e4m3,ws=f32,g=0",
                           "a=bf16,w=e5m2,ws=bf16,g=64"};
    uint64_t st = wbt_seed() ^ 0x8e43;
    for (int p = 0; p < 16 * 64; p++) {
        for (int t = 0; t < 256; t++)
            walk8[p][t] = (uint8_t)t;
        for (int t = 255; t > 0; t--) {
            int j = (int)(wbt_next(&st) % (uint64_t)(t + 1));
            uint8_t x = walk8[p][t];
            walk8[p][t] = walk8[p][j];
            walk8[p][j] = x;
        }
    }
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        wb_format f;
        ck_assert(wb_format_parse(specs[i], &f) == WB_OK);
        both bits = check_fp8_codes(specs[i], WB_ARCH_SM89, 1);
        for (int a = 0; a < WB_ARCH_COUNT; a++) {
            const wb_target *t = wb_target_get((wb_arch)a);
            int hw = (t->features & WB_FEAT_CVT_FP8) != 0 && f.a.kind == WB_KIND_F16;
            both e = check_fp8_codes(specs[i], (wb_arch)a, hw ? 256 : 1);
            for (int scaled = 0; scaled < 2; scaled++) {
                if (!bits.m[scaled].insns)
                    continue;
                /* one cvt.u16.u32 and one conversion per register pair */
                ck_assert_msg(e.m[scaled].cvts == (hw ? 32 : 0), "%s on %s: %d cvt", specs[i], t->name, e.m[scaled].cvts);
                ck_assert_msg(!hw || e.m[scaled].insns < bits.m[scaled].insns, "%s on %s (%s): %d instructions, the "
                              "bit moves %d", specs[i], t->name, scaled ? "scaled" : "unscaled", e.m[scaled].insns,
                              bits.m[scaled].insns);
            }
        }
    }
}
END_TEST

/* Every finite scale (each 16-bit pattern of T) with every code in both halves: the rule lowered for
 * sm_100a (the hardware one into f16, the bit moves into bf16) gives the bits of the bit moves and of
 * the reference, the 16-bit rounding of
 * value * scale + -0 (the sign of a zero included). The scale records are set directly, as any
 * finite T value can come out of the packer (lower/pack.c). */
static void check_every_scale(const char *spec)
{
    wb_format f;
    ck_assert_msg(wb_format_parse(spec, &f) == WB_OK, "%s: %s", spec, wb_last_error());
    int bf = f.a.kind == WB_KIND_BF16;
    wb_codes cs;
    wb_codes_get(4, &cs);
    wb_layout lay;
    wb_config cfg = {.m_tiles = 1, .warps_n = 1, .warps_k = 1, .stages = 2, .load = WB_LOAD_CP_ASYNC, .mma = WB_MMA_SYNC};
    wb_layout_get(&f, &cfg, WB_ARCH_SM90A, &lay);
    int gpc = lay.groups_per_chunk;
    wb_arena *arena = wb_arena_create();
    wb_func fn[2];
    wb_reg words[2][4], recs[2][16], out[2][16];
    for (int j = 0; j < 2; j++) { /* 0: the hardware rule, 1: the bit moves */
        wb_func_init(&fn[j], arena);
        fn[j].target = j ? NULL : wb_target_get(WB_ARCH_SM100A);
        for (int i = 0; i < 4; i++)
            words[j][i] = wb_new_reg(&fn[j], WB_RC_B32);
        for (int i = 0; i < gpc * 4; i++)
            recs[j][i] = wb_new_reg(&fn[j], WB_RC_B32);
        int gos[4];
        wb_dequant_natural_groups(&f, gpc, gos);
        wb_lower_dequant(&fn[j], &f, gos, 1, words[j], recs[j], out[j]);
        ck_assert(!fn[j].oom);
    }
    int cvts = 0;
    for (int i = 0; i < fn[0].ninsns; i++)
        cvts += fn[0].insns[i].op == WB_OP_CVT;
    ck_assert_int_eq(cvts, bf ? 0 : 16); /* bf16 keeps the bit moves on sm_100a too (hw_e2m1) */
    /* codes: word i holds 4i..4i+3 in its low nibbles and their complements in the high ones, so every
     * code comes in the low half of some register pair and in the high half of another */
    uint32_t w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = 0;
        for (int r = 0; r < 4; r++)
            w[i] |= (uint32_t)(4 * i + r) << (4 * r) | (uint32_t)(15 - 4 * i - r) << (16 + 4 * r);
    }
    uint8_t code[16][2];
    unsigned seen[2] = {0, 0};
    for (int step = 0; step < 4; step++)
        for (int reg = 0; reg < 4; reg++) {
            int word, bit;
            wb_plane_field(&cs.plane[0], step, reg, &word, &bit);
            ck_assert(word < 4);
            for (int half = 0; half < 2; half++) {
                code[step * 4 + reg][half] = (uint8_t)(w[word] >> (bit + 16 * half) & 15);
                seen[half] |= 1u << code[step * 4 + reg][half];
            }
        }
    ck_assert(seen[0] == 0xFFFF && seen[1] == 0xFFFF);
    uint32_t *regs[2];
    for (int j = 0; j < 2; j++) {
        regs[j] = calloc((size_t)fn[j].nregs, sizeof *regs[j]);
        for (int i = 0; i < 4; i++)
            regs[j][words[j][i].id] = w[i];
    }
    uint32_t inf = bf ? 0x7F80 : 0x7C00;
    int scales = 0;
    for (uint32_t s = 0; s < 0x10000; s++) {
        if ((s & inf) == inf)
            continue;
        scales++;
        uint32_t sp = s | (s ^ 0x8000) << 16; /* the high halves: the scale of the other sign */
        for (int j = 0; j < 2; j++) {
            for (int i = 0; i < gpc * 4; i++)
                regs[j][recs[j][i].id] = sp;
            run(&fn[j], regs[j]);
        }
        for (int i = 0; i < 16; i++) {
            uint32_t got = regs[0][out[0][i].id];
            CHECK(got == regs[1][out[1][i].id], "%s, scale pair 0x%08x, register %d: 0x%08x, the bit moves 0x%08x",
                  spec, sp, i, got, regs[1][out[1][i].id]);
            for (int half = 0; half < 2; half++) {
                double v = wb_format_weight_value(&f, code[i][half]), sc = wbt_half_to_double(bf, sp >> (16 * half) & 0xFFFF);
                uint32_t want = wbt_double_to_half(bf, v * sc + -0.0);
                CHECK((got >> (16 * half) & 0xFFFF) == want, "%s, scale 0x%04x, code 0x%x: 0x%04x, want 0x%04x", spec,
                      sp >> (16 * half) & 0xFFFF, code[i][half], got >> (16 * half) & 0xFFFF, want);
            }
        }
    }
    ck_assert_int_eq(scales, bf ? 65536 - 2 * 128 : 65536 - 2 * 1024);
    for (int j = 0; j < 2; j++)
        free(regs[j]);
    wb_arena_destroy(arena);
}

START_TEST(hardware_e2m1_every_scale)
{
    const char *specs[] = {"mxfp4", "nvfp4-a16", "a=f16,w=e2m1,ws=e8m0,g=32"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        check_every_scale(specs[i]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dequant");
    TCase *t = tcase_create("dequant");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, every_integer_width);
    tcase_add_test(t, every_small_float);
    tcase_add_test(t, scale_types_blocks_and_presets);
    tcase_add_test(t, lookup_tables);
    tcase_add_test(t, hardware_e2m1);
    tcase_add_test(t, hardware_e2m1_every_scale);
    tcase_add_test(t, hardware_fp8);
    suite_add_tcase(s, t);
    return wbt_run(s);
}
