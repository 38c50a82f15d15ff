// SPDX-License-Identifier: MIT OR Apache-2.0
//
// MSM, step 1: which bucket each point goes to. Each scalar, out of Montgomery form, is cut
// into `windows` signed digits of c bits (Booth-style: a digit above 2^(c−1) becomes
// digit − 2^c with a carry into the next window, so |digit| ≤ 2^(c−1) and windows·c ≥ 256
// absorbs the last carry of a scalar below 2^255). Digit d ≠ 0 of window w puts the point,
// negated when d < 0, into bucket key w·2^(c−1) + |d| − 1; zero digits (zero scalars, and the
// upper windows of small ones) put it nowhere, so a scalar 1 costs one addition and a scalar 0
// none. A counting sort groups the entries by key: count, scan (scan.cuh), scatter. Entries
// are point index | sign << 31; their order inside a bucket does not matter, since the
// sums are exact.
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

// Calls f(key, negative) for every nonzero signed digit of the scalar (Montgomery form).
template<class F>
__device__ __forceinline__ void for_each_digit(fr_t k, uint32_t c, uint32_t windows, F f)
{
    k.from();
    const uint32_t half = 1u << (c - 1);
    uint32_t carry = 0;
    #pragma unroll 1
    for (uint32_t w = 0; w < windows; w++) {
        const uint32_t v = window_bits(k, w * c, c) + carry;
        const bool negative = v > half;
        const uint32_t magnitude = negative ? (1u << c) - v : v;
        carry = negative;
        if (magnitude)
            f(w * half + magnitude - 1, negative);
    }
}

__device__ __forceinline__ void msm_count(const fr_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                          uint32_t* counts)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    for_each_digit(scalars[i], c, windows, [&](uint32_t key, bool) { atomicAdd(&counts[key], 1); });
}

// entries[offsets[key] + (next free slot of key)] = i | sign; cursor starts at zero.
__device__ __forceinline__ void msm_scatter(const fr_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                            const uint32_t* offsets, uint32_t* cursor, uint32_t* entries)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    for_each_digit(scalars[i], c, windows, [&](uint32_t key, bool negative) {
        entries[offsets[key] + atomicAdd(&cursor[key], 1)] = i | (uint32_t)negative << 31;
    });
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
