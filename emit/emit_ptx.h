/* Instruction IR -> PTX text. */
#ifndef WB_EMIT_PTX_H
#define WB_EMIT_PTX_H

#include "lower/insn.h"

typedef struct wb_ptx_header {
    const char *version, *target, *entry;
    const char *const *params; /* "u64 p_out", ... */
    int nparams;
    int smem_align;            /* dynamic shared memory alignment, 0 = none */
    int max_threads;           /* .maxntid */
    const char *title;         /* a comment line at the top */
    int cluster;               /* > 1: .reqnctapercluster cluster, 1, 1 */
} wb_ptx_header;

/* Print a whole module; annotate adds the `// ir:` notes. Returns NULL on out of memory. */
char *wb_emit_ptx(const wb_func *f, const wb_ptx_header *h, int annotate);

#endif
