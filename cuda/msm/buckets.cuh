// SPDX-License-Identifier: MIT OR Apache-2.0
//
// MSM, step 1: which bucket each point goes to. Each scalar, out of Montgomery form, is cut
// into `windows` signed digits. The windows take their points from `copies` copies of the
// bases, windows/copies consecutive windows each (a group): plain bases are one copy, and
// shifted ones (shift.cuh) hold copy q = 2^(offset of window q·group)·P. The first
// 256 − windows·(c − 1) windows take c bits, the others c − 1: the 256 bits as evenly as they
// can be, the wider windows first, so the top one is no narrower than the rest and its
// buckets no fuller. Over more than one copy of more than one window each, the g-th windows
// of every group must be alike: the wide ones are then the first g of each group, as many as
// the copies divide the count into, rounded up (⌈256/copies⌉ bits a group). Booth-style,
// a digit above half its range, 2^(width−1), becomes digit − 2^width with a carry into the
// next window, so |digit| ≤ 2^(width−1), and a scalar below 2^255 leaves no carry out of the
// top window. Digit d ≠ 0 of window w, the g-th of its group, puts the point of copy
// w / group, negated when d < 0, into bucket key g·2^(c−1) + |d| − 1: window g of every
// group sums into bucket set g, so a plan reduces group·2^(c−1) buckets (one set when every
// window has its own copy) and the host combines the sets as plain windows. Zero digits
// (zero scalars, and the upper windows of small ones) put it nowhere, so a scalar 1 costs
// one addition and a scalar 0 none. A counting sort groups the entries by key: count (which
// keeps the digits), scan (scan.cuh), scatter (for large plans over shifted bases in two
// passes: bin, place).
// Entries are point index | sign << 31; their order inside a bucket does not matter, since the
// sums are exact.
#ifndef PINPROVE_MSM_BUCKETS_CUH
#define PINPROVE_MSM_BUCKETS_CUH

#include <cstdint>

#include "../geometry.h"

// Bits [off, off + c) of the canonical scalar k (8 little-endian u32 limbs), c <= 24, off < 256.
__device__ __forceinline__ uint32_t window_bits(const fr_t& k, uint32_t off, uint32_t c)
{
    const uint32_t i = off / 32;
    uint64_t v = k[i];
    if (i < 7)
        v |= (uint64_t)k[i + 1] << 32;
    return (uint32_t)(v >> (off % 32)) & ((1u << c) - 1);
}

// The signed digit of window w, the g-th of its group, `wide` (c bits) or not (c − 1), which
// starts at bit `off` (advanced past it), given the carry out of window w − 1 (updated): false
// when it is zero, else its bucket key g·2^(c−1) + |d| − 1 and whether d < 0.
__device__ __forceinline__ bool digit(const fr_t& k, uint32_t c, bool wide, uint32_t g, uint32_t& off,
                                      uint32_t& carry, uint32_t& key, bool& negative)
{
    const uint32_t width = c - 1 + wide, half = 1u << (width - 1);
    const uint32_t v = window_bits(k, off, width) + carry;
    off += width;
    negative = v > half;
    const uint32_t magnitude = negative ? (1u << width) - v : v;
    carry = negative;
    key = (g << (c - 1)) + magnitude - 1;
    return magnitude != 0;
}

// How many windows take c bits, counted in the order g·copies + q (window g of copy q's
// group): 256 − windows·(c − 1), a multiple of the copies over several copies of several
// windows each. Window (g, q) takes c bits when g·copies + q is below it.
__device__ __forceinline__ uint32_t wide_windows(uint32_t c, uint32_t windows, uint32_t copies)
{
    const uint32_t wide = 256 - windows * (c - 1);
    return windows / copies > 1 && copies > 1 ? (wide + copies - 1) / copies * copies : wide;
}

// A window's digit word: key | sign << 31, or NO_DIGIT for a zero digit (keys stay below 2^31).
#define NO_DIGIT 0xffffffffu

// The entry of a digit `word` of scalar i in a window of copy `copy`: the index of the
// point, i in that copy (copy_points: points per copy), with the digit's sign.
__device__ __forceinline__ uint32_t entry(uint32_t word, uint32_t copy, uint32_t copy_points, uint32_t i)
{   return (copy * copy_points + i) | (word & 0x80000000);   }

// counts[key] += 1 for each nonzero digit, and digits[w·n + i] = window w's digit word of
// scalar i, window by window, for the scatter to read without converting the scalars again.
// The `windows` windows take their points from `copies` copies (copies divides windows).
__device__ __forceinline__ void msm_count(const fr_t* scalars, uint32_t n, uint32_t c, uint32_t windows,
                                          uint32_t copies, uint32_t* counts, uint32_t* digits)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    fr_t k = scalars[i];
    k.from();
    const uint32_t group = windows / copies, wide = wide_windows(c, windows, copies);
    uint32_t off = 0, carry = 0, key, g = 0, q = 0;
    bool negative;
    #pragma unroll 1
    for (uint32_t w = 0; w < windows; w++) {
        uint32_t word = NO_DIGIT;
        if (digit(k, c, g * copies + q < wide, g, off, carry, key, negative)) {
            atomicAdd(&counts[key], 1);
            word = key | (uint32_t)negative << 31;
        }
        digits[(size_t)w * n + i] = word;
        if (++g == group)
            g = 0, q++;
    }
}

// entries[next free slot of key] = the digit's entry; cursor starts as the offsets of the
// keys. Block b takes window b / ⌈n/blockDim⌉, so over plain bases the blocks in flight write
// into one window's entries (n words, 64 MB at 2^24, not all windows' 14 times that) and their
// partial writes meet in the L2 cache rather than in DRAM. Over shifted bases every window's
// entries spread over all the shared buckets: once they overflow the L2 cache their scatter
// is binned (below).
__device__ __forceinline__ void msm_scatter(const uint32_t* digits, uint32_t n, uint32_t group,
                                            uint32_t copy_points, uint32_t* cursor, uint32_t* entries)
{
    const uint32_t per_window = (n + blockDim.x - 1) / blockDim.x;
    const uint32_t w = blockIdx.x / per_window;
    const uint32_t i = (blockIdx.x % per_window) * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const uint32_t word = digits[(size_t)w * n + i];
    if (word != NO_DIGIT)
        entries[atomicAdd(&cursor[word & 0x7fffffff], 1)] = entry(word, w / group, copy_points, i);
}

// Over shifted bases the scatter above cost 11.7 ms of a 2^24 G1 MSM (ncu): the blocks in
// flight write single words all over the 800 MB of entries. In two passes, the writes stay
// close together. `msm_bin` sorts the digit words into at most BINS bins, runs of 2^shift keys,
// each block counting its words per bin in shared memory and claiming one run of slots per
// bin with one atomic; `msm_place` then places the binned pairs, which go bin after bin,
// inside their bin's slots (a few MB). Bin b's slots are its keys' slots,
// [off[b << shift], off[(b + 1) << shift]), so the binned pairs take the entries' room.
// BINS, BIN_THREADS and BIN_ITEMS: geometry.h.

// bin_cursor[b] = off[b << shift]: where bin b's slots start, for b < bins.
__device__ __forceinline__ void msm_bin_starts(const uint32_t* off, uint32_t shift, uint32_t bins,
                                               uint32_t* bin_cursor)
{
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < bins)
        bin_cursor[b] = off[b << shift];
}

// Pass 1: block t takes digit words [t·T, t·T + T) (T = BIN_THREADS·BIN_ITEMS) of the
// windows·n, counts them per bin in shared memory, claims that many slots of each bin with one
// atomic, and writes (key, entry) there.
__device__ __forceinline__ void msm_bin(const uint32_t* digits, uint32_t n, uint32_t windows, uint32_t group,
                                        uint32_t copy_points, uint32_t shift, uint32_t bins,
                                        uint32_t* bin_cursor, uint2* binned)
{
    __shared__ uint32_t count[BINS], base[BINS];
    for (uint32_t b = threadIdx.x; b < bins; b += BIN_THREADS)
        count[b] = 0;
    __syncthreads();
    const size_t first = (size_t)blockIdx.x * BIN_THREADS * BIN_ITEMS + threadIdx.x, total = (size_t)windows * n;
    uint32_t word[BIN_ITEMS], rank[BIN_ITEMS];
    #pragma unroll
    for (uint32_t k = 0; k < BIN_ITEMS; k++) {
        const size_t j = first + k * BIN_THREADS;
        word[k] = j < total ? digits[j] : NO_DIGIT;
        if (word[k] != NO_DIGIT)
            rank[k] = atomicAdd(&count[(word[k] & 0x7fffffff) >> shift], 1);
    }
    __syncthreads();
    for (uint32_t b = threadIdx.x; b < bins; b += BIN_THREADS)
        base[b] = count[b] ? atomicAdd(&bin_cursor[b], count[b]) : 0;
    __syncthreads();
    #pragma unroll
    for (uint32_t k = 0; k < BIN_ITEMS; k++) {
        if (word[k] == NO_DIGIT)
            continue;
        const size_t j = first + k * BIN_THREADS;
        const uint32_t w = (uint32_t)(j / n), i = (uint32_t)(j - (size_t)w * n);
        const uint32_t key = word[k] & 0x7fffffff;
        binned[base[key >> shift] + rank[k]] = make_uint2(key, entry(word[k], w / group, copy_points, i));
    }
}

// Pass 2: entries[cursor[key]++] = entry for each of the `total` binned (key, entry) pairs;
// cursor starts as the offsets of the keys. Taken in order, the pairs of one bin would be in
// flight at a time, and their atomics would queue on its few hundred lines of cursors: the
// grid takes `regions` runs of `region` pairs at once, warp v 32 pairs of run v % regions.
// The grid's threads may pass 2^32 where the total nears it: the warp's index is formed
// without the thread's (blockDim a multiple of 32), and the pairs' in 64 bits.
__device__ __forceinline__ void msm_place(const uint2* binned, uint32_t total, uint32_t regions, uint32_t region,
                                          uint32_t* cursor, uint32_t* entries)
{
    const uint32_t v = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint64_t at = (uint64_t)(v / regions) * 32 + lane;
    const uint64_t p = (uint64_t)(v % regions) * region + at;
    if (at >= region || p >= total)
        return;
    const uint2 e = binned[p];
    entries[atomicAdd(&cursor[e.x], 1)] = e.y;
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
