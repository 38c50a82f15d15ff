#!/bin/bash
# On the GPU machine: the kernels' rows (`gpu_report --proofs 0 --max-lg-ntt 24 --max-lg-msm
# 24 --msm-copies 2,3,6`) and pinprove's dense and sparse chains at 2^22 and 2^24, two batches
# of 8 from timing-only keys (`peer synth`), to hold against benches/README's table (the
# peer's own figures there take minutes a proof at 2^24, so it is not run here). Logs under
# $OUT/logs.
# Argument: the seconds it may take; a stage that would not finish is left out.
L=${1:-300}; T0=$(date +%s); left() { echo $((L - ($(date +%s) - T0))); }
H=.device/head P=.device/peer W=/tmp/chains G=$OUT/logs
mkdir -p "$W" "$G"
ended() { echo "rc=$? at $(($(date +%s) - T0)) s"; }
{ nvidia-smi; nproc; free -g; } >"$G/machine_chains.txt" 2>&1
for s in dense sparse; do
  for k in 22 24; do
    { $P/peer synth --shape $s --lg-m $k --out "$W/$s$k"; ended; } >"$G/key_$s$k.txt" 2>&1 &
  done
done
timeout $(($(left) / 2)) $H/gpu_report --proofs 0 --max-lg-ntt 24 --max-lg-msm 24 --msm-copies 2,3,6 >"$G/gpu_report.txt" 2>&1
ended >>"$G/gpu_report.txt"
wait
for k in 22 24; do
  for s in dense sparse; do
    [ "$(left)" -gt 30 ] || break
    timeout $(($(left) - 5)) $H/vs_peer --params "$W/$s$k" --shape $s --lg-m $k --timing 1 --proofs 8 --batches 2 \
      --threads 16 --warmup 1 >"$G/${s}$k.txt" 2>&1
    ended >>"$G/${s}$k.txt"
    rm -f "$W/$s$k"
  done
done
rm -rf "$W"
