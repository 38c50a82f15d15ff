// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Fp2 = Fp[u]/(u² + 1), the field of BLS12-381's G2 coordinates, over sppark's fp_t. One
// thread holds both coefficients (c0 + c1·u), in blst's blst_fp2 layout, so G2 points load
// from the proving key as they are. Products as dot products reduced once (4 base-field
// products, 2 reductions), squares by (a0 + a1)(a0 − a1) (2 products). Only what the curve
// layer (ec/xyzz.cuh) needs.
#ifndef PINPROVE_EC_FP2_CUH
#define PINPROVE_EC_FP2_CUH

#include "../ff/fields.cuh"

template<class fp> struct fp2_t {
    fp c0, c1;

    static __device__ __forceinline__ fp2_t one()
    {   fp2_t r; r.c0 = fp::one(); r.c1.zero(); return r;   }

    __device__ __forceinline__ void zero()
    {   c0.zero(); c1.zero();   }

    __device__ __forceinline__ bool is_zero() const
    {   return c0.is_zero() & c1.is_zero();   }

    __device__ __forceinline__ fp2_t& cneg(bool flag)
    {   c0.cneg(flag); c1.cneg(flag); return *this;   }

    friend __device__ __forceinline__ fp2_t operator+(const fp2_t& a, const fp2_t& b)
    {   fp2_t r; r.c0 = a.c0 + b.c0; r.c1 = a.c1 + b.c1; return r;   }

    friend __device__ __forceinline__ fp2_t operator-(const fp2_t& a, const fp2_t& b)
    {   fp2_t r; r.c0 = a.c0 - b.c0; r.c1 = a.c1 - b.c1; return r;   }

    // (a0 + a1·u)(b0 + b1·u) = (a0b0 − a1b1) + (a0b1 + a1b0)·u, each part one dot product
    // (sppark's: two products, one reduction), where Karatsuba's three products take three
    // reductions and four more additions.
    friend __device__ __noinline__ fp2_t mul(const fp2_t& a, const fp2_t& b)
    {
        fp2_t r;
        r.c0 = fp::dot_product(a.c0, b.c0, -a.c1, b.c1);
        r.c1 = fp::dot_product(a.c0, b.c1, a.c1, b.c0);
        return r;
    }

    // (a0 + a1·u)² = (a0 + a1)(a0 − a1) + 2·a0a1·u
    friend __device__ __noinline__ fp2_t square(const fp2_t& a)
    {
        fp2_t r;
        fp t = a.c0 * a.c1;
        r.c0 = (a.c0 + a.c1) * (a.c0 - a.c1);
        r.c1 = t + t;
        return r;
    }

    friend __device__ __forceinline__ fp2_t mul_sub(const fp2_t& a, const fp2_t& b, const fp2_t& c, const fp2_t& d)
    {   return mul(a, b) - mul(c, d);   }

    // 1/(a0 + a1·u) = (a0 − a1·u)/(a0² + a1²), for a ≠ 0.
    friend __device__ __noinline__ fp2_t inverse(const fp2_t& a)
    {
        const fp n = inverse(a.c0 * a.c0 + a.c1 * a.c1);
        fp2_t r;
        r.c0 = a.c0 * n;
        r.c1 = -(a.c1 * n);
        return r;
    }
};

#endif
