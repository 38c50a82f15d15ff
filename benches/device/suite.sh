#!/bin/bash
# On the GPU machine: the GPU suite (every ignored test of `all`, one at a time), then
# compute-sanitizer memcheck with leak check over the split's and the key placements' tests;
# logs under $OUT/logs. Argument: the seconds it may take.
L=${1:-300}; T0=$(date +%s); left() { echo $((L - ($(date +%s) - T0))); }
H=.device/head G=$OUT/logs
mkdir -p "$G"
nvidia-smi >"$G/machine.txt" 2>&1
s=$(date +%s)
timeout $(($(left) * 2 / 3)) $H/all --ignored --test-threads 1 >"$G/suite.txt" 2>&1
echo "rc=$? in $(($(date +%s) - s)) s" >>"$G/suite.txt"
for t in gpu_split_msm_equals_cpu_msm_for_every_mix keys_shifted_shifted_h_resident_in_chunks_or_streamed_prove_bit_for_bit; do
  s=$(date +%s)
  timeout $(($(left) / 2)) compute-sanitizer --tool memcheck --leak-check full $H/all --include-ignored "cuda::$t" --exact >"$G/memcheck_$t.txt" 2>&1
  echo "rc=$? in $(($(date +%s) - s)) s" >>"$G/memcheck_$t.txt"
done
