// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Shifted bases: copy w of a set of bases holds 2^(offset of window w)·P for each base P, so
// that window w's digit d adds d·2^(offset)·P as d times a point of copy w, and every window
// sums into one set of buckets (buckets.cuh): a plan of c-bit windows then reduces 2^(c−1)
// buckets once instead of once per window, and can take wider windows, hence fewer of them
// (ZPrize 2022's fastest MSMs precompute their bases this way). Copy w is made from copy
// w − 1 by `doublings` doublings in XYZZ and back to affine, each block with one inversion
// (Montgomery's trick over the block's prefix and suffix products).
#ifndef PINPROVE_MSM_SHIFT_CUH
#define PINPROVE_MSM_SHIFT_CUH

#include <cstdint>

#include "../ec/xyzz.cuh"
#include "../geometry.h"

// 1/v for each thread's v ≠ 0, by one inversion per block: with prefix products P_t = v_0⋯v_t
// and suffix products S_t = v_t⋯v_last, 1/v_t = P_{t−1}·S_{t+1}/P_last.
template<class field>
__device__ __forceinline__ field block_inverse(const field& v)
{
    __shared__ field prefix[SHIFT_THREADS], suffix[SHIFT_THREADS], total;
    const uint32_t t = threadIdx.x, last = SHIFT_THREADS - 1;
    field pre = v, suf = v;
    #pragma unroll 1
    for (uint32_t d = 1; d < SHIFT_THREADS; d <<= 1) {
        prefix[t] = pre;
        suffix[t] = suf;
        __syncthreads();
        if (t >= d)
            pre = mul(prefix[t - d], pre);
        if (t + d <= last)
            suf = mul(suf, suffix[t + d]);
        __syncthreads();
    }
    prefix[t] = pre;
    suffix[t] = suf;
    __syncthreads();
    if (t == last)
        total = inverse(pre);
    __syncthreads();
    field r = total;
    if (t > 0)
        r = mul(r, prefix[t - 1]);
    if (t < last)
        r = mul(r, suffix[t + 1]);
    return r;
}

// out[i] = 2^doublings·in[i] for i < n, doublings ≥ 1, in affine form ((0, 0) at infinity).
// Launched with SHIFT_THREADS threads per block.
template<class field>
__device__ __forceinline__ void msm_shift(const affine_t<field>* in, uint32_t n, uint32_t doublings,
                                          affine_t<field>* out)
{
    const uint32_t i = blockIdx.x * SHIFT_THREADS + threadIdx.x;
    xyzz_t<field> p = xyzz_t<field>::inf();
    if (i < n && !in[i].is_inf()) {
        p.set_dbl(in[i], false);
        #pragma unroll 1
        for (uint32_t k = 1; k < doublings; k++)
            p.dbl();
    }
    const bool finite = !p.is_inf();
    const field zzz_inv = block_inverse(finite ? p.zzz : field::one()); // every thread takes part
    if (i >= n)
        return;
    affine_t<field> q;
    if (finite) {
        const field u = mul(zzz_inv, p.zz); // 1/ZZ = (ZZ/ZZZ)², since ZZ³ = ZZZ²
        q.x = mul(p.x, square(u));
        q.y = mul(p.y, zzz_inv);
    } else {
        q.x.zero();
        q.y.zero();
    }
    out[i] = q;
}

#endif
