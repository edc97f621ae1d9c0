/* The CPU interpreter of the instruction IR (lower/insn.h) that the W8A8 / fp4 / quantizer tests run
 * their kernels on: every thread of every block of a wb_func's grid, modelled on sm_90a (warps,
 * shared memory, mbarriers, TMA, wgmma, tcgen05, thread block clusters) with its race and bounds
 * checks. tests/interp.c's head comment describes the model. */
#ifndef WB_TESTS_INTERP_H
#define WB_TESTS_INTERP_H

#include <stdint.h>

#include "lower/insn.h"
#include "testutil.h"

/* Fail the running test with the message fmt (at file:line) through Check; in expect_failure's child,
 * write the message to its pipe and exit instead. Every failure the interpreter reports comes here. */
void interp_fail(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));

/* ck_abort_msg and CHECK(cond, fmt, ...) fail through interp_fail, so that the tests' own checks of a
 * kernel's output fail as the interpreter's do (in expect_failure's child too). */
#undef ck_abort_msg
#define ck_abort_msg(...) interp_fail(__FILE__, __LINE__, __VA_ARGS__)

#define CHECK(cond, ...)               \
    do {                               \
        if (!(cond))                   \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

/* NPARAMS: the kernel parameters run_func takes (interp.c's param_names: p_out, p_a, p_w, p_scale,
 * p_chan, p_m, p_n, p_k, p_ascale, p_aglobal, then the quantizer's p_x .. p_reduce); MAX_BUFS: the
 * global buffers one run may name. */
enum { NPARAMS = 19, MAX_BUFS = 8 };

/* What a buffer is to the kernel: its output; an input that the previous kernel on the stream may
 * write (activations and their scales); or the layer's own packed data, which no kernel writes. */
enum { BUF_OUT, BUF_INPUT, BUF_LAYER };

/* A host buffer the kernel may address through a parameter: every global access must lie inside one
 * (and a store inside the output), so a read past an array fails here, not only under ASan. Under
 * programmatic dependent launch (targets with griddepcontrol) only the layer's data may be touched
 * before griddepcontrol.wait. */
typedef struct gbuf {
    uintptr_t lo, hi;
    int kind;
    const char *name;
} gbuf;

/* The activations' CUtensorMap as the runtime encodes it (runtime/gpu.c), set by the test: a row-major
 * rows x cols matrix of elem-byte values at base, read in boxes of box_rows x box_cols (128 bytes) with
 * the 128-byte swizzle; out-of-bound elements read as zeros. The kernel reaches it as the generic
 * address of the parameter p_tmap, which the interpreter models as the value TMAP_ADDR (an address no
 * buffer can have). */
typedef struct fake_tmap {
    uint64_t base;
    int64_t rows, cols;
    int elem, box_rows, box_cols;
} fake_tmap;

/* Run the whole grid `d` of fn on params (NPARAMS values) with the nbufs global buffers bufs and the
 * tensor map tm (TMA kernels; else NULL), in clusters of `cluster` blocks along x (2 or 4; 0 or 1: one block
 * at a time). Every instruction is checked as interp.c's head comment says (accesses inside bufs and
 * shared memory, alignment, races of the async proxy and of async copies, mbarrier and tensor memory
 * use, deadlocks); the first violation fails the test through interp_fail. */
void run_func(const wb_func *fn, const wb_launch_dims *d, const uint64_t *params, const gbuf *bufs, int nbufs,
              const fake_tmap *tm, int cluster);

/* The extra shared-memory wavefronts (bank conflicts) of the last run_func's shared accesses of one
 * kind: each warp's first execution of each load or store in each block, served a phase of lanes at a
 * time (interp.c, extra_wavefronts). */
enum { INTERP_SH_LD16, INTERP_SH_LD8, INTERP_SH_LD4, INTERP_SH_ST16, INTERP_SH_ST4, INTERP_SH_LDMATRIX,
       INTERP_SH_KINDS };
long interp_shared_extra(int kind);
/* The instruction a kind names, for messages. */
const char *interp_shared_kind(int kind);

/* Run fn(arg) in a child process, where it must fail in the interpreter (interp_fail) with a message
 * that holds want and want2 (when not NULL); fails the test otherwise. what names the case in messages
 * (WB_SHOW_MUTANTS=1 prints each message). */
void expect_failure(void (*fn)(const void *), const void *arg, const char *what, const char *want,
                    const char *want2);

#endif
