// SPDX-License-Identifier: MIT OR Apache-2.0
//
// An MSM's scalars split by value (src/backend/cuda/msm/split.rs): the zeros dropped, the
// indices of the ones (whose bases are summed as one bucket by accumulate.cuh's levels) and
// the others with their indices (an MSM of their own over their bases, gathered here). A
// block claims its runs of the outputs with one atomic addition per kind, so the compacted
// order depends on the blocks' timing; the sums they feed do not. Where the scalars are a
// packed witness's variables (L's are its aux, A's and B's gathered from z), the bitmaps
// class those that are 0 or 1 (98 to 99.6 % of a bit-heavy witness's) without their 32 bytes
// read: the census of such a partition comes from its bitmaps.
#ifndef PINPROVE_MSM_SPLIT_CUH
#define PINPROVE_MSM_SPLIT_CUH

#include <cstdint>

#include "../ff/fields.cuh"
#include "../geometry.h"
#include "../r1cs/packed.cuh"

// counts[0] and counts[1] (zero before the launch) become the ones' and the others' counts;
// ones[..counts[0]] their indices, others[..counts[1]] and others_idx the others and theirs,
// those past `room` counted but not kept. Where z.ones is not null, scalar i is z[vars[i]]
// (z[first + i] where vars is null), and one the bitmaps call 0 or 1 is not read.
// blockDim.x = SPLIT_THREADS.
__device__ __forceinline__ void msm_split(const fr_t* scalars, uint32_t n, const packed_z_t& z, const uint32_t* vars,
                                          uint32_t first, uint32_t* ones, fr_t* others, uint32_t* others_idx,
                                          uint32_t room, uint32_t* counts)
{
    __shared__ uint32_t warp_ones[SPLIT_THREADS / 32], warp_others[SPLIT_THREADS / 32], claimed[2];
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    fr_t s;
    bool one = false, other = false, bit;
    if (i < n && z.ones && bit_of_z(z, vars ? vars[i] : first + i, bit)) {
        one = bit;
    } else if (i < n) {
        // Limb by limb (sppark's is_one() does not compile with nvcc 13: "constant
        // expressions are not supported").
        s = scalars[i];
        const fr_t unit = fr_t::one();
        uint32_t differs = 0, nonzero = 0;
        #pragma unroll
        for (size_t l = 0; l < sizeof(fr_t) / sizeof(uint32_t); l++) {
            differs |= s[l] ^ unit[l];
            nonzero |= s[l];
        }
        one = differs == 0;
        other = differs != 0 && nonzero != 0;
    }
    const uint32_t one_mask = __ballot_sync(0xffffffff, one), other_mask = __ballot_sync(0xffffffff, other);
    if (lane == 0) {
        warp_ones[warp] = __popc(one_mask);
        warp_others[warp] = __popc(other_mask);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t o = 0, x = 0;
        for (uint32_t w = 0; w < blockDim.x / 32; w++) {
            const uint32_t wo = warp_ones[w], wx = warp_others[w];
            warp_ones[w] = o;
            warp_others[w] = x;
            o += wo;
            x += wx;
        }
        claimed[0] = o ? atomicAdd(&counts[0], o) : 0;
        claimed[1] = x ? atomicAdd(&counts[1], x) : 0;
    }
    __syncthreads();
    const uint32_t below = (1u << lane) - 1;
    if (one)
        ones[claimed[0] + warp_ones[warp] + __popc(one_mask & below)] = i;
    const uint32_t at = claimed[1] + warp_others[warp] + __popc(other_mask & below);
    if (other && at < room) {
        others[at] = s;
        others_idx[at] = i;
    }
}

// out[j] = bases[idx[j]] for j < k.
template<class field>
__device__ __forceinline__ void msm_gather(const affine_t<field>* bases, const uint32_t* idx, uint32_t k,
                                           affine_t<field>* out)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < k)
        out[j] = bases[idx[j]];
}

#endif
