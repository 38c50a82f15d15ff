// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Recorded constraints on the device (src/r1cs): a = A·z, b = B·z, c = C·z from matrices in
// compressed sparse rows, and the gathers of the A and B MSMs' scalars. z = input ‖ aux is
// never assembled: a variable v below the inputs' count is input[v], else aux[v − inputs], so
// the aux go from the partition's pinned buffer straight to the L MSM's scalars. Coefficient
// index 0 is 1 and 1 is −1 (the table's first entries): those terms take an addition or a
// subtraction, the others a product. The products and the gathers read an aux that is 0 or 1
// (98 to 99.6 % of a bit-heavy witness's) from the packed aux' bitmaps (packed.cuh: two bits
// a variable, 4 MB at 2^24, which L2 holds), not as 32 bytes gathered from memory: its term
// is then its coefficient or nothing, never a product, and its scalar is written, not read.
#ifndef PINPROVE_R1CS_SPMV_CUH
#define PINPROVE_R1CS_SPMV_CUH

#include "../ff/fields.cuh"
#include "../geometry.h"
#include "packed.cuh"

// The terms of entries [from, end) of a matrix at stride `stride`, summed: a group's lane takes
// every stride-th entry of its row.
template<typename start_t>
__device__ __forceinline__ fr_t row_terms(start_t from, start_t end, uint32_t stride, start_t first,
                                          const uint32_t* vars, const uint32_t* coeffs, const fr_t* table,
                                          const packed_z_t& z)
{
    fr_t acc;
    acc.zero();
    for (start_t e = from; e < end; e += stride) {
        const uint32_t v = vars[e - first], k = coeffs[e - first];
        bool one;
        if (bit_of_z(z, v, one)) {
            if (one)
                acc += table[k];
            continue;
        }
        const fr_t x = z_at(z.input, z.aux, z.inputs, v);
        if (k == 0)
            acc += x;
        else if (k == 1)
            acc -= x;
        else
            acc += x * table[k];
    }
    return acc;
}

// acc summed over each aligned group of `width` lanes, into the group's first lane.
__device__ __forceinline__ fr_t lanes_sum(fr_t acc, uint32_t width)
{
    for (uint32_t d = width / 2; d > 0; d /= 2) {
        fr_t other;
        #pragma unroll
        for (size_t l = 0; l < sizeof(fr_t) / sizeof(uint32_t); l++)
            other[l] = __shfl_down_sync(0xffffffff, acc[l], d, width);
        acc += other;
    }
    return acc;
}

// Lanes that share a row: a row's entries are strided over SPMV_LANES lanes and their sums
// added by shuffles. Bit-heavy circuits have mostly short rows and a few long ones (SHA-256's
// 32-bit additions sum 100 and more bits, up to 900 in a row of A): a group alone on a long
// row holds its warp for as many steps as the row has entries over SPMV_LANES. So a warp
// whose rows longer than itself take fewer steps on all its 32 lanes, one after another
// (each a step more for its sum), than its longest row on its group, sums them that way; a
// warp of rows alike (the dense chains) keeps its groups.

// out[i] = ⟨row i, z⟩ for i < rows, 0 for rows ≤ i < n (the domain's padding). A thread per
// lane of a row; every thread of the grid takes part in the shuffles. The starts may be a
// chunk's of a streamed matrix: rows' starts as the whole matrix numbers its entries, and
// vars and coeffs from the chunk's first entry, starts[0] (0 for a whole matrix).
template<typename start_t>
__device__ __forceinline__ void spmv(const start_t* starts, const uint32_t* vars, const uint32_t* coeffs,
                                     const fr_t* table, const packed_z_t& z, uint32_t rows, uint32_t n, fr_t* out)
{
    const size_t thread = (size_t)blockIdx.x * blockDim.x + threadIdx.x, i = thread / SPMV_LANES;
    const uint32_t lane = threadIdx.x % SPMV_LANES, warp_lane = threadIdx.x % 32;
    const start_t first = starts[0];
    start_t begin = 0, end = 0;
    if (i < rows) {
        begin = starts[i];
        end = starts[i + 1];
    }
    const uint32_t len = (uint32_t)(end - begin), longest = __reduce_max_sync(0xffffffff, len);
    const bool wide = len > 32;
    const uint32_t warp_steps = __reduce_add_sync(0xffffffff, wide && lane == 0 ? (len + 31) / 32 + 1 : 0);
    const bool by_warp = wide && warp_steps < (longest + SPMV_LANES - 1) / SPMV_LANES;
    fr_t acc;
    if (by_warp)
        acc.zero();
    else
        acc = row_terms(begin + lane, end, SPMV_LANES, first, vars, coeffs, table, z);
    acc = lanes_sum(acc, SPMV_LANES);
    if (i < n && lane == 0 && !by_warp)
        out[i] = acc;
    // The warp's wide rows, each by all its lanes (a warp-uniform loop: the ballot is).
    for (uint32_t leaders = __ballot_sync(0xffffffff, by_warp && lane == 0); leaders;
         leaders &= leaders - 1) {
        const uint32_t leader = __ffs(leaders) - 1;
        const start_t b = __shfl_sync(0xffffffff, begin, leader), e = __shfl_sync(0xffffffff, end, leader);
        fr_t sum = row_terms(b + warp_lane, e, 32, first, vars, coeffs, table, z);
        sum = lanes_sum(sum, 32);
        if (warp_lane == 0)
            out[(thread - warp_lane + leader) / SPMV_LANES] = sum;
    }
}

// out[i] = z[vars[i]] for i < n.
__device__ __forceinline__ void gather(const uint32_t* vars, uint32_t n, const packed_z_t& z, fr_t* out)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const uint32_t v = vars[i];
    bool one;
    fr_t x;
    if (!bit_of_z(z, v, one))
        x = z_at(z.input, z.aux, z.inputs, v);
    else if (one)
        x = fr_t::one();
    else
        x.zero();
    out[i] = x;
}

#endif
