//! pinprove proves Groth16 (BLS12-381) circuits with CPU synthesis and a throttled proving
//! (GPU) thread, keeping the device busy without letting memory grow.
//!
//! - [`Prover`]: the API. Call [`prove`](Prover::prove) with a batch of circuits (or
//!   [`submit`](Prover::submit) them one by one); rayon workers synthesize them straight
//!   into pool buffers, and one proving thread per device consumes them through a bounded
//!   channel whose capacity ([`Config::queue_depth_per_device`]) is the dispatch throttle.
//!   [`Prover::new`] proves on the CPU; [`Prover::with_backends`] on the devices of
//!   `backend::cuda` (feature `cuda`).
//! - Keys and proofs ([`ProvingKey`], [`VerifyingKey`], [`Proof`]), setup
//!   ([`generate_random_parameters`]) and verification ([`verify_proof`]), interoperable bit
//!   for bit with bellperson 0.27 (conversions behind the `bellperson` feature); parameter
//!   files in bellperson's layout ([`ProvingKey::read`], or [`KeyFile`], which a prover's
//!   CUDA backends read straight into device memory).
//! - [`R1cs`]: a circuit's constraints recorded once, so that synthesis computes the witness
//!   alone and the backend evaluates the constraints.
//! - [`PinnedPool`]: the host buffers partitions are synthesized into (page-locked under the
//!   CUDA backend), reused by best fit, prewarmed, capped, with
//!   [`shrink`](PinnedPool::shrink), [stats](PoolStats) and a counted, logged fallback to
//!   heap memory; [`PinnedAbcBuffers`], the a/b/c vectors of one partition, checked out
//!   all-or-nothing.
//! - [`PartitionTimings`]: where each partition's time went, and the batch's timeline.
//!
//! The CPU backend ([`backend::CpuBackend`]) always builds; it is the reference for the CUDA
//! backend (feature `cuda`).
//!
//! One dependency line is enough: the circuit trait and field types a user needs are
//! re-exported ([`Circuit`], [`ConstraintSystem`], [`Scalar`], [`Field`], and the crates
//! [`bellpepper_core`], [`blstrs`], [`ff`] they come from), with [`bellpepper`] (its gadgets)
//! and [`rand_core`] (the `OsRng` that setup and `Prover::prove` take their randomness from:
//! the 0.6 its `RngCore` is, which a user's `cargo add rand_core` would not pick).
#![cfg_attr(docsrs, feature(doc_auto_cfg))]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![deny(unsafe_code, unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

/// The namespace methods of a `ConstraintSystem` that keeps no names (each of the crate's:
/// key generation, synthesis in full and witness-only, recording), and its root (itself).
macro_rules! names_ignored {
    () => {
        fn push_namespace<NR, N>(&mut self, _: N)
        where
            NR: Into<String>,
            N: FnOnce() -> NR,
        {
        }

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self::Root {
            self
        }
    };
}

pub mod backend;
mod decode;
mod digest;
mod domain;
mod error;
pub mod gadgets;
mod groth16;
mod msm;
mod pipeline;
mod pool;
mod r1cs;
mod synth;
mod timings;

pub use bellpepper;
pub use bellpepper_core::{self, Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
pub use blstrs::{self, Scalar};
pub use error::{Error, Result};
pub use ff::{self, Field, PrimeField};
pub use groth16::{
    generate_parameters, generate_random_parameters, prepare_verifying_key, verify_proof, Check, KeyFile, KeySource,
    PreparedVerifyingKey, Proof, ProvingKey, Trapdoor, VerifyingKey, PROOF_BYTES,
};
pub use pipeline::{Config, PendingProof, Prover, MAX_QUEUE_DEPTH, MAX_THREADS};
pub use pool::{Element, PinnedAbcBuffers, PinnedVec};
pub use pool::{HeapAllocator, HostAllocator, PinnedBuf, PinnedPool, PoolConfig, PoolStats, BLOCK_ALIGN};
pub use r1cs::{R1cs, R1csFile};
pub use rand_core;
pub use timings::{BatchTimings, MsmSteps, NttSteps, PartitionTimings, Span, SpanKind, StageSums, Track};

/// Internals that the crate's benches, examples and GPU tests time or check directly (the CPU
/// NTT and MSM, synthesis into a pool, the CUDA backend's single-kernel hooks). Not part of the
/// API: they may change in any release, as crossbeam's `internal` module may.
#[doc(hidden)]
pub mod internal {
    pub use crate::digest::Digest;
    pub use crate::domain::Domain;
    pub use crate::msm::{msm, CpuMsm};
    pub use crate::synth::{file_partition_bytes, partition_bytes, recording_partition_bytes};
    pub use crate::synth::{synthesize, synthesize_witness};

    /// The CUDA backend's bench hooks and the types they take.
    #[cfg(feature = "cuda")]
    pub mod cuda {
        pub use crate::backend::cuda::hooks::{BasesLayout, Bench, G1Bases, G2Bases, MsmRun, SplitRun};
        pub use crate::backend::cuda::msm::{copies_window_bits, shifted_window_bits, window_bits};
        pub use crate::backend::cuda::ntt::Transform;
    }
}

/// The README's code, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
