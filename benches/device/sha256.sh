#!/bin/bash
# On the GPU machine: the sha256 chain through pinprove's gadget, witness-only, from the key's
# and the recording's files made in the call (`peer synth`, `examples/synthesis`), the figures
# of benches/README: 2^26, 16 proofs, and again with the H MSM's bases plain (under
# `--memory-limit 100` on a device over 110 GB, beside a copy per window; under 64 on smaller
# ones, beside the fewer copies that fit); 2^24, two batches of 64, and the peer's 4 proofs on
# the same file; 2^27, 16 proofs (on a device over 130 GB, time allowing, also under
# `--memory-limit 120`: the plain bases' placement, beside the H MSM's fewer copies; with less
# time, as `sha256.sh 230 27`, only the placement the backend chooses, after the files' 145 s
# or so). Logs under $OUT/logs; the files' own logs gathered into files.txt at each stage's
# end (the device tool returns few files from a call killed at its limit). The 2^27 recording
# (one thread) is made while the 2^24 rows and the peer's run, to fit the call. Arguments: the
# seconds it may take (a stage that would not finish is left out), and the sizes to run
# (default 26,24,27; the peer runs with 2^24).
L=${1:-540}; T0=$(date +%s); left() { echo $((L - ($(date +%s) - T0))); }
S=",${2:-26,24,27},"; runs() { case $S in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
H=.device/head P=.device/peer W=/tmp/sha256 G=$OUT/logs
mkdir -p "$W/logs" "$G"
ended() { echo "rc=$? at $(($(date +%s) - T0)) s"; }
gather() { for f in "$W"/logs/*; do echo "== $f"; cat "$f"; done >"$G/files.txt" 2>&1; }
key() { $P/peer synth --shape sha256 --lg-m "$1" --out "$W/k$1" >"$W/logs/key$1" 2>&1; ended >>"$W/logs/key$1"; }
recording() {
  $H/synthesis --shape sha256-native --lg-m "$1" --threads 1 --rounds 1 --only witness --r1cs "$W/r$1" >"$W/logs/r1cs$1" 2>&1
  ended >>"$W/logs/r1cs$1"
}
ours() { # seconds, K, log name, vs_peer's other flags
  local t=$1 k=$2 log=$3
  shift 3
  timeout "$t" $H/vs_peer --params "$W/k$k" --shape sha256-native --lg-m "$k" --timing 1 --witness-only 1 --key-file 1 \
    --r1cs "$W/r$k" --threads 16 --warmup 1 "$@" >"$G/$log.txt" 2>&1
  ended >>"$G/$log.txt"
}
{ nvidia-smi; nproc; free -g; df -h /tmp; } >"$G/machine.txt" 2>&1
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
runs 26 && { key 26 & recording 26 & }
runs 24 && { key 24 & recording 24 & }
wait
gather
runs 26 && {
  ours 90 26 v26 --proofs 16
  if [ "$mib" -gt 110000 ]; then
    ours 90 26 v26_limit100 --proofs 16 --memory-limit 100
  else
    ours 90 26 v26_limit64 --proofs 16 --memory-limit 64
  fi
  rm -f "$W/k26" "$W/r26"
}
runs 27 && recording 27 &
runs 24 && {
  [ "$(left)" -gt 100 ] && ours 100 24 v24 --proofs 64 --batches 2
  [ "$(left)" -gt 60 ] && {
    timeout 50 $P/peer prove --params "$W/k24" --shape sha256 --lg-m 24 --proofs 4 --warmup 1 >"$G/peer24.txt" 2>&1
    ended >>"$G/peer24.txt"
  }
  rm -f "$W/k24" "$W/r24"
}
runs 27 && {
  key 27 &
  wait
  gather
  if [ "$mib" -gt 130000 ] && [ "$(left)" -gt 100 ]; then
    ours $((($(left) - 6) / 2)) 27 v27 --proofs 16
    [ "$(left)" -gt 50 ] && ours $(($(left) - 3)) 27 v27_limit120 --proofs 16 --memory-limit 120
  else
    [ "$(left)" -gt 50 ] && ours $(($(left) - 3)) 27 v27 --proofs 16
  fi
}
echo "total $(($(date +%s) - T0)) s" >>"$G/machine.txt"
