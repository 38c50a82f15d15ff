//! The geometry of an MSM plan, safe arithmetic only (the launches are `ffi/msm.rs`'s): how
//! c-bit windows share the scalar's 256 bits, how the scatter bins the bucket keys, how many
//! reduction levels a fullest bucket needs and how many items each level reads and writes,
//! and the room a plan's shared buffers must have, so that every offset a kernel computes
//! stays inside its buffer.

use super::geometry::{self, SCAN_ITEMS, SCAN_THREADS};

/// Items one thread sums at each reduction level (`L` in accumulate.cuh). The rule: enough
/// threads to fill the device several times over, `LEVEL_THREADS` (132 SMs of 2048 threads,
/// twice over), but at most `MAX_CHUNK` so that few partial sums are left per bucket, and at
/// least `MIN_CHUNK`, so that a thread's additions outweigh its launch and its staircase slot.
/// Refit with `gpu_report --proofs 0 --max-lg-msm 24` (G1 and G2 rows from 2^12 to 2^24),
/// skewed scalars included (the GPU tests' `Scalars::AllOne` cases).
pub(crate) const MIN_CHUNK: usize = 8;
pub(crate) const MAX_CHUNK: usize = 64;
pub(crate) const LEVEL_THREADS: usize = 1 << 19;
/// Items per bucket the window sums take from the last level: few enough that one thread
/// adds them while the segments stay balanced (refit as the chunks above).
pub(crate) const FINAL_ITEMS: usize = 8;
/// Entries from which a shifted plan bins them before placing them. The rule: bin once the
/// entries (4 bytes each) overflow the L2 cache (50 MB on the H200) by an order of magnitude:
/// at 2^24 points (800 MB) one pass cost 2 ms more than two, at 2^22 (220 MB) binning cost
/// 0.7 ms more. Refit with `gpu_report --proofs 0 --max-lg-msm 24 --msm-bases shifted` on
/// builds of both sides of the threshold.
pub(crate) const BINNED_ENTRIES: usize = 1 << 27;
/// Bucket segments a window-sum launch aims for: enough threads to fill the device (132 SMs
/// of up to 2048 threads, four times over for the tail). Refit with `gpu_report` as above.
pub(crate) const SEGMENT_THREADS: usize = 1 << 16;
/// Window bits the kernels take: c ≤ 24 for `window_bits`, and ⌈256/c⌉·2^(c−1) buckets
/// within two levels of scan tiles (2^24) for c ≤ 21.
pub(crate) const WINDOW_BITS: std::ops::RangeInclusive<u32> = 2..=21;
/// Window bits of plans over shifted bases, whose windows share 2^(c−1) buckets: c ≤ 24.
pub(crate) const SHIFTED_WINDOW_BITS: std::ops::RangeInclusive<u32> = 2..=24;
/// Counts per block of the scan (geometry.h).
pub(crate) const SCAN_TILE: usize = (SCAN_THREADS * SCAN_ITEMS) as usize;
/// The scatter's most bins (buckets.cuh, geometry.h).
pub(crate) const BINS: usize = geometry::BINS as usize;

/// Windows of at most c bits: ⌈256/c⌉ of them, so that the last signed digit's carry is
/// absorbed.
pub(crate) fn windows_for(c: u32) -> usize {
    256usize.div_ceil(c as usize)
}

/// The widest window when ⌈256/c⌉ windows share the 256 bits as evenly as they can (the
/// others are a bit narrower; buckets.cuh): c itself, or less where c leaves the top window
/// short (c = 21: 13 windows of 20 and 19 bits, not 12 of 21 and one of 4).
pub(crate) fn widest_window(c: u32) -> u32 {
    256u32.div_ceil(windows_for(c) as u32)
}

/// The width of window w of a plan with `windows` windows of at most c bits.
pub(crate) fn window_width(c: u32, windows: u32, w: u32) -> u32 {
    c - 1 + u32::from(w < 256 - windows * (c - 1))
}

/// Keys a bin of the scatter holds, 2^shift, and the bins of `keys` keys: the least shift
/// that leaves at most BINS bins.
pub(crate) fn bins_for(keys: usize) -> (u32, usize) {
    let shift = keys.next_power_of_two().trailing_zeros().saturating_sub(BINS.trailing_zeros());
    (shift, keys.div_ceil(1 << shift))
}

/// The chunk length for `entries` entries.
pub(crate) fn chunk_for(entries: usize) -> usize {
    (entries / LEVEL_THREADS).clamp(MIN_CHUNK, MAX_CHUNK)
}

/// Reduction levels for a fullest bucket of `items` with chunks of `chunk`: one, and more
/// while a bucket can have more than FINAL_ITEMS items left (a bucket of m items leaves at
/// most ⌈m/chunk⌉ + 1 to the next level: its runs, and one slot of the staircase).
pub(crate) fn levels_for(items: usize, chunk: usize) -> u32 {
    let (mut levels, mut most) = (1, items.div_ceil(chunk) + 1);
    while most > FINAL_ITEMS {
        (levels, most) = (levels + 1, most.div_ceil(chunk) + 1);
    }
    levels
}

/// Items level `level` ≥ 1 reads when `entries` fall into `keys` buckets (level 1 reads the
/// entries); level ℓ writes the items of level ℓ + 1: ⌊items/chunk⌋ + keys slots.
pub(crate) fn level_items(entries: usize, keys: usize, chunk: usize, level: u32) -> usize {
    (1..level).fold(entries, |items, _| items / chunk + keys)
}

/// Most slots level `level` ≥ 1 writes for a plan of at most `entries` entries in `keys`
/// buckets, whatever chunk [`chunk_for`] picks for its entries t: level 1 writes
/// ⌊t/chunk⌋ + keys, and t/chunk_for(t) is at most t/MIN_CHUNK, and below 2·LEVEL_THREADS
/// unless the chunk is MAX_CHUNK; later levels ⌊items/chunk⌋ + keys of the slots before.
pub(crate) fn written_bound(entries: usize, keys: usize, level: u32) -> usize {
    let first = (entries / MAX_CHUNK).max(2 * LEVEL_THREADS).min(entries / MIN_CHUNK) + keys;
    (1..level).fold(first, |items, _| items / MIN_CHUNK + keys)
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

/// What the shared buffers of a scratch hold room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Room {
    pub(crate) keys: usize,
    pub(crate) entries: usize,
    /// Entries the scatter bins first (a large shifted plan's; buckets.cuh).
    pub(crate) binned: usize,
    pub(crate) levels: u32,
}

impl Room {
    /// The most a plan of `n` points with `c`-bit windows can need: a bucket set per window
    /// (a bucket holds at most n entries), or one set for all (`shifted`; up to n·windows).
    pub(crate) fn for_plan(n: usize, c: u32, shifted: bool) -> Room {
        let (windows, keys) = (windows_for(c), 1 << (c - 1));
        let (sets, fullest) = if shifted { (1, n * windows) } else { (windows, n) };
        let binned = if shifted && n * windows >= BINNED_ENTRIES { n * windows } else { 0 };
        Room { keys: sets * keys, entries: n * windows, binned, levels: levels_for(fullest, MIN_CHUNK) }
    }

    pub(crate) fn covers(&self, other: &Room) -> bool {
        self.keys >= other.keys
            && self.entries >= other.entries
            && self.binned >= other.binned
            && self.levels >= other.levels
    }
}

/// The window bits plans over plain or shifted bases take.
pub(crate) fn window_range(shifted: bool) -> std::ops::RangeInclusive<u32> {
    if shifted {
        SHIFTED_WINDOW_BITS
    } else {
        WINDOW_BITS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cuda::msm::plan_window_bits;

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
            let widths: Vec<u32> = (0..windows).map(|w| window_width(wide, windows, w)).collect();
            assert_eq!(widths.iter().sum::<u32>(), 256, "c = {c}: {widths:?}");
            assert!(wide <= c && widths.iter().all(|&b| b == wide || b == wide - 1), "c = {c}: {widths:?}");
        }
        assert_eq!((widest_window(21), windows_for(21)), (20, 13));
    }

    #[test]
    fn shifted_plans_share_one_bucket_set_and_room_for_its_fullest_bucket() {
        let (plain, shifted) = (Room::for_plan(1 << 20, 19, false), Room::for_plan(1 << 20, 19, true));
        assert_eq!((plain.keys, shifted.keys, plain.entries, shifted.entries), (14 << 18, 1 << 18, 14 << 20, 14 << 20));
        // A scalar repeated n times puts every window's digit into one shared bucket.
        assert_eq!(shifted.levels, levels_for(14 << 20, MIN_CHUNK));
        assert!(shifted.levels > plain.levels, "{plain:?} {shifted:?}");
        // Only large shifted plans bin their entries before placing them: 2^24 points, not 2^22.
        let binned = |lg: usize, shifted| {
            let n = 1 << lg;
            Room::for_plan(n, widest_window(plan_window_bits(n, shifted)), shifted).binned
        };
        assert_eq!((binned(24, true), binned(22, true), binned(24, false)), (12 << 24, 0, 0));
        assert!(shifted.covers(&Room { binned: 0, ..shifted }) && !plain.covers(&Room { binned: 1, ..plain }));
        // The widest shifted windows (24 bits) keep their buckets within two levels of scan tiles.
        assert!(Room::for_plan(1 << 26, widest_window(24), true).keys <= SCAN_TILE * SCAN_TILE);
    }

    #[test]
    fn levels_leave_at_most_final_items_per_bucket() {
        for chunk in [MIN_CHUNK, 32, MAX_CHUNK] {
            for fullest in [0, 1, 8, 9, 100, 1 << 20, 1 << 31] {
                let levels = levels_for(fullest, chunk);
                // A bucket of m items starting at item a leaves ⌊(a + m)/L⌋ − ⌊a/L⌋ + 1 slots to
                // the next level, where it may start anywhere again.
                let most = |m: usize| (0..chunk).map(|a| (a + m) / chunk - a / chunk + 1).max().unwrap();
                let last = (0..levels).fold(fullest, |m, _| most(m));
                assert!(last <= FINAL_ITEMS, "chunk {chunk}, fullest {fullest}: {levels} levels leave {last}");
            }
        }
        assert_eq!(level_items(1000, 10, 8, 1), 1000);
        assert_eq!(level_items(1000, 10, 8, 3), (1000 / 8 + 10) / 8 + 10);
    }

    #[test]
    fn the_reserved_sums_hold_every_level_of_any_plan_they_cover() {
        let keys = 13 << 19;
        for entries in [0, 1, 100, 1 << 20, 13 << 22, 13 << 24, 13 << 26] {
            // Totals a plan reserved for `entries` can meet, every chunk boundary included.
            let edges = (MIN_CHUNK..=MAX_CHUNK).flat_map(|c| [c * LEVEL_THREADS - 1, c * LEVEL_THREADS]);
            let totals = edges.chain([0, 1, entries / 3, entries]).filter(|&t| t <= entries);
            for total in totals {
                let chunk = chunk_for(total);
                for level in 1..=levels_for(entries, MIN_CHUNK) {
                    let written = level_items(total, keys, chunk, level + 1);
                    let bound = written_bound(entries, keys, level);
                    assert!(written <= bound, "entries {entries}, total {total}, level {level}: {written} > {bound}");
                }
            }
        }
        // A 2^26-point G1 plan (13 windows) reserves about entries/64 level-1 slots, not /8.
        assert_eq!(written_bound(13 << 26, keys, 1), (13 << 26) / 64 + keys);
    }
}
