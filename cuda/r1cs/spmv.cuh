// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Recorded constraints on the device (src/r1cs): a = A·z, b = B·z, c = C·z from matrices in
// compressed sparse rows, and the gathers of the A and B MSMs' scalars. z = input ‖ aux is
// never assembled: a variable v below the inputs' count is input[v], else aux[v − inputs], so
// the aux go from the partition's pinned buffer straight to the L MSM's scalars. Coefficient
// index 0 is 1 and 1 is −1 (the table's first entries): those terms take an addition or a
// subtraction, the others a product. One thread a row: bit-heavy circuits have short rows.
#ifndef PINPROVE_R1CS_SPMV_CUH
#define PINPROVE_R1CS_SPMV_CUH

#include "ff/fields.cuh"

__device__ __forceinline__ fr_t z_at(const fr_t* input, const fr_t* aux, uint32_t inputs, uint32_t v)
{   return v < inputs ? input[v] : aux[v - inputs];   }

// out[i] = ⟨row i, z⟩ for i < rows, 0 for rows ≤ i < n (the domain's padding).
template<typename start_t>
__device__ __forceinline__ void spmv(const start_t* starts, const uint32_t* vars, const uint32_t* coeffs,
                                     const fr_t* table, const fr_t* input, const fr_t* aux, uint32_t inputs,
                                     uint32_t rows, uint32_t n, fr_t* out)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    fr_t acc;
    acc.zero();
    if (i < rows) {
        const start_t end = starts[i + 1];
        for (start_t e = starts[i]; e < end; e++) {
            const fr_t x = z_at(input, aux, inputs, vars[e]);
            const uint32_t k = coeffs[e];
            if (k == 0)
                acc += x;
            else if (k == 1)
                acc -= x;
            else
                acc += x * table[k];
        }
    }
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
