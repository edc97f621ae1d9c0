/* Shared helpers of the warble command line: option parsing, one-line errors, the interchange-file
 * layout of a format (contract section 3), random host data, and the subcommand entry points.
 * The CLI uses only the public header. */
#ifndef WB_CLI_H
#define WB_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "warble.h"

/* Exit statuses of the contract (section 4). */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

/* Every option of every subcommand; a subcommand accepts the subset in its mask. */
typedef enum cli_opt {
    O_ARCH, O_M, O_N, O_K,
    O_MMA, O_LOAD, O_STAGES, O_MTILES, O_WARPSN, O_WARPSK, O_KSLICES, O_CLUSTER, O_SPLITK, O_GEMV, O_BATCH_INVARIANT, O_PERSISTENT,
    O_ANNOTATE, O_PLAIN, O_HASH, O_JSON, O_SWEEP, O_COMPILE, O_DISPATCH, O_QUICK, O_LIST, O_PENDING, O_LEDGER, O_SEED, O_DEVICE, O_ONLY, O_SKIP,
    O_X, O_XTYPE, O_A, O_ASCALE, O_AGLOBAL, O_W, O_WSCALE, O_WZERO, O_WGLOBAL, O_BIAS, O_OUT,
    O_COUNT
} cli_opt;

#define OPT(o) (1ull << (o))
#define CLI_CONFIG_OPTS \
    (OPT(O_MMA) | OPT(O_LOAD) | OPT(O_STAGES) | OPT(O_MTILES) | OPT(O_WARPSN) | OPT(O_WARPSK) | OPT(O_KSLICES) | OPT(O_CLUSTER) | OPT(O_SPLITK) | OPT(O_GEMV) | \
     OPT(O_BATCH_INVARIANT) | OPT(O_PERSISTENT))
#define CLI_SHAPE_OPTS (OPT(O_M) | OPT(O_N) | OPT(O_K))
#define CLI_MAX_M 64

typedef struct cli_args {
    const char *cmd;           /* the subcommand name */
    const char *spec;          /* the positional SPEC (NULL when none) */
    const char *val[O_COUNT];  /* the text of each option given, "1" for flags, NULL when absent */
    wb_arch arch;              /* valid when val[O_ARCH] */
    int64_t m[CLI_MAX_M];      /* --m LIST */
    int nm;
    int64_t n, k;              /* 0 when not given */
    wb_config cfg;             /* forced choices; zero fields are left to wb_config_choose */
    int have_cfg;              /* any config option given */
} cli_args;

/* Parse argv[1..argc) of a subcommand (argv[0] is its name). Returns 0 or an exit status after
 * printing the error. */
int cli_parse(int argc, char **argv, uint64_t allowed, int want_spec, cli_args *out);
int cli_has(const cli_args *a, cli_opt o);

/* Print "warble: <message>" (one line) to stderr and return `code`. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Report a library failure (wb_last_error, else the status name) with a context prefix; returns
 * 2 for invalid or unsupported input, else 1. */
int cli_lib_fail(wb_status s, const char *context);
int cli_status_exit(wb_status s);
/* 0 when s is WB_OK, else cli_lib_fail(s, context). */
int cli_lib_fail_if(wb_status s, const char *context);
/* --device D (default 0); returns 0 or an exit status. */
int cli_device(const cli_args *a, int *device);

/* Parse SPEC; on failure reports and returns 2. */
int cli_parse_spec(const char *spec, wb_format *f);
/* The canonical spec in buf (truncated if needed). */
const char *cli_spec_str(const wb_format *f, char *buf, size_t size);
int cli_parse_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out);

/* ---- interchange files (contract section 3) */

typedef enum cli_file {
    F_A, F_ASCALE, F_AGLOBAL, F_W, F_WSCALE, F_WZERO, F_WGLOBAL, F_BIAS, F_OUT, F_COUNT
} cli_file;

typedef struct cli_layout {
    size_t bytes[F_COUNT];     /* 0 when the format does not use the file */
    int code_bits[F_COUNT];    /* > 0: one code per byte, only these low bits may be set */
    int64_t count[F_COUNT];    /* elements */
    wb_type type[F_COUNT];     /* element type */
} cli_layout;

extern const char *const cli_file_opt[F_COUNT]; /* "--a", "--a-scale", ... */

void cli_file_layout(const wb_format *f, int64_t m, int64_t n, int64_t k, cli_layout *out);
int cli_acts_quantized(const wb_format *f);

/* Canonical bytes a GEMM moves once (weights, scales, zeros, bias, activations, their scales, output)
 * and the weight-side part alone; used for effective bandwidth. */
double cli_gemm_bytes(const wb_format *f, int64_t m, int64_t n, int64_t k, double *weight_side);

/* ---- random host data */

typedef struct cli_rng {
    uint64_t s;
} cli_rng;
uint64_t cli_rng_next(cli_rng *r);
double cli_rng_uniform(cli_rng *r, double lo, double hi);

/* The canonical host arrays of one GEMM (every file of the layout; F_OUT holds the result). */
typedef struct cli_host {
    wb_format f;
    int64_t m, n, k;
    cli_layout lay;
    void *buf[F_COUNT];
    wb_host_weights hw;
    wb_host_acts ha;
} cli_host;

/* Allocate (zeroed) every buffer the format uses; returns 0, or 1 after reporting no memory. */
int cli_host_alloc(cli_host *h, const wb_format *f, int64_t m, int64_t n, int64_t k);
/* Fill activations (and their scales) / weights (scales, zeros, bias, global) with random data. */
void cli_host_random_acts(cli_host *h, cli_rng *r);
void cli_host_random_weights(cli_host *h, cli_rng *r);
void cli_host_free(cli_host *h);
/* Upload activations (M x K, `bytes` in the interchange layout) to `dst` in the kernels' layout:
 * as they are, or s4 codes packed two to a byte (wb_pack_acts). */
wb_status cli_upload_acts(wb_gpu *gpu, const wb_format *f, int64_t m, int64_t k, const void *codes, size_t bytes,
                          wb_devptr dst);
/* Store / load one element of a value type (f16, bf16, f32, or a 1-byte code) at index i. */
void cli_put_value(wb_type t, void *base, size_t i, double v);
double cli_get_value(wb_type t, const void *base, size_t i);

/* ---- subcommands */
/* Read a whole file of exactly `expected` bytes into *out (malloc'ed); with 0 < code_bits < 8 every
 * byte's high bits must be zero. Errors name the option `opt`; returns 0 or an exit status. */
int cli_read_file(const char *opt, const char *path, size_t expected, int code_bits, void **out);
/* Write `bytes` to `path`; on failure remove it and return an exit status. */
int cli_write_file(const char *opt, const char *path, const void *data, size_t bytes);

int cmd_formats(int argc, char **argv);
int cmd_format(int argc, char **argv);
int cmd_ptx(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_selftest(int argc, char **argv);
int cmd_targets(int argc, char **argv);
int cmd_quant(int argc, char **argv);

#endif
