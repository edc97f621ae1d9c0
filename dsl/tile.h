/* Tile IR: what a GEMM kernel does, in block and warp tiles, independent of any target.
 * A kernel is a flat list of tile ops whose results are small integer values; the builder keeps a
 * sticky error; lower/ turns the list into instruction IR for one architecture. */
#ifndef WB_TILE_H
#define WB_TILE_H

#include "dsl/common.h"
#include "warble.h"

typedef enum wb_top {
#define X(name, str, nargs, doc) WB_TOP_##name,
#include "dsl/ops.def"
#undef X
    WB_TOP_COUNT
} wb_top;

/* k of one warp's slice: every fragment covers 16 channels x 64 k (lower/layout.h: WB_KW). */
#define WB_SLICE_K 64

/* An activation type as specs spell it: integers s8/s4, every other type by wb_type_name (format.c). */
const char *wb_format_act_name(wb_type t, char buf[8]);

/* An fp8 code the tensor cores multiply: e4m3 or e5m2. */
static inline int wb_type_fp8(wb_type t)
{
    return t.kind == WB_KIND_FLOAT && t.bits == 8 && ((t.ebits == 4 && t.mbits == 3) || (t.ebits == 5 && t.mbits == 2));
}

/* A 4-bit weight code the 8-bit MMAs take after widening it in registers: int4 or e2m1. */
static inline int wb_type_w4(wb_type t)
{
    return (t.kind == WB_KIND_INT && t.bits == 4) || (t.kind == WB_KIND_FLOAT && t.ebits == 2 && t.mbits == 1);
}

/* W4A4 on integers: s4 activations x int4 weights, the W8A8 kernel with 4-bit codes on both sides:
 * the native s4 MMA where the target has one (sm_75..sm_89), else both operands widened to s8 in
 * registers for the s8 MMA (lower/lower_widen.c). */
static inline int wb_format_w4a4(const wb_format *f)
{
    return f->a.kind == WB_KIND_INT && f->a.bits == 4 && f->w.kind == WB_KIND_INT && f->w.bits == 4;
}

/* W8A8: 8-bit activation codes times 8-bit weight codes on the MMA itself: s8 x int8 (the integer
 * MMA, s32 sums) or e4m3/e5m2 x e4m3/e5m2 (the fp8 MMA, f32 sums). The packed weight words are the
 * MMA's A registers as they are (no dequant; the m16n8k32 fragment is the same for any 8-bit code);
 * the scales are applied after K. W4A8 (int4 or e2m1 weights with s8 or fp8 activations) is the same
 * kernel with two A registers to a packed word, widened nibble by nibble before the MMA, exactly
 * (lower/lower_widen.c: to s8, or to e4m3 codes scaled by a power of two put back after K). */
static inline int wb_format_w8a8(const wb_format *f)
{
    /* s8 activations with int8 weights, or 4-bit weights (int4, e2m1) widened to s8 in registers
     * (W4A8); fp8 activations with fp8 weights, or 4-bit weights widened to e4m3 in registers */
    int w4 = wb_type_w4(f->w);
    int ints = f->a.kind == WB_KIND_INT && f->a.bits == 8 && ((f->w.kind == WB_KIND_INT && f->w.bits == 8) || w4);
    return ints || wb_format_w4a4(f) || (wb_type_fp8(f->a) && (wb_type_fp8(f->w) || w4));
}

/* fp4 activations (a=e2m1: NVFP4, MXFP4 and any e2m1 x weight format): the 16-bit kernel whose
 * activation fragment is dequantized in registers too. e2m1 codes arrive two to a byte, k even in the
 * low nibble; each token's code times its 8-bit block scale (as=e4m3 or e8m0) is exact in the compute
 * type (wb_format_compute), so the MMA multiplies exact values and sums them in f32; the tensor scales
 * (ags, wgs) multiply the f32 sums after K. */
static inline int wb_format_fp4_acts(const wb_format *f)
{
    return f->a.kind == WB_KIND_FLOAT && f->a.ebits == 2 && f->a.mbits == 1;
}

/* The 16-bit type the MMA multiplies: the activation type when it is f16 or bf16; with fp4
 * activations f16, or bf16 when a scale needs its range (e8m0 scales, bf16 weight scales) or the
 * weight type does (more than 5 exponent bits). */
static inline wb_type wb_format_compute(const wb_format *f)
{
    if (!wb_format_fp4_acts(f))
        return f->a;
    int bf = f->as.kind == WB_KIND_E8M0 || f->ws.kind == WB_KIND_E8M0 || f->ws.kind == WB_KIND_BF16 ||
             (f->w.kind == WB_KIND_FLOAT && f->w.ebits > 5);
    return (wb_type){.kind = bf ? WB_KIND_BF16 : WB_KIND_F16, .bits = 16};
}

/* W8A8 on fp8 codes (the fp8 MMA, f32 sums), as opposed to s8 x int8. */
static inline int wb_format_w8a8_fp8(const wb_format *f)
{
    return wb_format_w8a8(f) && f->a.kind == WB_KIND_FLOAT;
}

/* W8A8 whose sums take each slice's product apart (fp8's two-level sums; integer weights with group
 * scales): the wgmma kernel holds two accumulator tiles. */
static inline int wb_format_w8a8_slice_sums(const wb_format *f)
{
    return wb_format_w8a8(f) && (f->a.kind == WB_KIND_FLOAT || f->g > 0 || f->ag > 0);
}

/* The widest wgmma tile of a W8A8 format, in m-tiles of 8 tokens: 256 tokens with one tile of sums;
 * 128 with slice sums (two tiles); 64 with activation scales per group, whose 2 x m_tiles factors per
 * slice are registers too. (Per channel, the TMA pipeline also takes 192 tokens: lower/legalize.c.) */
static inline int wb_format_w8a8_max_mtiles(const wb_format *f)
{
    return !wb_format_w8a8_slice_sums(f) ? 32 : f->ag ? 8 : 16;
}

/* The operands a tile can hold. */
typedef enum wb_operand {
    WB_OPERAND_A,     /* activations, M x K */
    WB_OPERAND_W,     /* packed weight codes */
    WB_OPERAND_SCALE, /* grouped scale (and zero-offset) records */
    WB_OPERAND_ASCALE,/* activation scales per token and group (fp4 activations; read from global memory) */
} wb_operand;

typedef struct wb_tile_op {
    wb_top op;
    int result;         /* value id, or -1 */
    int args[5];        /* value ids */
    wb_operand operand; /* LOAD_TILE, LOAD_FRAG */
    int stages;         /* LOAD_TILE */
    int unscaled;       /* DEQUANT: leave the scale to MMA_SCALED */
} wb_tile_op;

typedef struct wb_kernel {
    wb_arena *arena;
    wb_format fmt;
    wb_config cfg;
    wb_tile_op *ops;
    int nops, cap, nvalues;
    int depth;           /* open K loops */
    int block_scale;     /* the MMA applies the block scales (wb_build_gemm): its scale_vec, or 0 */
    char error[256];     /* the first builder error; later calls do nothing */
} wb_kernel;

/* A kernel owns its arena: wb_kernel_destroy frees everything it built. */
wb_kernel *wb_kernel_create(const wb_format *f, const wb_config *cfg);
void wb_kernel_destroy(wb_kernel *k);

/* Builder calls. Each returns a value id (>= 0), or -1 once an error was recorded. */
int wb_load_tile(wb_kernel *k, wb_operand operand, int stages);
void wb_kloop(wb_kernel *k);
int wb_load_frag(wb_kernel *k, int tile);
int wb_dequant(wb_kernel *k, int codes, int scales);
/* fp4 activations: the A tile of codes and its ASCALE tile -> a 16-bit A tile, inside the K loop; its
 * fragments are then loaded as those of 16-bit activations */
int wb_dequant_tile(wb_kernel *k, int codes, int scales);
/* code - zero only; the scale is applied by wb_mma_scaled to the f32 product of the warp's slice (of
 * each half of it with g = 32) */
int wb_dequant_unscaled(wb_kernel *k, int codes, int records);
int wb_acc(wb_kernel *k);
void wb_mma(wb_kernel *k, int acc, int weights, int acts);
void wb_mma_scaled(wb_kernel *k, int acc, int weights, int acts, int scales);
/* fp4 x fp4 on a block-scaled MMA: the W and A code fragments with their SCALE and ASCALE fragments */
void wb_mma_block(wb_kernel *k, int acc, int weights, int wscales, int acts, int ascales);
void wb_kloop_end(wb_kernel *k);
void wb_epilogue(wb_kernel *k, int acc);

/* Check the whole list (balanced loops, operands defined before use, kinds match). */
wb_status wb_kernel_validate(const wb_kernel *k);
/* One op as text ("%3 = load_frag %1 (W)"), for dumps and PTX annotations. */
const char *wb_tile_op_text(wb_kernel *k, const wb_tile_op *op);
/* The whole kernel as text. */
void wb_kernel_print(wb_kernel *k, wb_buf *out);

/* The standard GEMM of this format, built from tile ops (dsl/gemm.c). block_scale: the target's MMA
 * applies this format's block scales (lower/isa.h, wb_isa_block_scale_vec), or 0. */
wb_kernel *wb_build_gemm(const wb_format *f, const wb_config *cfg, int block_scale);
/* Whether wb_build_gemm's kernel scales each slice's (or k32 group's) f32 product (wb_mma_scaled)
 * instead of the dequantized weights */
int wb_gemm_scales_products(const wb_format *f, const wb_config *cfg);

#endif
