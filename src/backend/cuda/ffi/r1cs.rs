//! The launches of the recorded constraints' kernels (`cuda/r1cs/spmv.cuh`, `packed.cuh`),
//! and the device copies they read, which only this file makes: a matrix (or a chunk of its
//! rows) copied from a recording's own, whose invariants (every variable indexes z, every
//! coefficient the table; [`R1cs`]) bound every index the kernels read, and a packed aux
//! copied from a [`PackedAux`], whose ranks and bitmaps count its values.

use blstrs::Scalar;
use cust::stream::Stream;

use super::copies::{upload, upload_at, InFlight, Staging};
use super::geometry::{PACKED_GROUP, PACKED_THREADS, R1CS_THREADS as THREADS, SPMV_LANES};
use super::launch::{blocks, u32_arg};
use super::memory::{DevicePtr, DevicePtrMut, DeviceVec, HostElem};
use crate::error::Result;
use crate::r1cs::{Matrix, Part, Piece, R1cs, RowStarts};
use crate::synth::packed::{self, PackedAux};

const _: () = assert!(PACKED_GROUP as usize == packed::GROUP, "a rank per group on both sides");

kernels! {
    /// The recorded constraints' kernels (`cuda/r1cs/spmv.cuh`).
    R1csKernels {
        /// out[i] = ⟨row i, z⟩ for i < rows, 0 up to n; row starts of 32 bits, the entries
        /// from the first start; the aux that are bits read from the packed aux' bitmaps.
        fn g16_spmv_narrow(
            starts: DevicePtr<u32>, vars: DevicePtr<u32>, coeffs: DevicePtr<u32>, table: DevicePtr<Scalar>,
            input: DevicePtr<Scalar>, aux: DevicePtr<Scalar>, ones: DevicePtr<u64>, others: DevicePtr<u64>, inputs: u32,
            rows: u32, n: u32, out: DevicePtrMut<Scalar>,
        );
        /// As `g16_spmv_narrow`, with row starts of 64 bits.
        fn g16_spmv_wide(
            starts: DevicePtr<u64>, vars: DevicePtr<u32>, coeffs: DevicePtr<u32>, table: DevicePtr<Scalar>,
            input: DevicePtr<Scalar>, aux: DevicePtr<Scalar>, ones: DevicePtr<u64>, others: DevicePtr<u64>, inputs: u32,
            rows: u32, n: u32, out: DevicePtrMut<Scalar>,
        );
        /// out[i] = z[vars[i]] for i < n; the aux that are bits written from the packed aux'
        /// bitmaps.
        fn g16_gather(
            vars: DevicePtr<u32>, n: u32, input: DevicePtr<Scalar>, aux: DevicePtr<Scalar>, ones: DevicePtr<u64>,
            others: DevicePtr<u64>, inputs: u32, out: DevicePtrMut<Scalar>,
        );
        /// aux[i] for i < len, from a packed aux (`cuda/r1cs/packed.cuh`).
        fn g16_packed_expand(
            ones: DevicePtr<u64>, others: DevicePtr<u64>, ranks: DevicePtr<u32>, values: DevicePtr<Scalar>, len: u32,
            aux: DevicePtrMut<Scalar>,
        );
    }
}

/// Row starts of a matrix on the device, as wide as the host's.
#[derive(Debug)]
enum DeviceStarts {
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
}

/// Which of a recording's three matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    A,
    B,
    C,
}

impl Which {
    pub(crate) const ALL: [Which; 3] = [Which::A, Which::B, Which::C];

    /// The matrix of `r1cs`.
    pub(crate) fn of(self, r1cs: &R1cs) -> &Matrix {
        match self {
            Which::A => &r1cs.a,
            Which::B => &r1cs.b,
            Which::C => &r1cs.c,
        }
    }
}

/// One matrix of a recording on the device, whole, or room for a chunk of its rows:
/// `starts[..=rows]` are the rows' starts as the whole matrix numbers its entries, `vars` and
/// `coeffs` its entries from `starts[0]`.
#[derive(Debug)]
pub(crate) struct DeviceMatrix {
    starts: DeviceStarts,
    vars: DeviceVec<u32>,
    coeffs: DeviceVec<u32>,
    /// Rows it holds (zero in chunk room no chunk was copied into).
    rows: usize,
    /// Every variable it holds is below this (z's length), every coefficient below
    /// `coeffs_below` (the table's): what the recording it was copied from guarantees.
    vars_below: usize,
    coeffs_below: usize,
}

/// Copies `src` into a new device vector through the staging chunks, waiting for the copy.
fn copy_up<T: HostElem>(src: &[T], stream: &Stream, staging: &Staging) -> Result<DeviceVec<T>> {
    let dst = DeviceVec::new(src.len())?;
    upload(stream, staging, src, false, &dst)?.wait()?;
    Ok(dst)
}

impl DeviceMatrix {
    /// Matrix `which` of `r1cs`, whole, uploaded through the staging chunks.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory),
    /// [`Error::Cuda`](crate::Error::Cuda).
    pub(crate) fn upload(r1cs: &R1cs, which: Which, stream: &Stream, staging: &Staging) -> Result<Self> {
        let m = which.of(r1cs);
        let starts = match &m.starts {
            RowStarts::Narrow(s) => DeviceStarts::Narrow(copy_up(s, stream, staging)?),
            RowStarts::Wide(s) => DeviceStarts::Wide(copy_up(s, stream, staging)?),
        };
        Ok(DeviceMatrix {
            starts,
            vars: copy_up(&m.vars, stream, staging)?,
            coeffs: copy_up(&m.coeffs, stream, staging)?,
            rows: m.rows(),
            vars_below: r1cs.inputs + r1cs.aux,
            coeffs_below: r1cs.table.len(),
        })
    }

    /// Room for chunks of up to `entries` entries and rows, with starts `wide` or not.
    ///
    /// # Errors
    /// As [`upload`](Self::upload).
    pub(crate) fn chunk_room(entries: usize, wide: bool) -> Result<Self> {
        let starts = match wide {
            false => DeviceStarts::Narrow(DeviceVec::new(entries + 1)?),
            true => DeviceStarts::Wide(DeviceVec::new(entries + 1)?),
        };
        let (vars, coeffs) = (DeviceVec::new(entries)?, DeviceVec::new(entries)?);
        Ok(DeviceMatrix { starts, vars, coeffs, rows: 0, vars_below: 0, coeffs_below: 0 })
    }

    /// Enqueues the copies of matrix `which`'s rows `rows` of `r1cs` (their starts and their
    /// entries) into this room.
    ///
    /// # Panics
    /// If the room is of the other width, or holds fewer starts or entries than the chunk.
    fn load<'a>(
        &mut self,
        stream: &'a Stream,
        staging: &Staging,
        (r1cs, which): (&'a R1cs, Which),
        rows: std::ops::Range<usize>,
    ) -> Result<[InFlight<'a>; 3]> {
        let m = which.of(r1cs);
        let entries = m.starts.entries(rows.clone());
        let starts = match (&m.starts, &self.starts) {
            (RowStarts::Narrow(s), DeviceStarts::Narrow(d)) => {
                upload(stream, staging, &s[rows.start..=rows.end], false, d)?
            }
            (RowStarts::Wide(s), DeviceStarts::Wide(d)) => {
                upload(stream, staging, &s[rows.start..=rows.end], false, d)?
            }
            _ => panic!("chunk room of the other row starts' width"),
        };
        let vars = upload(stream, staging, &m.vars[entries.clone()], false, &self.vars)?;
        let coeffs = upload(stream, staging, &m.coeffs[entries], false, &self.coeffs)?;
        (self.rows, self.vars_below, self.coeffs_below) = (rows.len(), r1cs.inputs + r1cs.aux, r1cs.table.len());
        Ok([starts, vars, coeffs])
    }
}

/// Room for a matrix of a recording's file, filled in the file's order with the pieces
/// reading it checked ([`Piece`]): its starts, then its entries' variables, then their
/// coefficients. It becomes a [`DeviceMatrix`] once full and its last start is the entries'
/// count, every index the kernels read then bounded by what the pieces said.
#[derive(Debug)]
pub(crate) struct MatrixRoom {
    matrix: DeviceMatrix,
    /// Starts, variables and coefficients filled so far.
    filled: [usize; 3],
    /// The last start filled.
    last_start: u64,
    entries: usize,
}

impl MatrixRoom {
    /// Room for `rows` rows and `entries` entries, the starts `wide` or not.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory).
    pub(crate) fn new(rows: usize, entries: usize, wide: bool) -> Result<Self> {
        let starts = match wide {
            false => DeviceStarts::Narrow(DeviceVec::new(rows + 1)?),
            true => DeviceStarts::Wide(DeviceVec::new(rows + 1)?),
        };
        let (vars, coeffs) = (DeviceVec::new(entries)?, DeviceVec::new(entries)?);
        let matrix = DeviceMatrix { starts, vars, coeffs, rows: 0, vars_below: 0, coeffs_below: 0 };
        Ok(MatrixRoom { matrix, filled: [0; 3], last_start: 0, entries })
    }

    /// Copies `piece` up (through the staging chunks), after the pieces before it.
    ///
    /// # Panics
    /// If it does not follow them, or does not fit.
    pub(crate) fn fill(&mut self, piece: Piece<'_>, stream: &Stream, staging: &Staging) -> Result<()> {
        let (m, first, below) = (&mut self.matrix, piece.first(), piece.below() as usize);
        let (k, len) = match piece.part() {
            Part::Narrow(s) => (0, s.len()),
            Part::Wide(s) => (0, s.len()),
            Part::Vars(v) => (1, v.len()),
            Part::Coeffs(c) => (2, c.len()),
        };
        assert_eq!(first, self.filled[k], "pieces of a matrix in order");
        match (piece.part(), &m.starts) {
            (Part::Narrow(s), DeviceStarts::Narrow(d)) => upload_at(stream, staging, s, false, (d, first))?.wait()?,
            (Part::Wide(s), DeviceStarts::Wide(d)) => upload_at(stream, staging, s, false, (d, first))?.wait()?,
            (Part::Vars(v), _) => upload_at(stream, staging, v, false, (&m.vars, first))?.wait()?,
            (Part::Coeffs(c), _) => upload_at(stream, staging, c, false, (&m.coeffs, first))?.wait()?,
            _ => panic!("row starts of the other width than the room's"),
        }
        match piece.part() {
            Part::Narrow(s) => self.last_start = s.last().map_or(self.last_start, |&l| u64::from(l)),
            Part::Wide(s) => self.last_start = s.last().copied().unwrap_or(self.last_start),
            Part::Vars(_) => m.vars_below = m.vars_below.max(below),
            Part::Coeffs(_) => m.coeffs_below = m.coeffs_below.max(below),
        }
        self.filled[k] += len;
        Ok(())
    }

    /// The matrix, once every start and entry is filled.
    ///
    /// # Panics
    /// If some are not, or the last start is not the entries' count.
    pub(crate) fn finish(mut self) -> DeviceMatrix {
        let starts = self.matrix.starts.len();
        let full = [starts, self.entries, self.entries];
        assert!(
            self.filled == full && self.last_start == self.entries as u64,
            "a matrix filled {:?} of {full:?}",
            self.filled
        );
        self.matrix.rows = starts - 1;
        self.matrix
    }
}

/// Whether a matrix's row starts are 64-bit (it has 2^32 entries or more).
pub(crate) fn wide(m: &Matrix) -> bool {
    matches!(m.starts, RowStarts::Wide(_))
}

/// The indices of a gather on the device, each below `below` (z's length).
#[derive(Debug)]
pub(crate) struct DeviceIndices {
    vars: DeviceVec<u32>,
    len: usize,
    below: usize,
}

impl DeviceIndices {
    /// Uploads `vars`, every one of which must be below `below`.
    ///
    /// # Panics
    /// If one is not (a recording's own indices always are).
    ///
    /// # Errors
    /// As [`DeviceMatrix::upload`].
    pub(crate) fn upload(vars: &[u32], below: usize, stream: &Stream, staging: &Staging) -> Result<Self> {
        assert!(vars.iter().all(|&v| (v as usize) < below), "a gather index past z's {below} variables");
        Ok(DeviceIndices { vars: copy_up(vars, stream, staging)?, len: vars.len(), below })
    }
}

/// A partition's packed aux on the device: its bitmaps and ranks; its values go to a buffer
/// the caller lends (free until the expansion has read them: the C product's output), or,
/// when the aux outnumber it, to a room of its own made with the rest, so that nothing is
/// allocated per partition.
#[derive(Debug)]
pub(crate) struct DevicePacked {
    ones: DeviceVec<u64>,
    others: DeviceVec<u64>,
    ranks: DeviceVec<u32>,
    values: DeviceVec<Scalar>,
    /// Values of the last packed aux copied up; each value the expansion reads (ranks and
    /// bitmaps count them) is below its count of others, which its values' buffer holds.
    len: usize,
    /// Whether the last packed aux's values went to the lent buffer.
    lent: bool,
}

impl DevicePacked {
    /// Values of its own room for a packed aux of `capacity` values beside a lent buffer of
    /// `lent`: none when the lent one holds them all.
    pub(crate) fn own_values(capacity: usize, lent: usize) -> usize {
        if capacity > lent {
            capacity
        } else {
            0
        }
    }

    /// Room for a packed aux of `capacity` values whose values are lent buffers of `lent`
    /// values, none of its values yet.
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory).
    pub(crate) fn new(capacity: usize, lent: usize) -> Result<Self> {
        let [ones, others, ranks] = packed::bitmap_bytes(capacity);
        Ok(DevicePacked {
            ones: DeviceVec::new(ones / 8)?,
            others: DeviceVec::new(others / 8)?,
            ranks: DeviceVec::new(ranks / 4)?,
            values: DeviceVec::new(Self::own_values(capacity, lent))?,
            len: 0,
            lent: false,
        })
    }

    /// Enqueues the copies of `p` on `stream`, its values into `lent` when they fit, else into
    /// its own room.
    ///
    /// # Panics
    /// If `p` holds more values than the bitmaps were made for, or its values fit neither
    /// `lent` nor the room (a `lent` shorter than the one it was made for).
    pub(crate) fn upload<'a>(
        &mut self,
        (stream, staging): (&'a Stream, &Staging),
        p: &'a PackedAux,
        lent: &DeviceVec<Scalar>,
    ) -> Result<Vec<InFlight<'a>>> {
        let others = p.census().others;
        self.lent = others <= lent.len();
        assert!(self.lent || others <= self.values.len(), "{others} values beside a lent {}", lent.len());
        let direct = p.bitmaps_pinned();
        let mut in_flight = vec![
            upload(stream, staging, p.ones(), direct, &self.ones)?,
            upload(stream, staging, p.others(), direct, &self.others)?,
            upload(stream, staging, p.ranks(), direct, &self.ranks)?,
        ];
        let values = if self.lent { lent } else { &self.values };
        for (j, chunk) in p.value_chunks().iter().enumerate() {
            in_flight.push(upload_at(stream, staging, chunk, chunk.is_pinned(), (values, j * p.chunk_len()))?);
        }
        self.len = p.len();
        Ok(in_flight)
    }
}

/// An MSM's scalars as variables of z = input ‖ aux, the aux packed: scalar i is z[vars[i]]
/// (the A and B scalars, gathered), or aux i where there are no `vars` (the L scalars, the
/// aux themselves). The MSMs' split (`cuda/msm/split.cuh`) classes those the bitmaps call 0
/// or 1 without reading them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackedVars<'a> {
    packed: &'a DevicePacked,
    inputs: usize,
    vars: Option<&'a DeviceIndices>,
}

impl<'a> PackedVars<'a> {
    /// The scalars that are `vars` of z (or the aux), whose aux `packed` holds.
    pub(crate) fn new(packed: &'a DevicePacked, inputs: usize, vars: Option<&'a DeviceIndices>) -> Self {
        PackedVars { packed, inputs, vars }
    }

    /// The split's arguments for scalars `range`: the bitmaps, the inputs' count, the
    /// variables from the range's start (null for the aux) and the index into z of the
    /// range's first aux.
    ///
    /// # Panics
    /// If the range passes the variables (or the aux), or they index past the bitmaps' aux.
    pub(crate) fn split_args(
        &self,
        range: std::ops::Range<usize>,
    ) -> (DevicePtr<u64>, DevicePtr<u64>, u32, DevicePtr<u32>, u32) {
        let (bits, inputs) = ((self.packed.ones.ptr(), self.packed.others.ptr()), self.inputs);
        let (vars, first) = match self.vars {
            Some(v) => {
                assert!(range.end <= v.len && v.below <= inputs + self.packed.len, "variables {range:?} of {v:?}");
                (v.vars.at(range.start), 0)
            }
            None => {
                assert!(range.end <= self.packed.len, "aux {range:?} of {}", self.packed.len);
                (DevicePtr::null(), u32_arg(inputs + range.start))
            }
        };
        (bits.0, bits.1, u32_arg(inputs), vars, first)
    }
}

/// z = input ‖ aux on the device, as two vectors, and the packed aux the aux were expanded
/// from, whose bitmaps say which aux are 0 or 1.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeviceZ<'a> {
    pub(crate) input: &'a DeviceVec<Scalar>,
    pub(crate) inputs: usize,
    pub(crate) aux: &'a DeviceVec<Scalar>,
    pub(crate) packed: &'a DevicePacked,
    /// Variables z has: every index the products and gathers read must be below this.
    pub(crate) len: usize,
}

impl DeviceZ<'_> {
    /// Asserts that its vectors and bitmaps hold what its counts say, and that indices below
    /// `below` are inside it.
    fn check(&self, below: usize) {
        let aux = self.len - self.inputs;
        assert!(
            self.input.len() >= self.inputs && self.aux.len() >= aux && self.packed.len >= aux,
            "z shorter than its counts"
        );
        assert!(below <= self.len, "indices up to {below} into z of {}", self.len);
    }
}

impl R1csKernels {
    /// out[at..at + rows] = `m`'s rows · z, out[at + rows..at + n] = 0, enqueued on `stream`.
    ///
    /// # Panics
    /// If `n` is under `m`'s rows, `out` is shorter than `at + n`, `table` shorter than the
    /// recording's, or z than its counts or the recording's variables.
    pub(crate) fn spmv(
        &self,
        stream: &Stream,
        m: &DeviceMatrix,
        table: &DeviceVec<Scalar>,
        z: DeviceZ<'_>,
        (at, n): (usize, usize),
        out: &DeviceVec<Scalar>,
    ) -> Result<()> {
        let rows = m.rows;
        assert!(rows < m.starts.len() && rows <= n, "{rows} rows of {} starts into {n}", m.starts.len());
        assert!(at + n <= out.len(), "{n} elements from {at} of {}", out.len());
        assert!(m.coeffs_below <= table.len(), "coefficients up to {} of a table of {}", m.coeffs_below, table.len());
        z.check(m.vars_below);
        let grid = blocks(n * SPMV_LANES as usize, THREADS);
        let (vars, coeffs, table, input, aux) = (m.vars.ptr(), m.coeffs.ptr(), table.ptr(), z.input.ptr(), z.aux.ptr());
        let (ones, others) = (z.packed.ones.ptr(), z.packed.others.ptr());
        let (inputs, rows, n, out) = (u32_arg(z.inputs), u32_arg(rows), u32_arg(n), out.at_mut(at));
        // SAFETY: the kernel is the one for the starts' width. `m` holds a recording's matrix,
        // or a chunk of its rows, as copied (`upload`, `load`): the starts rise (the
        // recording's invariant), its entries from starts[0] to starts[rows] are in `vars` and
        // `coeffs`, every variable is below z's length and every coefficient index below the
        // table's (asserted against the bounds the recording gave), and the packed aux' bitmaps
        // hold a bit for every aux (asserted: its length); `out` holds n >= rows elements
        // from `at` (asserted), one for each row, SPMV_LANES threads per row.
        unsafe {
            macro_rules! spmv {
                ($kernel:ident, $starts:expr) => {
                    self.$kernel(
                        grid, THREADS, stream, $starts, vars, coeffs, table, input, aux, ones, others, inputs, rows, n,
                        out,
                    )
                };
            }
            match &m.starts {
                DeviceStarts::Narrow(s) => spmv!(g16_spmv_narrow, s.ptr()),
                DeviceStarts::Wide(s) => spmv!(g16_spmv_wide, s.ptr()),
            }
        }
    }

    /// Copies rows `rows` of matrix `which` of `r1cs` into `room` and enqueues their products
    /// as [`spmv`](Self::spmv) does, from `at`, padding with zeros to `n`. The copies read
    /// the recording until the returned guards are waited for.
    ///
    /// # Panics
    /// As [`spmv`](Self::spmv), or if the chunk does not fit `room`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn spmv_chunk<'a>(
        &self,
        (stream, staging): (&'a Stream, &Staging),
        (r1cs, which): (&'a R1cs, Which),
        rows: std::ops::Range<usize>,
        room: &mut DeviceMatrix,
        table: &DeviceVec<Scalar>,
        z: DeviceZ<'_>,
        (at, n): (usize, usize),
        out: &DeviceVec<Scalar>,
    ) -> Result<[InFlight<'a>; 3]> {
        let copies = room.load(stream, staging, (r1cs, which), rows)?;
        self.spmv(stream, room, table, z, (at, n), out)?;
        Ok(copies)
    }

    /// aux[..len] expanded from the packed aux last copied into `packed`, enqueued on
    /// `stream`.
    ///
    /// # Panics
    /// If `aux` is shorter than it.
    pub(crate) fn packed_expand(
        &self,
        stream: &Stream,
        (packed, lent): (&DevicePacked, &DeviceVec<Scalar>),
        aux: &DeviceVec<Scalar>,
    ) -> Result<()> {
        let len = packed.len;
        assert!(len <= aux.len(), "{len} values into {}", aux.len());
        let groups = len.div_ceil(packed::GROUP);
        let values = if packed.lent { lent.ptr() } else { packed.values.ptr() };
        let (ones, others, ranks) = (packed.ones.ptr(), packed.others.ptr(), packed.ranks.ptr());
        // SAFETY: copied from a PackedAux of `len` values (`upload`): its bitmaps hold a word
        // per 64 values and its ranks one per group, one block each; every value a block
        // reads (its group's rank plus the others before it) is below the others' count,
        // which the buffer its values went to holds (`lent`, the one `upload` was lent: the
        // caller's contract, or its own room); aux holds `len` (asserted).
        unsafe {
            self.g16_packed_expand(
                u32_arg(groups),
                PACKED_THREADS,
                stream,
                ones,
                others,
                ranks,
                values,
                u32_arg(len),
                aux.ptr_mut(),
            )
        }
    }

    /// out[i] = z[vars[i]] for every index of `vars`, enqueued on `stream`.
    ///
    /// # Panics
    /// If `out` is shorter than `vars`, or z than its counts or the indices.
    pub(crate) fn gather(
        &self,
        stream: &Stream,
        vars: &DeviceIndices,
        z: DeviceZ<'_>,
        out: &DeviceVec<Scalar>,
    ) -> Result<()> {
        let n = vars.len;
        assert!(n <= out.len(), "gather of {n} into {}", out.len());
        z.check(vars.below);
        let (input, aux, inputs) = (z.input.ptr(), z.aux.ptr(), u32_arg(z.inputs));
        let (ones, others) = (z.packed.ones.ptr(), z.packed.others.ptr());
        // SAFETY: every index is below z's length (checked on upload, asserted against z), and
        // the packed aux' bitmaps hold a bit for every aux (asserted: its length); n elements
        // of `vars` and `out` (asserted), one thread each.
        unsafe {
            self.g16_gather(
                blocks(n, THREADS),
                THREADS,
                stream,
                vars.vars.ptr(),
                u32_arg(n),
                input,
                aux,
                ones,
                others,
                inputs,
                out.ptr_mut(),
            )
        }
    }
}
