#!/usr/bin/env bash
# One complete GPU session (the device machine keeps nothing): build, validate, measure; logs to $OUT.
#   scripts/h200.sh validate [full|--quick]  selftest of the kernels the ledger lacks (full: of every
#                                       case; the ledger goes to $OUT/ledger.tsv: copy it back to
#                                       tests/gpu/), the examples, compute-sanitizer on a small run,
#                                       `warble run` against numpy, `warble quant --device` (quant_check)
#   scripts/h200.sh bench               the W4A16 suite beside torch, and the weight formats at M = 1, 16
#   scripts/h200.sh decode [validate]   (the selftest at M = 1 and 16 first,) bench/ab_picks.sh (the heuristic's decode picks beside the old
#                                       ones), the suite at M = 1, 16 with the copy ceiling, the weight
#                                       types at M = 1
#   scripts/h200.sh tma                 the selftest of the kernels the ledger lacks, then the warp-specialized
#                                       TMA pipeline beside the cp.async wgmma kernel (bench/ab_tma.sh) and,
#                                       forced and not, beside torch at large M (W4A16, fp8, int8)
#   BASE=DIR scripts/h200.sh ab          the selftest of the kernels the ledger lacks, bench/ab_build.sh
#                                       (this build's decode kernels beside those of the source tree DIR,
#                                       when set), the weight types at M = 1, bench/ab_tma.sh at M = 16384
#   BASE1=DIR CASES1=.. [BASE2, CASES2, BASE3, CASES3] [MS=16,256] scripts/h200.sh ab2  the selftest
#                                       of the kernels the ledger lacks, bench/ab_build.sh beside each DIR on
#                                       its CASES, W4A16 beside torch f16 and the copy at MS (three rounds),
#                                       the weight types at M = 1 on two shapes (issue 3's table);
#                                       SELFTEST=0: no selftest, TABLES=0: the A/Bs alone, W4A8_MS=16: W4A8
#                                       beside warble's fp8 at those M (issue 5), FORMATS=0: not issue 3's table
#   [BASE=DIR CASES=..] scripts/h200.sh peers  the selftest of the kernels the ledger lacks, (bench/ab_build.sh,)
#                                       W4A16 (both load paths),
#                                       fp8, int8 and W4A8-fp8 beside torch at large M, the weight types at M = 1
#   scripts/h200.sh tables              the selftest of the kernels the ledger lacks, the weight types at M = 1
#                                       (two shapes), the W4A16 suite beside torch, wgmma sweeps (W4A16 and
#                                       fp8 at M = 16384 on TMA, W4A8-fp8 and fp8 at M = 16)
#   scripts/h200.sh fp8why              the selftest of the kernels the ledger lacks, fp8 at M = 16384 as picked,
#                                       persistent and without clusters, int8 at 16 and 32 m-tiles, W4A8
#                                       (events), then ncu with per-instruction stalls (bench/ncu_source.py)
#                                       of fp8, _scaled_mm and int8 at 16 m-tiles
#   BASE=DIR [CASES=..] [SELFTEST_S=200] [PEERS=1] [PEER_RUNS=..] scripts/h200.sh stages   the selftest of the kernels the
#                                       ledger lacks, the TMA pipeline's large-M kernels beside DIR's
#                                       (bench/ab_build.sh: fp8, int8, W4A8, W4A16), (PEERS=1:) fp8, int8 and
#                                       W4A16 beside torch at M = 4096 and 16384 (PEER_RUNS='spec peer ms
#                                       [shapes] [seconds];..' instead)
#   scripts/h200.sh quad                the selftest of the kernels the ledger lacks, then clusters of four
#                                       beside clusters of two (bench/ab_flags.sh: fp8 at M = 4096 and 16384,
#                                       W4A16 at 16384 and on the K = 4096 shapes, int8 and W4A8 at 16384),
#                                       then fp8 on quads beside torch._scaled_mm
#   scripts/h200.sh tile192             the selftest of the kernels the ledger lacks, W4A16 on persistent
#                                       192-token tiles (the pick at large M) beside 256-token ones (the
#                                       pick before; bench/ab_flags.sh, one round, M = 4096 and 16384 on three
#                                       suite shapes), W4A16 as picked beside torch f16 on the suite at M = 4096
#                                       and 16384, (FP8=1:) fp8 and W4A8 as picked beside torch._scaled_mm
#   [LOADS=auto,tma:32] [MS=..] [FP8_MS=..] scripts/h200.sh rounds  the selftest of the kernels the ledger lacks, W4A16
#                                       as picked (and LOADS' forced kernels) beside torch f16 and the copy
#                                       on the suite at every M of it (or MS), fp8 and W4A8 as picked beside
#                                       torch._scaled_mm at M = 1, 16, 4096, 16384 (or FP8_MS): three rounds in one
#                                       process each, summed up by bench/peers_summary.py (W4A8 beside fp8)
#   scripts/h200.sh pcluster            the selftest of the kernels the ledger lacks, the heuristic's TMA kernels
#                                       beside their persistent form in clusters of two (bench/ab_flags.sh: fp8,
#                                       int8, W4A8, W4A16 at M = 4096, 16384), then fp8 and W4A16 both ways
#                                       beside torch (_scaled_mm, f16) at M = 4096 and 16384
#   scripts/h200.sh persist             the selftest of the kernels the ledger lacks, fp8, int8 and W4A16 at
#                                       M = 16384 on cp.async, TMA, TMA persistent and TMA in clusters of two
#                                       (bench/ab_tma.sh), ncu counters of three decode kernels, W4A16 on TMA
#                                       and persistent beside torch
#   scripts/h200.sh cluster             the selftest of the kernels the ledger lacks, fp8, int8 and W4A16 on
#                                       the TMA pipeline beside its clusters of two (M = 16384, 4096), fp8 and
#                                       int8 both ways beside torch
#   scripts/h200.sh split [peers]       the pending kernels, then W4A16 with --split-k 2 on larger tiles against the
#                                       heuristic's kernels where a GEMM has few output tiles (three rounds,
#                                       bench/ab_flags.sh), or (peers) W4A16 at M = 128, 256 beside torch
#   PAIRS=.. [SPEC=..] [BASE=DIR CASES=..] scripts/h200.sh pairs  the pending kernels, (bench/ab_build.sh:
#                                       this build beside DIR's,) then bench/ab_flags.sh on PAIRS (forced
#                                       choices, interleaved rounds)
#   scripts/h200.sh wk2                 the pending kernels, W4A16 one-warpgroup tiles with warps_k 1 and 2 and
#                                       clusters at M = 256 (three rounds), W4A16 at M = 128, 256 beside torch
#   BASE=DIR scripts/h200.sh groups     the pending kernels, this build beside DIR's (W4A8 decode, W4A16 at M = 256),
#                                       W4A16 at M = 256 and fp8 / W4A8-fp8 at M = 1, 16 beside torch, ncu of W4A8
#   scripts/h200.sh w4a8 [peers]        the pending kernels, W4A8-fp8 decode beside fp8 (four shapes, M = 1, 16),
#                                       then (not with peers) mma.sync (f16-widened) against wgmma at M = 1..64,
#                                       mma.sync sweeps; with peers and SWEEP16=1, W4A16 sweeps at M = 16
#   scripts/h200.sh mid                 W4A16 at M = 256 on 4096 x 14336, 6144 x 4096, 28672 x 4096: every wgmma config
#   scripts/h200.sh stalls              ncu's stall reasons of the decode kernels (W4A16 M = 1, 16, int2, W4A8-fp8)
#   [MORE_PAIRS=..] [ROUNDS=3] scripts/h200.sh formats  the selftest of the kernels the ledger lacks, int2
#                                       and int3 at M = 1 with and without gemv (bench/ab_flags.sh, and
#                                       MORE_PAIRS), the weight types at M = 1 on 8192 x 8192 and
#                                       28672 x 4096 in ROUNDS rounds (issue 3's table)
#   scripts/h200.sh picks               the selftest of the kernels the ledger lacks, then W4A16, fp8 and int8
#                                       (the heuristic's kernels) beside torch at large M
#   scripts/h200.sh sweep m1|m16|formats|gemv|wide|w4a8|mid|big|split  `warble bench --sweep` of the decode configs
#                                       with k_slices: int4 on the suite shapes at M = 1 or 16, the narrow and
#                                       fp4 weights at M = 1 on two shapes (formats), int2's gemv kernels at
#                                       M = 1 on the same two (gemv), or int5, int6 and
#                                       e2m1 at M = 1 with every warps_n (wide), W4A8-fp8 on mma.sync at
#                                       M = 1 and 16 (w4a8), W4A16 on the suite shapes at M = 256 and 1024
#                                       (mid: every wgmma config) or 4096 and 16384 (big: every TMA one;
#                                       MS=4096 or MS=16384: that M alone, which fits a call better),
#                                       or --split-k 2 on mma.sync (split: W4A16 at M = 16 beside the
#                                       picks, int2's gemv kernel at M = 1); JSON lines in $OUT/logs.tar.gz
# Every step writes straight into $LOGS, line-buffered and under its own time limit.
set -uo pipefail
mode=${1:-validate}
quick=${2:-}
OUT=${OUT:-/tmp/warble-out}
# The device brings back at most 8 files of $OUT: the ledger, the selftest log and gpu.txt go there,
# everything else into $LOGS, packed into $OUT/logs.tar.gz after every step (so a call cut short by
# its time limit still brings back what finished).
LOGS=${LOGS:-$(mktemp -d /tmp/warble-logs.XXXXXX)} # (fresh each call: a machine kept warm between calls keeps /tmp)
mkdir -p "$OUT" "$LOGS"
cd "$(dirname "$0")/.."
RESULTS=$OUT # (steps run sub-scripts with OUT=$LOGS)
pack() { tar -czf "$RESULTS/logs.tar.gz" -C "$LOGS" . 2>/dev/null; }
step() { # (each step's start and end in steps.log, to place it in clocks.csv)
  local limit=$1 rc; shift; echo "$(date +%F' '%T.%N) start $*" >>"$LOGS/steps.log"
  timeout "$limit" stdbuf -oL -eL "$@"; rc=$?; echo "$(date +%F' '%T.%N) end $rc" >>"$LOGS/steps.log"; pack; return $rc; }
# The selftest of the kernels the ledger lacks (`selftest --pending`) under a time limit, into a copy
# of the ledger in $OUT; its exit status, failures and summary on stdout.
pending_selftest() {
  cp tests/gpu/ledger.tsv "$OUT/ledger.tsv"
  { time step "$1" build/warble selftest --pending --ledger "$OUT/ledger.tsv"; } >"$OUT/selftest.log" 2>&1
  echo "selftest exit $?"; grep -E "^FAIL" "$OUT/selftest.log" | head; tail -4 "$OUT/selftest.log"
}
# bench/warble_peers.py under a time limit: its JSON lines into peers.jsonl, its log into peers.log (the
# log's tail on stdout if it fails).   usage: peers LIMIT ARGS...
peers() {
  local limit=$1; shift
  PYTHONUNBUFFERED=1 step "$limit" python3 bench/warble_peers.py "$@" --out "$LOGS/peers.jsonl" >>"$LOGS/peers.log" 2>&1 ||
    tail -5 "$LOGS/peers.log"
}
# the SM clock, power and temperature every 200 ms through the whole call (is a long large-M run
# slowed by the clock? docs/perf.md), stopped and packed at exit
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 \
  >"$LOGS/clocks.csv" 2>/dev/null &
clocks=$!
trap 'kill $clocks 2>/dev/null; pack' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
make -j16 all >"$LOGS/build.log" 2>&1 || { tail -30 "$LOGS/build.log"; exit 1; }
if [ "$mode" = sweep ]; then # one part a call: each takes 5 to 8 minutes
  part=${quick:-m1}
  mkdir -p "$LOGS/$part"
  case $part in
  m1) OUT=$LOGS/$part step 500 bench/decode_sweep.sh w4a16 8192x8192,28672x4096,4096x14336,6144x4096 \
        "--m 1 --mma mma.sync --m-tiles 1" ;;
  m16) OUT=$LOGS/$part step 500 bench/decode_sweep.sh w4a16 8192x8192,28672x4096,4096x14336,6144x4096 \
        "--m 16 --mma mma.sync --m-tiles 2" ;;
  formats) OUT=$LOGS/$part step 500 bench/decode_sweep.sh \
        "a=f16,w=int2,g=128;a=f16,w=int3,g=128;a=f16,w=e2m1,ws=e8m0,g=32;mxfp4" 8192x8192,28672x4096 \
        "--m 1 --mma mma.sync --m-tiles 1 --warps-n 2" ;;
  gemv) OUT=$LOGS/$part step 500 bench/decode_sweep.sh "a=f16,w=int2,g=128" 8192x8192,28672x4096 \
        "--m 1 --mma mma.sync --m-tiles 1 --gemv on" ;;
  wide) OUT=$LOGS/$part step 500 bench/decode_sweep.sh \
        "a=f16,w=int5,g=128;a=f16,w=int6,g=128;a=f16,w=e2m1,ws=e8m0,g=32" 8192x8192,28672x4096 \
        "--m 1 --mma mma.sync --m-tiles 1" ;;
  w4a8) for m in 1 16; do # W4A8-fp8 on the f16 mma.sync, per channel and in groups of 128, M = 1 and 16
          OUT=$LOGS/$part/m$m step 250 bench/decode_sweep.sh "a=e4m3,w=int4,ws=f32,g=0;w4a8-fp8" \
            8192x8192,28672x4096,4096x14336,6144x4096 "--m $m --mma mma.sync --m-tiles $((m < 9 ? 1 : 2))"
        done ;;
  mid|big) # the suite at large M (issue 4: the heuristic within 10% of the best): every wgmma config at
           # M = 256 and 1024 (mid), every TMA one at M = 4096 and 16384 (big: the cp.async wgmma kernel
           # lost to TMA there by 5-16% in every earlier A/B, docs/perf.md)
    # (MS=4096: one M, all the call's time; the TMA sweep has persistent blocks too: 229 configs a shape)
    ms="256 1024" extra="--mma wgmma"; [ $part = big ] && ms="4096 16384" extra="--mma wgmma --load tma"
    ms=${MS:-$ms}; ms=${ms//,/ }; set -- $ms
    for m in $ms; do
      OUT=$LOGS/$part/m$m step $((560 / $#)) bench/decode_sweep.sh w4a16 8192x8192,28672x4096,4096x14336,6144x4096 \
        "--m $m $extra"
    done ;;
  split) # pairs of blocks splitting K on mma.sync: W4A16 at M = 16 (the heuristic's kernel first, then
         # the split configs of each shape at the given warps along N), int2's gemv kernel at M = 1
    for shape in 4096x14336 6144x4096 8192x8192 28672x4096; do
      step 30 build/warble bench w4a16 --m 16 --n "${shape%x*}" --k "${shape#*x}" --json
    done | tee "$LOGS/$part/picks.jsonl"
    for run in 4096x14336:2 4096x14336:4 6144x4096:2 6144x4096:4 8192x8192:4 28672x4096:4; do
      shape=${run%:*} wn=${run#*:}
      OUT=$LOGS/$part/$shape-wn$wn SWEEP_S=50 step 55 bench/decode_sweep.sh w4a16 "$shape" \
        "--m 16 --mma mma.sync --m-tiles 2 --split-k 2 --warps-n $wn"
    done
    OUT=$LOGS/$part/gemv SWEEP_S=40 step 45 bench/decode_sweep.sh "a=f16,w=int2,g=128" 8192x8192 \
      "--m 1 --mma mma.sync --m-tiles 1 --gemv on --split-k 2 --warps-n 4" ;;
  *) echo "sweep part: m1, m16, formats, gemv, wide, w4a8, mid, big or split"; exit 2 ;;
  esac | tee "$LOGS/sweep-$part.md"
  pack
  exit 0
fi
if [ "$mode" = decode ]; then # the decode picks (old beside new), then the suite at M = 1, 16 and the weight types
  if [ "$quick" = validate ]; then # first the selftest's M = 1 and 16 cases (the decode kernels), into the ledger
    cp tests/gpu/ledger.tsv "$OUT/ledger.tsv"
    { time step 240 build/warble selftest --m 1,16 --ledger "$OUT/ledger.tsv"; } >"$OUT/selftest.log" 2>&1
    echo "selftest exit $?"; grep -E "^FAIL" "$OUT/selftest.log" | head; tail -4 "$OUT/selftest.log"
  fi
  OUT=$LOGS step 200 bash bench/ab_picks.sh
  PYTHONUNBUFFERED=1 step 150 python3 bench/warble_peers.py --copy-ceiling \
    --shapes 8192x8192,28672x4096,4096x14336,6144x4096 --m 1,16 --out "$LOGS/bench.jsonl" >"$LOGS/bench.log" 2>&1 ||
    tail -20 "$LOGS/bench.log"
  formats="a=f16,w=int4,g=128;a=f16,w=int2,g=128;a=f16,w=int3,g=128;a=f16,w=int5,g=128;a=f16,w=int6,g=128"
  formats="$formats;a=f16,w=int8,g=128;a=f16,w=e2m1,ws=e8m0,g=32;a=f16,w=e4m3,ws=f32,g=0"
  PYTHONUNBUFFERED=1 step 150 python3 bench/warble_peers.py --no-torch --shapes 8192x8192,28672x4096 --m 1 \
    --spec "$formats" --out "$LOGS/formats.jsonl" >"$LOGS/formats.log" 2>&1 || tail -20 "$LOGS/formats.log"
  for m in 1 16; do # where the decode kernel's warps wait (hardware counters, where the machine reads them)
    step 60 ncu --clock-control none -k wb_gemm --launch-skip 20 --launch-count 1 --section SchedulerStats \
      --section WarpStateStats --section SpeedOfLight --section Occupancy \
      build/warble bench w4a16 --m $m --n 8192 --k 8192 >"$LOGS/ncu-m$m.txt" 2>&1 || echo "ncu m=$m: exit $?"
  done
  exit 0
fi
if [ "$mode" = ab ]; then # this build's decode kernels beside $BASE's, the types at M = 1, the TMA pipeline at M = 16384
  cp tests/gpu/ledger.tsv "$OUT/ledger.tsv" # first the kernels the ledger lacks
  pending_selftest 260
  [ -n "${BASE:-}" ] && OUT=$LOGS BASE=$BASE step 200 bash bench/ab_build.sh
  formats="a=f16,w=int4,g=128;a=f16,w=int2,g=128;a=f16,w=int3,g=128;a=f16,w=int5,g=128;a=f16,w=int6,g=128"
  formats="$formats;a=f16,w=int8,g=128;a=f16,w=e2m1,ws=e8m0,g=32;a=f16,w=e4m3,ws=f32,g=0"
  PYTHONUNBUFFERED=1 step 100 python3 bench/warble_peers.py --no-torch --copy-ceiling --shapes 8192x8192 \
    --m 1 --spec "$formats" --out "$LOGS/formats.jsonl" >"$LOGS/formats.log" 2>&1 || tail -20 "$LOGS/formats.log"
  OUT=$LOGS MS=16384 step 100 bash bench/ab_tma.sh
  exit 0
fi
if [ "$mode" = ab2 ]; then # builds before this one, each on its own cases; the suite beside torch; issue 3's table
  # (BASE1..3: the bases build while the selftest runs; each A/B into its own folder under $LOGS)
  makes=()
  for i in 1 2 3; do b=BASE$i; [ -n "${!b:-}" ] && [ ! -x "${!b}/build/warble" ] &&
    { make -C "${!b}" -j5 build/warble >"$LOGS/make-$i.log" 2>&1 & makes+=($!); }; done
  [ "${SELFTEST:-1}" = 0 ] || pending_selftest "${SELFTEST_S:-150}"
  [ ${#makes[@]} -gt 0 ] && wait "${makes[@]}" # (not the clock sampler, which runs to the end)
  for i in 1 2 3; do b=BASE$i c=CASES$i; [ -n "${!b:-}" ] || continue; mkdir -p "$LOGS/ab$i"
    OUT=$LOGS/ab$i BASE=${!b} CASES=${!c} step "${AB_S:-100}" bash bench/ab_build.sh; done
  [ "${TABLES:-1}" = 0 ] && { pack; exit 0; }
  peers "${A16_S:-150}" --spec w4a16 --peer f16 --m "${MS:-16,256}" --rounds 3 --copy-ceiling
  python3 bench/peers_summary.py "$LOGS/peers.jsonl" | tee "$LOGS/peers-summary.md"
  if [ -n "${W4A8_MS:-}" ]; then # W4A8 (per channel, in groups) beside warble's fp8 on the suite (issue 5)
    PYTHONUNBUFFERED=1 step "${W4A8_S:-150}" python3 bench/warble_peers.py --no-torch --rounds 2 \
      --spec "fp8;a=e4m3,w=int4,ws=f32,g=0;w4a8-fp8" --shapes 8192x8192,28672x4096,4096x14336,6144x4096 \
      --m "$W4A8_MS" --out "$LOGS/w4a8.jsonl" >>"$LOGS/w4a8.log" 2>&1 || tail -5 "$LOGS/w4a8.log"
    python3 bench/peers_summary.py "$LOGS/w4a8.jsonl" --base fp8 | tee "$LOGS/w4a8.md"
  fi
  [ "${FORMATS:-1}" = 0 ] && { pack; exit 0; }
  formats="a=f16,w=int4,g=128;a=f16,w=int2,g=128;a=f16,w=int3,g=128;a=f16,w=int5,g=128;a=f16,w=int6,g=128"
  formats="$formats;a=f16,w=int8,g=128;a=f16,w=e2m1,ws=e8m0,g=32;a=f16,w=e4m3,ws=f32,g=0"
  PYTHONUNBUFFERED=1 step "${FORMATS_S:-120}" python3 bench/warble_peers.py --no-torch --copy-ceiling --rounds "${ROUNDS:-2}" \
    --shapes 8192x8192,28672x4096 --m 1 --spec "$formats" --out "$LOGS/formats.jsonl" >>"$LOGS/formats.log" 2>&1 ||
    tail -5 "$LOGS/formats.log"
  python3 bench/peers_summary.py "$LOGS/formats.jsonl" --base a=f16,w=int4,g=128 >"$LOGS/formats.md" 2>&1
  cat "$LOGS/formats.md"
  pack
  exit 0
fi
if [ "$mode" = tables ]; then # the kernels the ledger lacks, the types at M = 1, the W4A16 suite beside torch, sweeps at 16384
  pending_selftest 170
  formats="a=f16,w=int4,g=128;a=f16,w=int2,g=128;a=f16,w=int3,g=128;a=f16,w=int5,g=128;a=f16,w=int6,g=128"
  formats="$formats;a=f16,w=int8,g=128;a=f16,w=e2m1,ws=e8m0,g=32;a=f16,w=e4m3,ws=f32,g=0"
  PYTHONUNBUFFERED=1 step 110 python3 bench/warble_peers.py --no-torch --copy-ceiling --shapes 8192x8192,28672x4096 \
    --m 1 --spec "$formats" --out "$LOGS/formats.jsonl" >"$LOGS/formats.log" 2>&1 || tail -5 "$LOGS/formats.log"
  python3 bench/report.py "$LOGS/formats.jsonl" >"$LOGS/formats.md" 2>&1
  PYTHONUNBUFFERED=1 step 150 python3 bench/warble_peers.py --copy-ceiling \
    --shapes 8192x8192,28672x4096,4096x14336,6144x4096 --m 1,16,256,16384 \
    --out "$LOGS/bench.jsonl" >"$LOGS/bench.log" 2>&1 || tail -5 "$LOGS/bench.log"
  python3 bench/report.py "$LOGS/bench.jsonl" >"$LOGS/bench.md" 2>&1
  for sw in "w4a16 16384 --load tma" "fp8 16384 --load tma" "w4a8-fp8 16" "fp8 16"; do
    read -r spec m load <<<"$sw"
    # shellcheck disable=SC2086
    step 90 build/warble bench $spec --m $m --n 8192 --k 8192 --mma wgmma $load --sweep --json \
      >"$LOGS/sweep-$spec-$m.jsonl" 2>&1 || echo "sweep $spec $m: exit $?"
  done
  exit 0
fi
if [ "$mode" = split ]; then # the pending kernels (--split-k 2 among them), then split K against none where tiles are few
  pending_selftest 150
  if [ "$quick" = peers ]; then # the heuristic's split picks beside torch f16
    PYTHONUNBUFFERED=1 step 200 python3 bench/warble_peers.py --shapes 8192x8192,28672x4096,4096x14336,6144x4096 \
      --m 128,256 --out "$LOGS/peers.jsonl" >"$LOGS/peers.log" 2>&1 || tail -5 "$LOGS/peers.log"
    python3 bench/report.py "$LOGS/peers.jsonl" 2>&1 | tee "$LOGS/peers.md"
    exit 0
  fi
  # (the same tile split lost everywhere, 2026-12-06: 27.7 against 35.1 us at M = 256 on 6144 x 4096, the
  # pairs doubling 96 blocks into 1.45 waves; split pays only where a bigger tile's blocks fill under
  # half the SMs, so each pair here is the heuristic's kernel against a larger tile split in two)
  w="--split-k 2 --mma wgmma"
  PAIRS="256 4096 14336||--split-k 1|$w --m-tiles 16 --warps-n 8 --load tma"
  PAIRS="$PAIRS;256 4096 14336||--split-k 1|$w --m-tiles 32 --warps-n 8 --load tma"
  PAIRS="$PAIRS;128 4096 14336||--split-k 1|$w --m-tiles 16 --warps-n 4 --load cp.async --warps-k 2"
  PAIRS="$PAIRS;128 4096 14336||--split-k 1|$w --m-tiles 16 --warps-n 8 --load tma"
  PAIRS="$PAIRS;128 4096 14336||--split-k 1|$w --m-tiles 16 --warps-n 4 --load tma"
  PAIRS="$PAIRS;128 8192 8192||--split-k 1|$w --m-tiles 16 --warps-n 8 --load tma"
  PAIRS="$PAIRS;128 6144 4096||--split-k 1|$w --m-tiles 16 --warps-n 8 --load tma"
  PAIRS="$PAIRS;256 6144 4096||--split-k 1|$w --m-tiles 32 --warps-n 8 --load tma"
  OUT=$LOGS PAIRS=$PAIRS step 400 bash bench/ab_flags.sh
  exit 0
fi
if [ "$mode" = pairs ]; then # the pending kernels, (this build beside $BASE,) forced pairs: PAIRS="M N K|common|a|b;.."
  pending_selftest 150
  [ -n "${BASE:-}" ] && OUT=$LOGS BASE=$BASE step 200 bash bench/ab_build.sh
  OUT=$LOGS step "${LIMIT:-400}" bash bench/ab_flags.sh
  exit 0
fi
if [ "$mode" = wk2 ]; then # pending kernels; warps_k 1 against 2 (one-warpgroup tiles), clusters at M = 256; beside torch
  pending_selftest 120
  PAIRS="256 4096 14336|--mma wgmma --m-tiles 16 --warps-n 4 --load cp.async|--warps-k 1|--warps-k 2"
  PAIRS="$PAIRS;128 8192 8192|--mma wgmma --m-tiles 16 --warps-n 4 --load cp.async|--warps-k 1|--warps-k 2"
  PAIRS="$PAIRS;128 4096 14336|--mma wgmma --m-tiles 8 --warps-n 4 --load cp.async|--warps-k 1|--warps-k 2"
  PAIRS="$PAIRS;256 8192 8192|--mma wgmma --m-tiles 16 --warps-n 8 --load tma|--cluster 1|--cluster 2"
  OUT=$LOGS PAIRS=$PAIRS step 200 bash bench/ab_flags.sh
  PYTHONUNBUFFERED=1 step 100 python3 bench/warble_peers.py --shapes 8192x8192,4096x14336 --m 128,256 \
    --out "$LOGS/peers.jsonl" >"$LOGS/peers.log" 2>&1 || tail -5 "$LOGS/peers.log"
  python3 bench/report.py "$LOGS/peers.jsonl" 2>&1 | tee "$LOGS/peers.md"
  exit 0
fi
if [ "$mode" = groups ]; then # pending kernels; this build beside $BASE (W4A8 decode, M = 256 picks); beside torch
  pending_selftest 150
  CASES="w4a8-fp8|1|8192|8192;w4a8-fp8|16|8192|8192;fp8-block|16|8192|8192;fp8|16|8192|8192;w4a8-fp8|256|8192|8192"
  CASES="$CASES;w4a16|256|6144|4096;w4a16|256|28672|4096;w4a16|256|8192|8192"
  [ -n "${BASE:-}" ] && OUT=$LOGS BASE=$BASE CASES=$CASES step 220 bash bench/ab_build.sh
  PYTHONUNBUFFERED=1 step 100 python3 bench/warble_peers.py --copy-ceiling --shapes 8192x8192,28672x4096,4096x14336,6144x4096 \
    --m 256 --out "$LOGS/peers.jsonl" >"$LOGS/peers.log" 2>&1 || tail -5 "$LOGS/peers.log"
  for spec in fp8 w4a8-fp8; do
    peers 60 --spec $spec --peer fp8 --shapes 8192x8192 --m 1,16
  done
  python3 bench/report.py "$LOGS/peers.jsonl" 2>&1 | tee "$LOGS/peers.md"
  step 60 ncu --clock-control none -k wb_gemm --launch-skip 20 --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    build/warble bench w4a8-fp8 --m 16 --n 8192 --k 8192 >"$LOGS/ncu-w4a8-fp8-m16.txt" 2>&1
  grep -E "Duration|long_scoreboard|Warp Cycles Per Issued" "$LOGS/ncu-w4a8-fp8-m16.txt"
  exit 0
fi
if [ "$mode" = w4a8 ]; then # pending kernels; W4A8-fp8 decode on mma.sync (f16-widened) against wgmma; beside fp8; sweeps
  pending_selftest 150
  PYTHONUNBUFFERED=1 step 150 python3 bench/warble_peers.py --spec "fp8;a=e4m3,w=int4,ws=f32,g=0;w4a8-fp8" --peer fp8 \
    --copy-ceiling --shapes 8192x8192,28672x4096,4096x14336,6144x4096 --m 1,16 --out "$LOGS/w4a8.jsonl" \
    >"$LOGS/w4a8.log" 2>&1 || tail -5 "$LOGS/w4a8.log"
  python3 bench/report.py "$LOGS/w4a8.jsonl" 2>&1 | tee "$LOGS/w4a8.md"
  if [ "$quick" = peers ]; then # and, with SWEEP16=1, W4A16 at M = 16 (issue 4's 85%-of-copy bar): every mma.sync config
    for shape in ${SWEEP16:+8192x8192 6144x4096}; do
      step 60 build/warble bench w4a16 --m 16 --n "${shape%x*}" --k "${shape#*x}" --mma mma.sync --m-tiles 2 --sweep \
        --json >"$LOGS/sweep-w4a16-m16-$shape.jsonl" 2>"$LOGS/sweep-w4a16-m16-$shape.err"
      tail -1 "$LOGS/sweep-w4a16-m16-$shape.err"
    done
    exit 0
  fi
  P="1 8192 8192||--mma wgmma|--mma mma.sync;16 8192 8192||--mma wgmma|--mma mma.sync"
  P="$P;32 8192 8192||--mma wgmma|--mma mma.sync;64 8192 8192||--mma wgmma|--mma mma.sync"
  P="$P;16 28672 4096||--mma wgmma|--mma mma.sync;64 28672 4096||--mma wgmma|--mma mma.sync"
  OUT=$LOGS SPEC="a=e4m3,w=int4,ws=f32,g=0" ROUNDS=2 PAIRS=$P step 150 bash bench/ab_flags.sh
  for m in 1 16; do
    step 90 build/warble bench "a=e4m3,w=int4,ws=f32,g=0" --m $m --n 8192 --k 8192 --mma mma.sync --m-tiles $((m < 9 ? 1 : 2)) --sweep --json \
      >"$LOGS/sweep-w4a8-m$m.jsonl" 2>"$LOGS/sweep-w4a8-m$m.err"; tail -2 "$LOGS/sweep-w4a8-m$m.err"
  done
  exit 0
fi
if [ "$mode" = mid ]; then # M = 256 on the three suite shapes below torch there: every wgmma config (both load paths)
  for nk in "4096 14336" "6144 4096" "28672 4096"; do
    read -r n k <<<"$nk"
    step 150 build/warble bench w4a16 --m 256 --n "$n" --k "$k" --mma wgmma --sweep --json \
      >"$LOGS/sweep-m256-${n}x$k.jsonl" 2>&1 || echo "sweep $n x $k: exit $?"
    python3 - "$LOGS/sweep-m256-${n}x$k.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
d = [r for r in rows if r["kind"] == "bench"]
print(sys.argv[1].split("/")[-1], "default", d and (d[0]["us"], d[0]["config"]))
for r in sorted((r for r in rows if r["kind"] == "sweep"), key=lambda r: r["us"])[:6]:
    print("  %.2f us %s" % (r["us"], r["config"]))
PY
  done
  exit 0
fi
if [ "$mode" = stalls ]; then # why the decode kernels wait: ncu's stall reasons per issued instruction, SASS counts
  for run in "w4a16|1|" "w4a16|16|" "a=f16,w=int2,g=128|1|" \
             "w4a8-fp8|16|" "w4a16|16|--warps-k 4" "w4a16|16|--warps-k 1 --warps-n 4"; do
    IFS='|' read -r spec m flags <<<"$run"
    name="$spec-m$m${flags:+-$(echo "$flags" | tr -d ' -' | cut -c1-24)}"; name=${name//[,=]/_}
    # shellcheck disable=SC2086
    step 60 ncu --clock-control none -k wb_gemm --launch-skip 20 --launch-count 1 --section SpeedOfLight \
      --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum" \
      build/warble bench "$spec" --m "$m" --n 8192 --k 8192 $flags >"$LOGS/ncu-$name.txt" 2>&1 || echo "ncu $name: exit $?"
    echo "== $name"; grep -E "Duration|issue_stalled|inst_executed.sum|Warp Cycles Per Issued|Achieved Active Warps|Registers Per" \
      "$LOGS/ncu-$name.txt" | awk '$NF+0 > 0.05 || /Duration|inst_exec|Warp Cycles|Achieved|Registers/' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
  done
  exit 0
fi
if [ "$mode" = formats ]; then # the kernels the ledger lacks, gemv on and off, the weight types at M = 1 (issue 3)
  pending_selftest 200
  PAIRS="1 8192 8192||--gemv on|--gemv off|a=f16,w=int2,g=128;1 28672 4096||--gemv on|--gemv off|a=f16,w=int2,g=128"
  PAIRS="$PAIRS;1 8192 8192||--gemv on|--gemv off|a=f16,w=int3,g=128;1 28672 4096||--gemv on|--gemv off|a=f16,w=int3,g=128"
  OUT=$LOGS PAIRS="$PAIRS${MORE_PAIRS:+;$MORE_PAIRS}" step 200 bash bench/ab_flags.sh
  formats="a=f16,w=int4,g=128;a=f16,w=int2,g=128;a=f16,w=int3,g=128;a=f16,w=int5,g=128;a=f16,w=int6,g=128"
  formats="$formats;a=f16,w=int8,g=128;a=f16,w=e2m1,ws=e8m0,g=32;a=f16,w=e4m3,ws=f32,g=0"
  PYTHONUNBUFFERED=1 step 300 python3 bench/warble_peers.py --no-torch --copy-ceiling --rounds "${ROUNDS:-3}" \
    --shapes 8192x8192,28672x4096 --m 1 --spec "$formats" --out "$LOGS/formats.jsonl" >>"$LOGS/formats.log" 2>&1 ||
    tail -5 "$LOGS/formats.log"
  python3 bench/peers_summary.py "$LOGS/formats.jsonl" --base a=f16,w=int4,g=128 >"$LOGS/formats.md" 2>&1
  cat "$LOGS/formats.md"
  exit 0
fi
if [ "$mode" = peers ]; then # the kernels the ledger lacks, then large M beside torch (both load paths), the types at M = 1
  pending_selftest 200
  [ -n "${BASE:-}" ] && OUT=$LOGS BASE=$BASE step 150 bash bench/ab_build.sh # CASES: which
  for run in "w4a16 f16 auto 256,1024,4096,16384" "w4a16 f16 tma 256,1024,4096,16384" \
             "fp8 fp8 auto 16,256,4096,16384" "int8 int8 auto 16,256,4096,16384" "w4a8-fp8 fp8 auto 1,16,4096,16384"; do
    read -r spec peer load ms <<<"$run"
    peers 75 --spec "$spec" --peer "$peer" --load "$load" --shapes 8192x8192 --m "$ms"
  done
  formats="a=f16,w=int4,g=128;a=f16,w=int2,g=128;a=f16,w=int3,g=128;a=f16,w=int5,g=128;a=f16,w=int6,g=128"
  formats="$formats;a=f16,w=int8,g=128;a=f16,w=e2m1,ws=e8m0,g=32;a=f16,w=e4m3,ws=f32,g=0"
  PYTHONUNBUFFERED=1 step 90 python3 bench/warble_peers.py --no-torch --copy-ceiling --shapes 8192x8192,28672x4096 \
    --m 1 --spec "$formats" --out "$LOGS/formats.jsonl" >"$LOGS/formats.log" 2>&1 || tail -20 "$LOGS/formats.log"
  python3 bench/report.py "$LOGS/formats.jsonl" >"$LOGS/formats.md" 2>&1
  exit 0
fi
if [ "$mode" = fp8why ]; then # the kernels the ledger lacks; what holds fp8 back at M = 16384 (docs/perf.md)
  pending_selftest 150
  # events timing, two rounds interleaved: fp8 as picked, persistent, without clusters; int8 at fp8's
  # 128-token tile and at its own; W4A8 (e4m3 x int4)
  for round in 1 2; do
    for c in "fp8|" "fp8|--persistent" "fp8|--cluster 1" "int8|--m-tiles 16" "int8|" "a=e4m3,w=int4,ws=f32,g=0|"; do
      IFS='|' read -r spec flags <<<"$c"
      # shellcheck disable=SC2086
      timeout 40 build/warble bench "$spec" --m 16384 --n 8192 --k 8192 $flags --json 2>>"$LOGS/why.err" |
        sed "s/^{/{\"flags\": \"$flags\", \"round\": $round, /" >>"$LOGS/why.jsonl"
    done
  done
  pack
  # where the warps wait, per SASS instruction: fp8 beside _scaled_mm, then int8 at 16 m-tiles
  OUT=$LOGS/ncu SPECS=fp8 step 200 bash bench/ncu_large.sh
  OUT=$LOGS/ncu SPECS=int8 FLAGS="--m-tiles 16" TORCH=0 step 100 bash bench/ncu_large.sh
  for f in "$LOGS"/ncu/*.source.csv; do python3 bench/ncu_source.py "$f" >"${f%.csv}.top.txt" 2>&1; done
  rm -f "$LOGS"/ncu/*.ncu-rep
  exit 0
fi
if [ "$mode" = stages ]; then # the kernels the ledger lacks; the TMA pipeline beside $BASE's, and beside torch
  pending_selftest "${SELFTEST_S:-200}"
  cases="fp8|16384|8192|8192;int8|16384|8192|8192;a=e4m3,w=int4,ws=f32,g=0|16384|8192|8192;w4a16|16384|8192|8192"
  cases="$cases;fp8|4096|8192|8192;w4a16|4096|8192|8192;w4a16|16384|28672|4096;fp8|16384|28672|4096"
  [ -n "${BASE:-}" ] && OUT=$LOGS BASE=$BASE CASES=${CASES:-$cases} step "${AB_S:-220}" bash bench/ab_build.sh
  [ "${PEERS:-1}" = 1 ] || exit 0
  # PEER_RUNS="spec peer ms [shapes] [seconds];..." replaces the list (shapes: 8192x8192, seconds: 75 unless given)
  IFS=';' read -r -a runs <<<"${PEER_RUNS:-fp8 fp8 4096,16384;w4a16 f16 4096,16384;int8 int8 16384}"
  for run in "${runs[@]}"; do
    read -r spec peer ms shapes secs <<<"$run"
    peers "${secs:-75}" --spec "$spec" --peer "$peer" --shapes "${shapes:-8192x8192}" --m "$ms"
  done
  exit 0
fi
if [ "$mode" = quad ]; then # pending kernels; clusters of four beside clusters of two; fp8 on quads beside torch
  pending_selftest "${SELFTEST_S:-100}"
  pairs="16384 8192 8192|--load tma|--cluster 2|--cluster 4|fp8;4096 8192 8192|--load tma|--cluster 2|--cluster 4|fp8"
  pairs="$pairs;16384 8192 8192|--load tma|--cluster 2|--cluster 4|w4a16;16384 28672 4096|--load tma|--cluster 2|--cluster 4|w4a16"
  pairs="$pairs;4096 28672 4096|--load tma|--cluster 2|--cluster 4|w4a16;16384 6144 4096|--load tma|--cluster 2|--cluster 4|w4a16"
  pairs="$pairs;16384 8192 8192|--load tma|--cluster 2|--cluster 4|int8"
  pairs="$pairs;16384 8192 8192|--load tma|--cluster 2|--cluster 4|a=e4m3,w=int4,ws=f32,g=0"
  OUT=$LOGS PAIRS=${PAIRS:-$pairs} ROUNDS=${ROUNDS:-2} step "${AB_S:-270}" bash bench/ab_flags.sh
  # fp8 on quads beside torch._scaled_mm in one process (graph replays)
  peers 90 --spec fp8 --peer fp8 --load tma-quad --shapes 8192x8192 --m 4096,16384
  exit 0
fi
if [ "$mode" = tile192 ]; then # pending kernels; W4A16's 192-token picks beside its 256-token ones; beside torch
  pending_selftest "${SELFTEST_S:-100}"
  pairs=
  for mnk in "16384 8192 8192" "4096 8192 8192" "16384 28672 4096" "4096 28672 4096" "16384 6144 4096"; do
    pairs="$pairs${pairs:+;}$mnk|--load tma|--m-tiles 32|--m-tiles 24 --persistent|w4a16"
  done
  OUT=$LOGS PAIRS=${PAIRS:-$pairs} ROUNDS=${ROUNDS:-1} step "${AB_S:-200}" bash bench/ab_flags.sh
  # W4A16 as picked beside torch f16 on the suite; fp8 and W4A8 (e4m3 x int4) as picked beside _scaled_mm
  peers 100 --spec w4a16 --peer f16 --m 4096,16384
  [ -n "${FP8:-}" ] && peers 60 --spec "fp8;a=e4m3,w=int4,ws=f32,g=0" --peer fp8 --shapes 8192x8192 --m 4096,16384
  exit 0
fi
if [ "$mode" = rounds ]; then # pending kernels; issue 4's and 5's bars beside torch, three rounds in one process each
  pending_selftest "${SELFTEST_S:-100}"
  # W4A16 as picked beside torch f16 at every M of the suite (LOADS=auto,tma:32: and 256-token TMA
  # tiles); fp8 and W4A8 (e4m3 x int4) as picked beside _scaled_mm at M = 1, 16, 4096, 16384 (W4A8
  # against warble's fp8: peers_summary.py --base fp8)
  peers "${A16_S:-260}" --spec w4a16 --peer f16 --load "${LOADS:-auto}" --m "${MS:-1,16,256,1024,4096,16384}" --rounds 3 \
    --copy-ceiling
  peers "${FP8_S:-150}" --spec "fp8;a=e4m3,w=int4,ws=f32,g=0" --peer fp8 --shapes 8192x8192 --m "${FP8_MS:-1,16,4096,16384}" \
    --rounds 3
  python3 bench/peers_summary.py "$LOGS/peers.jsonl" --base fp8 | tee "$LOGS/peers-summary.md"
  exit 0
fi
if [ "$mode" = pcluster ]; then # pending kernels; the TMA kernels beside their persistent pairs; beside torch
  pending_selftest "${SELFTEST_S:-150}"
  pairs="16384 8192 8192||--load tma|--persistent|fp8;4096 8192 8192||--load tma|--persistent|fp8"
  pairs="$pairs;16384 28672 4096||--load tma|--persistent|fp8;16384 8192 8192||--load tma|--persistent|int8"
  pairs="$pairs;16384 8192 8192||--load tma|--persistent|a=e4m3,w=int4,ws=f32,g=0"
  pairs="$pairs;16384 8192 8192||--load tma|--persistent|w4a16;4096 8192 8192||--load tma|--persistent|w4a16"
  OUT=$LOGS PAIRS=${PAIRS:-$pairs} ROUNDS=${ROUNDS:-2} step "${AB_S:-260}" bash bench/ab_flags.sh
  for run in "fp8 fp8 auto" "fp8 fp8 tma-persistent" "w4a16 f16 auto" "w4a16 f16 tma-persistent"; do
    read -r spec peer load <<<"$run"
    peers 75 --spec "$spec" --peer "$peer" --load "$load" --shapes 8192x8192 --m 4096,16384
  done
  exit 0
fi
if [ "$mode" = persist ]; then # the kernels the ledger lacks, the TMA variants at large M, decode counters, persistent beside torch
  pending_selftest 150
  # cp.async, TMA, TMA persistent, TMA in clusters of two: fp8, int8, W4A16 at M = 16384 (events timing)
  OUT=$LOGS MS=16384 SPECS="fp8;int8;w4a16" step 200 bash bench/ab_tma.sh
  # where the decode kernels' warps wait (W4A16 at M = 1 and 16 on mma.sync, W4A8-fp8 at 16 on wgmma)
  for run in "w4a16 1" "w4a16 16" "w4a8-fp8 16"; do
    read -r spec m <<<"$run"
    step 50 ncu --clock-control none -k wb_gemm --launch-skip 20 --launch-count 1 --section SpeedOfLight \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats \
      --section WarpStateStats --section Occupancy --section LaunchStats \
      build/warble bench $spec --m $m --n 8192 --k 8192 >"$LOGS/ncu-$spec-m$m.txt" 2>&1 || echo "ncu $spec m=$m: exit $?"
  done
  for load in tma tma-persistent; do # beside torch f16 in one process (graph replays)
    torch=(); [ $load = tma-persistent ] && torch=(--no-torch)
    peers 60 --spec w4a16 --load $load "${torch[@]}" --shapes 8192x8192 --m 4096,16384
  done
  exit 0
fi
if [ "$mode" = cluster ]; then # the kernels the ledger lacks, then TMA beside TMA in clusters of two, and beside torch
  pending_selftest 120
  OUT=$LOGS MS="16384 4096" SPECS="fp8;int8;w4a16" VARIANTS="--mma wgmma --load tma;--mma wgmma --load tma --cluster 2" \
    step 150 bash bench/ab_tma.sh
  for run in "fp8 fp8" "int8 int8"; do # beside torch._scaled_mm / torch._int_mm in one process (graph replays)
    read -r spec peer <<<"$run"
    for load in tma tma-cluster; do
      torch=(); [ $load = tma-cluster ] && torch=(--no-torch)
      peers 60 --spec $spec --peer $peer --load $load "${torch[@]}" --shapes 8192x8192 --m 4096,16384
    done
  done
  exit 0
fi
if [ "$mode" = picks ]; then # the kernels the ledger lacks, then the heuristic's kernels beside torch at large M
  pending_selftest 150
  for run in "w4a16 f16 256,4096,16384 100" "fp8 fp8 4096,16384 60" "int8 int8 4096,16384 60"; do
    read -r spec peer ms limit <<<"$run"
    peers "$limit" --spec $spec --peer $peer --shapes 8192x8192 --m "$ms"
  done
  exit 0
fi
if [ "$mode" = tma ]; then
  pending_selftest 240
  OUT=$LOGS step 200 bash bench/ab_tma.sh
  for load in auto tma; do
    torch=(); [ $load = tma ] && torch=(--no-torch)
    for sp in "w4a16 f16" "fp8 fp8" "int8 int8"; do
      read -r spec peer <<<"$sp"
      peers 100 --spec "$spec" --peer "$peer" --load $load "${torch[@]}" --shapes 8192x8192 --m 256,4096,16384
    done
  done
  exit 0
fi
if [ "$mode" = validate ]; then
  cp tests/gpu/ledger.tsv "$OUT/ledger.tsv"
  case $quick in # the kernels a change touched; `validate full` runs every case (7 to 8 minutes)
  full) which= ;;
  "") which=--pending ;;
  *) which=$quick ;;
  esac
  { time step 420 build/warble selftest $which --ledger "$OUT/ledger.tsv"; } >"$OUT/selftest.log" 2>&1
  echo "selftest exit $?"
  grep -E "^FAIL" "$OUT/selftest.log" | head -20
  tail -6 "$OUT/selftest.log"
  { step 30 build/examples/embed_gemm 7 256 512; step 30 build/examples/embed_gemm 1 4096 4096
    step 30 build/examples/new_format; step 30 build/examples/packed_weights "$LOGS/packed_weights.bin"; } 2>&1 |
    tee "$LOGS/examples.log" | grep -v "^sm_90a PTX"
  if command -v compute-sanitizer >/dev/null; then
    step 60 compute-sanitizer --error-exitcode 9 build/examples/embed_gemm 7 256 512 >"$LOGS/sanitizer.log" 2>&1
    echo "compute-sanitizer exit $? ($(tail -1 "$LOGS/sanitizer.log"))"
  fi
  step 60 python3 tests/gpu/run_contract.py --warble build/warble >"$LOGS/run_contract.log" 2>&1
  tail -1 "$LOGS/run_contract.log"
  step 120 bash scripts/quant_check.sh >"$LOGS/quant_check.log" 2>&1  # the GPU quantizer through the CLI
  tail -1 "$LOGS/quant_check.log"
  step 30 python3 tests/gpu/cvt_fp8_probe.py 2>&1 | tee "$LOGS/cvt_fp8_probe.txt"
  exit 0
fi
# bench: the suite of BENCH.md for W4A16 beside torch f16, then every weight type at decode sizes
PYTHONUNBUFFERED=1 step 300 python3 bench/warble_peers.py --copy-ceiling \
  --shapes 8192x8192,28672x4096,4096x14336,6144x4096 --m 1,16,64,256,1024,4096,16384 \
  --out "$LOGS/bench.jsonl" >"$LOGS/bench.log" 2>&1 || tail -20 "$LOGS/bench.log"
formats="a=f16,w=int4,g=128;a=f16,w=int2,g=128;a=f16,w=int3,g=128;a=f16,w=int5,g=128;a=f16,w=int6,g=128"
formats="$formats;a=f16,w=int8,g=128;a=f16,w=e2m1,ws=e8m0,g=32;a=f16,w=e4m3,ws=f32,g=0"
PYTHONUNBUFFERED=1 step 120 python3 bench/warble_peers.py --no-torch --shapes 8192x8192,28672x4096 --m 1,16 \
  --spec "$formats" --out "$LOGS/formats.jsonl" >"$LOGS/formats.log" 2>&1 || tail -20 "$LOGS/formats.log"
# W8A8 (issue 5): warble's int8 beside torch._int_mm, its fp8 beside torch._scaled_mm, at the bars' sizes
for peer in int8 fp8; do
  PYTHONUNBUFFERED=1 step 120 python3 bench/warble_peers.py --spec $peer --peer $peer --shapes 8192x8192 \
    --m 1,16,256,4096,16384 --out "$LOGS/$peer.jsonl" >"$LOGS/$peer.log" 2>&1 || tail -20 "$LOGS/$peer.log"
done
# W4A8 (s8 x int4 per channel) beside torch._int_mm
PYTHONUNBUFFERED=1 step 120 python3 bench/warble_peers.py --spec a=s8,w=int4,ws=f32,g=0 --peer int8 \
  --shapes 8192x8192 --m 1,16,256,4096,16384 --out "$LOGS/w4a8.jsonl" >"$LOGS/w4a8.log" 2>&1 || tail -20 "$LOGS/w4a8.log"
# W4A8 with e4m3 activations (int4 widened to e4m3 on the fp8 MMA; issue 5's bar: >= 1.0x warble's fp8 W8A8
# at M = 16384, >= 1.8x at M <= 16), per channel and in groups of 128, beside fp8 and torch._scaled_mm
PYTHONUNBUFFERED=1 step 150 python3 bench/warble_peers.py --spec "a=e4m3,w=int4,ws=f32,g=0;w4a8-fp8" --peer fp8 \
  --shapes 8192x8192 --m 1,16,256,4096,16384 --out "$LOGS/w4a8-fp8.jsonl" >"$LOGS/w4a8-fp8.log" 2>&1 ||
  tail -20 "$LOGS/w4a8-fp8.log"
# host dispatch of wb_layer_gemm (issue 4: at most 5 us a call), decode and large M
step 60 build/warble bench w4a16 --m 1,4096 --n 8192 --k 8192 --dispatch --json >"$LOGS/dispatch.jsonl" 2>&1 ||
  tail -5 "$LOGS/dispatch.jsonl"
python3 bench/report.py "$LOGS/bench.jsonl" | tee "$LOGS/bench.md"
python3 bench/report.py "$LOGS/formats.jsonl" | tee "$LOGS/formats.md"
python3 -c "import matplotlib" 2>/dev/null && python3 bench/plot.py "$LOGS/bench.jsonl" "$LOGS"
pack
