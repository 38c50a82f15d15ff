//! What a backend keeps for the partition it proves: the MSMs' scalars and window sums on the
//! device, where a, b, c come from, and the events whose intervals are its timings.

use std::time::Duration;

use blstrs::{G1Projective, G2Projective, Scalar};
use cust::event::{Event, EventFlags};
use cust::stream::Stream;

use super::ffi::{from_cust, DeviceVec};
use super::msm::MAX_WINDOWS;
use crate::error::{Error, Result};
use crate::groth16::KeyShape;
use crate::synth::{Assignment, Evaluated, PackedAux, Witness};
use crate::timings::{MsmSteps, NttSteps, PartitionTimings};

/// The scalars of a partition's L, A and B MSMs on the device: the aux (the L MSM's), and
/// the A and B queries' in the domain's b and c vectors, which the h stage leaves free (h
/// stays in a), or, longer than the domain, in rooms of their own.
#[derive(Debug)]
pub(super) struct DeviceScalars {
    pub(super) aux: DeviceVec<Scalar>,
    own: [Option<DeviceVec<Scalar>>; 2],
}

impl DeviceScalars {
    /// Room for the scalars of a partition of `key` beside a domain of `m` elements.
    pub(super) fn new(key: &KeyShape, m: usize) -> Result<Self> {
        let own = |len: usize| (len > m).then(|| DeviceVec::new(len)).transpose();
        Ok(DeviceScalars { aux: DeviceVec::new(key.num_aux())?, own: [own(key.a_len())?, own(key.b_len())?] })
    }

    /// Where the A and B scalars go: their own rooms, or the domain's b and c (`abc[1..]`),
    /// once the h stage is done with them.
    pub(super) fn ab<'a>(&'a self, abc: &'a [DeviceVec<Scalar>; 3]) -> [&'a DeviceVec<Scalar>; 2] {
        let [a, b] = &self.own;
        [a.as_ref().unwrap_or(&abc[1]), b.as_ref().unwrap_or(&abc[2])]
    }
}

/// Window sums of a G1 MSM and of the G2 one: each MSM downloads its sums before the next one
/// of its stream starts, so the MSMs of a stream share one buffer (a backend holds one for
/// the H MSM and one for the witness's, which may run beside it).
#[derive(Debug)]
pub(super) struct WindowSums {
    pub(super) g1: DeviceVec<G1Projective>,
    pub(super) g2: DeviceVec<G2Projective>,
}

impl WindowSums {
    pub(super) fn new() -> Result<Self> {
        Ok(WindowSums { g1: DeviceVec::new(MAX_WINDOWS)?, g2: DeviceVec::new(MAX_WINDOWS)? })
    }
}

/// Where a partition's a, b, c come from.
#[derive(Clone, Copy)]
pub(super) enum AbcSource<'a> {
    /// Synthesis evaluated them (and the A and B scalars): copied up.
    Evaluated(&'a Evaluated),
    /// Computed on the device from the input, the packed aux and the key's recorded
    /// constraints.
    Recorded(&'a PackedAux),
}

impl<'a> AbcSource<'a> {
    /// Where `w`'s a, b, c come from, for a backend that holds the key's recorded constraints
    /// or not.
    ///
    /// # Errors
    /// [`Error::Backend`] for a witness-only partition when it does not.
    pub(super) fn of(w: &'a Witness, recorded: bool) -> Result<Self> {
        match (&w.assignment, recorded) {
            (Assignment::Evaluated(e), _) => Ok(AbcSource::Evaluated(e)),
            (Assignment::Packed(p), true) => Ok(AbcSource::Recorded(p)),
            (Assignment::Packed(_), false) => {
                Err(Error::Backend("a witness-only partition, no recorded constraints held".into()))
            }
        }
    }

    /// Bytes of `w` (whose source this is) copied to the device.
    pub(super) fn h2d_bytes(self, w: &Witness) -> usize {
        let scalar = std::mem::size_of::<Scalar>();
        match self {
            AbcSource::Evaluated(e) => {
                let lengths =
                    [e.abc.a.len(), e.abc.b.len(), e.abc.c.len(), e.aux.len(), e.a_scalars.len(), e.b_scalars.len()];
                scalar * lengths.iter().sum::<usize>()
            }
            AbcSource::Recorded(p) => scalar * w.input.len() + p.copied_bytes(),
        }
    }
}

/// Events of one partition, recorded in this order on the kernels' stream (but
/// `scalars_h2d`, on the copy stream).
#[derive(Debug)]
pub(super) struct PartitionEvents {
    pub(super) start: Event,
    /// After a, b, c's copies (or, witness-only, the input's and the aux').
    pub(super) h2d: Event,
    /// After the recorded constraints' products (at `h2d` without them).
    pub(super) constraints: Event,
    /// After each step of the h stage.
    pub(super) ntt: [Event; 3],
    /// After the A and B scalars' gathers from the recorded constraints, which follow the h
    /// stage (at its end without them).
    pub(super) gathered: Event,
    /// Around each MSM (H, L, A, B in G1, B in G2), on the stream that ran it: the kernels',
    /// or the side's beside the H MSM (see [`Gpu::side`](super::device::Gpu)).
    msm: [[Event; 2]; 5],
    /// After all five, on the kernels' stream.
    pub(super) msms_done: Event,
    /// After the aux' copy, beside the h stage (not witness-only).
    pub(super) scalars_h2d: Event,
    /// Around the A and B scalars' copies, beside the MSMs (not witness-only).
    pub(super) ab_h2d: [Event; 2],
}

/// The device time from `start` to `end`, once the device has reached both: before, the
/// driver answers CUDA_ERROR_NOT_READY (an event recorded after a split MSM's readback).
pub(super) fn elapsed(start: &Event, end: &Event) -> Result<Duration> {
    start.synchronize().map_err(from_cust)?;
    end.synchronize().map_err(from_cust)?;
    let ms = end.elapsed_time_f32(start).map_err(from_cust)?;
    Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
}

/// A new timing event.
pub(super) fn event() -> Result<Event> {
    Event::new(EventFlags::DEFAULT).map_err(from_cust)
}

impl PartitionEvents {
    pub(super) fn new() -> Result<Self> {
        let ntt = [event()?, event()?, event()?];
        let msm = [
            [event()?, event()?],
            [event()?, event()?],
            [event()?, event()?],
            [event()?, event()?],
            [event()?, event()?],
        ];
        Ok(PartitionEvents {
            start: event()?,
            h2d: event()?,
            constraints: event()?,
            ntt,
            gathered: event()?,
            msm,
            msms_done: event()?,
            scalars_h2d: event()?,
            ab_h2d: [event()?, event()?],
        })
    }

    /// Adds the h stage's copies, products and steps to `t`, once its events are done.
    pub(super) fn add_h_stage(&self, source: AbcSource<'_>, t: &mut PartitionTimings) -> Result<()> {
        t.h2d += match source {
            AbcSource::Recorded(_) => elapsed(&self.start, &self.h2d)?,
            AbcSource::Evaluated(_) => elapsed(&self.start, &self.scalars_h2d)?,
        };
        t.constraints += elapsed(&self.h2d, &self.constraints)? + elapsed(&self.ntt[2], &self.gathered)?;
        let n = &self.ntt;
        let steps = NttSteps {
            intt: elapsed(&self.constraints, &n[0])?,
            coset_ntt: elapsed(&n[0], &n[1])?,
            coset_intt: elapsed(&n[1], &n[2])?,
        };
        t.ntt += steps.total();
        t.ntt_steps = steps;
        Ok(())
    }

    /// Runs `msm`, the `i`th MSM, between its events on `stream`, where it runs.
    pub(super) fn around<T>(&self, i: usize, stream: &Stream, msm: impl FnOnce() -> Result<T>) -> Result<T> {
        self.msm[i][0].record(stream).map_err(from_cust)?;
        let sum = msm()?;
        self.msm[i][1].record(stream).map_err(from_cust)?;
        Ok(sum)
    }

    /// Adds the MSMs (and, for `source` evaluated, the A and B scalars' copies) to `t`, and
    /// the partition's device interval measured from `epoch`, once its events are done. The
    /// witness's MSMs may have run beside the H MSM: their sum is then more than the interval.
    pub(super) fn add_msms(&self, epoch: &Event, source: AbcSource<'_>, t: &mut PartitionTimings) -> Result<()> {
        if let AbcSource::Evaluated(_) = source {
            t.h2d += elapsed(&self.ab_h2d[0], &self.ab_h2d[1])?;
        }
        let m = |i: usize| elapsed(&self.msm[i][0], &self.msm[i][1]);
        let steps = MsmSteps { h: m(0)?, l: m(1)?, a: m(2)?, b_g1: m(3)?, b_g2: m(4)? };
        t.msm += steps.total();
        t.msm_steps = steps;
        for (i, start) in t.witness_msm_starts.iter_mut().enumerate() {
            *start = elapsed(&self.msm[0][0], &self.msm[i + 1][0])?;
        }
        t.device_start = elapsed(epoch, &self.start)?;
        t.device_end = elapsed(epoch, &self.msms_done)?;
        Ok(())
    }
}
