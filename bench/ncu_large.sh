#!/usr/bin/env bash
# Hardware counters (ncu --set full, real clocks) of one large-M launch each: warble's fp8 and int8
# W8A8 kernels and torch._scaled_mm beside them, M = 16384 on 8192 x 8192 unless M, N, K are set.
# Text reports, the raw metric pages and the SASS with per-instruction stall samples into $OUT.
# FLAGS: choices for every warble kernel; TORCH=0: no torch kernel.
set -uo pipefail
M=${M:-16384} N=${N:-8192} K=${K:-8192}
OUT=${OUT:-/tmp/ncu-large}
REP=${REP:-$OUT} # where the .ncu-rep files go
mkdir -p "$OUT" "$REP"
cd "$(dirname "$0")/.."
prof() { # name, kernel filter, skip, command...
  local name=$1 filt=$2 skip=$3; shift 3
  timeout 150 ncu --clock-control none --set full -k "$filt" --launch-skip "$skip" --launch-count ${COUNT:-1} \
    -o "$REP/$name" -f "$@" >"$OUT/$name.log" 2>&1 || echo "ncu $name: exit $?"
  ncu --import "$REP/$name.ncu-rep" --page details >"$OUT/$name.txt" 2>&1
  ncu --import "$REP/$name.ncu-rep" --page raw >"$OUT/$name.raw.txt" 2>&1
  # the SASS, each instruction with its executions and sampled stall reasons (bench/ncu_source.py)
  ncu --import "$REP/$name.ncu-rep" --page source --print-source sass --csv >"$OUT/$name.source.csv" 2>&1 ||
    echo "ncu $name: no source page (exit $?)"
}
flags=${FLAGS:-}
for spec in ${SPECS:-fp8 int8}; do
  tag=${spec}${flags:+_$flags}; tag=${tag//[=, -]/_}
  prof "warble-$tag" wb_gemm 5 build/warble bench "$spec" --m "$M" --n "$N" --k "$K" ${FLAGS:-}
done
[ "${TORCH:-1}" = 1 ] && prof scaled_mm "regex:^(?!.*(elementwise|distribution|copy|fill|Reduce|reduce)).*$" 1 \
  python3 bench/ncu_large.py "$M" "$N" "$K"
