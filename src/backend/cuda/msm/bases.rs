//! An MSM's bases as the device reaches them: on the device, as they are or followed by
//! their shifted copies, 2^(offset of window w)·P for each window w (`cuda/msm/shift.cuh`),
//! with which the windows share one set of buckets; or in page-locked host memory, copied
//! up a chunk at a time.

use cust::stream::Stream;

use super::plan::{widest_window, SHIFTED_WINDOW_BITS};
use super::window::window_bits;
use crate::backend::cuda::ffi::msm::{window_width, windows_for, Group, MsmKernels};
use crate::backend::cuda::ffi::{from_cust, upload_at, DeviceVec, HostElem, Staging};
use crate::error::Result;

/// One MSM's bases on the device: as the key holds them, or followed by their shifted copies
/// for plans of `shifted` window bits.
#[derive(Debug)]
pub(crate) struct DeviceBases<T: HostElem> {
    /// The bases, then (shifted) copy w of them for each further window w.
    pub(crate) points: DeviceVec<T>,
    /// Bases, the points of one copy.
    pub(crate) n: usize,
    /// The window bits of the plans the copies serve; `None`: plain bases.
    pub(crate) shifted: Option<u32>,
    /// Points one plan sorts: all of them, or a chunk when the backend's scratch holds only
    /// plans of that many ([`KeyPlacement::ResidentInChunks`](crate::backend::cuda::KeyPlacement)).
    pub(crate) plan_points: usize,
}

impl<T: HostElem> DeviceBases<T> {
    /// Uploads `host` (pageable: through the pinned staging chunks, whose copy overlaps the
    /// DMA) and, for `shifted` window bits, makes the copies; the stream is synchronised.
    ///
    /// # Panics
    /// If `shifted` bits are outside [`SHIFTED_WINDOW_BITS`].
    pub(crate) fn upload<G: Group<Affine = T>>(
        host: &[T],
        shifted: Option<u32>,
        kernels: &MsmKernels,
        stream: &Stream,
        staging: &Staging,
    ) -> Result<Self> {
        let bases = Self::alloc(host.len(), shifted)?;
        bases.fill(0, host, stream, staging)?;
        bases.shift_copies::<G>(kernels, stream)?;
        Ok(bases)
    }

    /// Room for `n` bases, and their copies for `shifted` window bits, to be filled.
    pub(crate) fn alloc(n: usize, shifted: Option<u32>) -> Result<Self> {
        Ok(DeviceBases { points: DeviceVec::new(n * copies(shifted))?, n, shifted, plan_points: n })
    }

    /// These bases, their MSMs sorted a `chunk` of points at a time (plain bases only).
    pub(crate) fn in_plans_of(self, chunk: usize) -> Self {
        assert!(self.shifted.is_none() && chunk > 0, "plans of {chunk} points over {:?}-bit copies", self.shifted);
        DeviceBases { plan_points: chunk.min(self.n), ..self }
    }

    /// Uploads `points`, the bases from `first` on (pageable: through the staging chunks),
    /// and waits for the copy.
    pub(crate) fn fill(&self, first: usize, points: &[T], stream: &Stream, staging: &Staging) -> Result<()> {
        assert!(first + points.len() <= self.n, "bases {first}.. of {} past {}", points.len(), self.n);
        upload_at(stream, staging, points, false, (&self.points, first))?.wait()
    }

    /// Makes the shifted copies of the bases once they are all filled (none for plain
    /// bases); the stream is synchronised.
    pub(crate) fn shift_copies<G: Group<Affine = T>>(&self, kernels: &MsmKernels, stream: &Stream) -> Result<()> {
        if let Some(c) = self.shifted {
            kernels.shift::<G>(stream, &self.points, self.n, &doublings(c))?;
            stream.synchronize().map_err(from_cust)?;
        }
        Ok(())
    }

    /// The window bits and the shifted copies' points (`None` for plain bases) of a plan of
    /// `n` scalars over these bases.
    pub(crate) fn plan_for(&self, n: usize) -> (u32, Option<usize>) {
        match self.shifted {
            Some(c) => (c, Some(self.n)),
            None => (window_bits(n), None),
        }
    }
}

/// Copies of the bases on the device: one per window when shifted for `shift` bits, else one.
pub(crate) fn copies(shift: Option<u32>) -> usize {
    shift.map_or(1, windows_for)
}

/// The doublings from each copy of shifted bases to the next, for plans of `c`-bit windows:
/// the width of each window but the last.
///
/// # Panics
/// If `c` is outside [`SHIFTED_WINDOW_BITS`].
fn doublings(c: u32) -> Vec<u32> {
    assert!(SHIFTED_WINDOW_BITS.contains(&c), "window of {c} bits");
    let c = widest_window(c);
    let windows = windows_for(c) as u32;
    (0..windows - 1).map(|w| window_width(c, windows, w)).collect()
}

/// One MSM's bases, as the kernels reach them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bases<'a, T: HostElem> {
    /// On the device.
    Resident(&'a DeviceBases<T>),
    /// In pinned host memory, copied through the two `slots` chunk by chunk.
    Streamed { host: &'a [T], slots: &'a [DeviceVec<T>; 2] },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shifted_copies_double_up_to_each_windows_offset() {
        for c in SHIFTED_WINDOW_BITS {
            let d = doublings(c);
            assert_eq!(d.len() + 1, copies(Some(c)), "c = {c}");
            // Copy w is 2^(offset of window w) times the bases: the widths of the windows
            // before it, which with the last one's make the scalar's 256 bits.
            let c = widest_window(c);
            let last = window_width(c, windows_for(c) as u32, windows_for(c) as u32 - 1);
            assert_eq!(d.iter().sum::<u32>() + last, 256, "c = {c}");
        }
    }
}
