/* The lowering pipeline: legalize a (format, target, config), then tile IR -> instruction IR. */
#ifndef WB_LOWER_H
#define WB_LOWER_H

#include "dsl/tile.h"
#include "lower/insn.h"
#include "lower/target.h"

/* Refuse, with a reason, what this target or this build cannot do. The config must be complete. */
wb_status wb_legalize(const wb_format *f, const wb_target *t, const wb_config *cfg);
/* The range of k_slices (0: let the heuristic choose), before any other rule. */
wb_status wb_legalize_k_slices(const wb_config *c);
/* 8-bit activations: a warp's k_slices slices of a stage lie in one scale group along K of each of
 * g and ag (their product is scaled once) */
int wb_k_slices_share_scales(const wb_format *f, int k_slices);
/* Whether a gemv kernel (wb_config.gemv) is built for this format and config */
int wb_gemv_applies(const wb_format *f, const wb_config *c);
/* The format part alone (what any config would need). */
wb_status wb_legalize_format(const wb_format *f, const wb_target *t);
/* mma.sync lowering of the standard GEMM (lower/lower_gemm.c). */
wb_status wb_lower_gemm(wb_kernel *k, const wb_target *t, int annotate, wb_func *f);

/* The activation quantizer (lower_quant.c): what it accepts, its grid for M x K (the group count and
 * size it takes as parameters), and its entry name. */
wb_status wb_quant_check(const wb_format *f, wb_type x, wb_arch arch);
wb_status wb_quant_dims(const wb_format *f, int64_t m, int64_t k, wb_launch_dims *d, uint32_t *groups,
                        uint32_t *gsize);
const char *wb_quant_entry(void);
/* Its instructions into fn (wb_func_init'ed on an arena; fn->target set here): what wb_quant_ptx prints,
 * and what the CPU interpreter of the tests runs. */
wb_status wb_lower_quant(const wb_format *f, wb_type x, wb_arch arch, wb_func *fn);
/* e2m1 with a tensor scale (ags=1): the pass that writes it, launched before the quantizer, which reads it
 * (its p_global). Its parameters: p_x, p_global, p_n4 (chunks of 4 activations), p_part, p_reduce. Over
 * n4 chunks it takes wb_quant_global_blocks(n4) blocks (wb_quant_global_dims); with more than one, each
 * writes its maximum to p_part[block] (the quantizer's scale buffer: at least 4 bytes a block), and a
 * second launch, one block, with p_x = p_part, p_n4 = the blocks, p_reduce = 1, writes the scale. */
wb_status wb_lower_quant_global(const wb_format *f, wb_type x, wb_arch arch, wb_func *fn);
int wb_quant_global_blocks(int64_t n4);
void wb_quant_global_dims(wb_launch_dims *d, int blocks);
const char *wb_quant_global_entry(void);

/* Dequantize one warp's k64 slice (lower/lower_dequant.c): `words` the lane's B code words, `scales`
 * 4 registers per scale group (scale pair for row gid, for gid + 8, then the zero pairs), the group
 * of k16 step s being scales[group_of_step[s] * 4 ..]; writes the 16 T-pair registers of the 4 k16
 * steps in MMA A order (step * 4 + reg). `scaled` = 0 leaves the scale out (code - zero only: the
 * caller scales the f32 product) and reads only the zero pairs. f->target, when set, may pick a
 * cheaper exact rule (the hardware e2m1 conversion). */
void wb_lower_dequant(wb_func *f, const wb_format *fmt, const int group_of_step[4], int scaled, const wb_reg *words,
                      const wb_reg *scales, wb_reg out[16]);
/* The raw rule (lower_dequant.c): one-plane integer codes without a zero point record (3-bit ones, and
 * 2-bit ones in a gemv kernel: where it measured faster), into f16 for mma.sync; wb_dequant_raw says
 * whether it applies. The 16 registers hold u * 2^(lift - 24) exactly (lift: wb_dequant_raw_lift of
 * the register, 0 or the code width); the caller takes off the bias (signed codes): the MMA of the
 * constant registers wb_dequant_raw_zero(reg) (0: none, unsigned codes) on the same activations, or,
 * in a gemv kernel, bias x the token's activation sum x 2^(lift - 24); and multiplies each f32 sum by
 * 2^(24 - lift) of its row (registers 0 and 2: gid, 1 and 3: gid + 8). */
int wb_dequant_raw(const wb_format *fmt, int gemv);
int wb_dequant_raw_lift(const wb_format *fmt, int reg);
uint32_t wb_dequant_raw_zero(const wb_format *fmt, int reg);
/* steps: 2-bit codes of a gemv kernel on m16n8k16 (the caller pairs k16 steps 2j and 2j + 1 into one MMA
 * of their k-low registers and one of their k-high ones): register reg keeps lift 2 reg, so that no
 * field of a step's byte pair is shifted (lower_mma.c, mma_step_pairs) */
void wb_lower_dequant_raw(wb_func *f, const wb_format *fmt, int gemv, int steps, const wb_reg *words, wb_reg out[16]);
/* The group of each k16 step among a slice's records, in natural k order (wb_lower_dequant). */
void wb_dequant_natural_groups(const wb_format *fmt, int groups_per_chunk, int group_of_step[4]);

#endif
