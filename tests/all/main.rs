//! The integration suite, one binary to keep link time down on small machines.
//! Oracle: bellperson 0.27 (setup, `create_proof`, `verify_proof`, `EvaluationDomain`).

mod api;
#[path = "../fixtures/mod.rs"]
mod circuits;
#[cfg(feature = "cuda")]
mod cuda;
mod embedding;
mod faults;
mod gadgets;
mod params;
mod pipeline;
mod pool;
mod pool_props;
mod prove;
mod recorded;
mod seam;
mod support;
