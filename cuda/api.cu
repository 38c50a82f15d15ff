// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The kernels the Rust side launches (src/backend/cuda/ffi.rs). The only translation unit of
// the fatbin; every entry point is extern "C" and prefixed g16_. Field elements are passed as
// fr_t (Montgomery form, 8 x u32 LE), bit-compatible with blstrs' Scalar.
#ifndef PINPROVE_API_CU
#define PINPROVE_API_CU

#include "ntt/ntt.cuh"

extern "C" __global__ void g16_bit_reverse(fr_t* d_x, uint32_t lg_n)
{   bit_reverse(d_x, lg_n);   }

extern "C" __global__ void __launch_bounds__(1 << (LG_BLOCK - 1))
g16_ntt_block(fr_t* d_x, uint32_t lg_n, uint32_t lg_block, const fr_t* tw)
{   ntt_block(d_x, lg_n, lg_block, tw);   }

extern "C" __global__ void __launch_bounds__(256)
g16_ntt_radix8(fr_t* d_x, uint32_t lg_n, uint32_t s0, uint32_t k, const fr_t* tw)
{   ntt_radix8(d_x, lg_n, s0, k, tw);   }

extern "C" __global__ void g16_scale_by_powers(fr_t* d_x, uint32_t lg_n, const fr_t* pw_lo,
                                               const fr_t* pw_hi, fr_t c)
{   scale_by_powers(d_x, lg_n, pw_lo, pw_hi, c);   }

extern "C" __global__ void g16_quotient(fr_t* d_a, const fr_t* d_b, const fr_t* d_c, uint32_t lg_n,
                                        fr_t z_inv)
{   quotient(d_a, d_b, d_c, lg_n, z_inv);   }

#endif
