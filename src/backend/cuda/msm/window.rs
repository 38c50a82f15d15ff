//! The window width of an MSM: the c that minimises its additions, into buckets and then
//! reducing the buckets, for plans over plain bases (a set of buckets per window) or shifted
//! ones (one set all windows share).

use super::plan::{SHIFTED_WINDOW_BITS, WINDOW_BITS};
use crate::backend::cuda::ffi::msm::windows_for;

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
