//! The MSM's kernels (`cuda/msm/`), launched in the one order that keeps every index they
//! compute in bounds: [`MsmKernels::plan`] sorts the nonzero digits of one set of scalars into
//! buckets (count, scan, scatter) and works out each reduction level's offsets;
//! [`MsmKernels::window_sums`] then sums the buckets over one group's bases and leaves one
//! Jacobian point per window. The buffers between the steps belong to [`MsmScratch`], sized
//! for the worst case up front, so no step can be handed offsets another step did not compute.

use std::cell::Cell;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cust::stream::Stream;

use super::{blocks, read, u32_arg, DeviceElem, DevicePtr, DeviceVec, Fatbin, HostElem};
use super::{XyzzG1, XyzzG2};
use crate::backend::cuda::geometry::{
    self, BIN_ITEMS, BIN_THREADS, MSM_THREADS as THREADS, SCAN_THREADS, SHIFT_THREADS,
};
use crate::backend::cuda::plan::{
    bins_for, chunk_for, level_items, levels_for, segments_for, widest_window, window_range, window_width, windows_for,
    written_bound, Room, BINS, SCAN_TILE, SHIFTED_WINDOW_BITS,
};
use crate::error::Result;

/// Digit words per block of the binned scatter in its first pass, and the runs of pairs
/// the second takes at once (enough runs that a warp's writes stay within a few bins'
/// slots; refit with `gpu_report --proofs 0 --max-lg-msm 24 --msm-bases shifted`).
const BIN_TILE: u32 = BIN_THREADS * BIN_ITEMS;
const PLACE_REGIONS: usize = 8;

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

kernels! {
    /// One group's kernels (an `MSM_KERNELS` line of api.cu, `cuda/msm/accumulate.cuh` and
    /// `shift.cuh`), looked up with the group's suffix, `_g1` or `_g2`.
    SumKernels {
        /// Level 1 of the bucket sums: thread t sums entries [t·L, t·L + L) of the sorted
        /// buckets' points, one slot per bucket it meets.
        fn g16_msm_sum_bases(
            bases: DevicePtr, entries: DevicePtr, off: DevicePtr, keys: u32, items: u32, l: u32, out: DevicePtr,
        );
        /// Later levels: as level 1, over the previous level's slots.
        fn g16_msm_sum_sums(input: DevicePtr, off: DevicePtr, keys: u32, items: u32, l: u32, out: DevicePtr);
        /// Σ_d d·bucket_d of a segment of S buckets of each window.
        fn g16_msm_bucket_segments(sums: DevicePtr, off: DevicePtr, c: u32, windows: u32, s: u32, segments: DevicePtr);
        /// Adds segment 2q·stride + stride into 2q·stride, in each window.
        fn g16_msm_fold_segments(segments: DevicePtr, per_window: u32, windows: u32, stride: u32);
        /// Each window's sum, from its first segment.
        fn g16_msm_window_sums(segments: DevicePtr, per_window: u32, windows: u32, out: DevicePtr);
        /// Copy w of the bases from copy w − 1, `doublings` doublings each.
        fn g16_msm_shift(input: DevicePtr, n: u32, doublings: u32, out: DevicePtr);
    }
}

kernels! {
    /// The plan's kernels, shared by G1 and G2 (`cuda/msm/buckets.cuh`, `scan.cuh`).
    PlanKernels {
        /// Each scalar's signed digits: counts of each bucket key, and the digit words.
        fn g16_msm_count(
            scalars: DevicePtr, n: u32, c: u32, windows: u32, window_keys: u32, counts: DevicePtr, digits: DevicePtr,
        );
        /// Each digit word's entry to the next free slot of its key, a window at a time.
        fn g16_msm_scatter(digits: DevicePtr, n: u32, window_points: u32, cursor: DevicePtr, entries: DevicePtr);
        /// Where each bin's slots start.
        fn g16_msm_bin_starts(off: DevicePtr, shift: u32, bins: u32, bin_cursor: DevicePtr);
        /// The binned scatter's first pass: (key, entry) pairs sorted by bin.
        fn g16_msm_bin(
            digits: DevicePtr, n: u32, windows: u32, window_points: u32, shift: u32, bins: u32, bin_cursor: DevicePtr,
            binned: DevicePtr,
        );
        /// The binned scatter's second pass: each pair into its key's slots.
        fn g16_msm_place(binned: DevicePtr, total: u32, regions: u32, region: u32, cursor: DevicePtr, entries: DevicePtr);
        /// The largest of `len` counts.
        fn g16_msm_max(v: DevicePtr, len: u32, max_out: DevicePtr);
        /// The next reduction level's offsets.
        fn g16_msm_next_offsets(off: DevicePtr, keys: u32, l: u32, next: DevicePtr);
        /// Exclusive prefix sums a tile, and each tile's sum.
        fn g16_scan_tiles(input: DevicePtr, len: u32, out: DevicePtr, tile_sums: DevicePtr);
        /// Adds each tile's offset to its sums.
        fn g16_scan_add(out: DevicePtr, len: u32, tile_offsets: DevicePtr);
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
    k: PlanKernels,
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
    /// Over shifted bases with this many points per copy: the windows share one set of
    /// buckets, and window w's entries index copy w. `None`: plain bases, a set per window.
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
    /// Bucket sets, one sum each: one per window, or one for all over shifted bases.
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

impl MsmKernels {
    pub(crate) fn new(fatbin: &Fatbin) -> Result<Self> {
        Ok(MsmKernels {
            k: PlanKernels::new(fatbin, "")?,
            g1: SumKernels::new(fatbin, "_g1")?,
            g2: SumKernels::new(fatbin, "_g2")?,
        })
    }

    /// Sorts the nonzero signed digits of `scalars[range]`, in windows of at most c bits, into
    /// buckets in `scratch`: a set per window, whose entries index the range (from its start),
    /// or, over `shifted` bases of that many points per copy, one set whose entries index the
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
        assert!(shifted.is_none_or(|copy| copy >= n && copy * windows < 1 << 31), "{shifted:?} points per copy");
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
        let scalars = scalars.ptr_at(range.start);
        // SAFETY: the kernel reads the n scalars of `range` (inside `scalars`, asserted); its keys
        // w·window_keys + |d| − 1, with w < windows and |d| ≤ 2^(c−1), stay below `keys` (a
        // set per window, or one with window_keys = 0) ≤ counts.len() (reserved), and it writes
        // digits[w·n + i] for w < windows, i < n: below n·windows = need.entries ≤
        // digits.len() (reserved). windows = ⌈256/c⌉ keeps every window inside the scalar.
        unsafe {
            let (n, windows) = (u32_arg(n), u32_arg(windows));
            self.k.g16_msm_count(
                blocks(n as usize, THREADS),
                THREADS,
                stream,
                scalars,
                n,
                c,
                windows,
                window_keys,
                counts.ptr(),
                digits.ptr(),
            )?
        };
        // SAFETY: a grid-stride loop reads counts[..keys] and writes fullest[0].
        unsafe {
            self.k.g16_msm_max(
                blocks(keys, THREADS).min(1024),
                THREADS,
                stream,
                counts.ptr(),
                u32_arg(keys),
                fullest.ptr(),
            )?
        };
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
            let (off, next) = (offsets[level - 1].ptr(), offsets[level].ptr());
            // SAFETY: thread k ≤ keys reads and writes element k of two offset arrays of
            // room.keys + 1 ≥ keys + 1 (reserved; levels ≤ room.levels).
            unsafe {
                self.k.g16_msm_next_offsets(
                    blocks(keys + 1, THREADS),
                    THREADS,
                    stream,
                    off,
                    u32_arg(keys),
                    u32_arg(chunk),
                    next,
                )?
            };
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
        let grid = blocks(s.n, THREADS) * s.windows as u32;
        // SAFETY: block b reads digits[w·n + i] for w = b / ⌈n/THREADS⌉ < windows and i < n,
        // the digit words the count kernel wrote for these counts, so bucket `key` receives
        // exactly counts[key] entries at offsets[key] + 0..counts[key] (cursor starts at
        // offsets[key]): all below the total, which fits `entries` (asserted in `plan`). Each
        // entry is w·window_points + i < 2^31, below the sign bit.
        unsafe {
            let (n, window_points) = (u32_arg(s.n), u32_arg(s.window_points));
            self.k.g16_msm_scatter(grid, THREADS, stream, digits.ptr(), n, window_points, cursor.ptr(), entries.ptr())
        }
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
        // SAFETY: thread b < bins reads off[b << shift], b << shift < keys < offsets[0].len(),
        // and writes bin_cursor[b] (asserted).
        unsafe {
            self.k.g16_msm_bin_starts(
                blocks(bins, THREADS),
                THREADS,
                stream,
                offsets[0].ptr(),
                shift,
                u32_arg(bins),
                bin_cursor.ptr(),
            )?
        };
        let grid = blocks(windows * n, BIN_TILE);
        let (n, windows, window_points, bins) = (u32_arg(n), u32_arg(windows), u32_arg(window_points), u32_arg(bins));
        // SAFETY: block t reads digits[j] for j < windows·n, the digit words the count kernel
        // wrote (need.entries ≤ digits.len()); a key's bin, key >> shift, is below `bins` ≤ BINS
        // (its shared counts; asserted), and bin b receives exactly the counts of its keys,
        // from off[b << shift] on (bin_cursor), so every (key, entry) pair lands below the
        // total, inside `binned` (asserted). Each entry is w·window_points + i < 2^31
        // (asserted), below the sign bit.
        unsafe {
            self.k.g16_msm_bin(
                grid,
                BIN_THREADS,
                stream,
                digits.ptr(),
                n,
                windows,
                window_points,
                shift,
                bins,
                bin_cursor.ptr(),
                binned.ptr(),
            )?
        };
        let region = total.div_ceil(PLACE_REGIONS).next_multiple_of(32);
        let grid = blocks(PLACE_REGIONS * region, THREADS);
        let (total, regions, region) = (u32_arg(total), u32_arg(PLACE_REGIONS), u32_arg(region));
        // SAFETY: thread (v, lane) reads pair r·region + ⌊v/regions⌋·32 + lane, r = v mod
        // regions, when below the total and inside run r, so every pair the bin kernel wrote
        // is read once, and bucket `key` receives exactly counts[key] entries at offsets[key]
        // + 0..counts[key] (cursor starts at offsets[key]): all below the total, which fits
        // `entries` (asserted).
        unsafe {
            self.k.g16_msm_place(
                grid,
                THREADS,
                stream,
                binned.ptr(),
                total,
                regions,
                region,
                cursor.ptr(),
                entries.ptr(),
            )
        }
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
        let k = &self.k;
        if tiles <= 1 {
            // SAFETY: one block reads input[..len] and writes out[..=len], both in bounds
            // (asserted); no tile sums (null).
            return unsafe { k.g16_scan_tiles(1, SCAN_THREADS, stream, input.ptr(), u32_arg(len), out.ptr(), 0) };
        }
        let grid = tiles as u32;
        // SAFETY: block b reads input and writes out in tile b (inside len), and writes
        // tile_sums[b], b < tiles (asserted).
        unsafe { k.g16_scan_tiles(grid, SCAN_THREADS, stream, input.ptr(), u32_arg(len), out.ptr(), tile_sums.ptr())? };
        // SAFETY: one block scans tile_sums[..tiles] into tile_offsets[..=tiles] (asserted).
        unsafe { k.g16_scan_tiles(1, SCAN_THREADS, stream, tile_sums.ptr(), u32_arg(tiles), tile_offsets.ptr(), 0)? };
        // SAFETY: block b adds tile_offsets[b] to its tile of out and block 0 writes
        // out[len] = tile_offsets[tiles], all in bounds (asserted).
        unsafe { k.g16_scan_add(grid, SCAN_THREADS, stream, out.ptr(), u32_arg(len), tile_offsets.ptr()) }
    }

    /// Σ over the planned buckets of `bases`: one Jacobian point per bucket set in `out`
    /// (Σ_d d·bucket_d of that set), for the host to combine (a set per window), or the MSM
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
        let (keys_arg, chunk) = (u32_arg(keys), plan.chunk);
        for level in 1..=plan.levels {
            let items = level_items(plan.entries, keys, chunk, level);
            let written = level_items(plan.entries, keys, chunk, level + 1);
            let out = sums[(level as usize + 1) % 2];
            assert!(out.len() >= written, "level {level}: {written} sums for room of {}", out.len());
            out.zero(written, stream)?; // the slots no run writes: the point at infinity
            let off = offsets[level as usize - 1].ptr();
            let grid = blocks(items.div_ceil(chunk), G::THREADS);
            let (items, l) = (u32_arg(items), u32_arg(chunk));
            if level == 1 {
                // SAFETY: thread t < ⌈items/L⌉ sums items [t·L, t·L + L) ∩ [0, items):
                // entries, each a point index below `indexed` ≤ bases.len() (asserted); it
                // writes slot t + k for each bucket k those items meet, below ⌊items/L⌋ + keys
                // = `written` ≤ out.len() (asserted).
                unsafe {
                    k.g16_msm_sum_bases(
                        grid,
                        G::THREADS,
                        stream,
                        bases.ptr(),
                        entries.ptr(),
                        off,
                        keys_arg,
                        items,
                        l,
                        out.ptr(),
                    )?
                };
            } else {
                let input = sums[level as usize % 2];
                // SAFETY: as above, reading the previous level's `items` slots, which it wrote
                // (or zeroed) into `input`.
                unsafe {
                    k.g16_msm_sum_sums(grid, G::THREADS, stream, input.ptr(), off, keys_arg, items, l, out.ptr())?
                };
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
        let last = offsets[plan.levels as usize].ptr();
        let grid = blocks(windows * per_window, G::THREADS);
        let (windows_arg, per_window_arg) = (u32_arg(windows), u32_arg(per_window));
        // SAFETY: thread (w, s) reads the sums of the nonempty buckets of window w at
        // off[key] < off[keys] (the last level's count of sums), and writes
        // segments[w·per_window + s], inside the room asserted.
        unsafe {
            k.g16_msm_bucket_segments(
                grid,
                G::THREADS,
                stream,
                sums.ptr(),
                last,
                plan.c,
                windows_arg,
                u32_arg(segment),
                segments.ptr(),
            )?
        };
        let mut stride = 1;
        while stride < per_window {
            let pairs = per_window.div_ceil(2 * stride);
            let grid = blocks(windows * pairs, G::THREADS);
            // SAFETY: thread (w, q) adds segment w·per_window + 2q·stride + stride (when below
            // per_window) into 2q·stride, all inside windows·per_window; no segment is both
            // read and written in one launch.
            unsafe {
                k.g16_msm_fold_segments(
                    grid,
                    G::THREADS,
                    stream,
                    segments.ptr(),
                    per_window_arg,
                    windows_arg,
                    u32_arg(stride),
                )?
            };
            stride *= 2;
        }
        // SAFETY: thread w < windows reads segment w·per_window and writes out[w] (out holds
        // `windows`, asserted).
        unsafe {
            k.g16_msm_window_sums(
                blocks(windows, G::THREADS),
                G::THREADS,
                stream,
                segments.ptr(),
                per_window_arg,
                windows_arg,
                out.ptr(),
            )
        }
    }

    /// Makes the shifted copies of the `n` bases at the start of `table` (shift.cuh): copy w,
    /// at w·n, is 2^(offset of window w)·P for each base P of copy 0, for plans of `c`-bit
    /// windows. Enqueued on `stream`.
    ///
    /// # Panics
    /// If `c` is outside [`SHIFTED_WINDOW_BITS`] or `table` holds fewer than one copy per window.
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
            let (input, out) = (table.ptr_at((w - 1) * n), table.ptr_at(w * n));
            // SAFETY: thread i < n reads point i of copy w − 1 and writes point i of copy w,
            // both inside the table (asserted); threads past n only take part in their
            // block's inversion.
            unsafe {
                G::kernels(self).g16_msm_shift(
                    blocks(n, SHIFT_THREADS),
                    SHIFT_THREADS,
                    stream,
                    input,
                    u32_arg(n),
                    doublings,
                    out,
                )?
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_serves_its_own_shape_only() {
        let plan = Plan { n: 10, c: 19, windows: 14, shifted: Some(16), entries: 0, chunk: 8, levels: 1, serial: 0 };
        assert!(plan.serves(10, 19, Some(16)) && !plan.serves(10, 19, None) && !plan.serves(10, 18, Some(16)));
        assert_eq!((plan.sets(), plan.keys()), (1, 1 << 18));
    }
}
