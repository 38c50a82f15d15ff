#!/bin/sh
# Runs the CUDA backend's host side under the fake driver (fake.c), without a GPU:
#   tests/fake_cuda/run.sh LOG [PARTS] [READ]
# builds the fake libcuda.so.1 and the `launch_trace` example (feature cuda; the CUDA
# toolchain as for any cuda build: eval "$(sh ../shared/tools/cuda-toolchain.sh)"), runs the
# trace's PARTS (comma-separated: ntt, small, large, keys, files, split; default
# ntt,small,keys,files,split) with every 4-byte readback READ (default: the memory's own, zeros),
# and writes the log of its launches and copies to LOG. Two builds' logs are compared with cmp: equal launches, equal logs.
set -eu
cd "$(dirname "$0")/../.."
out=target/fake_cuda
mkdir -p "$out"
python3 tests/fake_cuda/gen_sigs.py cuda/api.cu "$out/sigs.h"
stub=$(ls "${CUDA_TOOLCHAIN_PREFIX:-/tmp/cuda-toolchain}"/stub/cuda_stub.c)
grep -oE 'int (cu[A-Za-z0-9_]+)' "$stub" | awk '{print $2}' | sort -u >"$out/all.txt"
grep -oE 'CUresult (cu[A-Za-z0-9_]+)\(' tests/fake_cuda/fake.c | sed 's/CUresult //; s/(//' | sort -u >"$out/impl.txt"
comm -23 "$out/all.txt" "$out/impl.txt" | awk '{print "int " $1 "(void){return 100;}"}' >"$out/rest.c"
cc -O1 -shared -fPIC -Wl,-soname,libcuda.so.1 -I"$out" -o "$out/libcuda.so.1" tests/fake_cuda/fake.c "$out/rest.c"
cargo build --release --features cuda --example launch_trace
env LD_LIBRARY_PATH="$PWD/$out" FAKE_CUDA_LOG="$1" TRACE_PART="${2:-ntt,small,keys,files,split}" ${3:+FAKE_READ_U32=$3} \
  target/release/examples/launch_trace
echo "$(grep -c '^launch' "$1") launches logged in $1"
