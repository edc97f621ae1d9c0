/* Global -> shared copies of one stage, for the cp.async pipelines (and plain 16-byte loads where the
 * target has no cp.async); the TMA pipeline's producer copies instead (lower_tma.c).
 * Each thread owns fixed 16-byte slots of every block tile. Their addresses at kt = 0 and their
 * predicates are computed once before the loop; an iteration only adds the k offset. Activation rows
 * past M are not loaded at all: a stale row only feeds output columns that are never stored. */
#include "lower/lower.h"

#include "lower/gemm_lower.h"

typedef void slot_fn(lw *L, wb_reg id, slot *out);

/* A tile's 16-byte slots are numbered [outer][warp slice][unit] (outer x warps_k x k_slices x unit in
 * all): the block's threads take them in turn, or with group_sync the warps of one wk take those of
 * their own slices, [outer][k_slices][unit], the same count per thread (the slice count is a multiple
 * of warps_k). */
static void plan_slots(lw *L, plan *p, int outer, int unit, slot_fn *fn)
{
    int ks = L->lay.ks, total = outer * L->lay.vk * unit;
    int threads = L->group_sync ? 32 * L->cfg->warps_n : L->lay.threads;
    int span = L->group_sync ? outer * ks * unit : total;
    wb_reg local = L->group_sync ? remi(L, L->tid, threads) : L->tid;
    p->n = 0;
    for (int i = 0; i * threads < span && p->n < WB_MAX_COPY_SLOTS; i++) { /* legalize checks */
        slot *sl = &p->s[p->n++];
        wb_reg idx = addi(L, local, (int64_t)i * threads), id = idx;
        if (L->group_sync) { /* [o][k_slices][unit] of wk -> [o][vk][unit]: o * vk * unit + (wk * ks) * unit + r */
            wb_reg o = divi(L, id, ks * unit), r = remi(L, id, ks * unit);
            wb_reg first = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(o), wb_imm((int64_t)L->lay.vk * unit),
                               wb_r(muli(L, L->vwk, unit)));
            id = add(L, first, r);
        }
        sl->pred = (wb_reg){-1};
        sl->wk = (wb_reg){-1};
        fn(L, id, sl);
        if ((i + 1) * threads > span) {
            wb_reg in = wb_new_reg(L->f, WB_RC_PRED);
            wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(in), wb_r(idx), wb_imm(span));
            if (sl->pred.id >= 0)
                wb_emit(L->f, WB_OP_AND, "pred", 3, wb_r(in), wb_r(in), wb_r(sl->pred));
            sl->pred = in;
        }
    }
}

/* A token's 128-byte slice row (64 16-bit activations, or 128 8-bit codes for W8A8 on wgmma): eight
 * 16-byte chunks swizzled by chunk ^ (row & 7), wgmma's 128B swizzle. */
static void slot_a(lw *L, wb_reg id, slot *sl)
{
    int bm = L->lay.bm, rows = L->gemv ? 1 : bm; /* gemv: token 0's row alone */
    wb_reg c = andi(L, id, 7), r = remi(L, shri(L, id, 3), rows), wk = divi(L, id, rows * 8);
    wb_reg row = add(L, L->m0, r);
    sl->pred = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(sl->pred), wb_r(row), wb_r(L->m));
    /* byte offset at kt = 0: (row*K + wk*slice_k) * a_bits / 8 + c*16 */
    wb_reg col = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(wk), wb_imm(L->lay.slice_k), wb_r(muli(L, c, 128 / L->lay.a_bits)));
    wb_reg elem = op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(row), wb_r(L->kdim));
    elem = op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(elem), wb_r(cvt(L, "u64.u32", WB_RC_B64, col)));
    if (L->lay.a_bits == 16)
        elem = op2(L, WB_OP_SHL, "b64", WB_RC_B64, wb_r(elem), wb_imm(1));
    sl->src = op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(L->a), wb_r(elem));
    /* shared: wk*bm*128 + r*128 + ((c ^ (r & 7)) * 16), swizzled against bank conflicts */
    wb_reg sw = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(c), wb_r(andi(L, r, 7)));
    wb_reg dst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(wk), wb_imm(bm * 128), wb_r(L->smem));
    dst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(r), wb_imm(128), wb_r(dst));
    dst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(sw), wb_imm(16), wb_r(dst));
    sl->dst = addi(L, dst, L->lay.a_off);
}

/* W8A8, W4A4 and fp4 activations: a token's slice is 64 codes in a row shorter than 128 bytes (rb = 64
 * s8 or fp8 bytes, or 32 bytes of 4-bit codes two to a byte, k even in the low nibble; fp4 codes land
 * at q_off, beside the 16-bit tile they become): rb / 16 chunks of 16 bytes,
 * swizzled by chunk ^ ((r / (128 / rb)) & (rb / 16 - 1)), so the 8 rows an ldmatrix reads (two or
 * four to a 128-byte line) hit distinct banks. */
static void slot_a_narrow(lw *L, wb_reg id, slot *sl)
{
    int bm = L->lay.bm, rb = L->lay.q_row ? L->lay.q_row : L->lay.a_row, chunks = rb / 16, lg_chunks = rb == 64 ? 2 : 1;
    wb_reg c = andi(L, id, chunks - 1), r = remi(L, shri(L, id, lg_chunks), bm), wk = divi(L, id, bm * chunks);
    wb_reg row = add(L, L->m0, r);
    sl->pred = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(sl->pred), wb_r(row), wb_r(L->m));
    /* byte index at kt = 0: row * (K bytes) + wk*rb + c*16 (s4: K is even) */
    wb_reg col = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(wk), wb_imm(rb), wb_r(muli(L, c, 16)));
    wb_reg kbytes = rb == 32 ? shri(L, L->kdim, 1) : L->kdim;
    wb_reg elem = op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(row), wb_r(kbytes));
    elem = op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(elem), wb_r(cvt(L, "u64.u32", WB_RC_B64, col)));
    sl->src = op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(L->a), wb_r(elem));
    /* shared: wk*bm*rb + r*rb + ((c ^ ((r >> (3 - lg_chunks)) & (chunks - 1))) * 16) */
    wb_reg sw = op2(L, WB_OP_XOR, "b32", WB_RC_B32, wb_r(c), wb_r(andi(L, shri(L, r, 3 - lg_chunks), chunks - 1)));
    wb_reg dst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(wk), wb_imm(bm * rb), wb_r(L->smem));
    dst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(r), wb_imm(rb), wb_r(dst));
    dst = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(sw), wb_imm(16), wb_r(dst));
    sl->dst = addi(L, dst, L->lay.q_row ? L->lay.q_off : L->lay.a_off);
}

static void slot_w(lw *L, wb_reg id, slot *sl)
{
    int wkn = L->lay.vk, wnn = L->cfg->warps_n, pieces = L->lay.w_bytes / 16;
    wb_reg piece = remi(L, id, pieces), wk = remi(L, divi(L, id, pieces), wkn);
    wb_reg wn = divi(L, id, pieces * wkn);
    if (L->ss) /* slot wk * warps_n + wn: a warpgroup's four strips side by side (plan_frag_w) */
        wn = remi(L, divi(L, id, pieces), wnn), wk = divi(L, id, pieces * wnn);
    /* ((strip0 + wn) * kchunks + wk) * w_bytes + piece*16 at kt = 0 */
    wb_reg cidx = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(add(L, L->strip0, wn)), wb_r(L->kchunks), wb_r(wk));
    sl->src = addr64(L, addr64(L, L->w, cidx, L->lay.w_bytes), piece, 16);
    sl->dst = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(id), wb_imm(16), wb_r(L->smem)), L->lay.w_off);
}

static void slot_s(lw *L, wb_reg id, slot *sl)
{
    int wkn = L->lay.vk, pieces = L->lay.groups_per_chunk * L->lay.rec_bytes / 16;
    wb_reg piece = remi(L, id, pieces);
    sl->wk = remi(L, divi(L, id, pieces), wkn);
    wb_reg wn = divi(L, id, pieces * wkn);
    wb_reg gidx = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(add(L, L->strip0, wn)), wb_r(L->ngroups));
    sl->src = addr64(L, addr64(L, L->s, gidx, L->lay.rec_bytes), piece, 16);
    sl->dst = addi(L, op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(id), wb_imm(16), wb_r(L->smem)), L->lay.s_off);
}

/* Copy 16 bytes: cp.async, or a plain load and a shared store (no cp.async on the target). */
static void copy16(lw *L, wb_reg dst, wb_reg src, wb_reg pred)
{
    if (async_copies(L)) {
        wb_emit(L->f, WB_OP_CP_ASYNC, NULL, 2, wb_r(dst), wb_r(src));
        if (pred.id >= 0)
            wb_guard_last(L->f, pred, 0);
        return;
    }
    wb_reg v[4];
    for (int i = 0; i < 4; i++)
        v[i] = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_LD_GLOBAL_V4, NULL, 5, wb_r(v[0]), wb_r(v[1]), wb_r(v[2]), wb_r(v[3]), wb_r(src));
    if (pred.id >= 0)
        wb_guard_last(L->f, pred, 0);
    wb_emit(L->f, WB_OP_ST_SHARED_V4, NULL, 5, wb_r(dst), wb_r(v[0]), wb_r(v[1]), wb_r(v[2]), wb_r(v[3]));
    if (pred.id >= 0)
        wb_guard_last(L->f, pred, 0);
}

static void issue_plan(lw *L, const plan *p, wb_reg stage_off, wb_reg koff)
{
    for (int i = 0; i < p->n; i++) {
        const slot *sl = &p->s[i];
        wb_reg src = koff.id >= 0 ? op2(L, WB_OP_ADD, "u64", WB_RC_B64, wb_r(sl->src), wb_r(koff)) : sl->src;
        copy16(L, add(L, sl->dst, stage_off), src, sl->pred);
    }
}




/* Issue the `parts` of the copies of block tile `kt` into the stage at offset `stage_off`. */
void wb_gemm_issue_parts(lw *L, wb_reg stage_off, wb_reg kt, int parts)
{
    int wkn = L->lay.vk;
    if (parts & COPY_ACTS) {
        int copied_bits = L->lay.q_row ? L->fmt->a.bits : L->lay.a_bits; /* fp4: the codes, not the 16-bit tile */
        wb_reg akoff = op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(kt), wb_imm(L->lay.bk * copied_bits / 8));
        issue_plan(L, &L->pa, stage_off, akoff);
    }
    if (!(parts & COPY_WEIGHTS))
        return;
    issue_plan(L, &L->pw, stage_off, op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(kt), wb_imm(wkn * L->lay.w_bytes)));
    for (int i = 0; i < L->ps.n; i++) {
        slot one = L->ps.s[i];
        wb_reg koff = {-1};
        if (L->fmt->g) { /* the first scale group of this k64 chunk */
            wb_reg chunk = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(kt), wb_imm(wkn), wb_r(one.wk));
            wb_reg group = L->fmt->g < WB_KW ? muli(L, chunk, WB_KW / L->fmt->g) : divi(L, chunk, L->fmt->g / WB_KW);
            koff = op2(L, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(group), wb_imm(L->lay.rec_bytes));
        }
        plan single = {1, {one}};
        issue_plan(L, &single, stage_off, koff);
    }
}

/* Issue the copies of block tile `kt` into the stage at offset `stage_off`. */
void wb_gemm_issue_stage(lw *L, wb_reg stage_off, wb_reg kt) { wb_gemm_issue_parts(L, stage_off, kt, COPY_ALL); }

/* Issue the copies of tile `next` into the write stage unless it is past K, and commit the group
 * either way (the cp.async group count stays one per iteration). */
void wb_gemm_issue_ahead(lw *L, wb_reg next)
{
    wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
    const char *skip = wb_new_label(L->f, "noissue");
    wb_emit(L->f, WB_OP_SETP_GE, "u32", 3, wb_r(p), wb_r(next), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_BRA_IF, NULL, 2, wb_r(p), wb_text(skip));
    wb_gemm_issue_stage(L, L->wo, next);
    wb_emit(L->f, WB_OP_LABEL, NULL, 1, wb_text(skip));
    wb_emit(L->f, WB_OP_CP_ASYNC_COMMIT, NULL, 0);
}

void wb_gemm_plan_copies(lw *L)
{
    int warps = L->cfg->warps_n * L->lay.vk; /* warp slices */
    int row = L->lay.q_row ? L->lay.q_row : L->lay.a_row; /* bytes of a token's slice as copied */
    /* gemv (M = 1): the token's row of each slice, not the tile's bm rows (past M, never read into a
     * stored column: the copies are not issued at all) */
    if (L->group_sync)
        L->gbar = addi(L, L->wk, 1);
    plan_slots(L, &L->pa, 1, (L->gemv ? 1 : L->lay.bm) * (row / 16), row < 128 ? slot_a_narrow : slot_a);
    plan_slots(L, &L->pw, L->cfg->warps_n, L->lay.w_bytes / 16, slot_w);
    plan_slots(L, &L->ps, L->cfg->warps_n, L->lay.s_stage / 16 / warps, slot_s);
}
