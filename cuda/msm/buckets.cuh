// SPDX-License-Identifier: MIT OR Apache-2.0
//
// MSM, step 1: which bucket each point goes to. Each scalar, out of Montgomery form, is cut
// into `windows` signed digits that share its 256 bits as evenly as they can: the first
// `wide` = 256 − windows·(c − 1) windows take c bits, the others c − 1 (so the top window is
// no narrower than the rest, and its buckets no fuller). Booth-style, a digit above half its
// range, 2^(width−1), becomes digit − 2^width with a carry into the next window, so
// |digit| ≤ 2^(width−1), and a scalar below 2^255 leaves no carry out of the top window.
// Digit d ≠ 0 of window w puts the point, negated when d < 0, into bucket key
// w·2^(c−1) + |d| − 1; zero digits (zero scalars, and the upper windows of small ones) put
// it nowhere, so a scalar 1 costs one addition and a scalar 0 none. A counting sort groups
// the entries by key: count, scan (scan.cuh), scatter. Entries are point index | sign << 31;
// their order inside a bucket does not matter, since the sums are exact.
#ifndef PINPROVE_MSM_BUCKETS_CUH
#define PINPROVE_MSM_BUCKETS_CUH

#include <cstdint>

// Bits [off, off + c) of the canonical scalar k (8 little-endian u32 limbs), c <= 24, off < 256.
__device__ __forceinline__ uint32_t window_bits(const fr_t& k, uint32_t off, uint32_t c)
{
    const uint32_t i = off / 32;
    uint64_t v = k[i];
    if (i < 7)
        v |= (uint64_t)k[i + 1] << 32;
    return (uint32_t)(v >> (off % 32)) & ((1u << c) - 1);
}

// The signed digit of window w, which starts at bit `off` (advanced past it), given the
// carry out of window w − 1 (updated): false when it is zero, else its bucket key
// w·2^(c−1) + |d| − 1 and whether d < 0.
__device__ __forceinline__ bool digit(const fr_t& k, uint32_t c, uint32_t wide, uint32_t w, uint32_t& off,
                                      uint32_t& carry, uint32_t& key, bool& negative)
{
    const uint32_t width = c - 1 + (w < wide), half = 1u << (width - 1);
    const uint32_t v = window_bits(k, off, width) + carry;
    off += width;
    negative = v > half;
    const uint32_t magnitude = negative ? (1u << width) - v : v;
    carry = negative;
    key = w * (1u << (c - 1)) + magnitude - 1;
    return magnitude != 0;
}

// The windows of c bits: the rest have c − 1; windows·(c − 1) < 256 ≤ windows·c.
__device__ __forceinline__ uint32_t wide_windows(uint32_t c, uint32_t windows)
{   return 256 - windows * (c - 1);   }

__device__ __forceinline__ void msm_count(const fr_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                          uint32_t* counts)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    fr_t k = scalars[i];
    k.from();
    const uint32_t wide = wide_windows(c, windows);
    uint32_t off = 0, carry = 0, key;
    bool negative;
    #pragma unroll 1
    for (uint32_t w = 0; w < windows; w++)
        if (digit(k, c, wide, w, off, carry, key, negative))
            atomicAdd(&counts[key], 1);
}

// Windows whose slots one thread claims before it writes any: their atomics are in flight
// together instead of one round trip each.
#define SCATTER_BATCH 8

// entries[next free slot of key] = i | sign; cursor starts as the offsets of the keys.
__device__ __forceinline__ void msm_scatter(const fr_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                            uint32_t* cursor, uint32_t* entries)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    fr_t k = scalars[i];
    k.from();
    const uint32_t wide = wide_windows(c, windows);
    uint32_t off = 0, carry = 0;
    #pragma unroll 1
    for (uint32_t w0 = 0; w0 < windows; w0 += SCATTER_BATCH) {
        uint32_t key[SCATTER_BATCH], slot[SCATTER_BATCH];
        bool negative[SCATTER_BATCH], nonzero[SCATTER_BATCH];
        #pragma unroll
        for (uint32_t j = 0; j < SCATTER_BATCH; j++) {
            nonzero[j] = w0 + j < windows && digit(k, c, wide, w0 + j, off, carry, key[j], negative[j]);
            if (nonzero[j])
                slot[j] = atomicAdd(&cursor[key[j]], 1);
        }
        #pragma unroll
        for (uint32_t j = 0; j < SCATTER_BATCH; j++)
            if (nonzero[j])
                entries[slot[j]] = i | (uint32_t)negative[j] << 31;
    }
}

// *max_out = max(*max_out, max of v[0..len)); *max_out starts at zero.
__device__ __forceinline__ void msm_max(const uint32_t* v, uint32_t len, uint32_t* max_out)
{
    uint32_t m = 0;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < len; i += gridDim.x * blockDim.x)
        m = max(m, v[i]);
    #pragma unroll
    for (uint32_t d = 16; d > 0; d >>= 1)
        m = max(m, __shfl_xor_sync(0xffffffff, m, d));
    if (threadIdx.x % 32 == 0 && m)
        atomicMax(max_out, m);
}

#endif
