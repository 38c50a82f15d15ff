//! Multi-scalar multiplication Σ sᵢ·Pᵢ over G1 or G2, on the CPU: the reference the GPU MSM is
//! checked against, and the CPU backend's.
//!
//! Layer: maths, CPU side. Algorithm: blst's Pippenger (`blst_p{1,2}s_mult_pippenger`, from
//! the blst crate that blstrs is built on), which measured 1.5–1.8× faster than the bucket
//! method this crate had of its own; it runs on blst's thread pool, which nothing of the
//! prover's callers can exhaust. The only casts: blstrs' affine points are
//! `#[repr(transparent)]` over blst's, so the key's bases go to blst as they are.
#![allow(unsafe_code)]

use blst::MultiPoint;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::PrimeField;
use group::Group;
use rayon::prelude::*;

mod sealed {
    pub trait Sealed {}
    impl Sealed for blstrs::G1Projective {}
    impl Sealed for blstrs::G2Projective {}
}

/// A group the CPU MSM runs on: G1 and G2 of BLS12-381.
pub trait CpuMsm: sealed::Sealed + Group<Scalar = Scalar> {
    /// Its affine points.
    type Affine: Sync;
    /// blst's MSM of `bases` with `bytes`, the scalars' little-endian encodings (32 each).
    #[doc(hidden)]
    fn blst_msm(bases: &[Self::Affine], bytes: &[u8]) -> Self;
}

// G1Affine and G2Affine are repr(transparent) over blst's affine points: same size, checked.
const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<blst::blst_p1_affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<blst::blst_p2_affine>());

impl CpuMsm for G1Projective {
    type Affine = G1Affine;
    fn blst_msm(bases: &[G1Affine], bytes: &[u8]) -> Self {
        // SAFETY: G1Affine is #[repr(transparent)] over blst_p1_affine (size asserted above),
        // so the slice reinterprets element for element; the lifetime is the input's.
        let points: &[blst::blst_p1_affine] = unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) };
        let mut sum = G1Projective::identity();
        *sum.as_mut() = points.mult(bytes, Scalar::NUM_BITS as usize);
        sum
    }
}

impl CpuMsm for G2Projective {
    type Affine = G2Affine;
    fn blst_msm(bases: &[G2Affine], bytes: &[u8]) -> Self {
        // SAFETY: as for G1: G2Affine is #[repr(transparent)] over blst_p2_affine.
        let points: &[blst::blst_p2_affine] = unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) };
        let mut sum = G2Projective::identity();
        *sum.as_mut() = points.mult(bytes, Scalar::NUM_BITS as usize);
        sum
    }
}

/// Σ scalarsᵢ·basesᵢ over the first `min(len)` pairs.
pub fn msm<G: CpuMsm>(bases: &[G::Affine], scalars: &[Scalar]) -> G {
    let n = bases.len().min(scalars.len());
    debug_assert_eq!(bases.len(), scalars.len(), "msm over {} bases and {} scalars", bases.len(), scalars.len());
    if n == 0 {
        return G::identity();
    }
    let mut bytes = vec![0u8; 32 * n];
    bytes
        .par_chunks_exact_mut(32)
        .zip(&scalars[..n])
        .with_min_len(1 << 12)
        .for_each(|(b, s)| b.copy_from_slice(&s.to_bytes_le()));
    G::blst_msm(&bases[..n], &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::prime::PrimeCurveAffine;
    use group::Curve;
    use rand_core::SeedableRng;

    fn naive<G>(bases: &[G::Affine], scalars: &[Scalar]) -> G
    where
        G: CpuMsm,
        G::Affine: PrimeCurveAffine<Curve = G>,
    {
        bases.iter().zip(scalars).fold(G::identity(), |acc, (b, s)| acc + b.to_curve() * *s)
    }

    fn check<G>(n: usize, seed: u64)
    where
        G: CpuMsm + Curve<AffineRepr = <G as CpuMsm>::Affine>,
        <G as CpuMsm>::Affine: PrimeCurveAffine<Curve = G> + Default,
    {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut bases: Vec<G::Affine> = (0..n).map(|_| G::random(&mut rng).to_affine()).collect();
        let mut scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        // Edge values: zero, one, -1, and a base at infinity.
        if n >= 4 {
            scalars[0] = Scalar::ZERO;
            scalars[1] = Scalar::ONE;
            scalars[2] = -Scalar::ONE;
            bases[3] = G::Affine::default();
        }
        assert_eq!(msm::<G>(&bases, &scalars), naive::<G>(&bases, &scalars), "n = {n}");
    }

    #[test]
    fn g1_msm_equals_naive_sum() {
        for (n, seed) in [(0, 0), (1, 1), (3, 2), (31, 3), (200, 4), (3000, 5)] {
            check::<G1Projective>(n, seed);
        }
    }

    #[test]
    fn g2_msm_equals_naive_sum() {
        check::<G2Projective>(70, 5);
    }
}
