//! The only raw CUDA driver calls of the crate: pinned host memory, async copies and the launch
//! of the `g16_*` kernels of `cuda/api.cu`, each with the Rust signature of its C declaration.
#![allow(unsafe_code)]

use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;

use blstrs::Scalar;
use cust::context::{Context, CurrentContext};
use cust::event::{Event, EventFlags};
use cust::memory::DeviceBuffer;
use cust::module::Module;
use cust::stream::Stream;
use cust::sys as cu;
use ff::Field;

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
    Error::Cuda { code: e as i32, msg: e.to_string() }
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

/// Scalars in device memory: `len` elements, uninitialised until written by a copy or kernel.
#[derive(Debug)]
pub(crate) struct DeviceScalars {
    buf: DeviceBuffer<FrLimbs>,
}

impl DeviceScalars {
    /// Allocates `len` elements in the current context.
    pub(crate) fn new(len: usize) -> Result<Self> {
        // SAFETY: the contents stay unread until a copy or kernel writes them (the h stage
        // uploads a/b/c before any kernel reads them).
        let buf = unsafe { DeviceBuffer::uninitialized(len.max(1)) }.map_err(from_cust)?;
        Ok(DeviceScalars { buf })
    }

    /// b⁰, b¹, …, bⁿ⁻¹ on the device (n >= 1): computed on the host in parallel, copied
    /// synchronously.
    pub(crate) fn powers(base: Scalar, n: usize) -> Result<Self> {
        let mut powers = vec![Scalar::ZERO; n.max(1)];
        crate::domain::fill_powers(&mut powers, base, Scalar::ONE);
        let limbs: Vec<FrLimbs> = powers.into_iter().map(limbs).collect();
        Ok(DeviceScalars { buf: DeviceBuffer::from_slice(&limbs).map_err(from_cust)? })
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    fn ptr(&self) -> DevicePtr {
        self.buf.as_device_ptr().as_raw()
    }

    /// log₂ of the length, which must be a power of two.
    fn lg_len(&self) -> u32 {
        assert!(self.len().is_power_of_two(), "device vector of {} elements is not a power of two", self.len());
        self.len().trailing_zeros()
    }
}

/// Host memory handed to the DMA engine: borrowed until the stream that reads or writes it is
/// synchronised, which dropping the guard does. So no pool buffer can be checked in (and
/// overwritten by its next user) while a copy still touches it, even on an error path.
#[must_use = "dropping the guard waits for the copy"]
#[derive(Debug)]
pub(crate) struct InFlight<'a> {
    stream: &'a Stream,
    _host: PhantomData<&'a mut [Scalar]>,
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

/// Enqueues the upload of `src` to `dst`: `direct`ly (a DMA from pinned memory, or the
/// driver's own bounce buffer for pageable memory) or through `staging`'s pinned chunks.
///
/// # Panics
/// If `dst` is shorter than `src`.
pub(crate) fn upload<'a>(
    stream: &'a Stream,
    staging: &Staging,
    src: &'a [Scalar],
    direct: bool,
    dst: &DeviceScalars,
) -> Result<InFlight<'a>> {
    assert!(dst.len() >= src.len(), "device vector of {} < {} scalars", dst.len(), src.len());
    let bytes = std::mem::size_of_val(src);
    let guard = InFlight { stream, _host: PhantomData };
    if direct {
        // SAFETY: `src` is borrowed by the guard until the stream is synchronised; `dst` holds
        // at least `bytes` in this context (asserted).
        unsafe { copy_h2d(dst.ptr(), src.as_ptr().cast(), bytes, stream)? };
    } else {
        // SAFETY: as above; staging copies out of `src` before returning.
        unsafe { staging.upload(src.as_ptr().cast(), dst.ptr(), bytes, stream)? };
    }
    Ok(guard)
}

/// Enqueues the download of the first `dst.len()` elements of `src` into `dst`: `direct`ly
/// (pinned memory) or through `staging`, synchronously.
///
/// # Panics
/// If `src` is shorter than `dst`.
pub(crate) fn download<'a>(
    stream: &'a Stream,
    staging: &Staging,
    src: &DeviceScalars,
    dst: &'a mut [Scalar],
    direct: bool,
) -> Result<InFlight<'a>> {
    assert!(src.len() >= dst.len(), "device vector of {} < {} scalars", src.len(), dst.len());
    let bytes = std::mem::size_of_val(dst);
    let dst_ptr: *mut u8 = dst.as_mut_ptr().cast();
    let guard = InFlight { stream, _host: PhantomData };
    // SAFETY: `dst` is mutably borrowed by the guard until the stream is synchronised; `src`
    // holds the bytes in this context (asserted) and was written by the kernels with valid
    // field elements, and every such bit pattern is a valid Scalar.
    unsafe {
        if direct {
            copy_d2h(dst_ptr, src.ptr(), bytes, stream)?;
        } else {
            staging.download(src.ptr(), dst_ptr, bytes, stream)?;
        }
    }
    Ok(guard)
}

/// Two-level power tables of a base b on the device: b^e = hi[e >> 12] · lo[e & 4095].
#[derive(Debug)]
pub(crate) struct PowerTables {
    lo: DeviceScalars,
    hi: DeviceScalars,
    /// Exponents below this are covered.
    covers: usize,
}

/// The twiddles of one root w on the device: w^e for e < n/2, one flat table.
#[derive(Debug)]
pub(crate) struct Twiddles(DeviceScalars);

impl Twiddles {
    /// The table for `root`, a primitive n-th root of unity.
    pub(crate) fn new(root: Scalar, n: usize) -> Result<Self> {
        Ok(Twiddles(DeviceScalars::powers(root, n / 2)?))
    }
}

/// log₂ of the low table's length (`LG_TW_LO` in ntt.cuh).
const LG_TW_LO: u32 = 12;

impl PowerTables {
    /// Tables for b^e, e < `covers`.
    pub(crate) fn new(base: Scalar, covers: usize) -> Result<Self> {
        let lo_len = covers.clamp(1, 1 << LG_TW_LO);
        let hi_len = covers.div_ceil(1 << LG_TW_LO).max(1);
        let step = base.pow_vartime([1u64 << LG_TW_LO]);
        Ok(PowerTables { lo: DeviceScalars::powers(base, lo_len)?, hi: DeviceScalars::powers(step, hi_len)?, covers })
    }
}

/// A scalar's Montgomery limbs, as device code stores it.
pub(crate) fn limbs(s: Scalar) -> FrLimbs {
    blst::blst_fr::from(s).l
}

/// The kernels of `cuda/api.cu`, looked up once.
#[derive(Debug)]
pub(crate) struct Kernels {
    bit_reverse: cu::CUfunction,
    ntt_block: cu::CUfunction,
    ntt_radix8: cu::CUfunction,
    scale_by_powers: cu::CUfunction,
    quotient: cu::CUfunction,
    /// Keeps the functions above loaded.
    _module: Module,
}

/// Threads per block of the element-wise kernels and the radix-8 pass.
const THREADS: u32 = 256;
/// Stages of the shared-memory kernel (`LG_BLOCK` in ntt.cuh).
const LG_BLOCK: u32 = 10;

impl Kernels {
    /// Loads the embedded fatbin into the current context.
    pub(crate) fn load() -> Result<Self> {
        static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pinprove.fatbin"));
        let module = Module::from_fatbin(FATBIN, &[]).map_err(from_cust)?;
        let get = |name: &str| module.get_function(name).map(|f| f.to_raw()).map_err(from_cust);
        Ok(Kernels {
            bit_reverse: get("g16_bit_reverse")?,
            ntt_block: get("g16_ntt_block")?,
            ntt_radix8: get("g16_ntt_radix8")?,
            scale_by_powers: get("g16_scale_by_powers")?,
            quotient: get("g16_quotient")?,
            _module: module,
        })
    }

    /// # Safety
    /// `args` point to values of the types the kernel declares, in order, and every device
    /// pointer among them covers what the kernel reads and writes for this grid.
    unsafe fn launch(
        &self,
        f: cu::CUfunction,
        grid: u32,
        block: u32,
        stream: &Stream,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: forwarded caller duties; grid and block are nonzero.
        check(unsafe {
            cu::cuLaunchKernel(
                f,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                stream.as_inner(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    /// In place, the DIT NTT of `x` (length 2^k) with the root whose powers `tw` holds:
    /// bit reversal, ten stages in shared memory, then up to three stages per pass.
    ///
    /// # Panics
    /// If `x` is not a power of two long or `tw` does not hold the len/2 twiddles.
    pub(crate) fn ntt(&self, stream: &Stream, x: &DeviceScalars, tw: &Twiddles) -> Result<()> {
        let mut lg_n = x.lg_len();
        if lg_n == 0 {
            return Ok(());
        }
        assert!(tw.0.len() >= x.len() / 2, "twiddle table of {} < {}", tw.0.len(), x.len() / 2);
        let (mut d_x, mut tw) = (x.ptr(), tw.0.ptr());
        // The SAFETY argument of the three launches below: argument types match the
        // declarations in api.cu; `d_x` holds 2^lg_n elements and the table every twiddle
        // below 2^(lg_n-1) (asserted), which is all that the stages index.
        // SAFETY: as above.
        unsafe {
            self.launch(
                self.bit_reverse,
                elementwise_grid(lg_n),
                THREADS,
                stream,
                &mut [arg(&mut d_x), arg(&mut lg_n)],
            )?
        };
        let mut lg_block = lg_n.min(LG_BLOCK);
        let (grid, block) = (1u32 << (lg_n - lg_block), 1u32 << (lg_block - 1));
        let args = &mut [arg(&mut d_x), arg(&mut lg_n), arg(&mut lg_block), arg(&mut tw)];
        // SAFETY: as above.
        unsafe { self.launch(self.ntt_block, grid, block, stream, args)? };
        let mut s0 = lg_block + 1;
        while s0 <= lg_n {
            let mut k = (lg_n - s0 + 1).min(3);
            let grid = elementwise_grid(lg_n - k);
            let next = s0 + k;
            let args = &mut [arg(&mut d_x), arg(&mut lg_n), arg(&mut s0), arg(&mut k), arg(&mut tw)];
            // SAFETY: as above, with 1 <= k <= 3 and s0 + k - 1 <= lg_n.
            unsafe { self.launch(self.ntt_radix8, grid, THREADS, stream, args)? };
            s0 = next;
        }
        Ok(())
    }

    /// In place, xᵢ ← xᵢ·c·bⁱ with b's powers from `pw`.
    ///
    /// # Panics
    /// If `x` is not a power of two long or `pw` does not cover exponents below its length.
    pub(crate) fn scale_by_powers(
        &self,
        stream: &Stream,
        x: &DeviceScalars,
        pw: &PowerTables,
        c: Scalar,
    ) -> Result<()> {
        let mut lg_n = x.lg_len();
        assert!(pw.covers >= x.len(), "power tables cover {} < {}", pw.covers, x.len());
        let (mut d_x, mut lo, mut hi, mut c) = (x.ptr(), pw.lo.ptr(), pw.hi.ptr(), limbs(c));
        let args = &mut [arg(&mut d_x), arg(&mut lg_n), arg(&mut lo), arg(&mut hi), arg(&mut c)];
        // SAFETY: argument types match the declaration; `d_x` holds 2^lg_n elements and the
        // tables cover every index (asserted).
        unsafe { self.launch(self.scale_by_powers, elementwise_grid(lg_n), THREADS, stream, args) }
    }

    /// In place, aᵢ ← (aᵢ·bᵢ − cᵢ)·z_inv.
    ///
    /// # Panics
    /// If the lengths differ or are not a power of two.
    pub(crate) fn quotient(&self, stream: &Stream, [a, b, c]: [&DeviceScalars; 3], z_inv: Scalar) -> Result<()> {
        assert!(a.len() == b.len() && b.len() == c.len(), "a, b, c lengths differ");
        let mut lg_n = a.lg_len();
        let (mut d_a, mut d_b, mut d_c, mut z_inv) = (a.ptr(), b.ptr(), c.ptr(), limbs(z_inv));
        let args = &mut [arg(&mut d_a), arg(&mut d_b), arg(&mut d_c), arg(&mut lg_n), arg(&mut z_inv)];
        // SAFETY: argument types match the declaration; all three hold 2^lg_n elements.
        unsafe { self.launch(self.quotient, elementwise_grid(lg_n), THREADS, stream, args) }
    }
}

// SAFETY: CUfunction handles are plain driver handles, valid on any thread while the module
// lives (it is owned here); launches are ordered by the caller's stream.
unsafe impl Send for Kernels {}

fn arg<T>(value: &mut T) -> *mut c_void {
    (value as *mut T).cast()
}

fn elementwise_grid(lg_n: u32) -> u32 {
    ((1u64 << lg_n).div_ceil(u64::from(THREADS))) as u32
}

/// Two page-locked chunks through which pageable partitions reach the device: while the DMA
/// engine reads one chunk, the CPU fills the other. Only used for partitions the pool could
/// not pin (fallbacks) or a heap pool; pinned partitions copy directly.
#[derive(Debug)]
pub(crate) struct Staging {
    chunks: [NonNull<u8>; 2],
    /// Recorded after the copy that last read each chunk.
    done: [Event; 2],
}

/// Bytes per staging chunk: large enough to run the DMA near line rate.
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
            self.done[k].synchronize().map_err(from_cust)?; // the chunk's previous DMA is over
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
