// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Launch geometry that the kernels and their Rust launchers (src/backend/cuda/ffi/) must
// agree on: declared here once. build.rs turns every `#define NAME value` line of this file
// into `pub(crate) const NAME: u32 = value;` for the Rust side, so a change here changes
// both, and a line it cannot read fails the build. Plain integer literals only.
#ifndef PINPROVE_GEOMETRY_H
#define PINPROVE_GEOMETRY_H

// ---- the h stage (ntt/ntt.cuh)
// Threads per block of every NTT kernel.
#define NTT_THREADS 256
// log2 of the elements in shared memory a block of a pass holds, and most stages per pass.
// The rule for LG_PASS_K: a block's 2^LG_PASS elements are 2^(LG_PASS − k) columns, each row
// of them one run in DRAM, so more stages a pass make those runs shorter; at 9 they cost
// more than the pass they save from 2^25 to 2^27. Refit with `gpu_report --proofs 0
// --max-lg-ntt 26 --max-lg-msm 12` on builds of both values, in one device call.
#define LG_PASS 10
#define LG_PASS_K 8
// log2 of the low power table's length: c·b^e = hi[e >> LG_TW_LO] · lo[e & (2^LG_TW_LO − 1)].
#define LG_TW_LO 12

// ---- prefix sums (msm/scan.cuh): a block scans SCAN_THREADS · SCAN_ITEMS counts (a tile).
#define SCAN_THREADS 1024
#define SCAN_ITEMS 4

// ---- MSM buckets (msm/buckets.cuh)
// Threads per block of the counting, scattering and offset kernels.
#define MSM_THREADS 256
// The binned scatter: at most BINS bins; threads per block, and digit words per thread.
#define BINS 256
#define BIN_THREADS 512
#define BIN_ITEMS 32

// ---- MSM sums (msm/accumulate.cuh), per group: threads per block, and the blocks per
// multiprocessor the bucket sums ask for (2 × 256 G1 threads cap them at 128 registers, at
// which ptxas 13 spills 176 bytes a thread for sm_90, `nvcc --resource-usage`; the sums still
// keep the multiplier 95 % busy).
#define MSM_G1_THREADS 256
#define MSM_G1_BLOCKS 2
#define MSM_G2_THREADS 128
#define MSM_G2_BLOCKS 1
// Threads per block of the shifted bases' precompute (msm/shift.cuh).
#define SHIFT_THREADS 128
// Threads per block of the scalars' split by value (msm/split.cuh).
#define SPLIT_THREADS 256

// ---- recorded constraints (r1cs/spmv.cuh): threads per block, and threads that share a row
// of a product. Rows longer than a warp are summed by the whole warp, so a row's own lanes
// only serve the short rows, which one lane sums in the fewest warp steps. Refit SPMV_LANES
// on builds of 1, 2 and 4 by ncu's `gpu__time_duration` of the g16_spmv kernels under
// `vs_peer --params F --shape sha256-native --lg-m 24 --witness-only 1 --key-file 1 --r1cs R
// --proofs 2` (SHA-256's long rows; benches/README says how F and R are made).
#define R1CS_THREADS 256
#define SPMV_LANES 1
// ---- a witness of bits (r1cs/packed.cuh): values per rank (src/synth/packed.rs's GROUP, a
// block's share) and threads per block.
#define PACKED_GROUP 4096
#define PACKED_THREADS 256

#endif
