//! The only raw CUDA driver calls of the crate, each behind a safe function whose checks make
//! it sound: pinned host memory, device memory, copies, and the launches of the `g16_*` kernels
//! of `cuda/api.cu`. Each kernel is declared once on this side, in a [`kernels!`] table beside
//! the safe functions that launch it (`ntt.rs`, `msm.rs`, `r1cs.rs`), with its C name and its
//! C arguments' types; its launch geometry comes from `cuda/geometry.h`.
#![allow(unsafe_code)]

/// Declares kernels of `cuda/api.cu` once each, as their `extern "C"` declarations read: a
/// table struct holding their handles, looked up by name (the C name, plus the table's suffix
/// for the per-group kernels) when the table is made, and one typed launcher a kernel, named
/// as the kernel and taking its arguments in its order and types. The launchers are the only
/// way a kernel is started.
macro_rules! kernels {
    ($(#[$meta:meta])* $table:ident { $( $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?); )* }) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub(crate) struct $table {
            $( $name: super::Function, )*
        }

        impl $table {
            /// Looks each kernel up in `fatbin` by its name followed by `suffix`.
            pub(crate) fn new(fatbin: &super::Fatbin, suffix: &str) -> crate::error::Result<Self> {
                Ok($table { $( $name: fatbin.function(&format!("{}{suffix}", stringify!($name)))?, )* })
            }

            $(
                $(#[$doc])*
                ///
                /// # Safety
                /// Every device pointer covers what the kernel reads and writes for a grid of
                /// `grid` blocks of `block` threads, in the context of `stream`, until the
                /// stream has done the launch.
                #[allow(clippy::too_many_arguments)]
                pub(crate) unsafe fn $name(
                    &self,
                    grid: u32,
                    block: u32,
                    stream: &cust::stream::Stream,
                    $($arg: $ty),*
                ) -> crate::error::Result<()> {
                    // SAFETY: the arguments are the kernel's own, in its order and of its types
                    // (this declaration mirrors api.cu's); the caller's duties are launch's.
                    unsafe { super::launch(self.$name, grid, block, stream, &[$(super::Arg::from($arg)),*]) }
                }
            )*
        }
    };
}

mod msm;
mod ntt;
mod r1cs;

pub(crate) use msm::{Group, MsmKernels, MsmScratch, Plan, G1, G2};
pub(crate) use ntt::{NttKernels, PowerTables, Twiddles};
pub(crate) use r1cs::{DeviceMatrix, DeviceStarts, R1csKernels, Z};

use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cust::context::{Context, CurrentContext};
use cust::event::{Event, EventFlags};
use cust::module::Module;
use cust::stream::{Stream, StreamWaitEventFlags};
use cust::sys as cu;

use crate::error::{Error, Result};
use crate::pool::HostAllocator;

/// A field element as a kernel argument: Montgomery form, the layout of `fr_t` and `Scalar`.
pub(crate) type FrLimbs = [u64; 4];
const _: () = assert!(std::mem::size_of::<FrLimbs>() == std::mem::size_of::<Scalar>());

/// A device address (`CUdeviceptr`).
pub(crate) type DevicePtr = cu::CUdeviceptr;

/// `CUresult` to `Result`, with the driver's own message.
pub(crate) fn check(result: cu::CUresult) -> Result<()> {
    if result == cu::cudaError_enum::CUDA_SUCCESS {
        return Ok(());
    }
    if result == cu::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
        return Err(Error::DeviceOutOfMemory { requested: 0 }); // the size is not known here
    }
    let mut text: *const std::os::raw::c_char = std::ptr::null();
    // SAFETY: cuGetErrorString writes a pointer to a static, NUL-terminated string (or leaves
    // it null for an unknown code); it reads nothing of ours.
    let known = unsafe { cu::cuGetErrorString(result, &mut text) } == cu::cudaError_enum::CUDA_SUCCESS;
    let msg = if known && !text.is_null() {
        // SAFETY: non-null and NUL-terminated per the driver's contract; static lifetime.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    } else {
        "unknown CUDA error".to_owned()
    };
    Err(Error::Cuda { code: result as i32, msg })
}

/// cust's error to ours.
pub(crate) fn from_cust(e: cust::error::CudaError) -> Error {
    match e {
        cust::error::CudaError::OutOfMemory => Error::DeviceOutOfMemory { requested: 0 },
        e => Error::Cuda { code: e as i32, msg: e.to_string() },
    }
}

/// A scalar's Montgomery limbs, as device code stores it.
pub(crate) fn limbs(s: Scalar) -> FrLimbs {
    blst::blst_fr::from(s).l
}

/// Free and total device memory of the current context, in bytes.
pub(crate) fn memory_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: cuMemGetInfo only writes the two values.
    check(unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) })?;
    Ok((free, total))
}

/// Page-locked host memory, portable to every context, never write-combined (the CPU reads
/// these buffers: write-combined reads are ~70× slower). The context must be current.
pub(crate) fn host_alloc(bytes: usize) -> Option<NonNull<u8>> {
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: cuMemHostAlloc only writes `ptr`; flags request portable, cached memory.
    let result = unsafe { cu::cuMemHostAlloc(&mut ptr, bytes, cu::CU_MEMHOSTALLOC_PORTABLE) };
    if check(result).is_err() {
        return None;
    }
    NonNull::new(ptr.cast())
}

/// Frees memory from [`host_alloc`].
///
/// # Safety
/// - `ptr` came from `host_alloc` and is freed once.
/// - No copy from or to it is in flight, and nothing uses it afterwards.
pub(crate) unsafe fn host_free(ptr: NonNull<u8>) {
    // SAFETY: the caller's duties are exactly cuMemFreeHost's preconditions.
    if let Err(e) = check(unsafe { cu::cuMemFreeHost(ptr.as_ptr().cast()) }) {
        log::error!("cuMemFreeHost failed: {e}");
    }
}

/// `cuMemHostAlloc` behind the pool's allocator trait: what makes a [`PinnedPool`] pinned.
///
/// [`PinnedPool`]: crate::PinnedPool
#[derive(Debug, Clone)]
pub struct PinnedAllocator {
    /// Made current on the allocating thread; the memory is portable to every context.
    pub(crate) ctx: Context,
}

// SAFETY: blocks come from cuMemHostAlloc: at least `bytes` long, page-aligned (so
// BLOCK_ALIGN-aligned), distinct while live, freed by cuMemFreeHost only.
unsafe impl HostAllocator for PinnedAllocator {
    fn alloc(&self, bytes: usize) -> Option<NonNull<u8>> {
        CurrentContext::set_current(&self.ctx).ok()?;
        host_alloc(bytes)
    }

    unsafe fn free(&self, ptr: NonNull<u8>, _bytes: usize) {
        if let Err(e) = CurrentContext::set_current(&self.ctx) {
            log::error!("cannot make the CUDA context current to free pinned memory: {e}");
        }
        // SAFETY: the caller guarantees `ptr` came from `alloc` (host_alloc), is freed once and
        // no copy from it is in flight.
        unsafe { host_free(ptr) }
    }

    fn is_pinned(&self) -> bool {
        true
    }
}

/// An element type of device arrays: its size on the device.
///
/// # Safety
/// `BYTES` is the size the device code gives the element.
pub(crate) unsafe trait DeviceElem {
    /// Bytes per element on the device.
    const BYTES: usize;
}

/// A device element type with a host twin of the same bytes, so arrays of it may be copied
/// either way.
///
/// # Safety
/// `Self` is plain data of exactly `BYTES` bytes (no padding, no pointers), laid out as the
/// device code lays the element out, and every bit pattern the device writes is a valid `Self`.
pub(crate) unsafe trait HostElem: DeviceElem + Copy {}

// SAFETY: a u32 is 4 bytes everywhere.
unsafe impl DeviceElem for u32 {
    const BYTES: usize = 4;
}
// SAFETY: plain 4 bytes; any bit pattern is a u32.
unsafe impl HostElem for u32 {}

// SAFETY: a u64 is 8 bytes everywhere.
unsafe impl DeviceElem for u64 {
    const BYTES: usize = 8;
}
// SAFETY: plain 8 bytes; any bit pattern is a u64.
unsafe impl HostElem for u64 {}

// SAFETY: `Scalar` is repr(transparent) over blst_fr { l: [u64; 4] }: Montgomery form, 32
// bytes, the layout of sppark's fr_t (8 × u32 LE). The kernels write reduced field elements.
unsafe impl DeviceElem for Scalar {
    const BYTES: usize = 32;
}
// SAFETY: as above.
unsafe impl HostElem for Scalar {}

// SAFETY: `G1Affine` is repr(transparent) over blst_p1_affine { x, y: blst_fp } (96 bytes of
// Montgomery limbs; infinity is all zeros), the layout of affine_t<fp_t> (ec/xyzz.cuh).
unsafe impl DeviceElem for G1Affine {
    const BYTES: usize = 96;
}
// SAFETY: as above; the device never writes bases.
unsafe impl HostElem for G1Affine {}

// SAFETY: `G2Affine` is repr(transparent) over blst_p2_affine { x, y: blst_fp2 } (192 bytes),
// the layout of affine_t<fp2_t<fp_t>> (c0 then c1, as blst_fp2).
unsafe impl DeviceElem for G2Affine {
    const BYTES: usize = 192;
}
// SAFETY: as above.
unsafe impl HostElem for G2Affine {}

// SAFETY: `G1Projective` is repr(transparent) over blst_p1 { x, y, z: blst_fp } (Jacobian,
// Montgomery limbs, 144 bytes; infinity is Z = 0), the layout of jacobian_t<fp_t>. The
// kernels write reduced coordinates of a point on the curve.
unsafe impl DeviceElem for G1Projective {
    const BYTES: usize = 144;
}
// SAFETY: as above.
unsafe impl HostElem for G1Projective {}

// SAFETY: `G2Projective` is repr(transparent) over blst_p2 { x, y, z: blst_fp2 } (288 bytes),
// the layout of jacobian_t<fp2_t<fp_t>>; as above.
unsafe impl DeviceElem for G2Projective {
    const BYTES: usize = 288;
}
// SAFETY: as above.
unsafe impl HostElem for G2Projective {}

const _: () = assert!(std::mem::size_of::<G1Affine>() == 96 && std::mem::size_of::<G2Affine>() == 192);
const _: () = assert!(std::mem::size_of::<G1Projective>() == 144 && std::mem::size_of::<G2Projective>() == 288);

/// A point of G1 in XYZZ coordinates, which exists on the device only (`xyzz_t<fp_t>`).
#[derive(Debug)]
pub(crate) enum XyzzG1 {}
// SAFETY: 4 × 48 bytes.
unsafe impl DeviceElem for XyzzG1 {
    const BYTES: usize = 192;
}

/// A point of G2 in XYZZ coordinates, device only (`xyzz_t<fp2_t<fp_t>>`).
#[derive(Debug)]
pub(crate) enum XyzzG2 {}
// SAFETY: 4 × 96 bytes.
unsafe impl DeviceElem for XyzzG2 {
    const BYTES: usize = 384;
}

/// `len` elements of `T` in device memory of the context current when it was made; freed on
/// drop (in the same context, which the backend keeps current on its thread).
#[derive(Debug)]
pub(crate) struct DeviceVec<T: DeviceElem> {
    ptr: DevicePtr,
    len: usize,
    _element: PhantomData<T>,
}

impl<T: DeviceElem> DeviceVec<T> {
    /// Room for `len` elements (at least one), uninitialised.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`] when the device has no room; [`Error::Cuda`] otherwise.
    pub(crate) fn new(len: usize) -> Result<Self> {
        let bytes = len.max(1).checked_mul(T::BYTES).ok_or(Error::DeviceOutOfMemory { requested: usize::MAX })?;
        let mut ptr: DevicePtr = 0;
        // SAFETY: cuMemAlloc only writes `ptr`.
        let result = unsafe { cu::cuMemAlloc_v2(&mut ptr, bytes) };
        if result == cu::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
            return Err(Error::DeviceOutOfMemory { requested: bytes });
        }
        check(result)?;
        Ok(DeviceVec { ptr, len: len.max(1), _element: PhantomData })
    }

    /// Elements it holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Address of element `i` (for a kernel argument), `i <= len`.
    ///
    /// # Panics
    /// If `i > len`.
    pub(crate) fn ptr_at(&self, i: usize) -> DevicePtr {
        assert!(i <= self.len, "device offset {i} past {} elements", self.len);
        self.ptr + (i * T::BYTES) as DevicePtr
    }

    /// Address of the first element.
    pub(crate) fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Enqueues setting every 32-bit word of the first `len` elements to zero.
    pub(crate) fn zero(&self, len: usize, stream: &Stream) -> Result<()> {
        assert!(len <= self.len && T::BYTES % 4 == 0, "zeroing {len} of {} elements", self.len);
        // SAFETY: the range lies inside this allocation (asserted); nothing host-side is read.
        check(unsafe { cu::cuMemsetD32Async(self.ptr, 0, len * T::BYTES / 4, stream.as_inner()) })
    }

    /// Enqueues copying the first `len` elements of `src` over this one's.
    pub(crate) fn copy_from(&self, src: &DeviceVec<T>, len: usize, stream: &Stream) -> Result<()> {
        assert!(len <= self.len && len <= src.len, "copying {len} of {} into {} elements", src.len, self.len);
        // SAFETY: both ranges lie inside their allocations (asserted); device memory only.
        check(unsafe { cu::cuMemcpyDtoDAsync_v2(self.ptr, src.ptr, len * T::BYTES, stream.as_inner()) })
    }
}

impl<T: DeviceElem> Drop for DeviceVec<T> {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc in `new`, freed once; kernels that use it were
        // enqueued on streams its owner synchronises before dropping it.
        if let Err(e) = check(unsafe { cu::cuMemFree_v2(self.ptr) }) {
            log::error!("cuMemFree failed: {e}");
        }
    }
}

// SAFETY: a device address is plain data; the allocation is owned by this value alone.
unsafe impl<T: DeviceElem> Send for DeviceVec<T> {}

/// Host memory handed to the DMA engine: borrowed until the stream that reads or writes it is
/// synchronised, which dropping the guard does. So no pool buffer can be checked in (and
/// overwritten by its next user) while a copy still touches it, even on an error path.
#[must_use = "dropping the guard waits for the copy"]
#[derive(Debug)]
pub(crate) struct InFlight<'a> {
    stream: &'a Stream,
    _host: PhantomData<&'a mut [u8]>,
}

impl InFlight<'_> {
    /// Waits for the stream, reporting its error.
    pub(crate) fn wait(self) -> Result<()> {
        let result = self.stream.synchronize().map_err(from_cust);
        std::mem::forget(self);
        result
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.stream.synchronize() {
            log::error!("stream failed while host buffers were in flight: {e}");
        }
    }
}

/// Enqueues the upload of `src` to the start of `dst`: `direct`ly (a DMA from pinned memory,
/// or the driver's own bounce buffer for pageable memory) or through `staging`'s pinned chunks.
///
/// # Panics
/// If `dst` is shorter than `src`.
pub(crate) fn upload<'a, T: HostElem>(
    stream: &'a Stream,
    staging: &Staging,
    src: &'a [T],
    direct: bool,
    dst: &DeviceVec<T>,
) -> Result<InFlight<'a>> {
    assert!(dst.len() >= src.len(), "device vector of {} < {} elements", dst.len(), src.len());
    let bytes = src.len() * T::BYTES;
    let guard = InFlight { stream, _host: PhantomData };
    // SAFETY: `src` is `bytes` of plain data (HostElem) borrowed by the guard until the stream
    // is synchronised; `dst` holds at least `bytes` in this context (asserted).
    unsafe {
        if direct {
            copy_h2d(dst.ptr(), src.as_ptr().cast(), bytes, stream)?;
        } else {
            staging.upload(src.as_ptr().cast(), dst.ptr(), bytes, stream)?;
        }
    }
    Ok(guard)
}

/// Enqueues the download of the first `dst.len()` elements of `src` into `dst`: `direct`ly
/// (pinned memory) or through `staging`, synchronously.
///
/// # Panics
/// If `src` is shorter than `dst`.
pub(crate) fn download<'a, T: HostElem>(
    stream: &'a Stream,
    staging: &Staging,
    src: &DeviceVec<T>,
    dst: &'a mut [T],
    direct: bool,
) -> Result<InFlight<'a>> {
    assert!(src.len() >= dst.len(), "device vector of {} < {} elements", src.len(), dst.len());
    let bytes = dst.len() * T::BYTES;
    let dst_ptr: *mut u8 = dst.as_mut_ptr().cast();
    let guard = InFlight { stream, _host: PhantomData };
    // SAFETY: `dst` is mutably borrowed by the guard until the stream is synchronised; `src`
    // holds the bytes in this context (asserted), and every bit pattern the kernels write is a
    // valid `T` (HostElem).
    unsafe {
        if direct {
            copy_d2h(dst_ptr, src.ptr(), bytes, stream)?;
        } else {
            staging.download(src.ptr(), dst_ptr, bytes, stream)?;
        }
    }
    Ok(guard)
}

/// Element `index` of `src`, once the stream has done everything enqueued before (it waits).
///
/// # Panics
/// If `index` is out of bounds.
pub(crate) fn read<T: HostElem + Default>(stream: &Stream, src: &DeviceVec<T>, index: usize) -> Result<T> {
    assert!(index < src.len(), "read of element {index} of {}", src.len());
    let mut value = T::default();
    // SAFETY: one element inside `src` (asserted) into a local that outlives the copy: the
    // stream is synchronised before it is read; every bit pattern is a valid T (HostElem).
    unsafe { copy_d2h((&mut value as *mut T).cast(), src.ptr_at(index), T::BYTES, stream)? };
    stream.synchronize().map_err(from_cust)?;
    Ok(value)
}

/// Enqueues a host-to-device copy of `bytes` on `stream`.
///
/// # Safety
/// - `src..src+bytes` is readable host memory that stays valid and unmodified until the
///   stream is synchronised (pinned for the copy to be asynchronous).
/// - `dst..dst+bytes` is device memory of the stream's context.
unsafe fn copy_h2d(dst: DevicePtr, src: *const u8, bytes: usize, stream: &Stream) -> Result<()> {
    // SAFETY: forwarded caller duties.
    check(unsafe { cu::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream.as_inner()) })
}

/// Enqueues a device-to-host copy of `bytes` on `stream`.
///
/// # Safety
/// - `dst..dst+bytes` is writable host memory that nothing else touches until the stream is
///   synchronised.
/// - `src..src+bytes` is device memory of the stream's context.
unsafe fn copy_d2h(dst: *mut u8, src: DevicePtr, bytes: usize, stream: &Stream) -> Result<()> {
    // SAFETY: forwarded caller duties.
    check(unsafe { cu::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream.as_inner()) })
}

/// Two page-locked chunks through which pageable memory reaches the device: while the DMA
/// engine reads one chunk, the CPU fills the other. Used for partitions the pool could not pin
/// (fallbacks), a heap pool, and the proving key's upload.
#[derive(Debug)]
pub(crate) struct Staging {
    chunks: [NonNull<u8>; 2],
    /// Recorded after the copy that last read each chunk.
    done: [Event; 2],
}

/// Bytes per staging chunk: large enough to run the DMA near line rate (a chunk's copy takes
/// some 0.3 ms at 55 GB/s, against microseconds to start one). Refit with `gpu_report`'s
/// pageable H2D row (the `pageable_partitions_prove_through_staging_and_are_counted` test
/// counts the staged bytes).
const STAGING_CHUNK: usize = 16 << 20;

// SAFETY: the chunks are owned by this struct alone; the events are driver handles.
unsafe impl Send for Staging {}

impl Staging {
    /// Allocates the two chunks (the context must be current).
    pub(crate) fn new() -> Result<Self> {
        let event = || Event::new(EventFlags::DISABLE_TIMING).map_err(from_cust);
        let done = [event()?, event()?];
        let first = host_alloc(STAGING_CHUNK).ok_or(Error::OutOfMemory { requested: STAGING_CHUNK })?;
        let Some(second) = host_alloc(STAGING_CHUNK) else {
            // SAFETY: allocated just above, never used.
            unsafe { host_free(first) };
            return Err(Error::OutOfMemory { requested: STAGING_CHUNK });
        };
        Ok(Staging { chunks: [first, second], done })
    }

    /// Enqueues the copy of `bytes` from pageable `src` to `dst` through the chunks; `src` is
    /// no longer read when this returns.
    ///
    /// # Safety
    /// `src..src+bytes` is readable host memory; `dst..dst+bytes` is device memory of the
    /// stream's context.
    unsafe fn upload(&self, src: *const u8, dst: DevicePtr, bytes: usize, stream: &Stream) -> Result<()> {
        for (i, offset) in (0..bytes).step_by(STAGING_CHUNK).enumerate() {
            let (k, len) = (i % 2, STAGING_CHUNK.min(bytes - offset));
            // Wait until the chunk's previous DMA is over.
            self.done[k].synchronize().map_err(from_cust)?;
            // SAFETY: the chunk holds STAGING_CHUNK >= len bytes and no copy reads it now; the
            // source range lies inside the caller's.
            unsafe { std::ptr::copy_nonoverlapping(src.add(offset), self.chunks[k].as_ptr(), len) };
            // SAFETY: the chunk is pinned and left untouched until `done[k]` completes.
            unsafe { copy_h2d(dst + offset as DevicePtr, self.chunks[k].as_ptr(), len, stream)? };
            self.done[k].record(stream).map_err(from_cust)?;
        }
        Ok(())
    }

    /// Copies `bytes` from device `src` into pageable `dst` through a chunk, synchronously.
    ///
    /// # Safety
    /// `dst..dst+bytes` is writable host memory nothing else touches; `src..src+bytes` is
    /// device memory of the stream's context.
    unsafe fn download(&self, src: DevicePtr, dst: *mut u8, bytes: usize, stream: &Stream) -> Result<()> {
        for offset in (0..bytes).step_by(STAGING_CHUNK) {
            let len = STAGING_CHUNK.min(bytes - offset);
            self.done[0].synchronize().map_err(from_cust)?;
            // SAFETY: the chunk holds len bytes and no copy reads it now; the stream is
            // synchronised before the chunk is read back.
            unsafe { copy_d2h(self.chunks[0].as_ptr(), src + offset as DevicePtr, len, stream)? };
            stream.synchronize().map_err(from_cust)?;
            // SAFETY: the copy is complete; the destination range lies inside the caller's.
            unsafe { std::ptr::copy_nonoverlapping(self.chunks[0].as_ptr(), dst.add(offset), len) };
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for (chunk, done) in self.chunks.iter().zip(&self.done) {
            if let Err(e) = done.synchronize() {
                log::error!("staging copy did not complete: {e}");
            }
            // SAFETY: allocated by host_alloc in `new`, freed once here, no copy in flight.
            unsafe { host_free(*chunk) };
        }
    }
}

/// A copy of host data in page-locked memory, for the DMA engine to read while the CPU does
/// other work: the proving key's bases when they are streamed to the device.
#[derive(Debug)]
pub(crate) struct HostPinned<T: HostElem> {
    ptr: NonNull<u8>,
    len: usize,
    _element: PhantomData<T>,
}

// SAFETY: the memory is owned by this value alone and holds plain data.
unsafe impl<T: HostElem> Send for HostPinned<T> {}

impl<T: HostElem> HostPinned<T> {
    /// Copies `src` into fresh page-locked memory (the context must be current).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the host cannot pin that much.
    pub(crate) fn copy_of(src: &[T]) -> Result<Self> {
        let bytes = std::mem::size_of_val(src).max(1);
        let ptr = host_alloc(bytes).ok_or(Error::OutOfMemory { requested: bytes })?;
        // SAFETY: the block holds `bytes` >= size_of_val(src), page-aligned (so aligned for T),
        // and is distinct from `src`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), ptr.as_ptr().cast::<T>(), src.len()) };
        Ok(HostPinned { ptr, len: src.len(), _element: PhantomData })
    }
}

impl<T: HostElem> std::ops::Deref for HostPinned<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` elements of T were copied in by `copy_of` and live as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast(), self.len) }
    }
}

impl<T: HostElem> Drop for HostPinned<T> {
    fn drop(&mut self) {
        // SAFETY: from host_alloc, freed once; copies read it only under an InFlight guard
        // borrowing it, so none is in flight once it can be dropped.
        unsafe { host_free(self.ptr) }
    }
}

/// Records where `stream` stands, for another stream to wait on with [`wait_for`].
pub(crate) fn mark(stream: &Stream) -> Result<Event> {
    let event = Event::new(EventFlags::DISABLE_TIMING).map_err(from_cust)?;
    event.record(stream).map_err(from_cust)?;
    Ok(event)
}

/// Makes `stream` wait, on the device, for the work before `mark`. cust's wait takes the event
/// and destroys it, which CUDA allows once the wait is enqueued.
pub(crate) fn wait_for(stream: &Stream, mark: Event) -> Result<()> {
    stream.wait_event(mark, StreamWaitEventFlags::DEFAULT).map_err(from_cust)
}

/// A kernel argument, by value: one of the three C types the kernels take (`uint32_t`, a
/// device pointer, an `fr_t` by value).
#[derive(Debug, Clone, Copy)]
enum Arg {
    U32(u32),
    Ptr(DevicePtr),
    Fr(FrLimbs),
}

impl From<u32> for Arg {
    fn from(v: u32) -> Self {
        Arg::U32(v)
    }
}

impl From<DevicePtr> for Arg {
    fn from(v: DevicePtr) -> Self {
        Arg::Ptr(v)
    }
}

impl From<FrLimbs> for Arg {
    fn from(v: FrLimbs) -> Self {
        Arg::Fr(v)
    }
}

/// The kernels of `cuda/api.cu`, compiled into the embedded fatbin and loaded once per
/// backend.
#[derive(Debug)]
pub(crate) struct Fatbin {
    module: Module,
}

impl Fatbin {
    /// Loads the embedded fatbin into the current context.
    pub(crate) fn load() -> Result<Self> {
        static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pinprove.fatbin"));
        Ok(Fatbin { module: Module::from_fatbin(FATBIN, &[]).map_err(from_cust)? })
    }

    fn function(&self, name: &str) -> Result<Function> {
        Ok(Function(self.module.get_function(name).map_err(from_cust)?.to_raw()))
    }
}

/// A kernel of the module: its driver handle.
#[derive(Debug, Clone, Copy)]
struct Function(cu::CUfunction);

// SAFETY: CUfunction handles are plain driver handles, valid on any thread while the module
// lives (the kernel tables hold the module's owner, the backend, which outlives them).
unsafe impl Send for Function {}

/// Enqueues `f` on `stream` with a 1-D grid.
///
/// # Safety
/// `args` are, in order, of the types the kernel declares, and every device pointer among
/// them covers what the kernel reads and writes for this grid.
unsafe fn launch(f: Function, grid: u32, block: u32, stream: &Stream, args: &[Arg]) -> Result<()> {
    if grid == 0 {
        return Ok(());
    }
    let mut values: Vec<Arg> = args.to_vec();
    let mut pointers: Vec<*mut c_void> = values
        .iter_mut()
        .map(|a| match a {
            Arg::U32(v) => (v as *mut u32).cast(),
            Arg::Ptr(v) => (v as *mut DevicePtr).cast(),
            Arg::Fr(v) => (v as *mut FrLimbs).cast(),
        })
        .collect();
    // SAFETY: forwarded caller duties; `pointers` point into `values`, alive for the call
    // (the driver copies the arguments before returning); grid and block are nonzero.
    check(unsafe {
        cu::cuLaunchKernel(
            f.0,
            grid,
            1,
            1,
            block,
            1,
            1,
            0,
            stream.as_inner(),
            pointers.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    })
}

/// Blocks of `threads` covering `n` items, as a grid size.
///
/// # Panics
/// If more blocks are needed than a grid may have (2³¹ − 1).
fn blocks(n: usize, threads: u32) -> u32 {
    u32::try_from(n.div_ceil(threads as usize)).ok().filter(|&b| b < i32::MAX as u32).expect("grid too large")
}

/// A length as a kernel's `uint32_t` argument.
///
/// # Panics
/// If it does not fit (the callers bound their sizes below 2³²).
fn u32_arg(n: usize) -> u32 {
    u32::try_from(n).expect("kernel sizes fit in 32 bits")
}
