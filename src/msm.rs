//! Multi-scalar multiplication Σ sᵢ·Pᵢ over G1 or G2, on the CPU: the reference the GPU MSM is
//! checked against, and the CPU backend's.
//!
//! Layer: maths, CPU side. Algorithm: blst's Pippenger (`blst_p{1,2}s_mult_pippenger`, from
//! the blst crate that blstrs is built on), which measured 1.5–1.8× faster than the bucket
//! method this crate had of its own; it runs on blst's thread pool, which nothing of the
//! prover's callers can exhaust. The only casts: blstrs' affine points are
//! `#[repr(transparent)]` over blst's, so the key's bases go to blst as they are.
//!
//! Scalars that are mostly 0 and 1 (a witness of bits: the L, A and B MSMs of SHA-256 or
//! Poseidon circuits) are split as supraseal-c2's `groth16_split_msm` does: a census counts
//! the zeros, ones and others; when the zeros and ones are at least half, the zeros are
//! dropped, the bases of the ones added up, and Pippenger runs over the others alone.
#![allow(unsafe_code)]

use blst::MultiPoint;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
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
    type Affine: Sync + Send + Copy;
    /// Adds an affine point (a mixed addition).
    #[doc(hidden)]
    fn add_affine(&mut self, p: &Self::Affine);
    /// blst's MSM of `bases` with `bytes`, the scalars' little-endian encodings (32 each).
    #[doc(hidden)]
    fn blst_msm(bases: &[Self::Affine], bytes: &[u8]) -> Self;
}

// G1Affine and G2Affine are repr(transparent) over blst's affine points: same size, checked.
const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<blst::blst_p1_affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<blst::blst_p2_affine>());

impl CpuMsm for G1Projective {
    type Affine = G1Affine;
    fn add_affine(&mut self, p: &G1Affine) {
        *self += p;
    }
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
    fn add_affine(&mut self, p: &G2Affine) {
        *self += p;
    }
    fn blst_msm(bases: &[G2Affine], bytes: &[u8]) -> Self {
        // SAFETY: as for G1: G2Affine is #[repr(transparent)] over blst_p2_affine.
        let points: &[blst::blst_p2_affine] = unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), bases.len()) };
        let mut sum = G2Projective::identity();
        *sum.as_mut() = points.mult(bytes, Scalar::NUM_BITS as usize);
        sum
    }
}

/// How many of a set of scalars are 0, 1, and anything else: what an MSM over them can
/// split ([`msm`]), and what a packed witness holds ([`PackedAux`](crate::backend::PackedAux)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Census {
    /// Scalars equal to 0.
    pub zeros: usize,
    /// Scalars equal to 1.
    pub ones: usize,
    /// The rest.
    pub others: usize,
}

impl Census {
    /// Counts `scalars`.
    pub(crate) fn of(scalars: &[Scalar]) -> Census {
        let count = |s: &Scalar| match s {
            s if *s == Scalar::ZERO => Census { zeros: 1, ..Census::default() },
            s if *s == Scalar::ONE => Census { ones: 1, ..Census::default() },
            _ => Census { others: 1, ..Census::default() },
        };
        let add = |a: Census, b: Census| Census {
            zeros: a.zeros + b.zeros,
            ones: a.ones + b.ones,
            others: a.others + b.others,
        };
        scalars.par_iter().with_min_len(1 << 14).map(count).reduce(Census::default, add)
    }

    /// Whether an MSM over these scalars is cheaper split: the zeros and ones at least half.
    pub(crate) fn splits(&self) -> bool {
        self.others <= self.zeros + self.ones
    }
}

/// Σ scalarsᵢ·basesᵢ over the first `min(len)` pairs: blst's Pippenger, or split when the
/// scalars are mostly 0 and 1 (see the module docs).
pub fn msm<G: CpuMsm>(bases: &[G::Affine], scalars: &[Scalar]) -> G {
    split_or_whole(bases, scalars).0
}

/// [`msm`], and whether it was split.
pub(crate) fn split_or_whole<G: CpuMsm>(bases: &[G::Affine], scalars: &[Scalar]) -> (G, bool) {
    let n = bases.len().min(scalars.len());
    debug_assert_eq!(bases.len(), scalars.len(), "msm over {} bases and {} scalars", bases.len(), scalars.len());
    let (bases, scalars) = (&bases[..n], &scalars[..n]);
    match Census::of(scalars) {
        census if census.splits() => (split_msm::<G>(bases, scalars, census), true),
        _ => (pippenger::<G>(bases, scalars), false),
    }
}

/// Σ over the bases of the ones, plus Pippenger over the others' pairs; the zeros dropped.
fn split_msm<G: CpuMsm>(bases: &[G::Affine], scalars: &[Scalar], census: Census) -> G {
    let pairs = bases.par_iter().zip(scalars).with_min_len(1 << 12);
    let ones = pairs
        .clone()
        .filter(|(_, s)| **s == Scalar::ONE)
        .fold(G::identity, |mut acc, (b, _)| {
            acc.add_affine(b);
            acc
        })
        .reduce(G::identity, |a, b| a + b);
    let (other_bases, other_scalars): (Vec<G::Affine>, Vec<Scalar>) =
        pairs.filter(|(_, s)| **s != Scalar::ZERO && **s != Scalar::ONE).map(|(b, s)| (*b, *s)).unzip();
    debug_assert_eq!(other_scalars.len(), census.others);
    ones + pippenger::<G>(&other_bases, &other_scalars)
}

/// blst's Pippenger over every pair.
fn pippenger<G: CpuMsm>(bases: &[G::Affine], scalars: &[Scalar]) -> G {
    if scalars.is_empty() {
        return G::identity();
    }
    let mut bytes = vec![0u8; 32 * scalars.len()];
    bytes
        .par_chunks_exact_mut(32)
        .zip(scalars)
        .with_min_len(1 << 12)
        .for_each(|(b, s)| b.copy_from_slice(&s.to_bytes_le()));
    G::blst_msm(bases, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::prime::PrimeCurveAffine;
    use group::Curve;
    use rand_core::{RngCore, SeedableRng};

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

    /// Scalars of every mix the census tells apart, split or not, against the naive sum.
    fn check_mixes<G>(n: usize, seed: u64)
    where
        G: CpuMsm + Curve<AffineRepr = <G as CpuMsm>::Affine>,
        <G as CpuMsm>::Affine: PrimeCurveAffine<Curve = G> + Default,
    {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let bases: Vec<G::Affine> = (0..n).map(|_| G::random(&mut rng).to_affine()).collect();
        let random = |rng: &mut rand_chacha::ChaCha8Rng| Scalar::random(rng);
        let bits = |rng: &mut rand_chacha::ChaCha8Rng, others_per_100: u32| {
            (0..n)
                .map(|_| match rng.next_u32() % 100 {
                    k if k < others_per_100 => Scalar::random(&mut *rng),
                    k if k % 2 == 0 => Scalar::ZERO,
                    _ => Scalar::ONE,
                })
                .collect::<Vec<_>>()
        };
        let mixes: Vec<(&str, Vec<Scalar>)> = vec![
            ("all zero", vec![Scalar::ZERO; n]),
            ("all one", vec![Scalar::ONE; n]),
            ("bits, no others", bits(&mut rng, 0)),
            ("bits, 2 % others", bits(&mut rng, 2)),
            ("half others", bits(&mut rng, 50)),
            ("no ones", (0..n).map(|i| if i % 3 == 0 { Scalar::ZERO } else { random(&mut rng) }).collect()),
            ("random", (0..n).map(|_| random(&mut rng)).collect()),
        ];
        for (name, scalars) in mixes {
            let census = Census::of(&scalars);
            assert_eq!(census.zeros + census.ones + census.others, n, "{name}");
            assert_eq!(msm::<G>(&bases, &scalars), naive::<G>(&bases, &scalars), "{name}, {census:?}");
        }
    }

    #[test]
    fn split_msms_equal_the_naive_sum_for_every_mix() {
        check_mixes::<G1Projective>(3000, 6);
        check_mixes::<G2Projective>(300, 7);
        assert!(Census { zeros: 1, ones: 1, others: 2 }.splits() && !Census { zeros: 1, ones: 0, others: 2 }.splits());
    }
}
