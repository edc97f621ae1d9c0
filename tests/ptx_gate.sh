#!/usr/bin/env bash
# The PTX gate: every format that selftest validates (`warble selftest --list --arch ARCH`: the W4A16
# family, the whole weight catalog, W8A8, and the fp8 W8A8 pairs on the targets that build them) on
# its architecture, through `warble check` (ptxas -v: no failure, no warning, no spill) at M = 1..4096,
# N = K = 4096 (the W4A16 family) or 1, 256 (the catalog).
# bf16 activations on sm_75 have no tensor-core path and must be rejected with exit 2 (that passes).
# Cases that force config choices (batch-invariant, TMA loads) are checked on sm_90a with them; every
# format of the sm_100a plan with --mma tcgen05 on sm_100a and sm_103a (s4 activations must be refused
# with exit 2; int8 on sm_103a, which has no kind::i8, is widened to f16; W8A8 with groups promotes each
# tile's product; NVFP4 x NVFP4 and MXFP4 x MXFP4 take the block-scaled kinds, kind::mxf4nvf4 and
# kind::mxf4, at M = 16, 256 and 4096: 16 to 256 tokens, one or two SFB copies); the activation quantizer of s8, e4m3 and e5m2 on every target (below).
# Usage: WARBLE=build/warble JOBS=8 tests/ptx_gate.sh     (PTXAS=... overrides the ptxas binary)
set -u
WARBLE=${WARBLE:-build/warble}
JOBS=${JOBS:-2}
ARCHS="sm_75 sm_80 sm_86 sm_89 sm_90a sm_100a sm_103a sm_120a"
MS=1,7,16,64,256,4096

if [ ! -x "$WARBLE" ]; then
    echo "ptx-gate: $WARBLE is not an executable (set WARBLE=)" >&2
    exit 2
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/ptx-gate.XXXXXX") || exit 2
trap 'rm -rf "$out"' EXIT

specs() { # the plan of one architecture (cases a target cannot build are not in its plan)
    "$WARBLE" selftest --list --arch "$1" | cut -f1 | awk '!seen[$0]++'
}

# One job: arch, spec, job number. Writes $out/NNNN.log (stdout+stderr) and $out/NNNN.rc
# ("pass" or "fail: reason").
one() {
    local arch=$1 spec=$2 id=$3 rc
    local ms=$MS
    case "$spec" in a=*,w=int4,ws=*|a=*,w=uint4,ws=*) ;; *) ms=1,256 ;; esac
    "$WARBLE" check "$spec" --arch "$arch" --m "$ms" --n 4096 --k 4096 >"$out/$id.log" 2>&1
    rc=$?
    if [ "$arch" = sm_75 ] && "$WARBLE" format "$spec" 2>/dev/null | grep -qE '(^a=bf16|out=bf16)'; then
        if [ $rc -eq 2 ]; then
            echo "pass" >"$out/$id.rc"
            echo "$arch $spec rejected as expected (exit 2): $(tail -n 1 "$out/$id.log")" >"$out/$id.log"
        else
            echo "fail: bf16 on sm_75 must be rejected with exit 2, got exit $rc" >"$out/$id.rc"
        fi
    elif [ $rc -eq 0 ]; then
        echo "pass" >"$out/$id.rc"
    else
        echo "fail: $arch $spec: exit $rc" >"$out/$id.rc"
    fi
}
# A case with forced choices (the fifth column of the list, comma-separated words): sm_90a, its shape.
forced() {
    local spec=$1 m=$2 n=$3 k=$4 choices=${5//,/ } id=$6
    # shellcheck disable=SC2086 # choices are whole CLI words
    if "$WARBLE" check "$spec" --arch sm_90a --m "$m" --n "$n" --k "$k" $choices >"$out/$id.log" 2>&1; then
        echo "pass" >"$out/$id.rc"
    else
        echo "fail: sm_90a $spec m=$m $choices: exit $?" >"$out/$id.rc"
    fi
}
# tcgen05 (not chosen by the heuristic yet): arch, spec, job number.
tcgen05() {
    local arch=$1 spec=$2 id=$3 rc
    local ms=256
    # int4 weights, and the 8-bit activations (their widest token tiles: 128 tokens of f32 sums in
    # registers with groups, 16-bit copies of both tiles on sm_103a) at 4096 too
    case "$spec" in a=*,w=int4,ws=*|a=*,w=uint4,ws=*|a=s8,*|a=e4m3,*|int8*|fp8*|w4a8*) ms=16,256,4096 ;; esac
    # the block-scaled fp4 kinds (kind::mxf4nvf4, kind::mxf4): every token tile width the heuristic takes
    case "$spec" in nvfp4*|a=e2m1,ag=16,as=e4m3,*w=e2m1,ws=e4m3,g=16*|a=e2m1,ag=32,as=e8m0,*w=e2m1,ws=e8m0,g=32*) ms=16,256,4096 ;; esac
    "$WARBLE" check "$spec" --arch "$arch" --m "$ms" --n 4096 --k 4096 --mma tcgen05 >"$out/$id.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] || { [ $rc -eq 2 ] && grep -qE "tcgen05 is built for 16-bit" "$out/$id.log"; }; then
        echo "pass" >"$out/$id.rc"
    else
        echo "fail: $arch $spec --mma tcgen05: exit $rc" >"$out/$id.rc"
    fi
}
export -f one forced tcgen05
export WARBLE MS out

id=0
for arch in $ARCHS; do
    for spec in $(specs "$arch"); do
        printf '%s %s %05d\n' "$arch" "$spec" "$id"
        id=$((id + 1))
    done
done >"$out/jobs"
"$WARBLE" selftest --list --arch sm_90a | awk -F'\t' -v id="$id" 'NF == 5 { printf "%s %s %s %s %s %05d\n", $1, $2, $3, $4, $5, id++ }' \
    >"$out/forced"
tid=50000
for arch in sm_100a sm_103a; do
    # the plan, the fp8 formats it leaves out there (refused by default; tcgen05 kind::f8f6f4), and
    # NVFP4 x NVFP4 (tcgen05 kind::mxf4nvf4)
    for spec in $(specs sm_100a) fp8 fp8-block w4a8-fp8 a=e4m3,w=int4,ws=f32,g=0 nvfp4 nvfp4,out=f16,bias=1; do
        printf '%s %s %05d\n' "$arch" "$spec" "$tid"
        tid=$((tid + 1))
    done
done >"$out/tc"
total=$(($(wc -l <"$out/jobs") + $(wc -l <"$out/forced") + $(wc -l <"$out/tc")))
xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _ <"$out/jobs"
xargs -P "$JOBS" -L 1 bash -c 'forced "$@"' _ <"$out/forced"
xargs -P "$JOBS" -L 1 bash -c 'tcgen05 "$@"' _ <"$out/tc"

# The activation quantizer (`warble quant SPEC --arch A`): s8, s4 and e2m1 with e8m0 block scales (MX)
# everywhere, e4m3/e5m2 codes and e2m1 with e4m3 block scales where the target converts f32 to fp8
# (sm_89 and newer; elsewhere refused with exit 2), from f16 and bf16; ptxas without a warning.
PTXAS_BIN=${PTXAS:-ptxas}
qid=90000
for arch in $ARCHS; do
    for spec in int8 fp8 a=e5m2,w=e4m3,ws=f32,g=0 w4a4-int4 a=e2m1,ag=32,as=e8m0,w=e2m1,ws=e8m0,g=32 \
                a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16 nvfp4; do
        for xt in f16 bf16; do
            qid=$((qid + 1))
            total=$((total + 1))
            log="$out/$qid.log"
            "$WARBLE" quant "$spec" --arch "$arch" --x-type "$xt" >"$out/$qid.ptx" 2>"$log"
            rc=$?
            case "$arch:$spec:$rc" in
            sm_75:int8:0|sm_80:int8:0|sm_86:int8:0|sm_75:w4a4-int4:0|sm_80:w4a4-int4:0|sm_86:w4a4-int4:0|sm_89:*:0|sm_90a:*:0|sm_100a:*:0|sm_103a:*:0|sm_120a:*:0|sm_75:*as=e8m0*:0|sm_80:*as=e8m0*:0|sm_86:*as=e8m0*:0)
                # one module per kernel (nvfp4: the tensor-scale pass, then the quantizer), each assembled
                csplit -s -z -f "$out/$qid.part" "$out/$qid.ptx" '/^\/\/ activation quantizer/' '{*}'
                ok=1
                for part in "$out/$qid.part"*; do
                    "$PTXAS_BIN" -arch="$arch" "$part" -o /dev/null >>"$log" 2>&1 || ok=0
                done
                if [ $ok = 1 ] && ! grep -qi warning "$log"; then
                    echo "$arch quant $spec x=$xt ok" >>"$log"
                    echo pass >"$out/$qid.rc"
                else
                    echo "fail: $arch quant $spec x=$xt: ptxas" >"$out/$qid.rc"
                fi ;;
            sm_75:*:2|sm_80:*:2|sm_86:*:2)
                echo "$arch quant $spec x=$xt refused as expected: $(cat "$log")" >"$log"
                echo pass >"$out/$qid.rc" ;;
            *) echo "fail: $arch quant $spec x=$xt: exit $rc" >"$out/$qid.rc" ;;
            esac
        done
    done
done

passed=0
failed=0
for rcf in "$out"/*.rc; do
    [ -e "$rcf" ] || continue
    cat "${rcf%.rc}.log"
    if [ "$(cat "$rcf")" = pass ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL $(cat "$rcf")"
    fi
done
missing=$((total - passed - failed))
[ $missing -gt 0 ] && echo "FAIL $missing jobs left no result"
failed=$((failed + missing))
echo "ptx-gate: $passed passed, $failed failed"
[ $failed -eq 0 ]
