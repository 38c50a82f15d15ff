//! pinprove proves Groth16 (BLS12-381) circuits with CPU synthesis and a throttled proving
//! (GPU) thread, keeping the device busy without letting memory grow.
//!
//! - [`PinnedPool`]: host buffers (page-locked under the CUDA backend) reused by best fit,
//!   prewarmed, capped, with [`shrink`](PinnedPool::shrink), [stats](PoolStats) and a counted,
//!   logged fallback to heap memory.
//! - [`PinnedAbcBuffers`]: the a/b/c vectors of one partition, checked out all-or-nothing.
//! - [`Prover`]: rayon workers synthesize circuits straight into those buffers; one proving
//!   thread per device consumes them through a bounded channel whose capacity
//!   ([`Config::max_gpu_queue_depth`] per device) is the dispatch throttle.
//! - [`groth16`]: keys, setup, proof assembly and verification, interoperable bit for bit with
//!   bellperson 0.27 (conversions behind the `bellperson` feature).
//!
//! The CPU backend ([`backend::CpuBackend`]) always builds; it is the reference for the CUDA
//! backend (feature `cuda`).
//!
//! One dependency line is enough: the circuit trait and field types a user needs are
//! re-exported ([`Circuit`], [`ConstraintSystem`], [`Scalar`], [`Field`], and the crates
//! [`bellpepper_core`], [`blstrs`], [`ff`] they come from).
#![cfg_attr(docsrs, feature(doc_auto_cfg))]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![deny(unsafe_code, unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod abc;
pub mod backend;
pub mod domain;
mod error;
mod file;
pub mod groth16;
pub mod msm;
mod pipeline;
mod pool;
mod r1cs;
pub mod synth;
mod timings;

pub use abc::{Element, PinnedAbcBuffers, PinnedVec};
pub use bellpepper_core::{self, Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
pub use blstrs::{self, Scalar};
pub use error::{Error, Result};
pub use ff::{self, Field, PrimeField};
pub use groth16::{Proof, ProvingKey, VerifyingKey};
pub use pipeline::{Config, PendingProof, Prover, MAX_QUEUE_DEPTH, MAX_THREADS};
pub use pool::{HeapAllocator, HostAllocator, PinnedBuf, PinnedPool, PoolConfig, PoolStats, BLOCK_ALIGN};
pub use r1cs::R1cs;
pub use timings::{MsmSteps, NttSteps, PartitionTimings};

/// The README's code, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
