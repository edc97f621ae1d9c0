#!/usr/bin/env bash
# Install what warble needs on a fresh Debian machine: a C compiler, make, Check (unit tests),
# pkg-config, and ptxas from the CUDA toolkit (for the PTX gate). Safe to run again.
set -euo pipefail
need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v make >/dev/null 2>&1 || need+=(make)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
pkg-config --exists check 2>/dev/null || need+=(check)
if [ ${#need[@]} -gt 0 ]; then
  echo "deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! command -v ptxas >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    [ -x "$d/ptxas" ] && { echo "deps: using $d/ptxas"; break; }
  done
fi
