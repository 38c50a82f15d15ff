//! Evaluation domains over BLS12-381 Fr and the radix-2 NTTs of the Groth16 h stage.
//!
//! Layer: maths, CPU side. The same transforms as bellperson's `EvaluationDomain`
//! (src/domain.rs in bellperson 0.27), so results match bit for bit: ω is Fr's 2-adic root of
//! unity raised to 2^(32-k), the coset generator g is Fr's multiplicative generator (7).
//! Algorithm: iterative Cooley-Tukey (decimation in time) after a bit-reversal permutation,
//! each stage parallel with rayon; the inverse transform reuses the forward one, since
//! DFT_{ω⁻¹}(v) is DFT_ω(v) with entries 1..m reversed.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::error::{Error, Result};

/// Below this many butterflies per block a stage is split across blocks, above it inside one.
const PAR_BLOCK: usize = 1 << 10;

/// The constants of a domain of size m = 2^k: its root of unity and the scalars of the h stage.
/// Cheap to make; [`Domain`] adds the twiddle table the CPU transforms use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roots {
    /// log₂ m.
    pub lg_m: u32,
    /// ω, a primitive m-th root of unity: Fr's 2-adic root raised to 2^(32−k).
    pub omega: Scalar,
    /// ω⁻¹.
    pub omega_inv: Scalar,
    /// m⁻¹.
    pub m_inv: Scalar,
    /// (g^m − 1)⁻¹: one over Z(x) = x^m − 1 on the coset gH, where Z is constant.
    pub z_inv_on_coset: Scalar,
}

impl Roots {
    /// The constants of the smallest domain with at least `n` points.
    ///
    /// # Errors
    /// [`Error::Shape`] when `n` exceeds 2^32, Fr's largest power-of-two subgroup.
    pub fn new(n: usize) -> Result<Self> {
        let m = n.max(1).checked_next_power_of_two().unwrap_or(usize::MAX);
        let lg_m = m.trailing_zeros();
        if lg_m > Scalar::S || !m.is_power_of_two() {
            return Err(Error::Shape { what: "domain size (at most 2^32)", expected: 1 << Scalar::S, got: n });
        }
        let omega = (lg_m..Scalar::S).fold(Scalar::ROOT_OF_UNITY, |w, _| w.square());
        let g_m = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([m as u64]);
        Ok(Roots {
            lg_m,
            omega,
            omega_inv: omega.invert().expect("a root of unity is nonzero"),
            m_inv: Scalar::from(m as u64).invert().expect("m is nonzero in Fr"),
            z_inv_on_coset: (g_m - Scalar::ONE).invert().expect("g is not an m-th root of unity"),
        })
    }

    /// g, the coset generator: Fr's multiplicative generator (7).
    pub fn g() -> Scalar {
        Scalar::MULTIPLICATIVE_GENERATOR
    }

    /// g⁻¹.
    pub fn g_inv() -> Scalar {
        Scalar::MULTIPLICATIVE_GENERATOR.invert().expect("g is nonzero")
    }
}

/// A multiplicative subgroup of Fr of size m = 2^k, with the tables its transforms need.
#[derive(Debug, Clone)]
pub struct Domain {
    roots: Roots,
    /// ωⁱ for i in 0..m/2: the twiddle factors of every stage.
    twiddles: Vec<Scalar>,
}

impl Domain {
    /// The smallest domain with at least `n` points.
    ///
    /// # Errors
    /// [`Error::Shape`] when `n` exceeds 2^32, Fr's largest power-of-two subgroup.
    pub fn new(n: usize) -> Result<Self> {
        let roots = Roots::new(n)?;
        let mut twiddles = vec![Scalar::ZERO; (1 << roots.lg_m) / 2];
        fill_powers(&mut twiddles, roots.omega, Scalar::ONE);
        Ok(Domain { roots, twiddles })
    }

    /// The domain's constants.
    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    /// Number of points, m.
    pub fn size(&self) -> usize {
        1 << self.roots.lg_m
    }

    fn check_len(&self, v: &[Scalar]) {
        assert_eq!(v.len(), self.size(), "vector length must equal the domain size");
    }

    /// In place: evaluations vᵢ ← Σⱼ vⱼ·ω^{ij} (coefficients to evaluations).
    ///
    /// # Panics
    /// If `v.len()` is not the domain size.
    pub fn ntt(&self, v: &mut [Scalar]) {
        self.check_len(v);
        bit_reverse(v, self.roots.lg_m);
        let m = v.len();
        let mut half = 1;
        while half < m {
            let stride = m / (2 * half);
            let tw = &self.twiddles;
            let butterflies = |(j, (lo, hi)): (usize, (&mut Scalar, &mut Scalar))| {
                let t = *hi * tw[j * stride];
                *hi = *lo - t;
                *lo += t;
            };
            if half < PAR_BLOCK {
                v.par_chunks_mut(2 * half).for_each(|block| {
                    let (lo, hi) = block.split_at_mut(half);
                    lo.iter_mut().zip(hi.iter_mut()).enumerate().for_each(butterflies);
                });
            } else {
                for block in v.chunks_mut(2 * half) {
                    let (lo, hi) = block.split_at_mut(half);
                    lo.par_iter_mut().zip(hi.par_iter_mut()).enumerate().with_min_len(PAR_BLOCK).for_each(butterflies);
                }
            }
            half *= 2;
        }
    }

    /// In place: the inverse of [`ntt`](Self::ntt) (evaluations to coefficients), including the
    /// factor m⁻¹.
    ///
    /// # Panics
    /// If `v.len()` is not the domain size.
    pub fn intt(&self, v: &mut [Scalar]) {
        self.ntt(v);
        v[1..].reverse();
        let m_inv = self.roots.m_inv;
        v.par_iter_mut().with_min_len(PAR_BLOCK).for_each(|x| *x *= m_inv);
    }

    /// In place: coefficients to evaluations on the coset gH (vᵢ ← vᵢ·gⁱ, then NTT).
    ///
    /// # Panics
    /// If `v.len()` is not the domain size.
    pub fn coset_ntt(&self, v: &mut [Scalar]) {
        self.check_len(v);
        distribute_powers(v, Roots::g());
        self.ntt(v);
    }

    /// In place: evaluations on the coset gH back to coefficients (inverse NTT, then vᵢ·g⁻ⁱ).
    ///
    /// # Panics
    /// If `v.len()` is not the domain size.
    pub fn icoset_ntt(&self, v: &mut [Scalar]) {
        self.intt(v);
        distribute_powers(v, Roots::g_inv());
    }

    /// The h stage of Groth16: from the evaluations a, b, c of one partition (each of length m)
    /// to the coefficients of h = (A·B − C)/Z, left in `a`; its top coefficient is always zero,
    /// so callers keep `a[..m-1]`. `b` and `c` are used as scratch.
    ///
    /// Six transforms, not the seven of the textbook route (every vector to the coset gH, the
    /// quotient there, back): C needs no trip to the coset, since the coset iNTT is linear and
    /// gives C back from C's coset evaluations. So h = (P − C)/Z, P the coset iNTT of A·B on
    /// gH, C the iNTT of c; the field is exact, so h equals the textbook's bit for bit.
    ///
    /// # Panics
    /// If a slice's length is not the domain size.
    pub fn compute_h(&self, a: &mut [Scalar], b: &mut [Scalar], c: &mut [Scalar]) {
        rayon::join(|| self.to_coset(a), || rayon::join(|| self.to_coset(b), || self.intt(c)));
        a.par_iter_mut().zip(b.par_iter()).with_min_len(PAR_BLOCK).for_each(|(a, b)| *a *= b);
        self.icoset_ntt(a);
        let z_inv = self.roots.z_inv_on_coset;
        a.par_iter_mut().zip(c.par_iter()).with_min_len(PAR_BLOCK).for_each(|(a, c)| *a = (*a - c) * z_inv);
    }

    /// Evaluations on H to evaluations on the coset gH.
    fn to_coset(&self, v: &mut [Scalar]) {
        self.intt(v);
        self.coset_ntt(v);
    }
}

/// vᵢ ← start·baseⁱ, in parallel chunks that each start from a `pow`.
pub(crate) fn fill_powers(v: &mut [Scalar], base: Scalar, start: Scalar) {
    v.par_chunks_mut(PAR_BLOCK).enumerate().for_each(|(k, chunk)| {
        let mut p = start * base.pow_vartime([(k * PAR_BLOCK) as u64]);
        for x in chunk {
            *x = p;
            p *= base;
        }
    });
}

/// vᵢ ← vᵢ·baseⁱ.
fn distribute_powers(v: &mut [Scalar], base: Scalar) {
    v.par_chunks_mut(PAR_BLOCK).enumerate().for_each(|(k, chunk)| {
        let mut p = base.pow_vartime([(k * PAR_BLOCK) as u64]);
        for x in chunk {
            *x *= p;
            p *= base;
        }
    });
}

fn bit_reverse(v: &mut [Scalar], lg_m: u32) {
    if lg_m == 0 {
        return;
    }
    let shift = usize::BITS - lg_m;
    for i in 0..v.len() {
        let j = i.reverse_bits() >> shift;
        if i < j {
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn random(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| Scalar::random(&mut rng)).collect()
    }

    /// The definition, O(m²): vᵢ = Σⱼ cⱼ ω^{ij}.
    fn naive_dft(c: &[Scalar], omega: Scalar) -> Vec<Scalar> {
        (0..c.len())
            .map(|i| {
                let wi = omega.pow_vartime([i as u64]);
                c.iter().rev().fold(Scalar::ZERO, |acc, cj| acc * wi + cj)
            })
            .collect()
    }

    #[test]
    fn ntt_matches_the_definition() {
        for lg in [0, 1, 2, 5, 8] {
            let d = Domain::new(1 << lg).unwrap();
            let c = random(1 << lg, lg as u64);
            let mut v = c.clone();
            d.ntt(&mut v);
            let omega = (lg..Scalar::S).fold(Scalar::ROOT_OF_UNITY, |w, _| w.square());
            assert_eq!(v, naive_dft(&c, omega), "lg_m = {lg}");
        }
    }

    #[test]
    fn inverse_and_coset_round_trip() {
        // Large enough to take the inside-block parallel path (half >= PAR_BLOCK).
        let d = Domain::new(1 << 12).unwrap();
        let c = random(1 << 12, 7);
        let mut v = c.clone();
        d.ntt(&mut v);
        d.intt(&mut v);
        assert_eq!(v, c);
        d.coset_ntt(&mut v);
        assert_ne!(v, c);
        d.icoset_ntt(&mut v);
        assert_eq!(v, c);
    }

    #[test]
    fn sizes_round_up_and_are_bounded() {
        assert_eq!(Domain::new(5).unwrap().size(), 8);
        assert_eq!(Domain::new(0).unwrap().size(), 1);
        assert!(matches!(Domain::new((1 << 32) + 1), Err(Error::Shape { .. })));
    }
}
