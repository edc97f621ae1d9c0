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

#endif
