//! A key's recorded constraints on the device: the coefficients' table and the gathers'
//! indices uploaded once, and the matrices too where they fit (resident beside the key's
//! bases), else copied up a chunk of rows at a time each partition (streamed). Per
//! partition the input and aux are copied up, and a, b, c and the A and B scalars are
//! computed there (`cuda/r1cs/spmv.cuh`), so the host sends 32 bytes per variable, and the
//! matrices' bytes when they are streamed.

use std::sync::Arc;

use blstrs::Scalar;
use cust::stream::Stream;

use super::ffi::{upload, DeviceMatrix, DeviceStarts, DeviceVec, HostElem, InFlight, R1csKernels, Staging, Z};
use crate::error::Result;
use crate::r1cs::{Matrix, R1cs, RowStarts};

/// Where the matrices are.
#[derive(Debug)]
enum Matrices {
    /// On the device, uploaded once.
    Resident([DeviceMatrix; 3]),
    /// On the host (the key's recording), copied up a chunk of rows at a time through
    /// buffers of `entries` entries and rows: one for matrices with 32-bit row starts, one
    /// for 64-bit ones, as the matrices need them.
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
    a_vars: DeviceVec<u32>,
    b_vars: DeviceVec<u32>,
    /// Their lengths (a device vector holds at least one element).
    scalars: [usize; 2],
    /// The partition's public inputs (z's head; the aux go to the L MSM's scalars).
    pub(crate) input: DeviceVec<Scalar>,
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
    let narrow = |m: &Matrix| matches!(m.starts, RowStarts::Narrow(_));
    let all = [&r1cs.a, &r1cs.b, &r1cs.c];
    [all.iter().any(|m| narrow(m)), all.iter().any(|m| !narrow(m))]
}

/// Copies `src` into a new device vector through the staging chunks, waiting for the copy.
fn copy_up<T: HostElem>(src: &[T], stream: &Stream, staging: &Staging) -> Result<DeviceVec<T>> {
    let dst = DeviceVec::new(src.len())?;
    upload(stream, staging, src, false, &dst)?.wait()?;
    Ok(dst)
}

fn matrix(m: &Matrix, stream: &Stream, staging: &Staging) -> Result<DeviceMatrix> {
    let starts = match &m.starts {
        RowStarts::Narrow(s) => DeviceStarts::Narrow(copy_up(s, stream, staging)?),
        RowStarts::Wide(s) => DeviceStarts::Wide(copy_up(s, stream, staging)?),
    };
    Ok(DeviceMatrix { starts, vars: copy_up(&m.vars, stream, staging)?, coeffs: copy_up(&m.coeffs, stream, staging)? })
}

/// Buffers for chunks of `entries` entries and rows, with starts `wide` or not.
fn chunk_buffers(entries: usize, wide: bool) -> Result<DeviceMatrix> {
    let starts = match wide {
        false => DeviceStarts::Narrow(DeviceVec::new(entries + 1)?),
        true => DeviceStarts::Wide(DeviceVec::new(entries + 1)?),
    };
    Ok(DeviceMatrix { starts, vars: DeviceVec::new(entries)?, coeffs: DeviceVec::new(entries)? })
}

impl DeviceR1cs {
    /// Uploads `r1cs`, its matrices resident (the caller has checked that [`device_bytes`]
    /// fit).
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory), [`Error::Cuda`](crate::Error::Cuda).
    pub(crate) fn resident(r1cs: &R1cs, stream: &Stream, staging: &Staging) -> Result<Self> {
        let matrices = Matrices::Resident([
            matrix(&r1cs.a, stream, staging)?,
            matrix(&r1cs.b, stream, staging)?,
            matrix(&r1cs.c, stream, staging)?,
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
            narrow: narrow.then(|| chunk_buffers(entries, false)).transpose()?,
            wide: wide.then(|| chunk_buffers(entries, true)).transpose()?,
            cuts: [a, b, c],
        };
        Self::with(r1cs, matrices, streamed_bytes(r1cs, entries), stream, staging).map(Some)
    }

    fn with(r1cs: &R1cs, matrices: Matrices, bytes: usize, stream: &Stream, staging: &Staging) -> Result<Self> {
        let inputs = r1cs.inputs as u32; // the recording has at most 2^32 variables
        let a_vars: Vec<u32> = (0..inputs).chain(r1cs.a_aux.iter().map(|&j| inputs + j)).collect();
        Ok(DeviceR1cs {
            matrices,
            table: copy_up(&r1cs.table, stream, staging)?,
            scalars: [a_vars.len(), r1cs.b_vars.len()],
            a_vars: copy_up(&a_vars, stream, staging)?,
            b_vars: copy_up(&r1cs.b_vars, stream, staging)?,
            input: DeviceVec::new(r1cs.inputs)?,
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

    /// Enqueues abc[k] = (A, B, C)[k]·z over the first `m` elements (zero past the rows),
    /// and the A and B scalars into `a` and `b`, with z = [`input`](Self::input) ‖ `aux`,
    /// both already copied up on `stream`. Streamed matrices' chunks are copied up on
    /// `stream` too, each after the products of the last; the copies are done when this
    /// returns.
    pub(crate) fn evaluate(
        &self,
        kernels: &R1csKernels,
        stream: &Stream,
        staging: &Staging,
        aux: &DeviceVec<Scalar>,
        (abc, m): (&[DeviceVec<Scalar>; 3], usize),
        [a, b]: [&DeviceVec<Scalar>; 2],
    ) -> Result<()> {
        let z = Z { input: &self.input, inputs: self.inputs, aux, len: self.inputs + self.aux };
        match &self.matrices {
            Matrices::Resident(matrices) => {
                for (matrix, out) in matrices.iter().zip(abc) {
                    kernels.spmv(stream, (matrix, matrix.rows()), &self.table, z, (0, m), out)?;
                }
            }
            Matrices::Streamed { host, narrow, wide, cuts, .. } => {
                let mut in_flight = vec![];
                for ((matrix, cuts), out) in [&host.a, &host.b, &host.c].into_iter().zip(cuts).zip(abc) {
                    for (k, w) in cuts.windows(2).enumerate() {
                        let (first, end) = (w[0], w[1]);
                        // The last chunk pads the rest of the domain with zeros.
                        let n = if k + 2 == cuts.len() { m - first } else { end - first };
                        let buffers = match &matrix.starts {
                            RowStarts::Narrow(_) => narrow.as_ref(),
                            RowStarts::Wide(_) => wide.as_ref(),
                        };
                        let buffers = buffers.expect("buffers made for every width the matrices have");
                        in_flight.extend(upload_chunk(stream, staging, matrix, first..end, buffers)?);
                        kernels.spmv(stream, (buffers, end - first), &self.table, z, (first, n), out)?;
                    }
                }
                in_flight.into_iter().try_for_each(InFlight::wait)?;
            }
        }
        kernels.gather(stream, &self.a_vars, self.scalars[0], z, a)?;
        kernels.gather(stream, &self.b_vars, self.scalars[1], z, b)
    }
}

/// Enqueues the copies of `matrix`'s rows `rows` (their starts and their entries) into
/// `buffers`.
fn upload_chunk<'a>(
    stream: &'a Stream,
    staging: &Staging,
    matrix: &'a Matrix,
    rows: std::ops::Range<usize>,
    buffers: &DeviceMatrix,
) -> Result<[InFlight<'a>; 3]> {
    let entries = matrix.starts.entries(rows.clone());
    let starts = match (&matrix.starts, &buffers.starts) {
        (RowStarts::Narrow(s), DeviceStarts::Narrow(d)) => {
            upload(stream, staging, &s[rows.start..=rows.end], false, d)?
        }
        (RowStarts::Wide(s), DeviceStarts::Wide(d)) => upload(stream, staging, &s[rows.start..=rows.end], false, d)?,
        _ => unreachable!("buffers of the matrix's width"),
    };
    let vars = upload(stream, staging, &matrix.vars[entries.clone()], false, &buffers.vars)?;
    Ok([starts, vars, upload(stream, staging, &matrix.coeffs[entries], false, &buffers.coeffs)?])
}
