/* warble: quantized GEMM kernels for NVIDIA GPUs, generated as PTX text.
 *
 * The whole public API. Three layers, usable separately:
 *   1. formats  (wb_format_*)  parse, print and describe quantization formats; CPU only.
 *   2. kernels  (wb_kernel_*)  build a kernel for a format and an architecture and emit its PTX;
 *                              CPU only, no driver needed.
 *   3. GPU      (wb_gpu_*, wb_layer_*) load libcuda at run time, JIT, pack weights, launch on a stream.
 *
 * Errors: every function that can fail returns a wb_status; the one-line message of the last failure
 * on the calling thread is wb_last_error(). Destroy functions accept NULL.
 */
#ifndef WARBLE_H
#define WARBLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WB_VERSION_MAJOR 0
#define WB_VERSION_MINOR 1
#define WB_VERSION_PATCH 0
#define WB_VERSION_STRING "0.1.0"

#if defined(WB_BUILDING) && defined(__GNUC__)
#define WB_API __attribute__((visibility("default")))
#else
#define WB_API
#endif

/* ---------------------------------------------------------------- status */

typedef enum wb_status {
    WB_OK = 0,
    WB_ERR_INVALID = 1,     /* bad input: a malformed spec, a bad shape, a bad argument */
    WB_ERR_UNSUPPORTED = 2, /* valid, but this build or this target cannot do it */
    WB_ERR_NOMEM = 3,       /* a host allocation failed */
    WB_ERR_NO_DRIVER = 4,   /* libcuda could not be loaded, or no GPU */
    WB_ERR_DRIVER = 5,      /* a CUDA driver call failed (the message names it and its CUresult) */
    WB_ERR_JIT = 6,         /* the driver rejected the PTX (the message holds the JIT log) */
    WB_ERR_IO = 7,          /* a file could not be read or written */
} wb_status;

WB_API const char *wb_status_str(wb_status s);
/* The message of the last failure on this thread ("" when none). */
WB_API const char *wb_last_error(void);
WB_API const char *wb_version(void);

/* ---------------------------------------------------------------- types */

typedef enum wb_kind {
    WB_KIND_NONE = 0,
    WB_KIND_INT,   /* two's complement, bits 1..8 (`intB`, and `s8`/`s4` activations) */
    WB_KIND_UINT,  /* plain binary, bits 1..8 (`uintB`) */
    WB_KIND_FLOAT, /* small signed float eXmY, bits = 1 + ebits + mbits <= 8 */
    WB_KIND_F16,
    WB_KIND_BF16,
    WB_KIND_F32,
    WB_KIND_E8M0,  /* 2^(code-127), code 255 is NaN */
    WB_KIND_TABLE, /* a 16-entry lookup table: nf4 (ebits = 0), or lut4 (ebits = 1: wb_format.table) */
} wb_kind;

typedef struct wb_type {
    wb_kind kind;
    int bits;  /* storage bits of one code */
    int ebits; /* WB_KIND_FLOAT only */
    int mbits; /* WB_KIND_FLOAT only */
} wb_type;

/* Name of a type as specs write it ("int4", "e2m1", "f16", ...); buf needs 8 bytes. */
WB_API const char *wb_type_name(wb_type t, char buf[8]);
/* Parse a type name; returns 0 on success, -1 when the name is not a type. */
WB_API int wb_type_parse(const char *name, wb_type *out);
/* The real value of a code (contract section 1). NaN for NaN codes. */
WB_API double wb_type_decode(wb_type t, uint32_t code);
/* The code nearest to v (round to nearest even, saturating to the largest finite value; NaN -> a NaN
 * code where the type has one, else 0). Integer types round and clamp to their range. */
WB_API uint32_t wb_type_encode(wb_type t, double v);
/* Storage bytes of one element in the interchange files (contract section 3). */
WB_API int wb_type_file_bytes(wb_type t);

/* Exact IEEE half / bfloat16 conversions, round to nearest even. */
WB_API uint16_t wb_f16_from_double(double v);
WB_API double wb_f16_to_double(uint16_t h);
WB_API uint16_t wb_bf16_from_double(double v);
WB_API double wb_bf16_to_double(uint16_t h);

/* ---------------------------------------------------------------- formats (contract section 1) */

typedef enum wb_zp { WB_ZP_NONE = 0, WB_ZP_INT, WB_ZP_FP } wb_zp;

typedef struct wb_format {
    wb_type a;   /* activation type */
    int ag;      /* activation scale group along K, 0 = per token */
    wb_type as;  /* activation scale type */
    int ags;     /* extra f32 activation tensor scale */
    wb_type w;   /* weight element type */
    wb_type ws;  /* weight scale type */
    int g;       /* weight scale group along K, 0 = per output channel */
    int gn;      /* weight scale block along N */
    int wgs;     /* extra f32 weight tensor scale */
    wb_zp zp;    /* weight zero point */
    wb_type out; /* output type */
    int bias;    /* a bias vector of the out type */
    wb_type acc; /* accumulator: f32 or f16 */
    float table[16]; /* w=lut4: the value of each 4-bit code (spec: w=lut4:v0:v1:...:v15) */
} wb_format;

/* Parse a spec ("w4a16,g=64" or "a=f16,w=int4,..."). On failure returns WB_ERR_INVALID and
 * wb_last_error() says which key and what is allowed. */
WB_API wb_status wb_format_parse(const char *spec, wb_format *out);
/* The canonical spec (every key, fixed order). Returns the length it needs (like snprintf); a lut4
 * spec needs up to about 300 bytes, any other under 128. */
WB_API int wb_format_print(const wb_format *f, char *buf, size_t size);
/* Check the contract rules of a filled-in format (what wb_format_parse checks after parsing). */
WB_API wb_status wb_format_validate(const wb_format *f);
/* Make the weights a user table: 4-bit codes, code i meaning values[i] (finite). */
WB_API wb_status wb_format_set_table(wb_format *f, const float values[16]);
/* The real value of weight code `code` in this format (also for lut4, whose table lives in f). */
WB_API double wb_format_weight_value(const wb_format *f, uint32_t code);
/* Presets: name and spec of preset i, for i in [0, wb_preset_count()). */
WB_API int wb_preset_count(void);
WB_API const char *wb_preset_name(int i);
WB_API const char *wb_preset_spec(int i);

/* Shape rules of the contract (group sizes divide K and N); kernels add their own in wb_kernel_*. */
WB_API wb_status wb_format_check_shape(const wb_format *f, int64_t m, int64_t n, int64_t k);

/* ---------------------------------------------------------------- host data (contract section 3) */

/* Canonical, unpacked host arrays of one GEMM, as the interchange files hold them.
 * Pointers a format does not use must be NULL. */
typedef struct wb_host_weights {
    const uint8_t *w;     /* N x K codes, one per byte, low bits */
    const void *w_scale;  /* (N/gn) x (K/g), or N x 1 when g = 0, of type ws */
    const void *w_zero;   /* same shape as w_scale: codes (zp=int) or ws values (zp=fp) */
    const float *w_global;/* 1 value */
    const void *bias;     /* N values of type out */
} wb_host_weights;

typedef struct wb_host_acts {
    const void *a;        /* M x K of type a */
    const void *a_scale;  /* M x (K/ag), or M x 1 when ag = 0 */
    const float *a_global;
} wb_host_acts;

/* The float64 evaluation of the contract semantics for one output element (before rounding). */
WB_API double wb_reference_element(const wb_format *f, int64_t m, int64_t n, int64_t k_total,
                                   const wb_host_acts *x, const wb_host_weights *w);
/* The whole M x N output in float64 (before rounding to the out type). */
WB_API wb_status wb_reference_gemm(const wb_format *f, int64_t m, int64_t n, int64_t k,
                                   const wb_host_acts *x, const wb_host_weights *w, double *out);

/* Dynamic quantization of activations for a format with quantized activations, on the host (the
 * reference the GPU quantizer will be checked against): x is M x K f32 (f16/bf16 values convert
 * exactly); writes `codes` (M x K, one per byte, low bits), `scales` (M x (K/ag), or M x 1 with ag=0,
 * in the `as` type's interchange storage) and, with ags=1, `*global`. Scales from the absolute
 * maximum of each group (e8m0: the OCP MX rule), round to nearest even, saturating; dsl/quantize.c
 * states the recipe. WB_ERR_INVALID for f16/bf16 activations, non-finite x, or K not a multiple of ag. */
WB_API wb_status wb_reference_quantize_acts(const wb_format *f, int64_t m, int64_t k, const float *x, void *codes,
                                            void *scales, float *global);

/* ---------------------------------------------------------------- architectures */

typedef enum wb_arch {
    WB_ARCH_SM75 = 0, WB_ARCH_SM80, WB_ARCH_SM86, WB_ARCH_SM89, WB_ARCH_SM90A,
    WB_ARCH_SM100A, WB_ARCH_SM103A, WB_ARCH_SM120A, WB_ARCH_COUNT
} wb_arch;

/* "sm_90a", also aliases ("hopper", "h100", "b200", ...). */
WB_API wb_status wb_arch_parse(const char *name, wb_arch *out);
WB_API const char *wb_arch_name(wb_arch a);
/* The architecture of a device of compute capability major.minor (sm_90 -> sm_90a, ...). */
WB_API wb_status wb_arch_from_cc(int major, int minor, wb_arch *out);

/* Instruction families (tensor-core MMA forms, copies, conversions) and their status per target, as
 * verified with ptxas: native, assembled but emulated by ptxas (never emitted unless forced), absent.
 * Families are numbered 0 .. wb_isa_count() - 1; `warble targets` prints the table. */
typedef enum wb_isa_status { WB_ISA_ABSENT = 0, WB_ISA_NATIVE = 1, WB_ISA_EMULATED = 2 } wb_isa_status;
WB_API int wb_isa_count(void);
WB_API const char *wb_isa_name(int family); /* "mma.sync m16n8k32 e4m3/e5m2" */
WB_API const char *wb_isa_what(int family); /* one line on what it computes */
WB_API wb_isa_status wb_isa_get(wb_arch arch, int family);

/* ---------------------------------------------------------------- kernels */

/* Instruction choices and tile sizes. Zero fields mean "let warble choose". */
typedef struct wb_config {
    int m_tiles;   /* 8-token tiles per warp: mma.sync 1, 2, 4, 8; wgmma and tcgen05 up to 32, a power of
                    * two, or 24 (192 tokens) on wgmma's TMA pipeline */
    int warps_n;   /* warps along N, each owning 16 output channels */
    int warps_k;   /* warps splitting K inside a block, reduced in f32 in shared memory */
    int stages;    /* pipeline stages (1 = no pipelining) */
    int load;      /* WB_LOAD_* */
    int mma;       /* WB_MMA_* */
    int batch_invariant; /* 1: every output row has the same bits whatever M is (mma.sync, a split-K
                          * chosen from N and K alone, scales on the weights); slower at large M */
    int k_slices;  /* k64 slices each warp takes from a stage (1, 2, 4): more codes per barrier, copy
                    * issue and loop iteration; mma.sync with 16-bit activations, or 8-bit ones whose
                    * scale groups along K (g, ag), if any, are multiples of 64 x k_slices */
    int persistent; /* 1: one block per SM walks the output tiles in the raster order, its producer
                     * filling the next tile's stages while the consumers store the last one's sums
                     * (--load tma only; never the heuristic's choice: at most 2% faster on an H100) */
    int cluster;    /* 2: blocks in pairs (a thread block cluster) on neighbouring channel tiles of one
                     * token tile, each copying half of the activation tile into both by TMA multicast,
                     * so each reads fewer bytes from L2 (--load tma only, not with persistent; the
                     * heuristic's choice on the TMA pipeline where the tiles pair up); 4: blocks in
                     * quads on two neighbouring channel tiles of two neighbouring token tiles, sharing
                     * the activation tile with the channel neighbour and the weight tile with the token
                     * neighbour (forced only; not with persistent; even warps_n); 1: none */
    int split_k;    /* 2: blocks in pairs (a thread block cluster, sm_90 and newer) on one output tile, each
                     * taking half of K; the second's f32 sums are added to the first's through distributed
                     * shared memory, in that order (wgmma and mma.sync, not with cluster 2 or persistent;
                     * the heuristic's choice for 16-bit activations where wgmma's 128 x 128 tiles leave
                     * over half the SMs idle, and at M = 9 to 16 on mma.sync where blocks of one warp
                     * along N would stay over a long K); 1: none */
    int gemv;       /* 1: a matrix-vector kernel, for M = 1 only: signed 2- and 3-bit integer weights without
                     * zero points go to the MMA as their raw code bits, and the bias that makes them signed
                     * is taken off each scale group's sum through the token's activation sums (one MMA per
                     * 8 k16 chunks) instead of a second MMA per k16 step (mma.sync, one m-tile, f16
                     * activations, scale groups of 32 or a multiple of 64; the heuristic's choice at M = 1
                     * where it applies); -1: not; 0: warble's choice */
} wb_config;

enum { WB_LOAD_AUTO = 0, WB_LOAD_LDG, WB_LOAD_CP_ASYNC, WB_LOAD_TMA };
enum { WB_MMA_AUTO = 0, WB_MMA_SYNC, WB_MMA_WGMMA, WB_MMA_TCGEN05 };

WB_API const char *wb_load_name(int load);
WB_API const char *wb_mma_name(int mma);

/* Fill the zero fields of cfg with the heuristic's choice for this shape. */
WB_API wb_status wb_config_choose(const wb_format *f, wb_arch arch, int64_t m, int64_t n, int64_t k,
                                  wb_config *cfg);
/* Kernel-specific shape rules (N and K multiples); WB_ERR_INVALID with the rule on failure. */
WB_API wb_status wb_kernel_check_shape(const wb_format *f, const wb_config *cfg, int64_t m, int64_t n,
                                       int64_t k);
/* Two configs name the same kernel (every field equal). */
WB_API int wb_config_equal(const wb_config *a, const wb_config *b);
/* Print a config as "mt=1,wn=4,wk=1,stages=4,load=cp.async,mma=mma.sync" (",ks=2" when k_slices > 1,
 * ",bi=1" when batch-invariant). */
WB_API int wb_config_print(const wb_config *cfg, char *buf, size_t size);

enum { WB_EMIT_ANNOTATE = 1 };

/* Build the kernel for (format, arch, config) and return its PTX as a malloc'ed NUL-terminated string
 * (free it with free()). The config must be complete (see wb_config_choose). */
WB_API wb_status wb_kernel_ptx(const wb_format *f, wb_arch arch, const wb_config *cfg, int flags,
                               char **ptx_out);
/* The entry name inside that PTX. */
WB_API const char *wb_kernel_entry(void);

/* Launch geometry of a kernel for a shape on target arch (its shared memory can depend on the target:
 * s8 x s8 on tcgen05 widens to f16 where there is no kind::i8). */
typedef struct wb_launch_dims {
    unsigned grid[3], block[3];
    unsigned smem_bytes;
} wb_launch_dims;
WB_API wb_status wb_kernel_dims(const wb_format *f, wb_arch arch, const wb_config *cfg, int64_t m, int64_t n,
                                int64_t k, wb_launch_dims *out);

/* ---------------------------------------------------------------- weight packing */

/* Device layout of a layer's weights (see docs/layout.md). Sizes in bytes. */
typedef struct wb_packed {
    void *w;        size_t w_bytes;      /* packed codes */
    void *scale;    size_t scale_bytes;  /* grouped scales (and zero offsets) */
    void *chan;     size_t chan_bytes;   /* per-channel f32 scale / zero / bias */
} wb_packed;

/* Pack canonical host weights into the kernel layout of the target `arch` (malloc'ed; free with
 * wb_packed_free). The layout depends on the format, and for two families also on the target: fp8
 * W8A8 on sm_90a is packed as wgmma's shared-memory operand (K a multiple of 128), and NVFP4 x NVFP4
 * and MXFP4 x MXFP4 on sm_120a for its block-scaled MMA (docs/layout.md). */
WB_API wb_status wb_pack_weights(const wb_format *f, wb_arch arch, int64_t n, int64_t k,
                                 const wb_host_weights *w, wb_packed *out);
/* Inverse of the code part of packing, for tests: writes N x K codes (on the block-scaled layout, the
 * codes as packed: the sign of a negative block scale folded into them). */
WB_API wb_status wb_unpack_codes(const wb_format *f, wb_arch arch, int64_t n, int64_t k, const wb_packed *p,
                                 uint8_t *codes);
WB_API void wb_packed_free(wb_packed *p);
/* The sizes of the three buffers wb_pack_weights writes for N x K weights (the pointers set to NULL):
 * the same on every target. For checking packed weights read back from a file. */
WB_API wb_status wb_packed_sizes(const wb_format *f, int64_t n, int64_t k, wb_packed *sizes);
/* Quantized activations as the kernels read them (wb_layer_gemm_q): 8-bit codes one to a byte, as in
 * the interchange file; s4 codes two to a byte, code k of a row in the low nibble of byte k / 2 when k
 * is even, the high nibble when odd (K even). wb_acts_bytes: the bytes of M x K activations in that
 * layout. wb_pack_acts: the interchange codes (M x K, one per byte, low bits) into it; WB_ERR_INVALID
 * for a code with bits above the type's, or f16/bf16 activations. */
WB_API int64_t wb_acts_bytes(const wb_format *f, int64_t m, int64_t k);
WB_API wb_status wb_pack_acts(const wb_format *f, int64_t m, int64_t k, const uint8_t *codes, void *packed);

/* ---------------------------------------------------------------- GPU */

typedef struct wb_gpu wb_gpu;
typedef struct wb_layer wb_layer;
typedef uint64_t wb_devptr; /* a CUdeviceptr */

/* Load libcuda (dlopen), init the driver and retain the primary context of `device`.
 * Without a driver or GPU: WB_ERR_NO_DRIVER with a message; nothing crashes. */
WB_API wb_status wb_gpu_create(int device, wb_gpu **out);
WB_API void wb_gpu_destroy(wb_gpu *gpu);
WB_API wb_arch wb_gpu_arch(const wb_gpu *gpu);
WB_API const char *wb_gpu_name(const wb_gpu *gpu);
WB_API int wb_gpu_sm_count(const wb_gpu *gpu);

/* Device memory helpers for tools, tests and examples (synchronous; not for the launch path). */
WB_API wb_status wb_gpu_alloc(wb_gpu *gpu, size_t bytes, wb_devptr *out);
WB_API wb_status wb_gpu_free(wb_gpu *gpu, wb_devptr p);
WB_API wb_status wb_gpu_upload(wb_gpu *gpu, wb_devptr dst, const void *src, size_t bytes);
WB_API wb_status wb_gpu_download(wb_gpu *gpu, void *dst, wb_devptr src, size_t bytes);
WB_API wb_status wb_gpu_memset(wb_gpu *gpu, wb_devptr dst, uint8_t byte, size_t bytes);
WB_API wb_status wb_gpu_sync(wb_gpu *gpu);

/* Load PTX into a module (cached by the sha256 of the PTX) and return its kernel function. */
WB_API wb_status wb_gpu_load(wb_gpu *gpu, const char *ptx, const char *entry, void **function_out);
/* Launch a loaded function on a stream (NULL = the default stream). On sm_90 and newer the GEMM
 * kernels are launched with programmatic dependent launch: they may start while the previous kernel
 * on the stream still runs, and read their first tiles of packed weights, scales and channel arrays
 * before waiting for it (griddepcontrol.wait); activations, activation scales and the output only
 * after. So the kernel just before a GEMM on the stream must not write that GEMM's packed weights
 * (a copy or memset between them is fine: PDL applies to kernel after kernel only), or set
 * WARBLE_PDL=0. */
WB_API wb_status wb_gpu_launch(wb_gpu *gpu, void *function, const wb_launch_dims *d, void *stream,
                               void **params);

/* Time `fn(arg)` on the GPU: `warmup` calls, then the median over `reps` of events around `inner`
 * back-to-back calls, divided by `inner`. Result in microseconds. */
WB_API wb_status wb_gpu_time(wb_gpu *gpu, void (*fn)(void *arg), void *arg, int warmup, int reps,
                             int inner, double *median_us);

/* A layer: N x K weights in a format, packed and uploaded once. */
WB_API wb_status wb_layer_create(wb_gpu *gpu, const wb_format *f, int64_t n, int64_t k,
                                 const wb_host_weights *w, wb_layer **out);
/* A layer from weights packed already, by wb_pack_weights for target `arch` or read back from a file
 * that holds its buffers: their sizes must be wb_packed_sizes', and `arch`'s layout the GPU's (the
 * layouts differ only for fp8 W8A8 on sm_90a and for NVFP4 and MXFP4 x same on sm_120a, so weights
 * packed for sm_80 serve sm_86 and sm_89). The buffers are uploaded, not kept: one packing can serve
 * many layers. */
WB_API wb_status wb_layer_create_packed(wb_gpu *gpu, const wb_format *f, wb_arch arch, int64_t n, int64_t k,
                                        const wb_packed *p, wb_layer **out);
WB_API void wb_layer_destroy(wb_layer *layer);
/* Force a config for every later call (NULL = the heuristic). */
WB_API wb_status wb_layer_set_config(wb_layer *layer, const wb_config *cfg);
/* out (M x N, type out) = a (M x K, type a) x W^T, on `stream` (a CUstream, NULL = default).
 * No allocation and no synchronization on the GPU; the first call for a config JITs its kernel.
 * a must be 16-byte aligned (its rows are copied in 16-byte chunks), out 2-byte; with the _q calls
 * f32 activation scales and a_global 4-byte: a misaligned pointer is refused (WB_ERR_INVALID). */
WB_API wb_status wb_layer_gemm(wb_layer *layer, int64_t m, wb_devptr a, wb_devptr out, void *stream);
/* The same for quantized activations: a = M x K codes in the layout of wb_pack_acts (8-bit codes one
 * to a byte, 4-bit codes two to a byte); a_scale = the activation scales as the interchange file holds
 * them: M x (K/ag), or M with ag=0, of the `as` type (f32 for s8/s4/fp8 activations, one byte each for
 * e4m3/e8m0 scales of e2m1 activations). wb_layer_gemm refuses such layers, wb_layer_gemm_q f16/bf16
 * ones and those with ags=1, which take wb_layer_gemm_qg: a_global = the address of one f32 on the
 * device, the activation tensor scale (read by the kernel, so it may be computed on the stream). */
WB_API wb_status wb_layer_gemm_q(wb_layer *layer, int64_t m, wb_devptr a, wb_devptr a_scale, wb_devptr out,
                                 void *stream);
WB_API wb_status wb_layer_gemm_qg(wb_layer *layer, int64_t m, wb_devptr a, wb_devptr a_scale, wb_devptr a_global,
                                  wb_devptr out, void *stream);
/* Quantize activations on the GPU, ahead of wb_layer_gemm_q: x = M x K f16 or bf16 (x_type) -> codes
 * in the kernels' layout (wb_acts_bytes: s8, e4m3, e5m2 one byte each; s4 and e2m1 two to a byte) and
 * scales (f32, M x K/ag, or M with ag=0, a multiple of 128; or e2m1's e8m0/e4m3 block scales, one
 * byte per ag = 16..128), bit for bit wb_reference_quantize_acts. K a multiple of 128. On `stream`; no
 * allocation, no synchronization; the first call for a (format, x_type) JITs its kernel. x must be
 * finite (the reference refuses what is not). A format with a tensor scale (ags=1, e.g. nvfp4) takes
 * wb_gpu_quantize_acts_g, which also writes that f32 to a_global (a pass over x first: one block, or
 * past 16384 activations up to 1024 blocks whose maxima go through `scales` and a one-block reduce
 * launch; then the quantizer), ahead of wb_layer_gemm_qg. x, codes, a_global and f32 scales (and
 * scales with a tensor scale) must be 4-byte aligned: a misaligned pointer is refused. */
WB_API wb_status wb_gpu_quantize_acts(wb_gpu *gpu, const wb_format *f, wb_type x_type, int64_t m, int64_t k,
                                      wb_devptr x, wb_devptr codes, wb_devptr scales, void *stream);
WB_API wb_status wb_gpu_quantize_acts_g(wb_gpu *gpu, const wb_format *f, wb_type x_type, int64_t m, int64_t k,
                                        wb_devptr x, wb_devptr codes, wb_devptr scales, wb_devptr a_global,
                                        void *stream);
/* Its PTX for an architecture (free() it); _global: the tensor-scale pass of an ags=1 format. */
WB_API wb_status wb_quant_ptx(const wb_format *f, wb_type x_type, wb_arch arch, char **ptx_out);
WB_API wb_status wb_quant_global_ptx(const wb_format *f, wb_type x_type, wb_arch arch, char **ptx_out);
/* Both in one call for a layer with quantized activations: x (M x K, x_type f16 or bf16) quantized
 * into the caller's scratch (codes: M x K bytes, 16-byte aligned; scales: M x K/ag f32, or M with
 * ag=0), then the GEMM on them, on `stream`, back to back (the GEMM waits for the quantizer through
 * the stream). */
WB_API wb_status wb_layer_gemm_x(wb_layer *layer, int64_t m, wb_type x_type, wb_devptr x, wb_devptr codes,
                                 wb_devptr scales, wb_devptr out, void *stream);

/* The config and PTX hash the last wb_layer_gemm (or _q) used (for ledgers and reports). */
WB_API wb_status wb_layer_last_kernel(const wb_layer *layer, wb_config *cfg, char sha256_hex[65]);

/* sha256 of a buffer as 64 hex digits. */
WB_API void wb_sha256_hex(const void *data, size_t len, char out[65]);

#ifdef __cplusplus
}
#endif
#endif
