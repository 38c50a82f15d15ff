//! The device buffers of a backend's MSMs, sized before the work for the largest plan each
//! MSM can make (allocations synchronise the device, so none happens in the proving loop),
//! and grown, never shrunk, when a larger one comes.

use super::plan::{levels_for, segments_for, widest_window, window_range, written_bound};
use super::plan::{BINNED_ENTRIES, MIN_THREAD_ITEMS};
use super::window::window_bits;
use crate::backend::cuda::ffi::msm::{windows_for, BucketRoom, Group, MsmBuffers};
use crate::error::Result;

/// What a plan's sort may need: the most buckets, entries, binned entries and levels of any
/// plan of `n` points with `c`-bit windows over plain bases (a bucket set per window, a
/// bucket holding at most n entries) or `copies` shifted copies (a set per window of a
/// copy's group, up to n·copies entries a bucket; large plans bin their entries,
/// [`BINNED_ENTRIES`]).
fn room_for(n: usize, c: u32, copies: Option<usize>) -> BucketRoom {
    let (windows, keys) = (windows_for(c), 1 << (c - 1));
    let copies_or_one = copies.unwrap_or(1);
    let (sets, fullest) = (windows / copies_or_one, n * copies_or_one);
    let binned = if copies.is_some() && n * windows >= BINNED_ENTRIES { n * windows } else { 0 };
    BucketRoom { keys: sets * keys, entries: n * windows, binned, levels: levels_for(fullest, MIN_THREAD_ITEMS) }
}

fn covers(room: &BucketRoom, other: &BucketRoom) -> bool {
    room.keys >= other.keys
        && room.entries >= other.entries
        && room.binned >= other.binned
        && room.levels >= other.levels
}

/// The device buffers of the MSMs of one backend, reused by every MSM that fits them.
#[derive(Debug, Default)]
pub(crate) struct MsmScratch {
    /// What the sort's buffers are sized for.
    room: BucketRoom,
    buffers: MsmBuffers,
}

impl MsmScratch {
    /// Sizes the buffers for plans of up to `n` points with `c`-bit windows, over plain bases
    /// or `copies` shifted copies, and the sums of group `G` over them.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory) when the device cannot
    /// hold them.
    ///
    /// # Panics
    /// If `c` is outside the plans' [window range](window_range).
    pub(crate) fn reserve<G: Group>(&mut self, n: usize, c: u32, copies: Option<usize>) -> Result<()> {
        assert!(window_range(copies.is_some()).contains(&c), "window of {c} bits");
        let c = widest_window(c);
        self.reserve_room::<G>(room_for(n, c, copies), c)
    }

    /// Sizes the buffers for sorts that `need`, in windows of `c` bits, and group G's sums.
    fn reserve_room<G: Group>(&mut self, need: BucketRoom, c: u32) -> Result<()> {
        if !covers(&self.room, &need) {
            let room = BucketRoom {
                keys: self.room.keys.max(need.keys),
                entries: self.room.entries.max(need.entries),
                binned: self.room.binned.max(need.binned),
                levels: self.room.levels.max(need.levels),
            };
            self.buffers.grow_buckets(room)?;
            self.room = room;
        }
        // Odd levels write the first sums, even ones the second.
        let bound = |parity: u32| {
            let written = |l| written_bound(need.entries, need.keys, l);
            (1..=need.levels).filter(|l| l % 2 == parity).map(written).max().unwrap_or(1)
        };
        let sets = need.keys >> (c - 1);
        let (_, per_window) = segments_for(sets, c);
        self.buffers.grow_sums::<G>([bound(1), bound(0)], sets * per_window)
    }

    /// Whether the buffers hold any plan of `n` points with `c`-bit windows over plain bases
    /// or `copies` shifted copies.
    pub(crate) fn fits(&self, n: usize, c: u32, copies: Option<usize>) -> bool {
        covers(&self.room, &room_for(n, widest_window(c), copies))
    }

    /// Sizes the split's rooms (`split.rs`) for MSMs of up to `n` points in group G: the
    /// bucket of up to n ones (one 2-bit window: `ones_bucket`), the others of a
    /// [`SPLIT_SHARE`](super::split::SPLIT_SHARE)th of them, and the plans over them.
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    pub(crate) fn reserve_split<G: Group>(&mut self, n: usize) -> Result<()> {
        let ones = BucketRoom { keys: 2, entries: n, binned: 0, levels: levels_for(n, MIN_THREAD_ITEMS) };
        self.reserve_room::<G>(ones, 2)?;
        let room = n / super::split::SPLIT_SHARE;
        self.buffers.grow_split::<G>(room)?;
        // A plan of fewer points may take a window a bit narrower, and so more entries.
        let c = window_bits(room);
        self.reserve::<G>(room, c, None)?;
        match c > *window_range(false).start() {
            true => self.reserve::<G>(room, c - 1, None),
            false => Ok(()),
        }
    }

    /// The buffers, for the sorts and sums.
    pub(crate) fn buffers(&self) -> &MsmBuffers {
        &self.buffers
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan::{thread_items, LEVEL_THREADS, MAX_THREAD_ITEMS};
    use super::super::window::plain_or_shifted;
    use super::*;
    use crate::backend::cuda::ffi::msm::{level_items, SCAN_TILE};

    #[test]
    fn shifted_plans_share_one_bucket_set_and_room_for_its_fullest_bucket() {
        let (plain, shifted) = (room_for(1 << 20, 19, None), room_for(1 << 20, 19, Some(14)));
        assert_eq!((plain.keys, shifted.keys, plain.entries, shifted.entries), (14 << 18, 1 << 18, 14 << 20, 14 << 20));
        // A scalar repeated n times puts every window's digit into one shared bucket.
        assert_eq!(shifted.levels, levels_for(14 << 20, MIN_THREAD_ITEMS));
        assert!(shifted.levels > plain.levels, "{plain:?} {shifted:?}");
        // Only large shifted plans bin their entries before placing them: 2^24 points, not 2^22.
        let binned = |lg: usize, shifted| {
            let n = 1 << lg;
            let (c, copies) = plain_or_shifted(n, shifted);
            room_for(n, widest_window(c), copies).binned
        };
        assert_eq!((binned(24, true), binned(22, true), binned(24, false)), (12 << 24, 0, 0));
        assert!(
            covers(&shifted, &BucketRoom { binned: 0, ..shifted })
                && !covers(&plain, &BucketRoom { binned: 1, ..plain })
        );
        // The widest shifted windows (24 bits) keep their buckets within two levels of scan tiles.
        assert!(room_for(1 << 26, widest_window(24), Some(11)).keys <= SCAN_TILE * SCAN_TILE);
    }

    #[test]
    fn fewer_copies_take_a_set_per_window_of_a_group_and_fuller_buckets() {
        // 22-bit windows at 2^27: 12 windows over 3 copies, 4 sets; a bucket takes up to 3n.
        let n = 1 << 27;
        let room = room_for(n, 22, Some(3));
        assert_eq!((room.keys, room.entries, room.binned), (4 << 21, 12 * n, 12 * n));
        assert_eq!(room.levels, levels_for(3 * n, MIN_THREAD_ITEMS));
        assert!(room.keys <= SCAN_TILE * SCAN_TILE);
    }

    #[test]
    fn the_reserved_sums_hold_every_level_of_any_plan_they_cover() {
        let keys = 13 << 19;
        for entries in [0, 1, 100, 1 << 20, 13 << 22, 13 << 24, 13 << 26] {
            // Totals a plan reserved for `entries` can meet, every boundary of the items per
            // thread included.
            let edges = (MIN_THREAD_ITEMS..=MAX_THREAD_ITEMS).flat_map(|c| [c * LEVEL_THREADS - 1, c * LEVEL_THREADS]);
            let totals = edges.chain([0, 1, entries / 3, entries]).filter(|&t| t <= entries);
            for total in totals {
                let per_thread = thread_items(total);
                for level in 1..=levels_for(entries, MIN_THREAD_ITEMS) {
                    let written = level_items(total, keys, per_thread, level + 1);
                    let bound = written_bound(entries, keys, level);
                    assert!(written <= bound, "entries {entries}, total {total}, level {level}: {written} > {bound}");
                }
            }
        }
        // A 2^26-point G1 plan (13 windows) reserves about entries/128 level-1 slots, not /8.
        assert_eq!(written_bound(13 << 26, keys, 1), (13 << 26) / 128 + keys);
        assert_eq!(level_items(1000, 10, 8, 1), 1000);
        assert_eq!(level_items(1000, 10, 8, 3), (1000 / 8 + 10) / 8 + 10);
    }
}
