//! Typed launches of the recorded constraints' kernels (`cuda/r1cs/spmv.cuh`).

use blstrs::Scalar;
use cust::stream::Stream;

use super::{blocks, launch, u32_arg, Arg, DeviceVec, Fatbin, Function};
use crate::backend::cuda::geometry::{R1CS_THREADS as THREADS, SPMV_LANES};
use crate::error::Result;

/// Row starts of a matrix on the device, as wide as the host's.
#[derive(Debug)]
pub(crate) enum DeviceStarts {
    Narrow(DeviceVec<u32>),
    Wide(DeviceVec<u64>),
}

impl DeviceStarts {
    /// Rows of the matrix: one start fewer.
    fn rows(&self) -> usize {
        match self {
            DeviceStarts::Narrow(s) => s.len() - 1,
            DeviceStarts::Wide(s) => s.len() - 1,
        }
    }
}

/// One matrix on the device.
#[derive(Debug)]
pub(crate) struct DeviceMatrix {
    pub(crate) starts: DeviceStarts,
    pub(crate) vars: DeviceVec<u32>,
    pub(crate) coeffs: DeviceVec<u32>,
}

/// z = input ‖ aux on the device, as two vectors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Z<'a> {
    pub(crate) input: &'a DeviceVec<Scalar>,
    pub(crate) inputs: usize,
    pub(crate) aux: &'a DeviceVec<Scalar>,
    /// Variables z has: every index of the matrices and gathers is below this.
    pub(crate) len: usize,
}

/// The kernels, looked up once.
#[derive(Debug)]
pub(crate) struct R1csKernels {
    spmv_narrow: Function,
    spmv_wide: Function,
    gather: Function,
}

impl R1csKernels {
    pub(crate) fn new(fatbin: &Fatbin) -> Result<Self> {
        Ok(R1csKernels {
            spmv_narrow: fatbin.function("g16_spmv_narrow")?,
            spmv_wide: fatbin.function("g16_spmv_wide")?,
            gather: fatbin.function("g16_gather")?,
        })
    }

    /// out[..rows] = matrix · z, out[rows..n] = 0, enqueued on `stream`.
    ///
    /// # Panics
    /// If `out` is shorter than `n` or than the rows, or z's vectors are shorter than its
    /// counts say.
    pub(crate) fn spmv(
        &self,
        stream: &Stream,
        m: &DeviceMatrix,
        table: &DeviceVec<Scalar>,
        z: Z<'_>,
        n: usize,
        out: &DeviceVec<Scalar>,
    ) -> Result<()> {
        let rows = m.starts.rows();
        assert!(rows <= n && n <= out.len(), "{rows} rows into {n} of {} elements", out.len());
        assert!(z.input.len() >= z.inputs && z.aux.len() >= z.len - z.inputs, "z shorter than its counts");
        let (f, starts) = match &m.starts {
            DeviceStarts::Narrow(s) => (self.spmv_narrow, s.ptr()),
            DeviceStarts::Wide(s) => (self.spmv_wide, s.ptr()),
        };
        let args = [
            Arg::Ptr(starts),
            Arg::Ptr(m.vars.ptr()),
            Arg::Ptr(m.coeffs.ptr()),
            Arg::Ptr(table.ptr()),
            Arg::Ptr(z.input.ptr()),
            Arg::Ptr(z.aux.ptr()),
            u32_arg(z.inputs),
            u32_arg(rows),
            u32_arg(n),
            Arg::Ptr(out.ptr()),
        ];
        // SAFETY: arguments as g16_spmv_{narrow,wide} declares them (starts of the matching
        // width); the matrix was checked on read (src/r1cs/file.rs) or built by recording:
        // its starts rise to its entries, every variable is below z's length, every
        // coefficient index below the table's; `out` holds n >= rows elements (asserted), one
        // for each row, SPMV_LANES threads a row (whole warps: THREADS is a multiple of 32).
        unsafe { launch(f, blocks(n * SPMV_LANES as usize, THREADS), THREADS, stream, &args) }
    }

    /// out[i] = z[vars[i]] for i < vars' length, enqueued on `stream`.
    ///
    /// # Panics
    /// If `out` is shorter than `vars`.
    pub(crate) fn gather(
        &self,
        stream: &Stream,
        vars: &DeviceVec<u32>,
        n: usize,
        z: Z<'_>,
        out: &DeviceVec<Scalar>,
    ) -> Result<()> {
        assert!(n <= vars.len() && n <= out.len(), "gather of {n} from {} into {}", vars.len(), out.len());
        let args = [
            Arg::Ptr(vars.ptr()),
            u32_arg(n),
            Arg::Ptr(z.input.ptr()),
            Arg::Ptr(z.aux.ptr()),
            u32_arg(z.inputs),
            Arg::Ptr(out.ptr()),
        ];
        // SAFETY: arguments as g16_gather declares them; every index is below z's length
        // (checked on read or built by recording); n elements of `vars` and `out` (asserted).
        unsafe { launch(self.gather, blocks(n, THREADS), THREADS, stream, &args) }
    }
}
