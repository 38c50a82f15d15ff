//! Conversions to and from bellperson 0.27's Groth16 types (feature `bellperson`), both ways,
//! by reference and by value, so keys made by bellperson's setup prove here and proofs made
//! here verify there.

use std::sync::Arc;

use bellperson::groth16 as bp;
use blstrs::Bls12;

use super::{Proof, ProvingKey, VerifyingKey};

impl From<&bp::VerifyingKey<Bls12>> for VerifyingKey {
    fn from(vk: &bp::VerifyingKey<Bls12>) -> Self {
        VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic.clone(),
        }
    }
}

impl From<bp::VerifyingKey<Bls12>> for VerifyingKey {
    fn from(vk: bp::VerifyingKey<Bls12>) -> Self {
        VerifyingKey::from(&vk)
    }
}

impl From<&VerifyingKey> for bp::VerifyingKey<Bls12> {
    fn from(vk: &VerifyingKey) -> Self {
        bp::VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic.clone(),
        }
    }
}

impl From<VerifyingKey> for bp::VerifyingKey<Bls12> {
    fn from(vk: VerifyingKey) -> Self {
        bp::VerifyingKey::from(&vk)
    }
}

impl From<&bp::Parameters<Bls12>> for ProvingKey {
    fn from(p: &bp::Parameters<Bls12>) -> Self {
        ProvingKey::new(
            VerifyingKey::from(&p.vk),
            p.h.to_vec(),
            p.l.to_vec(),
            p.a.to_vec(),
            p.b_g1.to_vec(),
            p.b_g2.to_vec(),
        )
    }
}

impl From<bp::Parameters<Bls12>> for ProvingKey {
    /// Moves the vectors out where bellperson holds the only reference, copies them otherwise.
    fn from(p: bp::Parameters<Bls12>) -> Self {
        fn take<T: Clone>(v: Arc<Vec<T>>) -> Vec<T> {
            Arc::try_unwrap(v).unwrap_or_else(|shared| shared.to_vec())
        }
        ProvingKey::new(VerifyingKey::from(p.vk), take(p.h), take(p.l), take(p.a), take(p.b_g1), take(p.b_g2))
    }
}

impl From<&ProvingKey> for bp::Parameters<Bls12> {
    fn from(k: &ProvingKey) -> Self {
        bp::Parameters {
            vk: bp::VerifyingKey::from(&k.vk),
            h: Arc::new(k.h.clone()),
            l: Arc::new(k.l.clone()),
            a: Arc::new(k.a.clone()),
            b_g1: Arc::new(k.b_g1.clone()),
            b_g2: Arc::new(k.b_g2.clone()),
        }
    }
}

impl From<ProvingKey> for bp::Parameters<Bls12> {
    fn from(k: ProvingKey) -> Self {
        bp::Parameters {
            vk: bp::VerifyingKey::from(k.vk),
            h: Arc::new(k.h),
            l: Arc::new(k.l),
            a: Arc::new(k.a),
            b_g1: Arc::new(k.b_g1),
            b_g2: Arc::new(k.b_g2),
        }
    }
}

impl From<&Proof> for bp::Proof<Bls12> {
    fn from(p: &Proof) -> Self {
        bp::Proof { a: p.a, b: p.b, c: p.c }
    }
}

impl From<Proof> for bp::Proof<Bls12> {
    fn from(p: Proof) -> Self {
        bp::Proof::from(&p)
    }
}

impl From<&bp::Proof<Bls12>> for Proof {
    fn from(p: &bp::Proof<Bls12>) -> Self {
        Proof { a: p.a, b: p.b, c: p.c }
    }
}

impl From<bp::Proof<Bls12>> for Proof {
    fn from(p: bp::Proof<Bls12>) -> Self {
        Proof::from(&p)
    }
}
