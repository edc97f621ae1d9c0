/* Instruction IR: a flat array of PTX-level instructions over typed virtual registers.
 * PTX has unbounded virtual registers, so nothing is allocated here: ptxas does that. */
#ifndef WB_INSN_H
#define WB_INSN_H

#include <stdint.h>
#include "dsl/common.h"

typedef enum wb_op {
#define X(name, tmpl) WB_OP_##name,
#include "lower/insn.def"
#undef X
    WB_OP_COUNT
} wb_op;

/* Register classes, each printed with its own prefix and .reg line (b8: the byte operand of the fp4
 * conversions, filled by unpacking a b32). */
typedef enum wb_rc { WB_RC_PRED, WB_RC_B16, WB_RC_B32, WB_RC_B64, WB_RC_F32, WB_RC_B8, WB_RC_COUNT } wb_rc;

typedef enum wb_opnd_kind { WB_O_NONE, WB_O_REG, WB_O_IMM, WB_O_F32, WB_O_F64, WB_O_HEX, WB_O_TEXT, WB_O_LIST } wb_opnd_kind;

typedef struct wb_reg {
    int id;
} wb_reg;

/* An operand: a register index, an integer immediate, an f32 constant (printed as exact bits),
 * a 32-bit hex constant, text (labels, symbols, special registers), or a braced register list of
 * v registers (wgmma's accumulators and A fragment). */
typedef struct wb_opnd {
    wb_opnd_kind kind;
    int64_t v;
    const char *text;
    const wb_reg *list;
} wb_opnd;

#define WB_MAX_OPNDS 16

typedef struct wb_insn {
    wb_op op;
    const char *type;    /* the %T suffix: "u32", "f16x2", ... */
    int nopnds;
    wb_opnd o[WB_MAX_OPNDS];
    int guard;           /* a predicate register that guards it (printed `@%p`), or -1 */
    int guard_neg;       /* guard on the predicate being false (`@!%p`) */
} wb_insn;

struct wb_target;

typedef struct wb_func {
    wb_arena *arena;
    const struct wb_target *target; /* the target it is lowered for (lower/target.h); NULL: none known */
    wb_insn *insns;
    int ninsns, cap;
    int nregs;
    uint8_t *reg_class;  /* per register */
    int reg_cap;
    int nlabels;
    int oom;             /* sticky out-of-memory */
} wb_func;

void wb_func_init(wb_func *f, wb_arena *a);
wb_reg wb_new_reg(wb_func *f, wb_rc rc);
const char *wb_new_label(wb_func *f, const char *stem);

wb_opnd wb_r(wb_reg r);
wb_opnd wb_imm(int64_t v);
wb_opnd wb_hex(uint32_t v);
wb_opnd wb_f32(float v);
wb_opnd wb_f64(double v);
wb_opnd wb_text(const char *s);
/* {r[0], ..., r[n-1]}: the array must outlive the function (allocate it in the arena) */
wb_opnd wb_list(const wb_reg *r, int n);

/* Guard the instruction just appended by a predicate (`@p`, or `@!p` when negate). */
void wb_guard_last(wb_func *f, wb_reg pred, int negate);

/* Append an instruction; returns it (NULL when out of memory). */
wb_insn *wb_emit(wb_func *f, wb_op op, const char *type, int n, ...);

#endif
