// SPDX-License-Identifier: MIT OR Apache-2.0
//
// BLS12-381's fields, sppark's fr_t (scalars) and fp_t (G1's coordinates), and the products
// the curve formulas (ec/xyzz.cuh) call for G1: mul, square, mul_sub and inverse.
#ifndef PINPROVE_FF_FIELDS_CUH
#define PINPROVE_FF_FIELDS_CUH

#ifndef __CUDA_ARCH__
# error "device code only: nvcc compiles this file with --fatbin"
#endif

#include <ff/bls12-381.hpp>

using fr_t = bls12_381::fr_t;
using fp_t = bls12_381::fp_t;

// G1's products, out of line: inlined, the code of the bucket sums and window segments
// outgrew the instruction cache (ncu, 2^22: 2.4 of 12.3 cycles between issues waiting for
// instructions in the sums, 4.8 in the segments; out of line, 0.03 and 0.05, and the segments
// take 33 % less time). Arguments by value, so they travel in registers.
__device__ __noinline__ fp_t mul(fp_t a, fp_t b)
{   return a * b;   }

// sppark's squaring adds each cross product once and doubles the sum.
__device__ __noinline__ fp_t square(fp_t a)
{   return sqr(a);   }

// a·b − c·d, reduced once (sppark's dot product).
__device__ __noinline__ fp_t mul_sub(fp_t a, fp_t b, fp_t c, fp_t d)
{   return fp_t::dot_product(a, b, -c, d);   }

// 1/a = a^(p−2) for a ≠ 0 (Fermat), one thread alone: sppark's reciprocal pairs the lanes of
// a warp. For the one inversion per block of the shifted bases' precompute (msm/shift.cuh).
__device__ __noinline__ fp_t inverse(fp_t a)
{
    fp_t r = fp_t::one();
    #pragma unroll 1
    for (int i = 11; i >= 0; i--) {
        const uint32_t e = device::BLS12_381_P[i] - (i == 0 ? 2 : 0); // p's low limb ends in ...aaab
        #pragma unroll 1
        for (int b = 31; b >= 0; b--) {
            r = sqr(r);
            if ((e >> b) & 1)
                r = r * a;
        }
    }
    return r;
}

#endif
