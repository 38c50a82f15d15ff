//! A key's recorded constraints on the device, resident beside its bases: the matrices, the
//! coefficients' table and the gathers' indices, uploaded once. Per partition the input and
//! aux are copied up, and a, b, c and the A and B scalars are computed there
//! (`cuda/r1cs/spmv.cuh`), so the host sends 32 bytes a variable.

use blstrs::Scalar;
use cust::stream::Stream;

use super::ffi::{upload, DeviceMatrix, DeviceStarts, DeviceVec, HostElem, R1csKernels, Staging, Z};
use crate::error::Result;
use crate::r1cs::{Matrix, R1cs, RowStarts};

/// The recording on the device.
#[derive(Debug)]
pub(crate) struct DeviceR1cs {
    matrices: [DeviceMatrix; 3],
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

/// Device bytes `r1cs` takes once uploaded.
pub(crate) fn device_bytes(r1cs: &R1cs) -> usize {
    r1cs.bytes() + 4 * r1cs.inputs + std::mem::size_of::<Scalar>() * r1cs.inputs
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

impl DeviceR1cs {
    /// Uploads `r1cs` (the caller has checked that [`device_bytes`] fit).
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory), [`Error::Cuda`](crate::Error::Cuda).
    pub(crate) fn upload(r1cs: &R1cs, stream: &Stream, staging: &Staging) -> Result<Self> {
        let inputs = r1cs.inputs as u32; // the recording has at most 2^32 variables
        let a_vars: Vec<u32> = (0..inputs).chain(r1cs.a_aux.iter().map(|&j| inputs + j)).collect();
        let scalars = [a_vars.len(), r1cs.b_vars.len()];
        Ok(DeviceR1cs {
            matrices: [
                matrix(&r1cs.a, stream, staging)?,
                matrix(&r1cs.b, stream, staging)?,
                matrix(&r1cs.c, stream, staging)?,
            ],
            table: copy_up(&r1cs.table, stream, staging)?,
            a_vars: copy_up(&a_vars, stream, staging)?,
            b_vars: copy_up(&r1cs.b_vars, stream, staging)?,
            scalars,
            input: DeviceVec::new(r1cs.inputs)?,
            inputs: r1cs.inputs,
            aux: r1cs.aux,
            bytes: device_bytes(r1cs),
        })
    }

    /// Device bytes it holds.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Enqueues abc[k] = (A, B, C)[k]·z over the first `m` elements (zero past the rows),
    /// and the A and B scalars into `a` and `b`, with z = [`input`](Self::input) ‖ `aux`,
    /// both already copied up on `stream`.
    pub(crate) fn evaluate(
        &self,
        kernels: &R1csKernels,
        stream: &Stream,
        aux: &DeviceVec<Scalar>,
        (abc, m): (&[DeviceVec<Scalar>; 3], usize),
        [a, b]: [&DeviceVec<Scalar>; 2],
    ) -> Result<()> {
        let z = Z { input: &self.input, inputs: self.inputs, aux, len: self.inputs + self.aux };
        for (matrix, out) in self.matrices.iter().zip(abc) {
            kernels.spmv(stream, matrix, &self.table, z, m, out)?;
        }
        kernels.gather(stream, &self.a_vars, self.scalars[0], z, a)?;
        kernels.gather(stream, &self.b_vars, self.scalars[1], z, b)
    }
}
