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
 * Thread block clusters of 2 or 4 blocks along x (cfg.cluster 2 or 4, sm_90a: TMA multicast;
 * cluster_multicast_kernel): with n blocks a cluster, blocks (n i, y) .. (n i + n - 1, y) run together as
 * ranks 0 .. n - 1 (%cluster_ctarank; %cluster_nctarank n; without a cluster 0 and 1), a round of each one's
 * threads in rank order, until all have ended; a turn in which none moves is a deadlock. grid.x must be a
 * multiple of n, and each block's TMA box is its share of the tokens (runtime/layer.c's tensor map). mapa
 * models a shared::cluster address as (rank + 1) << 24 | offset (a plain shared offset means the own block).
 * cp.async.bulk.tensor .multicast::cluster writes the box at the same offset into every block of its ctaMask
 * (an immediate, or a .b16 or .b32 register), its bytes completing on the mbarrier at the same offset in
 * each; cp.async.bulk .multicast::cluster does the same with a span of global memory;
 * mbarrier.arrive.shared::cluster arrives on the block its address names; barrier.cluster.arrive / wait is a
 * split barrier over all the blocks' threads (a wait spins until every live thread of the cluster has
 * arrived as often; ended threads count as arrived). A multicast or remote arrival needs the destination's
 * mbarrier initialized (so a cluster barrier between init and the first multicast) and the destination alive
 * (so a cluster barrier before the end); a mask or mapa rank outside the cluster fails. Releases name the
 * block of their mbarrier, and a thread sees only its own block's phases: a multicast into a peer's chunk
 * needs each of the peer's readers to have released it on the issuing block's mbarrier (a remote arrival) in
 * a phase the issuing thread has seen. After a bar.warp.sync, every arrival of a lane (its block's, a
 * peer's) releases the reads of the lanes that have read nothing since the meeting.
 *
 * Bank conflicts (a performance property, not a fault: counted, not failed): each warp's first
 * execution of each shared load or store in a block (ld/st.shared, .v2, .v4; every ldmatrix) is
 * served as the hardware serves it, a phase of lanes at a time (extra_wavefronts), and the wavefronts
 * past one a phase are counted per kind (interp_shared_extra). The W8A8 tests require none of any
 * kind in their mma.sync and wgmma kernels, and none but in 4-byte accesses in their tcgen05 ones:
 * loading the 8-bit code words as they were packed before the halves were swapped (lanes 32 bytes
 * apart) gives 128 to 3072 extra and fails them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interp.h"
#include "lower/target.h"

/* Every failure the interpreter reports goes through interp_fail, so that a mutant kernel that must
 * fail can run in a child process (expect_failure) and its message be checked there: the child writes
 * it to fail_fd and exits with MUTANT_FAILED, without Check's reporting (which would fail the test). */
enum { MUTANT_FAILED = 86 };
static int fail_fd = -1;

void interp_fail(const char *file, int line, const char *fmt, ...)
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

/* SPIN: at an mbarrier.try_wait that failed; it tries again in the next round */
enum { RUN, AT_WARP, AT_BAR, AT_NBAR, SPIN, DONE };

/* MAX_MBARS: --load tma's full and empty barrier per stage (8 stages at most), tcgen05's two */
enum { MAX_MBARS = 24, TC_LANES = 128, TC_COLS = 512, MAX_TC_RECS = 4096 };

/* the most blocks a thread block cluster has (run_func: 1, 2 or 4) */
enum { MAX_CLUSTER = 4 };

/* A release by a thread: an mbarrier arrival (cta: the rank in its cluster of the block whose mbarrier
 * it is, the own one or, by a remote arrival, another's; mbar: its index there; phase: the phase it
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

/* p_tmap's value: the address of the tensor map (fake_tmap, interp.h) */
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
    /* a thread block cluster along x (cfg.cluster 2 or 4): the block's rank in it and its size (0 and 1
     * without one), its blocks by rank (cta[rank] is this one; none past csize); ended: every thread of
     * the block has ended (the blocks of a cluster take turns by rounds, so one may end before another) */
    int rank, csize;
    struct emu *cta[MAX_CLUSTER];
    int ended;
    /* bank conflicts (note_shared): per instruction its index among the per-thread shared loads and
     * stores (-1: another), and per warp and such access the addresses of its first execution in the
     * block, the lanes that have given theirs, and whether it was counted */
    int *sh_slot, nsh;
    uint32_t *sh_addr, *sh_seen;
    uint8_t *sh_done;
} emu;

/* Extra shared-memory wavefronts of each kind of access since run_func began (interp_shared_extra). */
static long sh_extra[INTERP_SH_KINDS];

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
static emu *cta_of(emu *e, int r) { return r == e->rank ? e : e->cta[r]; }

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
    if (strcmp(ty, "rn.f16x2.e4m3x2") == 0 || strcmp(ty, "rn.f16x2.e5m2x2") == 0) { /* the low byte to the low
                                                                                        half, exactly */
        wb_type t = fp8_type(ty[10] == '4' ? "e4m3.e4m3" : "e5m2.e5m2", 0);
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
                    *x = wbt_half_to_double(bf, v);
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

/* A multicast's 16-bit ctaMask operand o for thread th of e: an immediate, or a .b16 register (one that
 * mov.b32 {lo, hi} unpacked) or a .b32 one, read at its register's width (the caller checks that it
 * names at least one block and none outside the cluster). */
static uint64_t cta_mask(const emu *e, const thread *th, const wb_opnd *o)
{
    uint64_t mask = val(th, o);
    if (o->kind != WB_O_REG)
        return mask;
    int rc = e->f->reg_class[o->v];
    CHECK(rc == WB_RC_B16 || rc == WB_RC_B32, "%s (insn %d): a multicast's ctaMask in a register of class %d, "
          "neither .b16 nor .b32", who(e, e->cur).s, th->pc, rc);
    return mask & (rc == WB_RC_B16 ? 0xFFFFull : 0xFFFFFFFFull);
}

/* A multicast by thread e->cur: bytes of data land at shared offset dst in every block of the cluster
 * whose rank's bit is set in the 16-bit ctaMask operand (cta_mask), completing on the mbarrier at offset
 * at in each; each destination alive (check_alive), its mbarrier initialized (mbar_in: a peer's init
 * must be ordered before, by a cluster barrier), the mask naming at least one block and none outside
 * the cluster. */
static void multicast_land(emu *e, thread *th, const wb_opnd *mask_op, uint64_t dst, uint64_t at,
                           const uint8_t *data, int bytes)
{
    uint64_t mask = cta_mask(e, th, mask_op);
    CHECK(mask && mask >> e->csize == 0, "%s (insn %d): multicast ctaMask %#llx names %s", who(e, e->cur).s, th->pc,
          (unsigned long long)mask, mask ? "a rank outside the cluster" : "no CTA");
    for (int r = 0; r < e->csize; r++) {
        if (!(mask >> r & 1))
            continue;
        emu *d = cta_of(e, r);
        check_alive(d, e, "a multicast write");
        tma_land(d, e, dst, data, bytes, mbar_in(d, e, at));
    }
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
    multicast_land(e, th, &o[5], dst, at, tma_read_box(e, c0, c1), bytes);
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

/* cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [dst], [src],
 * size, [mbar], ctaMask by thread e->cur: the checks of run_bulk_copy (dst and mbar as multicast_offset
 * reads them: the same offset in every destination), and the bytes land at dst in every block of the
 * cluster whose rank's bit is set in the 16-bit ctaMask (cta_mask), completing on the mbarrier at mbar
 * in each, as run_tma_load's multicast does: each destination alive (check_alive), its mbarrier
 * initialized (mbar_in), the mask naming at least one block and none outside the cluster. */
static void run_bulk_copy_mc(emu *e, thread *th, const wb_insn *in)
{
    const wb_opnd *o = in->o;
    uint64_t dst = multicast_offset(e, val(th, &o[0])), src = val(th, &o[1]);
    uint64_t at = multicast_offset(e, val(th, &o[3]));
    int64_t size = (int64_t)val(th, &o[2]);
    CHECK(size > 0 && size % 16 == 0 && dst % 16 == 0 && dst + (uint64_t)size <= (uint64_t)e->smem_bytes,
          "%s (insn %d): cp.async.bulk .multicast::cluster of %lld bytes to shared %llu (a positive multiple of 16, "
          "16-aligned, inside the %d bytes)", who(e, e->cur).s, th->pc, (long long)size, (unsigned long long)dst,
          e->smem_bytes);
    multicast_land(e, th, &o[4], dst, at, global_span(e, src, size, 16, 0), (int)size);
}

/* mov of a symbol: only the tensor map parameter's address is modelled (TMAP_ADDR). */
static uint64_t symbol(const emu *e, const char *name)
{
    CHECK(!strcmp(name, "p_tmap"), "thread %d: mov of the symbol %s is not modelled", e->cur, name);
    return TMAP_ADDR;
}

/* Bank conflicts, modelled as the hardware serves shared memory: a warp's accesses of `bytes` each
 * (4 or fewer, 8, 16) go a phase of 128 / bytes lanes at a time (all 32, half warps, quarter warps;
 * ldmatrix: one phase a matrix, its 8 row addresses), each phase in as many wavefronts as the most
 * distinct 128-byte rows that its lanes touch in one of the 32 banks of 4 bytes (lanes reading one
 * word share it). Returns the wavefronts past one a phase, for the n lanes' addresses. */
static long extra_wavefronts(const uint32_t *addr, int n, int bytes)
{
    int per = bytes >= 16 ? 8 : bytes == 8 ? 16 : 32, width = bytes < 4 ? 1 : bytes / 4;
    long extra = 0;
    for (int p0 = 0; p0 < n; p0 += per) {
        int most = 1;
        for (int bank = 0; bank < 32; bank++) {
            uint32_t rows[32];
            int nr = 0;
            for (int l = p0; l < p0 + per && l < n; l++) {
                if (((bank - (int)(addr[l] / 4)) & 31) >= width) /* banks addr / 4 .. + width - 1 */
                    continue;
                int known = 0;
                for (int j = 0; j < nr; j++)
                    known |= rows[j] == addr[l] / 128;
                if (!known)
                    rows[nr++] = addr[l] / 128;
            }
            most = nr > most ? nr : most;
        }
        extra += most - 1;
    }
    return extra;
}

/* A per-thread shared access (ld/st.shared, .v2, .v4) of thread t at instruction pc: the warp's first
 * execution of it in the block is counted once every lane has given its address (the lanes run one
 * after another here). An access that not every lane of the warp makes is not counted. */
static void note_shared(emu *e, int t, int pc, uint32_t addr, int kind, int bytes)
{
    int k = (t / 32) * e->nsh + e->sh_slot[pc], lane = t % 32;
    if (e->sh_done[k])
        return;
    e->sh_addr[k * 32 + lane] = addr;
    e->sh_seen[k] |= 1u << lane;
    if (e->sh_seen[k] != 0xFFFFFFFFu)
        return;
    e->sh_done[k] = 1;
    sh_extra[kind] += extra_wavefronts(&e->sh_addr[k * 32], 32, bytes);
}

long interp_shared_extra(int kind) { return sh_extra[kind]; }

const char *interp_shared_kind(int kind)
{
    static const char *const names[INTERP_SH_KINDS] = {"ld.shared.v4", "ld.shared.v2", "ld.shared",
                                                       "st.shared.v4", "st.shared",    "ldmatrix"};
    return names[kind];
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
                *d = wbt_fma_x2(in->type[0] == 'b', (uint32_t)val(th, &o[1]), (uint32_t)val(th, &o[2]),
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
        case WB_OP_LD_SHARED:
            load(e, in->type, d, val(th, &o[1]), 1);
            note_shared(e, i, th->pc, (uint32_t)val(th, &o[1]), INTERP_SH_LD4, access_bytes(in->type));
            break;
        case WB_OP_ST_GLOBAL: store(e, in->type, val(th, &o[0]), val(th, &o[1]), 0); break;
        case WB_OP_ST_GLOBAL_V4: /* the whole vector: aligned, inside a buffer */
            global_at(e, val(th, &o[0]), 16, 1);
            for (int j = 0; j < 4; j++)
                store(e, "u32", val(th, &o[0]) + 4 * (uint64_t)j, val(th, &o[1 + j]), 0);
            break;
        case WB_OP_ST_SHARED:
            store(e, in->type, val(th, &o[0]), val(th, &o[1]), 1);
            note_shared(e, i, th->pc, (uint32_t)val(th, &o[0]), INTERP_SH_ST4, access_bytes(in->type));
            break;
        case WB_OP_LD_GLOBAL_V4: case WB_OP_LD_SHARED_V4: case WB_OP_LD_SHARED_V2: {
            int n = in->op == WB_OP_LD_SHARED_V2 ? 2 : 4;
            if (in->op == WB_OP_LD_GLOBAL_V4) /* the whole vector: aligned, inside a buffer */
                global_at(e, val(th, &o[n]), 16, 0);
            else
                shared_at(e, val(th, &o[n]), 4 * n);
            if (in->op != WB_OP_LD_GLOBAL_V4)
                note_shared(e, i, th->pc, (uint32_t)val(th, &o[n]), n == 4 ? INTERP_SH_LD16 : INTERP_SH_LD8,
                            4 * n);
            for (int j = 0; j < n; j++)
                load(e, "u32", &th->r[o[j].v], val(th, &o[n]) + 4 * (uint64_t)j, in->op != WB_OP_LD_GLOBAL_V4);
            break;
        }
        case WB_OP_ST_SHARED_V4:
            shared_at(e, val(th, &o[0]), 16);
            note_shared(e, i, th->pc, (uint32_t)val(th, &o[0]), INTERP_SH_ST16, 16);
            for (int j = 0; j < 4; j++)
                store(e, "u32", val(th, &o[0]) + 4 * (uint64_t)j, val(th, &o[1 + j]), 1);
            break;
        case WB_OP_CP_ASYNC:
            memcpy(shared_at(e, val(th, &o[0]), 16), global_at(e, val(th, &o[1]), 16, 0), 16);
            shared_write(e, val(th, &o[0]), 16);
            break;
        case WB_OP_BAR_SYNC: note_release(e, i, e->rank, REL_BAR, e->bar_gen + 1), th->state = AT_BAR; return;
        case WB_OP_BAR_SYNC_N: /* a named barrier: passed by its count of threads (named_barriers) */
            CHECK(val(th, &o[0]) >= 1 && val(th, &o[0]) < 16 && val(th, &o[1]) % 32 == 0 && val(th, &o[1]) > 0,
                  "%s (insn %d): bar.sync %llu, %llu: barrier 1..15 and a count of whole warps", who(e, i).s, th->pc,
                  (unsigned long long)val(th, &o[0]), (unsigned long long)val(th, &o[1]));
            th->state = AT_NBAR;
            return;
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
        case WB_OP_ST_SHARED_CLUSTER: { /* a store into the shared memory of the block its address names */
            uint64_t off;
            emu *dst = cluster_target(e, val(th, &o[0]), &off);
            if (dst != e)
                check_alive(dst, e, "a shared::cluster store");
            int bytes = access_bytes(in->type);
            uint8_t *p = shared_at(dst, off, bytes);
            shared_write_check(dst, e, e->cur, off, bytes);
            for (uint64_t c = off / 16; c <= (off + (uint64_t)bytes - 1) / 16; c++)
                dst->arec[c].mbar = 0; /* no async copy's data any more */
            uint32_t x = (uint32_t)val(th, &o[1]);
            memcpy(p, &x, (size_t)bytes);
            break;
        }
        case WB_OP_CLUSTER_ARRIVE: /* a release to every thread of the cluster that waits past it */
        case WB_OP_CLUSTER_ARRIVE_RELAXED: /* .relaxed: no release */
            CHECK(th->carrive == th->cwait, "%s (insn %d): barrier.cluster.arrive twice with no wait between",
                  who(e, i).s, th->pc);
            th->carrive++;
            if (in->op == WB_OP_CLUSTER_ARRIVE)
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
        case WB_OP_BULK_COPY_MC: run_bulk_copy_mc(e, th, in); break;
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
            a[row][col] = wbt_half_to_double(bf, v & 0xFFFF);
            a[row][col + 1] = wbt_half_to_double(bf, v >> 16);
        }
        for (int reg = 0; reg < nb; reg++) {
            uint32_t v = (uint32_t)r[l][o[4 + na + reg].v];
            b[8 * reg + 2 * tig][gid] = wbt_half_to_double(bf, v & 0xFFFF);
            b[8 * reg + 2 * tig + 1][gid] = wbt_half_to_double(bf, v >> 16);
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

/* The shared address of byte `byte` (0..127) of row n's 128 bytes in the K-major tile a wgmma
 * descriptor points at (B: row n is token n; A by descriptor: channel n of the warpgroup's 64): start address bits 0..13 (<< 4), stride between 8-row groups bits 32..45 (<< 4),
 * base offset bits 49..51 zero, 128B swizzle (mode 1 in bits 62..63: the 16-byte chunk index, address
 * bits 4..6, XORed with the row within the 1024-byte atom, bits 7..9). The leading byte offset (bits
 * 16..29) is unused by a swizzled K-major tile. A step's bytes must lie inside the row its start
 * address points into. */
static uint64_t wgmma_desc_addr(uint64_t desc, int n, int byte)
{
    CHECK(desc >> 62 == 1, "wgmma descriptor swizzle mode %d is not modelled", (int)(desc >> 62));
    CHECK((desc >> 49 & 7) == 0, "wgmma descriptor base offset %d is not modelled", (int)(desc >> 49 & 7));
    uint64_t start = (desc & 0x3FFF) << 4, sbo = ((desc >> 32) & 0x3FFF) << 4;
    CHECK(start % 128 + (uint64_t)byte < 128, "wgmma step at row offset %d + byte %d leaves the 128-byte row",
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
 * comment). 8-bit A may come from shared memory instead (a descriptor in place of the register list,
 * fp8 on sm_90a: wb_w8_smem_operand): the warpgroup's 64 rows K-major, decoded as B's; warp w % 4 reads
 * its rows 16 (w % 4) .. 16 (w % 4) + 15, as the async proxy reads B. */

static void run_wgmma(emu *e, int warp, const wb_insn *in, uint64_t *r[32])
{
    const wb_opnd *o = in->o;
    int fp8 = in->op == WB_OP_WGMMA_F8, h16 = in->op == WB_OP_WGMMA, nn = 2 * (int)o[0].v, kk = h16 ? 16 : 32;
    int bf = 0, tn = 0, tk = 0, ss = o[1].kind != WB_O_LIST; /* ss: A by descriptor */
    CHECK(in->type && sscanf(in->type, "m64n%dk%d.", &tn, &tk) == 2 && tn == nn && tk == kk && nn % 8 == 0 &&
              nn >= 8 && nn <= 256 && o[0].kind == WB_O_LIST && (ss ? !h16 : o[1].v == 4),
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
    uint64_t desc = lane_val(r[0], &o[2]), adesc = ss ? lane_val(r[0], &o[1]) : 0;
    int acc = lane_val(r[0], &o[3]) != 0;
    for (int row = 0; ss && row < 16; row++)
        for (int k = 0; k < kk; k++) {
            uint64_t addr = wgmma_desc_addr(adesc, 16 * (warp % 4) + row, k);
            uint8_t code = *shared_at(e, addr, 1);
            async_read(e, warp, addr, 1);
            a[row][k] = fp8 ? wb_type_decode(ta, code) : (double)(int8_t)code;
        }
    for (int l = 0; l < 32; l++) {
        int gid = l / 4, tig = l % 4;
        CHECK(lane_val(r[l], &o[2]) == desc && (lane_val(r[l], &o[3]) != 0) == acc &&
                  (!ss || lane_val(r[l], &o[1]) == adesc),
              "the lanes of a warp disagree on a wgmma's descriptors or scale-d");
        for (int reg = 0; !ss && reg < 4; reg++) {
            uint64_t v = r[l][o[1].list[reg].id];
            if (h16) {
                int row = gid + 8 * (reg & 1), col = 8 * (reg >> 1) + 2 * tig;
                a[row][col] = wbt_half_to_double(bf, v & 0xFFFF);
                a[row][col + 1] = wbt_half_to_double(bf, v >> 16 & 0xFFFF);
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
                uint64_t addr = wgmma_desc_addr(desc, n, 2 * k);
                memcpy(&v, shared_at(e, addr, 2), 2);
                async_read(e, warp, addr, 2);
                b[k][n] = wbt_half_to_double(bf, v);
                continue;
            }
            uint64_t addr = wgmma_desc_addr(desc, n, k);
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
        for (int j = 0; !ss && j < 4; j++)
            busy[o[1].list[j].id] = fl->groups + 1;
    }
}

/* Code i of a register of integer codes of `bits` (4 or 8), signed. */
static int code_of(uint64_t word, int bits, int i) { return bits == 4 ? nibble_of(word, i) : byte_of(word, i); }

/* mma.sync on integer codes of `bits` (8: s8, 4: s4) -> s32, big: m16n8k32 (s8) / m16n8k64 (s4), else
 * m8n8k16 / m8n8k32 (PTX ISA fragments, per = 32 / bits codes a register, code i of a register at bits
 * i): big, A register j = row gid + 8 (j & 1), k 4 per (j >> 1) + per tig + i, B register j = k 4 per j
 * + per tig + i, token gid; small, A = row gid, k per tig + i, B = k per tig + i. D register i = row
 * gid + 8 (i >> 1), token 2 tig + (i & 1). Exact, wrapping. */
static void run_mma_int(const wb_insn *in, uint64_t *r[32], int bits, int big)
{
    const wb_opnd *o = in->o;
    int per = 32 / bits, rows = big ? 16 : 8, kk = (big ? 8 : 4) * per, nd = big ? 4 : 2;
    int a[16][64] = {{0}}, b[64][8] = {{0}};
    int64_t c[16][8] = {{0}};
    for (int l = 0; l < 32; l++) {
        int gid = l / 4, tig = l % 4;
        for (int i = 0; i < per; i++) {
            if (big) {
                for (int reg = 0; reg < 4; reg++)
                    a[gid + 8 * (reg & 1)][(reg >> 1) * 4 * per + tig * per + i] = code_of(r[l][o[4 + reg].v], bits, i);
                b[tig * per + i][gid] = code_of(r[l][o[8].v], bits, i);
                b[4 * per + tig * per + i][gid] = code_of(r[l][o[9].v], bits, i);
            } else {
                a[gid][tig * per + i] = code_of(r[l][o[2].v], bits, i);
                b[tig * per + i][gid] = code_of(r[l][o[3].v], bits, i);
            }
        }
        for (int i = 0; i < nd; i++)
            c[gid + 8 * (i >> 1)][tig * 2 + (i & 1)] = (int32_t)(uint32_t)r[l][o[nd + (big ? 6 : 2) + i].v];
    }
    for (int m = 0; m < rows; m++)
        for (int n = 0; n < 8; n++) {
            int64_t acc = c[m][n];
            for (int k = 0; k < kk; k++)
                acc += a[m][k] * b[k][n];
            c[m][n] = (int32_t)(uint32_t)(uint64_t)acc;
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
        uint32_t rows[32];
        for (int l = 0; l < 8 * nm; l++) {
            shared_at(e, r[l][o[nm].v], 16); /* each row address: 16 bytes, aligned */
            rows[l] = (uint32_t)r[l][o[nm].v];
        }
        sh_extra[INTERP_SH_LDMATRIX] += extra_wavefronts(rows, 8 * nm, 16);
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
        run_mma_int(in, r, 4, in->op == WB_OP_MMA_S4_K64);
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
    run_mma_int(in, r, 8, in->op == WB_OP_MMA_S8_K32); /* the s8 shapes: what is left */
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
                     th->state == AT_BAR ? "bar.sync" : th->state == AT_NBAR ? "a named bar.sync"
                     : th->state == AT_WARP ? "a collective"
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

/* "the cluster is stuck": none of its nc blocks moved in a round; where each one's warps wait. */
static void stuck_cluster(emu *const *c, int nc)
{
    char msg[4000];
    int n = snprintf(msg, sizeof msg, "the cluster of blocks");
    for (int r = 0; r < nc; r++)
        n += snprintf(msg + n, sizeof msg - (size_t)n, "%s (%u, %u)", r == 0 ? "" : r == nc - 1 ? " and" : ",",
                      c[r]->ctaid[0], c[r]->ctaid[1]);
    n += snprintf(msg + n, sizeof msg - (size_t)n, " is stuck:");
    for (int r = 0; r < nc; r++) {
        n += snprintf(msg + n, sizeof msg - (size_t)n, " CTA %d: ", r);
        n = stuck_text(c[r], msg, sizeof msg / (size_t)nc * (size_t)(r + 1), n);
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
    memset(e->sh_seen, 0, (size_t)(e->nthreads / 32 * e->nsh + 1) * sizeof *e->sh_seen);
    memset(e->sh_done, 0, (size_t)(e->nthreads / 32 * e->nsh + 1));
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

/* Named barriers (bar.sync id, count): each passes once `count` threads wait at it (threads that have
 * ended do not count); more than count at one is a kernel error. Returns whether one passed. */
static int named_barriers(emu *e)
{
    int at[16] = {0}, want[16] = {0}, moved = 0;
    for (int i = 0; i < e->nthreads; i++)
        if (e->t[i].state == AT_NBAR) {
            const wb_opnd *o = e->f->insns[e->t[i].pc].o;
            int id = (int)val(&e->t[i], &o[0]);
            at[id]++;
            want[id] = (int)val(&e->t[i], &o[1]);
        }
    for (int id = 1; id < 16; id++) {
        CHECK(at[id] <= want[id], "%d threads wait at named barrier %d, whose count is %d", at[id], id, want[id]);
        if (!at[id] || at[id] < want[id])
            continue;
        for (int i = 0; i < e->nthreads; i++)
            if (e->t[i].state == AT_NBAR && val(&e->t[i], &e->f->insns[e->t[i].pc].o[0]) == (uint64_t)id)
                e->t[i].pc++, e->t[i].state = RUN;
        moved = 1;
    }
    return moved;
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
    moved |= named_barriers(e);
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

/* The nc blocks of a cluster (2 or 4), together: a round of CTA 0's threads, then one of CTA 1's, and
 * so on, until all have ended (an ended one sits out). Remote arrivals, multicasts and the cluster
 * barrier act on another block between its rounds. A deadlock is a turn of all the rounds in which none
 * moved. The blocks of a cluster start on their SMs at no set time apart: CTA `lead` runs alone until
 * it can go no further, and only then do the others start (so a copy or an arrival that reaches
 * another block before its mbarriers are set up fails, whichever block issues it). */
static void run_cluster(emu *const *c, int nc, int lead)
{
    for (int r = 0; r < nc; r++)
        block_reset(c[r]);
    int started = 0; /* the other blocks have started */
    for (;;) {
        int live = 0;
        for (int r = 0; r < nc; r++)
            live |= !c[r]->ended;
        if (!live)
            break;
        int moved = 0;
        for (int r = 0; r < nc; r++)
            if (!c[r]->ended && (started || r == lead))
                moved |= block_round(c[r]);
        if (!moved && !started)
            started = moved = 1;
        else if (!moved)
            stuck_cluster(c, nc);
    }
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
    e->sh_slot = malloc((size_t)fn->ninsns * sizeof *e->sh_slot);
    ck_assert(e->sh_slot);
    for (int i = 0; i < fn->ninsns; i++) {
        wb_op op = fn->insns[i].op;
        int shared = op == WB_OP_LD_SHARED || op == WB_OP_ST_SHARED || op == WB_OP_LD_SHARED_V2 ||
                     op == WB_OP_LD_SHARED_V4 || op == WB_OP_ST_SHARED_V4;
        e->sh_slot[i] = shared ? e->nsh++ : -1;
    }
    size_t nk = (size_t)(e->nthreads / 32 * e->nsh + 1);
    e->sh_addr = malloc(nk * 32 * sizeof *e->sh_addr);
    e->sh_seen = malloc(nk * sizeof *e->sh_seen);
    e->sh_done = malloc(nk);
    ck_assert(e->sh_addr && e->sh_seen && e->sh_done);
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
    free(e->sh_slot), free(e->sh_addr), free(e->sh_seen), free(e->sh_done);
    free(e->t);
    free(e->smem);
    free((void *)e->labels);
}

/* Run the whole grid `dims` of fn on params (NPARAMS values) with the global buffers bufs and the
 * tensor map tm (TMA kernels; else NULL). cluster 2 or 4: the grid runs in thread block clusters of
 * that many blocks n along x, (n i, y) .. (n i + n - 1, y) together (run_cluster), ranks 0 .. n - 1;
 * grid.x must be a multiple of n (even for 2). 0 or 1: one block at a time. Other sizes fail. */
void run_func(const wb_func *fn, const wb_launch_dims *d, const uint64_t *params, const gbuf *bufs, int nbufs,
              const fake_tmap *tm, int cluster)
{
    wb_launch_dims dims = *d;
    int cl = cluster > 1 ? cluster : 1;
    CHECK(cl == 1 || cl == 2 || cl == MAX_CLUSTER, "clusters of %d blocks are not modelled (1, 2 or %d only)", cl,
          MAX_CLUSTER);
    CHECK(dims.grid[0] % (unsigned)cl == 0, "a cluster of %d blocks along x needs %s, not %u", cl,
          cl == 2 ? "an even grid.x" : "a grid.x that is a multiple of 4", dims.grid[0]);
    if (dims.smem_bytes < 16) /* the quantizer has none */
        dims.smem_bytes = 16;
    memset(sh_extra, 0, sizeof sh_extra);
    emu c[MAX_CLUSTER];
    emu *const members[MAX_CLUSTER] = {&c[0], &c[1], &c[2], &c[3]};
    for (int r = 0; r < cl; r++)
        emu_alloc(&c[r], fn, &dims, params, bufs, nbufs, tm);
    for (int r = 0; r < cl; r++) {
        c[r].rank = r, c[r].csize = cl;
        for (int q = 0; q < cl; q++)
            c[r].cta[q] = &c[q];
    }
    for (unsigned by = 0; by < dims.grid[1]; by++)
        for (unsigned bx = 0; bx < dims.grid[0]; bx += (unsigned)cl) {
            for (int r = 0; r < cl; r++)
                c[r].ctaid[0] = bx + (unsigned)r, c[r].ctaid[1] = by;
            if (cl > 1) /* the clusters' ranks take turns leading */
                run_cluster(members, cl, (int)((bx / (unsigned)cl + by) % (unsigned)cl));
            else
                run_block(&c[0]);
        }
    for (int r = 0; r < cl; r++)
        emu_free(&c[r]);
}

/* Run fn(arg) in a child process, where it must fail in the interpreter (interp_fail) with a message
 * that holds want and want2 (when not NULL). */
void expect_failure(void (*fn)(const void *), const void *arg, const char *what, const char *want,
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
