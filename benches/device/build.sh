#!/bin/sh
# Builds here, without a GPU, what the scripts beside this one run on the GPU machine:
# pinprove's examples and GPU test binary (`--features cuda`, sm_90) into .device/head and
# the peer (../shared/peer) into .device/peer, stripped (about 23 MB). Then carry `.device`
# with the device tool and run, from the repository root, `bash benches/device/suite.sh 300`
# or `bash benches/device/sha256.sh 540` (their argument: the seconds they may take).
set -e
cd "$(dirname "$0")/../.."
eval "$(sh ../shared/tools/cuda-toolchain.sh 2>/dev/null)"
export LIBRARY_PATH="$CUDA_PATH/lib" PINPROVE_CUDA_ARCHS="${PINPROVE_CUDA_ARCHS:-90}"
cargo build --release --features cuda --example vs_peer --example gpu_report --example synthesis
all=$(cargo test --release --features cuda --no-run --test all 2>&1 |
  sed -n 's/.*Executable tests\/all\/main.rs (\(.*\))$/\1/p')
mkdir -p .device/head
cp target/release/examples/vs_peer target/release/examples/gpu_report target/release/examples/synthesis .device/head/
cp "$all" .device/head/all
PEER_OUT="$PWD/.device/peer" sh ../shared/peer/build.sh
rm -f .device/peer/peer-cpu
strip .device/head/* .device/peer/*
du -sh .device
