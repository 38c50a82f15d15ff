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

pub(crate) use bases::{copies, Bases, DeviceBases, Shift};
pub(crate) use plan::{check_sort_limits, window_range, Plan};
pub(crate) use schedule::{Msms, Summing};
pub(crate) use scratch::MsmScratch;
pub(crate) use window::copies_by_cost;
pub use window::{copies_window_bits, shifted_window_bits, window_bits};

use group::Group as _;

use crate::backend::cuda::ffi::msm::{window_width, Group};

/// Most windows of any MSM (2-bit windows), so one output buffer serves them all.
pub(crate) const MAX_WINDOWS: usize = 128;

/// Σ_g 2^(offset of window g)·sums[g]: the MSM from the bucket sets' sums of a plan whose
/// widest window has c bits over `copies` copies of the bases (1: plain bases), a set per
/// window of a copy's group (one over a copy per window: the sum itself).
pub(crate) fn combine<G: Group>(sums: &[G::Projective], c: u32, copies: usize) -> G::Projective {
    let (windows, copies) = ((sums.len() * copies) as u32, copies as u32);
    sums.iter().enumerate().rev().fold(G::Projective::identity(), |acc, (g, sum)| {
        (0..window_width(c, windows, copies, g as u32)).fold(acc, |acc, _| acc.double()) + sum
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use blstrs::{G1Projective, Scalar};
    use ff::{Field, PrimeField};
    use rand::SeedableRng;

    use super::*;
    use crate::backend::cuda::ffi::msm::{windows_for, G1};
    use crate::backend::cuda::msm::plan::widest_window;

    /// buckets.cuh's `msm_count` for one scalar: the (bucket key, negative, copy) of each
    /// nonzero digit of its `windows` windows of at most c bits over `copies` copies.
    fn digits(k: &Scalar, c: u32, windows: u32, copies: u32) -> Vec<(u32, bool, u32)> {
        let limbs: Vec<u32> =
            k.to_repr().as_ref().chunks(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect();
        let bits = |off: u32, width: u32| {
            let i = (off / 32) as usize;
            let v = limbs[i] as u64 | limbs.get(i + 1).map_or(0, |&l| (l as u64) << 32);
            (v >> (off % 32)) as u32 & ((1 << width) - 1)
        };
        let group = windows / copies;
        let (mut off, mut carry, mut out) = (0, 0, Vec::new());
        for w in 0..windows {
            let width = window_width(c, windows, copies, w);
            let v = bits(off, width) + carry;
            off += width;
            let negative = v > 1 << (width - 1);
            let magnitude = if negative { (1 << width) - v } else { v };
            carry = negative as u32;
            if magnitude != 0 {
                out.push((((w % group) << (c - 1)) + magnitude - 1, negative, w / group));
            }
        }
        assert_eq!(carry, 0, "a carry out of the top window");
        out
    }

    #[test]
    fn the_sorts_buckets_over_any_copies_sum_to_the_msm() {
        // The plan's sort and sums modelled on the host: each point of copy q (2^(q·span)·P)
        // into its digit's bucket, each set's Σ_d d·bucket_d, the sets combined.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(27);
        let n = 6;
        let points: Vec<G1Projective> = (0..n).map(|_| G1Projective::random(&mut rng)).collect();
        let mut scalars: Vec<Scalar> = (0..n - 2).map(|_| Scalar::random(&mut rng)).collect();
        scalars.extend([-Scalar::ONE, Scalar::ONE]);
        let expected: G1Projective = points.iter().zip(&scalars).map(|(p, k)| p * k).sum();
        // (plan bits, copies): plain, a copy per window, and fewer copies.
        let shapes =
            [(16, 1), (21, 1), (22, 12), (24, 11), (22, 2), (22, 3), (22, 4), (22, 6), (5, 2), (5, 13), (2, 64)];
        for (bits, copies) in shapes {
            let (c, windows) = (widest_window(bits), windows_for(bits) as u32);
            assert_eq!(windows % copies, 0, "{bits} bits, {copies} copies");
            let group = windows / copies;
            // Copy q: 2^(offset of its group's first window)·P.
            let offset = |q: u32| (0..q * group).map(|w| window_width(c, windows, copies, w)).sum::<u32>();
            let mut buckets: HashMap<u32, G1Projective> = HashMap::new();
            for (p, k) in points.iter().zip(&scalars) {
                for (key, negative, q) in digits(k, c, windows, copies) {
                    let copy = (0..offset(q)).fold(*p, |p, _| p.double());
                    *buckets.entry(key).or_insert_with(G1Projective::identity) += if negative { -copy } else { copy };
                }
            }
            let sets: Vec<G1Projective> = (0..windows / copies)
                .map(|g| {
                    let set = buckets.iter().filter(|(&key, _)| key >> (c - 1) == g);
                    set.map(|(&key, b)| b * Scalar::from(((key & ((1 << (c - 1)) - 1)) + 1) as u64)).sum()
                })
                .collect();
            assert_eq!(combine::<G1>(&sets, c, copies as usize), expected, "{bits} bits, {copies} copies");
        }
    }
}
