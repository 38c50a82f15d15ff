// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The kernels the Rust side launches (src/backend/cuda/). The only translation unit of the
// fatbin; every entry point is extern "C" and prefixed g16_, and declared once on the Rust
// side, with the same name and argument types, in a kernels! table (src/backend/cuda/ffi/).
// Field elements are passed as fr_t (Montgomery form, 8 x u32 LE), bit-compatible with
// blstrs' Scalar; points as blst lays them out (affine G1: 2 fp_t, affine G2: 2 fp2_t;
// Jacobian results: 3 of them).
#ifndef PINPROVE_API_CU
#define PINPROVE_API_CU

#include "geometry.h"
#include "ntt/ntt.cuh"
#include "ec/fp2.cuh"
#include "msm/scan.cuh"
#include "msm/buckets.cuh"
#include "msm/accumulate.cuh"
#include "msm/shift.cuh"
#include "msm/split.cuh"
#include "r1cs/spmv.cuh"
#include "r1cs/packed.cuh"
#include "key/decode.cuh"

using fp2 = fp2_t<fp_t>;

// ---- the h stage (ntt/ntt.cuh)

extern "C" __global__ void __launch_bounds__(NTT_THREADS)
g16_ntt_dif_pass(fr_t* d_x, uint32_t lg_n, uint32_t S, uint32_t k, uint32_t lg_c, const fr_t* tw,
                 uint32_t inverse, const fr_t* pw_lo, const fr_t* pw_hi)
{   ntt_dif_pass(d_x, lg_n, S, k, lg_c, twiddles_t{tw, lg_n, inverse != 0}, pw_lo, pw_hi);   }

extern "C" __global__ void __launch_bounds__(NTT_THREADS)
g16_ntt_dit_pass(const fr_t* d_x, fr_t* d_out, uint32_t lg_n, uint32_t S, uint32_t k, uint32_t lg_c,
                 const fr_t* tw, uint32_t inverse, const fr_t* pw_lo, const fr_t* pw_hi, const fr_t* times,
                 const fr_t* minus)
{   ntt_dit_pass(d_x, d_out, lg_n, S, k, lg_c, twiddles_t{tw, lg_n, inverse != 0}, pw_lo, pw_hi, times, minus);   }

extern "C" __global__ void __launch_bounds__(NTT_THREADS)
g16_ntt_dif_last_pass(const fr_t* d_x, fr_t* d_out, uint32_t lg_n, uint32_t k, uint32_t lg_c, const fr_t* tw,
                      uint32_t inverse, const fr_t* pw_lo, const fr_t* pw_hi, const fr_t* times, const fr_t* minus)
{   ntt_dif_last_pass(d_x, d_out, lg_n, k, lg_c, twiddles_t{tw, lg_n, inverse != 0}, pw_lo, pw_hi, times, minus);   }

extern "C" __global__ void g16_ntt_epilogue(const fr_t* d_x, fr_t* d_out, uint32_t lg_n, const fr_t* pw_lo,
                                            const fr_t* pw_hi, const fr_t* times, const fr_t* minus)
{   ntt_epilogue(d_x, d_out, lg_n, pw_lo, pw_hi, times, minus);   }

extern "C" __global__ void g16_powers(fr_t* out, uint32_t n, fr_t base, fr_t c)
{   powers(out, n, base, c);   }

// ---- recorded constraints (r1cs/spmv.cuh)

extern "C" __global__ void g16_spmv_narrow(const uint32_t* starts, const uint32_t* vars, const uint32_t* coeffs,
                                           const fr_t* table, const fr_t* input, const fr_t* aux, const uint64_t* ones,
                                           const uint64_t* others, uint32_t inputs, uint32_t rows, uint32_t n, fr_t* out)
{   spmv(starts, vars, coeffs, table, packed_z_t{input, aux, ones, others, inputs}, rows, n, out);   }

extern "C" __global__ void g16_spmv_wide(const uint64_t* starts, const uint32_t* vars, const uint32_t* coeffs,
                                         const fr_t* table, const fr_t* input, const fr_t* aux, const uint64_t* ones,
                                         const uint64_t* others, uint32_t inputs, uint32_t rows, uint32_t n, fr_t* out)
{   spmv(starts, vars, coeffs, table, packed_z_t{input, aux, ones, others, inputs}, rows, n, out);   }

extern "C" __global__ void g16_gather(const uint32_t* vars, uint32_t n, const fr_t* input, const fr_t* aux,
                                      const uint64_t* ones, const uint64_t* others, uint32_t inputs, fr_t* out)
{   gather(vars, n, packed_z_t{input, aux, ones, others, inputs}, out);   }

extern "C" __global__ void __launch_bounds__(PACKED_THREADS)
g16_packed_expand(const uint64_t* ones, const uint64_t* others, const uint32_t* ranks, const fr_t* values,
                  uint32_t len, fr_t* aux)
{   packed_expand(ones, others, ranks, values, len, aux);   }

// ---- prefix sums (msm/scan.cuh)

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
g16_scan_tiles(const uint32_t* in, uint32_t len, uint32_t* out, uint32_t* tile_sums)
{   scan_tiles(in, len, out, tile_sums);   }

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
g16_scan_add(uint32_t* out, uint32_t len, const uint32_t* tile_offsets)
{   scan_add(out, len, tile_offsets);   }

// ---- MSM buckets, shared by G1 and G2 (msm/buckets.cuh)

extern "C" __global__ void g16_msm_count(const fr_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                         uint32_t copies, uint32_t* counts, uint32_t* digits)
{   msm_count(scalars, n, c, windows, copies, counts, digits);   }

extern "C" __global__ void g16_msm_scatter(const uint32_t* digits, uint32_t n, uint32_t group,
                                           uint32_t copy_points, uint32_t* cursor, uint32_t* entries)
{   msm_scatter(digits, n, group, copy_points, cursor, entries);   }

extern "C" __global__ void g16_msm_bin_starts(const uint32_t* off, uint32_t shift, uint32_t bins,
                                              uint32_t* bin_cursor)
{   msm_bin_starts(off, shift, bins, bin_cursor);   }

extern "C" __global__ void __launch_bounds__(BIN_THREADS)
g16_msm_bin(const uint32_t* digits, uint32_t n, uint32_t windows, uint32_t group, uint32_t copy_points,
            uint32_t shift, uint32_t bins, uint32_t* bin_cursor, uint2* binned)
{   msm_bin(digits, n, windows, group, copy_points, shift, bins, bin_cursor, binned);   }

extern "C" __global__ void g16_msm_place(const uint2* binned, uint32_t total, uint32_t regions, uint32_t region,
                                         uint32_t* cursor, uint32_t* entries)
{   msm_place(binned, total, regions, region, cursor, entries);   }

extern "C" __global__ void g16_msm_max(const uint32_t* v, uint32_t len, uint32_t* max_out)
{   msm_max(v, len, max_out);   }

extern "C" __global__ void g16_msm_next_offsets(const uint32_t* off, uint32_t keys, uint32_t L, uint32_t* next)
{   msm_next_offsets(off, keys, L, next);   }

// ---- the scalars split by value (msm/split.cuh)

extern "C" __global__ void __launch_bounds__(SPLIT_THREADS)
g16_msm_split(const fr_t* scalars, uint32_t n, const uint64_t* z_ones, const uint64_t* z_others, uint32_t inputs,
              const uint32_t* vars, uint32_t first, uint32_t* ones, fr_t* others, uint32_t* others_idx, uint32_t room,
              uint32_t* counts)
{
    const packed_z_t z{nullptr, nullptr, z_ones, z_others, inputs};
    msm_split(scalars, n, z, vars, first, ones, others, others_idx, room, counts);
}

// ---- per group: MSM sums (msm/accumulate.cuh), the key's shifted copies (msm/shift.cuh) and
// its points decoded from the file's bytes (key/decode.cuh)

#define MSM_KERNELS(G, field, THREADS, BLOCKS)                                                          \
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS)                                           \
g16_msm_sum_bases_##G(const affine_t<field>* bases, const uint32_t* entries, const uint32_t* off,       \
                      uint32_t keys, uint32_t items, uint32_t L, xyzz_t<field>* out)                    \
{   msm_sum_bases(bases, entries, off, keys, items, L, out);   }                                        \
                                                                                                        \
extern "C" __global__ void __launch_bounds__(THREADS)                                                   \
g16_msm_sum_sums_##G(const xyzz_t<field>* in, const uint32_t* off, uint32_t keys, uint32_t items,      \
                     uint32_t L, xyzz_t<field>* out)                                                    \
{   msm_sum_sums(in, off, keys, items, L, out);   }                                                     \
                                                                                                        \
extern "C" __global__ void __launch_bounds__(THREADS)                                                   \
g16_msm_bucket_segments_##G(const xyzz_t<field>* sums, const uint32_t* off, uint32_t c,                 \
                            uint32_t windows, uint32_t S, xyzz_t<field>* segments)                      \
{   msm_bucket_segments(sums, off, c, windows, S, segments);   }                                        \
                                                                                                        \
extern "C" __global__ void __launch_bounds__(THREADS)                                                   \
g16_msm_fold_segments_##G(xyzz_t<field>* segments, uint32_t per_window, uint32_t windows,               \
                          uint32_t stride)                                                              \
{   msm_fold_segments(segments, per_window, windows, stride);   }                                       \
                                                                                                        \
extern "C" __global__ void __launch_bounds__(THREADS)                                                   \
g16_msm_window_sums_##G(const xyzz_t<field>* segments, uint32_t per_window, uint32_t windows,           \
                        jacobian_t<field>* out)                                                         \
{   msm_window_sums(segments, per_window, windows, out);   }                                        \
                                                                                                        \
extern "C" __global__ void __launch_bounds__(SHIFT_THREADS)                                             \
g16_msm_shift_##G(const affine_t<field>* in, uint32_t n, uint32_t doublings, affine_t<field>* out)      \
{   msm_shift(in, n, doublings, out);   }                                                               \
                                                                                                        \
extern "C" __global__ void                                                                              \
g16_msm_gather_##G(const affine_t<field>* bases, const uint32_t* idx, uint32_t k, affine_t<field>* out) \
{   msm_gather(bases, idx, k, out);   }                                                                \
                                                                                                        \
extern "C" __global__ void                                                                              \
g16_key_decode_##G(const uint8_t* raw, uint32_t n, affine_t<field>* out, uint32_t* bad)                 \
{   key_decode(raw, n, out, bad);   }

// Threads per block and blocks per multiprocessor of each group's kernels: geometry.h.
MSM_KERNELS(g1, fp_t, MSM_G1_THREADS, MSM_G1_BLOCKS)
MSM_KERNELS(g2, fp2, MSM_G2_THREADS, MSM_G2_BLOCKS)

#endif
