/* The architecture table (facts from ../shared/ptx/MATRIX.md, verified with ptxas 13.0) and names. */
#include "lower/target.h"

#include <string.h>
#include <strings.h>
#include "dsl/common.h"

#define AMPERE (WB_FEAT_MMA_K16 | WB_FEAT_BF16 | WB_FEAT_CP_ASYNC | WB_FEAT_LDMATRIX)
/* what every target from sm_90 on has */
#define HOPPER_ON (AMPERE | WB_FEAT_TMA | WB_FEAT_GRIDDEP | WB_FEAT_CVT_FP8 | WB_FEAT_CLUSTER)
#define BLACKWELL_ON (HOPPER_ON | WB_FEAT_CVT_FP4)          /* the 'a' targets from sm_100a on */

static const wb_target targets[WB_ARCH_COUNT] = {
    {WB_ARCH_SM75, "sm_75", "sm_75", "7.8", 7, 5, WB_FEAT_LDMATRIX, 64 * 1024, 40},
    {WB_ARCH_SM80, "sm_80", "sm_80", "7.8", 8, 0, AMPERE, 163 * 1024, 108},
    {WB_ARCH_SM86, "sm_86", "sm_86", "7.8", 8, 6, AMPERE, 99 * 1024, 84},
    {WB_ARCH_SM89, "sm_89", "sm_89", "7.8", 8, 9, AMPERE, 99 * 1024, 128},
    {WB_ARCH_SM90A, "sm_90a", "sm_90a", "8.0", 9, 0, HOPPER_ON | WB_FEAT_WGMMA, 227 * 1024, 132},
    {WB_ARCH_SM100A, "sm_100a", "sm_100a", "8.6", 10, 0, BLACKWELL_ON | WB_FEAT_TCGEN05, 227 * 1024, 148},
    {WB_ARCH_SM103A, "sm_103a", "sm_103a", "8.8", 10, 3, BLACKWELL_ON | WB_FEAT_TCGEN05, 227 * 1024, 148},
    {WB_ARCH_SM120A, "sm_120a", "sm_120a", "8.7", 12, 0, BLACKWELL_ON, 99 * 1024, 84},
};

const wb_target *wb_target_get(wb_arch a)
{
    return (unsigned)a < WB_ARCH_COUNT ? &targets[a] : NULL;
}

const char *wb_arch_name(wb_arch a)
{
    return (unsigned)a < WB_ARCH_COUNT ? targets[a].name : "unknown";
}

static const struct {
    const char *alias;
    wb_arch arch;
} aliases[] = {
    {"turing", WB_ARCH_SM75}, {"t4", WB_ARCH_SM75}, {"sm75", WB_ARCH_SM75},
    {"ampere", WB_ARCH_SM80}, {"a100", WB_ARCH_SM80}, {"sm80", WB_ARCH_SM80},
    {"a10", WB_ARCH_SM86}, {"rtx30", WB_ARCH_SM86}, {"sm86", WB_ARCH_SM86},
    {"ada", WB_ARCH_SM89}, {"l4", WB_ARCH_SM89}, {"rtx40", WB_ARCH_SM89}, {"sm89", WB_ARCH_SM89},
    {"hopper", WB_ARCH_SM90A}, {"h100", WB_ARCH_SM90A}, {"h200", WB_ARCH_SM90A},
    {"sm_90", WB_ARCH_SM90A}, {"sm90", WB_ARCH_SM90A}, {"sm90a", WB_ARCH_SM90A},
    {"blackwell", WB_ARCH_SM100A}, {"b200", WB_ARCH_SM100A}, {"sm_100", WB_ARCH_SM100A},
    {"sm100a", WB_ARCH_SM100A},
    {"b300", WB_ARCH_SM103A}, {"sm_103", WB_ARCH_SM103A}, {"sm103a", WB_ARCH_SM103A},
    {"rtx50", WB_ARCH_SM120A}, {"sm_120", WB_ARCH_SM120A}, {"sm120a", WB_ARCH_SM120A},
};

wb_status wb_arch_parse(const char *name, wb_arch *out)
{
    if (!name || !out)
        return wb_fail(WB_ERR_INVALID, "wb_arch_parse: NULL argument");
    for (int i = 0; i < WB_ARCH_COUNT; i++)
        if (!strcasecmp(name, targets[i].name)) {
            *out = targets[i].arch;
            return WB_OK;
        }
    for (size_t i = 0; i < WB_COUNT(aliases); i++)
        if (!strcasecmp(name, aliases[i].alias)) {
            *out = aliases[i].arch;
            return WB_OK;
        }
    return wb_fail(WB_ERR_INVALID, "unknown architecture '%s' (sm_75, sm_80, sm_86, sm_89, sm_90a, "
                                   "sm_100a, sm_103a, sm_120a, or turing, ampere, ada, hopper, b200, "
                                   "b300, rtx50)", name);
}

wb_status wb_arch_from_cc(int major, int minor, wb_arch *out)
{
    /* The newest row not newer than the device: an sm_87 runs sm_86 code, sm_121 runs sm_120a. */
    int cc = major * 10 + minor, best = -1;
    for (int i = 0; i < WB_ARCH_COUNT; i++) {
        int t = targets[i].cc_major * 10 + targets[i].cc_minor;
        if (t <= cc && targets[i].cc_major == major)
            best = i;
    }
    if (best < 0 && major == 8)
        best = WB_ARCH_SM80;
    if (best < 0)
        return wb_fail(WB_ERR_UNSUPPORTED, "compute capability %d.%d is not a supported target", major,
                       minor);
    *out = targets[best].arch;
    return WB_OK;
}
