//! The MSM's kernels (`cuda/msm/`), launched in the one order that keeps every index they
//! compute in bounds: [`MsmKernels::plan`] sorts the nonzero digits of one set of scalars into
//! buckets (count, scan, scatter) and works out each reduction level's offsets;
//! [`MsmKernels::window_sums`] then sums the buckets over one group's bases and leaves one
//! Jacobian point per window. The buffers between the steps belong to [`MsmScratch`], sized
//! for the worst case up front, so no step can be handed offsets another step did not compute.

use std::cell::Cell;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cust::stream::Stream;

use super::geometry::{self, BIN_ITEMS, BIN_THREADS, MSM_THREADS as THREADS, SCAN_ITEMS, SCAN_THREADS, SHIFT_THREADS};
use super::{blocks, launch, read, u32_arg, Arg, DeviceElem, DeviceVec, Fatbin, Function, HostElem};
use super::{XyzzG1, XyzzG2};
use crate::error::Result;

/// Items one thread sums at each reduction level (`L` in accumulate.cuh): enough threads to
/// fill the device several times over, `LEVEL_THREADS`, but at most `MAX_CHUNK` so that
/// few partial sums are left per bucket, and at least `MIN_CHUNK`.
const MIN_CHUNK: usize = 8;
const MAX_CHUNK: usize = 64;
const LEVEL_THREADS: usize = 1 << 19;
/// Items per bucket the window sums take from the last level.
const FINAL_ITEMS: usize = 8;
/// Counts a block of the scan takes (geometry.h).
const SCAN_TILE: usize = (SCAN_THREADS * SCAN_ITEMS) as usize;
/// The scatter's bins (buckets.cuh, geometry.h): at most BINS; digit words a block takes in
/// the first pass, and the runs of pairs the second takes at once (`PLACE_REGIONS`).
const BINS: usize = geometry::BINS as usize;
const BIN_TILE: u32 = BIN_THREADS * BIN_ITEMS;
const PLACE_REGIONS: usize = 8;
/// Entries from which a shifted plan bins them before placing them: 800 MB at 2^24, where one
/// pass costs 2 ms more than two (G1: 91.6 against 89.7 ms), overflow the L2 cache; 220 MB at
/// 2^22 nearly fit, and there binning cost 0.7 ms more.
const BINNED_ENTRIES: usize = 1 << 27;
/// Bucket segments a window-sum launch aims for: enough threads to fill the device.
const SEGMENT_THREADS: usize = 1 << 16;
/// Window bits the kernels take: c ≤ 24 for `window_bits`, and ⌈256/c⌉·2^(c−1) buckets
/// within two levels of scan tiles (2^24) for c ≤ 21.
pub(crate) const WINDOW_BITS: std::ops::RangeInclusive<u32> = 2..=21;
/// Window bits of plans over shifted bases, whose windows share 2^(c−1) buckets: c ≤ 24.
pub(crate) const SHIFTED_WINDOW_BITS: std::ops::RangeInclusive<u32> = 2..=24;

/// One group's summing kernels and the types they work on.
pub(crate) trait Group {
    /// Affine bases, as the proving key holds them.
    type Affine: HostElem;
    /// Window sums: the host's projective point, whose layout the device writes.
    type Projective: HostElem + group::Group;
    /// Bucket sums on the device.
    type Xyzz: DeviceElem;
    /// Threads per block of its kernels (the `MSM_KERNELS` lines of api.cu).
    const THREADS: u32;
    /// Its kernels.
    fn kernels(k: &MsmKernels) -> &SumKernels;
    /// Its buffers.
    fn buffers(s: &MsmScratch) -> &GroupBuffers<Self::Xyzz>;
    /// Its buffers, to grow.
    fn buffers_mut(s: &mut MsmScratch) -> &mut GroupBuffers<Self::Xyzz>;
}

/// G1 of BLS12-381.
#[derive(Debug)]
pub(crate) enum G1 {}
/// G2 of BLS12-381.
#[derive(Debug)]
pub(crate) enum G2 {}

impl Group for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;
    type Xyzz = XyzzG1;
    const THREADS: u32 = geometry::MSM_G1_THREADS;
    fn kernels(k: &MsmKernels) -> &SumKernels {
        &k.g1
    }
    fn buffers(s: &MsmScratch) -> &GroupBuffers<XyzzG1> {
        &s.g1
    }
    fn buffers_mut(s: &mut MsmScratch) -> &mut GroupBuffers<XyzzG1> {
        &mut s.g1
    }
}

impl Group for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    type Xyzz = XyzzG2;
    const THREADS: u32 = geometry::MSM_G2_THREADS;
    fn kernels(k: &MsmKernels) -> &SumKernels {
        &k.g2
    }
    fn buffers(s: &MsmScratch) -> &GroupBuffers<XyzzG2> {
        &s.g2
    }
    fn buffers_mut(s: &mut MsmScratch) -> &mut GroupBuffers<XyzzG2> {
        &mut s.g2
    }
}

/// One group's kernels (a `MSM_KERNELS` line of api.cu).
#[derive(Debug)]
pub(crate) struct SumKernels {
    sum_bases: Function,
    sum_sums: Function,
    bucket_segments: Function,
    fold_segments: Function,
    window_sums: Function,
    shift: Function,
}

impl SumKernels {
    fn new(fatbin: &Fatbin, group: &str) -> Result<Self> {
        let f = |name: &str| fatbin.function(&format!("g16_msm_{name}_{group}"));
        Ok(SumKernels {
            sum_bases: f("sum_bases")?,
            sum_sums: f("sum_sums")?,
            bucket_segments: f("bucket_segments")?,
            fold_segments: f("fold_segments")?,
            window_sums: f("window_sums")?,
            shift: f("shift")?,
        })
    }
}

/// What the scatter of a plan takes: `n` scalars' digit words in `windows` windows, entries
/// indexing copies of `window_points` points (0: plain bases), `keys` buckets, `total` entries.
#[derive(Debug, Clone, Copy)]
struct Scattered {
    n: usize,
    windows: usize,
    window_points: usize,
    keys: usize,
    total: usize,
}

/// The MSM's kernels, looked up once.
#[derive(Debug)]
pub(crate) struct MsmKernels {
    count: Function,
    scatter: Function,
    bin_starts: Function,
    bin: Function,
    place: Function,
    max: Function,
    next_offsets: Function,
    scan_tiles: Function,
    scan_add: Function,
    g1: SumKernels,
    g2: SumKernels,
}

/// Grows `v` to at least `len` elements (reallocating: the contents are not kept).
fn grow<T: DeviceElem>(v: &mut Option<DeviceVec<T>>, len: usize) -> Result<()> {
    if v.as_ref().is_none_or(|v| v.len() < len) {
        *v = None; // free the smaller one first
        *v = Some(DeviceVec::new(len)?);
    }
    Ok(())
}

/// A buffer that `reserve` made.
fn reserved<T: DeviceElem>(v: &Option<DeviceVec<T>>) -> &DeviceVec<T> {
    v.as_ref().expect("MsmScratch::reserve sized the buffers before any plan")
}

/// One group's bucket sums (two, for the levels to alternate) and window segments.
#[derive(Debug)]
pub(crate) struct GroupBuffers<X: DeviceElem> {
    sums: [Option<DeviceVec<X>>; 2],
    segments: Option<DeviceVec<X>>,
}

impl<X: DeviceElem> Default for GroupBuffers<X> {
    fn default() -> Self {
        GroupBuffers { sums: [None, None], segments: None }
    }
}

/// Windows of at most c bits: ⌈256/c⌉ of them, so that the last signed digit's carry is
/// absorbed.
pub(crate) fn windows_for(c: u32) -> usize {
    256usize.div_ceil(c as usize)
}

/// The widest window when ⌈256/c⌉ windows share the 256 bits as evenly as they can (the
/// others are a bit narrower; buckets.cuh): c itself, or less where c leaves the top window
/// short (c = 21: 13 windows of 20 and 19 bits, not 12 of 21 and one of 4).
fn widest_window(c: u32) -> u32 {
    256u32.div_ceil(windows_for(c) as u32)
}

/// The width of window w of a plan with `windows` windows of at most c bits.
pub(crate) fn window_width(c: u32, windows: u32, w: u32) -> u32 {
    c - 1 + u32::from(w < 256 - windows * (c - 1))
}

/// Keys a bin of the scatter holds, 2^shift, and the bins of `keys` keys: the least shift
/// that leaves at most BINS bins.
fn bins_for(keys: usize) -> (u32, usize) {
    let shift = keys.next_power_of_two().trailing_zeros().saturating_sub(BINS.trailing_zeros());
    (shift, keys.div_ceil(1 << shift))
}

/// The chunk length for `entries` entries.
fn chunk_for(entries: usize) -> usize {
    (entries / LEVEL_THREADS).clamp(MIN_CHUNK, MAX_CHUNK)
}

/// Reduction levels for a fullest bucket of `items` with chunks of `chunk`: one, and more
/// while a bucket can have more than FINAL_ITEMS items left (a bucket of m items leaves at
/// most ⌈m/chunk⌉ + 1 to the next level: its runs, and one slot of the staircase).
fn levels_for(items: usize, chunk: usize) -> u32 {
    let (mut levels, mut most) = (1, items.div_ceil(chunk) + 1);
    while most > FINAL_ITEMS {
        (levels, most) = (levels + 1, most.div_ceil(chunk) + 1);
    }
    levels
}

/// Items level `level` ≥ 1 reads when `entries` fall into `keys` buckets (level 1 reads the
/// entries); level ℓ writes the items of level ℓ + 1: ⌊items/chunk⌋ + keys slots.
fn level_items(entries: usize, keys: usize, chunk: usize, level: u32) -> usize {
    (1..level).fold(entries, |items, _| items / chunk + keys)
}

/// Most slots level `level` ≥ 1 writes for a plan of at most `entries` entries in `keys`
/// buckets, whatever chunk [`chunk_for`] picks for its entries t: level 1 writes
/// ⌊t/chunk⌋ + keys, and t/chunk_for(t) is at most t/MIN_CHUNK, and below 2·LEVEL_THREADS
/// unless the chunk is MAX_CHUNK; later levels ⌊items/chunk⌋ + keys of the slots before.
fn written_bound(entries: usize, keys: usize, level: u32) -> usize {
    let first = (entries / MAX_CHUNK).max(2 * LEVEL_THREADS).min(entries / MIN_CHUNK) + keys;
    (1..level).fold(first, |items, _| items / MIN_CHUNK + keys)
}

/// Buckets per segment of the window sums, and segments per window: as many threads as
/// SEGMENT_THREADS, or one segment per window.
fn segments_for(windows: usize, c: u32) -> (usize, usize) {
    let half = 1usize << (c - 1);
    let mut segment = 1;
    while segment < half && windows * (half / segment) > SEGMENT_THREADS {
        segment *= 2;
    }
    (segment, half / segment)
}

/// What the shared buffers of a scratch hold room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Room {
    keys: usize,
    entries: usize,
    /// Entries the scatter bins first (a large shifted plan's; buckets.cuh).
    binned: usize,
    levels: u32,
}

impl Room {
    /// The most a plan of `n` points with `c`-bit windows can need: a bucket set per window
    /// (a bucket holds at most n entries), or one set for all (`shifted`; up to n·windows).
    fn for_plan(n: usize, c: u32, shifted: bool) -> Room {
        let (windows, keys) = (windows_for(c), 1 << (c - 1));
        let (sets, fullest) = if shifted { (1, n * windows) } else { (windows, n) };
        let binned = if shifted && n * windows >= BINNED_ENTRIES { n * windows } else { 0 };
        Room { keys: sets * keys, entries: n * windows, binned, levels: levels_for(fullest, MIN_CHUNK) }
    }

    fn covers(&self, other: &Room) -> bool {
        self.keys >= other.keys
            && self.entries >= other.entries
            && self.binned >= other.binned
            && self.levels >= other.levels
    }
}

/// The device buffers of the MSMs of one backend, reused by every MSM that fits them.
#[derive(Debug, Default)]
pub(crate) struct MsmScratch {
    /// What the shared buffers are sized for.
    room: Room,
    counts: Option<DeviceVec<u32>>,
    cursor: Option<DeviceVec<u32>>,
    /// Where each bucket's items start: the entries (index 0), then the items of each level.
    offsets: Vec<DeviceVec<u32>>,
    /// The scan's tile sums and their offsets.
    tile_sums: Option<DeviceVec<u32>>,
    tile_offsets: Option<DeviceVec<u32>>,
    entries: Option<DeviceVec<u32>>,
    /// Every window's digit word of every scalar, window by window (count to scatter).
    digits: Option<DeviceVec<u32>>,
    /// The binned scatter's first pass (shifted plans): (key, entry) pairs sorted by bin, and
    /// each bin's next free slot.
    binned: Option<DeviceVec<u32>>,
    bin_cursor: Option<DeviceVec<u32>>,
    /// The fullest bucket, read back by the plan.
    fullest: Option<DeviceVec<u32>>,
    g1: GroupBuffers<XyzzG1>,
    g2: GroupBuffers<XyzzG2>,
    /// The plan whose buckets the buffers hold.
    planned: Cell<Option<Plan>>,
}

impl MsmScratch {
    /// Sizes the buffers for plans of up to `n` points with `c`-bit windows, over plain or
    /// `shifted` bases, and the sums of group `G` over them. Allocating here, before the work,
    /// keeps device allocations (which synchronise the device) out of the proving loop.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory) when the device cannot
    /// hold them.
    ///
    /// # Panics
    /// If `c` is outside [`WINDOW_BITS`] ([`SHIFTED_WINDOW_BITS`] when `shifted`).
    pub(crate) fn reserve<G: Group>(&mut self, n: usize, c: u32, shifted: bool) -> Result<()> {
        assert!(window_range(shifted).contains(&c), "window of {c} bits");
        let c = widest_window(c);
        let need = Room::for_plan(n, c, shifted);
        if !self.room.covers(&need) {
            let room = Room {
                keys: self.room.keys.max(need.keys),
                entries: self.room.entries.max(need.entries),
                binned: self.room.binned.max(need.binned),
                levels: self.room.levels.max(need.levels),
            };
            self.planned.set(None);
            grow(&mut self.counts, room.keys)?;
            grow(&mut self.cursor, room.keys)?;
            grow(&mut self.tile_sums, room.keys.div_ceil(SCAN_TILE))?;
            grow(&mut self.tile_offsets, room.keys.div_ceil(SCAN_TILE) + 1)?;
            grow(&mut self.entries, room.entries)?;
            grow(&mut self.digits, room.entries)?;
            if room.binned > 0 {
                grow(&mut self.binned, 2 * room.binned)?;
                grow(&mut self.bin_cursor, BINS)?; // any plan's bins, whatever its keys
            }
            grow(&mut self.fullest, 1)?;
            if self.offsets.first().is_none_or(|o| o.len() <= room.keys) {
                self.offsets.clear();
            }
            while self.offsets.len() <= room.levels as usize {
                self.offsets.push(DeviceVec::new(room.keys + 1)?);
            }
            self.room = room;
        }
        // Odd levels write sums[0], even ones sums[1].
        let bound = |parity: u32| {
            let written = |l| written_bound(need.entries, need.keys, l);
            (1..=need.levels).filter(|l| l % 2 == parity).map(written).max()
        };
        let sets = need.keys >> (c - 1);
        let (_, per_window) = segments_for(sets, c);
        let group = G::buffers_mut(self);
        grow(&mut group.sums[0], bound(1).unwrap_or(1))?;
        grow(&mut group.sums[1], bound(0).unwrap_or(1))?;
        grow(&mut group.segments, sets * per_window)?;
        Ok(())
    }
}

/// The buckets of one set of scalars, as [`MsmKernels::plan`] sorted them into the scratch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Scalars (and bases) summed.
    pub(crate) n: usize,
    /// Bits of the widest window ([`widest_window`]).
    pub(crate) c: u32,
    /// Windows: ⌈256/c⌉, so that the last signed digit's carry is absorbed.
    pub(crate) windows: u32,
    /// Over shifted bases with this many points a copy: the windows share one set of
    /// buckets, and window w's entries index copy w. `None`: plain bases, a set a window.
    pub(crate) shifted: Option<usize>,
    /// Entries: the scalars' nonzero digits, one addition each.
    pub(crate) entries: usize,
    /// Items one thread sums at each level.
    pub(crate) chunk: usize,
    /// Reduction levels: after them no bucket has more than FINAL_ITEMS items.
    pub(crate) levels: u32,
    /// Tells plans apart, so the scratch can check that it still holds this one's buckets.
    serial: u64,
}

impl Plan {
    /// Bucket sets, one sum each: one a window, or one for all over shifted bases.
    pub(crate) fn sets(&self) -> usize {
        if self.shifted.is_some() {
            1
        } else {
            self.windows as usize
        }
    }

    /// Whether this is the plan `plan` would make for `n` scalars, `c`-bit windows and
    /// `shifted` bases (so another group's MSM over the same scalars can take it).
    pub(crate) fn serves(&self, n: usize, c: u32, shifted: Option<usize>) -> bool {
        self.n == n && self.c == widest_window(c) && self.shifted == shifted
    }

    /// Buckets of all sets: sets · 2^(c−1).
    fn keys(&self) -> usize {
        self.sets() << (self.c - 1)
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

impl MsmKernels {
    pub(crate) fn new(fatbin: &Fatbin) -> Result<Self> {
        Ok(MsmKernels {
            count: fatbin.function("g16_msm_count")?,
            scatter: fatbin.function("g16_msm_scatter")?,
            bin_starts: fatbin.function("g16_msm_bin_starts")?,
            bin: fatbin.function("g16_msm_bin")?,
            place: fatbin.function("g16_msm_place")?,
            max: fatbin.function("g16_msm_max")?,
            next_offsets: fatbin.function("g16_msm_next_offsets")?,
            scan_tiles: fatbin.function("g16_scan_tiles")?,
            scan_add: fatbin.function("g16_scan_add")?,
            g1: SumKernels::new(fatbin, "g1")?,
            g2: SumKernels::new(fatbin, "g2")?,
        })
    }

    /// Sorts the nonzero signed digits of `scalars[range]`, in windows of at most c bits, into
    /// buckets in `scratch`: a set a window, whose entries index the range (from its start),
    /// or, over `shifted` bases of that many points a copy, one set whose entries index the
    /// copies. Waits once for the stream, to learn the fullest bucket (which sets the levels).
    ///
    /// # Panics
    /// If `range` is not inside `scalars`, a copy of shifted bases is shorter than it, or
    /// `scratch` was not reserved for `range.len()` points and `c`-bit windows.
    pub(crate) fn plan(
        &self,
        stream: &Stream,
        scratch: &MsmScratch,
        scalars: &DeviceVec<Scalar>,
        range: std::ops::Range<usize>,
        c: u32,
        shifted: Option<usize>,
    ) -> Result<Plan> {
        let n = range.len();
        assert!(window_range(shifted.is_some()).contains(&c), "window of {c} bits");
        let c = widest_window(c);
        let need = Room::for_plan(n, c, shifted.is_some());
        let windows = windows_for(c);
        assert!(scalars.len() >= range.end, "{} scalars on the device, {range:?} asked for", scalars.len());
        assert!(scratch.room.covers(&need), "scratch not reserved for {n} points, c = {c}");
        assert!(need.entries <= u32::MAX as usize && n < 1 << 31, "{n} points overflow 32-bit entries");
        let window_points = shifted.unwrap_or(0);
        assert!(shifted.is_none_or(|copy| copy >= n && copy * windows < 1 << 31), "{shifted:?} points a copy");
        let serial = scratch.planned.take().map_or(0, |p| p.serial + 1);
        let keys = need.keys;
        let window_keys = if shifted.is_some() { 0 } else { 1u32 << (c - 1) };
        let (counts, cursor, entries) =
            (reserved(&scratch.counts), reserved(&scratch.cursor), reserved(&scratch.entries));
        let digits = reserved(&scratch.digits);
        let (tile_sums, tile_offsets) = (reserved(&scratch.tile_sums), reserved(&scratch.tile_offsets));
        let fullest = reserved(&scratch.fullest);
        let offsets = &scratch.offsets;
        counts.zero(keys, stream)?;
        fullest.zero(1, stream)?;
        let count = [
            Arg::Ptr(scalars.ptr_at(range.start)),
            u32_arg(n),
            Arg::U32(c),
            u32_arg(windows),
            Arg::U32(window_keys),
            Arg::Ptr(counts.ptr()),
            Arg::Ptr(digits.ptr()),
        ];
        // SAFETY: (scalars, n, c, windows, window_keys, counts, digits) as declared. The kernel
        // reads the n scalars of `range` (inside `scalars`, asserted); its keys
        // w·window_keys + |d| − 1, with w < windows and |d| ≤ 2^(c−1), stay below `keys` (a
        // set a window, or one with window_keys = 0) ≤ counts.len() (reserved), and it writes
        // digits[w·n + i] for w < windows, i < n: below n·windows = need.entries ≤
        // digits.len() (reserved). windows = ⌈256/c⌉ keeps every window inside the scalar.
        unsafe { launch(self.count, blocks(n, THREADS), THREADS, stream, &count)? };
        let max = [Arg::Ptr(counts.ptr()), u32_arg(keys), Arg::Ptr(fullest.ptr())];
        // SAFETY: (v, len, max_out): a grid-stride loop reads counts[..keys] and writes
        // fullest[0].
        unsafe { launch(self.max, blocks(keys, THREADS).min(1024), THREADS, stream, &max)? };
        self.scan(stream, counts, keys, &offsets[0], tile_sums, tile_offsets)?;
        let fullest = read(stream, fullest, 0)? as usize;
        let total = read(stream, &offsets[0], keys)? as usize;
        assert!(total <= entries.len(), "{total} entries for room of {}", entries.len());
        cursor.copy_from(&offsets[0], keys, stream)?;
        let scattered = Scattered { n, windows, window_points, keys, total };
        if need.binned > 0 {
            self.scatter_binned(stream, scratch, scattered)?;
        } else {
            self.scatter(stream, scratch, scattered)?;
        }
        let chunk = chunk_for(total);
        let levels = levels_for(fullest, chunk);
        for level in 1..=levels as usize {
            let args =
                [Arg::Ptr(offsets[level - 1].ptr()), u32_arg(keys), u32_arg(chunk), Arg::Ptr(offsets[level].ptr())];
            // SAFETY: (off, keys, L, next) as declared: thread k ≤ keys reads and writes element
            // k of two offset arrays of room.keys + 1 ≥ keys + 1 (reserved; levels ≤ room.levels).
            unsafe { launch(self.next_offsets, blocks(keys + 1, THREADS), THREADS, stream, &args)? };
        }
        let plan = Plan { n, c, windows: windows as u32, shifted, entries: total, chunk, levels, serial };
        scratch.planned.set(Some(plan));
        Ok(plan)
    }

    /// Each entry to the next free slot of its key, straight from the digits: over plain
    /// bases, where the blocks in flight write inside one window's entries (buckets.cuh).
    fn scatter(&self, stream: &Stream, scratch: &MsmScratch, s: Scattered) -> Result<()> {
        let (digits, cursor, entries) =
            (reserved(&scratch.digits), reserved(&scratch.cursor), reserved(&scratch.entries));
        let args = [
            Arg::Ptr(digits.ptr()),
            u32_arg(s.n),
            u32_arg(s.window_points),
            Arg::Ptr(cursor.ptr()),
            Arg::Ptr(entries.ptr()),
        ];
        // SAFETY: (digits, n, window_points, cursor, entries) as declared. Block b reads
        // digits[w·n + i] for w = b / ⌈n/THREADS⌉ < windows and i < n, the words count just
        // wrote, so bucket `key` receives exactly counts[key] entries at offsets[key] +
        // 0..counts[key] (cursor starts at offsets[key]): all below the total, which fits
        // `entries` (asserted in `plan`). Each is w·window_points + i < 2^31, below the sign.
        unsafe { launch(self.scatter, blocks(s.n, THREADS) * s.windows as u32, THREADS, stream, &args) }
    }

    /// The scatter of a shifted plan of BINNED_ENTRIES or more, in two passes, bin and place
    /// (buckets.cuh).
    fn scatter_binned(&self, stream: &Stream, scratch: &MsmScratch, s: Scattered) -> Result<()> {
        let Scattered { n, windows, window_points, keys, total } = s;
        let (digits, cursor, entries) =
            (reserved(&scratch.digits), reserved(&scratch.cursor), reserved(&scratch.entries));
        let offsets = &scratch.offsets;
        let (binned, bin_cursor) = (reserved(&scratch.binned), reserved(&scratch.bin_cursor));
        assert!(binned.len() >= 2 * total, "{total} binned entries for room of {}", binned.len() / 2);
        let (shift, bins) = bins_for(keys);
        assert!(bins <= bin_cursor.len(), "{bins} bins of the scatter");
        let starts = [Arg::Ptr(offsets[0].ptr()), Arg::U32(shift), u32_arg(bins), Arg::Ptr(bin_cursor.ptr())];
        // SAFETY: (off, shift, bins, bin_cursor) as declared: thread b < bins reads
        // off[b << shift], b << shift < keys < offsets[0].len(), and writes bin_cursor[b]
        // (asserted).
        unsafe { launch(self.bin_starts, blocks(bins, THREADS), THREADS, stream, &starts)? };
        let bin = [
            Arg::Ptr(digits.ptr()),
            u32_arg(n),
            u32_arg(windows),
            u32_arg(window_points),
            Arg::U32(shift),
            u32_arg(bins),
            Arg::Ptr(bin_cursor.ptr()),
            Arg::Ptr(binned.ptr()),
        ];
        // SAFETY: (digits, n, windows, window_points, shift, bins, bin_cursor, binned) as
        // declared. Block t reads digits[j] for j < windows·n, the words count just wrote
        // (need.entries ≤ digits.len()); a key's bin, key >> shift, is below `bins` ≤ BINS
        // (its shared counts; asserted), and bin b receives exactly the counts of its keys,
        // from off[b << shift] on (bin_cursor), so every (key, entry) pair lands below the
        // total, inside `binned` (asserted). Each entry is w·window_points + i < 2^31
        // (asserted), below the sign.
        unsafe { launch(self.bin, blocks(windows * n, BIN_TILE), BIN_THREADS, stream, &bin)? };
        let region = total.div_ceil(PLACE_REGIONS).next_multiple_of(32);
        let place = [
            Arg::Ptr(binned.ptr()),
            u32_arg(total),
            u32_arg(PLACE_REGIONS),
            u32_arg(region),
            Arg::Ptr(cursor.ptr()),
            Arg::Ptr(entries.ptr()),
        ];
        // SAFETY: (binned, total, regions, region, cursor, entries) as declared: thread
        // (v, lane) reads pair r·region + ⌊v/regions⌋·32 + lane, r = v mod regions, when below
        // the total and inside run r, so every pair `bin` wrote is read once, and bucket `key`
        // receives exactly counts[key] entries at offsets[key] + 0..counts[key] (cursor starts
        // at offsets[key]): all below the total, which fits `entries` (asserted).
        unsafe { launch(self.place, blocks(PLACE_REGIONS * region, THREADS), THREADS, stream, &place) }
    }

    /// out[i] = Σ_{j<i} input[j] for i ≤ len (out[len] is the total).
    ///
    /// # Panics
    /// If a buffer is too short, or `len` exceeds two levels of tiles (2^24).
    fn scan(
        &self,
        stream: &Stream,
        input: &DeviceVec<u32>,
        len: usize,
        out: &DeviceVec<u32>,
        tile_sums: &DeviceVec<u32>,
        tile_offsets: &DeviceVec<u32>,
    ) -> Result<()> {
        let tiles = len.div_ceil(SCAN_TILE);
        assert!(input.len() >= len && out.len() > len, "scan of {len} into {} from {}", out.len(), input.len());
        assert!(tiles <= SCAN_TILE && tile_sums.len() >= tiles && tile_offsets.len() > tiles, "scan of {len}");
        let args = |input: &DeviceVec<u32>, len, out: &DeviceVec<u32>, sums| {
            [Arg::Ptr(input.ptr()), u32_arg(len), Arg::Ptr(out.ptr()), Arg::Ptr(sums)]
        };
        if tiles <= 1 {
            // SAFETY: (in, len, out, tile_sums = null): one block reads input[..len] and
            // writes out[..=len], both in bounds (asserted).
            return unsafe { launch(self.scan_tiles, 1, SCAN_THREADS, stream, &args(input, len, out, 0)) };
        }
        let grid = tiles as u32;
        // SAFETY: block b reads input and writes out in tile b (inside len), and writes
        // tile_sums[b], b < tiles (asserted).
        unsafe { launch(self.scan_tiles, grid, SCAN_THREADS, stream, &args(input, len, out, tile_sums.ptr()))? };
        // SAFETY: one block scans tile_sums[..tiles] into tile_offsets[..=tiles] (asserted).
        unsafe { launch(self.scan_tiles, 1, SCAN_THREADS, stream, &args(tile_sums, tiles, tile_offsets, 0))? };
        let add = [Arg::Ptr(out.ptr()), u32_arg(len), Arg::Ptr(tile_offsets.ptr())];
        // SAFETY: (out, len, tile_offsets): block b adds tile_offsets[b] to its tile of out
        // and block 0 writes out[len] = tile_offsets[tiles], all in bounds (asserted).
        unsafe { launch(self.scan_add, grid, SCAN_THREADS, stream, &add) }
    }

    /// Σ over the planned buckets of `bases`: one Jacobian point per bucket set in `out`
    /// (Σ_d d·bucket_d of that set), for the host to combine (a set a window), or the MSM
    /// itself (one set over shifted bases).
    ///
    /// # Panics
    /// If `scratch` no longer holds `plan`'s buckets or was not reserved for group `G`,
    /// `bases` holds fewer points than the plan indexes, or `out` fewer than its sets.
    pub(crate) fn window_sums<G: Group>(
        &self,
        stream: &Stream,
        scratch: &MsmScratch,
        plan: &Plan,
        bases: &DeviceVec<G::Affine>,
        out: &DeviceVec<G::Projective>,
    ) -> Result<()> {
        assert_eq!(scratch.planned.get(), Some(*plan), "the scratch holds another plan's buckets");
        let indexed = plan.shifted.map_or(plan.n, |copy| copy * plan.windows as usize);
        assert!(bases.len() >= indexed && out.len() >= plan.sets(), "short bases or output");
        let k = G::kernels(self);
        let buffers = G::buffers(scratch);
        let sums = [reserved(&buffers.sums[0]), reserved(&buffers.sums[1])];
        let (entries, offsets, keys) = (reserved(&scratch.entries), &scratch.offsets, plan.keys());
        let keys_arg = u32_arg(keys);
        let chunk = plan.chunk;
        for level in 1..=plan.levels {
            let items = level_items(plan.entries, keys, chunk, level);
            let written = level_items(plan.entries, keys, chunk, level + 1);
            let out = sums[(level as usize + 1) % 2];
            assert!(out.len() >= written, "level {level}: {written} sums for room of {}", out.len());
            out.zero(written, stream)?; // the slots no run writes: the point at infinity
            let off = Arg::Ptr(offsets[level as usize - 1].ptr());
            let tail = [off, keys_arg, u32_arg(items), u32_arg(chunk), Arg::Ptr(out.ptr())];
            let grid = blocks(items.div_ceil(chunk), G::THREADS);
            if level == 1 {
                let args =
                    [Arg::Ptr(bases.ptr()), Arg::Ptr(entries.ptr()), tail[0], tail[1], tail[2], tail[3], tail[4]];
                // SAFETY: (bases, entries, off, keys, items, L, out) as declared. Thread t <
                // ⌈items/L⌉ sums items [t·L, t·L + L) ∩ [0, items): entries, each a point
                // index below `indexed` ≤ bases.len() (asserted); it writes slot t + k for
                // each bucket k those items meet, below ⌊items/L⌋ + keys = `written` ≤
                // out.len() (asserted).
                unsafe { launch(k.sum_bases, grid, G::THREADS, stream, &args)? };
            } else {
                let input = sums[level as usize % 2];
                let args = [Arg::Ptr(input.ptr()), tail[0], tail[1], tail[2], tail[3], tail[4]];
                // SAFETY: (in, off, keys, items, L, out) as declared: as above, reading the
                // previous level's `items` slots, which it wrote (or zeroed) into `input`.
                unsafe { launch(k.sum_sums, grid, G::THREADS, stream, &args)? };
            }
        }
        let sums = sums[(plan.levels as usize + 1) % 2];
        let segments = reserved(&buffers.segments);
        let windows = plan.sets();
        let (segment, per_window) = segments_for(windows, plan.c);
        assert!(
            windows * per_window <= segments.len(),
            "{} segments for room of {}",
            windows * per_window,
            segments.len()
        );
        let last = Arg::Ptr(offsets[plan.levels as usize].ptr());
        let args = [
            Arg::Ptr(sums.ptr()),
            last,
            Arg::U32(plan.c),
            u32_arg(windows),
            u32_arg(segment),
            Arg::Ptr(segments.ptr()),
        ];
        // SAFETY: (sums, off, c, windows, S, segments) as declared: thread (w, s) reads the
        // sums of nonempty buckets of window w at off[key] < off[keys], the last level's sum
        // count, and writes segments[w·per_window + s], inside the room asserted.
        unsafe { launch(k.bucket_segments, blocks(windows * per_window, G::THREADS), G::THREADS, stream, &args)? };
        let mut stride = 1;
        while stride < per_window {
            let pairs = per_window.div_ceil(2 * stride);
            let args = [Arg::Ptr(segments.ptr()), u32_arg(per_window), u32_arg(windows), u32_arg(stride)];
            // SAFETY: (segments, per_window, windows, stride): thread (w, q) adds segment
            // w·per_window + 2q·stride + stride (when below per_window) into 2q·stride, all
            // inside windows·per_window; no segment is both read and written in one launch.
            unsafe { launch(k.fold_segments, blocks(windows * pairs, G::THREADS), G::THREADS, stream, &args)? };
            stride *= 2;
        }
        let args = [Arg::Ptr(segments.ptr()), u32_arg(per_window), u32_arg(windows), Arg::Ptr(out.ptr())];
        // SAFETY: (segments, per_window, windows, out): thread w < windows reads segment
        // w·per_window and writes out[w] (out holds `windows`, asserted).
        unsafe { launch(k.window_sums, blocks(windows, G::THREADS), G::THREADS, stream, &args) }
    }

    /// Makes the shifted copies of the `n` bases at the start of `table` (shift.cuh): copy w,
    /// at w·n, is 2^(offset of window w)·P for each base P of copy 0, for plans of `c`-bit
    /// windows. Enqueued on `stream`.
    ///
    /// # Panics
    /// If `c` is outside [`SHIFTED_WINDOW_BITS`] or `table` holds fewer than one copy a window.
    pub(crate) fn shift<G: Group>(
        &self,
        stream: &Stream,
        table: &DeviceVec<G::Affine>,
        n: usize,
        c: u32,
    ) -> Result<()> {
        assert!(SHIFTED_WINDOW_BITS.contains(&c), "window of {c} bits");
        let c = widest_window(c);
        let windows = windows_for(c);
        assert!(table.len() >= n * windows, "{} points for {windows} copies of {n}", table.len());
        for w in 1..windows {
            let doublings = window_width(c, windows as u32, w as u32 - 1);
            let args =
                [Arg::Ptr(table.ptr_at((w - 1) * n)), u32_arg(n), Arg::U32(doublings), Arg::Ptr(table.ptr_at(w * n))];
            // SAFETY: (in, n, doublings, out) as declared: thread i < n reads point i of copy
            // w − 1 and writes point i of copy w, both inside the table (asserted); threads
            // past n only take part in their block's inversion.
            unsafe { launch(G::kernels(self).shift, blocks(n, SHIFT_THREADS), SHIFT_THREADS, stream, &args)? };
        }
        Ok(())
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
        let plan = Plan { n: 10, c: 19, windows: 14, shifted: Some(16), entries: 0, chunk: 8, levels: 1, serial: 0 };
        assert!(plan.serves(10, 19, Some(16)) && !plan.serves(10, 19, None) && !plan.serves(10, 18, Some(16)));
        assert_eq!((plan.sets(), plan.keys()), (1, 1 << 18));
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
