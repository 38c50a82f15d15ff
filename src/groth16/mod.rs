//! Groth16 over BLS12-381, one module per protocol phase, with no backend code.
//!
//! Reference: J. Groth, "On the Size of Pairing-based Non-interactive Arguments", EUROCRYPT
//! 2016, in the form bellperson 0.27 implements (src/groth16/), whose keys, proofs and
//! verifier this crate interoperates with bit for bit.

#[cfg(feature = "bellperson")]
mod bellperson;
mod generator;
mod key;
mod key_file;
mod params;
mod prover;
mod verifier;

pub use generator::{generate_parameters, generate_random_parameters, Trapdoor};
pub(crate) use key::KeyShape;
pub use key::{Proof, ProvingKey, VerifyingKey, PROOF_BYTES};
#[cfg(feature = "cuda")]
pub(crate) use key_file::RawBatch;
pub use key_file::{KeyFile, KeySource};
pub use params::Check;
pub(crate) use prover::assemble;
pub use prover::MsmSums;
pub use verifier::{prepare_verifying_key, verify_proof, PreparedVerifyingKey};
