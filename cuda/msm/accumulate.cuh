// SPDX-License-Identifier: MIT OR Apache-2.0
//
// MSM, step 2: the sum of every bucket, balanced however skewed the buckets are. Each level
// cuts every bucket's items into chunks of at most L and sums one chunk per thread; the chunk
// sums are the next level's items (off_out = scan of ⌈count/L⌉). Level 1 sums signed base
// points (mixed additions), later levels the previous level's sums, until every bucket has one
// item: a bucket of a million ones takes log_L(10⁶) levels, not one thread's million additions.
// Then the window sums: Σ_d d·bucket_d per window by running sums over segments of S buckets,
// folded pairwise, and returned in blst's Jacobian layout; the host combines the windows.
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

// Chunk t of the next level: the key and the range of this level's items it sums.
__device__ __forceinline__ bool chunk(const uint32_t* off_in, const uint32_t* off_out, uint32_t keys, uint32_t L,
                                      uint32_t& begin, uint32_t& end)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= off_out[keys])
        return false;
    const uint32_t k = owner(off_out, keys, t);
    begin = off_in[k] + (t - off_out[k]) * L;
    end = min(begin + L, off_in[k + 1]);
    return true;
}

template<class field>
__device__ __forceinline__ void msm_sum_bases(const affine_t<field>* bases, const uint32_t* entries,
                                              const uint32_t* off_in, const uint32_t* off_out, uint32_t keys,
                                              uint32_t L, xyzz_t<field>* out)
{
    uint32_t begin, end;
    if (!chunk(off_in, off_out, keys, L, begin, end))
        return;
    xyzz_t<field> acc = xyzz_t<field>::inf();
    #pragma unroll 1
    for (uint32_t p = begin; p < end; p++) {
        const uint32_t e = entries[p];
        acc.add(bases[e & 0x7fffffff], e >> 31);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

template<class field>
__device__ __forceinline__ void msm_sum_sums(const xyzz_t<field>* in, const uint32_t* off_in,
                                             const uint32_t* off_out, uint32_t keys, uint32_t L,
                                             xyzz_t<field>* out)
{
    uint32_t begin, end;
    if (!chunk(off_in, off_out, keys, L, begin, end))
        return;
    xyzz_t<field> acc = in[begin];
    #pragma unroll 1
    for (uint32_t p = begin + 1; p < end; p++)
        acc.add(in[p]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Thread (w, s) of `windows` × (2^(c−1)/S): for the buckets j = b+1..b+S of window w
// (b = s·S), Σ_j j·bucket_j = Σ_i i·bucket_{b+i} + b·Σ_i bucket_{b+i}. `sums` holds one sum
// per nonempty bucket at off[key].
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
        if (off[k + 1] > off[k])
            run.add(sums[off[k]]);
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
