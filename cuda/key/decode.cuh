// SPDX-License-Identifier: MIT OR Apache-2.0
//
// A proving key's points decoded on the device from its parameter file's bytes as they are
// (src/groth16/params.rs: bellperson's uncompressed encoding, each coordinate 48 big-endian
// bytes, G2's c1 before c0, flag bits in the first byte's top three) into blst's affine
// layout (Montgomery form, little-endian limbs), so that the host only reads the file. Each
// point is checked as the host's Check::OnCurve decode checks a query point: every coordinate
// below p (which also refuses every flag bit, since p < 2^381), on the curve, x ≠ 0 (blst
// refuses (0, ±2), and infinity is a flag). A point that fails leaves ~index in *bad by
// atomicMax, so *bad names the first of them (0: none), and the host decodes that point again
// for the reason.
#ifndef PINPROVE_KEY_DECODE_CUH
#define PINPROVE_KEY_DECODE_CUH

#include <cstdint>

#include "../ec/xyzz.cuh"
#include "../ec/fp2.cuh"

// The 48 big-endian bytes at `be` as limbs, out of Montgomery form; false unless below p.
__device__ __forceinline__ bool read_coordinate(const uint32_t* be, fp_t& out)
{
    bool below = false, decided = false;
    #pragma unroll
    for (int i = 11; i >= 0; i--) {
        const uint32_t limb = __byte_perm(be[11 - i], 0, 0x0123), p = device::BLS12_381_P[i];
        out[i] = limb;
        below |= !decided & (limb < p);
        decided |= limb != p;
    }
    return below;
}

// c1 ‖ c0, as the encoding orders Fp2's coefficients.
__device__ __forceinline__ bool read_coordinate(const uint32_t* be, fp2_t<fp_t>& out)
{   return read_coordinate(be, out.c1) & read_coordinate(be + 12, out.c0);   }

__device__ __forceinline__ void to_montgomery(fp_t& a)
{   a.to();   }

__device__ __forceinline__ void to_montgomery(fp2_t<fp_t>& a)
{   a.c0.to(); a.c1.to();   }

// The curves' b: 4 for G1, 4(1 + u) for G2.
__device__ __forceinline__ void curve_b(fp_t& b)
{   const fp_t two = fp_t::one() + fp_t::one(); b = two + two;   }

__device__ __forceinline__ void curve_b(fp2_t<fp_t>& b)
{   curve_b(b.c0); b.c1 = b.c0;   }

// out[i] = point i of `raw` (n points of 2·sizeof(field) bytes each), for i < n.
template<class field>
__device__ __forceinline__ void key_decode(const uint8_t* raw, uint32_t n, affine_t<field>* out, uint32_t* bad)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    constexpr uint32_t words = sizeof(field) / 4;
    const uint32_t* be = reinterpret_cast<const uint32_t*>(raw) + (size_t)i * 2 * words;
    affine_t<field> p;
    const bool canonical = read_coordinate(be, p.x) & read_coordinate(be + words, p.y);
    to_montgomery(p.x);
    to_montgomery(p.y);
    field b;
    curve_b(b);
    const bool on_curve = (square(p.y) - (mul(square(p.x), p.x) + b)).is_zero();
    if (!canonical || !on_curve || p.x.is_zero())
        atomicMax(bad, ~i);
    out[i] = p;
}

#endif
