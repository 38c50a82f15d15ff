// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Radix-2 NTT over BLS12-381 Fr for the Groth16 h stage, and its element-wise companions.
// Decimation in time after a bit-reversal permutation (Cooley-Tukey), the same transform the
// CPU backend (src/domain.rs) computes, so results match bit for bit. The butterflies take
// their twiddles w^e from one flat table (e < n/2): the 256-bit Montgomery products, not the
// memory traffic, bound this transform, so a twiddle costs a load rather than a product.
// The element-wise kernels take powers b^i from two small tables, hi[i >> 12] * lo[i & 4095].
#ifndef PINPROVE_NTT_NTT_CUH
#define PINPROVE_NTT_NTT_CUH

#include <cstdint>

#ifndef __CUDA_ARCH__
# error "device code only: nvcc compiles this file with --fatbin"
#endif

#include <ff/bls12-381.hpp>

using fr_t = bls12_381::fr_t;

#define LG_TW_LO 12
#define TW_LO (1u << LG_TW_LO)
// Stages done in shared memory by one block of 2^LG_BLOCK contiguous elements.
#define LG_BLOCK 10

__device__ __forceinline__ fr_t table_pow(const fr_t* lo, const fr_t* hi, uint32_t e)
{
    return hi[e >> LG_TW_LO] * lo[e & (TW_LO - 1)];
}

// x[i] <-> x[bitrev(i)].
__device__ __forceinline__ void bit_reverse(fr_t* d_x, uint32_t lg_n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (lg_n == 0 || i >> lg_n)
        return;
    uint32_t j = __brev(i) >> (32 - lg_n);
    if (i < j) {
        fr_t t = d_x[i];
        d_x[i] = d_x[j];
        d_x[j] = t;
    }
}

// Stages 1..lg_block of a size-2^lg_n DIT transform: each block owns 2^lg_block contiguous
// elements (after bit reversal, the early stages never mix blocks). blockDim = 2^(lg_block-1).
// tw[e] = w^e for e < 2^(lg_n-1). Every twiddle of these stages is a power of the
// 2^lg_block-th root, w^(j << (lg_n - lg_block)) for j < blockDim: the block stages them in
// shared memory once, so no stage waits on a global load.
__device__ __forceinline__ void ntt_block(fr_t* d_x, uint32_t lg_n, uint32_t lg_block, const fr_t* tw)
{
    // Raw words: a __shared__ array of fr_t would need a (forbidden) dynamic initialiser.
    __shared__ __align__(16) uint32_t s_words[(sizeof(fr_t) / sizeof(uint32_t)) << LG_BLOCK];
    __shared__ __align__(16) uint32_t s_tw_words[(sizeof(fr_t) / sizeof(uint32_t)) << (LG_BLOCK - 1)];
    fr_t* s_x = reinterpret_cast<fr_t*>(s_words);
    fr_t* s_tw = reinterpret_cast<fr_t*>(s_tw_words);
    const uint32_t t = threadIdx.x;
    fr_t* x = d_x + ((size_t)blockIdx.x << lg_block);
    s_tw[t] = tw[(size_t)t << (lg_n - lg_block)];
    s_x[t] = x[t];
    s_x[t + blockDim.x] = x[t + blockDim.x];
    __syncthreads();
    for (uint32_t s = 1; s <= lg_block; s++) {
        const uint32_t half = 1u << (s - 1);
        const uint32_t p = t & (half - 1);
        const uint32_t i0 = ((t >> (s - 1)) << s) | p;
        fr_t v = s_x[i0 + half] * s_tw[p << (lg_block - s)];
        fr_t u = s_x[i0];
        s_x[i0] = u + v;
        s_x[i0 + half] = u - v;
        __syncthreads();
    }
    x[t] = s_x[t];
    x[t + blockDim.x] = s_x[t + blockDim.x];
}

// Stages s0..s0+k-1 (k <= 3) in registers: each thread owns the 2^k elements base + j*H0,
// H0 = 2^(s0-1), that these stages mix. Consecutive threads own consecutive bases, so every
// load and store is coalesced once H0 >= 32 (always, after ntt_block).
__device__ __forceinline__ void ntt_radix8(fr_t* d_x, uint32_t lg_n, uint32_t s0, uint32_t k,
                                           const fr_t* tw)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >> (lg_n - k))
        return;
    const size_t h0 = (size_t)1 << (s0 - 1);
    const size_t base = ((t >> (s0 - 1)) << (s0 - 1 + k)) | (t & (h0 - 1));
    fr_t r[8];
    #pragma unroll
    for (uint32_t j = 0; j < 8; j++)
        if (j < (1u << k))
            r[j] = d_x[base + j * h0];
    #pragma unroll
    for (uint32_t l = 0; l < 3; l++) {
        if (l >= k)
            break;
        const uint32_t s = s0 + l;
        #pragma unroll
        for (uint32_t j = 0; j < 8; j++) {
            if (j >= (1u << k) || (j >> l) & 1)
                continue;
            const size_t i0 = base + j * h0;
            const uint32_t p = (uint32_t)(i0 & ((h0 << l) - 1));
            fr_t v = r[j + (1u << l)] * tw[(size_t)p << (lg_n - s)];
            fr_t u = r[j];
            r[j] = u + v;
            r[j + (1u << l)] = u - v;
        }
    }
    #pragma unroll
    for (uint32_t j = 0; j < 8; j++)
        if (j < (1u << k))
            d_x[base + j * h0] = r[j];
}

// out[i] = base^i, for the twiddle and coset tables.
__device__ __forceinline__ void powers(fr_t* out, uint32_t n, fr_t base)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = base ^ i;
}

// x[i] *= c * g^i: the coset shift fused with the 1/m of an inverse transform.
__device__ __forceinline__ void scale_by_powers(fr_t* d_x, uint32_t lg_n, const fr_t* pw_lo,
                                                const fr_t* pw_hi, fr_t c)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >> lg_n)
        return;
    d_x[i] = d_x[i] * (c * table_pow(pw_lo, pw_hi, (uint32_t)i));
}

// a[i] = (a[i]*b[i] - c[i]) * z_inv: the quotient by Z, constant on the coset.
__device__ __forceinline__ void quotient(fr_t* d_a, const fr_t* d_b, const fr_t* d_c,
                                         uint32_t lg_n, fr_t z_inv)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >> lg_n)
        return;
    d_a[i] = (d_a[i] * d_b[i] - d_c[i]) * z_inv;
}

#endif
