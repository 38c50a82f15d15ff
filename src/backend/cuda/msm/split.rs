//! An MSM split by its scalars' values (`cuda/msm/split.cuh`), for scalars that are mostly 0
//! and 1, as a bit-heavy witness's L, A and B scalars are: the zeros dropped, the bases of the
//! ones summed as one bucket (by the reduction levels every bucket takes), and the others,
//! with their bases gathered, through an MSM of their own. The sort of n points in ⌈256/c⌉
//! windows and the window sums over their buckets shrink to those of the few others.
//! Chosen per MSM (per chunk of streamed bases) from the split's census: when the others do
//! not fit its rooms, a [`SPLIT_SHARE`]th of the points, the caller's plan over every scalar
//! runs instead.

use group::Group as _;

use blstrs::Scalar;

use super::bases::Bases;
use super::plan::{levels, Plan};
use super::schedule::Msms;
use super::window::window_bits;
use crate::backend::cuda::ffi::msm::Group;
use crate::backend::cuda::ffi::r1cs::PackedVars;
use crate::backend::cuda::ffi::DeviceVec;
use crate::error::Result;

/// The split's rooms hold the others of this share of an MSM's points at most, and at least
/// one (1/16: their scalars, indices and G1 bases take 8.25 bytes per point of the MSM).
/// Rule: rooms small beside the key that hold every bit-heavy witness measured: Filecoin's
/// PoRep witness has 1.7 % of others (there the split takes a quarter of the plan's time at
/// 2^24), the sha256 shape's under 0.1 %. Where between 1.7 % and 6.25 % the split stops
/// paying is not measured: refit with `gpu_report`'s split rows at mixes of more others.
pub(crate) const SPLIT_SHARE: usize = 16;

/// A witness MSM's scalars on the device, and, a witness-only partition's, which variables
/// of z they are: the split then classes the zeros and ones from the packed aux' bitmaps.
pub(crate) type WitnessScalars<'a> = (&'a DeviceVec<Scalar>, Option<PackedVars<'a>>);

impl Msms<'_> {
    /// Σ scalarsᵢ·basesᵢ for i < n of a witness's scalars (the L, A and B MSMs'), which may
    /// be mostly 0 and 1: [split](Self::split), unless `reuse` brings the plan of these
    /// scalars (they were not split for the other group) or the split declined them before;
    /// over resident bases at once, over streamed ones a chunk at a time as each is copied
    /// up; else, or when the split declines, as [`msm`](Self::msm). Returns the sum, the plan for the next group (`None`
    /// when split) and whether it was split (every chunk, when streamed).
    pub(crate) fn witness_msm<G: Group>(
        &self,
        (scalars, vars): WitnessScalars<'_>,
        n: usize,
        bases: Bases<'_, G::Affine>,
        sums: &DeviceVec<G::Projective>,
        reuse: Option<Plan>,
    ) -> Result<(G::Projective, Option<Plan>, bool)> {
        match (bases, &reuse) {
            (Bases::Resident(_), None) if self.split => {
                if let Some(sum) = self.split_resident::<G>((scalars, vars), n, bases, sums)? {
                    return Ok((sum, None, true));
                }
            }
            (Bases::Streamed { host, slots }, _) => {
                let split = |range, slot: &_| self.split::<G>((scalars, vars, range), slot, sums);
                let (sum, every) = self.streamed::<G>((scalars, n), (host, slots), sums, split)?;
                return Ok((sum, None, every));
            }
            _ => {}
        }
        let (sum, plan) = self.msm::<G>(scalars, n, bases, sums, reuse)?;
        Ok((sum, plan, false))
    }

    /// Σ scalarsᵢ·basesᵢ for i < n [split](Self::split) over resident bases; `None` when
    /// the split declines or the bases are streamed.
    pub(crate) fn split_resident<G: Group>(
        &self,
        (scalars, vars): WitnessScalars<'_>,
        n: usize,
        bases: Bases<'_, G::Affine>,
        sums: &DeviceVec<G::Projective>,
    ) -> Result<Option<G::Projective>> {
        match bases {
            Bases::Resident(resident) => self.split::<G>((scalars, vars, 0..n), &resident.points, sums),
            Bases::Streamed { .. } => Ok(None),
        }
    }

    /// Σ scalarsᵢ·pointsᵢ₋ₛ for i in `range` (s its start), split by value (see the module
    /// docs; those that are packed variables of z and 0 or 1 classed from the bitmaps), over
    /// `points` on the device; `None` when the others do not fit the split's rooms (or no plan
    /// over them fits the scratch): the caller's plan then sorts every scalar.
    pub(crate) fn split<G: Group>(
        &self,
        (scalars, vars, range): (&DeviceVec<Scalar>, Option<PackedVars<'_>>, std::ops::Range<usize>),
        points: &DeviceVec<G::Affine>,
        sums: &DeviceVec<G::Projective>,
    ) -> Result<Option<G::Projective>> {
        let buffers = self.scratch.buffers();
        let split = self.kernels.split(self.stream, buffers, (scalars, vars, range), buffers.split_room::<G>())?;
        let c = window_bits(split.others);
        if !split.kept || !self.scratch.fits(split.others, c, None) {
            return Ok(None);
        }
        let mut total = G::Projective::identity();
        if split.ones > 0 {
            let ones = self.kernels.ones_bucket((self.stream, self.staging), buffers, &split, levels)?;
            total += self.sum::<G>(&Plan::of(ones), (points, 0), sums)?;
        }
        if split.others > 0 {
            let (points, others) = self.kernels.gather::<G>(self.stream, buffers, &split, points)?;
            let plan = self.plan(others, 0..split.others, (c, None))?;
            total += self.sum::<G>(&plan, (points, 0), sums)?;
        }
        Ok(Some(total))
    }
}

#[cfg(test)]
mod tests {
    use blstrs::{G1Projective, Scalar};
    use ff::Field;
    use group::Group as _;

    use super::super::combine;
    use super::super::plan::segments_for;
    use crate::backend::cuda::ffi::geometry::SPLIT_THREADS;
    use crate::backend::cuda::ffi::msm::G1;

    /// The split kernel (`cuda/msm/split.cuh`) on the host: blocks of SPLIT_THREADS taken in
    /// `order`, each warp's ballots counted, the block's warps offset by an exclusive scan,
    /// one claim of each kind per block; returns the ones' indices, the kept others' (value,
    /// index) and the counts.
    fn split_as_the_device_does(
        s: &[Scalar],
        room: usize,
        order: &[usize],
    ) -> (Vec<u32>, Vec<(Scalar, u32)>, [usize; 2]) {
        let threads = SPLIT_THREADS as usize;
        let (mut ones, mut others) = (vec![u32::MAX; s.len()], vec![(Scalar::ZERO, u32::MAX); room]);
        let mut counts = [0usize; 2];
        for &block in order {
            let kind = |i: usize| s.get(i).map(|x| (*x == Scalar::ONE, *x != Scalar::ONE && *x != Scalar::ZERO));
            let ballots: Vec<[u32; 2]> = (0..threads / 32)
                .map(|w| {
                    (0..32).fold([0, 0], |[o, x], lane| {
                        let (one, other) = kind(block * threads + w * 32 + lane).unwrap_or((false, false));
                        [o | u32::from(one) << lane, x | u32::from(other) << lane]
                    })
                })
                .collect();
            let before = |k: usize, w: usize| ballots[..w].iter().map(|b| b[k].count_ones() as usize).sum::<usize>();
            let first = [counts[0], counts[1]];
            counts = [counts[0] + before(0, threads / 32), counts[1] + before(1, threads / 32)];
            for w in 0..threads / 32 {
                for lane in 0..32 {
                    let i = block * threads + w * 32 + lane;
                    let below = |k: usize| (ballots[w][k] & ((1u32 << lane) - 1)).count_ones() as usize;
                    match kind(i) {
                        Some((true, _)) => ones[first[0] + before(0, w) + below(0)] = i as u32,
                        Some((_, true)) if first[1] + before(1, w) + below(1) < room => {
                            others[first[1] + before(1, w) + below(1)] = (s[i], i as u32)
                        }
                        _ => {}
                    }
                }
            }
        }
        ones.truncate(counts[0]);
        others.truncate(counts[1].min(room));
        (ones, others, counts)
    }

    #[test]
    fn the_split_compacts_every_one_and_other_once_in_any_block_order() {
        let threads = SPLIT_THREADS as usize;
        let n = 5 * threads + 77;
        let s: Vec<Scalar> = (0..n)
            .map(|i| match (i * 7919) % 23 {
                0 => Scalar::from(i as u64 + 2),
                k if k % 2 == 0 => Scalar::ONE,
                _ => Scalar::ZERO,
            })
            .collect();
        let blocks = n.div_ceil(threads);
        let mut expected_ones: Vec<u32> = (0..n as u32).filter(|&i| s[i as usize] == Scalar::ONE).collect();
        let expected_others: Vec<u32> =
            (0..n as u32).filter(|&i| s[i as usize] != Scalar::ONE && s[i as usize] != Scalar::ZERO).collect();
        for order in [(0..blocks).collect::<Vec<_>>(), (0..blocks).rev().collect(), vec![3, 0, 5, 1, 4, 2]] {
            let (mut ones, others, counts) = split_as_the_device_does(&s, n, &order);
            ones.sort_unstable();
            expected_ones.sort_unstable();
            assert_eq!((ones, counts), (expected_ones.clone(), [expected_ones.len(), expected_others.len()]));
            let mut kept: Vec<u32> =
                others.iter().map(|&(x, i)| if x == s[i as usize] { i } else { u32::MAX }).collect();
            kept.sort_unstable();
            assert_eq!(kept, expected_others, "order {order:?}");
            // A room for fewer keeps as many, and still counts them all.
            let (_, some, counts) = split_as_the_device_does(&s, 3, &order);
            assert!(some.len() == 3 && some.iter().all(|&(_, i)| i != u32::MAX) && counts[1] == expected_others.len());
        }
    }

    #[test]
    fn the_ones_bucket_is_one_window_of_two_buckets_whose_sum_is_the_msm() {
        // Plan::of a 2-bit, one-window sort: one segment per bucket, and the host's combine of
        // its one window sum leaves it as it is.
        assert_eq!(segments_for(1, 2), (1, 2));
        let p = G1Projective::generator() * Scalar::from(12345);
        assert_eq!(combine::<G1>(&[p], 2, 1), p);
    }
}
