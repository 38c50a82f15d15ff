//! Gadgets whose witness has a native path: the same constraints as the gadgets circuits
//! already use, so keys, recordings and proofs are unchanged, but under a witness generator
//! (witness-only synthesis, bellpepper's `WitnessCS`) the values are computed on machine words
//! and appended in one go instead of built bit by bit through linear combinations.

mod sha256;

pub use sha256::sha256;
