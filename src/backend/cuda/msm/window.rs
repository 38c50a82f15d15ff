//! The window width of an MSM: the c that minimises its additions, into buckets and then
//! reducing the buckets, for plans over plain bases (a set of buckets per window), shifted
//! ones (a copy per window, one set all windows share) or fewer copies (a set per window of
//! a copy's group); and which of these an MSM's bases take, cheapest first.

use super::plan::{MAX_KEYS, SHIFTED_WINDOW_BITS, WINDOW_BITS};
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

/// Window bits for `n` points over `copies` shifted copies of their bases, each copy serving
/// a group of windows/copies windows whose g-th windows share a set of buckets: a copy per
/// window of [`shifted_window_bits`] when that is their count, else the c that minimises
/// n·⌈256/c⌉ + 6·(windows/copies)·2^(c−1) among those whose windows the copies divide, the
/// sets' buckets at most MAX_KEYS (c = 22 for 2 to 6 copies at 2^27); `None` when there is
/// none.
pub fn copies_window_bits(n: usize, copies: usize) -> Option<u32> {
    let shifted = shifted_window_bits(n);
    if copies == windows_for(shifted) {
        return Some(shifted);
    }
    let fits = |c: u32| copies > 0 && windows_for(c) % copies == 0 && (windows_for(c) / copies) << (c - 1) <= MAX_KEYS;
    SHIFTED_WINDOW_BITS.filter(|&c| fits(c)).min_by_key(|&c| cost(n, c, windows_for(c) / copies))
}

/// The shifted copies for which an MSM of `n` points costs less than over plain bases,
/// cheapest first (ties: fewer copies first): a copy per window
/// ([`shifted_window_bits`]), then fewer, each taking its own window
/// ([`copies_window_bits`]). So a key's placement tries them in turn, as memory allows.
pub(crate) fn copies_by_cost(n: usize) -> Vec<usize> {
    let plain = window_bits(n);
    let plain = cost(n, plain, windows_for(plain));
    let mut copies: Vec<(usize, usize)> = (2..=windows_for(shifted_window_bits(n)))
        .filter_map(|t| {
            let c = copies_window_bits(n, t)?;
            let k = cost(n, c, windows_for(c) / t);
            (k < plain).then_some((k, t))
        })
        .collect();
    copies.sort_unstable();
    copies.into_iter().map(|(_, t)| t).collect()
}

/// The window bits and copies (`None`: plain bases) of a plan of `n` points over plain bases
/// or a copy per window: the two plans the tests of the sorts' sizes hold against each other.
#[cfg(test)]
pub(crate) fn plain_or_shifted(n: usize, shifted: bool) -> (u32, Option<usize>) {
    match shifted {
        true => (shifted_window_bits(n), Some(windows_for(shifted_window_bits(n)))),
        false => (window_bits(n), None),
    }
}

/// The c in `bits` that minimises [`cost`]: a set of buckets per window, or one set they all
/// share.
fn cheapest_window(n: usize, bits: std::ops::RangeInclusive<u32>, shared: bool) -> u32 {
    let sets = |c: u32| if shared { 1 } else { windows_for(c) };
    bits.min_by_key(|&c| cost(n, c, sets(c))).expect("a nonempty range")
}

/// The additions of an MSM of `n` points in windows of c bits with `sets` bucket sets, in
/// mixed additions: n·⌈256/c⌉ into buckets, about 6 a bucket to reduce them.
fn cost(n: usize, c: u32, sets: usize) -> usize {
    n * windows_for(c) + ((6 * sets) << (c - 1))
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

    #[test]
    fn fewer_copies_take_windows_they_divide_and_cost_between_plain_and_shifted() {
        let n = 1 << 27;
        for copies in 2..=6 {
            let c = copies_window_bits(n, copies);
            assert!(c.is_some_and(|c| windows_for(c) % copies == 0), "{copies} copies: {c:?}");
        }
        assert_eq!(copies_window_bits(n, 2), Some(22));
        assert_eq!(copies_window_bits(n, 0), None);
        let by_cost = copies_by_cost(n);
        let all = windows_for(shifted_window_bits(n));
        assert_eq!(by_cost.first(), Some(&all), "{by_cost:?}");
        assert!(by_cost.contains(&2) && by_cost.contains(&3), "{by_cost:?}");
        let costs: Vec<usize> = by_cost
            .iter()
            .map(|&t| {
                let c = copies_window_bits(n, t).unwrap();
                cost(n, c, windows_for(c) / t)
            })
            .collect();
        assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{by_cost:?}: {costs:?}");
        let plain = cost(n, window_bits(n), windows_for(window_bits(n)));
        assert!(costs.iter().all(|&k| k < plain), "{costs:?} against {plain}");
    }
}
