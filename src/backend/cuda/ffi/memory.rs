//! Device memory and page-locked host memory: allocation, freeing, the element types that may
//! live in them, and the typed device pointers that kernels take.

use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cust::context::{Context, CurrentContext};
use cust::stream::Stream;
use cust::sys as cu;

use crate::error::{Error, Result};
use crate::pool::HostAllocator;

/// `CUresult` to `Result`, with the driver's own message.
pub(super) fn check(result: cu::CUresult) -> Result<()> {
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

/// Free and total device memory of the current context, in bytes.
pub(crate) fn memory_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: cuMemGetInfo only writes the two values.
    check(unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) })?;
    Ok((free, total))
}

/// Page-locked host memory, portable to every context, never write-combined (the CPU reads
/// these buffers: write-combined reads are ~70× slower). The context must be current.
pub(super) fn host_alloc(bytes: usize) -> Option<NonNull<u8>> {
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
pub(super) unsafe fn host_free(ptr: NonNull<u8>) {
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
    ctx: Context,
}

impl PinnedAllocator {
    /// Pins in `ctx` (any context of the machine: the memory is portable).
    pub(crate) fn new(ctx: Context) -> Self {
        PinnedAllocator { ctx }
    }
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

// SAFETY: a u8 is 1 byte everywhere (`uint8_t`).
unsafe impl DeviceElem for u8 {
    const BYTES: usize = 1;
}
// SAFETY: plain 1 byte; any bit pattern is a u8.
unsafe impl HostElem for u8 {}

// SAFETY: a u32 is 4 bytes everywhere (`uint32_t`).
unsafe impl DeviceElem for u32 {
    const BYTES: usize = 4;
}
// SAFETY: plain 4 bytes; any bit pattern is a u32.
unsafe impl HostElem for u32 {}

// SAFETY: a u64 is 8 bytes everywhere (`uint64_t`).
unsafe impl DeviceElem for u64 {
    const BYTES: usize = 8;
}
// SAFETY: plain 8 bytes; any bit pattern is a u64.
unsafe impl HostElem for u64 {}

// SAFETY: two u32s, 8 bytes: CUDA's `uint2`.
unsafe impl DeviceElem for [u32; 2] {
    const BYTES: usize = 8;
}

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

const _: () = assert!(std::mem::size_of::<Scalar>() == 32);
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

/// The address of `T`s in device memory that a kernel reads: `const T*` in C. Made from a
/// [`DeviceVec`], so its element type is the vector's; null where a kernel takes "none".
#[derive(Debug)]
pub(crate) struct DevicePtr<T>(cu::CUdeviceptr, PhantomData<fn() -> T>);

/// The address of `T`s in device memory that a kernel writes (and may read): `T*` in C.
#[derive(Debug)]
pub(crate) struct DevicePtrMut<T>(cu::CUdeviceptr, PhantomData<fn() -> T>);

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}
impl<T> Clone for DevicePtrMut<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtrMut<T> {}

impl<T> DevicePtr<T> {
    /// No memory: for kernels that take a null pointer as "none".
    pub(crate) fn null() -> Self {
        DevicePtr(0, PhantomData)
    }

    /// The raw address.
    pub(super) fn addr(self) -> cu::CUdeviceptr {
        self.0
    }
}

impl<T> DevicePtrMut<T> {
    /// No memory: for kernels that take a null pointer as "none".
    pub(crate) fn null() -> Self {
        DevicePtrMut(0, PhantomData)
    }

    /// The raw address.
    pub(super) fn addr(self) -> cu::CUdeviceptr {
        self.0
    }
}

/// `len` elements of `T` in device memory of the context current when it was made; freed on
/// drop (in the same context, which the backend keeps current on its thread).
#[derive(Debug)]
pub(crate) struct DeviceVec<T: DeviceElem> {
    ptr: cu::CUdeviceptr,
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
        let mut ptr: cu::CUdeviceptr = 0;
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

    /// The first element's address, for a kernel that reads the vector.
    pub(super) fn ptr(&self) -> DevicePtr<T> {
        self.at(0)
    }

    /// The first element's address, for a kernel that writes the vector.
    pub(super) fn ptr_mut(&self) -> DevicePtrMut<T> {
        self.at_mut(0)
    }

    /// Element `i`'s address (`i <= len`), for a kernel that reads from there.
    ///
    /// # Panics
    /// If `i > len`.
    pub(super) fn at(&self, i: usize) -> DevicePtr<T> {
        DevicePtr(self.addr(i), PhantomData)
    }

    /// Element `i`'s address (`i <= len`), for a kernel that writes from there.
    ///
    /// # Panics
    /// If `i > len`.
    pub(super) fn at_mut(&self, i: usize) -> DevicePtrMut<T> {
        DevicePtrMut(self.addr(i), PhantomData)
    }

    /// Element `i`'s raw address, `i <= len`.
    pub(super) fn addr(&self, i: usize) -> cu::CUdeviceptr {
        assert!(i <= self.len, "device offset {i} past {} elements", self.len);
        self.ptr + (i * T::BYTES) as cu::CUdeviceptr
    }

    /// Enqueues setting every 32-bit word of the first `len` elements to zero.
    ///
    /// # Panics
    /// If `len` exceeds the vector, or its elements are not whole words.
    pub(crate) fn zero(&self, len: usize, stream: &Stream) -> Result<()> {
        assert!(len <= self.len && T::BYTES % 4 == 0, "zeroing {len} of {} elements", self.len);
        // SAFETY: the range lies inside this allocation (asserted); nothing host-side is read.
        check(unsafe { cu::cuMemsetD32Async(self.ptr, 0, len * T::BYTES / 4, stream.as_inner()) })
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
    /// `len` elements of zero bytes in fresh page-locked memory (the context must be
    /// current), to be filled in place.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the host cannot pin that much.
    pub(crate) fn zeroed(len: usize) -> Result<Self> {
        let bytes = len.checked_mul(T::BYTES).ok_or(Error::OutOfMemory { requested: usize::MAX })?.max(1);
        let ptr = host_alloc(bytes).ok_or(Error::OutOfMemory { requested: bytes })?;
        // SAFETY: the block holds `bytes` writable bytes, owned by nothing else yet.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, bytes) };
        Ok(HostPinned { ptr, len, _element: PhantomData })
    }

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

impl<T: HostElem> std::ops::DerefMut for HostPinned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: `len` elements of T, initialised (copied in, or zero bytes: a valid T, as
        // every bit pattern of a HostElem is), owned by self, borrowed mutably here alone.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast(), self.len) }
    }
}

impl<T: HostElem> Drop for HostPinned<T> {
    fn drop(&mut self) {
        // SAFETY: from host_alloc, freed once; copies read it only under an InFlight guard
        // borrowing it, so none is in flight once it can be dropped.
        unsafe { host_free(self.ptr) }
    }
}
