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

use group::Group as _;

use super::ffi::Group;
use super::plan::{window_width, windows_for, SHIFTED_WINDOW_BITS, WINDOW_BITS};

/// Window bits for `n` points: the c that minimises the additions into buckets,
/// n·⌈256/c⌉, plus the cost of reducing the buckets, about 6 mixed additions per bucket:
/// 6·⌈256/c⌉·2^(c−1). A bucket's reduction is two full additions in the window segments and
/// the last level's few partial sums (each full addition about 1.4 mixed ones); 6 is what
/// the H200 measured (`gpu_report --msm-windows`: c = 16, 16 and 19 at 2^20, 2^22 and 2^24,
/// within 1 % of the fastest width, where 2.8 chose 20 at 2^24, 3 % slower).
pub fn window_bits(n: usize) -> u32 {
    cheapest_window(n, WINDOW_BITS, false)
}

/// Window bits for `n` points over shifted bases, whose windows share one set of buckets:
/// the c that minimises n·⌈256/c⌉ + 6·2^(c−1) (c = 19 at 2^20, 22 at 2^24). The bases take
/// ⌈256/c⌉ copies on the device.
pub fn shifted_window_bits(n: usize) -> u32 {
    cheapest_window(n, SHIFTED_WINDOW_BITS, true)
}

/// The window bits of a plan of `n` points over plain or `shifted` bases.
pub(crate) fn plan_window_bits(n: usize, shifted: bool) -> u32 {
    if shifted {
        shifted_window_bits(n)
    } else {
        window_bits(n)
    }
}

/// The c in `bits` that minimises n·⌈256/c⌉ + 6·sets·2^(c−1): a set of buckets per window, or
/// one set they all share.
fn cheapest_window(n: usize, bits: std::ops::RangeInclusive<u32>, shared: bool) -> u32 {
    let cost = |c: u32| {
        let windows = windows_for(c);
        let sets = if shared { 1 } else { windows };
        n * windows + ((6 * sets) << (c - 1))
    };
    bits.min_by_key(|&c| cost(c)).expect("a nonempty range")
}

/// Σ_w 2^(offset of window w)·sums[w]: the MSM from the window sums of a plan whose widest
/// window has c bits.
pub(crate) fn combine<G: Group>(sums: &[G::Projective], c: u32) -> G::Projective {
    let windows = sums.len() as u32;
    sums.iter().enumerate().rev().fold(G::Projective::identity(), |acc, (w, sum)| {
        (0..window_width(c, windows, w as u32)).fold(acc, |acc, _| acc.double()) + sum
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_grow_with_the_points() {
        let cs: Vec<u32> = [0usize, 1, 1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 26].map(window_bits).to_vec();
        assert!(cs.windows(2).all(|w| w[0] <= w[1]), "{cs:?}");
        assert_eq!((cs[0], cs[4], cs[5]), (2, 16, 19), "{cs:?}");
        let shifted: Vec<u32> = [0usize, 1, 1 << 10, 1 << 20, 1 << 24, 1 << 26].map(shifted_window_bits).to_vec();
        assert!(shifted.windows(2).all(|w| w[0] <= w[1]), "{shifted:?}");
        assert_eq!((shifted[3], shifted[4]), (19, 22), "{shifted:?}");
    }
}
