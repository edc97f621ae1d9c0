# Sourced by the scripts: put ptxas on PATH when the CUDA toolkit is installed but not on PATH.
if ! command -v ptxas >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$d/ptxas" ]; then export PATH="$d:$PATH"; break; fi
  done
fi
