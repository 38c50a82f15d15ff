//! Setup: a proving key for a circuit shape, from random (or given) trapdoors.
//!
//! Phase: key generation, the one bellperson 0.27 runs in src/groth16/generator.rs, with the
//! same layout and filtering, so keys from either prove and verify with the other. The QAP
//! polynomials of each variable are evaluated at τ through the Lagrange basis, which is the
//! inverse NTT of τ's powers; fixed-base products use group's wNAF tables.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group, Wnaf, WnafGroup};
use rand_core::RngCore;
use rayon::prelude::*;

use super::{ProvingKey, VerifyingKey};
use crate::domain::Domain;
use crate::error::Result;

/// The secret values of a setup ("toxic waste"): whoever knows them can forge proofs.
#[derive(Debug, Clone, Copy)]
pub struct Trapdoor {
    /// Generator of G1 used for every G1 element of the key.
    pub g1: G1Projective,
    /// Generator of G2 used for every G2 element of the key.
    pub g2: G2Projective,
    /// α.
    pub alpha: Scalar,
    /// β.
    pub beta: Scalar,
    /// γ.
    pub gamma: Scalar,
    /// δ.
    pub delta: Scalar,
    /// τ, the secret evaluation point.
    pub tau: Scalar,
}

impl Trapdoor {
    /// Fresh random trapdoors.
    pub fn random(rng: &mut impl RngCore) -> Self {
        Trapdoor {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Scalar::random(&mut *rng),
            beta: Scalar::random(&mut *rng),
            gamma: Scalar::random(&mut *rng),
            delta: Scalar::random(&mut *rng),
            tau: Scalar::random(&mut *rng),
        }
    }
}

/// A proving key for `circuit`'s shape with random trapdoors (a trusted setup of one party:
/// for tests, benchmarks and examples).
///
/// # Errors
/// As [`generate_parameters`].
pub fn generate_random_parameters<C: Circuit<Scalar>>(circuit: C, rng: &mut impl RngCore) -> Result<ProvingKey> {
    generate_parameters(circuit, &Trapdoor::random(rng))
}

/// A proving key for `circuit`'s shape with the given trapdoors.
///
/// # Errors
/// [`Error::Synthesis`](crate::Error::Synthesis) if the circuit fails, has an unconstrained variable
/// (`UnconstrainedVariable`) or a zero γ/δ (`UnexpectedIdentity`); [`Error::Shape`](crate::Error::Shape) if it is
/// too large for Fr's domains.
pub fn generate_parameters<C: Circuit<Scalar>>(circuit: C, t: &Trapdoor) -> Result<ProvingKey> {
    let mut cs = KeyAssembly::default();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    // One constraint `input · 0 = 0` per input makes the IC query fully dense.
    for i in 0..cs.inputs.terms[0].len() {
        cs.enforce(|| "", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
    }

    let gamma_inv = Option::<Scalar>::from(t.gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inv = Option::<Scalar>::from(t.delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;

    let domain = Domain::new(cs.constraints)?;
    let m = domain.size();
    let mut tau_powers = vec![Scalar::ZERO; m];
    crate::domain::fill_powers(&mut tau_powers, t.tau, Scalar::ONE);

    // h: τⁱ·Z(τ)/δ for i in 0..m−1, Z(τ) = τ^m − 1.
    let z_over_delta = (t.tau.pow_vartime([m as u64]) - Scalar::ONE) * delta_inv;
    let h_scalars: Vec<Scalar> = tau_powers[..m - 1].par_iter().map(|p| *p * z_over_delta).collect();
    let h = fixed_base(t.g1, &h_scalars);

    domain.intt(&mut tau_powers);
    let lagrange = tau_powers;

    let inputs = cs.inputs.evaluate(&lagrange, t, gamma_inv);
    let aux = cs.aux.evaluate(&lagrange, t, delta_inv);
    let (ic, l) = (fixed_base(t.g1, &inputs.ext), fixed_base(t.g1, &aux.ext));
    if l.iter().any(|p| bool::from(p.is_identity())) {
        // bellperson refuses these too: L must be fully dense.
        return Err(SynthesisError::UnconstrainedVariable.into());
    }

    // A and B queries hold only the nonzero polynomials, inputs first (bellperson's filter).
    let nonzero = |v: &[Scalar]| v.iter().copied().filter(|s| !bool::from(s.is_zero())).collect::<Vec<_>>();
    let at = [nonzero(&inputs.at), nonzero(&aux.at)].concat();
    let bt = [nonzero(&inputs.bt), nonzero(&aux.bt)].concat();

    let g1 = t.g1.to_affine();
    let g2 = t.g2.to_affine();
    let vk = VerifyingKey {
        alpha_g1: (g1 * t.alpha).to_affine(),
        beta_g1: (g1 * t.beta).to_affine(),
        beta_g2: (g2 * t.beta).to_affine(),
        gamma_g2: (g2 * t.gamma).to_affine(),
        delta_g1: (g1 * t.delta).to_affine(),
        delta_g2: (g2 * t.delta).to_affine(),
        ic,
    };
    Ok(ProvingKey::new(vk, h, l, fixed_base(t.g1, &at), fixed_base(t.g1, &bt), fixed_base(t.g2, &bt)))
}

/// `base·sᵢ` for every scalar, affine, in parallel over one shared wNAF table.
fn fixed_base<G>(base: G, scalars: &[Scalar]) -> Vec<G::AffineRepr>
where
    G: WnafGroup<Scalar = Scalar> + Curve,
    G::AffineRepr: PrimeCurveAffine + Send,
{
    let mut wnaf = Wnaf::new();
    let table = wnaf.base(base, scalars.len());
    scalars
        .par_chunks(1 << 10)
        .flat_map_iter(|chunk| {
            let mut table = table.shared();
            let points: Vec<G> = chunk.iter().map(|s| table.scalar(s)).collect();
            let mut affine = vec![G::AffineRepr::identity(); points.len()];
            G::batch_normalize(&points, &mut affine);
            affine
        })
        .collect()
}

/// For each variable, the (coefficient, constraint) terms of its A, B and C polynomials:
/// `terms[0]` is A, `terms[1]` B, `terms[2]` C, each indexed by variable.
#[derive(Default)]
struct Qap {
    terms: [Vec<Vec<(Scalar, usize)>>; 3],
}

/// A(τ), B(τ) and (β·A(τ) + α·B(τ) + C(τ))·inv for each variable of one kind.
struct Evaluated {
    at: Vec<Scalar>,
    bt: Vec<Scalar>,
    ext: Vec<Scalar>,
}

impl Qap {
    fn push_variable(&mut self) -> usize {
        self.terms.iter_mut().for_each(|t| t.push(vec![]));
        self.terms[0].len() - 1
    }

    fn evaluate(&self, lagrange: &[Scalar], t: &Trapdoor, inv: Scalar) -> Evaluated {
        let at_tau = |terms: &[(Scalar, usize)]| terms.iter().fold(Scalar::ZERO, |acc, (c, j)| acc + *c * lagrange[*j]);
        let [a, b, c] = &self.terms;
        let (at, (bt, ct)): (Vec<_>, (Vec<_>, Vec<_>)) =
            (0..a.len()).into_par_iter().map(|i| (at_tau(&a[i]), (at_tau(&b[i]), at_tau(&c[i])))).unzip();
        let ext = (0..at.len()).into_par_iter().map(|i| (t.beta * at[i] + t.alpha * bt[i] + ct[i]) * inv).collect();
        Evaluated { at, bt, ext }
    }
}

/// The constraint system of key generation: records which variables each constraint uses.
#[derive(Default)]
struct KeyAssembly {
    inputs: Qap,
    aux: Qap,
    constraints: usize,
}

impl ConstraintSystem<Scalar> for KeyAssembly {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        // Values are not needed (nor, for a setup, known).
        Ok(Variable::new_unchecked(Index::Aux(self.aux.push_variable())))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Ok(Variable::new_unchecked(Index::Input(self.inputs.push_variable())))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let j = self.constraints;
        let lcs = [a(LinearCombination::zero()), b(LinearCombination::zero()), c(LinearCombination::zero())];
        for (k, lc) in lcs.iter().enumerate() {
            for (&i, coeff) in lc.iter_inputs() {
                self.inputs.terms[k][i].push((*coeff, j));
            }
            for (&i, coeff) in lc.iter_aux() {
                self.aux.terms[k][i].push((*coeff, j));
            }
        }
        self.constraints += 1;
    }

    names_ignored!();
}
