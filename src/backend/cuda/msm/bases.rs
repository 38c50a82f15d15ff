//! An MSM's bases as the device reaches them: on the device, as they are or followed by
//! their shifted copies, copy q = 2^(offset of its first window)·P (`cuda/msm/shift.cuh`),
//! each serving a group of windows (a copy per window: the windows share one set of
//! buckets); or in page-locked host memory, copied up a chunk at a time.

use cust::stream::Stream;

use super::plan::{widest_window, SHIFTED_WINDOW_BITS};
use super::window::{copies_window_bits, shifted_window_bits, window_bits};
use crate::backend::cuda::ffi::msm::{window_width, windows_for, Copies, Group, MsmKernels};
use crate::backend::cuda::ffi::{from_cust, upload_at, DeviceVec, HostElem, Staging};
use crate::error::Result;

/// Shifted copies of an MSM's bases: `copies` of them (the bases the first), for plans of
/// `c`-bit windows, each copy serving windows/copies of the windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shift {
    pub(crate) c: u32,
    pub(crate) copies: usize,
}

impl Shift {
    /// A copy per window of `c` bits.
    pub(crate) fn per_window(c: u32) -> Self {
        Shift { c, copies: windows_for(c) }
    }

    /// A copy per window of the plans' choice for `n` points ([`shifted_window_bits`]).
    pub(crate) fn all(n: usize) -> Self {
        Self::per_window(shifted_window_bits(n))
    }

    /// `copies` copies for `n` points, in the windows they take ([`copies_window_bits`]).
    pub(crate) fn copies(n: usize, copies: usize) -> Option<Self> {
        copies_window_bits(n, copies).map(|c| Shift { c, copies })
    }
}

/// One MSM's bases on the device: as the key holds them, or followed by their shifted copies.
#[derive(Debug)]
pub(crate) struct DeviceBases<T: HostElem> {
    /// The bases, then (shifted) copy q of them for each further q.
    pub(crate) points: DeviceVec<T>,
    /// Bases, the points of one copy.
    pub(crate) n: usize,
    /// The copies and the window bits of the plans they serve; `None`: plain bases.
    pub(crate) shifted: Option<Shift>,
    /// Points one plan sorts: all of them, or a chunk when the backend's scratch holds only
    /// plans of that many ([`KeyPlacement::ResidentInChunks`](crate::backend::cuda::KeyPlacement)).
    pub(crate) plan_points: usize,
}

impl<T: HostElem> DeviceBases<T> {
    /// Uploads `host` (pageable: through the pinned staging chunks, whose copy overlaps the
    /// DMA) and, `shifted`, makes the copies; the stream is synchronised.
    ///
    /// # Panics
    /// If `shifted` bits are outside [`SHIFTED_WINDOW_BITS`].
    pub(crate) fn upload<G: Group<Affine = T>>(
        host: &[T],
        shifted: Option<Shift>,
        kernels: &MsmKernels,
        stream: &Stream,
        staging: &Staging,
    ) -> Result<Self> {
        let bases = Self::alloc(host.len(), shifted)?;
        bases.fill(0, host, stream, staging)?;
        bases.shift_copies::<G>(kernels, stream)?;
        Ok(bases)
    }

    /// Room for `n` bases, and their `shifted` copies, to be filled.
    pub(crate) fn alloc(n: usize, shifted: Option<Shift>) -> Result<Self> {
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
        if let Some(shift) = self.shifted {
            kernels.shift::<G>(stream, &self.points, self.n, &doublings(shift))?;
            stream.synchronize().map_err(from_cust)?;
        }
        Ok(())
    }

    /// The window bits and the shifted copies (`None` for plain bases) of a plan of `n`
    /// scalars over these bases.
    pub(crate) fn plan_for(&self, n: usize) -> (u32, Option<Copies>) {
        match self.shifted {
            Some(s) => (s.c, Some(Copies { points: self.n, copies: s.copies })),
            None => (window_bits(n), None),
        }
    }
}

/// Copies of the bases on the device: those of `shift`, else one.
pub(crate) fn copies(shift: Option<Shift>) -> usize {
    shift.map_or(1, |s| s.copies)
}

/// The doublings from each copy of shifted bases to the next: the bits the copy's group of
/// windows spans.
///
/// # Panics
/// If the window bits are outside [`SHIFTED_WINDOW_BITS`], or the copies do not divide
/// their windows.
fn doublings(shift: Shift) -> Vec<u32> {
    let Shift { c, copies } = shift;
    assert!(SHIFTED_WINDOW_BITS.contains(&c) && windows_for(c) % copies == 0, "{shift:?}");
    let (c, windows) = (widest_window(c), windows_for(c) as u32);
    let group = windows / copies as u32;
    let width = |w| window_width(c, windows, copies as u32, w);
    (0..copies as u32 - 1).map(|q| (q * group..(q + 1) * group).map(width).sum()).collect()
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
    fn each_copy_is_doubled_up_to_its_groups_first_window() {
        let mut shifts: Vec<Shift> = SHIFTED_WINDOW_BITS.map(Shift::per_window).collect();
        shifts.extend((2..=6).map(|t| Shift::copies(1 << 27, t).unwrap()));
        for shift in shifts {
            let d = doublings(shift);
            assert_eq!(d.len() + 1, copies(Some(shift)), "{shift:?}");
            // Copy q is 2^(offset of window q·group) times the bases: the widths of the
            // windows before it. The windows cover the scalar's 256 bits; over several copies
            // of several windows each, the g-th windows of every group are alike.
            let (c, windows) = (widest_window(shift.c), windows_for(shift.c) as u32);
            let widths: Vec<u32> = (0..windows).map(|w| window_width(c, windows, shift.copies as u32, w)).collect();
            let group = windows as usize / shift.copies;
            for (q, &doubled) in d.iter().enumerate() {
                assert_eq!(widths[q * group..][..group].iter().sum::<u32>(), doubled, "{shift:?}: {widths:?}");
            }
            assert!(widths.iter().sum::<u32>() >= 256 && widths.iter().all(|&b| b == c || b + 1 == c), "{shift:?}");
            if group > 1 {
                assert!(widths.chunks(group).all(|g| g == &widths[..group]), "{shift:?}: {widths:?}");
            }
        }
    }
}
