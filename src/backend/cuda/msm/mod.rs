//! Multi-scalar multiplication on the device (kernels in `cuda/msm/`, launched by
//! `ffi/msm.rs`): a plan sorts one set of scalars into buckets, once for however many groups
//! sum over it (the B query's scalars serve G1 and G2); the device sums the buckets of every
//! window; the host adds the windows up (c doublings each, a few hundred operations).
//!
//! Method: Pippenger's bucket method with signed c-bit digits and a counting sort of the
//! digits by bucket, as the fastest GPU MSMs do it (ZPrize 2022 entries; sppark's and
//! supraseal's MSMs), with our own load balance: every thread sums the same number of
//! consecutive bucket-sorted points, whatever buckets they fall in, level after level, so a
//! bucket holding every point of a witness of ones costs log levels rather than one
//! thread's whole sum, and no lane of a warp idles while another finishes a longer bucket.
//!
//! Files: `window.rs` (the window width), `plan.rs` (the plan's geometry), `scratch.rs` (the
//! device buffers, sized before the work), `bases.rs` (the bases on the device, shifted or
//! not, or streamed), `schedule.rs` (the order of a partition's MSMs and of streamed chunks),
//! `split.rs` (scalars that are mostly 0 and 1: the ones summed, the others apart).

mod bases;
mod plan;
mod schedule;
mod scratch;
mod split;
mod window;

pub(crate) use bases::{copies, Bases, DeviceBases};
pub(crate) use plan::{check_sort_limits, window_range, Plan};
pub(crate) use schedule::{Msms, Summing};
pub(crate) use scratch::MsmScratch;
pub(crate) use window::plan_window_bits;
pub use window::{shifted_window_bits, window_bits};

use group::Group as _;

use crate::backend::cuda::ffi::msm::{window_width, Group};

/// Most windows of any MSM (2-bit windows), so one output buffer serves them all.
pub(crate) const MAX_WINDOWS: usize = 128;

/// Σ_w 2^(offset of window w)·sums[w]: the MSM from the window sums of a plan whose widest
/// window has c bits.
pub(crate) fn combine<G: Group>(sums: &[G::Projective], c: u32) -> G::Projective {
    let windows = sums.len() as u32;
    sums.iter().enumerate().rev().fold(G::Projective::identity(), |acc, (w, sum)| {
        (0..window_width(c, windows, w as u32)).fold(acc, |acc, _| acc.double()) + sum
    })
}
