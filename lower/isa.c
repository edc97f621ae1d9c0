/* The instruction-family table (lower/isa.def): what each target runs natively, emulates, or lacks. */
#include "lower/isa.h"

#include "dsl/tile.h"

enum { _ = WB_ISA_ABSENT, N = WB_ISA_NATIVE, E = WB_ISA_EMULATED };

static const struct {
    const char *name, *what;
    unsigned char status[WB_ARCH_COUNT];
} rows[WB_ISA_COUNT] = {
#define X(id, name, what, a75, a80, a86, a89, a90, a100, a103, a120) \
    {name, what, {a75, a80, a86, a89, a90, a100, a103, a120}},
#include "lower/isa.def"
#undef X
};

int wb_isa_count(void) { return WB_ISA_COUNT; }

const char *wb_isa_name(int family)
{
    return family >= 0 && family < WB_ISA_COUNT ? rows[family].name : "?";
}

const char *wb_isa_what(int family)
{
    return family >= 0 && family < WB_ISA_COUNT ? rows[family].what : "?";
}

wb_isa_status wb_isa_get(wb_arch arch, int family)
{
    if (family < 0 || family >= WB_ISA_COUNT || (unsigned)arch >= WB_ARCH_COUNT)
        return WB_ISA_ABSENT;
    return (wb_isa_status)rows[family].status[arch];
}

int wb_isa_pick(wb_arch arch, const int *list, int *emulated)
{
    int native = -1;
    if (emulated)
        *emulated = -1;
    for (; *list >= 0; list++) {
        wb_isa_status st = wb_isa_get(arch, *list);
        if (st == WB_ISA_NATIVE && native < 0)
            native = *list;
        if (st == WB_ISA_EMULATED && emulated && *emulated < 0)
            *emulated = *list;
    }
    return native;
}

/* The formats a block-scaled fp4 MMA takes as they are: 4 (NVFP4 x NVFP4, ue4m3 per 16), 2 (MXFP4 x
 * MXFP4, ue8m0 per 32), else 0. */
static int block_scale_format(const wb_format *f)
{
    if (!f || !wb_format_fp4_acts(f) || !wb_type_w4(f->w) || f->w.kind != WB_KIND_FLOAT || f->zp != WB_ZP_NONE ||
        f->acc.kind != WB_KIND_F32)
        return 0;
    int e4m3 = f->as.kind == WB_KIND_FLOAT && f->as.ebits == 4 && f->as.mbits == 3;
    int same = f->as.kind == f->ws.kind && f->as.ebits == f->ws.ebits && f->as.mbits == f->ws.mbits;
    if (same && e4m3 && f->ag == 16 && f->g == 16)
        return 4;
    if (same && f->as.kind == WB_KIND_E8M0 && f->ag == 32 && f->g == 32)
        return 2;
    return 0;
}

int wb_isa_block_scale_vec(const wb_format *f, wb_arch arch)
{
    return wb_isa_get(arch, WB_ISA_MMA_MXF4NVF4) == WB_ISA_NATIVE ? block_scale_format(f) : 0;
}

int wb_isa_tc_block_scale_vec(const wb_format *f, wb_arch arch)
{
    int v = block_scale_format(f);
    return wb_isa_get(arch, v == 4 ? WB_ISA_TC05_MXF4NVF4 : WB_ISA_TC05_MXF4) == WB_ISA_NATIVE ? v : 0;
}
