/* --load direct: the decode kernel with no shared memory in its K loop.
 *
 * Each warp streams its own slices straight from global memory into registers: the lane's code words
 * (its B words of the packed k64 chunk, one 16-byte load for int4), its scale record words (the pair of
 * channel scales gid and gid + 8 of each group, and of the zero terms) and its activation words (the
 * m16n8k16 B fragment: token m0 + 8 mt + gid, k 2 tig .. + 1 of each 8-element chunk). Nothing is
 * shared between warps until the split-K reduction after the loop, so there is no barrier in the loop
 * and warps drift freely; latency is hidden by loading `stages - 1` iterations ahead into as many
 * register sets, rotated by moves at the end of each slice. Weights and scales of the first
 * iterations are loaded before griddepcontrol.wait (no kernel writes them), activations after.
 * Activation rows past M are read from the tile's first row (m0 < M) instead: they only feed output
 * columns that are never stored. */
#include "lower/gemm_lower.h"

#include "lower/layout.h"

enum { D_MAX = 3, KS_MAX = 4, W_MAX = 8, S_MAX = 8, A_MAX = 16 };

typedef struct direct {
    int depth;                           /* iterations loaded ahead: stages - 1 */
    int nw, ns, na;                      /* words a slice: codes, scale records, activations */
    wb_reg w[KS_MAX][D_MAX][W_MAX];      /* [slice of the iteration][iterations ahead][word] */
    wb_reg s[KS_MAX][D_MAX][S_MAX];
    wb_reg a[KS_MAX][D_MAX][A_MAX];
    wb_reg s_once[S_MAX];                /* g = 0: one record for all of K, loaded before the loop */
    wb_reg wptr[KS_MAX];                 /* the next iteration's code words of each slice (u64) */
    wb_reg aptr[KS_MAX][2];              /* the next iteration's activation words, per m-tile (u64) */
    wb_reg sbase;                        /* the lane's word in the strip's first scale record (u64) */
    wb_reg next, more;                   /* the iteration loaded this time round, and whether it is below nkt */
} direct;

static wb_reg add64(lw *L, wb_reg base, wb_reg off64)
{
    return op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(base), wb_r(off64));
}

static wb_reg add64i(lw *L, wb_reg base, int64_t v)
{
    return v ? op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(base), wb_imm(v)) : base;
}

static void guard(lw *L, wb_reg pred)
{
    if (pred.id >= 0)
        wb_guard_last(L->f, pred, 0);
}

/* Code words of the next iteration of slice `sub` into w, then the pointer one iteration on. */
static void load_w(lw *L, direct *d, int sub, wb_reg *w, wb_reg pred)
{
    int bits = L->fmt->w.bits, vec = bits % 4 == 0 ? 4 : bits % 2 == 0 ? 2 : 1;
    for (int i = 0; i < d->nw; i += vec) {
        wb_reg at = add64i(L, d->wptr[sub], 4 * i);
        if (vec == 4)
            wb_emit(L->f, WB_OP_LD_GLOBAL_V4, NULL, 5, wb_r(w[i]), wb_r(w[i + 1]), wb_r(w[i + 2]), wb_r(w[i + 3]), wb_r(at));
        else if (vec == 2)
            wb_emit(L->f, WB_OP_LD_GLOBAL_V2, NULL, 3, wb_r(w[i]), wb_r(w[i + 1]), wb_r(at));
        else
            wb_emit(L->f, WB_OP_LD_GLOBAL, "u32", 2, wb_r(w[i]), wb_r(at));
        guard(L, pred);
    }
    wb_emit(L->f, WB_OP_ADD, "u64", 3, wb_r(d->wptr[sub]), wb_r(d->wptr[sub]), wb_imm((int64_t)L->lay.vk * L->lay.w_bytes));
}

/* Scale record words of k64 chunk `chunk`: per group of the chunk the scale pair, then the zero pair. */
static void load_s(lw *L, direct *d, wb_reg chunk, wb_reg *s, wb_reg pred)
{
    int g = L->fmt->g, zp = L->fmt->zp != WB_ZP_NONE, rec = L->lay.rec_bytes;
    wb_reg group = !g ? mov(L, "u32", WB_RC_B32, wb_imm(0)) : g < WB_KW ? muli(L, chunk, WB_KW / g) : divi(L, chunk, g / WB_KW);
    wb_reg at = addr64(L, d->sbase, group, rec);
    for (int gi = 0; gi < L->lay.groups_per_chunk; gi++)
        for (int z = 0; z <= zp; z++) {
            wb_emit(L->f, WB_OP_LD_GLOBAL, "u32", 2, wb_r(s[gi * (1 + zp) + z]), wb_r(add64i(L, at, gi * rec + z * 32)));
            guard(L, pred);
        }
}

/* Activation words of the next iteration of slice `sub`: b[8 mt + c] is chunk c (k 8c .. 8c + 7) of
 * token row mt, the lane's pair k 8c + 2 tig, + 1. */
static void load_a(lw *L, direct *d, int sub, wb_reg *a, wb_reg pred)
{
    for (int mt = 0; mt < L->cfg->m_tiles; mt++) {
        for (int c = 0; c < 8; c++) {
            wb_emit(L->f, WB_OP_LD_GLOBAL, "u32", 2, wb_r(a[8 * mt + c]), wb_r(add64i(L, d->aptr[sub][mt], 16 * c)));
            guard(L, pred);
        }
        wb_emit(L->f, WB_OP_ADD, "u64", 3, wb_r(d->aptr[sub][mt]), wb_r(d->aptr[sub][mt]), wb_imm((int64_t)L->lay.vk * 128));
    }
}

static void new_regs(lw *L, wb_reg *r, int n)
{
    for (int i = 0; i < n; i++)
        r[i] = wb_new_reg(L->f, WB_RC_B32);
}

/* The chunk (k64 along the strip) of slice `sub` in iteration `it`. */
static wb_reg chunk_of(lw *L, wb_reg it, int sub)
{
    return addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(it), wb_imm(L->lay.vk), wb_r(L->vwk)), sub);
}

void wb_direct_setup(lw *L, int pdl)
{
    direct *d = wb_arena_alloc(L->f->arena, sizeof *d);
    if (!d) {
        L->f->oom = 1;
        return;
    }
    L->direct = d;
    int ks = L->lay.ks, mtn = L->cfg->m_tiles, zp = L->fmt->zp != WB_ZP_NONE;
    d->depth = L->cfg->stages - 1;
    d->nw = wb_gemm_w_words(L);
    d->ns = L->lay.groups_per_chunk * (1 + zp);
    d->na = 8 * mtn;
    for (int sub = 0; sub < ks; sub++)
        for (int i = 0; i < d->depth; i++) {
            new_regs(L, d->w[sub][i], d->nw);
            new_regs(L, d->s[sub][i], d->ns);
            new_regs(L, d->a[sub][i], d->na);
            for (int j = 0; j < d->na; j++) /* rows past K are never loaded: defined values all the same */
                wb_emit(L->f, WB_OP_MOV, "b32", 2, wb_r(d->a[sub][i][j]), wb_imm(0));
        }
    /* the lane's code words: strip (strip0 + wn), chunk vwk + sub, 4 B bytes a lane */
    wb_reg strip = add(L, L->strip0, L->wn);
    for (int sub = 0; sub < ks; sub++) {
        wb_reg c0 = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(strip), wb_r(L->kchunks), wb_r(addi(L, L->vwk, sub)));
        wb_reg p = addr64(L, addr64(L, L->w, c0, L->lay.w_bytes), L->lane, 4 * L->fmt->w.bits);
        d->wptr[sub] = mov(L, "u64", WB_RC_B64, wb_r(p));
    }
    /* the lane's scale word: record of group 0 of the strip, pair gid */
    wb_reg rec0 = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(strip), wb_r(L->ngroups));
    d->sbase = add64(L, addr64(L, L->s, rec0, L->lay.rec_bytes), op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(L->gid), wb_imm(4)));
    /* the lane's activation words: row m0 + 8 mt + gid (m0 past M), k of chunk vwk + sub, pair tig */
    for (int mt = 0; mt < mtn; mt++) {
        wb_reg row = addi(L, add(L, L->m0, L->gid), 8 * mt), in = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(in), wb_r(row), wb_r(L->m));
        wb_reg r = wb_new_reg(L->f, WB_RC_B32);
        wb_emit(L->f, WB_OP_SELP, "b32", 4, wb_r(r), wb_r(row), wb_r(L->m0), wb_r(in));
        wb_reg elem = op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(r), wb_r(L->kdim));
        wb_reg base = addr64(L, add64(L, L->a, op2(L, WB_OP_SHL, "b64", WB_RC_B64, wb_r(elem), wb_imm(1))), L->tig, 4);
        for (int sub = 0; sub < ks; sub++)
            d->aptr[sub][mt] = mov(L, "u64", WB_RC_B64, wb_r(add64i(L, base, (int64_t)0)));
        for (int sub = 0; sub < ks; sub++) {
            wb_reg off = op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(addi(L, L->vwk, sub)), wb_imm(128));
            wb_emit(L->f, WB_OP_ADD, "u64", 3, wb_r(d->aptr[sub][mt]), wb_r(d->aptr[sub][mt]), wb_r(off));
        }
    }
    /* the first `depth` iterations: codes and scales, then (after the previous kernel) activations */
    if (!L->fmt->g) {
        new_regs(L, d->s_once, d->ns);
        load_s(L, d, mov(L, "u32", WB_RC_B32, wb_imm(0)), d->s_once, (wb_reg){-1});
    }
    for (int i = 0; i < d->depth; i++) {
        wb_reg it = mov(L, "u32", WB_RC_B32, wb_imm(i)), p = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(p), wb_r(it), wb_r(L->nkt));
        for (int sub = 0; sub < ks; sub++) {
            load_w(L, d, sub, d->w[sub][i], p);
            if (L->fmt->g)
                load_s(L, d, chunk_of(L, it, sub), d->s[sub][i], p);
        }
    }
    if (pdl)
        wb_emit(L->f, WB_OP_GRIDDEP_WAIT, NULL, 0);
    for (int i = 0; i < d->depth; i++) {
        wb_reg it = mov(L, "u32", WB_RC_B32, wb_imm(i)), p = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(p), wb_r(it), wb_r(L->nkt));
        for (int sub = 0; sub < ks; sub++)
            load_a(L, d, sub, d->a[sub][i], p);
    }
}

/* At the loop's head: which iteration this one loads (kt + depth), and whether there is one. */
void wb_direct_top(lw *L)
{
    direct *d = L->direct;
    d->next = addi(L, L->kt, d->depth);
    d->more = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(d->more), wb_r(d->next), wb_r(L->nkt));
}

static wb_reg *alias(lw *L, int value, const wb_reg *r, int n)
{
    wb_reg *v = value_regs(L, value, n);
    for (int i = 0; v && i < n; i++)
        v[i] = r[i];
    return v;
}

void wb_direct_frag_w(lw *L, int value)
{
    direct *d = L->direct;
    alias(L, value, d->w[L->sub][0], d->nw);
}

void wb_direct_frag_a(lw *L, int value)
{
    direct *d = L->direct;
    alias(L, value, d->a[L->sub][0], d->na);
}

/* The record words of this slice: per group the scale pair (or, for mma_scaled, the two scales as
 * f32) and the zero pair, as lower_frag_scale makes them from shared memory. */
void wb_direct_frag_scale(lw *L, int value)
{
    direct *d = L->direct;
    int gpc = L->lay.groups_per_chunk, zp = L->fmt->zp != WB_ZP_NONE, bf = L->T[0] == 'b';
    wb_reg *r = value_regs(L, value, gpc * 4);
    const wb_reg *words = L->fmt->g ? d->s[L->sub][0] : d->s_once;
    for (int gi = 0; r && gi < gpc; gi++)
        for (int z = 0; z <= zp; z++) {
            wb_reg rec = words[gi * (1 + zp) + z];
            if (!z && L->scale_f32) {
                for (int h = 0; h < 2; h++) {
                    wb_reg f = wb_new_reg(L->f, WB_RC_F32);
                    if (bf) { /* bf16 -> f32: the 16 bits on top */
                        wb_reg word = h ? andi(L, rec, 0xFFFF0000) : op2(L, WB_OP_SHL, "b32", WB_RC_B32, wb_r(rec), wb_imm(16));
                        wb_emit(L->f, WB_OP_MOV, "b32", 2, wb_r(f), wb_r(word));
                    } else {
                        wb_reg lo = wb_new_reg(L->f, WB_RC_B16), hi = wb_new_reg(L->f, WB_RC_B16);
                        wb_emit(L->f, WB_OP_UNPACK_B16X2, NULL, 3, wb_r(lo), wb_r(hi), wb_r(rec));
                        wb_emit(L->f, WB_OP_CVT, "f32.f16", 2, wb_r(f), wb_r(h ? hi : lo));
                    }
                    r[gi * 4 + h] = f;
                }
                continue;
            }
            r[gi * 4 + z * 2 + 0] = prmt(L, rec, 0x1010);
            r[gi * 4 + z * 2 + 1] = prmt(L, rec, 0x3232);
        }
}

/* After slice `sub` of an iteration: its register sets move one iteration on, and the last takes
 * iteration kt + depth (where there is one). */
void wb_direct_slice_end(lw *L)
{
    direct *d = L->direct;
    int sub = L->sub, last = d->depth - 1;
    for (int i = 0; i < last; i++) {
        for (int j = 0; j < d->nw; j++)
            wb_emit(L->f, WB_OP_MOV, "b32", 2, wb_r(d->w[sub][i][j]), wb_r(d->w[sub][i + 1][j]));
        for (int j = 0; L->fmt->g && j < d->ns; j++)
            wb_emit(L->f, WB_OP_MOV, "b32", 2, wb_r(d->s[sub][i][j]), wb_r(d->s[sub][i + 1][j]));
        for (int j = 0; j < d->na; j++)
            wb_emit(L->f, WB_OP_MOV, "b32", 2, wb_r(d->a[sub][i][j]), wb_r(d->a[sub][i + 1][j]));
    }
    load_w(L, d, sub, d->w[sub][last], d->more);
    if (L->fmt->g)
        load_s(L, d, chunk_of(L, d->next, sub), d->s[sub][last], d->more);
    load_a(L, d, sub, d->a[sub][last], d->more);
}
