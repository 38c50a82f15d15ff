//! Typed launches of the recorded constraints' kernels (`cuda/r1cs/spmv.cuh`).

use blstrs::Scalar;
use cust::stream::Stream;

use super::{blocks, u32_arg, DevicePtr, DeviceVec};
use crate::backend::cuda::geometry::{R1CS_THREADS as THREADS, SPMV_LANES};
use crate::error::Result;

/// Row starts of a matrix on the device, as wide as the host's.
#[derive(Debug)]
pub(crate) enum DeviceStarts {
    Narrow(DeviceVec<u32>),
    Wide(DeviceVec<u64>),
}

impl DeviceStarts {
    /// Starts it holds room for.
    fn len(&self) -> usize {
        match self {
            DeviceStarts::Narrow(s) => s.len(),
            DeviceStarts::Wide(s) => s.len(),
        }
    }

    fn ptr(&self) -> DevicePtr {
        match self {
            DeviceStarts::Narrow(s) => s.ptr(),
            DeviceStarts::Wide(s) => s.ptr(),
        }
    }
}

/// One matrix on the device, or a chunk of its rows: `starts[..=rows]` are the rows' starts
/// as the whole matrix numbers its entries, `vars` and `coeffs` its entries from `starts[0]`.
#[derive(Debug)]
pub(crate) struct DeviceMatrix {
    pub(crate) starts: DeviceStarts,
    pub(crate) vars: DeviceVec<u32>,
    pub(crate) coeffs: DeviceVec<u32>,
}

impl DeviceMatrix {
    /// Rows of a whole matrix: one start fewer.
    pub(crate) fn rows(&self) -> usize {
        self.starts.len() - 1
    }
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

kernels! {
    /// The recorded constraints' kernels (`cuda/r1cs/spmv.cuh`).
    R1csKernels {
        /// out[i] = ⟨row i, z⟩ for i < rows, 0 up to n; row starts of 32 bits, the entries
        /// from the first start.
        fn g16_spmv_narrow(
            starts: DevicePtr, vars: DevicePtr, coeffs: DevicePtr, table: DevicePtr, input: DevicePtr,
            aux: DevicePtr, inputs: u32, rows: u32, n: u32, out: DevicePtr,
        );
        /// As `g16_spmv_narrow`, with row starts of 64 bits.
        fn g16_spmv_wide(
            starts: DevicePtr, vars: DevicePtr, coeffs: DevicePtr, table: DevicePtr, input: DevicePtr,
            aux: DevicePtr, inputs: u32, rows: u32, n: u32, out: DevicePtr,
        );
        /// out[i] = z[vars[i]] for i < n.
        fn g16_gather(vars: DevicePtr, n: u32, input: DevicePtr, aux: DevicePtr, inputs: u32, out: DevicePtr);
    }
}

impl R1csKernels {
    /// out[at..at + rows] = the first `rows` rows of `m` · z, out[at + rows..at + n] = 0,
    /// enqueued on `stream`.
    ///
    /// # Panics
    /// If `m` holds fewer than `rows` rows' starts, `n` is under `rows`, `out` is shorter than
    /// `at + n`, or z's vectors are shorter than its counts say.
    pub(crate) fn spmv(
        &self,
        stream: &Stream,
        (m, rows): (&DeviceMatrix, usize),
        table: &DeviceVec<Scalar>,
        z: Z<'_>,
        (at, n): (usize, usize),
        out: &DeviceVec<Scalar>,
    ) -> Result<()> {
        assert!(rows < m.starts.len() && rows <= n, "{rows} rows of {} starts into {n}", m.starts.len());
        assert!(at + n <= out.len(), "{n} elements from {at} of {}", out.len());
        assert!(z.input.len() >= z.inputs && z.aux.len() >= z.len - z.inputs, "z shorter than its counts");
        let grid = blocks(n * SPMV_LANES as usize, THREADS);
        let (vars, coeffs, table) = (m.vars.ptr(), m.coeffs.ptr(), table.ptr());
        let (input, aux, inputs, rows, n, out) =
            (z.input.ptr(), z.aux.ptr(), u32_arg(z.inputs), u32_arg(rows), u32_arg(n), out.ptr_at(at));
        let launch = match &m.starts {
            DeviceStarts::Narrow(_) => Self::g16_spmv_narrow,
            DeviceStarts::Wide(_) => Self::g16_spmv_wide,
        };
        let starts = m.starts.ptr();
        // SAFETY: the kernel is the one for the starts' width. The matrix was checked on read
        // (src/r1cs/file.rs) or built by recording, and `m` holds it whole or a chunk of its
        // rows as uploaded (src/backend/cuda/r1cs.rs): the starts rise, the entries from
        // starts[0] to starts[rows] are in `vars` and `coeffs`, every variable is below z's
        // length, every coefficient index below the table's; `out` holds n >= rows elements
        // from `at` (asserted), one for each row, SPMV_LANES threads per row.
        unsafe { launch(self, grid, THREADS, stream, starts, vars, coeffs, table, input, aux, inputs, rows, n, out) }
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
        let (input, aux, inputs) = (z.input.ptr(), z.aux.ptr(), u32_arg(z.inputs));
        // SAFETY: every index is below z's length (checked on read or built by recording); n
        // elements of `vars` and `out` (asserted), one thread each.
        unsafe {
            self.g16_gather(blocks(n, THREADS), THREADS, stream, vars.ptr(), u32_arg(n), input, aux, inputs, out.ptr())
        }
    }
}
