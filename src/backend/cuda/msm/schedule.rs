//! What the MSMs of a partition run with, and in what order: over resident bases one plan of
//! the scalars (shared by the B query's G1 and G2 MSMs when it fits both), or one a chunk of
//! points at a time when the scratch holds only a chunk's; over streamed bases chunk by chunk
//! through two device slots, the copy of chunk j+1 overlapping the sums of chunk j. An MSM
//! over bases sorted whole may also be [started](Msms::start) and its sum read later, while
//! other MSMs run on another stream with scratch of their own.

use blstrs::Scalar;
use cust::stream::Stream;
use group::Group as _;

use super::bases::{Bases, DeviceBases};
use super::combine;
use super::plan::{digits_for, levels, window_range, Plan};
use super::scratch::MsmScratch;
use super::window::window_bits;
use crate::backend::cuda::ffi::msm::{Copies, Group, MsmKernels};
use crate::backend::cuda::ffi::{download, mark, upload, wait_for, DeviceVec, InFlight, Staging};
use crate::error::Result;

/// An MSM done, or [started](Msms::start): its sums' kernels enqueued, the sum read by
/// [`Msms::sum_of`].
pub(crate) enum Summing<P> {
    Done(P),
    Started(Plan),
}

/// What the MSMs of a backend run with.
#[derive(Clone, Copy)]
pub(crate) struct Msms<'a> {
    pub(crate) kernels: &'a MsmKernels,
    pub(crate) stream: &'a Stream,
    pub(crate) copies: &'a Stream,
    pub(crate) staging: &'a Staging,
    pub(crate) scratch: &'a MsmScratch,
    /// Whether [`witness_msm`](Self::witness_msm) tries the split: not after it declined
    /// the same scalars beside the H MSM.
    pub(crate) split: bool,
}

impl Msms<'_> {
    /// A plan of `scalars[range]` in windows of c bits, over plain bases or `shifted` ones
    /// of that many points per copy ([`DeviceBases::plan_for`](super::DeviceBases::plan_for)).
    ///
    /// # Panics
    /// If `c` is outside the plans' [window range](window_range), or the scratch was not
    /// reserved for such a plan.
    pub(crate) fn plan(
        &self,
        scalars: &DeviceVec<Scalar>,
        range: std::ops::Range<usize>,
        (c, shifted): (u32, Option<Copies>),
    ) -> Result<Plan> {
        assert!(window_range(shifted.is_some()).contains(&c), "window of {c} bits");
        let digits = digits_for(range.len(), c, shifted);
        let buckets = self.kernels.sort(self.stream, self.scratch.buffers(), (scalars, range), digits, levels)?;
        Ok(Plan::of(buckets))
    }

    /// Σ over `plan`'s buckets of `bases` (on the device) from base `first` on, via the
    /// bucket sets' sums in `sums`.
    pub(crate) fn sum<G: Group>(
        &self,
        plan: &Plan,
        bases: (&DeviceVec<G::Affine>, usize),
        sums: &DeviceVec<G::Projective>,
    ) -> Result<G::Projective> {
        self.kernels.sum::<G>(self.stream, self.scratch.buffers(), (&plan.buckets, plan.segment), bases, sums)?;
        self.finish::<G>(plan, sums)
    }

    /// The sum whose bucket sets' sums `plan`'s kernels write into `sums`, once the stream
    /// is done with them.
    fn finish<G: Group>(&self, plan: &Plan, sums: &DeviceVec<G::Projective>) -> Result<G::Projective> {
        let mut host = vec![G::Projective::identity(); plan.buckets.sets()];
        download(self.stream, self.staging, sums, &mut host, true)?.wait()?;
        Ok(combine::<G>(&host, plan.c(), plan.buckets.digits.copies()))
    }

    /// The sum of an MSM done or started on this stream (into `sums`), once it is done.
    pub(crate) fn sum_of<G: Group>(
        &self,
        summing: Summing<G::Projective>,
        sums: &DeviceVec<G::Projective>,
    ) -> Result<G::Projective> {
        match summing {
            Summing::Done(sum) => Ok(sum),
            Summing::Started(plan) => self.finish::<G>(&plan, sums),
        }
    }

    /// Starts Σ scalarsᵢ·basesᵢ for i < n over `bases` sorted whole (n ≤ their
    /// [`plan_points`](super::DeviceBases::plan_points)): the plan, then its sums' kernels
    /// into `sums`, not waited for ([`sum_of`](Self::sum_of) reads the sum). So another
    /// stream's work goes on beside the sums.
    ///
    /// # Panics
    /// If n is more than the bases' plan points.
    pub(crate) fn start<G: Group>(
        &self,
        scalars: &DeviceVec<Scalar>,
        n: usize,
        bases: &DeviceBases<G::Affine>,
        sums: &DeviceVec<G::Projective>,
    ) -> Result<Summing<G::Projective>> {
        assert!(n <= bases.plan_points, "{n} points sorted whole, {} at most", bases.plan_points);
        let plan = self.plan(scalars, 0..n, bases.plan_for(n))?;
        self.kernels.sum::<G>(
            self.stream,
            self.scratch.buffers(),
            (&plan.buckets, plan.segment),
            (&bases.points, 0),
            sums,
        )?;
        Ok(Summing::Started(plan))
    }

    /// Σ scalarsᵢ·basesᵢ for i < n. Resident bases take one plan (or `reuse`, the plan of the
    /// same scalars for another group, when it fits these bases), which is returned for the
    /// next group, or, when their plans are of fewer points ([`DeviceBases::plan_points`]),
    /// one plan a chunk of that many. Streamed bases go chunk by chunk through their two
    /// slots: chunk j+1 is copied while chunk j is summed, and chunk j+2 into j's slot once
    /// j's sums are back on the host.
    pub(crate) fn msm<G: Group>(
        &self,
        scalars: &DeviceVec<Scalar>,
        n: usize,
        bases: Bases<'_, G::Affine>,
        sums: &DeviceVec<G::Projective>,
        reuse: Option<Plan>,
    ) -> Result<(G::Projective, Option<Plan>)> {
        match bases {
            Bases::Resident(bases) if n > bases.plan_points => {
                let chunk = bases.plan_points;
                let c = window_bits(chunk);
                let mut total = G::Projective::identity();
                for start in (0..n).step_by(chunk) {
                    let plan = self.plan(scalars, start..n.min(start + chunk), (c, None))?;
                    total += self.sum::<G>(&plan, (&bases.points, start), sums)?;
                }
                Ok((total, None))
            }
            Bases::Resident(bases) => {
                let (c, shifted) = bases.plan_for(n);
                let plan = match reuse {
                    Some(plan) if plan.serves(n, c, shifted) => plan,
                    _ => self.plan(scalars, 0..n, (c, shifted))?,
                };
                Ok((self.sum::<G>(&plan, (&bases.points, 0), sums)?, Some(plan)))
            }
            Bases::Streamed { host, slots } => {
                let (total, _) = self.streamed::<G>((scalars, n), (host, slots), sums, |_, _| Ok(None))?;
                Ok((total, None))
            }
        }
    }

    /// Σ scalarsᵢ·basesᵢ for i < n over streamed bases (`host`), chunk by chunk: each chunk's
    /// sum over its bases, copied to `slot`, is `first(range, slot)` where that gives it, else
    /// that of a plan of the chunk's scalars. Chunk j+1 is copied while chunk j is summed, and
    /// chunk j+2 into j's slot once chunk j's sum is back on the host. Returns the sum and
    /// whether `first` gave every chunk's.
    pub(crate) fn streamed<G: Group>(
        &self,
        (scalars, n): (&DeviceVec<Scalar>, usize),
        (host, slots): (&[G::Affine], &[DeviceVec<G::Affine>; 2]),
        sums: &DeviceVec<G::Projective>,
        mut first: impl FnMut(std::ops::Range<usize>, &DeviceVec<G::Affine>) -> Result<Option<G::Projective>>,
    ) -> Result<(G::Projective, bool)> {
        let chunk = slots[0].len();
        let c = window_bits(chunk.min(n));
        let mut every = true;
        let mut each = |range: std::ops::Range<usize>, slot| match first(range.clone(), slot)? {
            Some(sum) => Ok(sum),
            None => {
                every = false;
                self.sum::<G>(&self.plan(scalars, range, (c, None))?, (slot, 0), sums)
            }
        };
        let chunks: Vec<_> = (0..n).step_by(chunk).map(|start| start..n.min(start + chunk)).collect();
        let mut in_flight = Vec::with_capacity(chunks.len());
        // Enqueues the copy of chunk j into its slot; returns the mark its sums wait for.
        let mut copy = |j: usize| -> Result<_> {
            let range = chunks[j].clone();
            in_flight.push(upload(self.copies, self.staging, &host[range], true, &slots[j % 2])?);
            mark(self.copies)
        };
        let mut copied: std::collections::VecDeque<_> =
            (0..chunks.len().min(2)).map(&mut copy).collect::<Result<_>>()?;
        let mut total = G::Projective::identity();
        for (j, range) in chunks.iter().enumerate() {
            wait_for(self.stream, copied.pop_front().expect("chunk j was copied"))?;
            total += each(range.clone(), &slots[j % 2])?; // waits: slot j % 2 is free after
            if j + 2 < chunks.len() {
                copied.push_back(copy(j + 2)?);
            }
        }
        in_flight.into_iter().try_for_each(InFlight::wait)?;
        Ok((total, every))
    }
}
