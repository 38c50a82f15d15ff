//! What the examples share: their flags, reports and plots, and the test fixtures (circuits
//! and timing-only keys, `tests/fixtures/`), included with `#[path]` so that they stay out
//! of the library.
#![allow(dead_code)]

pub mod flags;
pub mod pacing;
pub mod plots;
pub mod recording;
pub mod report;

#[path = "../../tests/fixtures/mod.rs"]
mod fixtures;

#[allow(unused_imports)] // each example takes its own few of them
pub use fixtures::{random_scalars, shapes, timing_key, Faulty, MimcChain};
