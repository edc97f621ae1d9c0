/* Instruction families per target as data (lower/isa.def). The public status type and queries are in
 * include/warble.h; the family ids are internal. */
#ifndef WB_ISA_H
#define WB_ISA_H

#include "warble.h"

enum {
#define X(id, name, what, a75, a80, a86, a89, a90, a100, a103, a120) WB_ISA_##id,
#include "lower/isa.def"
#undef X
    WB_ISA_COUNT
};

/* The first family of `list` (terminated by -1) that `arch` runs natively, or -1; `emulated` gets the
 * first one that ptxas would only emulate there (or -1). */
int wb_isa_pick(wb_arch arch, const int *list, int *emulated);

/* fp4 x fp4 whose block scales the MMA applies itself (sm_120a's block-scaled mma.sync): 4 for NVFP4
 * x NVFP4 (kind::mxf4nvf4 .scale_vec::4X, ue4m3 scales per 16 on both sides), 2 for MXFP4 x MXFP4
 * (kind::mxf4 .scale_vec::2X, ue8m0 per 32), 0 for every other format or target. Such a format's
 * weights are packed for that MMA on that target (lower/pack.c), so packing takes the arch. */
int wb_isa_block_scale_vec(const wb_format *f, wb_arch arch);

/* The same formats on tcgen05 (sm_100a, sm_103a; --mma tcgen05 only, lower/lower_tcgen05_bs.c):
 * kind::mxf4nvf4 .scale_vec::4X or kind::mxf4 .scale_vec::2X, or 0. Packing does not change: the
 * kernel reads the 16-bit layout's codes and scale records and makes the MMA's operands of them. */
int wb_isa_tc_block_scale_vec(const wb_format *f, wb_arch arch);

#endif
