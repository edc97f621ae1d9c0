/* Instruction IR construction: registers, labels, operands, append. */
#include "lower/insn.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void wb_func_init(wb_func *f, wb_arena *a)
{
    memset(f, 0, sizeof *f);
    f->arena = a;
}

static int grow(wb_func *f, void **p, int *cap, size_t elem, int need)
{
    if (need <= *cap)
        return 1;
    int cap2 = *cap ? *cap * 2 : 256;
    while (cap2 < need)
        cap2 *= 2;
    void *q = wb_arena_alloc(f->arena, (size_t)cap2 * elem);
    if (!q) {
        f->oom = 1;
        return 0;
    }
    if (*p)
        memcpy(q, *p, (size_t)*cap * elem);
    *p = q;
    *cap = cap2;
    return 1;
}

wb_reg wb_new_reg(wb_func *f, wb_rc rc)
{
    if (!grow(f, (void **)&f->reg_class, &f->reg_cap, 1, f->nregs + 1))
        return (wb_reg){0};
    f->reg_class[f->nregs] = (uint8_t)rc;
    return (wb_reg){f->nregs++};
}

const char *wb_new_label(wb_func *f, const char *stem)
{
    const char *s = wb_arena_printf(f->arena, "$L_%s_%d", stem, f->nlabels++);
    if (!s)
        f->oom = 1;
    return s ? s : "$L_oom";
}

wb_opnd wb_r(wb_reg r) { return (wb_opnd){WB_O_REG, r.id, NULL, NULL}; }
wb_opnd wb_imm(int64_t v) { return (wb_opnd){WB_O_IMM, v, NULL, NULL}; }
wb_opnd wb_hex(uint32_t v) { return (wb_opnd){WB_O_HEX, v, NULL, NULL}; }
wb_opnd wb_text(const char *s) { return (wb_opnd){WB_O_TEXT, 0, s, NULL}; }
wb_opnd wb_list(const wb_reg *r, int n) { return (wb_opnd){WB_O_LIST, n, NULL, r}; }

wb_opnd wb_f32(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return (wb_opnd){WB_O_F32, bits, NULL, NULL};
}

wb_opnd wb_f64(double v)
{
    int64_t bits;
    memcpy(&bits, &v, 8);
    return (wb_opnd){WB_O_F64, bits, NULL, NULL};
}

wb_insn *wb_emit(wb_func *f, wb_op op, const char *type, int n, ...)
{
    if (n > WB_MAX_OPNDS || !grow(f, (void **)&f->insns, &f->cap, sizeof(wb_insn), f->ninsns + 1))
        return NULL;
    wb_insn *in = &f->insns[f->ninsns++];
    memset(in, 0, sizeof *in);
    in->op = op;
    in->type = type;
    in->nopnds = n;
    in->guard = -1;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        in->o[i] = va_arg(ap, wb_opnd);
    va_end(ap);
    return in;
}

void wb_guard_last(wb_func *f, wb_reg pred, int negate)
{
    if (!f->ninsns)
        return;
    f->insns[f->ninsns - 1].guard = pred.id;
    f->insns[f->ninsns - 1].guard_neg = negate;
}
