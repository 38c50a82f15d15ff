//! The launches of the MSM's kernels (`cuda/msm/`), in the one order that keeps every index
//! they compute in bounds: [`MsmKernels::sort`] sorts the nonzero digits of one set of
//! scalars into buckets (count, scan, scatter) and works out each reduction level's offsets;
//! [`MsmKernels::sum`] then sums the buckets over one group's bases and leaves one Jacobian
//! point per bucket set. The buffers between the steps ([`MsmBuffers`]) are sized by the MSM's
//! scratch (`msm/scratch.rs`) and only these launches write them; the choices (window width,
//! items per thread, levels, segments) come from the MSM's plan (`msm/plan.rs`), and every
//! launch asserts what keeps its kernel inside the buffers, whatever they are. What the
//! kernels themselves fix (how windows share the scalar's bits, what a level writes) is here.

use std::cell::Cell;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cust::stream::Stream;

use super::copies::{copy_d2d, read, Staging};
use super::geometry::SPLIT_THREADS;
use super::geometry::{self, BIN_ITEMS, BIN_THREADS, MSM_THREADS as THREADS, SCAN_ITEMS, SCAN_THREADS, SHIFT_THREADS};
use super::launch::{blocks, u32_arg};
use super::memory::{DeviceElem, DevicePtr, DevicePtrMut, DeviceVec, HostElem, XyzzG1, XyzzG2};
use super::r1cs::PackedVars;
use crate::error::Result;

/// Counts per block of the scan (geometry.h); two levels of tiles scan up to its square.
pub(crate) const SCAN_TILE: usize = (SCAN_THREADS * SCAN_ITEMS) as usize;
/// The scatter's most bins (buckets.cuh, geometry.h).
pub(crate) const BINS: usize = geometry::BINS as usize;
/// Widest windows the digits' kernel reads (buckets.cuh's `window_bits`).
pub(crate) const MAX_WINDOW_BITS: u32 = 24;
/// Digit words per block of the binned scatter in its first pass, and the most runs of
/// pairs the second takes at once (enough runs that a warp's writes stay within a few bins'
/// slots, fewer where those bins outgrow the cache: [`place_regions`]; refit with
/// `gpu_report --proofs 0 --max-lg-msm 24 --msm-bases shifted`).
const BIN_TILE: u32 = BIN_THREADS * BIN_ITEMS;
const PLACE_REGIONS: usize = 8;
/// Bytes of slots the place pass's runs in flight may spread over: two thirds of the L2
/// cache's 50 MB (H100 and H200 alike), so that at 2^26 over 2 copies (192 bins of 4.2e6
/// entries, 16.8 MB of slots each) two runs go at once rather than eight; at 2^24 over a copy
/// per window (3 MB a bin) all eight still do. Refit with `gpu_report --proofs 0 --max-lg-msm
/// 26 --msm-bases plain --msm-copies 2 --split-others ""` on builds of several values.
const PLACE_SLOT_BYTES: usize = 32 << 20;

/// Runs the place pass takes at once over `total` pairs in `bins` bins: PLACE_REGIONS, fewer
/// when that many bins' slots would overflow PLACE_SLOT_BYTES, at least one.
fn place_regions(total: usize, bins: usize) -> usize {
    let bin_bytes = (total / bins.max(1)).max(1) * size_of::<u32>();
    (PLACE_SLOT_BYTES / bin_bytes).clamp(1, PLACE_REGIONS)
}

/// Pairs a run of the place pass takes when `regions` runs share `total` pairs: a multiple of
/// 32, so that a warp's reads are one segment, but a single run takes the total itself, which
/// fits the kernel's 32 bits where its rounding up might not.
fn place_region(total: usize, regions: usize) -> usize {
    match regions {
        1 => total,
        _ => total.div_ceil(regions).next_multiple_of(32),
    }
}

/// Windows of at most c bits: ⌈256/c⌉ of them, so that the last signed digit's carry is
/// absorbed (buckets.cuh).
pub(crate) fn windows_for(c: u32) -> usize {
    256usize.div_ceil(c as usize)
}

/// The width of window w of `windows` windows of at most c bits over `copies` copies of the
/// bases (1: plain bases), each copy serving a group of windows/copies consecutive windows:
/// the first 256 − windows·(c − 1) windows take c bits, the others c − 1, counted window g of
/// every group before window g + 1 of any, and over several copies of several windows each as
/// many as the copies divide, rounded up, so that the g-th windows of every group are alike
/// (buckets.cuh).
pub(crate) fn window_width(c: u32, windows: u32, copies: u32, w: u32) -> u32 {
    let (group, wide) = (windows / copies, 256 - windows * (c - 1));
    let wide = if group > 1 && copies > 1 { wide.next_multiple_of(copies) } else { wide };
    c - 1 + u32::from((w % group) * copies + w / group < wide)
}

/// The windows of a copy's group and the points per copy, as the scatter's kernels take them:
/// over plain bases one group of all windows (its copy's points then never counted).
fn groups(windows: usize, shifted: Option<Copies>) -> (u32, u32) {
    match shifted {
        Some(s) => (u32_arg(windows / s.copies), u32_arg(s.points)),
        None => (u32_arg(windows), 0),
    }
}

/// Items level `level` ≥ 1 reads when `entries` fall into `keys` buckets (level 1 reads the
/// entries): level ℓ writes ⌊items/chunk⌋ + keys slots, the items of level ℓ + 1
/// (accumulate.cuh's staircase).
pub(crate) fn level_items(entries: usize, keys: usize, chunk: usize, level: u32) -> usize {
    (1..level).fold(entries, |items, _| items / chunk + keys)
}

/// One group's kernels and the types they work on.
pub(crate) trait Group: std::fmt::Debug + Sized {
    /// Affine bases, as the proving key holds them.
    type Affine: HostElem;
    /// Window sums: the host's projective point, whose layout the device writes.
    type Projective: HostElem + group::Group;
    /// Bucket sums on the device.
    type Xyzz: DeviceElem;
    /// Threads per block of its kernels (the `MSM_KERNELS` lines of api.cu).
    const THREADS: u32;
    /// Its kernels' names end with this (the `MSM_KERNELS` lines of api.cu).
    const SUFFIX: &'static str;
    /// Its kernels.
    fn kernels(k: &MsmKernels) -> &SumKernels<Self>;
    /// Its buffers.
    fn sums(b: &MsmBuffers) -> &SumBuffers<Self::Xyzz>;
    /// Its buffers, to grow.
    fn sums_mut(b: &mut MsmBuffers) -> &mut SumBuffers<Self::Xyzz>;
    /// Its room for the bases of a split's others.
    fn gathered(b: &SplitBuffers) -> &Option<DeviceVec<Self::Affine>>;
    /// Its room for the bases of a split's others, to grow.
    fn gathered_mut(b: &mut SplitBuffers) -> &mut Option<DeviceVec<Self::Affine>>;
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
    const SUFFIX: &'static str = "_g1";
    fn kernels(k: &MsmKernels) -> &SumKernels<G1> {
        &k.g1
    }
    fn sums(b: &MsmBuffers) -> &SumBuffers<XyzzG1> {
        &b.g1
    }
    fn sums_mut(b: &mut MsmBuffers) -> &mut SumBuffers<XyzzG1> {
        &mut b.g1
    }
    fn gathered(b: &SplitBuffers) -> &Option<DeviceVec<G1Affine>> {
        &b.g1
    }
    fn gathered_mut(b: &mut SplitBuffers) -> &mut Option<DeviceVec<G1Affine>> {
        &mut b.g1
    }
}

impl Group for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    type Xyzz = XyzzG2;
    const THREADS: u32 = geometry::MSM_G2_THREADS;
    const SUFFIX: &'static str = "_g2";
    fn kernels(k: &MsmKernels) -> &SumKernels<G2> {
        &k.g2
    }
    fn sums(b: &MsmBuffers) -> &SumBuffers<XyzzG2> {
        &b.g2
    }
    fn sums_mut(b: &mut MsmBuffers) -> &mut SumBuffers<XyzzG2> {
        &mut b.g2
    }
    fn gathered(b: &SplitBuffers) -> &Option<DeviceVec<G2Affine>> {
        &b.g2
    }
    fn gathered_mut(b: &mut SplitBuffers) -> &mut Option<DeviceVec<G2Affine>> {
        &mut b.g2
    }
}

kernels! {
    /// One group's kernels (an `MSM_KERNELS` line of api.cu, `cuda/msm/accumulate.cuh`,
    /// `shift.cuh` and `cuda/key/decode.cuh`).
    SumKernels<G: Group> {
        /// Level 1 of the bucket sums: thread t sums entries [t·L, t·L + L) of the sorted
        /// buckets' points, one slot per bucket it meets.
        fn g16_msm_sum_bases(
            bases: DevicePtr<G::Affine>, entries: DevicePtr<u32>, off: DevicePtr<u32>, keys: u32, items: u32, l: u32,
            out: DevicePtrMut<G::Xyzz>,
        );
        /// Later levels: as level 1, over the previous level's slots.
        fn g16_msm_sum_sums(
            input: DevicePtr<G::Xyzz>, off: DevicePtr<u32>, keys: u32, items: u32, l: u32, out: DevicePtrMut<G::Xyzz>,
        );
        /// Σ_d d·bucket_d of a segment of S buckets of each window.
        fn g16_msm_bucket_segments(
            sums: DevicePtr<G::Xyzz>, off: DevicePtr<u32>, c: u32, windows: u32, s: u32,
            segments: DevicePtrMut<G::Xyzz>,
        );
        /// Adds segment 2q·stride + stride into 2q·stride, in each window.
        fn g16_msm_fold_segments(segments: DevicePtrMut<G::Xyzz>, per_window: u32, windows: u32, stride: u32);
        /// Each window's sum, from its first segment.
        fn g16_msm_window_sums(
            segments: DevicePtr<G::Xyzz>, per_window: u32, windows: u32, out: DevicePtrMut<G::Projective>,
        );
        /// Copy w of the bases from copy w − 1, `doublings` doublings each.
        fn g16_msm_shift(input: DevicePtr<G::Affine>, n: u32, doublings: u32, out: DevicePtrMut<G::Affine>);
        /// out[j] = bases[idx[j]] for j < k (`cuda/msm/split.cuh`).
        fn g16_msm_gather(bases: DevicePtr<G::Affine>, idx: DevicePtr<u32>, k: u32, out: DevicePtrMut<G::Affine>);
        /// out[i] = point i of the file's bytes `raw`, decoded and checked, for i < n; the
        /// first refused leaves ~i in `bad`.
        fn g16_key_decode(raw: DevicePtr<u8>, n: u32, out: DevicePtrMut<G::Affine>, bad: DevicePtrMut<u32>);
    }
}

kernels! {
    /// The sort's kernels, shared by G1 and G2 (`cuda/msm/buckets.cuh`, `scan.cuh`).
    SortKernels {
        /// Each scalar's signed digits: counts of each bucket key, and the digit words.
        fn g16_msm_count(
            scalars: DevicePtr<Scalar>, n: u32, c: u32, windows: u32, copies: u32, counts: DevicePtrMut<u32>,
            digits: DevicePtrMut<u32>,
        );
        /// Each digit word's entry to the next free slot of its key, a window at a time.
        fn g16_msm_scatter(
            digits: DevicePtr<u32>, n: u32, group: u32, copy_points: u32, cursor: DevicePtrMut<u32>,
            entries: DevicePtrMut<u32>,
        );
        /// Where each bin's slots start.
        fn g16_msm_bin_starts(off: DevicePtr<u32>, shift: u32, bins: u32, bin_cursor: DevicePtrMut<u32>);
        /// The binned scatter's first pass: (key, entry) pairs sorted by bin.
        fn g16_msm_bin(
            digits: DevicePtr<u32>, n: u32, windows: u32, group: u32, copy_points: u32, shift: u32, bins: u32,
            bin_cursor: DevicePtrMut<u32>, binned: DevicePtrMut<[u32; 2]>,
        );
        /// The binned scatter's second pass: each pair into its key's slots.
        fn g16_msm_place(
            binned: DevicePtr<[u32; 2]>, total: u32, regions: u32, region: u32, cursor: DevicePtrMut<u32>,
            entries: DevicePtrMut<u32>,
        );
        /// The largest of `len` counts.
        fn g16_msm_max(v: DevicePtr<u32>, len: u32, max_out: DevicePtrMut<u32>);
        /// The next reduction level's offsets.
        fn g16_msm_next_offsets(off: DevicePtr<u32>, keys: u32, l: u32, next: DevicePtrMut<u32>);
        /// Exclusive prefix sums per tile, and each tile's sum.
        fn g16_scan_tiles(input: DevicePtr<u32>, len: u32, out: DevicePtrMut<u32>, tile_sums: DevicePtrMut<u32>);
        /// Adds each tile's offset to its sums.
        fn g16_scan_add(out: DevicePtrMut<u32>, len: u32, tile_offsets: DevicePtr<u32>);
        /// The scalars split by value (`cuda/msm/split.cuh`): the ones' indices, the others
        /// (the first `room` of them kept) and their indices, and the two counts; those that
        /// are variables of z the packed aux' bitmaps (z_ones not null) call 0 or 1 unread.
        fn g16_msm_split(
            scalars: DevicePtr<Scalar>, n: u32, z_ones: DevicePtr<u64>, z_others: DevicePtr<u64>, inputs: u32,
            vars: DevicePtr<u32>, first: u32, ones: DevicePtrMut<u32>, others: DevicePtrMut<Scalar>,
            others_idx: DevicePtrMut<u32>, room: u32, counts: DevicePtrMut<u32>,
        );
    }
}

/// The MSM's kernels, looked up once.
#[derive(Debug)]
pub(crate) struct MsmKernels {
    sort: SortKernels,
    g1: SumKernels<G1>,
    g2: SumKernels<G2>,
}

/// Grows `v` to at least `len` elements (reallocating: the contents are not kept).
fn grow<T: DeviceElem>(v: &mut Option<DeviceVec<T>>, len: usize) -> Result<()> {
    if v.as_ref().is_none_or(|v| v.len() < len) {
        *v = None; // free the smaller one first
        *v = Some(DeviceVec::new(len)?);
    }
    Ok(())
}

/// A buffer that `grow` made.
///
/// # Panics
/// If none was.
fn grown<T: DeviceElem>(v: &Option<DeviceVec<T>>) -> &DeviceVec<T> {
    v.as_ref().expect("the MSM's scratch sized the buffers before any sort")
}

/// What the sort's buffers hold room for: buckets (keys), entries, entries binned before they
/// are placed, and reduction levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BucketRoom {
    pub(crate) keys: usize,
    pub(crate) entries: usize,
    pub(crate) binned: usize,
    pub(crate) levels: u32,
}

/// One group's bucket sums (two, for the levels to alternate) and window segments.
#[derive(Debug)]
pub(crate) struct SumBuffers<X: DeviceElem> {
    sums: [Option<DeviceVec<X>>; 2],
    segments: Option<DeviceVec<X>>,
}

impl<X: DeviceElem> Default for SumBuffers<X> {
    fn default() -> Self {
        SumBuffers { sums: [None, None], segments: None }
    }
}

/// Room for a split's others: their scalars and indices, their bases in each group, and the
/// two counts the split reads back.
#[derive(Debug, Default)]
pub(crate) struct SplitBuffers {
    others: Option<DeviceVec<Scalar>>,
    others_idx: Option<DeviceVec<u32>>,
    counts: Option<DeviceVec<u32>>,
    g1: Option<DeviceVec<G1Affine>>,
    g2: Option<DeviceVec<G2Affine>>,
}

/// The device buffers of the MSMs of one backend, reused by every MSM that fits them.
#[derive(Debug, Default)]
pub(crate) struct MsmBuffers {
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
    /// The binned scatter's first pass: (key, entry) pairs sorted by bin, and each bin's next
    /// free slot.
    binned: Option<DeviceVec<[u32; 2]>>,
    bin_cursor: Option<DeviceVec<u32>>,
    /// The fullest bucket, read back by the sort.
    fullest: Option<DeviceVec<u32>>,
    g1: SumBuffers<XyzzG1>,
    g2: SumBuffers<XyzzG2>,
    split: SplitBuffers,
    /// The sort whose buckets the buffers hold, and the serial the next sort takes.
    sorted: Cell<Option<u64>>,
    serials: Cell<u64>,
}

impl MsmBuffers {
    /// Grows the sort's buffers to hold `room` (none is shrunk; the buckets they held are
    /// gone). Allocating before the work keeps device allocations (which synchronise the
    /// device) out of the proving loop.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory) when the device cannot
    /// hold them.
    pub(crate) fn grow_buckets(&mut self, room: BucketRoom) -> Result<()> {
        self.sorted.set(None);
        grow(&mut self.counts, room.keys)?;
        grow(&mut self.cursor, room.keys)?;
        grow(&mut self.tile_sums, room.keys.div_ceil(SCAN_TILE))?;
        grow(&mut self.tile_offsets, room.keys.div_ceil(SCAN_TILE) + 1)?;
        grow(&mut self.entries, room.entries)?;
        grow(&mut self.digits, room.entries)?;
        if room.binned > 0 {
            grow(&mut self.binned, room.binned)?;
            grow(&mut self.bin_cursor, BINS)?; // any sort's bins, whatever its keys
        }
        grow(&mut self.fullest, 1)?;
        if self.offsets.first().is_none_or(|o| o.len() <= room.keys) {
            self.offsets.clear();
        }
        while self.offsets.len() <= room.levels as usize {
            self.offsets.push(DeviceVec::new(room.keys + 1)?);
        }
        Ok(())
    }

    /// Grows the split's rooms to `others` others, and their bases in group G.
    ///
    /// # Errors
    /// As [`grow_buckets`](Self::grow_buckets).
    pub(crate) fn grow_split<G: Group>(&mut self, others: usize) -> Result<()> {
        let split = &mut self.split;
        grow(&mut split.others, others)?;
        grow(&mut split.others_idx, others)?;
        grow(&mut split.counts, 2)?;
        grow(G::gathered_mut(split), others)
    }

    /// The most others a split keeps for an MSM in group G: what its rooms hold.
    pub(crate) fn split_room<G: Group>(&self) -> usize {
        fn room<T: DeviceElem>(v: &Option<DeviceVec<T>>) -> usize {
            v.as_ref().map_or(0, DeviceVec::len)
        }
        let split = &self.split;
        room(&split.others).min(room(&split.others_idx)).min(room(G::gathered(split)))
    }

    /// Grows group G's sums to `slots` (the odd levels' output, then the even ones') and its
    /// segments to `segments`.
    ///
    /// # Errors
    /// As [`grow_buckets`](Self::grow_buckets).
    pub(crate) fn grow_sums<G: Group>(&mut self, slots: [usize; 2], segments: usize) -> Result<()> {
        let sums = G::sums_mut(self);
        grow(&mut sums.sums[0], slots[0])?;
        grow(&mut sums.sums[1], slots[1])?;
        grow(&mut sums.segments, segments)
    }
}

/// Shifted copies of the bases a sort's entries index: `copies` of `points` points each,
/// copy q serving the q-th group of windows/copies consecutive windows (buckets.cuh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Copies {
    pub(crate) points: usize,
    pub(crate) copies: usize,
}

/// How a sort cuts the scalars into digits and sorts them, as the MSM's plan chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Digits {
    /// Bits of the widest window; the windows are ⌈256/c⌉ ([`windows_for`]).
    pub(crate) c: u32,
    /// The shifted copies the windows take their points from, the windows of each group
    /// summing into a set of buckets of its own; `None`: plain bases, a set per window.
    pub(crate) shifted: Option<Copies>,
    /// The scatter bins the entries first, in bins of 2^shift keys (`Some(shift)`), or
    /// places them in one pass.
    pub(crate) bin_shift: Option<u32>,
}

/// A set of scalars split by value ([`MsmKernels::split`]): its count, its ones and its
/// others, and whether the others were all kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split {
    pub(crate) n: usize,
    pub(crate) ones: usize,
    pub(crate) others: usize,
    pub(crate) kept: bool,
}

/// The buckets of one set of scalars, as [`MsmKernels::sort`] left them in the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Buckets {
    pub(crate) digits: Digits,
    /// Scalars (and bases) sorted.
    pub(crate) n: usize,
    pub(crate) windows: u32,
    /// Buckets of all sets.
    keys: usize,
    /// Entries: the scalars' nonzero digits, one addition each.
    pub(crate) entries: usize,
    /// Items one thread sums at each level.
    pub(crate) chunk: usize,
    /// Reduction levels.
    pub(crate) levels: u32,
    /// Tells sorts apart, so the buffers can check that they still hold these buckets.
    serial: u64,
}

impl Digits {
    /// Copies of the bases the windows take their points from: 1 for plain bases.
    pub(crate) fn copies(&self) -> usize {
        self.shifted.map_or(1, |s| s.copies)
    }

    /// Buckets of all sets: 2^(c−1) for each window of a copy's group.
    pub(crate) fn keys(&self) -> usize {
        (windows_for(self.c) / self.copies()) << (self.c - 1)
    }
}

impl Buckets {
    /// Bucket sets, one sum each: the windows of a copy's group (one per window over plain
    /// bases, one over a copy per window).
    pub(crate) fn sets(&self) -> usize {
        self.windows as usize / self.digits.copies()
    }

    /// Points the entries index: the scalars' bases, or every copy of them.
    fn indexed(&self) -> usize {
        self.digits.shifted.map_or(self.n, |s| s.points * s.copies)
    }
}

impl MsmKernels {
    pub(crate) fn new(fatbin: &super::Fatbin) -> Result<Self> {
        Ok(MsmKernels { sort: SortKernels::new(fatbin)?, g1: SumKernels::new(fatbin)?, g2: SumKernels::new(fatbin)? })
    }

    /// Sorts the nonzero signed digits of `scalars[range]` into buckets in `buffers`, as
    /// `digits` says: a set per window, whose entries index the range (from its start), or
    /// one set over shifted bases whose entries index the copies. Waits once for the stream,
    /// to learn the entries and the fullest bucket, from which `levels` chooses the items per
    /// thread and the reduction levels.
    ///
    /// # Panics
    /// If `range` is not inside `scalars`, `c` is not the widest window of its count (2 to
    /// [`MAX_WINDOW_BITS`]), a copy of shifted bases is shorter than the range, `buffers`
    /// have no room for the digits, entries, buckets or levels, or the bins are too many.
    pub(crate) fn sort(
        &self,
        stream: &Stream,
        buffers: &MsmBuffers,
        (scalars, range): (&DeviceVec<Scalar>, std::ops::Range<usize>),
        digits: Digits,
        levels: impl FnOnce(usize, usize) -> (usize, u32),
    ) -> Result<Buckets> {
        let (n, c) = (range.len(), digits.c);
        let windows = windows_for(c);
        assert!((2..=MAX_WINDOW_BITS).contains(&c) && windows * (c as usize - 1) < 256, "windows of {c} bits");
        assert!(scalars.len() >= range.end, "{} scalars on the device, {range:?} asked for", scalars.len());
        assert!(n * windows <= u32::MAX as usize && n < 1 << 31, "{n} points overflow 32-bit entries");
        let fits = |s: Copies| s.points >= n && windows % s.copies == 0 && s.points * s.copies < 1 << 31;
        assert!(digits.shifted.is_none_or(fits), "{digits:?} for {n} points");
        let keys = digits.keys();
        let (total, fullest) = self.count(stream, buffers, scalars.at(range.start), (n, windows, keys), digits)?;
        match digits.bin_shift {
            Some(shift) => self.scatter_binned(stream, buffers, (n, windows, keys, total), digits.shifted, shift)?,
            None => self.scatter(stream, buffers, (n, windows), digits.shifted)?,
        }
        let (chunk, levels) = levels(total, fullest);
        self.level_offsets(stream, buffers, keys, (chunk, levels))?;
        let serial = buffers.serials.replace(buffers.serials.get() + 1);
        buffers.sorted.set(Some(serial));
        Ok(Buckets { digits, n, windows: windows as u32, keys, entries: total, chunk, levels, serial })
    }

    /// Each reduction level's offsets of `keys` buckets from the entries' (`offsets[0]`):
    /// where a level's items of each bucket start, `chunk` items per thread.
    ///
    /// # Panics
    /// If the buffers have no room for the levels or the keys.
    fn level_offsets(
        &self,
        stream: &Stream,
        buffers: &MsmBuffers,
        keys: usize,
        (chunk, levels): (usize, u32),
    ) -> Result<()> {
        assert!(chunk >= 1 && buffers.offsets.len() > levels as usize, "{levels} levels of {chunk} items");
        for level in 1..=levels as usize {
            let (off, next) = (&buffers.offsets[level - 1], &buffers.offsets[level]);
            assert!(off.len() > keys && next.len() > keys, "offsets of {keys} keys");
            // SAFETY: thread k ≤ keys reads and writes element k of two offset arrays of at
            // least keys + 1 elements (asserted).
            unsafe {
                self.sort.g16_msm_next_offsets(
                    blocks(keys + 1, THREADS),
                    THREADS,
                    stream,
                    off.ptr(),
                    u32_arg(keys),
                    u32_arg(chunk),
                    next.ptr_mut(),
                )?
            };
        }
        Ok(())
    }

    /// Splits `scalars[range]` by value (split.cuh): the ones' indices (from the range's
    /// start) into the sort's entries (whose buckets they replace), the others and their
    /// indices into the split's rooms, at most `room` of them kept; reads the counts back.
    /// Scalars that are packed variables of z (`vars`) and 0 or 1 are classed from the
    /// bitmaps, unread.
    ///
    /// # Panics
    /// If `scalars` holds fewer than the range, the entries fewer than its n points, the
    /// split's rooms fewer than `room`, n is 2^31 or more, or `vars` are fewer than the range.
    pub(crate) fn split(
        &self,
        stream: &Stream,
        buffers: &MsmBuffers,
        (scalars, vars, range): (&DeviceVec<Scalar>, Option<PackedVars<'_>>, std::ops::Range<usize>),
        room: usize,
    ) -> Result<Split> {
        let n = range.len();
        let entries = grown(&buffers.entries);
        let (others, others_idx, counts) = (&buffers.split.others, &buffers.split.others_idx, &buffers.split.counts);
        let (others, others_idx, counts) = (grown(others), grown(others_idx), grown(counts));
        assert!(scalars.len() >= range.end && entries.len() >= n && n < 1 << 31, "a split of {range:?}");
        assert!(others.len() >= room && others_idx.len() >= room && counts.len() >= 2, "room for {room} others");
        buffers.sorted.set(None); // the entries become the ones' indices
        counts.zero(2, stream)?;
        let none = || (DevicePtr::null(), DevicePtr::null(), 0, DevicePtr::null(), 0);
        let (z_ones, z_others, inputs, vars, first) = vars.map_or_else(none, |v| v.split_args(range.clone()));
        // SAFETY: thread i < n reads scalar start + i (inside, asserted), and where `vars` are
        // given, variable start + i or aux start + i, which the bitmaps cover (asserted by
        // split_args); a one's slot is below the ones' count ≤ n ≤ entries.len(), an other's
        // is written only below `room` (asserted to fit both rooms); the counts are two
        // (asserted).
        unsafe {
            self.sort.g16_msm_split(
                blocks(n, SPLIT_THREADS),
                SPLIT_THREADS,
                stream,
                scalars.at(range.start),
                u32_arg(n),
                z_ones,
                z_others,
                inputs,
                vars,
                first,
                entries.ptr_mut(),
                others.ptr_mut(),
                others_idx.ptr_mut(),
                u32_arg(room),
                counts.ptr_mut(),
            )?
        };
        let (ones, others) = (read(stream, counts, 0)? as usize, read(stream, counts, 1)? as usize);
        Ok(Split { n, ones, others, kept: others <= room })
    }

    /// The bucket of the ones a [`split`](Self::split) left in the entries, as a sort of
    /// 2-bit windows: one window whose first bucket (digit 1) holds them and whose second
    /// is empty, its levels as `levels` chooses them for the ones' count.
    ///
    /// # Panics
    /// If the buffers have no room for the levels.
    pub(crate) fn ones_bucket(
        &self,
        (stream, staging): (&Stream, &Staging),
        buffers: &MsmBuffers,
        split: &Split,
        levels: impl FnOnce(usize, usize) -> (usize, u32),
    ) -> Result<Buckets> {
        let (keys, ones) = (2, u32_arg(split.ones));
        let offsets = buffers.offsets.first().expect("the MSM's scratch sized the offsets");
        super::copies::upload(stream, staging, &[0, ones, ones], false, offsets)?.wait()?;
        let (chunk, levels) = levels(split.ones, split.ones);
        self.level_offsets(stream, buffers, keys, (chunk, levels))?;
        let serial = buffers.serials.replace(buffers.serials.get() + 1);
        buffers.sorted.set(Some(serial));
        let digits = Digits { c: 2, shifted: None, bin_shift: None };
        Ok(Buckets { digits, n: split.n, windows: 1, keys, entries: split.ones, chunk, levels, serial })
    }

    /// The bases of a split's others in group G, gathered from `bases` into the split's
    /// room, and the others: an MSM's points and scalars.
    ///
    /// # Panics
    /// If the split kept not all its others, `bases` holds fewer than its n points, or G's
    /// room fewer than the others.
    pub(crate) fn gather<'b, G: Group>(
        &self,
        stream: &Stream,
        buffers: &'b MsmBuffers,
        split: &Split,
        bases: &DeviceVec<G::Affine>,
    ) -> Result<(&'b DeviceVec<G::Affine>, &'b DeviceVec<Scalar>)> {
        let (others, idx) = (grown(&buffers.split.others), grown(&buffers.split.others_idx));
        let gathered = grown(G::gathered(&buffers.split));
        let k = split.others;
        assert!(split.kept && bases.len() >= split.n, "a split of {} points, its others kept: {}", split.n, split.kept);
        assert!(gathered.len() >= k && idx.len() >= k, "room for {k} others");
        // SAFETY: thread j < k reads index j (written by the split, below n ≤ bases.len(),
        // asserted) and writes point j of the room (asserted to hold k).
        unsafe {
            G::kernels(self).g16_msm_gather(
                blocks(k, THREADS),
                THREADS,
                stream,
                bases.ptr(),
                idx.ptr(),
                u32_arg(k),
                gathered.ptr_mut(),
            )?
        };
        Ok((gathered, others))
    }

    /// The digits' counts per key and their words, the counts' prefix sums (each key's
    /// offset) and the cursor the scatter starts from: the entries' total and the fullest
    /// bucket, read back.
    fn count(
        &self,
        stream: &Stream,
        buffers: &MsmBuffers,
        scalars: DevicePtr<Scalar>,
        (n, windows, keys): (usize, usize, usize),
        digits: Digits,
    ) -> Result<(usize, usize)> {
        let (counts, cursor, words) = (grown(&buffers.counts), grown(&buffers.cursor), grown(&buffers.digits));
        let (entries, fullest, offsets) = (grown(&buffers.entries), grown(&buffers.fullest), &buffers.offsets);
        assert!(counts.len() >= keys && cursor.len() >= keys, "{keys} keys for room of {}", counts.len());
        assert!(words.len() >= n * windows, "{} digit words for room of {}", n * windows, words.len());
        assert!(offsets.first().is_some_and(|o| o.len() > keys), "no room for the offsets of {keys} keys");
        counts.zero(keys, stream)?;
        fullest.zero(1, stream)?;
        // SAFETY: the kernel reads n scalars from `scalars` (inside the vector, asserted by
        // `sort`); its keys g·2^(c−1) + |d| − 1, with g below the windows of a copy's group
        // (copies divides windows, asserted by `sort`) and |d| ≤ 2^(c−1), stay below `keys`
        // ≤ counts.len() (asserted), and it writes digits[w·n + i] for w < windows, i < n:
        // below n·windows ≤ words.len() (asserted). windows = ⌈256/c⌉ with windows·(c−1) < 256
        // (asserted by `sort`) starts every window inside the scalar.
        unsafe {
            let (n, windows, copies) = (u32_arg(n), u32_arg(windows), u32_arg(digits.copies()));
            self.sort.g16_msm_count(
                blocks(n as usize, THREADS),
                THREADS,
                stream,
                scalars,
                n,
                digits.c,
                windows,
                copies,
                counts.ptr_mut(),
                words.ptr_mut(),
            )?
        };
        // SAFETY: a grid-stride loop reads counts[..keys] and writes fullest[0].
        unsafe {
            let grid = blocks(keys, THREADS).min(1024);
            self.sort.g16_msm_max(grid, THREADS, stream, counts.ptr(), u32_arg(keys), fullest.ptr_mut())?
        };
        self.scan(stream, buffers, keys)?;
        let fullest = read(stream, fullest, 0)? as usize;
        let total = read(stream, &offsets[0], keys)? as usize;
        assert!(total <= entries.len(), "{total} entries for room of {}", entries.len());
        copy_d2d(cursor, &offsets[0], keys, stream)?;
        Ok((total, fullest))
    }

    /// offsets[0][i] = Σ_{j<i} counts[j] for i ≤ len (offsets[0][len] is the total).
    ///
    /// # Panics
    /// If a buffer is too short, or `len` exceeds two levels of tiles (SCAN_TILE²).
    fn scan(&self, stream: &Stream, buffers: &MsmBuffers, len: usize) -> Result<()> {
        let (input, out) = (grown(&buffers.counts), &buffers.offsets[0]);
        let (tile_sums, tile_offsets) = (grown(&buffers.tile_sums), grown(&buffers.tile_offsets));
        let tiles = len.div_ceil(SCAN_TILE);
        assert!(input.len() >= len && out.len() > len, "scan of {len} into {} from {}", out.len(), input.len());
        assert!(tiles <= SCAN_TILE && tile_sums.len() >= tiles && tile_offsets.len() > tiles, "scan of {len}");
        let k = &self.sort;
        if tiles <= 1 {
            // SAFETY: one block reads input[..len] and writes out[..=len], both in bounds
            // (asserted); no tile sums (null).
            return unsafe {
                k.g16_scan_tiles(
                    1,
                    SCAN_THREADS,
                    stream,
                    input.ptr(),
                    u32_arg(len),
                    out.ptr_mut(),
                    DevicePtrMut::null(),
                )
            };
        }
        let grid = tiles as u32;
        // SAFETY: block b reads input and writes out in tile b (inside len), and writes
        // tile_sums[b], b < tiles (asserted).
        unsafe {
            k.g16_scan_tiles(grid, SCAN_THREADS, stream, input.ptr(), u32_arg(len), out.ptr_mut(), tile_sums.ptr_mut())?
        };
        // SAFETY: one block scans tile_sums[..tiles] into tile_offsets[..=tiles] (asserted).
        unsafe {
            let none = DevicePtrMut::null();
            k.g16_scan_tiles(1, SCAN_THREADS, stream, tile_sums.ptr(), u32_arg(tiles), tile_offsets.ptr_mut(), none)?
        };
        // SAFETY: block b adds tile_offsets[b] to its tile of out and block 0 writes
        // out[len] = tile_offsets[tiles], all in bounds (asserted).
        unsafe { k.g16_scan_add(grid, SCAN_THREADS, stream, out.ptr_mut(), u32_arg(len), tile_offsets.ptr()) }
    }

    /// Each entry to the next free slot of its key, straight from the digits: over plain
    /// bases, where the blocks in flight write inside one window's entries (buckets.cuh).
    fn scatter(
        &self,
        stream: &Stream,
        buffers: &MsmBuffers,
        (n, windows): (usize, usize),
        shifted: Option<Copies>,
    ) -> Result<()> {
        let (words, cursor, entries) = (grown(&buffers.digits), grown(&buffers.cursor), grown(&buffers.entries));
        let grid = blocks(n, THREADS) * windows as u32;
        let (group, copy_points) = groups(windows, shifted);
        // SAFETY: block b reads digits[w·n + i] for w = b / ⌈n/THREADS⌉ < windows and i < n,
        // the digit words `count` wrote for these counts, so bucket `key` receives exactly
        // counts[key] entries at offsets[key] + 0..counts[key] (cursor starts at
        // offsets[key]): all below the total, which fits `entries` (asserted in `count`).
        // Each entry is (w / group)·copy_points + i < copies·copy_points < 2^31 (asserted in
        // `sort`), below the sign bit.
        unsafe {
            self.sort.g16_msm_scatter(
                grid,
                THREADS,
                stream,
                words.ptr(),
                u32_arg(n),
                group,
                copy_points,
                cursor.ptr_mut(),
                entries.ptr_mut(),
            )
        }
    }

    /// The scatter in two passes, bin and place (buckets.cuh), in bins of 2^shift keys.
    fn scatter_binned(
        &self,
        stream: &Stream,
        buffers: &MsmBuffers,
        (n, windows, keys, total): (usize, usize, usize, usize),
        shifted: Option<Copies>,
        shift: u32,
    ) -> Result<()> {
        let (words, cursor, entries) = (grown(&buffers.digits), grown(&buffers.cursor), grown(&buffers.entries));
        let (binned, bin_cursor) = (grown(&buffers.binned), grown(&buffers.bin_cursor));
        assert!(binned.len() >= total, "{total} binned entries for room of {}", binned.len());
        let bins = keys.div_ceil(1 << shift);
        assert!(bins <= BINS.min(bin_cursor.len()), "{bins} bins of the scatter");
        // SAFETY: thread b < bins reads off[b << shift], b << shift < keys < offsets[0].len(),
        // and writes bin_cursor[b] (asserted).
        unsafe {
            let (off, bins) = (buffers.offsets[0].ptr(), u32_arg(bins));
            self.sort.g16_msm_bin_starts(
                blocks(bins as usize, THREADS),
                THREADS,
                stream,
                off,
                shift,
                bins,
                bin_cursor.ptr_mut(),
            )?
        };
        let grid = blocks(windows * n, BIN_TILE);
        let (group, copy_points) = groups(windows, shifted);
        // SAFETY: block t reads digits[j] for j < windows·n, the digit words `count` wrote
        // (asserted to fit); a key's bin, key >> shift, is below `bins` ≤ BINS (its shared
        // counts; asserted), and bin b receives exactly the counts of its keys, from
        // off[b << shift] on (bin_cursor), so every (key, entry) pair lands below the total,
        // inside `binned` (asserted). Each entry is (w / group)·copy_points + i < 2^31 (asserted
        // in `sort`), below the sign bit.
        unsafe {
            let (n, windows, bins) = (u32_arg(n), u32_arg(windows), u32_arg(bins));
            self.sort.g16_msm_bin(
                grid,
                BIN_THREADS,
                stream,
                words.ptr(),
                n,
                windows,
                group,
                copy_points,
                shift,
                bins,
                bin_cursor.ptr_mut(),
                binned.ptr_mut(),
            )?
        };
        let regions = place_regions(total, bins);
        let region = place_region(total, regions);
        let grid = blocks(regions * region.next_multiple_of(32), THREADS);
        // SAFETY: warp v's lane reads pair r·region + ⌊v/regions⌋·32 + lane, r = v mod
        // regions, when below the total and inside run r (the tests' `placed_pair`), so every
        // pair the bin kernel wrote is read once, and bucket `key` receives exactly counts[key]
        // entries at offsets[key] + 0..counts[key] (cursor starts at offsets[key]): all below
        // the total, which fits `entries` (asserted in `count`).
        unsafe {
            let (total, regions, region) = (u32_arg(total), u32_arg(regions), u32_arg(region));
            let (cursor, entries) = (cursor.ptr_mut(), entries.ptr_mut());
            self.sort.g16_msm_place(grid, THREADS, stream, binned.ptr(), total, regions, region, cursor, entries)
        }
    }

    /// Σ over `buckets` of `bases` from base `first` on (an entry's index i is base first + i):
    /// one Jacobian point per bucket set in `out` (Σ_d d·bucket_d of that set), for the host
    /// to combine (a set per window), or the MSM itself (one set over shifted bases). The
    /// window sums run over segments of `segment` buckets.
    ///
    /// # Panics
    /// If `buffers` no longer hold these buckets or have no room for group `G`'s sums,
    /// `bases` holds fewer points from `first` on than the entries index, `out` fewer than the sets, or
    /// `segment` is not a power of two dividing a window's buckets.
    pub(crate) fn sum<G: Group>(
        &self,
        stream: &Stream,
        buffers: &MsmBuffers,
        (buckets, segment): (&Buckets, usize),
        (bases, first): (&DeviceVec<G::Affine>, usize),
        out: &DeviceVec<G::Projective>,
    ) -> Result<()> {
        assert_eq!(buffers.sorted.get(), Some(buckets.serial), "the buffers hold another sort's buckets");
        let short = bases.len() < first + buckets.indexed() || out.len() < buckets.sets();
        assert!(!short, "short bases or output");
        let sums = self.sum_levels::<G>(stream, buffers, buckets, (bases, first))?;
        self.sum_windows::<G>(stream, buffers, (buckets, segment), sums, out)
    }

    /// The reduction levels: level 1 sums the entries' points, the later ones the slots of
    /// the level before. Returns the sums the last level wrote.
    fn sum_levels<'b, G: Group>(
        &self,
        stream: &Stream,
        buffers: &'b MsmBuffers,
        buckets: &Buckets,
        (bases, first): (&DeviceVec<G::Affine>, usize),
    ) -> Result<&'b DeviceVec<G::Xyzz>> {
        let (k, group) = (G::kernels(self), G::sums(buffers));
        let sums = [grown(&group.sums[0]), grown(&group.sums[1])];
        let (entries, offsets, keys, chunk) = (grown(&buffers.entries), &buffers.offsets, buckets.keys, buckets.chunk);
        for level in 1..=buckets.levels {
            let items = level_items(buckets.entries, keys, chunk, level);
            let written = level_items(buckets.entries, keys, chunk, level + 1);
            let out = sums[(level as usize + 1) % 2];
            assert!(out.len() >= written, "level {level}: {written} sums for room of {}", out.len());
            out.zero(written, stream)?; // the slots no run writes: the point at infinity
            let off = offsets[level as usize - 1].ptr();
            let grid = blocks(items.div_ceil(chunk), G::THREADS);
            let (keys_arg, items, l) = (u32_arg(keys), u32_arg(items), u32_arg(chunk));
            if level == 1 {
                // SAFETY: thread t < ⌈items/L⌉ sums items [t·L, t·L + L) ∩ [0, items):
                // entries, each a point index below `indexed`, from base `first` on, with
                // first + indexed ≤ bases.len() (asserted in `sum`); it writes slot t + k for
                // each bucket k those items meet, below ⌊items/L⌋ + keys = `written` ≤
                // out.len() (asserted).
                unsafe {
                    let (bases, entries) = (bases.at(first), entries.ptr());
                    k.g16_msm_sum_bases(
                        grid,
                        G::THREADS,
                        stream,
                        bases,
                        entries,
                        off,
                        keys_arg,
                        items,
                        l,
                        out.ptr_mut(),
                    )?
                };
            } else {
                let input = sums[level as usize % 2];
                // SAFETY: as above, reading the previous level's `items` slots, which it wrote
                // (or zeroed) into `input`.
                unsafe {
                    k.g16_msm_sum_sums(grid, G::THREADS, stream, input.ptr(), off, keys_arg, items, l, out.ptr_mut())?
                };
            }
        }
        Ok(sums[(buckets.levels as usize + 1) % 2])
    }

    /// The window sums from the last level's `sums`: each window's buckets in segments,
    /// folded pairwise, then each window's first segment into `out`.
    fn sum_windows<G: Group>(
        &self,
        stream: &Stream,
        buffers: &MsmBuffers,
        (buckets, segment): (&Buckets, usize),
        sums: &DeviceVec<G::Xyzz>,
        out: &DeviceVec<G::Projective>,
    ) -> Result<()> {
        let k = G::kernels(self);
        let segments = grown(&G::sums(buffers).segments);
        let (windows, c) = (buckets.sets(), buckets.digits.c);
        let half = 1usize << (c - 1);
        assert!(segment.is_power_of_two() && segment <= half, "segments of {segment} of {half} buckets");
        let per_window = half / segment;
        let room = segments.len();
        assert!(windows * per_window <= room, "{} segments for room of {room}", windows * per_window);
        let last = buckets.levels as usize;
        assert!(buffers.offsets.len() > last, "the offsets of {last} levels");
        let (windows_arg, per_window_arg) = (u32_arg(windows), u32_arg(per_window));
        // SAFETY: thread (w, s) reads the sums of the nonempty buckets of window w at
        // off[key] < off[keys] (the last level's count of sums, which it wrote), and writes
        // segments[w·per_window + s], inside the room (asserted).
        unsafe {
            let (grid, off) = (blocks(windows * per_window, G::THREADS), buffers.offsets[last].ptr());
            let (s, segments) = (u32_arg(segment), segments.ptr_mut());
            k.g16_msm_bucket_segments(grid, G::THREADS, stream, sums.ptr(), off, c, windows_arg, s, segments)?
        };
        let mut stride = 1;
        while stride < per_window {
            let grid = blocks(windows * per_window.div_ceil(2 * stride), G::THREADS);
            // SAFETY: thread (w, q) adds segment w·per_window + 2q·stride + stride (when below
            // per_window) into 2q·stride, all inside windows·per_window; no segment is both
            // read and written in one launch.
            unsafe {
                let (segments, stride) = (segments.ptr_mut(), u32_arg(stride));
                k.g16_msm_fold_segments(grid, G::THREADS, stream, segments, per_window_arg, windows_arg, stride)?
            };
            stride *= 2;
        }
        // SAFETY: thread w < windows reads segment w·per_window and writes out[w] (out holds
        // the sets, asserted in `sum`).
        unsafe {
            let grid = blocks(windows, G::THREADS);
            k.g16_msm_window_sums(grid, G::THREADS, stream, segments.ptr(), per_window_arg, windows_arg, out.ptr_mut())
        }
    }

    /// Enqueues the decode of the first `n` points of a parameter file's bytes `raw` into
    /// `out` from point `at` on (`cuda/key/decode.cuh`); the first point refused leaves its
    /// index, inverted, in `bad[0]`, which must start at 0.
    ///
    /// # Panics
    /// If `raw` holds fewer than `n` points' bytes, or `out` fewer than `at + n` points.
    pub(crate) fn decode<G: Group>(
        &self,
        stream: &Stream,
        raw: &DeviceVec<u8>,
        n: usize,
        (out, at): (&DeviceVec<G::Affine>, usize),
        bad: &DeviceVec<u32>,
    ) -> Result<()> {
        assert!(raw.len() >= n * G::Affine::BYTES && out.len() >= at + n, "{n} points into {} from {at}", out.len());
        // SAFETY: thread i < n reads point i's bytes inside `raw` and writes point at + i
        // inside `out` (asserted), and bad[0] (a DeviceVec has at least one element).
        unsafe {
            G::kernels(self).g16_key_decode(
                blocks(n, THREADS),
                THREADS,
                stream,
                raw.at(0),
                u32_arg(n),
                out.at_mut(at),
                bad.at_mut(0),
            )
        }
    }

    /// Makes the shifted copies of the `n` bases at the start of `table` (shift.cuh): copy w,
    /// at w·n, is copy w − 1 doubled `doublings[w − 1]` times. Enqueued on `stream`.
    ///
    /// # Panics
    /// If `table` holds fewer than `doublings.len() + 1` copies.
    pub(crate) fn shift<G: Group>(
        &self,
        stream: &Stream,
        table: &DeviceVec<G::Affine>,
        n: usize,
        doublings: &[u32],
    ) -> Result<()> {
        let copies = doublings.len() + 1;
        assert!(table.len() >= n * copies, "{} points for {copies} copies of {n}", table.len());
        for (w, &doublings) in (1..copies).zip(doublings) {
            // SAFETY: thread i < n reads point i of copy w − 1 and writes point i of copy w,
            // both inside the table (asserted); threads past n only take part in their
            // block's inversion.
            unsafe {
                let (input, out) = (table.at((w - 1) * n), table.at_mut(w * n));
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
    fn the_place_pass_takes_fewer_runs_once_its_bins_outgrow_the_cache() {
        // 2^24 over a copy per window: 256 bins of 7.9e5 entries, all 8 runs at once.
        assert_eq!(place_regions(12 << 24, 256), PLACE_REGIONS);
        // 2^26 over 2 copies: 192 bins of 4.2e6 entries (16.8 MB of slots each).
        assert_eq!(place_regions(12 << 26, 192), 2);
        // 2^27 over 2 copies: 8.4e6 entries a bin, one run at a time.
        assert_eq!(place_regions(12 << 27, 192), 1);
        assert_eq!(place_regions(0, 0), PLACE_REGIONS);
    }

    /// The pair `msm_place` (buckets.cuh) reads in its thread `thread`, if any.
    fn placed_pair(thread: u64, (total, regions, region): (u64, u64, u64)) -> Option<u64> {
        let (v, lane) = (thread / 32, thread % 32);
        let (at, run) = (v / regions * 32 + lane, v % regions);
        let p = run * region + at;
        (at < region && p < total).then_some(p)
    }

    #[test]
    fn the_place_pass_reads_every_pair_once_up_to_the_sorts_limit() {
        for total in [0, 1, 31, 32, 33, 1000, 4096, 65_543] {
            for regions in 1..=PLACE_REGIONS {
                let region = place_region(total, regions);
                let threads = regions * region.next_multiple_of(32);
                let mut read = vec![0u8; total];
                let run = (total as u64, regions as u64, region as u64);
                (0..threads as u64).filter_map(|t| placed_pair(t, run)).for_each(|p| read[p as usize] += 1);
                assert!(read.iter().all(|&r| r == 1), "total {total}, {regions} runs");
            }
        }
        // At the sorts' limit (u32::MAX entries) the kernel's arguments fit 32 bits, its warps
        // (formed without the thread's index, which passes 2^32) too, and its last warp reads
        // the last pair.
        let total = u32::MAX as usize;
        for regions in [1, 2, PLACE_REGIONS] {
            let region = place_region(total, regions);
            let warps = regions * region.div_ceil(32);
            assert!(u32::try_from(region).is_ok() && u32::try_from(warps).is_ok(), "{regions} runs");
            let run = (total as u64, regions as u64, region as u64);
            let last_warps = (warps - regions) as u64..warps as u64; // a warp of each run
            let threads = last_warps.flat_map(|v| (0..32).map(move |lane| v * 32 + lane));
            assert_eq!(threads.filter_map(|t| placed_pair(t, run)).max(), Some(total as u64 - 1), "{regions} runs");
        }
    }
}
