// SPDX-License-Identifier: MIT OR Apache-2.0
//
// A witness of bits expanded (src/synth/packed.rs): value i is 1 where bit i % 64 of word
// i / 64 of `ones` is set, the next of `values` where that bit of `others` is, else 0;
// ranks[g] counts the others before value g · PACKED_GROUP. The aux it writes are z's tail
// for the products (spmv.cuh) and the L MSM's scalars; the bitmaps also say, unread, which
// aux are 0 or 1 to the products, the gathers and the MSMs' split (msm/split.cuh).
#ifndef PINPROVE_R1CS_PACKED_CUH
#define PINPROVE_R1CS_PACKED_CUH

#include "../ff/fields.cuh"
#include "../geometry.h"

__device__ __forceinline__ fr_t z_at(const fr_t* input, const fr_t* aux, uint32_t inputs, uint32_t v)
{   return v < inputs ? input[v] : aux[v - inputs];   }

// z = input ‖ aux as the products, the gathers and the split read it: the aux expanded, and
// the bitmaps they were expanded from.
struct packed_z_t {
    const fr_t* input;
    const fr_t* aux;
    const uint64_t* ones;
    const uint64_t* others;
    uint32_t inputs;
};

__device__ __forceinline__ bool bit_at(const uint64_t* bits, uint32_t i)
{   return (bits[i / 64] >> (i % 64)) & 1;   }

// Whether z[v] is an aux that is 0 or 1, read from the bitmaps (`one` then says which); the
// inputs and the aux neither 0 nor 1 are read from z.
__device__ __forceinline__ bool bit_of_z(const packed_z_t& z, uint32_t v, bool& one)
{
    if (v < z.inputs || bit_at(z.others, v - z.inputs))
        return false;
    one = bit_at(z.ones, v - z.inputs);
    return true;
}

// aux[i] for the values of group blockIdx.x (blockDim.x = PACKED_THREADS). Warp 0 counts the
// others before each of the group's 64 words (two a lane, a shuffle scan); then the block
// writes the group's values, a thread every PACKED_THREADS, so that a warp's stores are
// consecutive.
__device__ __forceinline__ void packed_expand(const uint64_t* ones, const uint64_t* others, const uint32_t* ranks,
                                              const fr_t* values, uint32_t len, fr_t* aux)
{
    static_assert(PACKED_GROUP == 64 * 64, "warp 0 takes a group's 64 words two a lane");
    __shared__ uint32_t before[PACKED_GROUP / 64];
    const uint32_t first = blockIdx.x * PACKED_GROUP, word0 = first / 64;
    const uint32_t words = (min(len - first, (uint32_t)PACKED_GROUP) + 63) / 64;
    if (threadIdx.x < 32) {
        const uint32_t lane = threadIdx.x, w = 2 * lane;
        const uint32_t c0 = w < words ? __popcll(others[word0 + w]) : 0;
        const uint32_t c1 = w + 1 < words ? __popcll(others[word0 + w + 1]) : 0;
        uint32_t x = c0 + c1;
        #pragma unroll
        for (uint32_t d = 1; d < 32; d <<= 1) {
            const uint32_t y = __shfl_up_sync(0xffffffff, x, d);
            if (lane >= d)
                x += y;
        }
        const uint32_t exclusive = ranks[blockIdx.x] + x - c0 - c1;
        before[w] = exclusive;
        before[w + 1] = exclusive + c0;
    }
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < PACKED_GROUP && first + k < len; k += blockDim.x) {
        const uint64_t bit = 1ull << (k % 64), other = others[word0 + k / 64];
        fr_t x;
        if (other & bit)
            x = values[before[k / 64] + __popcll(other & (bit - 1))];
        else if (ones[word0 + k / 64] & bit)
            x = fr_t::one();
        else
            x.zero();
        aux[first + k] = x;
    }
}

#endif
