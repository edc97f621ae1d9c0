/* Per-architecture facts as data: one row per target. Passes test features, never arch numbers. */
#ifndef WB_TARGET_H
#define WB_TARGET_H

#include "warble.h"

enum {
    WB_FEAT_MMA_K16 = 1 << 0,    /* mma.sync m16n8k16 f16/bf16 (else m16n8k8 f16 only) */
    WB_FEAT_BF16 = 1 << 1,       /* bf16 mma and bf16x2 fma */
    WB_FEAT_CP_ASYNC = 1 << 2,   /* cp.async with zero fill */
    WB_FEAT_LDMATRIX = 1 << 3,
    WB_FEAT_WGMMA = 1 << 4,
    WB_FEAT_TMA = 1 << 5,
    WB_FEAT_TCGEN05 = 1 << 6,
    WB_FEAT_GRIDDEP = 1 << 7,    /* griddepcontrol: programmatic dependent launch (sm_90 and newer) */
    WB_FEAT_CVT_FP4 = 1 << 8,    /* cvt.rn.f16x2.e2m1x2: a byte of two fp4 -> an f16 pair, one F2FP */
    WB_FEAT_CVT_FP8 = 1 << 9,    /* cvt.rn.f16x2.e4m3x2/e5m2x2: a .b16 of two fp8 -> an f16 pair. Native from
                                  * sm_89, but there it needs PTX 8.1 and sm_89 is emitted as .version 7.8:
                                  * set from sm_90a on */
    WB_FEAT_CLUSTER = 1 << 10,   /* thread block clusters: barrier.cluster, mapa, st.shared::cluster (sm_90 and
                                  * newer) */
};

typedef struct wb_target {
    wb_arch arch;
    const char *name;     /* "sm_90a" */
    const char *ptx_target;
    const char *ptx_version;
    int cc_major, cc_minor;
    unsigned features;
    int smem_max;         /* dynamic shared memory per block, opt-in maximum */
    int sm_count_hint;    /* a typical SM count, for heuristics without a GPU */
} wb_target;

const wb_target *wb_target_get(wb_arch a);

#endif
