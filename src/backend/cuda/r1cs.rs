//! A key's recorded constraints on the device: the coefficients' table and the gathers'
//! indices uploaded once, and the matrices too where they fit (resident beside the key's
//! bases), else copied up a chunk of rows at a time each partition (streamed). Per
//! partition the input and the packed aux are copied up, the aux expanded, and a, b, c and
//! the A and B scalars computed there (`cuda/r1cs/packed.cuh` and `spmv.cuh`, launched by
//! `ffi/r1cs.rs`), so the host sends a few bits per variable of a bit-heavy circuit (32
//! bytes per value neither 0 nor 1), and the matrices' bytes when they are streamed.

use std::sync::Arc;

use blstrs::Scalar;
use cust::stream::Stream;

use crate::backend::cuda::ffi::r1cs::{wide, DeviceIndices, DeviceMatrix, DevicePacked, DeviceZ, R1csKernels, Which};
use crate::backend::cuda::ffi::{upload, DeviceVec, InFlight, Staging};
use crate::error::Result;
use crate::r1cs::R1cs;
use crate::synth::PackedAux;

/// Where the matrices are.
#[derive(Debug)]
enum Matrices {
    /// On the device, uploaded once.
    Resident([DeviceMatrix; 3]),
    /// On the host (the key's recording), copied up a chunk of rows at a time into rooms of
    /// `entries` entries and rows: one for matrices with 32-bit row starts, one for 64-bit
    /// ones, as the matrices need them.
    Streamed {
        host: Arc<R1cs>,
        entries: usize,
        narrow: Option<DeviceMatrix>,
        wide: Option<DeviceMatrix>,
        /// Per matrix, its chunks' first rows, then its rows' count.
        cuts: [Vec<usize>; 3],
    },
}

/// The recording on the device.
#[derive(Debug)]
pub(crate) struct DeviceR1cs {
    matrices: Matrices,
    table: DeviceVec<Scalar>,
    /// The A scalars' variables (every input, then the aux A uses) and the B scalars', as
    /// indices into z.
    a_vars: DeviceIndices,
    b_vars: DeviceIndices,
    /// The partition's public inputs (z's head; the aux are expanded into the L MSM's
    /// scalars).
    input: DeviceVec<Scalar>,
    /// The partition's aux, packed.
    packed: DevicePacked,
    inputs: usize,
    aux: usize,
    /// Device bytes it holds.
    bytes: usize,
}

/// Bytes of `r1cs`'s three matrices.
fn matrices_bytes(r1cs: &R1cs) -> usize {
    [&r1cs.a, &r1cs.b, &r1cs.c].iter().map(|m| m.bytes()).sum()
}

/// Device bytes of what `r1cs` keeps on the device whether its matrices are resident or
/// streamed: the table, the gathers' indices (the A scalars' with every input's too), the
/// input.
fn fixed_bytes(r1cs: &R1cs) -> usize {
    r1cs.bytes() - matrices_bytes(r1cs) + 4 * r1cs.inputs + std::mem::size_of::<Scalar>() * r1cs.inputs
}

/// Device bytes `r1cs` takes with its matrices resident.
pub(crate) fn device_bytes(r1cs: &R1cs) -> usize {
    fixed_bytes(r1cs) + matrices_bytes(r1cs)
}

/// Device bytes `r1cs` takes with its matrices streamed in chunks of `entries`.
pub(crate) fn streamed_bytes(r1cs: &R1cs, entries: usize) -> usize {
    let [narrow, wide] = widths(r1cs).map(usize::from);
    fixed_bytes(r1cs) + (narrow + wide) * 8 * entries + (narrow * 4 + wide * 8) * (entries + 1)
}

/// Whether some matrix has 32-bit row starts, and whether some has 64-bit ones.
fn widths(r1cs: &R1cs) -> [bool; 2] {
    let all = [&r1cs.a, &r1cs.b, &r1cs.c];
    [all.iter().any(|m| !wide(m)), all.iter().any(|m| wide(m))]
}

impl DeviceR1cs {
    /// Uploads `r1cs`, its matrices resident (the caller has checked that [`device_bytes`]
    /// fit).
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory), [`Error::Cuda`](crate::Error::Cuda).
    pub(crate) fn resident(r1cs: &R1cs, stream: &Stream, staging: &Staging) -> Result<Self> {
        let [a, b, c] = Which::ALL;
        let matrices = Matrices::Resident([
            DeviceMatrix::upload(r1cs, a, stream, staging)?,
            DeviceMatrix::upload(r1cs, b, stream, staging)?,
            DeviceMatrix::upload(r1cs, c, stream, staging)?,
        ]);
        Self::with(r1cs, matrices, device_bytes(r1cs), stream, staging)
    }

    /// Uploads `r1cs` but its matrices, which it streams in chunks of at most `entries`
    /// entries and rows (the caller has checked that [`streamed_bytes`] fit). `None` when a
    /// row alone has more entries.
    ///
    /// # Errors
    /// As [`resident`](Self::resident).
    pub(crate) fn streamed(
        r1cs: &Arc<R1cs>,
        entries: usize,
        stream: &Stream,
        staging: &Staging,
    ) -> Result<Option<Self>> {
        let (Some(a), Some(b), Some(c)) = (r1cs.a.chunks(entries), r1cs.b.chunks(entries), r1cs.c.chunks(entries))
        else {
            return Ok(None);
        };
        let [narrow, wide] = widths(r1cs);
        let matrices = Matrices::Streamed {
            host: Arc::clone(r1cs),
            entries,
            narrow: narrow.then(|| DeviceMatrix::chunk_room(entries, false)).transpose()?,
            wide: wide.then(|| DeviceMatrix::chunk_room(entries, true)).transpose()?,
            cuts: [a, b, c],
        };
        Self::with(r1cs, matrices, streamed_bytes(r1cs, entries), stream, staging).map(Some)
    }

    fn with(r1cs: &R1cs, matrices: Matrices, bytes: usize, stream: &Stream, staging: &Staging) -> Result<Self> {
        let inputs = r1cs.inputs as u32; // the recording has at most 2^32 variables
        let a_vars: Vec<u32> = (0..inputs).chain(r1cs.a_aux.iter().map(|&j| inputs + j)).collect();
        let z_len = r1cs.inputs + r1cs.aux;
        let table = DeviceVec::new(r1cs.table.len())?;
        upload(stream, staging, &r1cs.table, false, &table)?.wait()?;
        Ok(DeviceR1cs {
            matrices,
            table,
            a_vars: DeviceIndices::upload(&a_vars, z_len, stream, staging)?,
            b_vars: DeviceIndices::upload(&r1cs.b_vars, z_len, stream, staging)?,
            input: DeviceVec::new(r1cs.inputs)?,
            packed: DevicePacked::new(r1cs.aux)?,
            inputs: r1cs.inputs,
            aux: r1cs.aux,
            bytes,
        })
    }

    /// Device bytes it holds.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Entries (and rows) a chunk of the streamed matrices; `None` when they are resident.
    pub(crate) fn chunk_entries(&self) -> Option<usize> {
        match &self.matrices {
            Matrices::Resident(_) => None,
            Matrices::Streamed { entries, .. } => Some(*entries),
        }
    }

    /// Device bytes the values' room of a packed aux grows by to take `aux`.
    pub(crate) fn packed_growth(&self, aux: &PackedAux) -> usize {
        self.packed.growth(aux)
    }

    /// Enqueues the copies of a partition's `input` and packed `aux` on `stream` (whose
    /// earlier work it waits for when the values' room grows).
    pub(crate) fn upload_witness<'a>(
        &mut self,
        (stream, staging): (&'a Stream, &Staging),
        input: &'a [Scalar],
        aux: &'a PackedAux,
    ) -> Result<Vec<InFlight<'a>>> {
        let mut in_flight = vec![upload(stream, staging, input, false, &self.input)?];
        in_flight.extend(self.packed.upload((stream, staging), aux)?);
        Ok(in_flight)
    }

    /// Enqueues the aux expanded into `aux`, then abc[k] = (A, B, C)[k]·z over the first `m`
    /// elements (zero past the rows), and the A and B scalars into `a` and `b`, with z =
    /// input ‖ aux, the witness copied up on `stream` ([`upload_witness`](Self::upload_witness)).
    /// Streamed matrices' chunks are copied up on `stream` too, each after the products of
    /// the last; the copies are done when this returns.
    pub(crate) fn evaluate(
        &mut self,
        kernels: &R1csKernels,
        (stream, staging): (&Stream, &Staging),
        aux: &DeviceVec<Scalar>,
        (abc, m): (&[DeviceVec<Scalar>; 3], usize),
        [a, b]: [&DeviceVec<Scalar>; 2],
    ) -> Result<()> {
        kernels.packed_expand(stream, &self.packed, aux)?;
        let z = DeviceZ { input: &self.input, inputs: self.inputs, aux, len: self.inputs + self.aux };
        match &mut self.matrices {
            Matrices::Resident(matrices) => {
                for (matrix, out) in matrices.iter().zip(abc) {
                    kernels.spmv(stream, matrix, &self.table, z, (0, m), out)?;
                }
            }
            Matrices::Streamed { host, narrow, wide: wide_room, cuts, .. } => {
                let mut in_flight: Vec<InFlight<'_>> = vec![];
                for ((which, cuts), out) in Which::ALL.into_iter().zip(cuts.iter()).zip(abc) {
                    let matrix = which.of(host);
                    let room = if wide(matrix) { wide_room.as_mut() } else { narrow.as_mut() };
                    let room = room.expect("rooms made for every width the matrices have");
                    for (k, w) in cuts.windows(2).enumerate() {
                        let (first, end) = (w[0], w[1]);
                        // The last chunk pads the rest of the domain with zeros.
                        let n = if k + 2 == cuts.len() { m - first } else { end - first };
                        let chunk = (&**host, which);
                        let copies = kernels.spmv_chunk(
                            (stream, staging),
                            chunk,
                            first..end,
                            room,
                            &self.table,
                            z,
                            (first, n),
                            out,
                        )?;
                        in_flight.extend(copies);
                    }
                }
                in_flight.into_iter().try_for_each(InFlight::wait)?;
            }
        }
        kernels.gather(stream, &self.a_vars, z, a)?;
        kernels.gather(stream, &self.b_vars, z, b)
    }
}
