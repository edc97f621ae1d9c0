/* The block tiling and memory layouts that the lowering and the weight packer share.
 *
 * Packed weights (docs/layout.md): for each strip of 16 output channels and each k64 chunk,
 * 128 * B bytes: 32 lanes x B words, the lane's 32 codes in bit planes (lower/codes.h).
 * Scale records: for each strip and each scale group, 8 u32 scale pairs (T(s[n0+i]), T(s[n0+i+8]))
 * then, with a zero point, 8 u32 pairs of -(magic + zero) (zp=int) or -zero*scale (zp=fp) in the
 * compute type T.
 * W8A8 (a=s8, w=int8): per strip and k64 chunk 32 lanes x 8 words, the lane's words being its MMA A
 * registers of m16n8k32 as they are: [k32 step 0: a0 a1 a2 a3][step 1: a0 a1 a2 a3], s8 codes as bytes
 * (the two steps swapped where gid is odd: wb_code_word_swap, as for every 8-bit layout).
 * No scale records; the f32 channel scales are in the chan array (then the bias).
 * fp4 activations (a=e2m1): the 16-bit layout (their codes become a 16-bit tile in shared memory).
 * W4A4 (a=s4, w=int4): per strip and k64 chunk 32 lanes x 4 words, word j being register j of the
 * m16n8k64 s4 A fragment: row gid (j even) or gid + 8 (j odd), k 32 (j / 2) + 8 (lane % 4) + i in
 * nibble i. */
#ifndef WB_LAYOUT_H
#define WB_LAYOUT_H

#include <stdint.h>
#include "warble.h"

#define WB_KW 64 /* k per warp per stage */
#define WB_TC_M 128 /* tcgen05: channels per block, the MMA's M */
#define WB_MAX_COPY_SLOTS 32 /* 16-byte copies of one tile per thread and stage */

typedef struct wb_layout {
    int bm, bn, bk, threads; /* threads: the block's, the producer warpgroup included */
    int consumers;        /* threads that compute: all but --load tma's producer warpgroup (lower_tma.c) */
    int rec_bytes;        /* one scale record: 32, or 64 with a zero point */
    int slice_k;          /* k of one warp's slice of a block tile: 64, or 128 for W8A8 on wgmma */
    int ks, vk;           /* slices per warp per stage (k_slices, at least 1); slices of a stage along K
                             (warps_k * ks) */
    int w_bytes;          /* packed codes of one warp's slice: 128 * B per k64 */
    int a_bits, a_row;    /* bits of one activation code (16, 8 or 4), bytes of one token's row in a warp
                             slice (16-bit: 128; 8-bit: 64, or 128 on wgmma; s4: 32) */
    int q_row, q_off, q_stage; /* fp4 activations: the codes as copied (32-byte rows, two to a byte), where
                                  a stage holds them, and their bytes; the 16-bit tile they become is the
                                  A tile (a_row 128 at a_off). 0 otherwise */
    int groups_per_chunk; /* scale records per warp per stage */
    int a_stage, w_stage, s_stage, stage; /* bytes */
    int a_off, w_off, s_off;              /* offsets inside a stage */
    int red_bytes;        /* split-K reduction buffer */
    int split_bytes;      /* split_k 2: the second block's f32 (s32) sums, at offset 0 of the first's */
    int mbar_off;         /* TMA loads: per stage a `full` mbarrier (the producer's copies landed), then per
                             stage an `empty` one (every consumer is done with it), after the stages */
    int tc_a_off;         /* tcgen05: two dequantized weight tiles (128 channels x 128 bytes, swizzled
                             like the activation tile) after the stages, then two mbarriers (one per
                             tile: its MMAs' commit) at tc_mbar_off and the TMEM address at tc_tmem_off */
    int tc_mbar_off, tc_tmem_off;
    int tc_wide;          /* tcgen05, s8 activations where the target has no kind::i8 (sm_103a): both operands
                             widened to f16 for kind::f16; the weight tiles are then 2 k64 halves each, and
                             two 16-bit activation tiles (k128: 2 halves of bm x 128 bytes) at tc_x_off */
    int tc_x_off;
    int tc_bs;            /* tcgen05 block-scaled fp4 (wb_isa_tc_block_scale_vec: 4 or 2, else 0): the weight
                             tiles at tc_a_off hold e2m1 codes (128 rows of 32 bytes each); two SFA staging
                             chunks (512 bytes) and two SFB ones (1024) at tc_sf_off */
    int tc_sf_off;
    int out_row, out_bytes; /* the TMA pipeline (wgmma): the epilogue's 16-bit output tile in shared memory,
                               bm token rows of bn channels, each row padded by 16 bytes (2 * bn + 16:
                               the rows of a warp's 2-byte stores fall in distinct banks); else 0 */
    int out_off;          /* where it lies: over the stages (0), whose last reads are done by then, or
                             (persistent, whose stages fill for the next tile meanwhile, or where the
                             stages are smaller) after the mbarriers */
    int smem;             /* dynamic shared memory per block */
} wb_layout;

/* arch: the target, which decides whether s8 x s8 on tcgen05 is kind::i8 or widened to kind::f16 */
void wb_layout_get(const wb_format *f, const wb_config *cfg, wb_arch arch, wb_layout *out);
/* s8 W8A8 (a=s8, w=int8 or int4) on tcgen05 where the target has no tcgen05.mma kind::i8: both operands
 * are widened exactly to f16 and multiplied by kind::f16 with f32 sums (lower_tcgen05.c) */
int wb_tc_widens_s8(const wb_format *f, const wb_config *cfg, wb_arch arch);
/* W4A8 with fp8 activations (e4m3, e5m2) and int4 weights where the target's fp8 mma.sync is only
 * emulated and its fp8 wgmma native (sm_90a): on mma.sync both operands are widened exactly to f16
 * pairs in registers and multiplied by f16 m16n8k16 MMAs with f32 sums (lower_widen.c); the weights
 * keep their W8A8 packing, the activations their 8-bit tile */
int wb_w4a8_f16(const wb_format *f, wb_arch arch);
/* 8-bit float weights with 8-bit float activations (fp8 W8A8) on sm_90a, where every kernel is wgmma:
 * each strip's k128 chunk is packed as wgmma's shared-memory A operand, two 1024-byte atoms of the
 * K-major 128B swizzle (docs/layout.md), which the kernels read by descriptor instead of into
 * registers; 0 for every other format and target (the fragment layouts). */
int wb_w8_smem_operand(const wb_format *f, wb_arch arch);
/* Whether weights of format f packed for target a are laid out as target b's kernels read them
 * (wb_pack_weights: the layout differs only with wb_w8_smem_operand and the block-scaled MMA). */
int wb_packed_layout_same(const wb_format *f, wb_arch a, wb_arch b);
/* 8-bit codes: a lane whose gid (lane / 4) is odd holds the two 16-byte halves of its 32 bytes of a k64
 * chunk swapped (its word w at w ^ 4), so that each of the warp's two 16-byte loads of a chunk meets
 * every bank once (wb_gemm_load_w_words): lanes 32 bytes apart would read two to a bank. */
static inline int wb_code_word_swap(int bits, int lane) { return bits == 8 && (lane & 4) ? 4 : 0; }
/* The most 16-byte copies one thread makes of one tile (activations, codes or scales) per stage. */
int wb_layout_copy_slots(const wb_layout *L);
/* k64 slices a warp takes from a stage: k_slices, at least 1. */
static inline int wb_config_ks(const wb_config *c) { return c->k_slices > 1 ? c->k_slices : 1; }
/* Scale groups along K of a k-extent (one when g = 0). */
int64_t wb_layout_groups(const wb_format *f, int64_t k);

#endif
