//! Multi-scalar multiplication Σ sᵢ·Pᵢ over G1 or G2, on the CPU.
//!
//! Layer: maths, CPU side; the reference the GPU MSM is checked against. Algorithm: Pippenger's
//! bucket method (see "Faster batch forgery identification", Bernstein et al., 2012, §4):
//! scalars are cut into c-bit windows; per window, each point is added into the bucket of its
//! digit and the buckets are summed by a running sum; windows are combined by doubling.
//! Windows are independent, so each runs as one rayon task.

use blstrs::Scalar;
use ff::PrimeField;
use group::Curve;
use rayon::prelude::*;

/// Σ scalarsᵢ·basesᵢ over the first `min(len)` pairs.
pub fn msm<G: Curve>(bases: &[G::AffineRepr], scalars: &[Scalar]) -> G
where
    G::AffineRepr: Sync,
{
    let n = bases.len().min(scalars.len());
    debug_assert_eq!(bases.len(), scalars.len(), "msm over {} bases and {} scalars", bases.len(), scalars.len());
    if n == 0 {
        return G::identity();
    }
    let c = window_bits(n);
    let limbs: Vec<[u64; 4]> = scalars[..n].par_iter().with_min_len(1 << 12).map(canonical_limbs).collect();
    let windows = (Scalar::NUM_BITS as usize).div_ceil(c);
    let window_sums: Vec<G> = (0..windows)
        .into_par_iter()
        .map(|w| {
            let mut buckets = vec![G::identity(); (1 << c) - 1];
            for (base, k) in bases[..n].iter().zip(&limbs) {
                let digit = window_digit(k, w * c, c);
                if digit != 0 {
                    buckets[digit - 1] += base;
                }
            }
            // Σ_d d·bucket_d as a running sum from the top bucket down.
            let (mut running, mut sum) = (G::identity(), G::identity());
            for bucket in buckets.iter().rev() {
                running += bucket;
                sum += running;
            }
            sum
        })
        .collect();
    window_sums.iter().rev().fold(G::identity(), |acc, s| {
        let mut acc = acc;
        for _ in 0..c {
            acc = acc.double();
        }
        acc + s
    })
}

/// Window width: about ln n bits, the classic balance of bucket additions against point reads.
fn window_bits(n: usize) -> usize {
    if n < 32 {
        3
    } else {
        ((n as f64).ln().ceil() as usize).min(16)
    }
}

/// The scalar as a little-endian integer (out of Montgomery form).
fn canonical_limbs(s: &Scalar) -> [u64; 4] {
    let bytes = s.to_repr();
    std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes")))
}

/// Bits `[offset, offset + width)` of `k`, width ≤ 16.
fn window_digit(k: &[u64; 4], offset: usize, width: usize) -> usize {
    let (limb, shift) = (offset / 64, offset % 64);
    let mut bits = k[limb] >> shift;
    if shift + width > 64 && limb + 1 < 4 {
        bits |= k[limb + 1] << (64 - shift);
    }
    (bits & ((1 << width) - 1)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use ff::Field;
    use group::prime::PrimeCurveAffine;
    use group::Group;
    use rand_core::SeedableRng;

    fn naive<G>(bases: &[G::AffineRepr], scalars: &[Scalar]) -> G
    where
        G: Curve + Group<Scalar = Scalar>,
        G::AffineRepr: PrimeCurveAffine<Curve = G>,
    {
        bases.iter().zip(scalars).fold(G::identity(), |acc, (b, s)| acc + b.to_curve() * *s)
    }

    fn check<G>(n: usize, seed: u64)
    where
        G: Curve + Group<Scalar = Scalar>,
        G::AffineRepr: PrimeCurveAffine<Curve = G> + Sync,
    {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let bases: Vec<G::AffineRepr> = (0..n).map(|_| G::random(&mut rng).to_affine()).collect();
        let mut scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        // Edge digits: zero, one, and -1 (all ones in every window).
        if n >= 3 {
            scalars[0] = Scalar::ZERO;
            scalars[1] = Scalar::ONE;
            scalars[2] = -Scalar::ONE;
        }
        assert_eq!(msm::<G>(&bases, &scalars), naive::<G>(&bases, &scalars), "n = {n}");
    }

    #[test]
    fn g1_msm_equals_naive_sum() {
        for (n, seed) in [(0, 0), (1, 1), (3, 2), (31, 3), (200, 4)] {
            check::<G1Projective>(n, seed);
        }
    }

    #[test]
    fn g2_msm_equals_naive_sum() {
        check::<G2Projective>(70, 5);
    }

    #[test]
    fn digits_cross_limb_boundaries() {
        let k = [u64::MAX, 0b101, 0, 1 << 63];
        assert_eq!(window_digit(&k, 60, 8), 0b0101_1111);
        assert_eq!(window_digit(&k, 255, 3), 1);
    }
}
