//! The plan of an MSM: how one set of scalars is cut into digits and sorted into buckets
//! (window widths, shared buckets over shifted bases, a binned scatter), and how the buckets
//! are summed (items per thread, reduction levels, window segments). Safe arithmetic only:
//! the sort and the sums are `ffi/msm.rs`'s launches, which take these choices.

use crate::backend::cuda::ffi::msm::{windows_for, Buckets, Copies, Digits, BINS, MAX_WINDOW_BITS, SCAN_TILE};
use crate::error::{Error, Result};

/// Items one thread sums at each reduction level (`L` in accumulate.cuh). The rule: enough
/// threads to fill the device several times over, `LEVEL_THREADS` (132 SMs of 2048 threads,
/// twice over), but at most `MAX_THREAD_ITEMS`: each run a thread leaves is a full addition
/// at the next level and a slot of scratch, so the cap is as high as a thread's serial sum
/// can go without outlasting the level (no MSM row slower at 128 than at 64); and at least
/// `MIN_THREAD_ITEMS`, so that a thread's additions outweigh its launch and its staircase
/// slot. Refit with `gpu_report --proofs 0 --max-lg-msm 24` (G1 and G2 rows from
/// 2^12 to 2^24), skewed scalars included (the GPU tests' `Scalars::AllOne` cases).
pub(crate) const MIN_THREAD_ITEMS: usize = 8;
pub(crate) const MAX_THREAD_ITEMS: usize = 128;
pub(crate) const LEVEL_THREADS: usize = 1 << 19;
/// Items per bucket the window sums take from the last level: few enough that one thread
/// adds them while the segments stay balanced (refit as the items per thread above).
pub(crate) const FINAL_ITEMS: usize = 8;
/// Entries from which a plan over shifted bases bins them before placing them. The rule: bin
/// once the entries (4 bytes each) overflow the L2 cache (50 MB on the H200) by an order of
/// magnitude: at 2^24 points (800 MB) one pass cost 2 ms more than two, at 2^22 (220 MB)
/// binning cost 0.7 ms more (a copy per window); over 3 copies one pass cost 3 ms more at
/// 2^24 on an H100. Refit with `gpu_report --proofs 0 --max-lg-msm 24 --msm-bases shifted
/// --msm-copies 2,3,4,6` on builds of both sides of the threshold.
pub(crate) const BINNED_ENTRIES: usize = 1 << 27;
/// Bucket segments a window-sum launch aims for: enough threads to fill the device (132 SMs
/// of up to 2048 threads, four times over for the tail). Refit with `gpu_report` as above.
pub(crate) const SEGMENT_THREADS: usize = 1 << 16;
/// Window bits of plans over plain bases, a set of buckets per window: ⌈256/c⌉·2^(c−1)
/// buckets within two levels of scan tiles (2^24) for c ≤ 21.
pub(crate) const WINDOW_BITS: std::ops::RangeInclusive<u32> = 2..=21;
/// Window bits of plans over shifted bases, whose windows share 2^(c−1) buckets (a copy per
/// window) or a few times that (fewer copies, within MAX_KEYS): as wide as the digits' kernel
/// reads.
pub(crate) const SHIFTED_WINDOW_BITS: std::ops::RangeInclusive<u32> = 2..=MAX_WINDOW_BITS;
/// Most buckets of a plan: what two levels of scan tiles take.
pub(crate) const MAX_KEYS: usize = SCAN_TILE * SCAN_TILE;

/// The widest window when ⌈256/c⌉ windows share the 256 bits as evenly as they can (the
/// others are a bit narrower; buckets.cuh): c itself, or less where c leaves the top window
/// short (c = 21: 13 windows of 20 and 19 bits, not 12 of 21 and one of 4).
pub(crate) fn widest_window(c: u32) -> u32 {
    256u32.div_ceil(windows_for(c) as u32)
}

/// The window bits plans over plain or shifted bases take.
pub(crate) fn window_range(shifted: bool) -> std::ops::RangeInclusive<u32> {
    if shifted {
        SHIFTED_WINDOW_BITS
    } else {
        WINDOW_BITS
    }
}

/// Keys a bin of the scatter holds, 2^shift, and the bins of `keys` keys: the least shift
/// that leaves at most BINS bins.
pub(crate) fn bins_for(keys: usize) -> (u32, usize) {
    let shift = keys.next_power_of_two().trailing_zeros().saturating_sub(BINS.trailing_zeros());
    (shift, keys.div_ceil(1 << shift))
}

/// The items per thread for `entries` entries.
pub(crate) fn thread_items(entries: usize) -> usize {
    (entries / LEVEL_THREADS).clamp(MIN_THREAD_ITEMS, MAX_THREAD_ITEMS)
}

/// Reduction levels for a fullest bucket of `items` with `per_thread` items per thread: one,
/// and more while a bucket can have more than FINAL_ITEMS items left (a bucket of m items
/// leaves at most ⌈m/per_thread⌉ + 1 to the next level: its runs, and one slot of the
/// staircase).
pub(crate) fn levels_for(items: usize, per_thread: usize) -> u32 {
    let (mut levels, mut most) = (1, items.div_ceil(per_thread) + 1);
    while most > FINAL_ITEMS {
        (levels, most) = (levels + 1, most.div_ceil(per_thread) + 1);
    }
    levels
}

/// The items per thread and the reduction levels of a sort of `entries` entries whose
/// fullest bucket holds `fullest`.
pub(crate) fn levels(entries: usize, fullest: usize) -> (usize, u32) {
    let per_thread = thread_items(entries);
    (per_thread, levels_for(fullest, per_thread))
}

/// Most slots level `level` ≥ 1 writes for a plan of at most `entries` entries in `keys`
/// buckets, whatever items per thread [`thread_items`] picks for its entries t: level 1
/// writes ⌊t/items⌋ + keys, and t/thread_items(t) is at most t/MIN_THREAD_ITEMS, and below
/// 2·LEVEL_THREADS unless the items are MAX_THREAD_ITEMS; later levels ⌊items/L⌋ + keys of
/// the slots before.
pub(crate) fn written_bound(entries: usize, keys: usize, level: u32) -> usize {
    let first = (entries / MAX_THREAD_ITEMS).max(2 * LEVEL_THREADS).min(entries / MIN_THREAD_ITEMS) + keys;
    (1..level).fold(first, |items, _| items / MIN_THREAD_ITEMS + keys)
}

/// Buckets per segment of the window sums, and segments per window: as many threads as
/// SEGMENT_THREADS, or one segment per window.
pub(crate) fn segments_for(windows: usize, c: u32) -> (usize, usize) {
    let half = 1usize << (c - 1);
    let mut segment = 1;
    while segment < half && windows * (half / segment) > SEGMENT_THREADS {
        segment *= 2;
    }
    (segment, half / segment)
}

/// How the scalars of `n` points are cut into digits of windows of at most c bits, over
/// plain bases or `shifted` copies of them.
pub(crate) fn digits_for(n: usize, c: u32, shifted: Option<Copies>) -> Digits {
    let digits = Digits { c: widest_window(c), shifted, bin_shift: None };
    let binned = shifted.is_some() && n * windows_for(digits.c) >= BINNED_ENTRIES;
    Digits { bin_shift: binned.then(|| bins_for(digits.keys()).0), ..digits }
}

/// Whether the sort's kernels take `n` scalars in windows of `c` bits over plain bases or
/// `copies` shifted copies: their entries are 32-bit words whose top bit is the digit's
/// sign, so n < 2^31 points (and, shifted, as many points in all copies), and n·⌈256/c⌉
/// entries in 32 bits.
///
/// # Errors
/// [`Error::DeviceLimit`] naming the count that does not fit.
pub(crate) fn check_sort_limits(n: usize, c: u32, copies: Option<usize>) -> Result<()> {
    let entries = n.saturating_mul(windows_for(widest_window(c)));
    let (what, limit, got) = match copies {
        Some(copies) if n.saturating_mul(copies) >= 1 << 31 => {
            ("MSM points in all shifted copies", (1 << 31) - 1, n.saturating_mul(copies))
        }
        None if n >= 1 << 31 => ("MSM points", (1 << 31) - 1, n),
        _ => ("MSM entries (points times windows)", u32::MAX as usize, entries),
    };
    match got <= limit {
        true => Ok(()),
        false => Err(Error::DeviceLimit { what, limit, got }),
    }
}

/// One set of scalars sorted into buckets, and how its sums run: for the sums of any group
/// whose bases it fits (the B query's scalars serve G1 and G2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) buckets: Buckets,
    /// Buckets per segment of the window sums ([`segments_for`]).
    pub(crate) segment: usize,
}

impl Plan {
    /// The plan of `buckets`.
    pub(crate) fn of(buckets: Buckets) -> Self {
        let (segment, _) = segments_for(buckets.sets(), buckets.digits.c);
        Plan { buckets, segment }
    }

    /// Bits of its widest window.
    pub(crate) fn c(&self) -> u32 {
        self.buckets.digits.c
    }

    /// Whether this is the plan a sort of `n` scalars with `c`-bit windows over `shifted`
    /// bases would make (so another group's MSM over the same scalars can take it).
    pub(crate) fn serves(&self, n: usize, c: u32, shifted: Option<Copies>) -> bool {
        self.buckets.n == n && self.buckets.digits == digits_for(n, c, shifted)
    }
}

#[cfg(test)]
mod tests {
    use super::super::window::{copies_window_bits, plain_or_shifted};
    use super::*;
    use crate::backend::cuda::ffi::msm::{level_items, window_width};
    use rand::{Rng, SeedableRng};

    #[test]
    fn every_key_falls_in_one_of_the_bins() {
        for keys in [1, 2, 255, 256, 257, 1000, 14 << 18, 1 << 21, 13 << 19, 1 << 23] {
            let (shift, bins) = bins_for(keys);
            assert!((keys - 1) >> shift < bins && bins <= BINS, "{keys} keys, shift {shift}");
            assert!(shift == 0 || (keys - 1) >> (shift - 1) >= BINS, "{keys} keys: a smaller shift fits");
        }
    }

    #[test]
    fn windows_share_the_256_bits_evenly() {
        for c in WINDOW_BITS {
            let (wide, windows) = (widest_window(c), windows_for(c) as u32);
            let widths: Vec<u32> = (0..windows).map(|w| window_width(wide, windows, 1, w)).collect();
            assert_eq!(widths.iter().sum::<u32>(), 256, "c = {c}: {widths:?}");
            assert!(wide <= c && widths.iter().all(|&b| b == wide || b == wide - 1), "c = {c}: {widths:?}");
        }
        assert_eq!((widest_window(21), windows_for(21)), (20, 13));
    }

    #[test]
    fn only_large_shifted_plans_bin_their_entries() {
        let binned = |lg: usize, shifted: bool| {
            let n = 1 << lg;
            let (c, copies) = plain_or_shifted(n, shifted);
            digits_for(n, c, copies.map(|copies| Copies { points: n, copies })).bin_shift.is_some()
        };
        assert!(binned(24, true) && !binned(22, true) && !binned(24, false));
    }

    #[test]
    fn the_sorts_limits_take_filecoins_sizes_and_refuse_larger_ones() {
        // 2^27 (a PoRep partition's domain): plain, a copy per window, and 2 to 6 copies.
        for shifted in [false, true] {
            let (c, copies) = plain_or_shifted(1 << 27, shifted);
            assert!(check_sort_limits(1 << 27, c, copies).is_ok(), "2^27, shifted {shifted}");
        }
        for t in 2..=6 {
            let c = copies_window_bits(1 << 27, t).unwrap();
            assert!(check_sort_limits(1 << 27, c, Some(t)).is_ok(), "2^27, {t} copies");
        }
        // 2^28: a copy per window, or 8 copies, pass 2^31 points (7 do not); plain windows
        // still fit 32 bits.
        let n = 1 << 28;
        let (c, copies) = plain_or_shifted(n, true);
        let e = check_sort_limits(n, c, copies).unwrap_err();
        assert!(matches!(e, Error::DeviceLimit { limit, .. } if limit == (1 << 31) - 1), "{e}");
        assert!(check_sort_limits(n, 22, Some(8)).is_err() && check_sort_limits(n, 22, Some(7)).is_ok());
        assert!(check_sort_limits(n, plain_or_shifted(n, false).0, None).is_ok());
        assert!(matches!(check_sort_limits(1 << 31, 21, None), Err(Error::DeviceLimit { .. })));
    }

    #[test]
    fn levels_leave_at_most_final_items_per_bucket() {
        for per_thread in [MIN_THREAD_ITEMS, 32, MAX_THREAD_ITEMS] {
            for fullest in [0, 1, 8, 9, 100, 1 << 20, 1 << 31] {
                let levels = levels_for(fullest, per_thread);
                // A bucket of m items starting at item a leaves ⌊(a + m)/L⌋ − ⌊a/L⌋ + 1 slots to
                // the next level, where it may start anywhere again.
                let most = |m: usize| (0..per_thread).map(|a| (a + m) / per_thread - a / per_thread + 1).max().unwrap();
                let last = (0..levels).fold(fullest, |m, _| most(m));
                assert!(
                    last <= FINAL_ITEMS,
                    "{per_thread} per thread, fullest {fullest}: {levels} levels leave {last}"
                );
            }
        }
    }

    /// accumulate.cuh's `msm_level` and `msm_next_offsets` on the host, integers for points:
    /// thread t sums items [t·L, t·L + L) and writes each bucket k's run to slot t + k, of the
    /// ⌊items/L⌋ + keys zeroed slots; bucket k's slots then start at ⌊off[k]/L⌋ + k. Returns
    /// the slots and their offsets, and panics where a slot is out of room or written twice.
    fn level(items: &[u64], off: &[usize], per_thread: usize) -> (Vec<u64>, Vec<usize>) {
        let keys = off.len() - 1;
        let next: Vec<usize> = off.iter().enumerate().map(|(k, &o)| o / per_thread + k).collect();
        let (mut out, mut written) = (vec![0u64; next[keys]], vec![false; next[keys]]);
        let owner = |p: usize| off[..keys].partition_point(|&o| o <= p) - 1; // last k, off[k] <= p
        let mut write = |slot: usize, sum: u64| {
            assert!(slot < out.len() && !written[slot], "slot {slot} of {}", out.len());
            (out[slot], written[slot]) = (sum, true);
        };
        for t in 0..items.len().div_ceil(per_thread) {
            let (begin, end) = (t * per_thread, ((t + 1) * per_thread).min(items.len()));
            let (mut k, mut acc) = (owner(begin), 0u64);
            let mut bucket_end = off[k + 1];
            for (p, &item) in items.iter().enumerate().take(end).skip(begin) {
                if p == bucket_end {
                    write(t + k, acc);
                    (k, acc) = (k + 1, 0);
                    bucket_end = off[k + 1];
                    if bucket_end == p {
                        k = owner(p);
                        bucket_end = off[k + 1];
                    }
                }
                acc = acc.wrapping_add(item);
            }
            write(t + k, acc);
        }
        (out, next)
    }

    #[test]
    fn the_levels_staircase_keeps_every_buckets_sum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        // Bucket sizes: random with empty runs, one bucket of nearly all the items, a lone
        // nonempty bucket among empty ones, and a single bucket.
        let random: Vec<usize> = (0..300).map(|_| if rng.gen_bool(0.3) { 0 } else { rng.gen_range(1..40) }).collect();
        let skewed: Vec<usize> = (0..64).map(|k| if k == 17 { 100_000 } else { k % 3 }).collect();
        let lone: Vec<usize> = (0..50).map(|k| if k == 49 { 5000 } else { 0 }).collect();
        for sizes in [random, skewed, lone, vec![70_000]] {
            let mut off = vec![0];
            off.extend(sizes.iter().scan(0, |o, &s| {
                *o += s;
                Some(*o)
            }));
            let keys = sizes.len();
            let items: Vec<u64> = (0..off[keys]).map(|_| rng.gen()).collect();
            let sums = |v: &[u64], off: &[usize]| -> Vec<u64> {
                off.windows(2).map(|r| v[r[0]..r[1]].iter().fold(0u64, |a, &x| a.wrapping_add(x))).collect()
            };
            let (expected, fullest) = (sums(&items, &off), sizes.iter().copied().max().unwrap_or(0));
            for per_thread in [MIN_THREAD_ITEMS, 9, 32, 63, 64, MAX_THREAD_ITEMS - 1, MAX_THREAD_ITEMS] {
                let levels = levels_for(fullest, per_thread);
                let (mut v, mut o) = (items.clone(), off.clone());
                for l in 1..=levels {
                    (v, o) = level(&v, &o, per_thread);
                    assert_eq!(v.len(), level_items(off[keys], keys, per_thread, l + 1));
                    assert_eq!(sums(&v, &o), expected, "level {l}, {per_thread} a thread");
                }
                let left = o.windows(2).map(|r| r[1] - r[0]).max().unwrap();
                assert!(left <= FINAL_ITEMS, "{levels} levels of {per_thread} leave {left} items a bucket");
            }
        }
    }
}
