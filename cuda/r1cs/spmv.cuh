// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Recorded constraints on the device (src/r1cs): a = A·z, b = B·z, c = C·z from matrices in
// compressed sparse rows, and the gathers of the A and B MSMs' scalars. z = input ‖ aux is
// never assembled: a variable v below the inputs' count is input[v], else aux[v − inputs], so
// the aux go from the partition's pinned buffer straight to the L MSM's scalars. Coefficient
// index 0 is 1 and 1 is −1 (the table's first entries): those terms take an addition or a
// subtraction, the others a product.
#ifndef PINPROVE_R1CS_SPMV_CUH
#define PINPROVE_R1CS_SPMV_CUH

#include "../ff/fields.cuh"
#include "../geometry.h"

__device__ __forceinline__ fr_t z_at(const fr_t* input, const fr_t* aux, uint32_t inputs, uint32_t v)
{   return v < inputs ? input[v] : aux[v - inputs];   }

// Lanes that share a row: a row's entries are strided over them and their sums added by
// shuffles. Bit-heavy circuits have mostly short rows and a few long ones (SHA-256's 32-bit
// additions sum 100 and more bits): a thread alone on a long row held its warp, and its
// block, for as many dependent loads as entries (SPMV_LANES: geometry.h).

// out[i] = ⟨row i, z⟩ for i < rows, 0 for rows ≤ i < n (the domain's padding). A thread per
// lane of a row; every thread of the grid takes part in the shuffles. The starts may be a
// chunk's of a streamed matrix: rows' starts as the whole matrix numbers its entries, and
// vars and coeffs from the chunk's first entry, starts[0] (0 for a whole matrix).
template<typename start_t>
__device__ __forceinline__ void spmv(const start_t* starts, const uint32_t* vars, const uint32_t* coeffs,
                                     const fr_t* table, const fr_t* input, const fr_t* aux, uint32_t inputs,
                                     uint32_t rows, uint32_t n, fr_t* out)
{
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / SPMV_LANES;
    const uint32_t lane = threadIdx.x % SPMV_LANES;
    fr_t acc;
    acc.zero();
    if (i < rows) {
        const start_t first = starts[0], end = starts[i + 1];
        for (start_t e = starts[i] + lane; e < end; e += SPMV_LANES) {
            const fr_t x = z_at(input, aux, inputs, vars[e - first]);
            const uint32_t k = coeffs[e - first];
            if (k == 0)
                acc += x;
            else if (k == 1)
                acc -= x;
            else
                acc += x * table[k];
        }
    }
    #pragma unroll
    for (uint32_t d = SPMV_LANES / 2; d > 0; d /= 2) {
        fr_t other;
        #pragma unroll
        for (size_t l = 0; l < sizeof(fr_t) / sizeof(uint32_t); l++)
            other[l] = __shfl_down_sync(0xffffffff, acc[l], d, SPMV_LANES);
        acc += other;
    }
    if (i < n && lane == 0)
        out[i] = acc;
}

// out[i] = z[vars[i]] for i < n.
__device__ __forceinline__ void gather(const uint32_t* vars, uint32_t n, const fr_t* input, const fr_t* aux,
                                       uint32_t inputs, fr_t* out)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = z_at(input, aux, inputs, vars[i]);
}

#endif
