//! Copies between host and device memory, and the marks by which one stream waits for
//! another. Host memory handed to the DMA engine stays borrowed by an [`InFlight`] guard until
//! the stream that reads or writes it is synchronised.

use std::marker::PhantomData;
use std::ptr::NonNull;

use cust::event::{Event, EventFlags};
use cust::stream::{Stream, StreamWaitEventFlags};
use cust::sys as cu;

use super::memory::{check, from_cust, host_alloc, host_free, DeviceElem, DeviceVec, HostElem};
use crate::error::{Error, Result};

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
    upload_at(stream, staging, src, direct, (dst, 0))
}

/// Enqueues the upload of `src` to `dst` from element `at` on, as [`upload`] does.
///
/// # Panics
/// If `dst` holds fewer than `at + src.len()` elements.
pub(crate) fn upload_at<'a, T: HostElem>(
    stream: &'a Stream,
    staging: &Staging,
    src: &'a [T],
    direct: bool,
    (dst, at): (&DeviceVec<T>, usize),
) -> Result<InFlight<'a>> {
    assert!(dst.len() >= at + src.len(), "device vector of {} < {at} + {} elements", dst.len(), src.len());
    let bytes = src.len() * T::BYTES;
    let guard = InFlight { stream, _host: PhantomData };
    // SAFETY: `src` is `bytes` of plain data (HostElem) borrowed by the guard until the stream
    // is synchronised; `dst` holds at least `bytes` from element `at` in this context
    // (asserted).
    unsafe {
        if direct {
            copy_h2d(dst.addr(at), src.as_ptr().cast(), bytes, stream)?;
        } else {
            staging.upload(src.as_ptr().cast(), dst.addr(at), bytes, stream)?;
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
            copy_d2h(dst_ptr, src.addr(0), bytes, stream)?;
        } else {
            staging.download(src.addr(0), dst_ptr, bytes, stream)?;
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
    unsafe { copy_d2h((&mut value as *mut T).cast(), src.addr(index), T::BYTES, stream)? };
    stream.synchronize().map_err(from_cust)?;
    Ok(value)
}

/// Enqueues copying the first `len` elements of `src` over `dst`'s.
///
/// # Panics
/// If either holds fewer than `len`.
pub(super) fn copy_d2d<T: DeviceElem>(
    dst: &DeviceVec<T>,
    src: &DeviceVec<T>,
    len: usize,
    stream: &Stream,
) -> Result<()> {
    assert!(len <= dst.len() && len <= src.len(), "copying {len} of {} into {} elements", src.len(), dst.len());
    // SAFETY: both ranges lie inside their allocations (asserted); device memory only.
    check(unsafe { cu::cuMemcpyDtoDAsync_v2(dst.addr(0), src.addr(0), len * T::BYTES, stream.as_inner()) })
}

/// Enqueues a host-to-device copy of `bytes` on `stream`.
///
/// # Safety
/// - `src..src+bytes` is readable host memory that stays valid and unmodified until the
///   stream is synchronised (pinned for the copy to be asynchronous).
/// - `dst..dst+bytes` is device memory of the stream's context.
unsafe fn copy_h2d(dst: cu::CUdeviceptr, src: *const u8, bytes: usize, stream: &Stream) -> Result<()> {
    // SAFETY: forwarded caller duties.
    check(unsafe { cu::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream.as_inner()) })
}

/// Enqueues a device-to-host copy of `bytes` on `stream`.
///
/// # Safety
/// - `dst..dst+bytes` is writable host memory that nothing else touches until the stream is
///   synchronised.
/// - `src..src+bytes` is device memory of the stream's context.
unsafe fn copy_d2h(dst: *mut u8, src: cu::CUdeviceptr, bytes: usize, stream: &Stream) -> Result<()> {
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
    unsafe fn upload(&self, src: *const u8, dst: cu::CUdeviceptr, bytes: usize, stream: &Stream) -> Result<()> {
        for (i, offset) in (0..bytes).step_by(STAGING_CHUNK).enumerate() {
            let (k, len) = (i % 2, STAGING_CHUNK.min(bytes - offset));
            // Wait until the chunk's previous DMA is over.
            self.done[k].synchronize().map_err(from_cust)?;
            // SAFETY: the chunk holds STAGING_CHUNK >= len bytes and no copy reads it now; the
            // source range lies inside the caller's.
            unsafe { std::ptr::copy_nonoverlapping(src.add(offset), self.chunks[k].as_ptr(), len) };
            // SAFETY: the chunk is pinned and left untouched until `done[k]` completes.
            unsafe { copy_h2d(dst + offset as cu::CUdeviceptr, self.chunks[k].as_ptr(), len, stream)? };
            self.done[k].record(stream).map_err(from_cust)?;
        }
        Ok(())
    }

    /// Copies `bytes` from device `src` into pageable `dst` through a chunk, synchronously.
    ///
    /// # Safety
    /// `dst..dst+bytes` is writable host memory nothing else touches; `src..src+bytes` is
    /// device memory of the stream's context.
    unsafe fn download(&self, src: cu::CUdeviceptr, dst: *mut u8, bytes: usize, stream: &Stream) -> Result<()> {
        for offset in (0..bytes).step_by(STAGING_CHUNK) {
            let len = STAGING_CHUNK.min(bytes - offset);
            self.done[0].synchronize().map_err(from_cust)?;
            // SAFETY: the chunk holds len bytes and no copy reads it now; the stream is
            // synchronised before the chunk is read back.
            unsafe { copy_d2h(self.chunks[0].as_ptr(), src + offset as cu::CUdeviceptr, len, stream)? };
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
