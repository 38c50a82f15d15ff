// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Exclusive prefix sums of u32 counts, out[i] = Σ_{j<i} in[j] and out[len] = the total: the
// offsets of the MSM's buckets. One tile per block (SCAN_TILE items); longer inputs scan
// their tile sums the same way and add them back (ffi/msm.rs drives the levels).
#ifndef PINPROVE_MSM_SCAN_CUH
#define PINPROVE_MSM_SCAN_CUH

#include <cstdint>

#include "../geometry.h"

#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)

// Exclusive scan of one value per thread across the block (blockDim.x = SCAN_THREADS);
// `total` receives the block's sum.
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t v, uint32_t& total)
{
    __shared__ uint32_t warp_sums[SCAN_THREADS / 32];
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    uint32_t x = v;
    #pragma unroll
    for (uint32_t d = 1; d < 32; d <<= 1) {
        uint32_t y = __shfl_up_sync(0xffffffff, x, d);
        if (lane >= d)
            x += y;
    }
    if (lane == 31)
        warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        uint32_t s = lane < warps ? warp_sums[lane] : 0;
        #pragma unroll
        for (uint32_t d = 1; d < 32; d <<= 1) {
            uint32_t y = __shfl_up_sync(0xffffffff, s, d);
            if (lane >= d)
                s += y;
        }
        if (lane < warps)
            warp_sums[lane] = s;
    }
    __syncthreads();
    total = warp_sums[warps - 1];
    uint32_t prefix = (warp ? warp_sums[warp - 1] : 0) + x - v;
    __syncthreads(); // warp_sums is reused by the next call
    return prefix;
}

// Scans tile blockIdx.x of in into out. With tile_sums, the tile's total goes there for
// the next level; without (a single tile), it goes to out[len].
__device__ __forceinline__ void scan_tiles(const uint32_t* in, uint32_t len, uint32_t* out,
                                           uint32_t* tile_sums)
{
    const uint32_t first = blockIdx.x * SCAN_TILE + threadIdx.x * SCAN_ITEMS;
    uint32_t v[SCAN_ITEMS], sum = 0;
    #pragma unroll
    for (uint32_t j = 0; j < SCAN_ITEMS; j++) {
        v[j] = first + j < len ? in[first + j] : 0;
        sum += v[j];
    }
    uint32_t total;
    uint32_t prefix = block_exclusive_scan(sum, total);
    #pragma unroll
    for (uint32_t j = 0; j < SCAN_ITEMS; j++) {
        if (first + j < len)
            out[first + j] = prefix;
        prefix += v[j];
    }
    if (threadIdx.x == 0) {
        if (tile_sums)
            tile_sums[blockIdx.x] = total;
        else
            out[len] = total;
    }
}

// Adds each tile's offset (the scanned tile sums) to its items; the grand total goes to out[len].
__device__ __forceinline__ void scan_add(uint32_t* out, uint32_t len, const uint32_t* tile_offsets)
{
    const uint32_t first = blockIdx.x * SCAN_TILE + threadIdx.x * SCAN_ITEMS;
    const uint32_t offset = tile_offsets[blockIdx.x];
    #pragma unroll
    for (uint32_t j = 0; j < SCAN_ITEMS; j++)
        if (first + j < len)
            out[first + j] += offset;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        out[len] = tile_offsets[gridDim.x];
}

#endif
