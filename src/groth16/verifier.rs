//! Verification: e(A, B) = e(α, β) · e(Σ inputᵢ·ICᵢ, γ) · e(C, δ).
//!
//! Phase: verifier, as bellperson 0.27's src/groth16/verifier.rs computes it: one multi-Miller
//! loop over the three variable pairings with γ and δ negated, one final exponentiation.

use blstrs::{Bls12, G1Affine, G1Projective, G2Prepared, Gt, Scalar};
use group::{prime::PrimeCurveAffine, Curve};
use pairing::{Engine, MillerLoopResult, MultiMillerLoop};

use super::{Proof, VerifyingKey};
use crate::error::{Error, Result};

/// A verifying key with its pairing-side precomputation done once.
#[derive(Debug, Clone)]
pub struct PreparedVerifyingKey {
    alpha_beta: Gt,
    neg_gamma_g2: G2Prepared,
    neg_delta_g2: G2Prepared,
    ic: Vec<G1Affine>,
}

/// Precomputes what every verification with `vk` shares.
pub fn prepare_verifying_key(vk: &VerifyingKey) -> PreparedVerifyingKey {
    PreparedVerifyingKey {
        alpha_beta: Bls12::pairing(&vk.alpha_g1, &vk.beta_g2),
        neg_gamma_g2: G2Prepared::from(-vk.gamma_g2),
        neg_delta_g2: G2Prepared::from(-vk.delta_g2),
        ic: vk.ic.clone(),
    }
}

/// Whether `proof` is valid for `public_inputs` (without the leading constant one).
///
/// # Errors
/// [`Error::Shape`] if the number of public inputs does not match the key.
pub fn verify_proof(pvk: &PreparedVerifyingKey, proof: &Proof, public_inputs: &[Scalar]) -> Result<bool> {
    if public_inputs.len() + 1 != pvk.ic.len() {
        return Err(Error::Shape { what: "public inputs", expected: pvk.ic.len() - 1, got: public_inputs.len() });
    }
    let acc =
        public_inputs.iter().zip(&pvk.ic[1..]).fold(pvk.ic[0].to_curve(), |acc: G1Projective, (x, p)| acc + p * x);
    let b = G2Prepared::from(proof.b);
    let lhs = Bls12::multi_miller_loop(&[
        (&proof.a, &b),
        (&acc.to_affine(), &pvk.neg_gamma_g2),
        (&proof.c, &pvk.neg_delta_g2),
    ])
    .final_exponentiation();
    Ok(lhs == pvk.alpha_beta)
}
