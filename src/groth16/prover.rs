//! Proving, the last step: assembling A, B, C from the backend's MSM sums and the blinding r, s.
//!
//! Phase: prover (bellperson 0.27, src/groth16/prover/native.rs). With ΣA, ΣB₁, ΣB₂ the MSMs
//! of the a, b_g1, b_g2 queries (without α, β, δ terms), H = Σ hᵢ·Hᵢ and L = Σ auxᵢ·Lᵢ:
//! A = α₁ + r·δ₁ + ΣA, B = β₂ + s·δ₂ + ΣB₂,
//! C = s·ΣA + r·ΣB₁ + rs·δ₁ + s·α₁ + r·β₁ + H + L.

use blstrs::{G1Projective, G2Projective, Scalar};
use group::Curve;

use super::{Proof, VerifyingKey};

/// The five multi-scalar multiplications of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmSums {
    /// Σ hᵢ·Hᵢ over the h coefficients.
    pub h: G1Projective,
    /// Σ auxᵢ·Lᵢ.
    pub l: G1Projective,
    /// Σ zᵢ·Aᵢ over inputs and the aux variables used in A.
    pub a: G1Projective,
    /// Σ zᵢ·B₁ᵢ over the variables used in B.
    pub b_g1: G1Projective,
    /// Σ zᵢ·B₂ᵢ over the variables used in B.
    pub b_g2: G2Projective,
}

/// The proof from the MSM sums and the blinding factors r, s.
pub(crate) fn assemble(vk: &VerifyingKey, sums: &MsmSums, r: Scalar, s: Scalar) -> Proof {
    let a = vk.alpha_g1 + vk.delta_g1 * r + sums.a;
    let b = vk.beta_g2 + vk.delta_g2 * s + sums.b_g2;
    let c = sums.a * s + sums.b_g1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + sums.h + sums.l;
    Proof { a: a.to_affine(), b: b.to_affine(), c: c.to_affine() }
}
