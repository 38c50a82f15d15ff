// SPDX-License-Identifier: MIT OR Apache-2.0
//
// MSM, step 2: the sum of every bucket, balanced however skewed the buckets are. A level
// hands thread t the L items [t·L, t·L + L) of the bucket-sorted list, whatever buckets they
// fall in, so every lane does the same number of additions. The thread sums its run of each
// bucket k it meets and writes the run's sum to slot t + k. The (thread, bucket) pairs that
// meet form a staircase, so bucket k's runs fill slots [next[k], next[k+1]) with
// next[k] = ⌊off[k]/L⌋ + k, one slot apart from the next bucket's at most: those ranges are
// the next level's items, and the slots no run writes are zeroed first (zero is the point at
// infinity). Level 1 adds signed base points (mixed additions), later levels the previous
// level's sums, until no bucket has more than a few items: a bucket of a million ones takes
// log_L(10⁶) levels, not one thread's million additions. Then the window sums: Σ_d d·bucket_d
// per window by running sums over segments of S buckets, folded pairwise, and returned in
// blst's Jacobian layout; the host combines the windows.
#ifndef PINPROVE_MSM_ACCUMULATE_CUH
#define PINPROVE_MSM_ACCUMULATE_CUH

#include <cstdint>

#include "../ec/xyzz.cuh"

// The key whose items [off[k], off[k+1]) hold item t < off[keys]: the last k with off[k] <= t.
__device__ __forceinline__ uint32_t owner(const uint32_t* off, uint32_t keys, uint32_t t)
{
    uint32_t lo = 0, hi = keys; // off[lo] <= t < off[hi]
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (off[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// One level over `items` items grouped by off[0..=keys]: add(acc, p) adds item p.
template<class field, class Add>
__device__ __forceinline__ void msm_level(const uint32_t* off, uint32_t keys, uint32_t items, uint32_t L,
                                          xyzz_t<field>* out, Add add)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t first = (uint64_t)t * L;
    if (first >= items)
        return;
    const uint32_t begin = (uint32_t)first, end = (uint32_t)min(first + L, (uint64_t)items);
    uint32_t k = owner(off, keys, begin), next = off[k + 1];
    xyzz_t<field> acc = xyzz_t<field>::inf();
    #pragma unroll 1
    for (uint32_t p = begin; p < end; p++) {
        if (p == next) { // bucket k ends: the next nonempty one starts at p
            out[t + k] = acc;
            acc = xyzz_t<field>::inf();
            next = off[++k + 1];
            if (next == p) { // empty buckets (the upper half of a narrow window): search
                k = owner(off, keys, p);
                next = off[k + 1];
            }
        }
        add(acc, p);
    }
    out[t + k] = acc;
}

template<class field>
__device__ __forceinline__ void msm_sum_bases(const affine_t<field>* bases, const uint32_t* entries,
                                              const uint32_t* off, uint32_t keys, uint32_t items, uint32_t L,
                                              xyzz_t<field>* out)
{
    msm_level<field>(off, keys, items, L, out, [&](xyzz_t<field>& acc, uint32_t p) {
        const uint32_t e = entries[p];
        acc.add(bases[e & 0x7fffffff], e >> 31);
    });
}

template<class field>
__device__ __forceinline__ void msm_sum_sums(const xyzz_t<field>* in, const uint32_t* off, uint32_t keys,
                                             uint32_t items, uint32_t L, xyzz_t<field>* out)
{
    msm_level<field>(off, keys, items, L, out, [&](xyzz_t<field>& acc, uint32_t p) { acc.add(in[p]); });
}

// next[k] = ⌊off[k]/L⌋ + k for k <= keys: where the next level's items of bucket k start.
__device__ __forceinline__ void msm_next_offsets(const uint32_t* off, uint32_t keys, uint32_t L, uint32_t* next)
{
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k <= keys)
        next[k] = off[k] / L + k;
}

// Thread (w, s) of `windows` × (2^(c−1)/S): for the buckets j = b+1..b+S of window w
// (b = s·S), Σ_j j·bucket_j = Σ_i i·bucket_{b+i} + b·Σ_i bucket_{b+i}. `sums` holds the last
// level's items of bucket `key` at [off[key], off[key+1]).
template<class field>
__device__ __forceinline__ void msm_bucket_segments(const xyzz_t<field>* sums, const uint32_t* off, uint32_t c,
                                                    uint32_t windows, uint32_t S, xyzz_t<field>* segments)
{
    const uint32_t buckets = 1u << (c - 1), per_window = buckets / S;
    const uint32_t id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= windows * per_window)
        return;
    const uint32_t w = id / per_window, b = (id % per_window) * S;
    xyzz_t<field> run = xyzz_t<field>::inf(), acc = xyzz_t<field>::inf();
    #pragma unroll 1
    for (uint32_t i = S; i > 0; i--) {
        const uint32_t k = w * buckets + b + i - 1;
        #pragma unroll 1
        for (uint32_t p = off[k]; p < off[k + 1]; p++)
            run.add(sums[p]);
        acc.add(run);
    }
    xyzz_t<field> scaled = xyzz_t<field>::inf();
    #pragma unroll 1
    for (int bit = b ? 31 - __clz(b) : -1; bit >= 0; bit--) {
        scaled.dbl();
        if ((b >> bit) & 1)
            scaled.add(run);
    }
    acc.add(scaled);
    segments[id] = acc;
}

// segments[w][s] += segments[w][s + stride] for s a multiple of 2·stride: log2(per_window)
// launches leave each window's sum in segments[w][0].
template<class field>
__device__ __forceinline__ void msm_fold_segments(xyzz_t<field>* segments, uint32_t per_window, uint32_t windows,
                                                  uint32_t stride)
{
    const uint32_t pairs = (per_window + 2 * stride - 1) / (2 * stride);
    const uint32_t id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= windows * pairs)
        return;
    const uint32_t w = id / pairs, s = (id % pairs) * 2 * stride;
    if (s + stride < per_window)
        segments[w * per_window + s].add(segments[w * per_window + s + stride]);
}

template<class field>
__device__ __forceinline__ void msm_window_sums(const xyzz_t<field>* segments, uint32_t per_window,
                                                uint32_t windows, jacobian_t<field>* out)
{
    const uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w < windows)
        out[w] = segments[w * per_window].to_jacobian();
}

#endif
