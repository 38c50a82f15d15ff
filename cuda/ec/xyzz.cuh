// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Short Weierstrass points with a = 0 (BLS12-381's G1 over Fp and G2 over Fp2) in XYZZ
// coordinates: x = X/ZZ, y = Y/ZZZ, with ZZ³ = ZZZ² kept by every formula. Formulas from the
// Explicit-Formulas Database (hyperelliptic.org/EFD/g1p/auto-shortw-xyzz.html):
// madd-2008-s (8M + 2S), add-2008-s (12M + 2S), mdbl-2008-s-1 and dbl-2008-s-1, with the
// cases they leave out handled here: either input at infinity, equal inputs (doubling) and
// opposite inputs (infinity). Infinity is ZZ = ZZZ = 0; an affine point at infinity is
// (0, 0), as blst stores it. The field supplies mul, square and mul_sub (a·b − c·d, each
// formula's Y3); ff/fields.cuh has G1's, ec/fp2.cuh G2's.
#ifndef PINPROVE_EC_XYZZ_CUH
#define PINPROVE_EC_XYZZ_CUH

#include "../ff/fields.cuh"

template<class field> struct affine_t {
    field x, y;

    __device__ __forceinline__ bool is_inf() const
    {   return x.is_zero() & y.is_zero();   }
};

// blst's projective layout (Jacobian: x = X/Z², y = Y/Z³), so sums cross to the host as
// blst_p1 / blst_p2 without conversion.
template<class field> struct jacobian_t {
    field x, y, z;
};

template<class field> struct xyzz_t {
    field x, y, zz, zzz;

    static __device__ __forceinline__ xyzz_t inf()
    {   xyzz_t p; p.x.zero(); p.y.zero(); p.zz.zero(); p.zzz.zero(); return p;   }

    __device__ __forceinline__ bool is_inf() const
    {   return zz.is_zero();   }

    // this = 2·this (dbl-2008-s-1; a = 0). Infinity stays infinity (ZZ3 = V·0).
    __device__ __forceinline__ void dbl()
    {
        field u = y + y;
        field v = square(u);
        field w = mul(u, v);
        field s = mul(x, v);
        field m = square(x);
        m = m + m + m;
        x = square(m) - s - s;
        y = mul_sub(m, s - x, w, y);
        zz = mul(zz, v);
        zzz = mul(zzz, w);
    }

    // this = 2·(q or −q), from an affine q not at infinity (mdbl-2008-s-1).
    __device__ __forceinline__ void set_dbl(const affine_t<field>& q, bool neg)
    {
        field qy = q.y;
        qy.cneg(neg);
        field u = qy + qy;
        zz = square(u);
        zzz = mul(u, zz);
        field s = mul(q.x, zz);
        field m = square(q.x);
        m = m + m + m;
        x = square(m) - s - s;
        y = mul_sub(m, s - x, zzz, qy);
    }

    // this += q, or −q when `neg` (madd-2008-s).
    __device__ __forceinline__ void add(const affine_t<field>& q, bool neg)
    {
        if (q.is_inf())
            return;
        if (is_inf()) {
            x = q.x;
            y = q.y;
            y.cneg(neg);
            zz = field::one();
            zzz = field::one();
            return;
        }
        field qy = q.y;
        qy.cneg(neg);
        field p = mul(q.x, zz) - x; // U2 − X1
        field r = mul(qy, zzz) - y;  // S2 − Y1
        if (p.is_zero()) {
            if (r.is_zero())
                set_dbl(q, neg);  // q == this
            else
                *this = inf();    // q == −this
            return;
        }
        field pp = square(p);
        field ppp = mul(p, pp);
        field qq = mul(x, pp);
        x = square(r) - ppp - qq - qq;
        y = mul_sub(r, qq - x, y, ppp);
        zz = mul(zz, pp);
        zzz = mul(zzz, ppp);
    }

    // this += q (add-2008-s).
    __device__ __forceinline__ void add(const xyzz_t& q)
    {
        if (q.is_inf())
            return;
        if (is_inf()) {
            *this = q;
            return;
        }
        field u1 = mul(x, q.zz);
        field s1 = mul(y, q.zzz);
        field p = mul(q.x, zz) - u1;  // U2 − U1
        field r = mul(q.y, zzz) - s1; // S2 − S1
        if (p.is_zero()) {
            if (r.is_zero())
                dbl();            // q == this
            else
                *this = inf();    // q == −this
            return;
        }
        field pp = square(p);
        field ppp = mul(p, pp);
        field qq = mul(u1, pp);
        x = square(r) - ppp - qq - qq;
        y = mul_sub(r, qq - x, s1, ppp);
        zz = mul(mul(zz, q.zz), pp);
        zzz = mul(mul(zzz, q.zzz), ppp);
    }

    // Jacobian (X·ZZ, Y·ZZZ, ZZ): x = X·ZZ/ZZ² and y = Y·ZZZ/ZZ³ = Y/ZZZ since ZZ³ = ZZZ².
    // Infinity maps to Z = 0, blst's infinity.
    __device__ __forceinline__ jacobian_t<field> to_jacobian() const
    {
        jacobian_t<field> j;
        j.x = mul(x, zz);
        j.y = mul(y, zzz);
        j.z = zz;
        return j;
    }
};

#endif
