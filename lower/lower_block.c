/* fp4 x fp4 on sm_120a's block-scaled MMA (L->bs = its scale_vec, lower/isa.h): NVFP4 x NVFP4 on
 * mma.sync m16n8k64 kind::mxf4nvf4 .scale_vec::4X (ue4m3 scales per 16), MXFP4 x MXFP4 on kind::mxf4
 * .scale_vec::2X (ue8m0 per 32). Nothing is dequantized: the packed e2m1 codes of both operands are the
 * MMA's registers as W4A4's s4 codes are (same m16n8k64 fragments), and the MMA multiplies each block
 * of 16 (32) products by its two scales itself. The f32 sums take the tensor scales in the epilogue.
 *
 * Scale registers (PTX ISA "Block Scaling for mma.sync", selectors {byte-id 0, thread-id 0}): the MMA
 * reads row m of A (channel m of the warp's 16) from lane 4 (m % 8) + m / 8, i.e. lanes of tig 0
 * carry channel gid and lanes of tig 1 channel gid + 8, and column n of B (token n of the m-tile)
 * from lane 4 n; K block j of the k64 step from byte j. Every lane loads a word (tig 2 and 3 the same
 * as tig 0 and 1); the MMA ignores the others.
 * - SFA: the packed weights' scale bytes (lower/pack.c: u32 per channel and k64 chunk), streamed into
 *   shared memory with the stage as the 16-bit kernels' scale records are, one ld.shared per slice.
 * - SFB: the activations' scale codes (M x K/ag bytes, p_ascale), one u32 (ag = 16) or u16 (ag = 32)
 *   per token and slice, read from global memory one tile ahead.
 * ue4m3 is unsigned and e4m3 scales may be negative (CONTRACT.md): the weights' signs are folded into
 * their codes when packing; an activation scale's sign flips the sign bits of its block's codes in the
 * lane's B registers (a prmt that replicates the scale byte's sign bit, one lop3 per register), and its
 * magnitude goes to the MMA. e8m0 scales have no sign. */
#include "lower/gemm_lower.h"

#include "lower/isa.h"

typedef struct block {
    wb_reg *next;    /* per m-tile: the token's scale word of the next tile (loaded one tile ahead) */
    wb_reg *row;     /* per m-tile: the token's first scale byte (tok * K/ag) */
    wb_reg *in;      /* per m-tile: token < M */
    wb_reg sel[2];   /* e4m3: prmt selectors, the sign of the scale byte of B register 0 and 1's block */
} block;

static int sfb_bytes(const lw *L) { return L->bs == 4 ? 4 : 2; }

/* The scale word of token row[mt] for block tile kt into dst, where `in` (and kt < nkt) hold. */
static void load_sfb(lw *L, const block *B, int mt, wb_reg kt, wb_reg dst)
{
    wb_reg p = wb_new_reg(L->f, WB_RC_PRED);
    wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(p), wb_r(kt), wb_r(L->nkt));
    wb_emit(L->f, WB_OP_AND, "pred", 3, wb_r(p), wb_r(p), wb_r(B->in[mt]));
    /* byte (kt * warps_k + wk) * (64 / ag) of the token's row */
    wb_reg slice = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(kt), wb_imm(L->cfg->warps_k), wb_r(L->wk));
    wb_reg at = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(slice), wb_imm(sfb_bytes(L)), wb_r(B->row[mt]));
    wb_block_load_sf(L, addr64(L, L->ascale, at, 1), sfb_bytes(L), p, dst);
}

/* An activation scale word of 4 bytes, or 2 zero-extended, at addr into dst where p holds (dst keeps
 * its value elsewhere): sm_120a's block-scaled mma.sync and tcgen05's (lower_tcgen05_bs.c). */
void wb_block_load_sf(lw *L, wb_reg addr, int bytes, wb_reg p, wb_reg dst)
{
    if (bytes == 4) {
        wb_emit(L->f, WB_OP_LD_GLOBAL, "u32", 2, wb_r(dst), wb_r(addr));
        wb_guard_last(L->f, p, 0);
        return;
    }
    wb_reg h = wb_new_reg(L->f, WB_RC_B16);
    wb_emit(L->f, WB_OP_MOV, "b16", 2, wb_r(h), wb_imm(0));
    wb_emit(L->f, WB_OP_LD_GLOBAL, "u16", 2, wb_r(h), wb_r(addr));
    wb_guard_last(L->f, p, 0);
    wb_emit(L->f, WB_OP_CVT, "u32.u16", 2, wb_r(dst), wb_r(h));
}

void wb_block_setup(lw *L)
{
    int mtn = L->cfg->m_tiles;
    block *B = wb_arena_alloc(L->f->arena, sizeof *B);
    wb_reg *regs = wb_arena_alloc(L->f->arena, (size_t)mtn * 3 * sizeof *regs);
    if (!B || !regs) {
        L->f->oom = 1;
        return;
    }
    L->block = B;
    B->next = regs, B->row = regs + mtn, B->in = regs + 2 * mtn;
    for (int mt = 0; mt < mtn; mt++) {
        wb_reg tok = addi(L, add(L, L->m0, L->gid), mt * 8);
        B->in[mt] = wb_new_reg(L->f, WB_RC_PRED);
        wb_emit(L->f, WB_OP_SETP_LT, "u32", 3, wb_r(B->in[mt]), wb_r(tok), wb_r(L->m));
        B->row[mt] = op2(L, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(tok), wb_r(L->arow));
        B->next[mt] = mov(L, "u32", WB_RC_B32, wb_imm(0));
        load_sfb(L, B, mt, mov(L, "u32", WB_RC_B32, wb_imm(0)), B->next[mt]);
    }
    if (L->bs == 4) { /* B register 0 holds k 8 tig .. + 7: block tig / 2; register 1 is 32 on: + 2 */
        B->sel[0] = op3(L, WB_OP_MAD_LO, "u32", WB_RC_B32, wb_r(shri(L, L->tig, 1)), wb_imm(0x1111), wb_imm(0x8888));
        B->sel[1] = addi(L, B->sel[0], 0x2222);
    }
}

/* SFA of this slice: the word of channel gid (tig 0, 2) or gid + 8 (tig 1, 3) at the read stage. */
void wb_block_frag_scale(lw *L, int value)
{
    wb_reg *r = value_regs(L, value, 1);
    if (!r)
        return;
    r[0] = wb_new_reg(L->f, WB_RC_B32);
    wb_emit(L->f, WB_OP_LD_SHARED, "u32", 2, wb_r(r[0]), wb_r(add(L, L->sfrag, L->ro)));
}

/* SFB of this slice, per m-tile: the word loaded during the previous tile; then the next tile's. */
void wb_block_frag_ascale(lw *L, int value)
{
    block *B = L->block;
    wb_reg *r = value_regs(L, value, L->cfg->m_tiles);
    if (!r || !B)
        return;
    wb_reg kn = addi(L, L->kt, 1);
    for (int mt = 0; mt < L->cfg->m_tiles; mt++) {
        r[mt] = mov(L, "b32", WB_RC_B32, wb_r(B->next[mt]));
        load_sfb(L, B, mt, kn, B->next[mt]);
    }
}

void wb_block_mma(lw *L, int acc, int weights, int wscales, int acts, int ascales)
{
    wb_reg *c = L->vals[acc], *a = L->vals[weights], *sa = L->vals[wscales], *b = L->vals[acts];
    wb_reg *sb = L->vals[ascales];
    block *B = L->block;
    if (!c || !a || !sa || !b || !sb || !B)
        return;
    int nv = L->bs == 4;
    const char *kind = nv ? "mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"
                          : "mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0";
    wb_emit(L->f, WB_OP_COMMENT, NULL, 1,
            wb_text(wb_arena_printf(L->f->arena,
                                    "mma rule: e2m1 x e2m1 -> f32 with %s block scales per %d applied by the MMA, "
                                    "mma.sync m16n8k64 kind::%s, native on %s (one block-scaled MMA per m-tile "
                                    "and k64; no dequant)",
                                    nv ? "ue4m3" : "ue8m0", nv ? 16 : 32, nv ? "mxf4nvf4 .scale_vec::4X"
                                                                             : "mxf4 .scale_vec::2X",
                                    L->t->name)));
    for (int mt = 0; mt < L->cfg->m_tiles; mt++) {
        wb_reg *d = &c[mt * 4], x[2] = {b[mt * 2], b[mt * 2 + 1]}, s = sb[mt];
        if (nv) { /* a negative scale: its sign onto the codes of its block, its magnitude to the MMA */
            for (int j = 0; j < 2; j++) {
                wb_reg sign = op3(L, WB_OP_PRMT, NULL, WB_RC_B32, wb_r(s), wb_r(s), wb_r(B->sel[j]));
                wb_reg flipped = wb_new_reg(L->f, WB_RC_B32); /* lop3 0x78: a ^ (b & c) */
                wb_emit(L->f, WB_OP_LOP3, NULL, 5, wb_r(flipped), wb_r(x[j]), wb_r(sign), wb_hex(0x88888888),
                        wb_imm(0x78));
                x[j] = flipped;
            }
            s = andi(L, s, 0x7F7F7F7F);
        }
        wb_emit(L->f, WB_OP_MMA_BLOCK, kind, 16, wb_r(d[0]), wb_r(d[1]), wb_r(d[2]), wb_r(d[3]), wb_r(a[0]),
                wb_r(a[1]), wb_r(a[2]), wb_r(a[3]), wb_r(x[0]), wb_r(x[1]), wb_r(d[0]), wb_r(d[1]), wb_r(d[2]),
                wb_r(d[3]), wb_r(sa[0]), wb_r(s));
    }
}
