/* The W8A8 kernels (a=s8, w=int8 or int4 on the integer mma.sync or wgmma; e4m3/e5m2 on the fp8 ones),
 * the fp4-activation kernels (a=e2m1: NVFP4, MX; below) and the activation quantizer (lower_quant.c:
 * shuffles, f64 and round-toward-zero divisions, fp8 conversions) run on the CPU: their instruction IR, as
 * wb_lower_gemm emits it, is executed by a small SIMT interpreter (every thread of every block, warps
 * meeting at ldmatrix and mma, blocks at bar.sync) on weights from wb_pack_weights and activations
 * from wb_reference_quantize_acts. Every output must have the bits of the exact s32 sum taken to f32,
 * times the channel scale, times the token scale, plus the bias, rounded once; and lie within one
 * rounding of the output type of the float64 reference. ldmatrix and the s8 MMAs are modelled from
 * the PTX fragment layouts (m16n8k32: A rows gid / gid + 8, k 4 tig..; B k 4 tig.. of column gid;
 * C rows gid / gid + 8, columns 2 tig, 2 tig + 1; m8n8k16 the top half of that at k16). cp.async
 * completes at once, so this checks data movement and arithmetic, not the pipeline's timing. Every
 * global access must be naturally aligned and lie inside one of the case's buffers (stores inside the
 * output), every shared one inside the block's shared memory, each ldmatrix row address 16-byte aligned;
 * an op or a type form the interpreter does not model aborts the case.
 *
 * wgmma (sm_90a: s8 above M = 64, fp8 at every M) is modelled per warp: its 16 rows of m64nNk32 from
 * the warp's A registers and the B tile that the descriptor addresses (128B swizzle decoded from the
 * descriptor bits), computed at issue. The hardware reads B at any time until wgmma.wait_group, and
 * through the async proxy; so a shared-memory write (st.shared, cp.async) into a 16-byte chunk that an
 * incomplete wgmma of any warp reads (issued and not yet past its warp's wait_group 0; commit closes
 * a group) aborts the case, and so does a wgmma reading a word whose last generic write was not
 * followed by a fence.proxy.async of its writer (a cp.async counts as written at issue, and the barrier
 * that must come between the fence and the read is not checked).
 * wgmma.fence is a no-op; wait_group N > 0 is not modelled. Swapping off the swizzle or ignoring a
 * false scale-d in the model makes the wgmma cases fail, as does ignoring the fences or the waits.
 *
 * fp8 (mma.sync m16n8k32 .f32.<w>.<a>.f32, the same fragments with fp8 codes, decoded exactly): the PTX
 * ISA does not define the order or the internal precision in which the tensor core adds the 32 products
 * of one fp8 MMA to the f32 accumulator (the hardware is known not to round like a chain of f32 adds).
 * So the interpreter models each MMA as its exact sum of products added to c with one f32 rounding, and
 * the outputs are compared not bitwise but against the float64 reference within a tight bound: one
 * rounding of the output type plus 2^-20 of the sum of |products| (the f32 rounding of every k32 step,
 * the split-K adds and the two scale products, with margin for a hardware that truncates).
 *
 * fp4 activations (a=e2m1, run_case_fp4): the 16-bit kernel, mma.sync m16n8k16 .f32.T.T.f32 (m16n8k8 on
 * sm_75) with T f16, or bf16 when a scale is e8m0 (wb_format_compute). The weights go through the
 * dequant rules (bit moves; on sm_100a / sm_120a the hardware cvt.rn.f16x2.e2m1x2, modelled from the
 * reference codec); the activation codes (32-byte rows beside the A tile) are made a 16-bit A tile by
 * the whole block (lower_act4.c: a word of 8 codes per item, prmt, shifts and lop3 place each code's
 * bits, then two fma.rn.f16x2 / bf16x2 (modelled as tests/test_dequant.c does: each half a * b + c
 * rounded once to nearest even, subnormals kept) by the exponent fix and by the block scale, whose
 * 8-bit code (e4m3 or e8m0, read from p_ascale by u8 loads, the next tile's during this one) max,
 * mul.lo and shifts turn into a T pair; st.shared.v4 into the swizzled 16-bit rows), then read by
 * ldmatrix as 16-bit activations are; the tensor scales (p_aglobal, and the weights' at the end of the
 * channel array) multiply the f32 sums in the epilogue. The f16/bf16 MMA is modelled from the PTX
 * fragments (A: a0 = row gid, k 2 tig and 2 tig + 1, low half first, a1 row gid + 8, a2 / a3 those at
 * k + 8; B: b0 = k 2 tig, 2 tig + 1 of column gid, b1 at k + 8; C as above; m16n8k8: a0, a1, b0) like
 * the fp8 one: c plus the exact sum of its products, rounded once to f32, so the outputs are checked
 * against the float64 reference within the same bound. The data keep every dequantized value exact in
 * T (scales of 4 significant bits, as the kernel's exactness argument assumes), so that bound covers
 * only the f32 sums and the scale products. Mutating the activation dequant (prmt selector, shifts,
 * masks, exponent constants, the scale bytes and their groups, a token's row) makes these cases fail.
 *
 * sm_120a's block-scaled MMA (NVFP4 x NVFP4, MXFP4 x MXFP4 there: run_case_fp4, lower_block.c) is
 * modelled as the fp8 one: e2m1 codes in m16n8k64's s4 fragments, row m's scale bytes from lane
 * 4 (m % 8) + m / 8's scale-a word and column n's from lane 4 n's scale-b word (selectors {0, 0}),
 * block j in byte j; a ue4m3 byte with bit 7 set or a NaN scale aborts the case. Each output is c plus
 * the exact sum of its 64 scaled products, rounded once to f32, and is checked within the same bound.
 *
 * 16-bit wgmma (m64nNk16 .f32.T.T, T f16 or bf16, A in registers; the fp4-activation kernels forced
 * onto wgmma on sm_90a: wgmma16_kernel_matches_reference) is modelled per warp as the 8-bit one: A the
 * warp's 16 rows in m16n8k16's A fragment (a0 = row gid, k 2 tig and 2 tig + 1, low half first, a1 row
 * gid + 8, a2 / a3 those at k + 8); B the step's 32 bytes (16 values) of each token's 128-byte swizzled
 * row, the descriptor decoded as above (a k16 step is its start address 32 bytes on, inside the row);
 * D as m16n8's repeated along N. Each f32 output is c (zero for a false scale-d) plus the exact sum of
 * its 16 products, rounded once to f32, as for the mma.sync ones, so these cases are checked within the
 * same bound. Swapping A's rows and k halves or a register's two halves, B's k halves, D's pairs, f16
 * for bf16, dropping the swizzle or ignoring scale-d in the model makes them fail. The weight-only
 * kernels (16-bit activations: run_case_a16) run here on mma.sync, wgmma and tcgen05.
 *
 * --load tma (sm_90a: the warp-specialized wgmma pipeline, lower_tma.c; tma_kernel_matches_reference and
 * its W8A8 twin): mbarriers count arrivals and transaction bytes (arrive, arrive.expect_tx; complete_tx
 * by the copies; a phase completes when both reach zero, the bytes going negative meanwhile as the PTX
 * ISA allows), and try_wait.parity records per thread the phases it has seen. cp.async.bulk.tensor.2d
 * reads the case's tensor map as runtime/gpu.c encodes it (the M x K activations, boxes of the block's
 * tokens x 128 bytes, 128B swizzle into a 1024-aligned destination, zeros past M and K); cp.async.bulk
 * copies multiples of 16 bytes. Both complete at issue, obey global_at's rules (PDL included) and write
 * through the async proxy (wgmma needs no fence after them). Races are checked, not left to the
 * schedule: reading (ld.shared, ldmatrix, a wgmma's B, tcgen05) a chunk that an async copy wrote before
 * seeing the phase its bytes complete fails; so does a copy into a chunk that a thread read since the
 * last copy, unless that thread released after the read (an mbarrier arrival or a bar.sync, or an
 * arrival of one lane of its warp after a bar.warp.sync that the reader met after the read; a wgmma's
 * reads end at its wait_group) in a phase the copying thread has seen. A block whose live threads all
 * wait (mbarrier spins, bar.sync, collectives; ended threads count as arrived at bar.sync) fails as
 * stuck, naming where each warp waits; one that ends with bytes outstanding, or with a copy no thread
 * waited for, fails too. bar.warp.sync and setmaxnreg are warp collectives that only meet. Dropping the
 * swizzle, the consumers' full wait or the producer's empty wait, the release, moving the release
 * before wait_group, expect_tx or a bulk size 16 bytes off, or the wrong TMA row makes these cases fail;
 * zero-filling rows past M is not observable (those tokens' outputs are never stored).
 *
 * Thread block clusters (cfg.cluster 2, sm_90a: TMA multicast; cluster_multicast_kernel): blocks (2i, y)
 * and (2i + 1, y) run together as ranks 0 and 1 (%cluster_ctarank; %cluster_nctarank 2; without a
 * cluster 0 and 1), a round of one's threads, then one of the other's, until both have ended; a turn
 * in which neither moves is a deadlock. grid.x must be even, and each block's TMA box is half its
 * tokens (runtime/layer.c's tensor map). mapa models a shared::cluster address as (rank + 1) << 24 |
 * offset (a plain shared offset means the own block). cp.async.bulk.tensor .multicast::cluster writes
 * the box at the same offset into every block of its ctaMask, its bytes completing on the mbarrier at
 * the same offset in each; mbarrier.arrive.shared::cluster arrives on the block its address names;
 * barrier.cluster.arrive / wait is a split barrier over both blocks' threads (a wait spins until every
 * live thread of the cluster has arrived as often; ended threads count as arrived). A multicast or
 * remote arrival needs the destination's mbarrier initialized (so a cluster barrier between init and
 * the first multicast) and the destination alive (so a cluster barrier before the end); a mask or mapa
 * rank outside the cluster fails. Releases name the block of their mbarrier, and a thread sees only
 * its own block's phases: a multicast into a peer's chunk needs each of the peer's readers to have
 * released it on the issuing block's mbarrier (a remote arrival) in a phase the issuing thread has seen.
 * After a bar.warp.sync, every arrival of a lane (its block's, a peer's) releases the reads of the
 * lanes that have read nothing since the meeting. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dsl/tile.h"
#include "lower/isa.h"
#include "lower/layout.h"
#include "lower/lower.h"
#include "testutil.h"

/* Every failure the interpreter reports goes through interp_fail, so that a mutant kernel that must
 * fail can run in a child process (expect_failure) and its message be checked there: the child writes
 * it to fail_fd and exits with MUTANT_FAILED, without Check's reporting (which would fail the test). */
enum { MUTANT_FAILED = 86 };
static int fail_fd = -1;

static void interp_fail(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
static void interp_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (fail_fd >= 0) {
        if (write(fail_fd, msg, strlen(msg)) < 0)
            _exit(MUTANT_FAILED + 1);
        _exit(MUTANT_FAILED); /* _exit: no atexit handlers (LeakSanitizer would report the abandoned run) */
    }
    _ck_assert_failed(file, line, "Failed", "%s", msg);
}

#undef ck_abort_msg
#define ck_abort_msg(...) interp_fail(__FILE__, __LINE__, __VA_ARGS__)

#define CHECK(cond, ...)               \
    do {                               \
        if (!(cond))                   \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

/* SPIN: at an mbarrier.try_wait that failed; it tries again in the next round */
enum { RUN, AT_WARP, AT_BAR, SPIN, DONE };

/* MAX_MBARS: --load tma's full and empty barrier per stage (8 stages at most), tcgen05's two */
enum { MAX_MBARS = 24, TC_LANES = 128, TC_COLS = 512, MAX_TC_RECS = 4096 };

/* A release by a thread: an mbarrier arrival (cta: the rank in its cluster of the block whose mbarrier
 * it is, the own one or, by a remote arrival, the peer's; mbar: its index there; phase: the phase it
 * counts toward), its arrival at a bar.sync (mbar REL_BAR, cta its own block; phase: the barrier's
 * generation, counted from 1 in the block) or at a barrier.cluster (mbar REL_CLUSTER; phase: its
 * count of arrivals there, which every thread of the cluster that waits as often sees). */
typedef struct rel_ev {
    int cta, mbar, phase;
} rel_ev;

enum { REL_BAR = -1, REL_CLUSTER = -2 };

/* mapa's shared::cluster address of shared offset off in the block of rank r: an encoding that no
 * shared::cta offset can have (those stay below 2^24), so that an access through one is told apart. */
#define CLUSTER_ADDR(r, off) (((uint64_t)(r) + 1) << 24 | (uint64_t)(off))
enum { CLUSTER_OFF_BITS = 24 };

typedef struct thread {
    int pc, state;
    int waited;   /* past griddepcontrol.wait */
    int launched; /* griddepcontrol.launch_dependents executed */
    int seen[MAX_MBARS]; /* per mbarrier: the phases this thread has seen complete (try_wait) */
    int seen_rec;        /* the last tcgen05 commit this thread has seen complete, + 1 (a commit's
                            completion includes every earlier MMA of its thread) */
    int bars;            /* bar.sync generations passed */
    rel_ev *rel;         /* its releases in order (nrel of them; relcap allocated): TMA kernels only */
    int nrel, relcap;
    int warp_met;        /* met its warp at a bar.warp.sync and read no shared memory since: an mbarrier
                            arrival of any lane of the warp now releases its reads too (they came before
                            the meeting, which came before the arrival) */
    int carrive, cwait;  /* barrier.cluster arrivals, and waits completed */
    uint64_t *r;
    int *busy;           /* per register: the wgmma group + 1 that reads or writes it (wgmma_flight) */
    int commits;         /* wgmma.commit_group executed */
} thread;

/* An mbarrier: its shared address, arrivals per phase, arrivals still missing, phases completed; the
 * transaction count (bytes expected by expect_tx and not yet landed: negative while a copy has landed
 * before its bytes were expected, as the PTX ISA allows); the phase the last async copy on it completes
 * (0: none), which some thread must see before the block ends. */
typedef struct mbar {
    uint64_t addr;
    int count, pending, phase;
    int64_t tx;
    int copy_phase;
} mbar;

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

#define TMAP_ADDR 0x7A5A000000000000ull

/* The async copy (TMA or cp.async.bulk) that last wrote a 16-byte chunk of shared memory, until a
 * generic write: its mbarrier (index + 1 in this block; 0: none), the phase its bytes complete, its
 * instruction and the rank of the block that issued it (a multicast may be a peer's). */
typedef struct async_rec {
    int mbar, phase, insn, cta;
} async_rec;

/* The tcgen05.mma of one commit (or of the one not yet committed: open): the mbarrier its commit
 * arrives on and the phase count that arrival completed. Until a thread has seen that phase, or that
 * of a later commit, the shared chunks those MMAs read may not be written by it, nor the accumulator
 * read. */
typedef struct tc_rec {
    int mbar, phase, open;
} tc_rec;

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

/* A warp's wgmma reads of shared memory not yet waited for: the 16-byte chunks (each once), the first
 * `committed` of them in committed groups. */
/* A warp's incomplete wgmmas: the shared chunks they read, each with its commit group (the group
 * open at issue: groups so far), once per chunk and group (last: per chunk, the group + 1 that recorded
 * it last); wait_group N completes every group but the last N committed (retired: groups complete).
 * Their registers (accumulators, A operands) are each thread's busy[reg] = group + 1: no other
 * instruction may read or write one until its group is complete. */
typedef struct wgmma_flight {
    int *chunk, *gid, *last, n;
    int groups, retired;
} wgmma_flight;

typedef struct emu {
    const wb_func *f;
    const char *const *labels; /* per insn: its label text (LABEL insns), else NULL */
    uint8_t *smem;
    int smem_bytes;
    /* p_out, p_a, p_w, p_scale, p_chan, p_m, p_n, p_k, p_ascale, p_aglobal (fp4 activations, ags=1) */
    uint64_t params[NPARAMS];
    gbuf bufs[MAX_BUFS];
    int nbufs;
    unsigned ctaid[2], nctaid[2]; /* nctaid: the grid's blocks along x and y */
    thread *t;
    int nthreads, cur; /* cur: the thread run_thread runs */
    /* the async proxy (wgmma's reads of B): per 16-byte chunk of shared memory, bit w while warp w has an
     * incomplete wgmma reading it (flight[w]: those chunks); per 4-byte word, the last generic write
     * (st.shared, cp.async): (its thread + 1) << 32 | that thread's count of fence.proxy.async then (0:
     * none since the block began); per thread, its count of fence.proxy.async */
    uint32_t *reading;
    wgmma_flight *flight;
    uint64_t *written;
    uint32_t *fences;
    int pdl; /* the target has griddepcontrol: the kernel is launched with PDL */
    const fake_tmap *tmap; /* the activations' tensor map (TMA kernels), else NULL */
    async_rec *arec;       /* per 16-byte chunk of shared memory */
    /* the write-after-read check of async copies (TMA kernels only; else NULL): per 16-byte chunk and
     * thread, 1 + the thread's count of releases at its last read of the chunk since the last async copy
     * into it (0: none); per chunk, the instruction of its last read; bar.sync generations completed */
    uint32_t *rd;
    int *rd_insn;
    int bar_gen;
    mbar mbars[MAX_MBARS];
    int nmbars, progress; /* progress: instructions run in this round (a failed try_wait is none) */
    /* tcgen05: tensor memory (lanes x columns of f32), the allocation (base column, columns; 0 when
     * none), per 16-byte shared chunk the record + 1 of the last MMA that read it, the records */
    uint32_t *tmem; /* f32 or s32 bits */
    int tmem_base, tmem_cols;
    int *tc_wrote;      /* per column: the record + 1 of the last MMA that wrote it (0: none) */
    uint8_t *tc_unread; /* per lane and column: written by an MMA, not read by tcgen05.ld since */
    int *tc_read;
    uint8_t *tc_cp;     /* per lane and column: holds what a tcgen05.cp wrote (scale factors) */
    int *tc_sf_read;    /* per column: the record + 1 of the last MMA that read scale factors there */
    tc_rec *tc_recs;
    int ntc_recs;
    /* a thread block cluster along x (cfg.cluster 2): the block's rank in it and its size (0 and 1
     * without one), the other block of the pair (NULL without one); ended: every thread of the block has
     * ended (the blocks of a cluster take turns by rounds, so one may end before the other) */
    int rank, csize;
    struct emu *peer;
    int ended;
} emu;

/* Text for messages, returned by value (a temporary lives to the end of the call that prints it). */
typedef struct name_buf {
    char s[48];
} name_buf;

/* "thread t", or "thread t of CTA r" in a cluster. */
static name_buf who(const emu *e, int t)
{
    name_buf b;
    if (e->csize > 1)
        snprintf(b.s, sizeof b.s, "thread %d of CTA %d", t, e->rank);
    else
        snprintf(b.s, sizeof b.s, "thread %d", t);
    return b;
}

/* " of CTA r" in a cluster, else nothing: whose shared memory or mbarrier a message means. */
static name_buf of_cta(const emu *e)
{
    name_buf b = {{0}};
    if (e->csize > 1)
        snprintf(b.s, sizeof b.s, " of CTA %d", e->rank);
    return b;
}

/* The block of rank r of e's cluster (r below its size: checked by the caller). */
static emu *cta_of(emu *e, int r) { return r == e->rank ? e : e->peer; }

static const char *const param_names[NPARAMS] = {"p_out", "p_a", "p_w", "p_scale", "p_chan", "p_m", "p_n", "p_k",
                                                 "p_ascale", "p_aglobal",
                                                 /* the activation quantizer's (lower/lower_quant.c) */
                                                 "p_x", "p_codes", "p_scales", "p_groups", "p_gsize", "p_global",
                                                 "p_n4", "p_part", "p_reduce"};

static uint64_t val(const thread *th, const wb_opnd *o)
{
    return o->kind == WB_O_REG ? th->r[o->v] : (uint64_t)o->v;
}

static float as_f32(uint64_t v)
{
    uint32_t b = (uint32_t)v;
    float x;
    memcpy(&x, &b, 4);
    return x;
}

static uint64_t from_f32(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    return b;
}

static uint8_t *shared_at(emu *e, uint64_t addr, int bytes)
{
    CHECK(addr + (uint64_t)bytes <= (uint64_t)e->smem_bytes, "shared access at %llu (+%d) past %d bytes",
          (unsigned long long)addr, bytes, e->smem_bytes);
    CHECK(addr % (uint64_t)bytes == 0, "shared access of %d bytes at %llu is misaligned", bytes,
          (unsigned long long)addr);
    return e->smem + addr;
}

/* Any write of `bytes` of shared memory at addr of block d by thread `it` of block s (a store, or a
 * copy it issued: a multicast writes a peer's too): no incomplete wgmma of d may read those bytes (the
 * hardware reads B at any time before wgmma.wait_group), nor a tcgen05.mma whose commit the writer has
 * not seen (a peer cannot have seen it). */
static void shared_write_check(const emu *d, const emu *s, int it, uint64_t addr, int bytes)
{
    for (uint64_t c = addr / 16; c <= (addr + (uint64_t)bytes - 1) / 16; c++)
        if (d->reading[c]) {
            int w = 0;
            while (!(d->reading[c] >> w & 1))
                w++;
            ck_abort_msg("%s (insn %d) writes shared %llu (+%d)%s while warp %d's incomplete wgmma reads it",
                         who(s, it).s, s->t[it].pc, (unsigned long long)addr, bytes, of_cta(d).s, w);
        }
    for (uint64_t c = addr / 16; c <= (addr + (uint64_t)bytes - 1) / 16; c++)
        if (d->tc_read[c]) {
            const tc_rec *rec = &d->tc_recs[d->tc_read[c] - 1];
            CHECK(d == s && !rec->open && s->t[it].seen_rec >= d->tc_read[c],
                  "%s (insn %d) writes shared %llu (+%d)%s while a tcgen05.mma that reads it may run (%s)",
                  who(s, it).s, s->t[it].pc, (unsigned long long)addr, bytes, of_cta(d).s,
                  rec->open ? "not committed" : "its commit's mbarrier phase not waited for by this thread");
        }
}

/* A generic-proxy write (st.shared, cp.async) by thread e->cur: the async proxy sees it only after the
 * writer's next fence.proxy.async; the chunks hold no async copy's data any more. */
static void shared_write(emu *e, uint64_t addr, int bytes)
{
    shared_write_check(e, e, e->cur, addr, bytes);
    for (uint64_t c = addr / 16; c <= (addr + (uint64_t)bytes - 1) / 16; c++)
        e->arec[c].mbar = 0;
    for (uint64_t a = addr / 4; a <= (addr + (uint64_t)bytes - 1) / 4; a++)
        e->written[a] = (uint64_t)(e->cur + 1) << 32 | e->fences[e->cur];
}

/* Thread t reads `bytes` of shared memory at addr (what: the instruction): a chunk an async copy wrote
 * holds its data only once the copy's mbarrier phase is complete, and the thread may rely on that only
 * after seeing the phase (mbarrier.try_wait): otherwise a race with the copy. The mbarrier is this
 * block's own, also for a peer's multicast (its bytes complete on each destination's mbarrier). */
static void check_landed(const emu *e, int t, uint64_t addr, int bytes, const char *what)
{
    for (uint64_t c = addr / 16; c <= (addr + (uint64_t)bytes - 1) / 16; c++) {
        const async_rec *ar = &e->arec[c];
        if (ar->mbar && e->t[t].seen[ar->mbar - 1] < ar->phase) {
            name_buf by = {{0}};
            if (e->csize > 1)
                snprintf(by.s, sizeof by.s, " of CTA %d", ar->cta);
            ck_abort_msg("%s (insn %d, %s) reads shared %llu, written by the async copy of insn %d%s, before "
                         "waiting for the phase that copy completes: it has seen %d phases of mbarrier %d (shared "
                         "%llu), the copy's bytes complete phase %d", who(e, t).s, e->t[t].pc, what,
                         (unsigned long long)(16 * c), ar->insn, by.s, e->t[t].seen[ar->mbar - 1], ar->mbar - 1,
                         (unsigned long long)e->mbars[ar->mbar - 1].addr, ar->phase);
        }
    }
}

/* A wgmma's read: every lane gets its results, so every lane must have seen the phase. */
static void check_landed_warp(const emu *e, int w, uint64_t addr, int bytes, const char *what)
{
    for (int l = 0; l < 32; l++)
        check_landed(e, 32 * w + l, addr, bytes, what);
}

/* Thread t's read of chunk c ends here (insn): a later async copy into the chunk must be ordered after
 * one of the releases t makes from now on (check_released). A read after its warp's last meeting is
 * not ordered by the meeting: warp_met ends. */
static void note_read(emu *e, int t, uint64_t c, int insn)
{
    e->t[t].warp_met = 0;
    if (!e->rd)
        return;
    e->rd[c * (uint64_t)e->nthreads + (uint64_t)t] = (uint32_t)e->t[t].nrel + 1;
    e->rd_insn[c] = insn;
}

/* A read of `bytes` of shared memory at addr by thread t that ends at once (ld.shared, ldmatrix). */
static void shared_read(emu *e, int t, uint64_t addr, int bytes, const char *what)
{
    check_landed(e, t, addr, bytes, what);
    for (uint64_t c = addr / 16; c <= (addr + (uint64_t)bytes - 1) / 16; c++)
        note_read(e, t, c, e->t[t].pc);
}

/* Thread t of block e releases (arrives on mbarrier index idx of the block of rank cta, counting toward
 * phase; or at the bar.sync of generation phase, idx REL_BAR; or at its phase-th barrier.cluster, idx
 * REL_CLUSTER): whoever sees that phase complete is ordered after t's earlier reads. */
static void note_release(emu *e, int t, int cta, int idx, int phase)
{
    thread *th = &e->t[t];
    if (!e->rd)
        return;
    if (th->nrel == th->relcap) {
        th->relcap = th->relcap ? 2 * th->relcap : 64;
        th->rel = realloc(th->rel, (size_t)th->relcap * sizeof *th->rel);
        ck_assert_ptr_nonnull(th->rel);
    }
    th->rel[th->nrel++] = (rel_ev){cta, idx, phase};
}

/* Thread i of block e arrives on an mbarrier (of the block of rank cta: index idx, toward phase): a
 * release of its own reads, and of those of every lane of its warp that met it at a bar.warp.sync and
 * has read nothing since (so a lane's arrivals on two mbarriers after one meeting, its own block's and
 * a peer's, both release the warp). */
static void warp_release(emu *e, int i, int cta, int idx, int phase)
{
    int base = i - i % 32;
    for (int l = 0; l < 32; l++)
        if (base + l == i || e->t[base + l].warp_met)
            note_release(e, base + l, cta, idx, phase);
}

/* Thread th of the block of rank `rank` has seen release ev: an mbarrier phase or bar.sync generation of
 * its own block (a thread waits on its own block's mbarriers alone: a peer's are never seen), or a
 * barrier.cluster arrival it has waited past. */
static int has_seen(int rank, const thread *th, rel_ev ev)
{
    if (ev.mbar == REL_CLUSTER)
        return th->cwait >= ev.phase;
    if (ev.cta != rank)
        return 0;
    return ev.mbar == REL_BAR ? th->bars >= ev.phase : th->seen[ev.mbar] >= ev.phase;
}

/* Write after read: an async copy into chunk c of block d, issued by thread `it` of block s (a peer's
 * multicast, or d's own), overwrites what every thread of d read of it since the last copy; each such
 * read must happen before the copy: the reader released (an mbarrier arrival, on the issuing block's
 * mbarrier when it is a peer; a bar.sync) after it, in a phase the issuing thread has seen complete.
 * The interpreter runs a thread on to its next wait, so without this a consumer that releases a stage
 * before it is done with it (before its wgmma.wait_group, or before a last ld.shared), or releases it
 * to its own block alone when a peer's multicast refills it, would go unnoticed. */
static void check_released(emu *d, const emu *s, int it, uint64_t c)
{
    if (!d->rd)
        return;
    const thread *p = &s->t[it];
    uint32_t *rd = &d->rd[c * (uint64_t)d->nthreads];
    for (int t = 0; t < d->nthreads; t++) {
        if (!rd[t] || (d == s && t == it)) {
            rd[t] = 0;
            continue;
        }
        const thread *r = &d->t[t];
        int j = (int)rd[t] - 1;
        while (j < r->nrel && !has_seen(s->rank, p, r->rel[j]))
            j++;
        CHECK(j < r->nrel, "%s's async copy (insn %d) overwrites shared %llu%s, which %s read (the chunk's last "
              "read: insn %d) with no release since (mbarrier arrival, bar.sync) in a phase the copying thread has "
              "seen complete: a write-after-read race", who(s, it).s, p->pc, (unsigned long long)(16 * c),
              of_cta(d).s, who(d, t).s, d->rd_insn[c]);
        rd[t] = 0;
    }
}

/* An async-proxy write (TMA, cp.async.bulk) into block d, issued by thread s->cur of block s (d itself,
 * or a peer by multicast), its bytes counted on d's mbarrier mb: wgmma (the async proxy too) needs no
 * fence to read it, but every reader must first see the phase that the copy's bytes complete, the one
 * now running (the expect_tx may come before or after). */
static void async_write(emu *d, const emu *s, uint64_t addr, int bytes, mbar *mb)
{
    shared_write_check(d, s, s->cur, addr, bytes);
    mb->copy_phase = mb->phase + 1;
    for (uint64_t c = addr / 16; c <= (addr + (uint64_t)bytes - 1) / 16; c++) {
        check_released(d, s, s->cur, c);
        d->arec[c] = (async_rec){(int)(mb - d->mbars) + 1, mb->phase + 1, s->t[s->cur].pc, s->rank};
    }
    for (uint64_t a = addr / 4; a <= (addr + (uint64_t)bytes - 1) / 4; a++)
        d->written[a] = 0;
}

/* The mbarrier at shared address addr of block d (initialized), for an instruction of thread s->cur
 * of block s (d itself, or a peer: a remote arrival, a multicast). */
static mbar *mbar_in(emu *d, const emu *s, uint64_t addr)
{
    for (int i = 0; i < d->nmbars; i++)
        if (d->mbars[i].addr == addr)
            return &d->mbars[i];
    ck_abort_msg("%s (insn %d): no mbarrier was initialized at shared %llu%s%s", who(s, s->cur).s, s->t[s->cur].pc,
                 (unsigned long long)addr, of_cta(d).s,
                 d == s ? "" : " (a peer's mbarriers must be initialized before a cluster barrier that orders the "
                               "init before any remote arrival or multicast)");
    return NULL;
}

/* The mbarrier at shared address addr of the block of thread e->cur (initialized). */
static mbar *mbar_at(emu *e, uint64_t addr) { return mbar_in(e, e, addr); }

/* A phase completes once every arrival it expects has come and every byte expected has landed; the
 * next one expects count arrivals and no bytes. */
static void mbar_settle(mbar *mb)
{
    if (mb->pending == 0 && mb->tx == 0)
        mb->phase++, mb->pending = mb->count, mb->tx = 0;
}

/* The PTX ISA bounds the transaction count to +-(2^20 - 1). (s: the block of the thread whose
 * instruction changed it; d: the mbarrier's.) */
static void mbar_tx_check(const emu *s, const emu *d, const mbar *mb)
{
    CHECK(mb->tx > -(1 << 20) && mb->tx < (1 << 20), "%s (insn %d): mbarrier %d%s's transaction count %lld "
          "is out of range", who(s, s->cur).s, s->t[s->cur].pc, (int)(mb - d->mbars), of_cta(d).s, (long long)mb->tx);
}

/* mbarrier.arrive (tx 0) or arrive.expect_tx (tx bytes) by thread s->cur on mbarrier mb of block d (its
 * own, or a peer's by a remote arrival): the bytes are expected first, then the arrival counts. One
 * arrival more than the phase expects is an error (the pending count would go below zero). */
static void mbar_arrive(const emu *s, const emu *d, mbar *mb, int64_t tx)
{
    CHECK(mb->pending > 0, "%s (insn %d): an arrival on mbarrier %d (shared %llu%s) with none pending in its "
          "phase %d (%lld bytes still expected)", who(s, s->cur).s, s->t[s->cur].pc, (int)(mb - d->mbars),
          (unsigned long long)mb->addr, of_cta(d).s, mb->phase, (long long)mb->tx);
    mb->tx += tx;
    mbar_tx_check(s, d, mb);
    mb->pending--;
    mbar_settle(mb);
}

/* complete_tx: an async copy's bytes have landed (on mbarrier mb of block d; issued by s->cur). */
static void mbar_complete_tx(const emu *s, const emu *d, mbar *mb, int64_t bytes)
{
    mb->tx -= bytes;
    mbar_tx_check(s, d, mb);
    mbar_settle(mb);
}
/* wgmma (warp w) reads `bytes` of B at addr: their writers must have fenced the async proxy since (and
 * met the warp at a barrier: the interpreter runs a thread on only to its next barrier or collective),
 * an async copy's data must have landed (check_landed; once per chunk and flight: while the warp reads
 * it no write may come); the chunk stays in the warp's flight until its wgmma.wait_group. */
static void async_read(emu *e, int w, uint64_t addr, int bytes)
{
    for (uint64_t a = addr / 4; a <= (addr + (uint64_t)bytes - 1) / 4; a++) {
        uint64_t wr = e->written[a];
        CHECK(!wr || e->fences[(wr >> 32) - 1] != (uint32_t)wr,
              "warp %d's wgmma (insn %d) reads shared %llu, written by thread %d with no fence.proxy.async since", w,
              e->t[32 * w].pc, (unsigned long long)(4 * a), (int)(wr >> 32) - 1);
    }
    wgmma_flight *fl = &e->flight[w];
    for (uint64_t c = addr / 16; c <= (addr + (uint64_t)bytes - 1) / 16; c++) {
        if (!(e->reading[c] >> w & 1))
            check_landed_warp(e, w, 16 * c, 16, "wgmma");
        if (fl->last[c] != fl->groups + 1) {
            e->reading[c] |= 1u << w;
            fl->last[c] = fl->groups + 1;
            fl->gid[fl->n] = fl->groups;
            fl->chunk[fl->n++] = (int)c;
        }
    }
}

/* wgmma.wait_group: warp w's groups but the last `left` committed are complete; their chunks' reads
 * end (of every lane: it got the data). */
static void wgmma_retire(emu *e, int w, int left, int pc)
{
    wgmma_flight *fl = &e->flight[w];
    if (fl->groups - left > fl->retired)
        fl->retired = fl->groups - left;
    int kept = 0;
    for (int j = 0; j < fl->n; j++) {
        if (fl->gid[j] >= fl->retired) {
            fl->chunk[kept] = fl->chunk[j], fl->gid[kept++] = fl->gid[j];
            continue;
        }
        e->reading[fl->chunk[j]] &= ~(1u << w);
        for (int l = 0; l < 32; l++)
            note_read(e, 32 * w + l, (uint64_t)fl->chunk[j], pc);
    }
    fl->n = kept;
    for (int j = 0; j < kept; j++) /* a chunk an incomplete group reads too */
        e->reading[fl->chunk[j]] |= 1u << w;
}

/* Thread th's instruction may not touch a register of one of its warp's incomplete wgmmas. */
static void check_busy(emu *e, const thread *th, const wb_insn *in)
{
    const wgmma_flight *fl = &e->flight[e->cur / 32];
    for (int j = 0; j < in->nopnds; j++) {
        const wb_opnd *o = &in->o[j];
        int n = o->kind == WB_O_REG ? 1 : o->kind == WB_O_LIST ? (int)o->v : 0;
        for (int q = 0; q < n; q++) {
            int reg = o->kind == WB_O_REG ? (int)o->v : o->list[q].id;
            CHECK(th->busy[reg] <= fl->retired, "thread %d (insn %d, %s) touches register %d of wgmma group %d, "
                  "not yet complete (wait_group)", e->cur, th->pc, in->type ? in->type : "-", reg, th->busy[reg] - 1);
        }
    }
}

/* A global access of `bytes` at addr, `align`-byte aligned, inside one of the case's buffers. */
static uint8_t *global_span(const emu *e, uint64_t addr, int64_t bytes, int align, int store)
{
    CHECK(addr % (uint64_t)align == 0, "global access of %lld bytes at %#llx is not %d-byte aligned", (long long)bytes,
          (unsigned long long)addr, align);
    for (int i = 0; i < e->nbufs; i++)
        if (addr >= e->bufs[i].lo && addr + (uint64_t)bytes <= e->bufs[i].hi) {
            CHECK(!store || e->bufs[i].kind == BUF_OUT, "global store into the read-only %s", e->bufs[i].name);
            CHECK(!e->pdl || e->t[e->cur].waited || e->bufs[i].kind == BUF_LAYER,
                  "global %s of the %s before griddepcontrol.wait (the previous kernel may still write it)",
                  store ? "store" : "load", e->bufs[i].name);
            return (uint8_t *)(uintptr_t)addr;
        }
    ck_abort_msg("global %s of %lld bytes at %#llx lies outside every buffer", store ? "store" : "load",
                 (long long)bytes, (unsigned long long)addr);
    return NULL;
}

/* A global access of `bytes` at addr: naturally aligned, inside one of the case's buffers. */
static uint8_t *global_at(const emu *e, uint64_t addr, int bytes, int store)
{
    return global_span(e, addr, bytes, bytes, store);
}

static int jump(const emu *e, const char *label)
{
    for (int i = 0; i < e->f->ninsns; i++)
        if (e->labels[i] && strcmp(e->labels[i], label) == 0)
            return i;
    ck_abort_msg("no label %s", label);
    return -1;
}

static int is_collective(wb_op op)
{
    return op == WB_OP_LDMATRIX_X4 || op == WB_OP_LDMATRIX_X2 || op == WB_OP_MMA_S8_K32 || op == WB_OP_MMA_S8_K16 ||
           op == WB_OP_MMA_S4_K64 || op == WB_OP_MMA_S4_K32 || op == WB_OP_MMA_FP8 || op == WB_OP_WGMMA_S8 ||
           op == WB_OP_WGMMA_F8 || op == WB_OP_WGMMA || op == WB_OP_MMA_K16 || op == WB_OP_MMA_K8 ||
           op == WB_OP_MMA_BLOCK || op == WB_OP_TC_ALLOC || op == WB_OP_TC_DEALLOC || op == WB_OP_TC_RELINQUISH ||
           op == WB_OP_SHFL_BFLY || op == WB_OP_BAR_WARP_SYNC || op == WB_OP_ELECT || op == WB_OP_SETMAXNREG_INC ||
           op == WB_OP_SETMAXNREG_DEC;
}

/* A compare of the type's width (every setp the kernel emits is u32). */
static float as_f32(uint64_t v);
static wb_type fp8_type(const char *types, int which);

/* setp: unsigned 32-bit, or f32 (ordered: a NaN compares false, except ne, which is unordered-false
 * too: setp.ne.f32 is false for a NaN operand) */
static int compare(wb_op op, const char *ty, uint64_t a, uint64_t b)
{
    if (ty && !strcmp(ty, "f64")) {
        double x, y;
        memcpy(&x, &a, 8);
        memcpy(&y, &b, 8);
        return op == WB_OP_SETP_LT ? x < y : op == WB_OP_SETP_GE ? x >= y : op == WB_OP_SETP_NE ? (x < y || x > y) : x == y;
    }
    if (ty && ty[0] == 'f') {
        CHECK(!strcmp(ty, "f32"), "setp.%s is not modelled", ty);
        float x = as_f32(a), y = as_f32(b);
        return op == WB_OP_SETP_LT ? x < y : op == WB_OP_SETP_GE ? x >= y : op == WB_OP_SETP_NE ? (x < y || x > y) : x == y;
    }
    CHECK(!ty || ty[0] == 'u' || ty[0] == 'b', "setp.%s is not modelled", ty);
    uint32_t x = (uint32_t)a, y = (uint32_t)b;
    return op == WB_OP_SETP_LT ? x < y : op == WB_OP_SETP_GE ? x >= y : op == WB_OP_SETP_NE ? x != y : x == y;
}

static double half_to_double(int bf, uint32_t h)
{
    return bf ? wb_bf16_to_double((uint16_t)h) : wb_f16_to_double((uint16_t)h);
}

static uint32_t double_to_half(int bf, double v) { return bf ? wb_bf16_from_double(v) : wb_f16_from_double(v); }

/* fma.rn.f16x2 / bf16x2 (as tests/test_dequant.c): on each 16-bit half, a * b (exact in double) + c,
 * rounded once to nearest even, subnormals kept. (Every fma of these kernels adds -0 or a value near
 * a * b, so the double sum is exact too.) */
static uint32_t fma_x2(int bf, uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t r = 0;
    for (int h = 0; h < 2; h++) {
        int s = 16 * h;
        double v = half_to_double(bf, a >> s & 0xFFFF) * half_to_double(bf, b >> s & 0xFFFF) +
                   half_to_double(bf, c >> s & 0xFFFF);
        r |= double_to_half(bf, v) << s;
    }
    return r;
}

/* cvt.rn.f16x2.e2m1x2 d, b (as tests/test_dequant.c): the low nibble of the .b8 b to the low half of d,
 * the high nibble to the high half, each exactly (every e2m1 value is an f16). */
static uint64_t cvt_e2m1x2(uint64_t b)
{
    CHECK(b < 256, "a .b8 register holds %#llx", (unsigned long long)b);
    static wb_type e2m1;
    if (!e2m1.bits)
        CHECK(wb_type_parse("e2m1", &e2m1) == WB_OK, "e2m1 is a type");
    return wb_f16_from_double(wb_type_decode(e2m1, (uint32_t)b & 15)) |
           (uint32_t)wb_f16_from_double(wb_type_decode(e2m1, (uint32_t)b >> 4)) << 16;
}

static uint64_t cvt(const char *ty, uint64_t v)
{
    if (strcmp(ty, "u64.u32") == 0)
        return (uint32_t)v;
    if (strcmp(ty, "u32.u16") == 0)
        return (uint16_t)v;
    if (strcmp(ty, "f32.f16") == 0) /* exact */
        return from_f32((float)wb_f16_to_double((uint16_t)v));
    if (strcmp(ty, "rn.f16x2.e2m1x2") == 0)
        return cvt_e2m1x2(v);
    if (strcmp(ty, "rn.f32.s32") == 0)
        return from_f32((float)(int32_t)(uint32_t)v);
    if (strcmp(ty, "rn.bf16.f32") == 0)
        return wb_bf16_from_double((double)as_f32(v));
    if (strcmp(ty, "rn.f16.f32") == 0)
        return wb_f16_from_double((double)as_f32(v));
    if (strcmp(ty, "f64.f32") == 0) { /* exact */
        double x = (double)as_f32(v);
        uint64_t b;
        memcpy(&b, &x, 8);
        return b;
    }
    if (strcmp(ty, "rn.f32.f64") == 0) { /* the C conversion rounds to nearest even */
        double x;
        memcpy(&x, &v, 8);
        return from_f32((float)x);
    }
    if (strcmp(ty, "u32.u64") == 0)
        return (uint32_t)v;
    if (strcmp(ty, "rz.f32.f64") == 0) { /* toward zero: the nearest f32, stepped back when it rounded away */
        double x;
        memcpy(&x, &v, 8);
        float r = (float)x;
        if (isfinite(r) && fabs((double)r) > fabs(x))
            r = nextafterf(r, 0.0f);
        return from_f32(r);
    }
    if (strcmp(ty, "rn.f16x2.e4m3x2") == 0) { /* the low byte to the low half, exactly */
        wb_type t = fp8_type("e4m3.e4m3", 0);
        return wb_f16_from_double(wb_type_decode(t, (uint32_t)(v & 0xFF))) |
               (uint64_t)wb_f16_from_double(wb_type_decode(t, (uint32_t)(v >> 8 & 0xFF))) << 16;
    }
    if (strcmp(ty, "rni.s32.f32") == 0) { /* nearest even; NaN to 0, saturating (PTX cvt.rni.s32.f32) */
        float x = as_f32(v);
        double r = isnan(x) ? 0 : nearbyint((double)x);
        r = r < -2147483648.0 ? -2147483648.0 : r > 2147483647.0 ? 2147483647.0 : r;
        return (uint32_t)(int32_t)r;
    }
    ck_abort_msg("cvt.%s is not modelled", ty);
    return 0;
}

/* One integer op of the type's width: 32-bit types wrap at 2^32; shift amounts above the width are
 * clamped to it (PTX); shr is logical (no shr.s* is emitted: checked). */
static uint64_t alu(wb_op op, const char *ty, uint64_t a, uint64_t b, uint64_t c)
{
    int wide = ty && strstr(ty, "64");
    uint64_t mask = wide ? ~0ull : 0xffffffffull, r, width = wide ? 64 : 32;
    if (op == WB_OP_SHL || op == WB_OP_SHR) {
        CHECK(ty && ty[0] != 's', "%s.%s is not modelled", op == WB_OP_SHL ? "shl" : "shr", ty ? ty : "?");
        b = (b & mask) < width ? b & mask : width;
        if (b == 64)
            return 0;
    }
    switch (op) {
    case WB_OP_ADD: r = a + b; break;
    case WB_OP_SUB: r = a - b; break;
    case WB_OP_MUL_LO: r = a * b; break;
    case WB_OP_MUL_WIDE: return (uint64_t)(uint32_t)a * (uint32_t)b;
    case WB_OP_MAD_LO: r = a * b + c; break;
    case WB_OP_DIV: r = (uint32_t)a / (uint32_t)b; break;
    case WB_OP_REM: r = (uint32_t)a % (uint32_t)b; break;
    case WB_OP_SHL: r = a << b; break;
    case WB_OP_SHR: r = (a & mask) >> b; break;
    case WB_OP_AND: r = a & b; break;
    case WB_OP_OR: r = a | b; break;
    case WB_OP_XOR: r = a ^ b; break;
    case WB_OP_MAX:
        CHECK(ty && !strcmp(ty, "u32"), "max.%s is not modelled", ty ? ty : "?");
        r = (uint32_t)a > (uint32_t)b ? a : b;
        break;
    default: ck_abort_msg("op %d is not modelled", (int)op); return 0;
    }
    return r & mask;
}

/* The width of a scalar load or store type (u8/s8/b8: 1, u16/b16/f16...: 2, else 4; 64-bit ones are
 * not emitted for data). Loads zero-extend. */
static int access_bytes(const char *ty)
{
    CHECK(ty && !strstr(ty, "64"), "a 64-bit load or store (%s) is not modelled", ty ? ty : "?");
    return ty[1] == '8' ? 1 : strstr(ty, "16") ? 2 : 4;
}

static void load(emu *e, const char *ty, uint64_t *dst, uint64_t addr, int shared)
{
    int bytes = access_bytes(ty);
    const uint8_t *p = shared ? shared_at(e, addr, bytes) : global_at(e, addr, bytes, 0);
    if (shared)
        shared_read(e, e->cur, addr, bytes, "ld.shared");
    uint32_t v = 0;
    memcpy(&v, p, (size_t)bytes);
    *dst = v;
}

static void store(emu *e, const char *ty, uint64_t addr, uint64_t v, int shared)
{
    int bytes = access_bytes(ty);
    uint8_t *p = shared ? shared_at(e, addr, bytes) : global_at(e, addr, bytes, 1);
    if (shared)
        shared_write(e, addr, bytes);
    uint32_t x = (uint32_t)v;
    memcpy(p, &x, (size_t)bytes);
}

/* lop3.b32: bit i of the result is bit (a_i << 2 | b_i << 1 | c_i) of the truth table. */
static uint64_t lop3(uint64_t a, uint64_t b, uint64_t c, uint64_t lut)
{
    uint32_t r = 0;
    for (int i = 0; i < 32; i++) {
        int sel = (int)((a >> i & 1) << 2 | (b >> i & 1) << 1 | (c >> i & 1));
        r |= (uint32_t)(lut >> sel & 1) << i;
    }
    return r;
}

/* prmt.b32 (default mode): byte i of the result is byte (s & 7) of {b, a}, where s is nibble i of c;
 * with bit 3 of s set, the sign bit of that byte copied over all eight bits. */
static uint64_t prmt(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t bytes = (a & 0xffffffffull) | (b & 0xffffffffull) << 32;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        unsigned s = (unsigned)(c >> (4 * i)) & 15, v = (unsigned)(bytes >> (8 * (s & 7))) & 0xFF;
        r |= (uint32_t)(s & 8 ? (v & 0x80 ? 0xFF : 0) : v) << (8 * i);
    }
    return r;
}

/* min / max: u32, s32 or f32 (f32: a NaN operand yields the other, as PTX's without .NaN) */
static uint64_t min_max(const wb_insn *in, uint64_t a, uint64_t b)
{
    const char *ty = in->type;
    int mx = in->op == WB_OP_MAX;
    if (!strcmp(ty, "f32")) {
        float x = as_f32(a), y = as_f32(b);
        return from_f32(isnan(x) ? y : isnan(y) ? x : mx ? fmaxf(x, y) : fminf(x, y));
    }
    if (!strcmp(ty, "s32")) {
        int32_t x = (int32_t)(uint32_t)a, y = (int32_t)(uint32_t)b;
        return (uint32_t)(mx ? (x > y ? x : y) : (x < y ? x : y));
    }
    CHECK(!strcmp(ty, "u32"), "%s.%s is not modelled", mx ? "max" : "min", ty);
    uint32_t x = (uint32_t)a, y = (uint32_t)b;
    return mx ? (x > y ? x : y) : (x < y ? x : y);
}

/* div: u32; rz.f32 (the quotient rounded toward zero: the nearest one, stepped back toward zero when
 * its exact residual says it rounded away); rn.f64 */
static uint64_t divide(const char *ty, uint64_t a, uint64_t b)
{
    if (!strcmp(ty, "rz.f32")) {
        float x = as_f32(a), y = as_f32(b), q = x / y;
        if (isfinite(q) && q != 0) {
            float rem = fmaf(q, y, -x); /* exact: q y - x */
            if ((q > 0 && (y > 0 ? rem > 0 : rem < 0)) || (q < 0 && (y > 0 ? rem < 0 : rem > 0)))
                q = nextafterf(q, 0.0f);
        }
        return from_f32(q);
    }
    if (!strcmp(ty, "rn.f64")) {
        double x, y;
        memcpy(&x, &a, 8);
        memcpy(&y, &b, 8);
        double q = x / y;
        uint64_t r;
        memcpy(&r, &q, 8);
        return r;
    }
    CHECK(!strcmp(ty, "u32"), "div.%s is not modelled", ty);
    return (uint32_t)a / (uint32_t)b;
}

/* Run thread `i` until it meets a collective op, a barrier or its end. */
/* An operand's value in one lane's registers. */
static uint64_t lane_val(const uint64_t *r, const wb_opnd *o) { return o->kind == WB_O_REG ? r[o->v] : (uint64_t)o->v; }

/* tcgen05 (sm_100a, sm_103a; lower/lower_tcgen05.c, lower_tcgen05_bs.c), modelled from the PTX ISA. A
 * shared memory descriptor: start address >> 4 in bits 0..13, leading byte offset bits 16..29 (unused by
 * a swizzled K-major tile), stride between 8-row groups >> 4 in bits 32..45, the fixed 0b001 in bits
 * 46..48, base offset 0 (49..51), offset mode 0 (52), zeros (53..60), swizzle mode in 61..63: 2 (128
 * bytes: rows of 128 bytes, the 16-byte chunk index, address bits 4..6, XORed with bits 7..9) or 6 (32
 * bytes: rows of 32 bytes, address bit 4 XORed with bit 7), the ones modelled; the pattern repeats from
 * 1024- and 256-byte boundaries (base offset 0). The address of byte `byte` (of the step's 32) of row r. */
static uint64_t tc_smem_addr(uint64_t desc, int r, int byte)
{
    CHECK((desc >> 46 & 7) == 1, "tcgen05 descriptor: bits 46..48 must be 0b001 (got %d)", (int)(desc >> 46 & 7));
    CHECK((desc >> 49 & 0xFFF) == 0, "tcgen05 descriptor: base offset, offset mode and bits 53..60 must be zero");
    int mode = (int)(desc >> 61), row = mode == 2 ? 128 : mode == 6 ? 32 : 0, bits = mode == 2 ? 7 : 1;
    CHECK(row, "tcgen05 descriptor swizzle mode %d is not modelled", mode);
    CHECK((desc >> 14 & 3) == 0 && (desc >> 30 & 3) == 0, "tcgen05 descriptor: reserved bits set");
    uint64_t start = (desc & 0x3FFF) << 4, sbo = ((desc >> 32) & 0x3FFF) << 4;
    CHECK(start % (uint64_t)row + (uint64_t)byte < (uint64_t)row,
          "tcgen05 operand step at row offset %d + byte %d leaves the %d-byte row", (int)(start % (uint64_t)row),
          byte, row);
    uint64_t lin = start + (uint64_t)(r / 8) * sbo + (uint64_t)(r % 8) * (uint64_t)row + (uint64_t)byte;
    return lin ^ (((lin >> 7) & (uint64_t)bits) << 4);
}

/* tcgen05 reads `bytes` of shared memory at addr through the async proxy: their writers must have
 * fenced it since (as async_read); the chunk is now read by the open record. */
static void tc_read(emu *e, uint64_t addr, int bytes)
{
    for (uint64_t a = addr / 4; a <= (addr + (uint64_t)bytes - 1) / 4; a++) {
        uint64_t wr = e->written[a];
        CHECK(!wr || e->fences[(wr >> 32) - 1] != (uint32_t)wr,
              "tcgen05.mma reads shared %llu, written by thread %d with no fence.proxy.async since",
              (unsigned long long)(4 * a), (int)(wr >> 32) - 1);
    }
    check_landed(e, e->cur, addr, bytes, "tcgen05.mma");
    for (uint64_t c = addr / 16; c <= (addr + (uint64_t)bytes - 1) / 16; c++)
        e->tc_read[c] = e->ntc_recs;
}

/* The open record of this thread's tcgen05 operations (MMAs and copies) not yet committed. */
static void tc_open(emu *e)
{
    if (!e->ntc_recs || !e->tc_recs[e->ntc_recs - 1].open) {
        CHECK(e->ntc_recs < MAX_TC_RECS, "too many tcgen05 commits for the model");
        e->tc_recs[e->ntc_recs++] = (tc_rec){-1, 0, 1};
    }
}

/* tcgen05.mma.cta_group::1.kind::{f16, i8, f8f6f4} [d], adesc, bdesc, idesc, enable-input-d by one
 * thread: the instruction descriptor (bits 0..3 zero: dense, no saturate; D type in bits 4..5: f32 = 1,
 * s32 = 2 (i8 only); A and B types in bits 7..9 and 10..12: f16: f16 0 or bf16 1, equal; i8: s8 1;
 * f8f6f4: e4m3 0 or e5m2 1; no negation (13, 14); both K-major (15, 16 zero); N >> 3 in 17..22; M >> 4
 * in 24..28, 128 here; bits 6, 23, 29..31 zero). D[m][n] (TMEM lane m, column d + n) is D (or 0 when
 * enable-input-d is false) plus the exact sum of the products A[m][k] B[n][k] over the step's K (16
 * 16-bit values or 32 8-bit codes, 32 bytes of each row), rounded once to f32 as the other MMAs here,
 * or exact and wrapping in s32; A is M x K and B N x K, K-major through their descriptors. Complete at
 * issue; the reads stay in flight until the commit's phase is seen. */
static wb_type fp8_type(const char *types, int which);
static double mma_scale(int ue8m0, unsigned code);

static void run_tc_mma(emu *e, thread *th, const wb_insn *in)
{
    const wb_opnd *o = in->o;
    uint32_t idesc = (uint32_t)val(th, &o[3]), taddr = (uint32_t)val(th, &o[0]);
    uint64_t ad = val(th, &o[1]), bd = val(th, &o[2]);
    int ta = (int)(idesc >> 7 & 7), tb = (int)(idesc >> 10 & 7), dt = (int)(idesc >> 4 & 3);
    int nn = (int)(idesc >> 17 & 63) * 8, mm = (int)(idesc >> 24 & 31) * 16;
    int h16 = !strcmp(in->type, "f16"), i8 = !strcmp(in->type, "i8"), f8 = !strcmp(in->type, "f8f6f4"), kk = h16 ? 16 : 32;
    CHECK(h16 || i8 || f8, "tcgen05.mma kind::%s is not modelled", in->type);
    CHECK((idesc & 0xF) == 0 && (idesc >> 6 & 1) == 0 && (idesc >> 13 & 0xF) == 0 && (idesc >> 23 & 1) == 0 &&
              idesc >> 29 == 0 && (h16 ? dt == 1 && ta <= 1 && tb == ta : i8 ? dt == 2 && ta == 1 && tb == 1
                                                                                : dt == 1 && ta <= 1 && tb <= 1),
          "tcgen05.mma kind::%s instruction descriptor 0x%08x is not modelled (f16: f32 D, f16/bf16 A = B; i8: "
          "s32 D, s8 x s8; f8f6f4: f32 D, e4m3/e5m2; K-major)", in->type, idesc);
    int bf = h16 && ta == 1;
    wb_type fa = fp8_type(ta ? "e5m2.e5m2" : "e4m3.e4m3", 0), fb = fp8_type(tb ? "e5m2.e5m2" : "e4m3.e4m3", 0);
    CHECK(mm == TC_LANES && nn >= 16 && nn <= 256 && nn % 16 == 0, "tcgen05.mma M=%d N=%d is not modelled", mm, nn);
    int lane = (int)(taddr >> 16), col = (int)(taddr & 0xFFFF);
    CHECK(e->tmem_cols && lane == 0 && col >= e->tmem_base && col + nn <= e->tmem_base + e->tmem_cols,
          "tcgen05.mma D at lane %d column %d (+%d) outside the allocated columns %d..%d", lane, col, nn, e->tmem_base,
          e->tmem_base + e->tmem_cols - 1);
    tc_open(e);
    int acc = val(th, &o[4]) != 0;
    static double a[TC_LANES][32], b[256][32];
    for (int side = 0; side < 2; side++)
        for (int r = 0; r < (side ? nn : mm); r++)
            for (int k = 0; k < kk; k++) {
                uint64_t at = tc_smem_addr(side ? bd : ad, r, h16 ? 2 * k : k);
                double *x = side ? &b[r][k] : &a[r][k];
                if (h16) {
                    uint16_t v;
                    memcpy(&v, shared_at(e, at, 2), 2);
                    *x = half_to_double(bf, v);
                } else {
                    uint8_t code = *shared_at(e, at, 1);
                    *x = i8 ? (double)(int8_t)code : wb_type_decode(side ? fb : fa, code);
                }
                tc_read(e, at, h16 ? 2 : 1);
            }
    for (int m = 0; m < mm; m++)
        for (int n = 0; n < nn; n++) {
            double sum = 0; /* exact: s8 products below 2^53, fp8 and 16-bit products exact in double */
            for (int k = 0; k < kk; k++)
                sum += a[m][k] * b[n][k];
            uint32_t *dst = &e->tmem[m * TC_COLS + col + n];
            /* a fresh product (no accumulation) must not overwrite one that no thread has read yet */
            CHECK(acc || !e->tc_unread[m * TC_COLS + col + n],
                  "tcgen05.mma overwrites lane %d column %d, whose product no thread has read", m, col + n);
            e->tc_unread[m * TC_COLS + col + n] = 1;
            e->tc_wrote[col + n] = e->ntc_recs;
            if (i8) {
                *dst = (uint32_t)(int32_t)(uint32_t)(uint64_t)(int64_t)((acc ? (double)(int32_t)*dst : 0.0) + sum);
                continue;
            }
            float prev;
            memcpy(&prev, dst, 4);
            float v = (float)((acc ? (double)prev : 0.0) + sum);
            memcpy(dst, &v, 4);
        }
}

/* tcgen05.cp.cta_group::1.32x128b.warpx4 [taddr], sdesc by one thread (PTX ISA tcgen05.cp, Data
 * Movement Shape, Matrix Descriptors): a 32-row x 128-bit matrix of shared memory, K-major without
 * swizzle (mode 0: row r at start + (r / 8) x stride + (r % 8) x 16), into lanes 0..31 of tensor memory
 * from the address's column on (4 columns, bytes 4c.. of a row in column c), multicast to each of the
 * four warps' quarters (lane 32 q + r). Complete at issue, like the MMAs; its shared reads stay in
 * flight until its commit is seen. It must not overwrite columns that an MMA whose commit this thread
 * has not seen reads scale factors from, nor an MMA's unread product. */
static void run_tc_cp(emu *e, thread *th, const wb_insn *in)
{
    uint32_t taddr = (uint32_t)val(th, &in->o[0]);
    uint64_t desc = val(th, &in->o[1]);
    int lane = (int)(taddr >> 16), col = (int)(taddr & 0xFFFF);
    CHECK((desc >> 46 & 7) == 1 && (desc >> 49 & 0xFFF) == 0 && desc >> 61 == 0,
          "tcgen05.cp descriptor 0x%016llx: not a K-major matrix without swizzle", (unsigned long long)desc);
    CHECK(e->tmem_cols && lane == 0 && col >= e->tmem_base && col + 4 <= e->tmem_base + e->tmem_cols,
          "tcgen05.cp to lane %d column %d (+4) outside the allocated columns", lane, col);
    tc_open(e);
    uint64_t start = (desc & 0x3FFF) << 4, sbo = ((desc >> 32) & 0x3FFF) << 4;
    for (int c = 0; c < 4; c++)
        CHECK(th->seen_rec >= e->tc_sf_read[col + c], "tcgen05.cp overwrites column %d, whose scale factors an "
              "MMA not yet seen complete reads", col + c);
    for (int r = 0; r < 32; r++) {
        uint64_t at = start + (uint64_t)(r / 8) * sbo + (uint64_t)(r % 8) * 16;
        tc_read(e, at, 16);
        for (int c = 0; c < 4; c++) {
            uint32_t word;
            memcpy(&word, shared_at(e, at + 4 * (uint64_t)c, 4), 4);
            for (int q = 0; q < 4; q++) {
                int at_lc = (32 * q + r) * TC_COLS + col + c;
                CHECK(!e->tc_unread[at_lc], "tcgen05.cp overwrites lane %d column %d, an unread product", 32 * q + r,
                      col + c);
                e->tmem[at_lc] = word;
                e->tc_cp[at_lc] = 1;
            }
        }
    }
}

/* A scale-factor word of a block-scaled MMA: row (or column) i's word at lane i % 32 and column col +
 * i / 32, which must hold a tcgen05.cp's data, the same in all four lane quarters (the PTX ISA: scale
 * factors are duplicated to every lane partition). */
static uint32_t tc_sf_word(emu *e, int col, int i)
{
    int c = col + i / 32;
    CHECK(c >= e->tmem_base && c < e->tmem_base + e->tmem_cols, "scale factors at column %d: not allocated", c);
    uint32_t w = e->tmem[(i % 32) * TC_COLS + c];
    for (int q = 0; q < 4; q++) {
        int at = (32 * q + i % 32) * TC_COLS + c;
        CHECK(e->tc_cp[at] && e->tmem[at] == w, "scale factors of row %d at lane %d column %d: not copied there "
              "by tcgen05.cp, or not the same in every lane quarter", i, 32 * q + i % 32, c);
    }
    e->tc_sf_read[c] = e->ntc_recs;
    return w;
}

/* tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X and kind::mxf4.block_scale
 * .scale_vec::2X [d], adesc, bdesc, idesc, [sfa], [sfb], enable-input-d by one thread (PTX ISA
 * "Block Scaling", Tables 47 and 54). The instruction descriptor: bits 0..3 zero (dense), SFB id in
 * 4..5 (4X: 0; 2X: 0 or 2, the byte of the pair), bit 6 zero, A and B E2M1 = 1 in 7..9 and 10..11, bits
 * 12..16 zero (no negation, K-major), N >> 3 in 17..22, the scale type in bit 23 (UE4M3 0 with 4X,
 * UE8M0 1 with 2X here), 24..26 zero, M >> 7 in 27..28 (M = 128), SFA id in 29..30, bit 31 zero (K =
 * 64). A (M x 64) and B (N x 64) are e2m1 two to a byte, the even k in the low nibble, 32 bytes of
 * each row through their descriptors; row m of A has 4 (2) scales, bytes id.. of its word
 * (tc_sf_word), block j (k 16 j.., or 32 j..) in byte id + j; column n of B likewise. D[m][n] (TMEM
 * lane m, column d + n) is D (or 0) plus the exact sum of the scaled products, rounded once to f32. */
static void run_tc_mma_bs(emu *e, thread *th, const wb_insn *in)
{
    static const wb_type e2m1 = {WB_KIND_FLOAT, 4, 2, 1};
    const wb_opnd *o = in->o;
    int nv = !strcmp(in->type, "mxf4nvf4.block_scale.scale_vec::4X");
    CHECK(nv || !strcmp(in->type, "mxf4.block_scale.scale_vec::2X"), "tcgen05.mma kind::%s is not modelled",
          in->type);
    uint32_t idesc = (uint32_t)val(th, &o[3]), taddr = (uint32_t)val(th, &o[0]);
    uint64_t ad = val(th, &o[1]), bd = val(th, &o[2]);
    int sfb_id = (int)(idesc >> 4 & 3), sfa_id = (int)(idesc >> 29 & 3), ue8m0 = (int)(idesc >> 23 & 1);
    int nn = (int)(idesc >> 17 & 63) * 8, mm = (int)(idesc >> 27 & 3) * 128, nsf = nv ? 4 : 2, block = 64 / nsf;
    CHECK((idesc & 0xF) == 0 && (idesc >> 6 & 1) == 0 && (idesc >> 7 & 7) == 1 && (idesc >> 10 & 3) == 1 &&
              (idesc >> 12 & 0x1F) == 0 && (idesc >> 24 & 7) == 0 && idesc >> 31 == 0 && ue8m0 == !nv &&
              (nv ? sfa_id == 0 && sfb_id == 0 : sfa_id % 2 == 0 && sfb_id % 2 == 0),
          "tcgen05.mma kind::%s instruction descriptor 0x%08x is not valid or not modelled (dense, e2m1 x e2m1, "
          "K-major, K = 64, %s scales, scale-factor ids %s)", in->type, idesc, nv ? "ue4m3" : "ue8m0",
          nv ? "0" : "0 or 2");
    CHECK(mm == TC_LANES && nn >= 16 && nn <= 256 && nn % 16 == 0, "tcgen05.mma M=%d N=%d is not modelled", mm, nn);
    int col = (int)(taddr & 0xFFFF);
    CHECK(e->tmem_cols && taddr >> 16 == 0 && col >= e->tmem_base && col + nn <= e->tmem_base + e->tmem_cols,
          "tcgen05.mma D at 0x%x (+%d columns) outside the allocated columns", taddr, nn);
    uint32_t sfa = (uint32_t)val(th, &o[4]), sfb = (uint32_t)val(th, &o[5]);
    CHECK(sfa >> 16 == 0 && sfb >> 16 == 0, "tcgen05.mma scale factors must start at lane 0");
    tc_open(e);
    int acc = val(th, &o[6]) != 0;
    static double a[TC_LANES][64], b[256][64], sa[TC_LANES][4], sb[256][4];
    for (int side = 0; side < 2; side++)
        for (int r = 0; r < (side ? nn : mm); r++) {
            for (int k = 0; k < 64; k++) {
                uint64_t at = tc_smem_addr(side ? bd : ad, r, k / 2);
                uint8_t byte = *shared_at(e, at, 1);
                (side ? b : a)[r][k] = wb_type_decode(e2m1, (uint32_t)(byte >> (4 * (k % 2))) & 15);
                tc_read(e, at, 1);
            }
            uint32_t w = tc_sf_word(e, (int)((side ? sfb : sfa) & 0xFFFF), r);
            for (int j = 0; j < nsf; j++)
                (side ? sb : sa)[r][j] = mma_scale(ue8m0, w >> (8 * ((side ? sfb_id : sfa_id) + j)) & 0xFF);
        }
    for (int m = 0; m < mm; m++)
        for (int n = 0; n < nn; n++) {
            double sum = 0;
            for (int k = 0; k < 64; k++)
                sum += a[m][k] * sa[m][k / block] * b[n][k] * sb[n][k / block];
            int at = m * TC_COLS + col + n;
            CHECK(acc || !e->tc_unread[at], "tcgen05.mma overwrites lane %d column %d, whose product no thread has "
                  "read", m, col + n);
            e->tc_unread[at] = 1;
            e->tc_cp[at] = 0;
            e->tc_wrote[col + n] = e->ntc_recs;
            float prev;
            memcpy(&prev, &e->tmem[at], 4);
            float v = (float)((acc ? (double)prev : 0.0) + sum);
            memcpy(&e->tmem[at], &v, 4);
        }
}

/* tcgen05.ld.sync.aligned.32x32b.x8.b32 by one thread: lane (its warp's quarter of the 128: 32 (warp %
 * 4) + lane), 8 columns from the address's. Every MMA must be complete and seen by this thread. */
static void run_tc_ld(emu *e, thread *th, int i, const wb_insn *in)
{
    const wb_opnd *o = in->o;
    uint32_t taddr = (uint32_t)val(th, &o[8]);
    int lane = (int)(taddr >> 16), col = (int)(taddr & 0xFFFF), q = (i / 32) % 4;
    CHECK(lane == 32 * q, "thread %d: tcgen05.ld 32x32b at lane %d; its warp reaches lanes %d..%d only", i, lane,
          32 * q, 32 * q + 31);
    CHECK(e->tmem_cols && col >= e->tmem_base && col + 8 <= e->tmem_base + e->tmem_cols,
          "tcgen05.ld of columns %d..%d outside the allocation", col, col + 7);
    for (int j = 0; j < 8; j++) {
        CHECK(th->seen_rec >= e->tc_wrote[col + j], "thread %d reads tensor memory column %d before the MMAs of "
              "commit %d, which write it, are complete (waited for)", i, col + j, e->tc_wrote[col + j] - 1);
        th->r[o[j].v] = e->tmem[(lane + i % 32) * TC_COLS + col + j];
        e->tc_unread[(lane + i % 32) * TC_COLS + col + j] = 0;
    }
}

/* tcgen05.alloc / dealloc / relinquish_alloc_permit (warp-wide, .sync.aligned). alloc: a power of two
 * from 32 to 512 columns, once; its address (lane 0, the first column) goes to shared memory. The model
 * hands out columns from 256 down when it can, so that a kernel assuming column 0 fails; the columns
 * start as NaN, so that an MMA that should not accumulate, or a read of a column no MMA wrote, fails. */
static void run_tc_alloc(emu *e, int base, const wb_insn *in, uint64_t *r[32])
{
    const wb_opnd *o = in->o;
    CHECK(base == 0, "tcgen05 allocation by warp %d (warp 0 owns it)", base / 32);
    if (in->op == WB_OP_TC_RELINQUISH)
        return;
    int cols = (int)lane_val(r[0], &o[1]);
    if (in->op == WB_OP_TC_DEALLOC) {
        CHECK(e->tmem_cols == cols && (int)(lane_val(r[0], &o[0]) & 0xFFFF) == e->tmem_base &&
                  lane_val(r[0], &o[0]) >> 16 == 0, "tcgen05.dealloc of %d columns at 0x%x: not the allocation",
              cols, (unsigned)lane_val(r[0], &o[0]));
        for (int l = 0; l < TC_LANES; l++) /* every product the MMAs left was read */
            for (int c = 0; c < cols; c++)
                CHECK(!e->tc_unread[l * TC_COLS + e->tmem_base + c],
                      "tcgen05.dealloc: lane %d column %d holds a product no thread read", l, e->tmem_base + c);
        e->tmem_cols = 0;
        return;
    }
    CHECK(!e->tmem_cols && cols >= 32 && cols <= TC_COLS && !(cols & (cols - 1)),
          "tcgen05.alloc of %d columns (a power of two from 32 to 512, once)", cols);
    e->tmem_cols = cols;
    e->tmem_base = cols <= 256 ? 256 : 0;
    for (int l = 0; l < TC_LANES; l++)
        for (int c = 0; c < cols; c++) {
            e->tmem[l * TC_COLS + e->tmem_base + c] = 0x7FC00000u ^ (uint32_t)(l * 7919 + c); /* NaN, and no s32 sum */
            e->tc_unread[l * TC_COLS + e->tmem_base + c] = 0;
            e->tc_cp[l * TC_COLS + e->tmem_base + c] = 0;
        }
    for (int c = 0; c < cols; c++)
        e->tc_wrote[e->tmem_base + c] = e->tc_sf_read[e->tmem_base + c] = 0;
    uint32_t at = (uint32_t)e->tmem_base;
    memcpy(shared_at(e, lane_val(r[0], &o[0]), 4), &at, 4);
}

/* A remote access (what: a multicast write, an mbarrier arrival) by thread s->cur of block s into block
 * d of its cluster: d must not have ended, since nothing would then keep its shared memory (the next
 * block on the SM may own it). A cluster kernel holds a cluster barrier before its end for that. */
static void check_alive(const emu *d, const emu *s, const char *what)
{
    CHECK(!d->ended, "%s (insn %d): %s into CTA %d, whose threads have all ended (a block must stay alive, held "
          "by a cluster barrier before its end, while a peer may still write its shared memory or arrive on its "
          "mbarriers)", who(s, s->cur).s, s->t[s->cur].pc, what, d->rank);
}

/* The block and shared offset (*off) a shared::cluster address names for thread e->cur: one from mapa
 * (CLUSTER_ADDR), or a plain shared::cta offset, which means the thread's own block. */
static emu *cluster_target(emu *e, uint64_t addr, uint64_t *off)
{
    *off = addr & ((1u << CLUSTER_OFF_BITS) - 1);
    if (addr >> CLUSTER_OFF_BITS == 0)
        return e;
    uint64_t r = (addr >> CLUSTER_OFF_BITS) - 1;
    CHECK(r < (uint64_t)e->csize, "%s (insn %d): shared::cluster address %#llx names rank %llu, outside the "
          "cluster of %d", who(e, e->cur).s, e->t[e->cur].pc, (unsigned long long)addr, (unsigned long long)r,
          e->csize);
    return cta_of(e, (int)r);
}

/* mapa.shared::cluster.u32 d, a, rank by thread e->cur: the shared::cluster address of shared offset a
 * in the block of that rank (CLUSTER_ADDR). */
static uint64_t mapa(emu *e, uint64_t a, uint64_t rank)
{
    CHECK(a >> CLUSTER_OFF_BITS == 0, "%s (insn %d): mapa of %#llx, not a shared::cta offset (below 2^%d)",
          who(e, e->cur).s, e->t[e->cur].pc, (unsigned long long)a, CLUSTER_OFF_BITS);
    CHECK(rank < (uint64_t)e->csize, "%s (insn %d): mapa to rank %llu, outside the cluster of %d CTA%s",
          who(e, e->cur).s, e->t[e->cur].pc, (unsigned long long)rank, e->csize, e->csize > 1 ? "s" : "");
    return CLUSTER_ADDR(rank, a);
}

/* The shared offset of a multicast's operand (its destination or mbarrier), the same in every block it
 * names: a shared::cta offset, or a shared::cluster address of the issuing block itself. */
static uint64_t multicast_offset(emu *e, uint64_t addr)
{
    uint64_t off;
    CHECK(cluster_target(e, addr, &off) == e, "%s (insn %d): a multicast's address %#llx is a peer's; it must be "
          "an offset in the issuing CTA (the same in every destination)", who(e, e->cur).s, e->t[e->cur].pc,
          (unsigned long long)addr);
    return off;
}

/* Every thread of e's cluster (e alone without one) that has not ended has arrived at barrier.cluster
 * at least n times: ended threads count as arrived (the PTX ISA: an exiting thread releases the
 * barriers it would hold up). */
static int cluster_arrived(emu *e, int n)
{
    for (int r = 0; r < e->csize; r++) {
        const emu *x = cta_of(e, r);
        for (int t = 0; t < x->nthreads; t++)
            if (x->t[t].state != DONE && x->t[t].carrive < n)
                return 0;
    }
    return 1;
}

/* The box of a TMA load by thread e->cur from the case's tensor map, as the 128B swizzle lays it out
 * from a 1024-aligned destination: box row r is matrix row c1 + r, its 16-byte chunk j the elements c0
 * + j (16 / elem)..; the chunk lands 128 r + 16 (j ^ (r % 8)) on; elements past the matrix (rows past
 * M, columns past K) as zeros. Each element read obeys global_at (inside the buffer; after
 * griddepcontrol.wait for the activations). Into a static buffer, which the next load reuses. */
static const uint8_t *tma_read_box(emu *e, int64_t c0, int64_t c1)
{
    static uint8_t box[256 * 128];
    const fake_tmap *tm = e->tmap;
    int per = 16 / tm->elem;
    CHECK(tm->box_rows <= 256, "a TMA box of %d rows (256 at most)", tm->box_rows);
    for (int r = 0; r < tm->box_rows; r++)
        for (int j = 0; j < 8; j++) {
            uint8_t *chunk = box + 128 * r + 16 * (j ^ (r & 7));
            memset(chunk, 0, 16);
            for (int q = 0; q < per; q++) {
                int64_t row = c1 + r, col = c0 + j * per + q;
                if (row >= 0 && row < tm->rows && col >= 0 && col < tm->cols)
                    memcpy(chunk + q * tm->elem,
                           global_at(e, tm->base + (uint64_t)(row * tm->cols + col) * (uint64_t)tm->elem, tm->elem, 0),
                           (size_t)tm->elem);
            }
        }
    return box;
}

/* A TMA box (issued by thread s->cur) lands in block d at shared dst, its bytes completing on d's
 * mbarrier mb (an async write: d's readers checked against the issuing thread). */
static void tma_land(emu *d, emu *s, uint64_t dst, const uint8_t *box, int bytes, mbar *mb)
{
    async_write(d, s, dst, bytes, mb);
    memcpy(d->smem + dst, box, (size_t)bytes);
    mbar_complete_tx(s, d, mb, bytes);
}

/* cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [map, {c0,
 * c1}], [mbar] by thread e->cur, with the case's tensor map (tma_read_box: the 128-byte swizzle, whose
 * atom of 8 rows needs dst 1024-aligned); the whole box's bytes complete on the mbarrier. With
 * .multicast::cluster and a 16-bit ctaMask (WB_OP_TMA_LOAD_2D_MC): the box lands at the same offset dst
 * in every block of the cluster whose rank's bit is set, its bytes completing on the mbarrier at the same
 * offset in each; each must be initialized there (mbar_in: a peer's init must be ordered before, by a
 * cluster barrier) and the block alive (check_alive), the mask name at least one block and none outside
 * the cluster. */
static void run_tma_load(emu *e, thread *th, const wb_insn *in)
{
    const wb_opnd *o = in->o;
    const fake_tmap *tm = e->tmap;
    int mc = in->op == WB_OP_TMA_LOAD_2D_MC;
    CHECK(tm, "%s (insn %d): a TMA load, but the case has no tensor map", who(e, e->cur).s, th->pc);
    CHECK(val(th, &o[1]) == TMAP_ADDR, "%s (insn %d): the TMA load's map operand %#llx is not the generic "
          "address of p_tmap", who(e, e->cur).s, th->pc, (unsigned long long)val(th, &o[1]));
    uint64_t dst = mc ? multicast_offset(e, val(th, &o[0])) : val(th, &o[0]);
    uint64_t at = mc ? multicast_offset(e, val(th, &o[4])) : val(th, &o[4]);
    int64_t c0 = (int32_t)(uint32_t)val(th, &o[2]), c1 = (int32_t)(uint32_t)val(th, &o[3]);
    int bytes = tm->box_rows * 128;
    CHECK(dst % 1024 == 0 && dst + (uint64_t)bytes <= (uint64_t)e->smem_bytes, "%s (insn %d): TMA box of %d "
          "bytes at shared %llu: not 1024-aligned (128B swizzle atom) or past %d bytes", who(e, e->cur).s, th->pc,
          bytes, (unsigned long long)dst, e->smem_bytes);
    if (!mc) {
        mbar *mb = mbar_at(e, at);
        tma_land(e, e, dst, tma_read_box(e, c0, c1), bytes, mb);
        return;
    }
    uint64_t mask = val(th, &o[5]);
    CHECK(mask && mask >> e->csize == 0, "%s (insn %d): multicast ctaMask %#llx names %s", who(e, e->cur).s, th->pc,
          (unsigned long long)mask, mask ? "a rank outside the cluster" : "no CTA");
    const uint8_t *box = tma_read_box(e, c0, c1);
    for (int r = 0; r < e->csize; r++) {
        if (!(mask >> r & 1))
            continue;
        emu *d = cta_of(e, r);
        check_alive(d, e, "a multicast write");
        mbar *mb = mbar_in(d, e, at);
        tma_land(d, e, dst, box, bytes, mb);
    }
}

/* cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar] by thread
 * e->cur: size a positive multiple of 16, both addresses 16-aligned, the source inside one buffer
 * (global_span: after griddepcontrol.wait for the activations), the destination inside shared memory;
 * its bytes complete on the mbarrier. */
static void run_bulk_copy(emu *e, thread *th, const wb_insn *in)
{
    const wb_opnd *o = in->o;
    uint64_t dst = val(th, &o[0]), src = val(th, &o[1]);
    int64_t size = (int64_t)val(th, &o[2]);
    CHECK(size > 0 && size % 16 == 0 && dst % 16 == 0 && dst + (uint64_t)size <= (uint64_t)e->smem_bytes,
          "thread %d (insn %d): cp.async.bulk of %lld bytes to shared %llu (a positive multiple of 16, 16-aligned, "
          "inside the %d bytes)", e->cur, th->pc, (long long)size, (unsigned long long)dst, e->smem_bytes);
    const uint8_t *p = global_span(e, src, size, 16, 0);
    mbar *mb = mbar_at(e, val(th, &o[3]));
    async_write(e, e, dst, (int)size, mb);
    memcpy(e->smem + dst, p, (size_t)size);
    mbar_complete_tx(e, e, mb, size);
}

/* mov of a symbol: only the tensor map parameter's address is modelled (TMAP_ADDR). */
static uint64_t symbol(const emu *e, const char *name)
{
    CHECK(!strcmp(name, "p_tmap"), "thread %d: mov of the symbol %s is not modelled", e->cur, name);
    return TMAP_ADDR;
}

static void run_thread(emu *e, int i)
{
    thread *th = &e->t[i];
    e->cur = i;
    while (th->state == RUN) {
        const wb_insn *in = &e->f->insns[th->pc];
        const wb_opnd *o = in->o;
        e->progress++;
        if (in->guard >= 0 && (th->r[in->guard] != 0) == (in->guard_neg != 0)) {
            th->pc++;
            continue;
        }
        if (is_collective(in->op)) {
            th->state = AT_WARP;
            return;
        }
        check_busy(e, th, in);
        uint64_t *d = o[0].kind == WB_O_REG ? &th->r[o[0].v] : NULL;
        int next = th->pc + 1;
        switch (in->op) {
        case WB_OP_MOV: *d = o[1].kind == WB_O_TEXT ? symbol(e, o[1].text) : val(th, &o[1]); break;
        case WB_OP_CVTA_PARAM: *d = val(th, &o[1]); break; /* the param space's address, generic: the same */
        case WB_OP_ADD: case WB_OP_SUB: case WB_OP_MUL_LO: case WB_OP_MUL_WIDE: case WB_OP_REM:
        case WB_OP_SHL: case WB_OP_SHR: case WB_OP_OR: case WB_OP_XOR:
            *d = alu(in->op, in->type, val(th, &o[1]), val(th, &o[2]), 0);
            break;
        case WB_OP_AND:
            *d = strcmp(in->type, "pred") == 0 ? (val(th, &o[1]) && val(th, &o[2]))
                                               : alu(in->op, in->type, val(th, &o[1]), val(th, &o[2]), 0);
            break;
        case WB_OP_MAD_LO: *d = alu(in->op, in->type, val(th, &o[1]), val(th, &o[2]), val(th, &o[3])); break;
        case WB_OP_LOP3: *d = lop3(val(th, &o[1]), val(th, &o[2]), val(th, &o[3]), val(th, &o[4])); break;
        case WB_OP_PRMT: *d = prmt(val(th, &o[1]), val(th, &o[2]), val(th, &o[3])); break;
        case WB_OP_SETP_LT: case WB_OP_SETP_GE: case WB_OP_SETP_NE: case WB_OP_SETP_EQ:
            *d = (uint64_t)compare(in->op, in->type, val(th, &o[1]), val(th, &o[2]));
            break;
        case WB_OP_SELP: *d = th->r[o[3].v] ? val(th, &o[1]) : val(th, &o[2]); break;
        case WB_OP_CVT:
            CHECK(strcmp(in->type, "rn.f16x2.e2m1x2") || (o[1].kind == WB_O_REG && e->f->reg_class[o[1].v] == WB_RC_B8),
                  "the e2m1x2 source must be a .b8 register");
            *d = cvt(in->type, val(th, &o[1]));
            break;
        case WB_OP_UNPACK_B8X4: { /* mov.b32 {d0, d1, d2, d3}, s: byte j of s to dj */
            uint64_t src = val(th, &o[4]);
            for (int j = 0; j < 4; j++) {
                CHECK(o[j].kind == WB_O_REG && e->f->reg_class[o[j].v] == WB_RC_B8, "unpacking into a .b8 register");
                th->r[o[j].v] = src >> (8 * j) & 0xFF;
            }
            break;
        }
        case WB_OP_ABS: case WB_OP_NEG: /* f32 or f64: the sign bit */
            if (!strcmp(in->type, "f64")) {
                uint64_t sgn = 1ull << 63;
                *d = in->op == WB_OP_ABS ? val(th, &o[1]) & ~sgn : val(th, &o[1]) ^ sgn;
                break;
            }
            CHECK(!strcmp(in->type, "f32"), "%s.%s is not modelled", in->op == WB_OP_ABS ? "abs" : "neg", in->type);
            *d = in->op == WB_OP_ABS ? val(th, &o[1]) & 0x7FFFFFFFu : (val(th, &o[1]) ^ 0x80000000u) & 0xFFFFFFFFu;
            break;
        case WB_OP_MIN: case WB_OP_MAX:
            *d = min_max(in, val(th, &o[1]), val(th, &o[2]));
            break;
        case WB_OP_DIV:
            *d = divide(in->type, val(th, &o[1]), val(th, &o[2]));
            break;
        case WB_OP_CVT_F8X2: { /* cvt.rn.satfinite.{e4m3,e5m2}x2.f32 d, a, b: a to the upper byte */
            CHECK(!strcmp(in->type, "e4m3x2.f32") || !strcmp(in->type, "e5m2x2.f32"), "cvt %s is not modelled", in->type);
            wb_type t = fp8_type(in->type[1] == '4' ? "e4m3.e4m3" : "e5m2.e5m2", 0);
            *d = wb_type_encode(t, (double)as_f32(val(th, &o[2]))) | wb_type_encode(t, (double)as_f32(val(th, &o[1]))) << 8;
            break;
        }
        case WB_OP_UNPACK_B16X2: /* mov.b32 {lo, hi}, s */
            th->r[o[0].v] = val(th, &o[2]) & 0xFFFF;
            th->r[o[1].v] = val(th, &o[2]) >> 16 & 0xFFFF;
            break;
        case WB_OP_PACK_B16X2: *d = (val(th, &o[1]) & 0xFFFF) | (val(th, &o[2]) & 0xFFFF) << 16; break;
        case WB_OP_MUL_F32: *d = from_f32(as_f32(val(th, &o[1])) * as_f32(val(th, &o[2]))); break;
        case WB_OP_MUL_F64: {
            double x, y, z;
            uint64_t a = val(th, &o[1]), b = val(th, &o[2]);
            memcpy(&x, &a, 8);
            memcpy(&y, &b, 8);
            z = x * y;
            memcpy(d, &z, 8);
            break;
        }
        case WB_OP_ADD_F32: *d = from_f32(as_f32(val(th, &o[1])) + as_f32(val(th, &o[2]))); break;
        case WB_OP_FMA_X2:
            if (strcmp(in->type, "f16x2") == 0 || strcmp(in->type, "bf16x2") == 0) {
                *d = fma_x2(in->type[0] == 'b', (uint32_t)val(th, &o[1]), (uint32_t)val(th, &o[2]),
                            (uint32_t)val(th, &o[3]));
                break;
            }
            CHECK(strcmp(in->type, "f32") == 0, "fma.rn.%s is not modelled", in->type);
            *d = from_f32(fmaf(as_f32(val(th, &o[1])), as_f32(val(th, &o[2])), as_f32(val(th, &o[3]))));
            break;
        case WB_OP_LD_PARAM: {
            int p = 0;
            while (p < NPARAMS && strcmp(param_names[p], o[1].text) != 0)
                p++;
            CHECK(p < NPARAMS, "no parameter %s", o[1].text);
            *d = e->params[p];
            break;
        }
        case WB_OP_SPECIAL: {
            static const char *const names[] = {"%tid.x", "%ctaid.x", "%ctaid.y", "%nctaid.x", "%nctaid.y",
                                                "%cluster_ctarank", "%cluster_nctarank"};
            const uint64_t vals[] = {(uint64_t)i, e->ctaid[0], e->ctaid[1], e->nctaid[0], e->nctaid[1],
                                     (uint64_t)e->rank, (uint64_t)e->csize};
            int r = 0;
            while (r < 7 && strcmp(o[1].text, names[r]) != 0)
                r++;
            CHECK(r < 7, "special register %s", o[1].text);
            *d = vals[r];
            break;
        }
        case WB_OP_SMEM_BASE: *d = 0; break;
        case WB_OP_CVTA_GLOBAL: *d = val(th, &o[1]); break;
        case WB_OP_LD_GLOBAL: load(e, in->type, d, val(th, &o[1]), 0); break;
        case WB_OP_LD_SHARED: load(e, in->type, d, val(th, &o[1]), 1); break;
        case WB_OP_ST_GLOBAL: store(e, in->type, val(th, &o[0]), val(th, &o[1]), 0); break;
        case WB_OP_ST_SHARED: store(e, in->type, val(th, &o[0]), val(th, &o[1]), 1); break;
        case WB_OP_LD_GLOBAL_V4: case WB_OP_LD_SHARED_V4: case WB_OP_LD_SHARED_V2: {
            int n = in->op == WB_OP_LD_SHARED_V2 ? 2 : 4;
            if (in->op == WB_OP_LD_GLOBAL_V4) /* the whole vector: aligned, inside a buffer */
                global_at(e, val(th, &o[n]), 16, 0);
            else
                shared_at(e, val(th, &o[n]), 4 * n);
            for (int j = 0; j < n; j++)
                load(e, "u32", &th->r[o[j].v], val(th, &o[n]) + 4 * (uint64_t)j, in->op != WB_OP_LD_GLOBAL_V4);
            break;
        }
        case WB_OP_ST_SHARED_V4:
            shared_at(e, val(th, &o[0]), 16);
            for (int j = 0; j < 4; j++)
                store(e, "u32", val(th, &o[0]) + 4 * (uint64_t)j, val(th, &o[1 + j]), 1);
            break;
        case WB_OP_CP_ASYNC:
            memcpy(shared_at(e, val(th, &o[0]), 16), global_at(e, val(th, &o[1]), 16, 0), 16);
            shared_write(e, val(th, &o[0]), 16);
            break;
        case WB_OP_BAR_SYNC: note_release(e, i, e->rank, REL_BAR, e->bar_gen + 1), th->state = AT_BAR; return;
        case WB_OP_BRA: next = jump(e, o[0].text); break;
        case WB_OP_BRA_IF: if (th->r[o[0].v]) next = jump(e, o[1].text); break;
        case WB_OP_BRA_IFNOT: if (!th->r[o[0].v]) next = jump(e, o[1].text); break;
        case WB_OP_RET: th->state = DONE; return;
        case WB_OP_PACK_B64: *d = (val(th, &o[1]) & 0xffffffffull) | val(th, &o[2]) << 32; break;
        case WB_OP_GRIDDEP_WAIT: th->waited = 1; break;
        case WB_OP_GRIDDEP_LAUNCH: th->launched++; break;
        case WB_OP_CP_ASYNC_COMMIT: case WB_OP_CP_ASYNC_WAIT:
        case WB_OP_FENCE_PROXY_ASYNC: e->fences[i]++; break;
        case WB_OP_WGMMA_COMMIT: /* .sync.aligned: the warp's lanes commit together, so the first one does */
            if (++th->commits > e->flight[i / 32].groups)
                e->flight[i / 32].groups = th->commits;
            break;
        case WB_OP_WGMMA_WAIT: /* likewise: the first lane ends them */
            wgmma_retire(e, i / 32, (int)val(th, &o[0]), th->pc);
            break;
        case WB_OP_MBAR_INIT: {
            uint64_t at = val(th, &o[0]);
            shared_at(e, at, 8);
            for (int j = 0; j < e->nmbars; j++)
                CHECK(e->mbars[j].addr != at, "mbarrier at %llu initialized twice", (unsigned long long)at);
            CHECK(e->nmbars < MAX_MBARS && val(th, &o[1]) > 0, "mbarrier.init: too many, or count 0");
            e->mbars[e->nmbars++] = (mbar){at, (int)val(th, &o[1]), (int)val(th, &o[1]), 0, 0, 0};
            break;
        }
        case WB_OP_MBAR_ARRIVE: case WB_OP_MBAR_EXPECT_TX: {
            mbar *mb = mbar_at(e, val(th, &o[0]));
            /* after a bar.warp.sync, one lane's arrival orders its warp's earlier reads too */
            warp_release(e, i, e->rank, (int)(mb - e->mbars), mb->phase + 1);
            mbar_arrive(e, e, mb, in->op == WB_OP_MBAR_ARRIVE ? 0 : (int64_t)val(th, &o[1]));
            break;
        }
        case WB_OP_MBAR_ARRIVE_REMOTE: { /* one arrival, no bytes, on the mbarrier of the block its address names */
            uint64_t at;
            emu *dst = cluster_target(e, val(th, &o[0]), &at);
            if (dst != e)
                check_alive(dst, e, "an mbarrier arrival");
            mbar *mb = mbar_in(dst, e, at);
            warp_release(e, i, dst->rank, (int)(mb - dst->mbars), mb->phase + 1);
            mbar_arrive(e, dst, mb, 0);
            break;
        }
        case WB_OP_MAPA: *d = mapa(e, val(th, &o[1]), val(th, &o[2])); break;
        case WB_OP_CLUSTER_ARRIVE: /* a release to every thread of the cluster that waits past it */
            CHECK(th->carrive == th->cwait, "%s (insn %d): barrier.cluster.arrive twice with no wait between",
                  who(e, i).s, th->pc);
            th->carrive++;
            note_release(e, i, e->rank, REL_CLUSTER, th->carrive);
            break;
        case WB_OP_CLUSTER_WAIT: /* until every live thread of the cluster has arrived as often: a spin */
            CHECK(th->carrive > th->cwait, "%s (insn %d): barrier.cluster.wait with no barrier.cluster.arrive before "
                  "it", who(e, i).s, th->pc);
            if (!cluster_arrived(e, th->carrive)) {
                e->progress--;
                th->state = SPIN;
                return;
            }
            th->cwait = th->carrive;
            break;
        case WB_OP_TMA_LOAD_2D: case WB_OP_TMA_LOAD_2D_MC: run_tma_load(e, th, in); break;
        case WB_OP_BULK_COPY: run_bulk_copy(e, th, in); break;
        case WB_OP_MBAR_TRY_WAIT: { /* the phase of parity P is complete once the phase count's parity is not P */
            mbar *mb = mbar_at(e, val(th, &o[1]));
            if ((mb->phase & 1) == (int)(val(th, &o[2]) & 1)) {
                e->progress--;
                th->state = SPIN;
                return;
            }
            int idx = (int)(mb - e->mbars);
            CHECK(mb->phase - th->seen[idx] <= 1, "thread %d waited on mbarrier %d after two phases completed: the "
                                                  "parity cannot tell them apart", i, idx);
            th->seen[idx] = mb->phase;
            for (int r = e->ntc_recs; r > th->seen_rec; r--)
                if (!e->tc_recs[r - 1].open && e->tc_recs[r - 1].mbar == idx && e->tc_recs[r - 1].phase <= mb->phase) {
                    th->seen_rec = r;
                    break;
                }
            *d = 1;
            break;
        }
        case WB_OP_TC_MMA: run_tc_mma(e, th, in); break;
        case WB_OP_TC_MMA_BS: run_tc_mma_bs(e, th, in); break;
        case WB_OP_TC_CP: run_tc_cp(e, th, in); break;
        case WB_OP_TC_COMMIT: { /* the MMAs since the last commit (complete at issue here) arrive once */
            mbar *mb = mbar_at(e, val(th, &o[0]));
            CHECK(i == 0, "tcgen05.commit by thread %d: the MMAs are issued by thread 0", i);
            CHECK(e->ntc_recs && e->tc_recs[e->ntc_recs - 1].open, "tcgen05.commit with no MMA since the last");
            int before = mb->phase;
            note_release(e, i, e->rank, (int)(mb - e->mbars), mb->phase + 1);
            mbar_arrive(e, e, mb, 0);
            tc_rec *rec = &e->tc_recs[e->ntc_recs - 1];
            rec->open = 0, rec->mbar = (int)(mb - e->mbars), rec->phase = mb->phase;
            CHECK(mb->phase == before + 1, "tcgen05.commit's arrival did not complete the mbarrier's phase");
            break;
        }
        case WB_OP_TC_LD_X8: run_tc_ld(e, th, i, in); break;
        case WB_OP_WGMMA_FENCE: case WB_OP_FENCE_MBAR_INIT: case WB_OP_TC_FENCE_BEFORE: case WB_OP_TC_FENCE_AFTER:
        case WB_OP_TC_WAIT_LD:
        case WB_OP_LABEL: case WB_OP_COMMENT: break;
        default: ck_abort_msg("instruction op %d is not modelled", (int)in->op);
        }
        th->pc = next;
    }
}

static int8_t byte_of(uint64_t word, int b) { return (int8_t)(uint8_t)(word >> (8 * b)); }
/* Code i of a register of packed s4 codes (nibble i, two's complement). */
static int nibble_of(uint64_t word, int i) { return (int)((word >> (4 * i)) & 15) - (int)((word >> (4 * i + 3)) & 1) * 16; }

/* The fp8 type of a code operand from the MMA's type suffix "<A type>.<B type>". */
static wb_type fp8_type(const char *types, int which)
{
    char name[8] = {0};
    const char *p = which ? strchr(types, '.') + 1 : types;
    memcpy(name, p, 4);
    wb_type t;
    CHECK(wb_type_parse(name, &t) == WB_OK && t.bits == 8, "mma type %s", types);
    return t;
}

/* mma.sync m16n8k32 fp8 -> f32 over lanes r[0..31]: the fragments of the s8 m16n8k32 with fp8 codes;
 * each output is c plus the exact sum of its 32 products, rounded once to f32 (see the head comment). */
static void run_mma_fp8(const wb_insn *in, uint64_t *r[32])
{
    const wb_opnd *o = in->o;
    wb_type ta = fp8_type(in->type, 0), tb = fp8_type(in->type, 1);
    double a[16][32], b[32][8], c[16][8];
    for (int l = 0; l < 32; l++) {
        int gid = l / 4, tig = l % 4;
        for (int q = 0; q < 4; q++) {
            for (int reg = 0; reg < 4; reg++)
                a[gid + 8 * (reg & 1)][(reg >> 1) * 16 + tig * 4 + q] =
                    wb_type_decode(ta, (uint8_t)byte_of(r[l][o[4 + reg].v], q));
            b[tig * 4 + q][gid] = wb_type_decode(tb, (uint8_t)byte_of(r[l][o[8].v], q));
            b[16 + tig * 4 + q][gid] = wb_type_decode(tb, (uint8_t)byte_of(r[l][o[9].v], q));
        }
        for (int i = 0; i < 4; i++)
            c[gid + 8 * (i >> 1)][tig * 2 + (i & 1)] = (double)as_f32(r[l][o[10 + i].v]);
    }
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 8; n++) {
            double s = 0; /* products of two fp8 values are exact in double; so is a sum of 32 of them
                           * unless it spans more than 53 bits, far below the f32 rounding that follows */
            for (int k = 0; k < 32; k++)
                s += a[m][k] * b[k][n];
            c[m][n] = (double)(float)(c[m][n] + s);
        }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++)
            r[l][o[i].v] = from_f32((float)c[l / 4 + 8 * (i >> 1)][(l % 4) * 2 + (i & 1)]);
}

/* mma.sync m16n8k16 / m16n8k8 .row.col.f32.T.T.f32 (T = f16 or bf16) over lanes r[0..31], the PTX ISA
 * fragments: A (16 x 16) a0 = {A[gid][2 tig], A[gid][2 tig + 1]} (low half first), a1 the same at row
 * gid + 8, a2 and a3 those at column + 8; B (16 x 8) b0 = {B[2 tig][gid], B[2 tig + 1][gid]}, b1 at
 * row + 8; C/D as m16n8k32's. m16n8k8: a0, a1 and b0 alone (k 0..7). Each output is c plus the exact
 * sum of its 16 (8) products, rounded once to f32 (head comment). */
static void run_mma_f16(const wb_insn *in, uint64_t *r[32])
{
    const wb_opnd *o = in->o;
    CHECK(in->type && (!strcmp(in->type, "f16") || !strcmp(in->type, "bf16")), "mma .%s is not modelled",
          in->type ? in->type : "?");
    int bf = in->type[0] == 'b', k16 = in->op == WB_OP_MMA_K16, na = k16 ? 4 : 2, nb = k16 ? 2 : 1;
    int kk = k16 ? 16 : 8, c0 = 4 + na + nb;
    double a[16][16], b[16][8], c[16][8];
    for (int l = 0; l < 32; l++) {
        int gid = l / 4, tig = l % 4;
        for (int reg = 0; reg < na; reg++) {
            uint32_t v = (uint32_t)r[l][o[4 + reg].v];
            int row = gid + 8 * (reg & 1), col = 8 * (reg >> 1) + 2 * tig;
            a[row][col] = half_to_double(bf, v & 0xFFFF);
            a[row][col + 1] = half_to_double(bf, v >> 16);
        }
        for (int reg = 0; reg < nb; reg++) {
            uint32_t v = (uint32_t)r[l][o[4 + na + reg].v];
            b[8 * reg + 2 * tig][gid] = half_to_double(bf, v & 0xFFFF);
            b[8 * reg + 2 * tig + 1][gid] = half_to_double(bf, v >> 16);
        }
        for (int i = 0; i < 4; i++)
            c[gid + 8 * (i >> 1)][tig * 2 + (i & 1)] = (double)as_f32(r[l][o[c0 + i].v]);
    }
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 8; n++) {
            double s = 0; /* the products of 16-bit values are exact in double, and so is their sum here */
            for (int k = 0; k < kk; k++)
                s += a[m][k] * b[k][n];
            c[m][n] = (double)(float)(c[m][n] + s);
        }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++)
            r[l][o[i].v] = from_f32((float)c[l / 4 + 8 * (i >> 1)][(l % 4) * 2 + (i & 1)]);
}

/* The shared address of byte `byte` (0..127) of token n's 128-byte row in the K-major tile a wgmma B
 * descriptor points at: start address bits 0..13 (<< 4), stride between 8-row groups bits 32..45 (<< 4),
 * base offset bits 49..51 zero, 128B swizzle (mode 1 in bits 62..63: the 16-byte chunk index, address
 * bits 4..6, XORed with the row within the 1024-byte atom, bits 7..9). The leading byte offset (bits
 * 16..29) is unused by a swizzled K-major tile. A step's bytes must lie inside the row its start
 * address points into. */
static uint64_t wgmma_b_addr(uint64_t desc, int n, int byte)
{
    CHECK(desc >> 62 == 1, "wgmma descriptor swizzle mode %d is not modelled", (int)(desc >> 62));
    CHECK((desc >> 49 & 7) == 0, "wgmma descriptor base offset %d is not modelled", (int)(desc >> 49 & 7));
    uint64_t start = (desc & 0x3FFF) << 4, sbo = ((desc >> 32) & 0x3FFF) << 4;
    CHECK(start % 128 + (uint64_t)byte < 128, "wgmma B step at row offset %d + byte %d leaves the 128-byte row",
          (int)(start % 128), byte);
    uint64_t lin = start + (uint64_t)(n / 8) * sbo + (uint64_t)(n % 8) * 128 + (uint64_t)byte;
    return lin ^ (((lin >> 7) & 7) << 4);
}

/* wgmma m64nNk32 with 8-bit A (WB_OP_WGMMA_S8, _F8) or m64nNk16 with f16 / bf16 A (WB_OP_WGMMA), A in
 * registers, one warp's 16 rows of it (rows depend on this warp's A fragment and write only its D
 * fragment, so a warp is modelled on its own, run when it arrives; the group is complete at once): A
 * as m16n8k32's A (8-bit) or m16n8k16's (16-bit: a0 = row gid, k 2 tig, 2 tig + 1, low half first, a1
 * row gid + 8, a2 / a3 those at k + 8), B from shared memory through the descriptor (k32 of 8-bit
 * codes or k16 of 16-bit values: 32 bytes of each token's swizzled row), D as m16n8's repeated along N
 * (N / 8 blocks of 4 registers). scale-d false: D = A x B. s8: exact s32, wrapping; fp8, f16, bf16:
 * each output plus the exact sum of its 32 / 16 products, rounded once to f32, as for mma.sync (head
 * comment). */

static void run_wgmma(emu *e, int warp, const wb_insn *in, uint64_t *r[32])
{
    const wb_opnd *o = in->o;
    int fp8 = in->op == WB_OP_WGMMA_F8, h16 = in->op == WB_OP_WGMMA, nn = 2 * (int)o[0].v, kk = h16 ? 16 : 32;
    int bf = 0, tn = 0, tk = 0;
    CHECK(in->type && sscanf(in->type, "m64n%dk%d.", &tn, &tk) == 2 && tn == nn && tk == kk && nn % 8 == 0 &&
              nn >= 8 && nn <= 256 && o[0].kind == WB_O_LIST && o[1].kind == WB_O_LIST && o[1].v == 4,
          "wgmma .%s with %d accumulators is not modelled", in->type ? in->type : "?", (int)o[0].v);
    wb_type ta = {0}, tb = {0};
    if (fp8)
        ta = fp8_type(strstr(in->type, ".f32.") + 5, 0), tb = fp8_type(strstr(in->type, ".f32.") + 5, 1);
    if (h16) {
        const char *t = strstr(in->type, ".f32.");
        CHECK(t && (!strcmp(t + 5, "f16.f16") || !strcmp(t + 5, "bf16.bf16")), "wgmma .%s is not modelled", in->type);
        bf = t[5] == 'b';
    }
    static double a[16][32], b[32][256], c[16][256];
    uint64_t desc = lane_val(r[0], &o[2]);
    int acc = lane_val(r[0], &o[3]) != 0;
    for (int l = 0; l < 32; l++) {
        int gid = l / 4, tig = l % 4;
        CHECK(lane_val(r[l], &o[2]) == desc && (lane_val(r[l], &o[3]) != 0) == acc,
              "the lanes of a warp disagree on a wgmma's descriptor or scale-d");
        for (int reg = 0; reg < 4; reg++) {
            uint64_t v = r[l][o[1].list[reg].id];
            if (h16) {
                int row = gid + 8 * (reg & 1), col = 8 * (reg >> 1) + 2 * tig;
                a[row][col] = half_to_double(bf, v & 0xFFFF);
                a[row][col + 1] = half_to_double(bf, v >> 16 & 0xFFFF);
                continue;
            }
            for (int q = 0; q < 4; q++) {
                uint8_t code = (uint8_t)byte_of(v, q);
                a[gid + 8 * (reg & 1)][(reg >> 1) * 16 + tig * 4 + q] = fp8 ? wb_type_decode(ta, code) : (int8_t)code;
            }
        }
        for (int j = 0; j < nn / 8; j++)
            for (int i = 0; i < 4; i++) {
                uint64_t v = r[l][o[0].list[j * 4 + i].id];
                c[gid + 8 * (i >> 1)][j * 8 + tig * 2 + (i & 1)] =
                    fp8 || h16 ? (double)as_f32(v) : (double)(int32_t)(uint32_t)v;
            }
    }
    for (int n = 0; n < nn; n++)
        for (int k = 0; k < kk; k++) {
            if (h16) {
                uint16_t v;
                uint64_t addr = wgmma_b_addr(desc, n, 2 * k);
                memcpy(&v, shared_at(e, addr, 2), 2);
                async_read(e, warp, addr, 2);
                b[k][n] = half_to_double(bf, v);
                continue;
            }
            uint64_t addr = wgmma_b_addr(desc, n, k);
            uint8_t code = *shared_at(e, addr, 1);
            async_read(e, warp, addr, 1);
            b[k][n] = fp8 ? wb_type_decode(tb, code) : (double)(int8_t)code;
        }
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < nn; n++) {
            double sum = 0; /* exact for s8 (below 2^53) and fp8 (as run_mma_fp8); for f16 / bf16 the products
                             * are exact, their sum within 2^-53 of the largest, far below the f32 rounding */
            for (int k = 0; k < kk; k++)
                sum += a[m][k] * b[k][n];
            double prev = acc ? c[m][n] : 0;
            c[m][n] = fp8 || h16 ? (double)(float)(prev + sum)
                                 : (double)(int32_t)(uint32_t)(uint64_t)(int64_t)(prev + sum);
        }
    for (int l = 0; l < 32; l++)
        for (int j = 0; j < nn / 8; j++)
            for (int i = 0; i < 4; i++) {
                double v = c[l / 4 + 8 * (i >> 1)][j * 8 + (l % 4) * 2 + (i & 1)];
                r[l][o[0].list[j * 4 + i].id] = fp8 || h16 ? from_f32((float)v) : (uint32_t)(int32_t)v;
            }
    /* its accumulators and A registers belong to the open group until a wait_group completes it */
    const wgmma_flight *fl = &e->flight[warp];
    for (int l = 0; l < 32; l++) {
        int *busy = e->t[32 * warp + l].busy;
        for (int j = 0; j < (int)o[0].v; j++)
            busy[o[0].list[j].id] = fl->groups + 1;
        for (int j = 0; j < 4; j++)
            busy[o[1].list[j].id] = fl->groups + 1;
    }
}

/* mma.sync s4 x s4 -> s32 (PTX ISA fragments): m16n8k64, A register j = row gid + 8 (j & 1), k 32 (j >> 1)
 * + 8 tig + i in nibble i, B register j = k 32 j + 8 tig + i, token gid; m8n8k32, A = row gid, k 8 tig
 * + i, B = k 8 tig + i. D as the s8 shapes. Exact, wrapping. */
static void run_mma_s4(const wb_insn *in, uint64_t *r[32])
{
    const wb_opnd *o = in->o;
    int k64 = in->op == WB_OP_MMA_S4_K64, rows = k64 ? 16 : 8, kk = k64 ? 64 : 32, nd = k64 ? 4 : 2;
    int a[16][64] = {{0}}, b[64][8] = {{0}};
    int64_t c[16][8] = {{0}};
    for (int l = 0; l < 32; l++) {
        int gid = l / 4, tig = l % 4;
        for (int i = 0; i < 8; i++) {
            if (k64) {
                for (int reg = 0; reg < 4; reg++)
                    a[gid + 8 * (reg & 1)][(reg >> 1) * 32 + tig * 8 + i] = nibble_of(r[l][o[4 + reg].v], i);
                b[tig * 8 + i][gid] = nibble_of(r[l][o[8].v], i);
                b[32 + tig * 8 + i][gid] = nibble_of(r[l][o[9].v], i);
            } else {
                a[gid][tig * 8 + i] = nibble_of(r[l][o[2].v], i);
                b[tig * 8 + i][gid] = nibble_of(r[l][o[3].v], i);
            }
        }
        for (int i = 0; i < nd; i++)
            c[gid + 8 * (i >> 1)][tig * 2 + (i & 1)] = (int32_t)(uint32_t)r[l][o[nd + (k64 ? 6 : 2) + i].v];
    }
    for (int m = 0; m < rows; m++)
        for (int n = 0; n < 8; n++) {
            int64_t s = c[m][n];
            for (int k = 0; k < kk; k++)
                s += a[m][k] * b[k][n];
            c[m][n] = (int32_t)(uint32_t)(uint64_t)s;
        }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < nd; i++)
            r[l][o[i].v] = (uint32_t)c[l / 4 + 8 * (i >> 1)][(l % 4) * 2 + (i & 1)];
}

static uint32_t code4(uint64_t word, int i) { return (uint32_t)(word >> (4 * i)) & 15; }

/* One scale byte of a block-scaled MMA: ue4m3 (bit 7 must be clear: the kernel moves a negative
 * e4m3 scale's sign onto the codes) or ue8m0 (2^(code - 127), 255 is NaN). */
static double mma_scale(int ue8m0, unsigned code)
{
    static const wb_type e4m3 = {WB_KIND_FLOAT, 8, 4, 3};
    CHECK(ue8m0 ? code != 255 : code < 0x80 && code != 0x7F, "block-scaled MMA: scale byte 0x%02x is not a %s value",
          code, ue8m0 ? "ue8m0" : "finite ue4m3");
    return ue8m0 ? ldexp(1.0, (int)code - 127) : wb_type_decode(e4m3, code);
}

/* mma.sync m16n8k64 kind::mxf4nvf4 .scale_vec::4X (ue4m3 per 16) or kind::mxf4 .scale_vec::2X (ue8m0
 * per 32), selectors {0, 0} (PTX ISA "Block Scaling for mma.sync"): A and B e2m1 in m16n8k64's s4
 * fragments (run_mma_s4); row m's scales in lane 4 (m % 8) + m / 8's scale-a register, column n's in
 * lane 4 n's scale-b register, K block j in byte j. Each output is c plus the exact sum of its 64
 * scaled products, rounded once to f32, as the fp8 MMA is modelled (head comment). */
static void run_mma_block(const wb_insn *in, uint64_t *r[32])
{
    static const wb_type e2m1 = {WB_KIND_FLOAT, 4, 2, 1};
    const wb_opnd *o = in->o;
    int nv = strcmp(in->type, "mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3") == 0;
    CHECK(nv || strcmp(in->type, "mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0") == 0,
          "mma kind::%s is not modelled", in->type);
    int block = nv ? 16 : 32;
    double a[16][64], b[64][8], c[16][8], sa[16][4], sb[4][8];
    for (int l = 0; l < 32; l++) {
        int gid = l / 4, tig = l % 4;
        for (int i = 0; i < 8; i++) {
            for (int reg = 0; reg < 4; reg++)
                a[gid + 8 * (reg & 1)][(reg >> 1) * 32 + tig * 8 + i] = wb_type_decode(e2m1, code4(r[l][o[4 + reg].v], i));
            b[tig * 8 + i][gid] = wb_type_decode(e2m1, code4(r[l][o[8].v], i));
            b[32 + tig * 8 + i][gid] = wb_type_decode(e2m1, code4(r[l][o[9].v], i));
        }
        for (int i = 0; i < 4; i++)
            c[gid + 8 * (i >> 1)][tig * 2 + (i & 1)] = (double)as_f32(r[l][o[10 + i].v]);
    }
    for (int j = 0; j < 64 / block; j++) {
        for (int m = 0; m < 16; m++)
            sa[m][j] = mma_scale(!nv, (unsigned)(r[4 * (m % 8) + m / 8][o[14].v] >> (8 * j)) & 0xFF);
        for (int n = 0; n < 8; n++)
            sb[j][n] = mma_scale(!nv, (unsigned)(r[4 * n][o[15].v] >> (8 * j)) & 0xFF);
    }
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 8; n++) {
            double s = 0;
            for (int k = 0; k < 64; k++)
                s += a[m][k] * sa[m][k / block] * b[k][n] * sb[k / block][n];
            c[m][n] = (double)(float)(c[m][n] + s);
        }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++)
            r[l][o[i].v] = from_f32((float)c[l / 4 + 8 * (i >> 1)][(l % 4) * 2 + (i & 1)]);
}

/* The warp's collective op at lanes base..base+31 (all at the same instruction). */
static void run_collective(emu *e, int base)
{
    const wb_insn *in = &e->f->insns[e->t[base].pc];
    uint64_t *r[32];
    for (int l = 0; l < 32; l++) {
        CHECK(e->t[base + l].pc == e->t[base].pc && e->t[base + l].state == AT_WARP, "warp diverged at a collective");
        r[l] = e->t[base + l].r;
    }
    const wb_opnd *o = in->o;
    if (in->op == WB_OP_ELECT) { /* elect.sync _|p, -1: the lowest lane (all 32 have met here) */
        for (int l = 0; l < 32; l++)
            r[l][o[0].v] = l == 0;
        return;
    }
    if (in->op == WB_OP_BAR_WARP_SYNC) { /* bar.warp.sync -1: every lane has met here */
        for (int l = 0; l < 32; l++)
            e->t[base + l].warp_met = 1;
        return;
    }
    if (in->op == WB_OP_SETMAXNREG_INC || in->op == WB_OP_SETMAXNREG_DEC) { /* .sync.aligned: registers only */
        int64_t regs = lane_val(r[0], &o[0]);
        CHECK(regs >= 24 && regs <= 256 && regs % 8 == 0, "setmaxnreg %lld (24 to 256, a multiple of 8)",
              (long long)regs);
        return;
    }
    if (in->op == WB_OP_LDMATRIX_X4 || in->op == WB_OP_LDMATRIX_X2) { /* matrix j row q: lane 8j + q's address */
        int nm = in->op == WB_OP_LDMATRIX_X4 ? 4 : 2;
        uint32_t out[32][4];
        for (int l = 0; l < 8 * nm; l++)
            shared_at(e, r[l][o[nm].v], 16); /* each row address: 16 bytes, aligned */
        for (int l = 0; l < 32; l++)
            for (int j = 0; j < nm; j++) { /* lane l gets word l % 4 of row l / 4 of matrix j */
                uint64_t at = r[8 * j + l / 4][o[nm].v] + 4 * (uint64_t)(l % 4);
                shared_read(e, base + l, at, 4, "ldmatrix");
                memcpy(&out[l][j], shared_at(e, at, 4), 4);
            }
        for (int l = 0; l < 32; l++)
            for (int j = 0; j < nm; j++)
                r[l][o[j].v] = out[l][j];
        return;
    }
    if (in->op == WB_OP_SHFL_BFLY) { /* shfl.sync.bfly.b32 d, a, lanemask, 31, -1: lane l reads lane l ^ mask */
        uint64_t got[32];
        for (int l = 0; l < 32; l++)
            got[l] = lane_val(r[l ^ ((int)lane_val(r[l], &o[2]) & 31)], &o[1]);
        for (int l = 0; l < 32; l++)
            r[l][o[0].v] = got[l] & 0xFFFFFFFFu;
        return;
    }
    if (in->op == WB_OP_MMA_S4_K64 || in->op == WB_OP_MMA_S4_K32) {
        run_mma_s4(in, r);
        return;
    }
    if (in->op == WB_OP_MMA_FP8) {
        run_mma_fp8(in, r);
        return;
    }
    if (in->op == WB_OP_MMA_BLOCK) {
        run_mma_block(in, r);
        return;
    }
    if (in->op == WB_OP_TC_ALLOC || in->op == WB_OP_TC_DEALLOC || in->op == WB_OP_TC_RELINQUISH) {
        run_tc_alloc(e, base, in, r);
        return;
    }
    if (in->op == WB_OP_MMA_K16 || in->op == WB_OP_MMA_K8) {
        run_mma_f16(in, r);
        return;
    }
    if (in->op == WB_OP_WGMMA_S8 || in->op == WB_OP_WGMMA_F8 || in->op == WB_OP_WGMMA) {
        run_wgmma(e, base / 32, in, r);
        return;
    }
    int k32 = in->op == WB_OP_MMA_S8_K32, rows = k32 ? 16 : 8, kk = k32 ? 32 : 16;
    int a[16][32] = {{0}}, b[32][8] = {{0}}, c[16][8] = {{0}};
    for (int l = 0; l < 32; l++) {
        int gid = l / 4, tig = l % 4;
        for (int q = 0; q < 4; q++) {
            if (k32) {
                for (int reg = 0; reg < 4; reg++)
                    a[gid + 8 * (reg & 1)][(reg >> 1) * 16 + tig * 4 + q] = byte_of(r[l][o[4 + reg].v], q);
                b[tig * 4 + q][gid] = byte_of(r[l][o[8].v], q);
                b[16 + tig * 4 + q][gid] = byte_of(r[l][o[9].v], q);
            } else {
                a[gid][tig * 4 + q] = byte_of(r[l][o[2].v], q);
                b[tig * 4 + q][gid] = byte_of(r[l][o[3].v], q);
            }
        }
        for (int i = 0; i < (k32 ? 4 : 2); i++)
            c[gid + 8 * (i >> 1)][tig * 2 + (i & 1)] = (int32_t)(uint32_t)r[l][o[(k32 ? 10 : 4) + i].v];
    }
    for (int m = 0; m < rows; m++)
        for (int n = 0; n < 8; n++) {
            int64_t s = c[m][n];
            for (int k = 0; k < kk; k++)
                s += a[m][k] * b[k][n];
            c[m][n] = (int32_t)(uint32_t)(uint64_t)s;
        }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < (k32 ? 4 : 2); i++)
            r[l][o[i].v] = (uint32_t)c[l / 4 + 8 * (i >> 1)][(l % 4) * 2 + (i & 1)];
}

/* Where warp w waits, as text (its first live lane: a barrier, a collective, a barrier.cluster wait, or
 * an mbarrier spin with the mbarrier's state); the lanes that wait there in *lanes. Empty when the
 * whole warp is done. */
static void warp_wait(const emu *e, int w, char *buf, size_t size, int *lanes)
{
    int l = 0;
    buf[0] = 0, *lanes = 0;
    while (l < 32 && e->t[32 * w + l].state == DONE)
        l++;
    if (l == 32)
        return;
    const thread *th = &e->t[32 * w + l];
    for (int j = 0; j < 32; j++)
        *lanes += e->t[32 * w + j].state == th->state && e->t[32 * w + j].pc == th->pc;
    int cw = th->state == SPIN && e->f->insns[th->pc].op == WB_OP_CLUSTER_WAIT;
    int n = snprintf(buf, size, "insn %d (%s)", th->pc,
                     th->state == AT_BAR ? "bar.sync" : th->state == AT_WARP ? "a collective"
                                                      : cw ? "barrier.cluster.wait" : "mbarrier spin");
    if (th->state != SPIN || cw)
        return;
    const wb_opnd *o = e->f->insns[th->pc].o;
    for (int i = 0; i < e->nmbars; i++)
        if (e->mbars[i].addr == val(th, &o[1]))
            snprintf(buf + n, size - (size_t)n, " on mbarrier %d, parity %d: %d phases done, %d arrivals and %lld "
                     "bytes to come", i, (int)(val(th, &o[2]) & 1), e->mbars[i].phase, e->mbars[i].pending,
                     (long long)e->mbars[i].tx);
}

/* The block's live threads and those at a bar.sync. */
static void count_live(const emu *e, int *live, int *at_bar)
{
    *live = *at_bar = 0;
    for (int i = 0; i < e->nthreads; i++)
        *live += e->t[i].state != DONE, *at_bar += e->t[i].state == AT_BAR;
}

/* Where the block's threads wait (warp_wait, per run of warps that wait at the same place), appended
 * to msg at n; returns the new length. */
static int stuck_text(const emu *e, char *msg, size_t size, int n)
{
    char cur[256], next[256];
    int live, at_bar, lanes, nl, nw = e->nthreads / 32;
    count_live(e, &live, &at_bar);
    n += snprintf(msg + n, size - (size_t)n, "%d threads live, %d at a barrier;", live, at_bar);
    for (int w = 0; w < nw && n < (int)size - 300; w++) {
        warp_wait(e, w, cur, sizeof cur, &lanes);
        int last = w;
        for (; last + 1 < nw; last++) { /* the run of warps waiting at the same place */
            warp_wait(e, last + 1, next, sizeof next, &nl);
            if (nl != lanes || strcmp(next, cur))
                break;
        }
        if (cur[0] && last > w)
            n += snprintf(msg + n, size - (size_t)n, " warps %d-%d: %d lanes each at %s;", w, last, lanes, cur);
        else if (cur[0])
            n += snprintf(msg + n, size - (size_t)n, " warp %d: %d lanes at %s;", w, lanes, cur);
        w = last;
    }
    return n;
}

/* "the block is stuck": where each run of warps waits, so that a producer / consumer deadlock reads
 * off the message. */
static void stuck(const emu *e)
{
    char msg[2048];
    int n = snprintf(msg, sizeof msg, "the block is stuck: ");
    stuck_text(e, msg, sizeof msg, n);
    ck_abort_msg("%s", msg);
}

/* "the cluster is stuck": neither block moved in a round; where each one's warps wait. */
static void stuck_cluster(emu *const c[2])
{
    char msg[4000];
    int n = snprintf(msg, sizeof msg, "the cluster of blocks (%u, %u) and (%u, %u) is stuck:", c[0]->ctaid[0],
                     c[0]->ctaid[1], c[1]->ctaid[0], c[1]->ctaid[1]);
    for (int r = 0; r < 2; r++) {
        n += snprintf(msg + n, sizeof msg - (size_t)n, " CTA %d: ", r);
        n = stuck_text(c[r], msg, sizeof msg / 2 * (size_t)(r + 1), n);
    }
    ck_abort_msg("%s", msg);
}

/* At the block's end no async copy may still be in flight: every mbarrier's expected bytes have landed
 * (none expected that no copy brought, none landed that no expect_tx counted), and some thread has
 * seen the phase of each one's last copy (else nothing orders the copy before the block's exit, and it
 * could write the shared memory of the next block on the SM). */
static void check_copies_done(const emu *e)
{
    for (int i = 0; i < e->nmbars; i++) {
        const mbar *mb = &e->mbars[i];
        int seen = 0;
        for (int t = 0; t < e->nthreads; t++)
            seen = e->t[t].seen[i] > seen ? e->t[t].seen[i] : seen;
        CHECK(mb->tx == 0, "the block%s ended with mbarrier %d (shared %llu) at %lld transaction bytes in phase %d",
              of_cta(e).s, i, (unsigned long long)mb->addr, (long long)mb->tx, mb->phase);
        CHECK(seen >= mb->copy_phase, "the block%s ended before any thread waited for the async copy that completes "
              "phase %d of mbarrier %d (shared %llu; threads saw %d phases)", of_cta(e).s, mb->copy_phase, i,
              (unsigned long long)mb->addr, seen);
    }
}

/* A block starts: stale shared memory (garbage), no mbarriers, copies, reads or wgmmas in flight, every
 * thread at its first instruction with zeroed registers. */
static void block_reset(emu *e)
{
    memset(e->smem, 0xA5, (size_t)e->smem_bytes); /* stale shared memory is garbage */
    memset(e->reading, 0, (size_t)(e->smem_bytes / 16) * sizeof *e->reading);
    memset(e->written, 0, (size_t)(e->smem_bytes / 4) * sizeof *e->written);
    memset(e->fences, 0, (size_t)e->nthreads * sizeof *e->fences);
    for (int w = 0; w < e->nthreads / 32; w++) {
        e->flight[w].n = e->flight[w].groups = e->flight[w].retired = 0;
        memset(e->flight[w].last, 0, (size_t)(e->smem_bytes / 16) * sizeof *e->flight[w].last);
    }
    memset(e->tc_read, 0, (size_t)(e->smem_bytes / 16) * sizeof *e->tc_read);
    memset(e->arec, 0, (size_t)(e->smem_bytes / 16) * sizeof *e->arec);
    if (e->rd)
        memset(e->rd, 0, (size_t)(e->smem_bytes / 16) * (size_t)e->nthreads * sizeof *e->rd);
    e->nmbars = e->ntc_recs = e->tmem_cols = e->bar_gen = e->ended = 0;
    for (int i = 0; i < e->nthreads; i++) {
        e->t[i].pc = 0, e->t[i].waited = e->t[i].launched = e->t[i].warp_met = 0;
        memset(e->t[i].seen, 0, sizeof e->t[i].seen);
        e->t[i].seen_rec = e->t[i].bars = e->t[i].nrel = 0;
        e->t[i].carrive = e->t[i].cwait = 0;
        e->t[i].state = RUN;
        memset(e->t[i].r, 0, (size_t)e->f->nregs * sizeof *e->t[i].r);
        memset(e->t[i].busy, 0, (size_t)e->f->nregs * sizeof *e->t[i].busy);
        e->t[i].commits = 0;
    }
}

/* The block's last thread has ended: nothing may be left behind (tensor memory, async copies), and
 * launch_dependents ran at most once a thread. */
static void block_end(emu *e)
{
    CHECK(!e->tmem_cols, "the block ended with %d tensor memory columns allocated", e->tmem_cols);
    check_copies_done(e);
    for (int i = 0; i < e->nthreads; i++)
        CHECK(e->t[i].launched <= 1, "thread %d ran griddepcontrol.launch_dependents %d times", i, e->t[i].launched);
    e->ended = 1;
}

/* One round of the block: every thread runs to its next wait (a failed try_wait or barrier.cluster.wait
 * spins: it tries again next round), then each warp whose lanes all met at a collective runs it, and
 * when nothing else moved and every live thread is at bar.sync, they pass it (threads that have ended
 * count as arrived). Returns whether anything moved; at the last thread's end, block_end. */
static int block_round(emu *e)
{
    e->progress = 0;
    for (int i = 0; i < e->nthreads; i++) {
        if (e->t[i].state == SPIN)
            e->t[i].state = RUN;
        run_thread(e, i);
    }
    int live, at_bar, moved = e->progress > 0;
    for (int w = 0; w < e->nthreads / 32; w++) {
        int at = 0;
        for (int l = 0; l < 32; l++)
            at += e->t[32 * w + l].state == AT_WARP;
        if (at == 32) {
            run_collective(e, 32 * w);
            for (int l = 0; l < 32; l++)
                e->t[32 * w + l].pc++, e->t[32 * w + l].state = RUN;
            moved = 1;
        }
    }
    count_live(e, &live, &at_bar);
    if (!live) {
        block_end(e);
        return 1;
    }
    if (!moved && at_bar == live) {
        e->bar_gen++;
        for (int i = 0; i < e->nthreads; i++)
            if (e->t[i].state == AT_BAR)
                e->t[i].pc++, e->t[i].state = RUN, e->t[i].bars = e->bar_gen;
        moved = 1;
    }
    return moved;
}

/* One block, to the end of every thread; a round in which nothing moved is a deadlock: every live
 * thread waits at a barrier some thread never reaches, or on an mbarrier. */
static void run_block(emu *e)
{
    block_reset(e);
    while (!e->ended)
        if (!block_round(e))
            stuck(e);
}

/* The two blocks of a cluster, together: a round of CTA 0's threads, then one of CTA 1's, until both
 * have ended (an ended one sits out). Remote arrivals, multicasts and the cluster barrier act on the
 * peer between its rounds. A deadlock is a turn of both rounds in which neither moved. The blocks of a
 * cluster start on their SMs at no set time apart: CTA `lead` runs alone until it can go no further,
 * and only then does the other start (so a copy or an arrival that reaches the other block before its
 * mbarriers are set up fails, whichever block issues it). */
static void run_cluster(emu *const c[2], int lead)
{
    block_reset(c[0]);
    block_reset(c[1]);
    int started = 0; /* the other block has started */
    while (!c[0]->ended || !c[1]->ended) {
        int moved = 0;
        for (int r = 0; r < 2; r++)
            if (!c[r]->ended && (started || r == lead))
                moved |= block_round(c[r]);
        if (!moved && !started)
            started = moved = 1;
        else if (!moved)
            stuck_cluster(c);
    }
}

/* A random fp8 weight code whose value is finite and at most 448 in magnitude (e5m2's larger ones would
 * only push f16 outputs past their range), subnormals included. */
static uint8_t random_fp8(wb_type t, uint64_t *st)
{
    for (;;) {
        uint8_t c = (uint8_t)wbt_next(st);
        if (fabs(wb_type_decode(t, c)) <= 448)
            return c;
    }
}

/* One output of f32 sums (fp8; group scales of weights or activations, whose scaled slices are added
 * in f32) against the float64 reference: within one rounding of the output type plus 2^-20 of the sum
 * of |products| (head comment). ws: [N/gn][K/g] (g = 0: [N]); as: [M][K/ag] (ag = 0: [M]). */
static void check_bounded_output(const wb_format *f, const char *spec, wb_arch arch, const char *conf, int64_t row,
                                 int64_t col, int64_t k, const uint8_t *acodes, const uint8_t *w, const float *ws,
                                 const float *as, uint16_t got, double ref)
{
    int bf = f->out.kind == WB_KIND_BF16;
    int64_t groups = f->g ? k / f->g : 1, agroups = f->ag ? k / f->ag : 1;
    double mag = 0;
    for (int64_t j = 0; j < k; j++)
        mag += fabs(wb_type_decode(f->a, acodes[row * k + j]) * wb_type_decode(f->w, w[col * k + j]) *
                    (double)ws[(f->g ? col / f->gn : col) * groups + (f->g ? j / f->g : 0)] *
                    (double)as[row * agroups + (f->ag ? j / f->ag : 0)]);
    double o = bf ? wb_bf16_to_double(got) : wb_f16_to_double(got);
    double tol = fabs(ref) * (bf ? 0x1p-8 : 0x1p-11) + mag * 0x1p-20 + 0x1p-24;
    CHECK(isfinite(o) && fabs(o - ref) <= tol, "%s %s [%s]: out[%lld][%lld] = %g, reference %g (bound %g)", spec,
          wb_arch_name(arch), conf, (long long)row, (long long)col, o, ref, tol);
}

/* A kernel built for (spec, arch, config at M): its format, config and instruction IR. */
typedef struct built {
    wb_format f;
    wb_config cfg;
    wb_kernel *kern;
    wb_func fn;
} built;

static void build_case(const char *spec, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config forced, built *b)
{
    ck_assert_int_eq(wb_format_parse(spec, &b->f), WB_OK);
    b->cfg = forced;
    ck_assert_int_eq(wb_config_choose(&b->f, arch, m, n, k, &b->cfg), WB_OK);
    ck_assert_int_eq(wb_kernel_check_shape(&b->f, &b->cfg, m, n, k), WB_OK);
    const wb_target *t = wb_target_get(arch);
    ck_assert_int_eq(wb_legalize(&b->f, t, &b->cfg), WB_OK);
    b->kern = wb_build_gemm(&b->f, &b->cfg, wb_isa_block_scale_vec(&b->f, arch));
    ck_assert_int_eq(wb_kernel_validate(b->kern), WB_OK);
    wb_func_init(&b->fn, b->kern->arena);
    b->fn.target = t;
    ck_assert_int_eq(wb_lower_gemm(b->kern, t, 0, &b->fn), WB_OK);
}

/* Allocate the state of one block of fn launched as dims (whose smem_bytes is at least 16), with the
 * case's parameters (NPARAMS values), global buffers and tensor map (TMA kernels; else NULL, and no
 * write-after-read tracking). Not yet in a cluster (rank 0 of 1). */
static void emu_alloc(emu *e, const wb_func *fn, const wb_launch_dims *dims, const uint64_t *params,
                      const gbuf *bufs, int nbufs, const fake_tmap *tm)
{
    *e = (emu){.f = fn, .smem_bytes = (int)dims->smem_bytes, .nthreads = (int)dims->block[0], .nbufs = nbufs,
               .pdl = (fn->target->features & WB_FEAT_GRIDDEP) != 0, .tmap = tm, .csize = 1};
    ck_assert(nbufs <= MAX_BUFS);
    memcpy(e->bufs, bufs, (size_t)nbufs * sizeof *bufs);
    memcpy(e->params, params, sizeof e->params);
    const char **labels = calloc((size_t)fn->ninsns, sizeof *labels);
    e->smem = malloc((size_t)e->smem_bytes);
    e->t = calloc((size_t)e->nthreads, sizeof *e->t);
    ck_assert(e->smem_bytes % 16 == 0 && e->nthreads % 32 == 0 && e->nthreads <= 32 * 32);
    e->reading = malloc((size_t)(e->smem_bytes / 16) * sizeof *e->reading);
    e->written = malloc((size_t)(e->smem_bytes / 4) * sizeof *e->written);
    e->fences = malloc((size_t)e->nthreads * sizeof *e->fences);
    e->flight = calloc((size_t)(e->nthreads / 32), sizeof *e->flight);
    e->tmem = malloc((size_t)TC_LANES * TC_COLS * sizeof *e->tmem);
    e->tc_wrote = calloc(TC_COLS, sizeof *e->tc_wrote);
    e->tc_unread = calloc((size_t)TC_LANES * TC_COLS, 1);
    e->tc_cp = calloc((size_t)TC_LANES * TC_COLS, 1);
    e->tc_sf_read = calloc(TC_COLS, sizeof *e->tc_sf_read);
    e->tc_read = malloc((size_t)(e->smem_bytes / 16) * sizeof *e->tc_read);
    e->tc_recs = malloc((size_t)MAX_TC_RECS * sizeof *e->tc_recs);
    e->arec = malloc((size_t)(e->smem_bytes / 16) * sizeof *e->arec);
    if (tm) { /* the write-after-read check of async copies */
        e->rd = malloc((size_t)(e->smem_bytes / 16) * (size_t)e->nthreads * sizeof *e->rd);
        e->rd_insn = malloc((size_t)(e->smem_bytes / 16) * sizeof *e->rd_insn);
        ck_assert(e->rd && e->rd_insn);
    }
    ck_assert(labels && e->smem && e->t && e->reading && e->written && e->fences && e->flight && e->tmem &&
              e->tc_read && e->tc_recs && e->tc_wrote && e->tc_unread && e->tc_cp && e->tc_sf_read && e->arec);
    for (int w = 0; w < e->nthreads / 32; w++) {
        e->flight[w].chunk = malloc((size_t)(e->smem_bytes / 16) * sizeof *e->flight[w].chunk);
        e->flight[w].gid = malloc((size_t)(e->smem_bytes / 16) * sizeof *e->flight[w].gid);
        e->flight[w].last = malloc((size_t)(e->smem_bytes / 16) * sizeof *e->flight[w].last);
        ck_assert(e->flight[w].chunk && e->flight[w].gid && e->flight[w].last);
    }
    for (int i = 0; i < fn->ninsns; i++)
        labels[i] = fn->insns[i].op == WB_OP_LABEL ? fn->insns[i].o[0].text : NULL;
    e->labels = labels;
    for (int i = 0; i < e->nthreads; i++) {
        e->t[i].r = malloc((size_t)fn->nregs * sizeof *e->t[i].r);
        e->t[i].busy = malloc((size_t)fn->nregs * sizeof *e->t[i].busy);
        ck_assert(e->t[i].r && e->t[i].busy);
    }
    e->nctaid[0] = dims->grid[0], e->nctaid[1] = dims->grid[1];
}

static void emu_free(emu *e)
{
    for (int i = 0; i < e->nthreads; i++)
        free(e->t[i].r), free(e->t[i].busy), free(e->t[i].rel);
    for (int w = 0; w < e->nthreads / 32; w++)
        free(e->flight[w].chunk), free(e->flight[w].gid), free(e->flight[w].last);
    free(e->flight), free(e->fences), free(e->written), free(e->reading);
    free(e->tmem), free(e->tc_read), free(e->tc_recs), free(e->tc_wrote), free(e->tc_unread), free(e->arec);
    free(e->tc_cp), free(e->tc_sf_read);
    free(e->rd), free(e->rd_insn);
    free(e->t);
    free(e->smem);
    free((void *)e->labels);
}

/* Run the whole grid `dims` of fn on params (NPARAMS values) with the global buffers bufs and the
 * tensor map tm (TMA kernels; else NULL). cluster 2: the grid runs in thread block clusters of two
 * blocks along x, (2i, y) and (2i + 1, y) together (run_cluster), ranks 0 and 1; grid.x must be even.
 * 0 or 1: one block at a time. */
static void run_func(const wb_func *fn, const wb_launch_dims *d, const uint64_t *params, const gbuf *bufs, int nbufs,
                     const fake_tmap *tm, int cluster)
{
    wb_launch_dims dims = *d;
    int cl = cluster > 1 ? cluster : 1;
    CHECK(cl <= 2, "clusters of %d blocks are not modelled (2 at most)", cl);
    CHECK(dims.grid[0] % (unsigned)cl == 0, "a cluster of %d blocks along x needs an even grid.x, not %u", cl,
          dims.grid[0]);
    if (dims.smem_bytes < 16) /* the quantizer has none */
        dims.smem_bytes = 16;
    emu c[2];
    emu *const pair[2] = {&c[0], &c[1]};
    for (int r = 0; r < cl; r++) {
        emu_alloc(&c[r], fn, &dims, params, bufs, nbufs, tm);
        c[r].rank = r, c[r].csize = cl, c[r].peer = cl > 1 ? &c[1 - r] : NULL;
    }
    for (unsigned by = 0; by < dims.grid[1]; by++)
        for (unsigned bx = 0; bx < dims.grid[0]; bx += (unsigned)cl) {
            for (int r = 0; r < cl; r++)
                c[r].ctaid[0] = bx + (unsigned)r, c[r].ctaid[1] = by;
            if (cl > 1) /* the pairs take turns leading */
                run_cluster(pair, (int)((bx / 2 + by) & 1));
            else
                run_block(&c[0]);
        }
    for (int r = 0; r < cl; r++)
        emu_free(&c[r]);
}

/* Run the whole grid of b on params (NPARAMS values) with the global buffers bufs. A TMA kernel gets
 * the activations' tensor map as runtime/layer.c encodes it: the M x K matrix at p_a (f16 / bf16, or
 * 8-bit codes copied as bytes), boxes of the block's tokens (8 m_tiles) x 128 bytes; in clusters of two
 * (cfg.cluster 2), boxes of half the block's tokens, each block copying one half into both. */
static void run_grid(const built *b, int64_t m, int64_t n, int64_t k, const uint64_t *params, const gbuf *bufs,
                     int nbufs)
{
    wb_launch_dims dims;
    ck_assert_int_eq(wb_kernel_dims(&b->f, b->fn.target->arch, &b->cfg, m, n, k, &dims), WB_OK);
    if (b->cfg.persistent) { /* a grid of one block per SM (as a GPU with 3 SMs), so each walks several tiles */
        ck_assert_uint_eq(dims.grid[1], 1);
        dims.grid[0] = dims.grid[0] < 3 ? dims.grid[0] : 3;
    }
    int elem = b->f.a.bits / 8, cl = b->cfg.cluster > 1 ? b->cfg.cluster : 1;
    CHECK(8 * b->cfg.m_tiles % cl == 0, "a cluster of %d blocks cannot split %d tokens", cl, 8 * b->cfg.m_tiles);
    fake_tmap tm = {.base = params[1], .rows = m, .cols = k, .elem = elem, .box_rows = 8 * b->cfg.m_tiles / cl,
                    .box_cols = elem ? 128 / elem : 0};
    int tma = b->cfg.load == WB_LOAD_TMA;
    ck_assert(!tma || ((elem == 1 || elem == 2) && b->f.a.bits % 8 == 0 && tm.box_rows <= 256));
    run_func(&b->fn, &dims, params, bufs, nbufs, tma ? &tm : NULL, b->cfg.cluster);
}

static gbuf buf_of(const void *p, size_t bytes, int kind, const char *name)
{
    return (gbuf){(uintptr_t)p, (uintptr_t)p + bytes, kind, name};
}

/* Build the kernel of (spec, arch, config at M) and run its whole grid on random quantized data. */
static void run_case(const char *spec, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config forced)
{
    built b;
    build_case(spec, arch, m, n, k, forced, &b);
    const wb_format f = b.f;
    const wb_config cfg = b.cfg;

    /* data: s8 weight codes, f32 channel scales, a bias; f32 activations quantized per token */
    uint64_t st = wbt_seed() ^ (uint64_t)(m * 131 + arch);
    uint8_t *w = malloc((size_t)(n * k)), *acodes = malloc((size_t)(m * k));
    int64_t groups = f.g ? k / f.g : 1, wrows = f.g ? n / f.gn : n, agroups = f.ag ? k / f.ag : 1;
    float *ws = malloc((size_t)(wrows * groups) * 4), *as = malloc((size_t)(m * agroups) * 4);
    float *x = malloc((size_t)(m * k) * 4);
    uint16_t *bias = malloc((size_t)n * 2), *out = malloc((size_t)(m * n) * 2);
    double *ref = malloc((size_t)(m * n) * sizeof *ref);
    ck_assert(w && acodes && ws && as && x && bias && out && ref);
    int fp8 = wb_format_w8a8_fp8(&f);
    for (int64_t i = 0; i < n * k; i++)
        w[i] = wb_type_fp8(f.w) ? random_fp8(f.w, &st) : (uint8_t)(wbt_next(&st) & ((1u << f.w.bits) - 1)); /* int8, int4 */
    for (int64_t i = 0; i < wrows * groups; i++)
        ws[i] = (float)((double)(wbt_next(&st) % 1000 + 1) / 64000.0);
    for (int64_t i = 0; i < n; i++) {
        bias[i] = f.out.kind == WB_KIND_BF16 ? wb_bf16_from_double((double)(wbt_next(&st) % 200) / 50.0 - 2)
                                             : wb_f16_from_double((double)(wbt_next(&st) % 200) / 50.0 - 2);
    }
    for (int64_t i = 0; i < m * k; i++)
        x[i] = (float)((double)(wbt_next(&st) % 20001) / 10000.0 - 1.0);
    ck_assert_int_eq(wb_reference_quantize_acts(&f, m, k, x, acodes, as, NULL), WB_OK);
    wb_host_weights hw = {.w = w, .w_scale = ws, .bias = f.bias ? bias : NULL};
    wb_host_acts ha = {.a = acodes, .a_scale = as};
    ck_assert_int_eq(wb_reference_gemm(&f, m, n, k, &ha, &hw, ref), WB_OK);
    wb_packed p;
    ck_assert_int_eq(wb_pack_weights(&f, arch, n, k, &hw, &p), WB_OK);
    memset(out, 0xFF, (size_t)(m * n) * 2); /* NaN bits: an unwritten output fails */

    /* the kernels' activation layout: 8-bit codes as they are, s4 two to a byte (wb_pack_acts) */
    size_t abytes = (size_t)wb_acts_bytes(&f, m, k);
    uint8_t *apacked = malloc(abytes);
    ck_assert_ptr_nonnull(apacked);
    ck_assert_int_eq(wb_pack_acts(&f, m, k, acodes, apacked), WB_OK);
    uint64_t params[NPARAMS] = {(uintptr_t)out, (uintptr_t)apacked, (uintptr_t)p.w, (uintptr_t)p.scale,
                                (uintptr_t)p.chan, (uint64_t)m, (uint64_t)n, (uint64_t)k, (uintptr_t)as, 0};
    gbuf bufs[] = {buf_of(out, (size_t)(m * n) * 2, BUF_OUT, "output"),
                   buf_of(apacked, abytes, BUF_INPUT, "activations"), buf_of(p.w, p.w_bytes, BUF_LAYER, "weights"),
                   buf_of(p.scale, p.scale_bytes, BUF_LAYER, "group scales"),
                   buf_of(p.chan, p.chan_bytes, BUF_LAYER, "channel array"),
                   buf_of(as, (size_t)(m * agroups) * 4, BUF_INPUT, "token scales")};
    run_grid(&b, m, n, k, params, bufs, (int)(sizeof bufs / sizeof bufs[0]));
    char conf[128];
    wb_config_print(&cfg, conf, sizeof conf);
    int exact = !fp8 && !f.g && !f.ag;
    for (int64_t i = 0; !exact && i < m * n; i++)
        check_bounded_output(&f, spec, arch, conf, i / n, i % n, k, acodes, w, ws, as, out[i], ref[i]);
    for (int64_t i = 0; exact && i < m * n; i++) {
        /* bitwise: the exact s32 sum, to f32, times ws[n], times as[m], plus the bias, rounded once */
        int64_t row = i / n, col = i % n;
        double sum = 0; /* exact: integer or e2m1 (half-integer) weights */
        for (int64_t j = 0; j < k; j++)
            sum += wb_type_decode(f.a, acodes[row * k + j]) * wb_type_decode(f.w, w[col * k + j]);
        float v = (float)sum * ws[col] * as[row];
        if (f.bias)
            v += f.out.kind == WB_KIND_BF16 ? (float)wb_bf16_to_double(bias[col]) : (float)wb_f16_to_double(bias[col]);
        uint16_t want = f.out.kind == WB_KIND_BF16 ? wb_bf16_from_double(v) : wb_f16_from_double(v);
        CHECK(out[i] == want, "%s %s m=%lld: out[%lld][%lld] = 0x%04x, want 0x%04x", spec, wb_arch_name(arch),
              (long long)m, (long long)row, (long long)col, out[i], want);
        double o = f.out.kind == WB_KIND_BF16 ? wb_bf16_to_double(out[i]) : wb_f16_to_double(out[i]);
        double tol = fabs(ref[i]) * (f.out.kind == WB_KIND_BF16 ? 0x1p-8 : 0x1p-10) + 1e-6;
        CHECK(fabs(o - ref[i]) <= tol, "%s %s [%s] m=%lld: out[%lld][%lld] = %g, reference %g", spec,
              wb_arch_name(arch), conf, (long long)m, (long long)(i / n), (long long)(i % n), o, ref[i]);
    }
    wb_packed_free(&p);
    free(apacked);
    free(w), free(acodes), free(ws), free(as), free(x), free(bias), free(out), free(ref);
    wb_kernel_destroy(b.kern);
}

/* A random scale code of type t (ws, in its interchange storage) whose value keeps every dequantized
 * weight exact in the compute type: e8m0 2^-7 .. 2^7; any other type +-(1 + j/8) x 2^(-4..3) (a 4-bit
 * significand, like e4m3's: times an int4 or e2m1 code it fits f16 and bf16). */
static uint32_t random_scale(wb_type t, uint64_t *st)
{
    if (t.kind == WB_KIND_E8M0)
        return 120 + (uint32_t)(wbt_next(st) % 15);
    uint64_t r = wbt_next(st);
    double v = ldexp(1.0 + (double)(r % 8) / 8.0, (int)(r / 8 % 8) - 4) * (r / 64 % 2 ? -1.0 : 1.0);
    uint32_t code = wb_type_encode(t, v);
    CHECK(wb_type_decode(t, code) == v, "scale %g is not exact in its type", v);
    return code;
}

/* Value i of an array of type t in its interchange storage (little endian, 1, 2 or 4 bytes). */
static double stored_value(wb_type t, const uint8_t *base, int64_t i)
{
    int bytes = wb_type_file_bytes(t);
    uint32_t code = 0;
    for (int j = 0; j < bytes; j++)
        code |= (uint32_t)base[i * bytes + j] << (8 * j);
    return wb_type_decode(t, code);
}

/* fp4 activations (a=e2m1): the 16-bit kernel on the 16-bit tile the block makes of them. Data: random
 * weight codes (every code of the type), random scales (random_scale), a weight tensor scale (wgs=1),
 * a bias; f32 activations whose magnitude changes every 16 along K (2^-6 .. 2^3, a sixteenth of the
 * blocks zero: small, subnormal and zero block scales), quantized by wb_reference_quantize_acts, then a
 * quarter of the e4m3 activation scales negated (a caller's scales may have either sign). Each
 * output against the float64 reference within one rounding of the output type plus 2^-20 of the sum of
 * |products| (head comment); finite, written (outputs start as NaN bits), and no access outside the
 * case's buffers. */
static void run_case_fp4(const char *spec, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config forced)
{
    built b;
    build_case(spec, arch, m, n, k, forced, &b);
    const wb_format *f = &b.f;
    ck_assert(wb_format_fp4_acts(f));
    ck_assert_int_eq(wb_type_file_bytes(f->as), 1);
    uint64_t seed = wbt_seed(), st = seed ^ (uint64_t)(m * 131 + arch) ^ (uint64_t)k << 20;
    int64_t groups = f->g ? k / f->g : 1, wrows = f->g ? n / f->gn : n, agroups = f->ag ? k / f->ag : 1;
    int sb = wb_type_file_bytes(f->ws), ob = f->out.kind == WB_KIND_BF16;
    uint8_t *w = malloc((size_t)(n * k)), *acodes = malloc((size_t)(m * k)), *ascale = malloc((size_t)(m * agroups));
    uint8_t *wscale = malloc((size_t)(wrows * groups * sb));
    float *x = malloc((size_t)(m * k) * 4), *aglobal = malloc(4), wglobal;
    uint16_t *bias = malloc((size_t)n * 2), *out = malloc((size_t)(m * n) * 2);
    double *ref = malloc((size_t)(m * n) * sizeof *ref), *av = malloc((size_t)(m * k) * sizeof *av);
    double *wv = malloc((size_t)k * sizeof *wv);
    ck_assert(w && acodes && ascale && wscale && x && aglobal && bias && out && ref && av && wv);
    for (int64_t i = 0; i < n * k; i++)
        w[i] = (uint8_t)(wbt_next(&st) & ((1u << f->w.bits) - 1)); /* e2m1, int4: every code is finite */
    for (int64_t i = 0; i < wrows * groups; i++) {
        uint32_t c = random_scale(f->ws, &st);
        for (int j = 0; j < sb; j++)
            wscale[i * sb + j] = (uint8_t)(c >> (8 * j));
    }
    wglobal = (float)((double)(wbt_next(&st) % 1000 + 500) / 1024.0);
    for (int64_t i = 0; i < n; i++)
        bias[i] = (uint16_t)double_to_half(ob, (double)(wbt_next(&st) % 200) / 50.0 - 2);
    for (int64_t i = 0; i < m * k; i += 16) {
        uint64_t r = wbt_next(&st);
        double mag = r % 16 == 0 ? 0 : ldexp(1.0, (int)(r / 16 % 10) - 6);
        for (int j = 0; j < 16; j++)
            x[i + j] = (float)(((double)(wbt_next(&st) % 20001) / 10000.0 - 1.0) * mag);
    }
    *aglobal = 0;
    ck_assert_int_eq(wb_reference_quantize_acts(f, m, k, x, acodes, ascale, f->ags ? aglobal : NULL), WB_OK);
    for (int64_t i = 0; f->as.kind != WB_KIND_E8M0 && i < m * agroups; i++) /* e4m3 scales of either sign */
        ascale[i] ^= (uint8_t)(wbt_next(&st) % 4 == 0 ? 0x80 : 0);
    wb_host_weights hw = {.w = w, .w_scale = wscale, .w_global = f->wgs ? &wglobal : NULL,
                          .bias = f->bias ? bias : NULL};
    wb_host_acts ha = {.a = acodes, .a_scale = ascale, .a_global = f->ags ? aglobal : NULL};
    ck_assert_int_eq(wb_reference_gemm(f, m, n, k, &ha, &hw, ref), WB_OK);
    wb_packed p;
    ck_assert_int_eq(wb_pack_weights(f, arch, n, k, &hw, &p), WB_OK);
    size_t abytes = (size_t)wb_acts_bytes(f, m, k);
    uint8_t *apacked = malloc(abytes);
    ck_assert_ptr_nonnull(apacked);
    ck_assert_int_eq(wb_pack_acts(f, m, k, acodes, apacked), WB_OK);
    memset(out, 0xFF, (size_t)(m * n) * 2); /* NaN bits: an unwritten output fails */

    uint64_t params[NPARAMS] = {(uintptr_t)out, (uintptr_t)apacked, (uintptr_t)p.w, (uintptr_t)p.scale,
                                (uintptr_t)p.chan, (uint64_t)m, (uint64_t)n, (uint64_t)k, (uintptr_t)ascale,
                                f->ags ? (uintptr_t)aglobal : 0};
    gbuf bufs[] = {buf_of(out, (size_t)(m * n) * 2, BUF_OUT, "output"),
                   buf_of(apacked, abytes, BUF_INPUT, "activations"), buf_of(p.w, p.w_bytes, BUF_LAYER, "weights"),
                   buf_of(p.scale, p.scale_bytes, BUF_LAYER, "scale records"),
                   buf_of(p.chan, p.chan_bytes, BUF_LAYER, "channel array"),
                   buf_of(ascale, (size_t)(m * agroups), BUF_INPUT, "activation scales"),
                   buf_of(aglobal, f->ags ? 4 : 0, BUF_INPUT, "activation tensor scale")};
    run_grid(&b, m, n, k, params, bufs, (int)(sizeof bufs / sizeof bufs[0]));

    char conf[128];
    wb_config_print(&b.cfg, conf, sizeof conf);
    /* the values the reference multiplies, for the bound: activations, then one weight row at a time */
    for (int64_t i = 0; i < m * k; i++) {
        int64_t si = i / k * agroups + (f->ag ? i % k / f->ag : 0);
        av[i] = wb_type_decode(f->a, acodes[i]) * wb_type_decode(f->as, ascale[si]) * (f->ags ? (double)*aglobal : 1.0);
    }
    for (int64_t col = 0; col < n; col++) {
        for (int64_t j = 0; j < k; j++)
            wv[j] = wb_format_weight_value(f, w[col * k + j]) *
                    stored_value(f->ws, wscale, f->g ? col / f->gn * groups + j / f->g : col) *
                    (f->wgs ? (double)wglobal : 1.0);
        for (int64_t row = 0; row < m; row++) {
            double mag = 0, r = ref[row * n + col];
            for (int64_t j = 0; j < k; j++)
                mag += fabs(av[row * k + j] * wv[j]);
            double o = half_to_double(ob, out[row * n + col]);
            double tol = fabs(r) * (ob ? 0x1p-8 : 0x1p-11) + mag * 0x1p-20 + 0x1p-24;
            CHECK(isfinite(r), "%s: the reference of out[%lld][%lld] is not finite", spec, (long long)row,
                  (long long)col);
            CHECK(isfinite(o) && fabs(o - r) <= tol,
                  "%s %s [%s] M=%lld K=%lld (WB_SEED=%llu): out[%lld][%lld] = %.9g (0x%04x), reference %.9g "
                  "(bound %g)", spec, wb_arch_name(arch), conf, (long long)m, (long long)k, (unsigned long long)seed,
                  (long long)row, (long long)col, o, out[row * n + col], r, tol);
        }
    }
    wb_packed_free(&p);
    free(apacked);
    free(w), free(acodes), free(ascale), free(wscale), free(x), free(aglobal), free(bias), free(out), free(ref);
    free(av), free(wv);
    wb_kernel_destroy(b.kern);
}

/* Weight-only formats (16-bit activations): random codes (every code of the type), random scales
 * (random_scale), random zero codes with zp=int, a bias; f16/bf16 activations in [-1, 1]. Each output
 * against the float64 reference within one rounding of the output type plus 2^-20 of the sum of
 * |products|; finite, written, and no access outside the case's buffers. */
static void run_case_a16(const char *spec, wb_arch arch, int64_t m, int64_t n, int64_t k, wb_config forced)
{
    built b;
    build_case(spec, arch, m, n, k, forced, &b);
    const wb_format *f = &b.f;
    ck_assert(f->a.bits == 16);
    uint64_t seed = wbt_seed(), st = seed ^ (uint64_t)(m * 131 + arch) ^ (uint64_t)k << 20;
    int64_t groups = f->g ? k / f->g : 1, wrows = f->g ? n / f->gn : n;
    int sb = wb_type_file_bytes(f->ws), ab = f->a.kind == WB_KIND_BF16, ob = f->out.kind == WB_KIND_BF16;
    uint8_t *w = malloc((size_t)(n * k)), *wscale = malloc((size_t)(wrows * groups * sb));
    uint8_t *wzero = malloc((size_t)(wrows * groups));
    uint16_t *a = malloc((size_t)(m * k) * 2), *bias = malloc((size_t)n * 2), *out = malloc((size_t)(m * n) * 2);
    double *ref = malloc((size_t)(m * n) * sizeof *ref);
    ck_assert(w && wscale && wzero && a && bias && out && ref);
    for (int64_t i = 0; i < n * k; i++)
        w[i] = (uint8_t)(wbt_next(&st) & ((1u << f->w.bits) - 1));
    for (int64_t i = 0; i < wrows * groups; i++) {
        uint32_t c = random_scale(f->ws, &st);
        for (int j = 0; j < sb; j++)
            wscale[i * sb + j] = (uint8_t)(c >> (8 * j));
        wzero[i] = (uint8_t)(wbt_next(&st) & ((1u << f->w.bits) - 1));
    }
    for (int64_t i = 0; i < n; i++)
        bias[i] = (uint16_t)double_to_half(ob, (double)(wbt_next(&st) % 200) / 50.0 - 2);
    for (int64_t i = 0; i < m * k; i++)
        a[i] = (uint16_t)double_to_half(ab, (double)(wbt_next(&st) % 20001) / 10000.0 - 1.0);
    wb_host_weights hw = {.w = w, .w_scale = wscale, .w_zero = f->zp == WB_ZP_INT ? wzero : NULL,
                          .bias = f->bias ? bias : NULL};
    wb_host_acts ha = {.a = a};
    ck_assert_int_eq(wb_reference_gemm(f, m, n, k, &ha, &hw, ref), WB_OK);
    wb_packed p;
    ck_assert_int_eq(wb_pack_weights(f, arch, n, k, &hw, &p), WB_OK);
    memset(out, 0xFF, (size_t)(m * n) * 2); /* NaN bits: an unwritten output fails */
    uint64_t params[NPARAMS] = {(uintptr_t)out, (uintptr_t)a, (uintptr_t)p.w, (uintptr_t)p.scale,
                                (uintptr_t)p.chan, (uint64_t)m, (uint64_t)n, (uint64_t)k, 0, 0};
    gbuf bufs[] = {buf_of(out, (size_t)(m * n) * 2, BUF_OUT, "output"),
                   buf_of(a, (size_t)(m * k) * 2, BUF_INPUT, "activations"),
                   buf_of(p.w, p.w_bytes, BUF_LAYER, "weights"),
                   buf_of(p.scale, p.scale_bytes, BUF_LAYER, "scale records"),
                   buf_of(p.chan, p.chan_bytes, BUF_LAYER, "channel array")};
    run_grid(&b, m, n, k, params, bufs, (int)(sizeof bufs / sizeof bufs[0]));
    char conf[128];
    wb_config_print(&b.cfg, conf, sizeof conf);
    for (int64_t col = 0; col < n; col++)
        for (int64_t row = 0; row < m; row++) {
            double mag = 0, r = ref[row * n + col];
            for (int64_t j = 0; j < k; j++) {
                int64_t si = f->g ? col / f->gn * groups + j / f->g : col;
                double z = f->zp == WB_ZP_INT ? wzero[si] : 0;
                double wv = (f->zp == WB_ZP_INT ? (double)w[col * k + j] - z : wb_format_weight_value(f, w[col * k + j])) *
                            stored_value(f->ws, wscale, si);
                mag += fabs(half_to_double(ab, a[row * k + j]) * wv);
            }
            double o = half_to_double(ob, out[row * n + col]);
            double tol = fabs(r) * (ob ? 0x1p-8 : 0x1p-11) + mag * 0x1p-20 + 0x1p-24;
            if (!ob && fabs(r) - tol > 65504) { /* past the f16 range (int8 x f16 scales over long K): saturated */
                CHECK(fabs(o) >= 65504 && (o > 0) == (r > 0), "%s %s [%s]: out[%lld][%lld] = %g, reference %g past "
                      "the f16 range", spec, wb_arch_name(arch), conf, (long long)row, (long long)col, o, r);
                continue;
            }
            CHECK(isfinite(o) && fabs(o - r) <= tol,
                  "%s %s [%s] M=%lld K=%lld (WB_SEED=%llu): out[%lld][%lld] = %.9g (0x%04x), reference %.9g "
                  "(bound %g)", spec, wb_arch_name(arch), conf, (long long)m, (long long)k, (unsigned long long)seed,
                  (long long)row, (long long)col, o, out[row * n + col], r, tol);
        }
    wb_packed_free(&p);
    free(w), free(wscale), free(wzero), free(a), free(bias), free(out), free(ref);
    wb_kernel_destroy(b.kern);
}

/* The heuristic's kernels for decode and prefill shapes: split K (s32 reduction), several m-tiles,
 * tails past M; m16n8k32 with cp.async (sm_80, sm_90a) and m8n8k16 with plain loads (sm_75). On sm_90a
 * mma.sync is forced (above M = 64 the heuristic picks wgmma: w8a8_wgmma_kernel_matches_reference). */
START_TEST(w8a8_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 7, 16, 37, 100, 300};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("int8", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case("int8,bias=1", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){.mma = WB_MMA_SYNC});
        run_case("int8,out=f16,bias=1", WB_ARCH_SM75, ms[i], 128, 512, (wb_config){0});
    }
    run_case("int8", WB_ARCH_SM100A, 1, 256, 4096, (wb_config){0}); /* the widest split K */
}
END_TEST

/* The wgmma kernels of sm_90a (M > 64 for s8; every M for fp8): k128 slices, the 128B-swizzled 8-bit
 * tile read through descriptors, the rotated loop, fp8's two-level sums; 128- and 256-token tiles,
 * tails past M. */
START_TEST(w8a8_wgmma_kernel_matches_reference)
{
    run_case("int8", WB_ARCH_SM90A, 100, 256, 1024, (wb_config){0});
    run_case("int8,out=f16,bias=1", WB_ARCH_SM90A, 300, 128, 512, (wb_config){0});
    run_case("int8", WB_ARCH_SM90A, 257, 128, 512, (wb_config){.m_tiles = 32, .warps_n = 8});
    run_case("a=s8,w=int4,ws=f32,g=0,bias=1", WB_ARCH_SM90A, 100, 128, 1024, (wb_config){0});
    run_case("fp8", WB_ARCH_SM90A, 1, 128, 1024, (wb_config){0});
    run_case("fp8,out=f16,bias=1", WB_ARCH_SM90A, 100, 128, 512, (wb_config){0});
    run_case("a=e5m2,w=e4m3,ws=f32,g=0", WB_ARCH_SM90A, 16, 256, 512, (wb_config){0});
    /* an odd number of k128 tiles: K ends after the first half of the two-tile loop */
    run_case("fp8", WB_ARCH_SM90A, 100, 128, 384, (wb_config){0});
    /* cp.async at 16 token tiles, K of 5 tiles and of 4 */
    run_case("a=e5m2,w=e4m3,ws=f32,g=0,bias=1", WB_ARCH_SM90A, 130, 256, 640,
             (wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_CP_ASYNC, .m_tiles = 16, .warps_n = 8});
    run_case("fp8", WB_ARCH_SM90A, 130, 256, 512,
             (wb_config){.mma = WB_MMA_WGMMA, .load = WB_LOAD_CP_ASYNC, .m_tiles = 16, .warps_n = 8});
    run_case("int8,bias=1", WB_ARCH_SM90A, 100, 128, 640, (wb_config){0});
    run_case("a=e4m3,w=int4,ws=f32,g=0", WB_ARCH_SM90A, 70, 128, 128, (wb_config){0});
}
END_TEST

/* Integer weights with f32 scales per group of 128 or 256 along K (w4a8-int8 and its int8 sibling):
 * each slice's exact s32 product times its group's scale, into f32 sums; split K, the m8n8k16 shape,
 * and wgmma. */
START_TEST(w8a8_groups_match_reference)
{
    static const int64_t ms[] = {1, 16, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("w4a8-int8", WB_ARCH_SM80, ms[i], 128, 1024, (wb_config){0});
        run_case("a=s8,w=int8,ws=f32,g=256,out=f16,bias=1", WB_ARCH_SM75, ms[i], 128, 1024, (wb_config){0});
        run_case("w4a8-int8,bias=1", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
    }
    run_case("a=s8,w=int8,ws=f32,g=128", WB_ARCH_SM89, 7, 128, 2048,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
}
END_TEST

/* W4A8 (s8 x int4): the int4 words widened to s8 in registers, then the same kernel, bit for bit. */
START_TEST(w4a8_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 16, 37, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case("a=s8,w=int4,ws=f32,g=0,bias=1", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){.mma = WB_MMA_SYNC});
        run_case("a=s8,w=int4,ws=f32,g=0,out=f16", WB_ARCH_SM75, ms[i], 128, 512, (wb_config){0});
    }
    run_case("a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM89, 7, 256, 1024,
             (wb_config){.m_tiles = 1, .warps_n = 2, .warps_k = 8, .stages = 2});
}
END_TEST

/* W4A8 with fp8 activations (w4a8-fp8 and per channel): int4 words widened to the e4m3 codes of
 * n x 2^-9 (subnormals and 2^-6), the fp8 MMA, x 2^9 after K; mma.sync on sm_89 / sm_120a (split K,
 * groups), wgmma on sm_90a at every M (two-level sums, group scales at each slice's promote). */
START_TEST(w4a8_fp8_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 16, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("w4a8-fp8", WB_ARCH_SM89, ms[i], 128, 1024, (wb_config){0});
        run_case("a=e4m3,w=int4,ws=f32,g=0,out=f16,bias=1", WB_ARCH_SM120A, ms[i], 128, 512, (wb_config){0});
        run_case("w4a8-fp8,bias=1", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
        run_case("a=e4m3,w=int4,ws=f32,g=0", WB_ARCH_SM90A, ms[i], 256, 512, (wb_config){0});
    }
    run_case("a=e5m2,w=int4,ws=f32,g=256,out=f16", WB_ARCH_SM89, 7, 128, 2048,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
    run_case("a=e5m2,w=int4,ws=f32,g=0", WB_ARCH_SM90A, 37, 128, 512, (wb_config){0});
}
END_TEST

/* W4A8 with e2m1 weights: to s8 (2v, x 1/2 after K: bit for bit the exact sum) and to e4m3 (the code
 * of 2v x 2^-9, x 2^8 after K), through the prmt table; mma.sync on every target that has the
 * activation type's MMA, wgmma on sm_90a (the unrolled loop), groups of 128. */
START_TEST(w4a8_e2m1_matches_reference)
{
    static const int64_t ms[] = {1, 16, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("a=s8,w=e2m1,ws=f32,g=0", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case("a=s8,w=e2m1,ws=f32,g=0,out=f16,bias=1", WB_ARCH_SM75, ms[i], 128, 512, (wb_config){0});
        run_case("a=s8,w=e2m1,ws=f32,g=0", WB_ARCH_SM90A, ms[i], 128, 640, (wb_config){0});
        run_case("a=e4m3,w=e2m1,ws=f32,g=0", WB_ARCH_SM89, ms[i], 128, 512, (wb_config){0});
        run_case("a=e4m3,w=e2m1,ws=f32,g=128,bias=1", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
        run_case("a=e5m2,w=e2m1,ws=f32,g=0,out=f16", WB_ARCH_SM120A, ms[i], 128, 512, (wb_config){0});
    }
    run_case("a=s8,w=e2m1,ws=f32,g=256", WB_ARCH_SM86, 7, 128, 1024,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
}
END_TEST

/* Scales per group of K on the activations (ag) and per block of channels x K on the weights (gn x g):
 * fp8-block (128 x 128 blocks, 1 x 128 token groups) and its relatives, each slice's product scaled by
 * its token's and its channel's factors; mma.sync (split K) and wgmma (tails past M, where the token
 * scales of absent rows must not be read). */
START_TEST(w8a8_act_groups_match_reference)
{
    static const int64_t ms[] = {1, 16, 37};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("fp8-block", WB_ARCH_SM89, ms[i], 256, 1024, (wb_config){0});
        run_case("fp8-block,out=f16,bias=1", WB_ARCH_SM90A, ms[i], 256, 1024, (wb_config){0});
        run_case("a=e4m3,ag=256,w=int4,ws=f32,g=128,gn=64", WB_ARCH_SM120A, ms[i], 128, 1024, (wb_config){0});
        run_case("a=s8,ag=128,w=int8,ws=f32,g=0", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){0});
    }
    run_case("fp8-block", WB_ARCH_SM90A, 100, 256, 512, (wb_config){0});
    run_case("a=s8,ag=128,w=int4,ws=f32,g=256,gn=32", WB_ARCH_SM90A, 100, 128, 512, (wb_config){0});
    run_case("a=e5m2,ag=128,w=e4m3,ws=f32,g=0", WB_ARCH_SM89, 7, 128, 1024,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
}
END_TEST

/* Forced shapes: every m_tiles, warps_k 1 to 8, two to four stages, plain loads; batch-invariant. */
START_TEST(w8a8_kernel_forced_configs)
{
    static const wb_config cfgs[] = {
        {.m_tiles = 1, .warps_n = 2, .warps_k = 8, .stages = 2},
        {.m_tiles = 2, .warps_n = 1, .warps_k = 4, .stages = 3},
        {.m_tiles = 4, .warps_n = 2, .warps_k = 2, .stages = 4},
        {.m_tiles = 8, .warps_n = 4, .warps_k = 1, .stages = 2},
    };
    run_case("int8,bias=1", WB_ARCH_SM89, 45, 128, 1024, (wb_config){.batch_invariant = 1});
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        run_case("int8", WB_ARCH_SM120A, 45, 128, 1024, cfgs[i]);
        wb_config ldg = cfgs[i];
        ldg.stages = 1, ldg.load = WB_LOAD_LDG;
        if (ldg.m_tiles <= 4)
            run_case("int8,out=f16", WB_ARCH_SM75, 45, 128, 1024, ldg);
    }
}
END_TEST

/* fp8 W8A8 on sm_89 and sm_120a: every pair of e4m3/e5m2, both outputs, a bias; the heuristic's
 * kernels (split K up to 16, several m-tiles, tails past M) and forced shapes. */
START_TEST(fp8_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 7, 37, 300};
    static const char *const specs[] = {"fp8", "a=e4m3,w=e5m2,ws=f32,g=0,out=f16,bias=1",
                                        "a=e5m2,w=e4m3,ws=f32,g=0,bias=1", "a=e5m2,w=e5m2,ws=f32,g=0,out=f16"};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++)
            run_case(specs[s], (i + s) % 2 ? WB_ARCH_SM120A : WB_ARCH_SM89, ms[i], 128, 512, (wb_config){0});
    run_case("fp8", WB_ARCH_SM89, 1, 256, 4096, (wb_config){0}); /* the widest split K */
    static const wb_config cfgs[] = {
        {.m_tiles = 1, .warps_n = 2, .warps_k = 8, .stages = 2},
        {.m_tiles = 8, .warps_n = 4, .warps_k = 1, .stages = 3},
        {.m_tiles = 4, .warps_n = 2, .warps_k = 2, .stages = 4, .batch_invariant = 0},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
        run_case("fp8,out=f16,bias=1", WB_ARCH_SM120A, 45, 128, 1024, cfgs[i]);
    run_case("fp8,bias=1", WB_ARCH_SM89, 45, 128, 1024, (wb_config){.batch_invariant = 1});
}
END_TEST

/* W4A4 (s4 x int4): the native s4 MMA (m16n8k64 on sm_80..sm_89, two m8n8k32 per k32 step on sm_75)
 * and both operands widened to s8 (sm_90a and the Blackwells, whose s4 MMA is emulated); split K,
 * odd and even m-tile counts (ldmatrix .x2 and .x4), tails past M, group scales of weights and
 * activations, plain loads; bit for bit where no group scale rounds a slice. */
START_TEST(w4a4_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 16, 37, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("a=s4,w=int4,ws=f32,g=0", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case("a=s4,w=int4,ws=f32,g=0,bias=1", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){0});
        run_case("a=s4,w=int4,ws=f32,g=0,out=f16", WB_ARCH_SM75, ms[i], 128, 512, (wb_config){0});
        run_case("a=s4,ag=128,w=int4,ws=f32,g=256,out=f16", WB_ARCH_SM103A, ms[i], 128, 1024, (wb_config){0});
    }
    run_case("a=s4,w=int4,ws=f32,g=128,bias=1", WB_ARCH_SM89, 45, 128, 1024,
             (wb_config){.m_tiles = 4, .warps_n = 2, .warps_k = 2, .stages = 3});
    run_case("a=s4,w=int4,ws=f32,g=0", WB_ARCH_SM86, 7, 128, 2048,
             (wb_config){.m_tiles = 1, .warps_n = 1, .warps_k = 16, .stages = 2});
    run_case("a=s4,w=int4,ws=f32,g=0,out=f16", WB_ARCH_SM80, 21, 128, 512,
             (wb_config){.m_tiles = 4, .warps_n = 2, .warps_k = 1, .stages = 1, .load = WB_LOAD_LDG});
}
END_TEST

/* fp4 activations (a=e2m1): NVFP4 (e4m3 block scales of 16, both tensor scales; f16 m16n8k16) on
 * sm_80, sm_90a and sm_120a (the hardware e2m1 conversion of the weights), with a bias and f16 output;
 * MX (e8m0 scales of 32; bf16 m16n8k16) on sm_90a and sm_100a; f16 m16n8k8 with plain loads on sm_75;
 * per-token scales with int4 weights per group of 128 (the slice's product scaled in f32) and groups of
 * 64; M = 1, 7, 16, 37 (tails past M, several m-tiles); then forced shapes: m_tiles 1, 2, 4, warps_k 1
 * to 8, two to four stages, plain loads, batch-invariant. */
START_TEST(fp4_acts_kernel_matches_reference)
{
    static const int64_t ms[] = {1, 7, 16, 37};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case_fp4("nvfp4", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
        run_case_fp4("nvfp4", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("nvfp4", WB_ARCH_SM120A, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM89, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, ms[i], 128, 1024, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM100A, ms[i], 128, 512,
                     (wb_config){0});
        run_case_fp4("a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16,out=f16", WB_ARCH_SM75, ms[i], 128, 512,
                     (wb_config){0});
        run_case_fp4("a=e2m1,ag=0,as=e4m3,w=int4,ws=f16,g=128,out=f16", WB_ARCH_SM80, ms[i], 128, 1024,
                     (wb_config){0});
        run_case_fp4("a=e2m1,ag=64,as=e4m3,w=e2m1,ws=e4m3,g=64", WB_ARCH_SM90A, ms[i], 128, 512, (wb_config){0});
        /* bf16 with e4m3 activation scales (e8m0 weight scales), and with e8m0 ones, e4m3 weight scales */
        run_case_fp4("a=e2m1,ag=16,as=e4m3,ags=1,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM80, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e4m3,g=16,wgs=1,out=f16", WB_ARCH_SM120A, ms[i], 128, 512,
                     (wb_config){0});
        /* sm_120a's block-scaled MMA: NVFP4 x NVFP4 (kind::mxf4nvf4 4X), MXFP4 x MXFP4 (kind::mxf4 2X) */
        run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM120A, ms[i], 128, 1024, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM120A, ms[i], 128, 512, (wb_config){0});
        run_case_fp4("a=e2m1,ag=32,as=e8m0,ags=1,w=e2m1,ws=e8m0,g=32,wgs=1,bias=1", WB_ARCH_SM120A, ms[i], 128, 512,
                     (wb_config){0});
    }
    static const wb_config cfgs[] = {
        {.m_tiles = 1, .warps_n = 2, .warps_k = 8, .stages = 2},
        {.m_tiles = 2, .warps_n = 1, .warps_k = 4, .stages = 3},
        {.m_tiles = 4, .warps_n = 2, .warps_k = 2, .stages = 4},
        {.m_tiles = 4, .warps_n = 4, .warps_k = 1, .stages = 2},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        run_case_fp4("nvfp4,bias=1", WB_ARCH_SM90A, 45, 128, 1024, cfgs[i]);
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM100A, 45, 128, 1024, cfgs[i]);
        run_case_fp4("a=e2m1,ag=0,as=e4m3,w=int4,ws=f16,g=128,out=f16", WB_ARCH_SM89, 45, 128, 1024, cfgs[i]);
        run_case_fp4("nvfp4", WB_ARCH_SM120A, 45, 128, 1024, cfgs[i]);
        run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM120A, 45, 128, 1024, cfgs[i]);
        wb_config ldg = cfgs[i];
        ldg.stages = 1, ldg.load = WB_LOAD_LDG;
        run_case_fp4("a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16,out=f16", WB_ARCH_SM75, 45, 128, 1024, ldg);
        run_case_fp4("nvfp4,out=f16", WB_ARCH_SM120A, 45, 128, 1024, ldg);
    }
    run_case_fp4("nvfp4", WB_ARCH_SM120A, 45, 128, 1024, (wb_config){.batch_invariant = 1});
}
END_TEST

/* fp4 activations on wgmma (sm_90a, forced: the heuristic keeps them on mma.sync): the block's 16-bit
 * tile of dequantized activations read through descriptors by m64nNk16 .f32.T.T (128B swizzle, k16
 * steps of 32 bytes, fenced for the async proxy, not rewritten while a group reads it), the weights
 * dequantized into the A registers. The heuristic's shape (32 tokens) for NVFP4 (f16) and MX (bf16,
 * e8m0 scales, a bias), tails past M; then forced ones: N = 8 to 256 tokens, two warpgroups of
 * channels, split K over 2 and 4 warpgroups, three to five stages. */
START_TEST(wgmma16_kernel_matches_reference)
{
    static const int64_t ms[] = {100, 300};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        run_case_fp4("nvfp4", WB_ARCH_SM90A, ms[i], 256, 1024, (wb_config){.mma = WB_MMA_WGMMA});
    run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM90A, 129, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA});
    run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM90A, 37, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA, .m_tiles = 1, .warps_n = 4, .warps_k = 4, .stages = 3});
    run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, 300, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA, .m_tiles = 8, .warps_n = 4, .warps_k = 2, .stages = 4});
    run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM90A, 300, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA, .m_tiles = 16, .warps_n = 8, .warps_k = 2, .stages = 4});
    run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, 300, 256, 1024,
                 (wb_config){.mma = WB_MMA_WGMMA, .m_tiles = 32, .warps_n = 8, .warps_k = 1, .stages = 5});
}
END_TEST

/* tcgen05 (sm_100a, sm_103a; --mma tcgen05): weight-only kernels on kind::f16 with the sums in tensor
 * memory, the dequantized weights through swizzled shared tiles, mbarrier commits; the heuristic's
 * config and forced ones (16 to 256 tokens a block, 3 to 8 stages, tails past M, one and many k tiles);
 * W8A8 and W4A8 on kind::i8 and kind::f8f6f4; fp4 activations on kind::f16. */
typedef struct tc_case {
    const char *spec;
    wb_arch arch;
    int64_t m, n, k;
    wb_config cfg;
} tc_case;

START_TEST(tcgen05_kernel_matches_reference)
{
    static const tc_case cases[] = {
        {"w4a16", WB_ARCH_SM100A, 100, 256, 1024, {.mma = WB_MMA_TCGEN05}},
        {"w4a16,bias=1", WB_ARCH_SM103A, 5, 128, 128, {.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 3}},
        {"a=f16,w=int4,ws=f16,g=64", WB_ARCH_SM100A, 16, 128, 64, {.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 3}},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", WB_ARCH_SM103A, 37, 256, 512,
         {.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 3}},
        {"a=f16,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM100A, 300, 128, 512, {.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4}},
        {"a=f16,w=int8,ws=f16,g=0,bias=1", WB_ARCH_SM103A, 20, 128, 1024, {.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 8}},
        {"a=bf16,w=int3,ws=f32,g=128", WB_ARCH_SM100A, 64, 128, 768, {.mma = WB_MMA_TCGEN05, .m_tiles = 4, .stages = 5}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case_a16(cases[i].spec, cases[i].arch, cases[i].m, cases[i].n, cases[i].k, cases[i].cfg);
    /* W8A8 on kind::i8 (sm_100a: exact s32 sums) and kind::f8f6f4 (both targets), W4A8 widened to s8 and
     * e4m3: k128 tiles of 8-bit codes */
    run_case("int8", WB_ARCH_SM100A, 100, 256, 1024, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case("int8,bias=1,out=f16", WB_ARCH_SM100A, 7, 128, 128, (wb_config){.mma = WB_MMA_TCGEN05, .stages = 3});
    run_case("fp8", WB_ARCH_SM103A, 300, 128, 512, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4});
    run_case("a=e5m2,w=e4m3,ws=f32,g=0,bias=1", WB_ARCH_SM100A, 37, 128, 256,
             (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 5});
    run_case("a=e4m3,w=int4,ws=f32,g=0", WB_ARCH_SM100A, 64, 128, 512, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case("a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM100A, 20, 128, 384, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 2});
    /* sm_103a (no kind::i8): s8 x s8 and W4A8 s8 widened exactly to f16 on kind::f16, two k64 halves a
     * tile; the f32 sums of integers stay exact here, so the output is checked bit for bit */
    run_case("int8", WB_ARCH_SM103A, 100, 256, 1024, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case("int8,bias=1,out=f16", WB_ARCH_SM103A, 7, 128, 128, (wb_config){.mma = WB_MMA_TCGEN05, .stages = 3});
    run_case("int8", WB_ARCH_SM103A, 130, 128, 2048, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 16, .stages = 3});
    run_case("a=s8,w=int4,ws=f32,g=0", WB_ARCH_SM103A, 37, 128, 384, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 8});
    /* W8A8 with scales per group along K (fp8-block, W4A8 in groups, token groups): each tile's product
     * in its own TMEM buffer, scaled into f32 sums in registers two tiles later; one tile, two, many */
    run_case("fp8-block", WB_ARCH_SM100A, 100, 256, 1024, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case("fp8-block,out=f16,bias=1", WB_ARCH_SM103A, 37, 128, 128, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 3});
    run_case("w4a8-fp8", WB_ARCH_SM103A, 130, 128, 256, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 16, .stages = 3});
    run_case("w4a8-int8", WB_ARCH_SM100A, 20, 128, 640, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 2});
    run_case("w4a8-int8", WB_ARCH_SM103A, 7, 128, 384, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 4});
    run_case("a=s8,ag=128,w=int8,ws=f32,g=0,bias=1", WB_ARCH_SM100A, 64, 128, 512, (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 4});
    /* fp4 activations made a 16-bit tile by the block (lower_act4.c), then kind::f16; tensor scales */
    run_case_fp4("nvfp4", WB_ARCH_SM100A, 100, 256, 512, (wb_config){.mma = WB_MMA_TCGEN05});
    run_case_fp4("nvfp4,out=f16,bias=1", WB_ARCH_SM103A, 37, 128, 256,
                 (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 3});
    run_case_fp4("a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM100A, 129, 128, 512,
                 (wb_config){.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4});
}
END_TEST

/* Weight-only kernels on mma.sync with k_slices 1, 2 and 4 (a warp takes 2 or 4 k64 slices of each
 * stage: the K loop's body lowered once per slice, fragment addresses a slice apart), split K over
 * warps, several m-tiles, tails past M; int4 and int2 per group of 128 (the slice's product scaled in
 * f32), uint3 and uint4 with integer zero points per group of 64, int8 per channel (bf16), e2m1 with
 * e8m0 scales per 32, uint4 and int4 per group of 32 (one f32 product per group), plain loads, and the
 * most copies per thread that legalize admits. */
START_TEST(a16_kernel_k_slices)
{
    static const struct { const char *spec; wb_arch arch; int64_t m, n, k; wb_config c; } cases[] = {
        {"w4a16", WB_ARCH_SM90A, 1, 64, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 2, .warps_k = 4, .k_slices = 2, .stages = 3}},
        {"w4a16", WB_ARCH_SM90A, 1, 64, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 4, .stages = 4}},
        {"w4a16", WB_ARCH_SM90A, 1, 64, 2048, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 8, .k_slices = 1, .stages = 2}},
        {"a=f16,w=int2,ws=f16,g=128,bias=1", WB_ARCH_SM80, 13, 32, 1024, {.m_tiles = 2, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 2}},
        {"a=f16,w=uint3,ws=f16,g=64,zp=int,out=f16", WB_ARCH_SM90A, 3, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 2, .warps_k = 2, .k_slices = 4, .stages = 3}},
        {"a=f16,w=uint4,ws=f16,g=64,zp=int", WB_ARCH_SM86, 37, 32, 1024, {.m_tiles = 4, .warps_n = 1, .warps_k = 1, .k_slices = 2, .stages = 4}},
        {"a=bf16,w=int8,ws=bf16,g=0", WB_ARCH_SM90A, 9, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 2, .warps_n = 2, .warps_k = 2, .k_slices = 2, .stages = 2}},
        {"a=f16,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, 1, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 4, .k_slices = 2, .stages = 3}},
        {"w4a16", WB_ARCH_SM75, 5, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 1, .load = WB_LOAD_LDG}},
        /* groups of 32 at one m-tile: one f32 product per group (mma_scaled), zero points per group */
        {"a=f16,w=uint4,ws=f16,g=32,zp=int", WB_ARCH_SM80, 3, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 2}},
        {"a=f16,w=int4,ws=bf16,g=32,out=f16", WB_ARCH_SM90A, 1, 64, 2048, {0}},
        /* codes the raw rule once took and the magic rule has again: unsigned, 1-bit, per channel,
         * m16n8k8 (sm_75) */
        {"a=f16,w=uint2,ws=f16,g=64", WB_ARCH_SM90A, 1, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 3}},
        {"a=f16,w=int1,ws=f16,g=128,bias=1", WB_ARCH_SM86, 3, 32, 1024, {.m_tiles = 1, .warps_n = 2, .warps_k = 2, .k_slices = 2, .stages = 2}},
        {"a=f16,w=int4,ws=f16,g=0", WB_ARCH_SM80, 11, 32, 1024, {.m_tiles = 2, .warps_n = 1, .warps_k = 2, .k_slices = 1, .stages = 2}},
        {"a=f16,w=int2,ws=f16,g=128", WB_ARCH_SM75, 2, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 1, .load = WB_LOAD_LDG}},
        /* the raw rule (f16, 3-bit codes, no zero record, one token tile): slices paired in groups of
         * 128 and per channel, the bias MMA (signed), none (unsigned), m16n8k8 (sm_75), groups of 64 */
        {"a=f16,w=int3,ws=f16,g=128", WB_ARCH_SM90A, 1, 32, 1024, {.mma = WB_MMA_SYNC, .m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 3}},
        {"a=f16,w=uint3,ws=f32,g=0,bias=1", WB_ARCH_SM80, 5, 32, 1024, {.m_tiles = 1, .warps_n = 2, .warps_k = 1, .k_slices = 2, .stages = 2}},
        {"a=f16,w=int3,ws=f16,g=64", WB_ARCH_SM75, 3, 32, 1024, {.m_tiles = 1, .warps_n = 1, .warps_k = 2, .k_slices = 2, .stages = 1, .load = WB_LOAD_LDG}},
        /* codes of two and three planes, and 3-bit codes at two token tiles (the magic rule) */
        {"a=f16,w=int3,ws=f16,g=128", WB_ARCH_SM86, 13, 32, 1024, {.m_tiles = 2, .warps_n = 1, .warps_k = 2, .k_slices = 1, .stages = 2}},
        {"a=f16,w=uint6,ws=f16,g=64", WB_ARCH_SM80, 5, 32, 1024, {.m_tiles = 1, .warps_n = 2, .warps_k = 1, .k_slices = 2, .stages = 2}},
        {"a=f16,w=int8,ws=f32,g=0", WB_ARCH_SM89, 9, 32, 1024, {.m_tiles = 2, .warps_n = 1, .warps_k = 2, .k_slices = 1, .stages = 2}},
        /* the most copies a thread makes: 64 tokens x 2 slices x 8 pieces of activations over 32 threads */
        {"w4a16", WB_ARCH_SM80, 64, 32, 1024, {.m_tiles = 8, .warps_n = 1, .warps_k = 1, .k_slices = 2, .stages = 2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case_a16(cases[i].spec, cases[i].arch, cases[i].m, cases[i].n, cases[i].k, cases[i].c);
}
END_TEST

/* --load tma on sm_90a (wgmma): the warp-specialized pipeline (the consumer warpgroups, then a producer
 * warpgroup whose first warp issues per stage a TMA box of activations and cp.async.bulk copies of the
 * weights and scale records, counted on the stage's full mbarrier; each consumer warp releases the
 * stage on its empty one). The fake tensor map is the runtime's (run_grid): 16-bit activations, or
 * 8-bit codes (boxes of 128 a row: fp8 and int8). 64- and 128-token tiles, two warpgroups of channels,
 * three and four stages, tails past M (rows the TMA fills with zeros), f16 and bf16 activations,
 * per-group and per-channel scales, a bias; more token tiles than a raster group, and fewer. Any read
 * of a stage before its full phase was seen, a copy
 * into a chunk a wgmma still reads or a thread read with no release since, or a deadlock between
 * producer and consumers fails the case. */
START_TEST(tma_kernel_matches_reference)
{
    static const struct { const char *spec; int64_t m, k; int mt, stages, persistent; } cases[] = {
        {"w4a16", 100, 1024, 8, 3, 0},
        {"w4a16", 300, 512, 16, 4, 0},
        {"a=bf16,w=int4,ws=bf16,g=128,bias=1", 100, 512, 16, 3, 0},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int", 300, 1024, 8, 4, 0},
        {"a=f16,w=int8,ws=f16,g=0,out=f16", 300, 512, 16, 3, 0},
        {"fp8", 100, 1024, 8, 3, 0},
        {"fp8,out=f16,bias=1", 300, 512, 16, 4, 0},
        {"int8", 100, 512, 16, 4, 0},
        {"int8,bias=1", 300, 1024, 8, 3, 0},
        /* 10 token tiles: a group of 8 and one of 2 (raster) */
        {"w4a16", 300, 512, 4, 3, 0},
        {"fp8", 300, 512, 4, 3, 0},
        /* 3 tiles: K ends after the first half of the two-tile loop */
        {"fp8,bias=1", 100, 384, 8, 3, 0},
        /* persistent: 3 blocks walk 2 strips x 10 token tiles (w4a16, fp8 with an odd tile count) or
         * 2 x 2 (int8, uint4 with zero points), the stages running on from one output tile to the next */
        {"w4a16", 300, 512, 4, 3, 1},
        {"fp8,out=f16,bias=1", 300, 384, 4, 4, 1},
        {"int8", 100, 512, 8, 3, 1},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", 100, 1024, 8, 4, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_format f;
        ck_assert_int_eq(wb_format_parse(cases[i].spec, &f), WB_OK);
        wb_config c = {.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .warps_k = 1, .warps_n = 8, .m_tiles = cases[i].mt,
                       .stages = cases[i].stages, .persistent = cases[i].persistent, .cluster = 1};
        (f.a.bits == 16 ? run_case_a16 : run_case)(cases[i].spec, WB_ARCH_SM90A, cases[i].m, 256, cases[i].k, c);
    }
}
END_TEST

/* --cluster 2 (lower_tma.c): pairs of blocks on neighbouring channel tiles, each copying half of the
 * activation tile into both by TMA multicast, both blocks' consumer warps releasing each stage to both
 * producers, the pair meeting at barrier.cluster after setup and at the end; run two blocks at a time
 * against the float64 reference: 4 channel tiles (2 pairs, the raster order over pairs), token tiles
 * whose second half lies partly (M = 300, 100 with 64-row tiles) or wholly (M = 100 with 128-row
 * tiles: rows 64..127 of the second tile are past M, its second half wholly) past M, 16-bit and 8-bit
 * activations, fp8's two-level sums with a bias, s8, zero points. */
START_TEST(tma_cluster_matches_reference)
{
    static const struct { const char *spec; int64_t m, k; int mt, stages; } cases[] = {
        {"fp8", 300, 512, 4, 3},
        {"fp8,out=f16,bias=1", 100, 384, 8, 4},
        {"int8", 100, 512, 16, 3},
        {"w4a16", 300, 512, 4, 3},
        {"a=bf16,w=uint4,ws=bf16,g=64,zp=int,bias=1", 100, 1024, 8, 4},
        {"a=e4m3,w=int4,ws=f32,g=0", 300, 512, 8, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wb_format f;
        ck_assert_int_eq(wb_format_parse(cases[i].spec, &f), WB_OK);
        wb_config c = {.mma = WB_MMA_WGMMA, .load = WB_LOAD_TMA, .warps_k = 1, .warps_n = 8, .m_tiles = cases[i].mt,
                       .stages = cases[i].stages, .cluster = 2};
        (f.a.bits == 16 ? run_case_a16 : run_case)(cases[i].spec, WB_ARCH_SM90A, cases[i].m, 512, cases[i].k, c);
    }
}
END_TEST

/* The activation quantizer (lower/lower_quant.c) on the interpreter: f16 or bf16 activations (values of
 * three magnitudes, outliers, an all-zero row) -> codes and scales, byte for byte those of the host
 * reference (dsl/quantize.c), for s8, e4m3, e5m2 and s4, per token and per group of K, and e2m1 with
 * e8m0 or e4m3 block scales. Mutants of its round-to-odd quotient, the shuffle trees, the e2m1
 * midpoints and the e8m0 exponent fail here. */
/* One of the quantizer's kernels (global: the tensor-scale pass) into fn, on a new arena (returned). */
static wb_arena *quant_func(const wb_format *f, wb_type xt, wb_arch arch, int global, wb_func *fn)
{
    wb_arena *arena = wb_arena_create();
    ck_assert_ptr_nonnull(arena);
    wb_func_init(fn, arena);
    wb_status s = global ? wb_lower_quant_global(f, xt, arch, fn) : wb_lower_quant(f, xt, arch, fn);
    ck_assert_msg(s == WB_OK, "%s", wb_last_error());
    return arena;
}

static void run_quant(const char *spec, int bf16, wb_arch arch, int64_t m, int64_t k)
{
    wb_format f;
    ck_assert_int_eq(wb_format_parse(spec, &f), WB_OK);
    wb_type xt = {bf16 ? WB_KIND_BF16 : WB_KIND_F16, 16, 0, 0};
    wb_func fn;
    wb_arena *arena = quant_func(&f, xt, arch, 0, &fn);
    wb_launch_dims dims;
    uint32_t groups, gsize;
    ck_assert_int_eq(wb_quant_dims(&f, m, k, &dims, &groups, &gsize), WB_OK);
    uint64_t st = wbt_seed() ^ (uint64_t)(m * 977 + k + bf16);
    size_t n = (size_t)(m * k), nc = (size_t)wb_acts_bytes(&f, m, k);
    uint16_t *x = malloc(n * 2);
    float *xf = malloc(n * 4), *sc = malloc((size_t)groups * 4), *gs = malloc((size_t)groups * 4);
    uint8_t *codes = malloc(n), *packed = malloc(n), *gc = malloc(nc);
    ck_assert(x && xf && sc && gs && codes && packed && gc);
    for (size_t i = 0; i < n; i++) {
        int64_t row = (int64_t)(i / (size_t)k);
        double v = ((double)(wbt_next(&st) % 2000001) / 1e6 - 1.0) * (row % 3 == 0 ? 1e-3 : row % 3 == 1 ? 1.0 : 300.0);
        if (wbt_next(&st) % 500 == 0)
            v *= 50; /* outliers */
        if (m > 1 && row == m / 2)
            v = 0; /* scale 0, codes 0 */
        x[i] = (uint16_t)double_to_half(bf16, v);
        xf[i] = (float)half_to_double(bf16, x[i]);
    }
    if (f.ags) { /* the tensor's largest |x| at one place, five eighths in: a pass that skips a part misses it */
        double top = 0;
        for (size_t i = 0; i < n; i++)
            top = fmax(top, fabs((double)xf[i]));
        size_t at = n * 5 / 8;
        x[at] = (uint16_t)double_to_half(bf16, -2 * top);
        xf[at] = (float)half_to_double(bf16, x[at]);
    }
    float global = 0, gg = -1; /* the tensor scale (ags=1): the reference's, the kernels' (poison) */
    ck_assert_int_eq(wb_reference_quantize_acts(&f, m, k, xf, codes, sc, &global), WB_OK);
    ck_assert_int_eq(wb_pack_acts(&f, m, k, codes, packed), WB_OK);
    memset(gc, 0xA5, nc);
    memset(gs, 0xFF, (size_t)groups * 4);
    uint64_t params[NPARAMS] = {0};
    params[10] = (uintptr_t)x, params[11] = (uintptr_t)gc, params[12] = (uintptr_t)gs;
    params[13] = groups, params[14] = gsize, params[15] = (uintptr_t)&gg, params[16] = (uint64_t)(n / 4);
    gbuf bufs[] = {buf_of(x, n * 2, BUF_INPUT, "activations"), buf_of(gc, nc, BUF_OUT, "codes"),
                   buf_of(gs, (size_t)groups * wb_type_file_bytes(f.as), BUF_OUT, "scales"),
                   buf_of(&gg, 4, BUF_OUT, "tensor scale")};
    if (f.ags) { /* the tensor-scale pass first (its blocks' maxima through the scale buffer, then a reduce
                  * launch, where it takes more than one block), then the quantizer reads it */
        wb_func gfn;
        wb_arena *ga = quant_func(&f, xt, arch, 1, &gfn);
        wb_launch_dims gd;
        int blocks = wb_quant_global_blocks((int64_t)(n / 4));
        wb_quant_global_dims(&gd, blocks);
        params[17] = (uintptr_t)gs, params[18] = 0;
        run_func(&gfn, &gd, params, bufs, 4, NULL, 0);
        if (blocks > 1) {
            uint64_t rp[NPARAMS];
            memcpy(rp, params, sizeof rp);
            rp[10] = (uintptr_t)gs, rp[16] = (uint64_t)blocks, rp[18] = 1;
            wb_quant_global_dims(&gd, 1);
            run_func(&gfn, &gd, rp, bufs, 4, NULL, 0);
        }
        CHECK(!memcmp(&gg, &global, 4), "quantizer %s: tensor scale %a, reference %a (%d blocks)", spec, (double)gg,
              (double)global, blocks);
        wb_arena_destroy(ga);
    }
    run_func(&fn, &dims, params, bufs, 4, NULL, 0);
    for (size_t i = 0; i < nc; i++)
        CHECK(gc[i] == packed[i], "quantizer %s x=%s %s: code byte %zu = 0x%02x, reference 0x%02x (x = %g)", spec,
              bf16 ? "bf16" : "f16", wb_arch_name(arch), i, gc[i], packed[i], (double)xf[f.a.bits == 4 ? 2 * i : i]);
    int sb = wb_type_file_bytes(f.as); /* f32, or one byte (e8m0, e4m3 block scales) */
    for (uint32_t g = 0; g < groups; g++)
        CHECK(!memcmp((uint8_t *)gs + (size_t)g * sb, (uint8_t *)sc + (size_t)g * sb, (size_t)sb),
              "quantizer %s %s: scale %u differs from the reference's (0x%08x, 0x%08x as words)", spec,
              wb_arch_name(arch), g, sb == 4 ? (unsigned)((uint32_t *)gs)[g] : ((uint8_t *)gs)[g],
              sb == 4 ? (unsigned)((uint32_t *)sc)[g] : ((uint8_t *)sc)[g]);
    for (size_t i = (size_t)groups * sb; i < (size_t)groups * 4; i++) /* past the scales: the poison */
        CHECK(((uint8_t *)gs)[i] == 0xFF, "quantizer %s: a byte past the scales was written", spec);
    free(x), free(xf), free(sc), free(gs), free(codes), free(packed), free(gc);
    wb_arena_destroy(arena);
}

START_TEST(quantizer_matches_reference)
{
    static const struct { const char *spec; wb_arch arch; int64_t m, k; } cases[] = {
        {"int8", WB_ARCH_SM90A, 7, 1024}, {"int8,ag=128", WB_ARCH_SM80, 5, 512}, {"fp8", WB_ARCH_SM90A, 4, 512},
        {"a=e5m2,ag=256,w=e4m3,ws=f32,g=0", WB_ARCH_SM89, 3, 768}, {"w4a4-int4", WB_ARCH_SM90A, 5, 256},
        {"w4a4-int4,ag=128", WB_ARCH_SM75, 2, 384},
        /* e2m1 with block scales: MX (e8m0 per 32), NVFP4's e4m3 per 16 without the tensor scale, 64, 128 */
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM90A, 6, 512},
        {"a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16", WB_ARCH_SM90A, 5, 256},
        {"a=e2m1,ag=64,as=e8m0,w=int4,g=128", WB_ARCH_SM80, 4, 256},
        {"a=e2m1,ag=128,as=e4m3,w=e2m1,ws=e4m3,g=16", WB_ARCH_SM100A, 3, 384},
        /* and the tensor scale (ags=1): nvfp4, MX with one */
        /* one block; two (a reduce launch); five, the last one's share cut short */
        {"nvfp4", WB_ARCH_SM90A, 6, 512}, {"nvfp4", WB_ARCH_SM120A, 1, 4096}, {"nvfp4", WB_ARCH_SM100A, 9, 2048},
        {"nvfp4", WB_ARCH_SM90A, 17, 4096},
        {"a=e2m1,ag=32,as=e8m0,ags=1,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM80, 3, 256},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int bf16 = 0; bf16 < 2; bf16++)
            if (!bf16 || cases[i].arch != WB_ARCH_SM75)
                run_quant(cases[i].spec, bf16, cases[i].arch, cases[i].m, cases[i].k);
}
END_TEST

/* tcgen05 block-scaled fp4 (sm_100a, sm_103a; --mma tcgen05): NVFP4 x NVFP4 on kind::mxf4nvf4
 * .scale_vec::4X and MXFP4 x MXFP4 on kind::mxf4 .scale_vec::2X, the e2m1 codes of both operands through
 * 32B-swizzled shared tiles, the scale factors copied into tensor memory by tcgen05.cp (modelled from the
 * PTX ISA: duplicated to the four lane quarters, row i at lane i % 32 and column i / 32), negative e4m3
 * scales of either operand (their signs onto the codes), tensor scales and a bias. The heuristic's
 * config and forced ones: 16 to 256 tokens a block (two SFB chunks at 256), tails past M, one and many
 * k tiles, 3 to 8 stages, both targets. */
START_TEST(tcgen05_block_scaled_matches_reference)
{
    static const tc_case cases[] = {
        {"nvfp4", WB_ARCH_SM100A, 100, 256, 512, {.mma = WB_MMA_TCGEN05}},
        {"nvfp4,out=f16,bias=1", WB_ARCH_SM103A, 37, 128, 256, {.mma = WB_MMA_TCGEN05, .m_tiles = 8, .stages = 3}},
        {"nvfp4", WB_ARCH_SM103A, 5, 128, 64, {.mma = WB_MMA_TCGEN05, .m_tiles = 2, .stages = 3}},
        {"nvfp4,bias=1", WB_ARCH_SM100A, 300, 128, 1024, {.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4}},
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32,bias=1", WB_ARCH_SM100A, 129, 128, 512,
         {.mma = WB_MMA_TCGEN05, .m_tiles = 32, .stages = 4}},
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM103A, 20, 256, 1024, {.mma = WB_MMA_TCGEN05}},
        {"a=e2m1,ag=32,as=e8m0,ags=1,w=e2m1,ws=e8m0,g=32,wgs=1,out=f16", WB_ARCH_SM103A, 70, 128, 128,
         {.mma = WB_MMA_TCGEN05, .m_tiles = 16, .stages = 5}},
        {"a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32", WB_ARCH_SM100A, 16, 128, 64, {.mma = WB_MMA_TCGEN05, .m_tiles = 2,
                                                                                   .stages = 3}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case_fp4(cases[i].spec, cases[i].arch, cases[i].m, cases[i].n, cases[i].k, cases[i].cfg);
}
END_TEST

/* Thread block clusters (cfg.cluster 2: TMA multicast of the activations), before the kernel that uses
 * them: a hand-built kernel of two-block clusters, run by the interpreter as the pairs of a grid of 4 x
 * 2 blocks of 64 threads. In each block thread 0 initializes a full and an empty mbarrier per stage
 * (two stages of a 16-row box of 128 bytes), then after a cluster barrier (the peer's mbarriers must
 * be initialized before a multicast completes on them) produces: per use, it posts the whole box's
 * bytes on its full barrier and multicasts its half of the box (rows rank * 8.. of the cluster's box,
 * 1024 bytes at offset rank * 1024 of the stage) into both blocks; from the third use on it first waits
 * until both blocks' consumers have released the stage (its empty barrier). Warp 1 consumes: per use it
 * waits on its own block's full barrier, copies the stage (the swizzled image a plain TMA of the whole
 * box would have made) to its block's part of the output, meets at bar.warp.sync, and lane 0 releases
 * the stage on its own empty barrier and, through mapa, on the peer's. A cluster barrier holds both
 * blocks until neither can touch the other. mc_kernel names the mutations. */
typedef struct mc_kernel {
    int uses;           /* boxes each block reads: 1, or 4 through the two stages in turn */
    int init_sync;      /* a cluster barrier between mbarrier.init and the first multicast */
    int init_arrive;    /* that barrier's arrive (0: its wait has none before it) */
    int end_sync;       /* a cluster barrier before the end */
    int mapa_rank;      /* the rank a consumer maps the peer's empty barrier to (-1: the peer's) */
    int mask;           /* the multicast's ctaMask */
    int remote_release; /* 1: each consumer warp releases a stage on both blocks' empty barriers (each
                           expects two arrivals); 0: CTA 1's on its own alone (CTA 0's expects one) */
    int gx;             /* the grid's blocks along x */
} mc_kernel;

enum { MC_THREADS = 64, MC_STAGE = 2048, MC_HALF = 1024, MC_MBAR = 2 * MC_STAGE, MC_SMEM = MC_MBAR + 32, MC_GY = 2 };

static wb_reg mc_special(wb_func *f, const char *name)
{
    wb_reg r = wb_new_reg(f, WB_RC_B32);
    wb_emit(f, WB_OP_SPECIAL, NULL, 2, wb_r(r), wb_text(name));
    return r;
}

/* d = a op b in a new register of class rc */
static wb_reg mc_op(wb_func *f, wb_op op, const char *ty, wb_rc rc, wb_opnd a, wb_opnd b)
{
    wb_reg r = wb_new_reg(f, rc);
    wb_emit(f, op, ty, 3, wb_r(r), a, b);
    return r;
}

static wb_reg mc_mad(wb_func *f, wb_opnd a, wb_opnd b, wb_opnd c)
{
    wb_reg r = wb_new_reg(f, WB_RC_B32);
    wb_emit(f, WB_OP_MAD_LO, "u32", 4, wb_r(r), a, b, c);
    return r;
}

/* Spin until the phase of parity `parity` of the mbarrier at mb has completed. */
static void mc_wait(wb_func *f, wb_reg mb, int parity)
{
    const char *spin = wb_new_label(f, "spin");
    wb_reg done = wb_new_reg(f, WB_RC_PRED);
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(spin));
    wb_emit(f, WB_OP_MBAR_TRY_WAIT, NULL, 3, wb_r(done), wb_r(mb), wb_imm(parity));
    wb_emit(f, WB_OP_BRA_IFNOT, NULL, 2, wb_r(done), wb_text(spin));
}

static void mc_cluster_sync(wb_func *f, int arrive)
{
    if (arrive)
        wb_emit(f, WB_OP_CLUSTER_ARRIVE, NULL, 0);
    wb_emit(f, WB_OP_CLUSTER_WAIT, NULL, 0);
}

/* Use it of the box: its stage (two stages in turn, one when there is a single use) and its use of
 * that stage. */
static int mc_stage(const mc_kernel *k, int it) { return k->uses > 1 ? it % 2 : 0; }
static int mc_use(const mc_kernel *k, int it) { return k->uses > 1 ? it / 2 : 0; }

/* Thread 0: the copies (see above). */
static void mc_produce(const mc_kernel *k, wb_func *f, wb_reg smem, wb_reg tmap, const wb_reg *full,
                       const wb_reg *empty)
{
    wb_reg cx = mc_special(f, "%ctaid.x"), cy = mc_special(f, "%ctaid.y"), ncx = mc_special(f, "%nctaid.x");
    wb_reg rank = mc_special(f, "%cluster_ctarank"), nrank = mc_special(f, "%cluster_nctarank");
    wb_reg bytes = mc_op(f, WB_OP_MUL_LO, "u32", WB_RC_B32, wb_r(nrank), wb_imm(MC_HALF));
    /* the cluster's index in the grid: (x / 2, y) */
    wb_reg ci = mc_mad(f, wb_r(cy), wb_r(mc_op(f, WB_OP_SHR, "u32", WB_RC_B32, wb_r(ncx), wb_imm(1))),
                       wb_r(mc_op(f, WB_OP_SHR, "u32", WB_RC_B32, wb_r(cx), wb_imm(1))));
    wb_reg row0 = mc_mad(f, wb_r(ci), wb_imm(16 * k->uses), wb_r(mc_op(f, WB_OP_SHL, "u32", WB_RC_B32, wb_r(rank),
                                                                        wb_imm(3))));
    wb_reg half = mc_mad(f, wb_r(rank), wb_imm(MC_HALF), wb_r(smem));
    for (int it = 0; it < k->uses; it++) {
        int s = mc_stage(k, it), u = mc_use(k, it);
        if (u > 0) /* both blocks' consumers are done with use u - 1 */
            mc_wait(f, empty[s], (u - 1) & 1);
        wb_emit(f, WB_OP_MBAR_EXPECT_TX, NULL, 2, wb_r(full[s]), wb_r(bytes));
        wb_reg row = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(row0), wb_imm(16 * it));
        wb_reg dst = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(half), wb_imm(s * MC_STAGE));
        wb_emit(f, WB_OP_TMA_LOAD_2D_MC, NULL, 6, wb_r(dst), wb_r(tmap), wb_imm(0), wb_r(row), wb_r(full[s]),
                wb_imm(k->mask));
    }
}

/* Warp 1: the reads, the output, the releases (see above). */
static void mc_consume(const mc_kernel *k, wb_func *f, wb_reg tid, wb_reg smem, const wb_reg *empty,
                       const wb_reg *full)
{
    wb_reg cx = mc_special(f, "%ctaid.x"), cy = mc_special(f, "%ctaid.y"), ncx = mc_special(f, "%nctaid.x");
    wb_reg rank = mc_special(f, "%cluster_ctarank");
    wb_reg lane = mc_op(f, WB_OP_SUB, "u32", WB_RC_B32, wb_r(tid), wb_imm(32));
    wb_reg lead = mc_op(f, WB_OP_SETP_EQ, "u32", WB_RC_PRED, wb_r(lane), wb_imm(0)), remote = lead;
    if (!k->remote_release) /* CTA 0's warp alone releases remotely */
        remote = mc_op(f, WB_OP_AND, "pred", WB_RC_PRED, wb_r(lead),
                       wb_r(mc_op(f, WB_OP_SETP_EQ, "u32", WB_RC_PRED, wb_r(rank), wb_imm(0))));
    wb_reg peer = k->mapa_rank < 0 ? mc_op(f, WB_OP_XOR, "b32", WB_RC_B32, wb_r(rank), wb_imm(1))
                                   : mc_op(f, WB_OP_MOV, "u32", WB_RC_B32, wb_imm(k->mapa_rank), wb_imm(0));
    wb_reg sl = mc_mad(f, wb_r(lane), wb_imm(4), wb_r(smem));
    wb_reg po = wb_new_reg(f, WB_RC_B64), out = wb_new_reg(f, WB_RC_B64);
    wb_emit(f, WB_OP_LD_PARAM, "u64", 2, wb_r(po), wb_text("p_out"));
    wb_emit(f, WB_OP_CVTA_GLOBAL, NULL, 2, wb_r(out), wb_r(po));
    wb_reg cta = mc_mad(f, wb_r(cy), wb_r(ncx), wb_r(cx));
    wb_reg ob = mc_op(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(out),
                      wb_r(mc_op(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(cta), wb_imm(k->uses * MC_STAGE))));
    ob = mc_op(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(ob),
               wb_r(mc_op(f, WB_OP_MUL_WIDE, "u32", WB_RC_B64, wb_r(lane), wb_imm(4))));
    for (int it = 0; it < k->uses; it++) {
        int s = mc_stage(k, it);
        mc_wait(f, full[s], mc_use(k, it) & 1);
        for (int q = 0; q < MC_STAGE / 128; q++) {
            wb_reg v = wb_new_reg(f, WB_RC_B32);
            wb_reg at = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(sl), wb_imm(s * MC_STAGE + 128 * q));
            wb_emit(f, WB_OP_LD_SHARED, "u32", 2, wb_r(v), wb_r(at));
            wb_reg g = mc_op(f, WB_OP_ADD, "u64", WB_RC_B64, wb_r(ob), wb_imm(it * MC_STAGE + 128 * q));
            wb_emit(f, WB_OP_ST_GLOBAL, "u32", 2, wb_r(g), wb_r(v));
        }
        wb_emit(f, WB_OP_BAR_WARP_SYNC, NULL, 0);
        wb_emit(f, WB_OP_MBAR_ARRIVE, NULL, 1, wb_r(empty[s]));
        wb_guard_last(f, lead, 0);
        wb_reg there = wb_new_reg(f, WB_RC_B32);
        wb_emit(f, WB_OP_MAPA, NULL, 3, wb_r(there), wb_r(empty[s]), wb_r(peer));
        wb_emit(f, WB_OP_MBAR_ARRIVE_REMOTE, NULL, 1, wb_r(there));
        wb_guard_last(f, remote, 0);
    }
}

static void mc_build(const mc_kernel *k, wb_func *f)
{
    wb_emit(f, WB_OP_GRIDDEP_WAIT, NULL, 0);
    wb_reg tid = mc_special(f, "%tid.x"), rank = mc_special(f, "%cluster_ctarank");
    wb_reg smem = wb_new_reg(f, WB_RC_B32), tmap = wb_new_reg(f, WB_RC_B64);
    wb_emit(f, WB_OP_SMEM_BASE, NULL, 2, wb_r(smem), wb_text("smem"));
    wb_emit(f, WB_OP_CVTA_PARAM, NULL, 2, wb_r(tmap),
            wb_r(mc_op(f, WB_OP_MOV, "u64", WB_RC_B64, wb_text("p_tmap"), wb_imm(0))));
    wb_reg first = mc_op(f, WB_OP_SETP_EQ, "u32", WB_RC_PRED, wb_r(tid), wb_imm(0)), full[2], empty[2];
    wb_opnd count = k->remote_release ? wb_imm(2) : wb_r(mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(rank), wb_imm(1)));
    for (int s = 0; s < 2; s++) {
        full[s] = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(smem), wb_imm(MC_MBAR + 8 * s));
        empty[s] = mc_op(f, WB_OP_ADD, "u32", WB_RC_B32, wb_r(smem), wb_imm(MC_MBAR + 16 + 8 * s));
        wb_emit(f, WB_OP_MBAR_INIT, NULL, 2, wb_r(full[s]), wb_imm(1));
        wb_guard_last(f, first, 0);
        wb_emit(f, WB_OP_MBAR_INIT, NULL, 2, wb_r(empty[s]), count);
        wb_guard_last(f, first, 0);
    }
    wb_emit(f, WB_OP_FENCE_MBAR_INIT, NULL, 0);
    if (k->init_sync)
        mc_cluster_sync(f, k->init_arrive);
    const char *consume = wb_new_label(f, "consume"), *finish = wb_new_label(f, "finish");
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(mc_op(f, WB_OP_SETP_GE, "u32", WB_RC_PRED, wb_r(tid), wb_imm(32))),
            wb_text(consume));
    wb_emit(f, WB_OP_BRA_IF, NULL, 2, wb_r(mc_op(f, WB_OP_SETP_NE, "u32", WB_RC_PRED, wb_r(tid), wb_imm(0))),
            wb_text(finish));
    mc_produce(k, f, smem, tmap, full, empty);
    wb_emit(f, WB_OP_BRA, NULL, 1, wb_text(finish));
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(consume));
    mc_consume(k, f, tid, smem, empty, full);
    wb_emit(f, WB_OP_LABEL, NULL, 1, wb_text(finish));
    if (k->end_sync)
        mc_cluster_sync(f, 1);
    wb_emit(f, WB_OP_RET, NULL, 0);
}

/* Build the kernel, run it on a random 128-byte-wide matrix (rows for every cluster's boxes) and
 * check that each block's output holds, per use, the image of its cluster's box under the 128B
 * swizzle: byte b of chunk j of box row r at 128 r + 16 (j ^ (r % 8)) + b. */
static void mc_run(const mc_kernel *k)
{
    wb_arena *arena = wb_arena_create();
    ck_assert_ptr_nonnull(arena);
    wb_func f;
    wb_func_init(&f, arena);
    f.target = wb_target_get(WB_ARCH_SM90A);
    mc_build(k, &f);
    ck_assert(!f.oom);
    int gx = k->gx ? k->gx : 4, blocks = gx * MC_GY;
    int64_t rows = (int64_t)(gx / 2) * MC_GY * k->uses * 16;
    size_t obytes = (size_t)blocks * (size_t)k->uses * MC_STAGE;
    uint8_t *src = malloc((size_t)rows * 128), *out = malloc(obytes);
    ck_assert(src && out);
    uint64_t st = wbt_seed();
    for (int64_t i = 0; i < rows * 128; i++)
        src[i] = (uint8_t)wbt_next(&st);
    memset(out, 0xFF, obytes);
    uint64_t params[NPARAMS] = {(uintptr_t)out};
    gbuf bufs[] = {buf_of(out, obytes, BUF_OUT, "output"), buf_of(src, (size_t)rows * 128, BUF_INPUT, "source")};
    fake_tmap tm = {.base = (uintptr_t)src, .rows = rows, .cols = 128, .elem = 1, .box_rows = 8, .box_cols = 128};
    wb_launch_dims d = {{(unsigned)gx, MC_GY, 1}, {MC_THREADS, 1, 1}, MC_SMEM};
    run_func(&f, &d, params, bufs, 2, &tm, 2);
    for (int b = 0; b < blocks; b++)
        for (int it = 0; it < k->uses; it++) {
            int64_t box = (int64_t)(b / gx * (gx / 2) + b % gx / 2) * k->uses + it;
            const uint8_t *img = out + ((size_t)b * (size_t)k->uses + (size_t)it) * MC_STAGE;
            for (int r = 0; r < 16; r++)
                for (int j = 0; j < 8; j++)
                    for (int q = 0; q < 16; q++)
                        CHECK(img[128 * r + 16 * (j ^ (r & 7)) + q] == src[(box * 16 + r) * 128 + 16 * j + q],
                              "cluster kernel: block %d use %d: box row %d byte %d is 0x%02x, want 0x%02x", b, it, r,
                              16 * j + q, img[128 * r + 16 * (j ^ (r & 7)) + q],
                              src[(box * 16 + r) * 128 + 16 * j + q]);
        }
    free(src), free(out);
    wb_arena_destroy(arena);
}

/* Run fn(arg) in a child process, where it must fail in the interpreter (interp_fail) with a message
 * that holds want and want2 (when not NULL). */
static void expect_failure(void (*fn)(const void *), const void *arg, const char *what, const char *want,
                           const char *want2)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        fail_fd = fds[1];
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    char msg[4096];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof msg - 1 && (got = read(fds[0], msg + n, sizeof msg - 1 - n)) > 0)
        n += (size_t)got;
    msg[n] = 0;
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == MUTANT_FAILED,
                  "mutant %s: did not fail in the interpreter (wait status %#x) %s", what, (unsigned)status, msg);
    ck_assert_msg(strstr(msg, want) && (!want2 || strstr(msg, want2)), "mutant %s failed, but not with \"%s\"%s%s: %s",
                  what, want, want2 ? " and " : "", want2 ? want2 : "", msg);
    if (getenv("WB_SHOW_MUTANTS"))
        printf("mutant %s: %s\n", what, msg);
}

static void mc_run_any(const void *k) { mc_run(k); }

/* The hand-built cluster kernel runs (one use of a stage; four through two stages, refilled only once
 * both blocks' consumers have released them), and each of its mutants fails with its message: no
 * cluster barrier after mbarrier.init (the multicast finds the peer's mbarrier uninitialized); none
 * before the end (CTA 1 ends first here, and CTA 0's remote release arrives on its mbarrier after);
 * mapa to rank 2; a multicast mask with rank 2, or none; a mask of CTA 0 alone (both halves land there,
 * none in CTA 1, whose consumers wait for their bytes forever: the cluster is stuck); a cluster wait
 * with no arrive; an odd grid.x; and CTA 1's consumers releasing a stage to their own block alone,
 * which CTA 0's next multicast into it then overwrites: a write-after-read race, although CTA 1's own
 * producer is ordered. */
START_TEST(cluster_multicast_kernel)
{
    const mc_kernel one = {.uses = 1, .init_sync = 1, .init_arrive = 1, .end_sync = 1, .mapa_rank = -1, .mask = 3,
                           .remote_release = 1};
    mc_kernel four = one;
    four.uses = 4;
    mc_run(&one);
    mc_run(&four);
    static const struct {
        const char *what, *want, *want2;
        int uses, init_sync, init_arrive, end_sync, mapa_rank, mask, remote_release, gx;
    } mutants[] = {
        {"no cluster barrier after init", "thread 0 of CTA 0 (insn", "no mbarrier was initialized at shared 4096 of "
         "CTA 1", 1, 0, 1, 1, -1, 3, 1, 0},
        {"no cluster barrier at the end", "thread 32 of CTA 0 (insn", "an mbarrier arrival into CTA 1, whose threads "
         "have all ended", 1, 1, 1, 0, -1, 3, 1, 0},
        {"mapa rank 2", "mapa to rank 2, outside the cluster of 2 CTAs", NULL, 1, 1, 1, 1, 2, 3, 1, 0},
        {"multicast mask 5", "multicast ctaMask 0x5 names a rank outside the cluster", NULL, 1, 1, 1, 1, -1, 5, 1, 0},
        {"multicast mask 0", "multicast ctaMask 0 names no CTA", NULL, 1, 1, 1, 1, -1, 0, 1, 0},
        {"multicast to CTA 0 alone", "the cluster of blocks (0, 0) and (1, 0) is stuck", "CTA 1: 64 threads live, 0 at "
         "a barrier; warp 0: 32 lanes at insn 128 (barrier.cluster.wait); warp 1: 32 lanes at insn 56 (mbarrier spin) "
         "on mbarrier 0, parity 0: 0 phases done, 0 arrivals and 2048 bytes to come", 1, 1, 1, 1, -1, 1, 1, 0},
        {"cluster wait with no arrive", "barrier.cluster.wait with no barrier.cluster.arrive before it", NULL, 1, 1, 0,
         1, -1, 3, 1, 0},
        {"odd grid.x", "needs an even grid.x, not 3", NULL, 1, 1, 1, 1, -1, 3, 1, 3},
        {"CTA 1 releases to itself alone", "thread 0 of CTA 0's async copy (insn", "overwrites shared 0 of CTA 1, "
         "which thread 32 of CTA 1 read", 4, 1, 1, 1, -1, 3, 0, 0},
    };
    for (size_t i = 0; i < sizeof mutants / sizeof mutants[0]; i++) {
        const mc_kernel k = {mutants[i].uses, mutants[i].init_sync, mutants[i].init_arrive, mutants[i].end_sync,
                             mutants[i].mapa_rank, mutants[i].mask, mutants[i].remote_release, mutants[i].gx};
        expect_failure(mc_run_any, &k, mutants[i].what, mutants[i].want, mutants[i].want2);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("w8a8 kernel");
    TCase *t = tcase_create("w8a8 kernel");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, w8a8_kernel_matches_reference);
    tcase_add_test(t, quantizer_matches_reference);
    tcase_add_test(t, w8a8_kernel_forced_configs);
    tcase_add_test(t, w4a8_kernel_matches_reference);
    tcase_add_test(t, w8a8_wgmma_kernel_matches_reference);
    tcase_add_test(t, w8a8_groups_match_reference);
    tcase_add_test(t, fp8_kernel_matches_reference);
    tcase_add_test(t, w4a8_fp8_kernel_matches_reference);
    tcase_add_test(t, w8a8_act_groups_match_reference);
    tcase_add_test(t, w4a8_e2m1_matches_reference);
    tcase_add_test(t, w4a4_kernel_matches_reference);
    tcase_add_test(t, fp4_acts_kernel_matches_reference);
    tcase_add_test(t, wgmma16_kernel_matches_reference);
    tcase_add_test(t, a16_kernel_k_slices);
    tcase_add_test(t, tcgen05_kernel_matches_reference);
    suite_add_tcase(s, t);
    /* its own case, so that CK_RUN_CASE=tma runs the TMA pipeline alone */
    TCase *tma = tcase_create("tma");
    tcase_set_timeout(tma, 600);
    tcase_add_test(tma, tma_kernel_matches_reference);
    suite_add_tcase(s, tma);
    TCase *cl = tcase_create("cluster"); /* CK_RUN_CASE=cluster: the interpreter's thread block clusters */
    tcase_set_timeout(cl, 600);
    tcase_add_test(cl, cluster_multicast_kernel);
    tcase_add_test(cl, tma_cluster_matches_reference);
    suite_add_tcase(s, cl);
    TCase *bs = tcase_create("tcgen05 block-scaled"); /* CK_RUN_CASE="tcgen05 block-scaled" */
    tcase_set_timeout(bs, 600);
    tcase_add_test(bs, tcgen05_block_scaled_matches_reference);
    suite_add_tcase(s, bs);
    return wbt_run(s);
}
