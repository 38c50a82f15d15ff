//! Recorded constraints: a circuit's A, B and C matrices, recorded once per circuit shape, so
//! that proving a circuit needs only its witness.
//!
//! Phase: setup (record, or read the recording from a file), then per partition the
//! products a = A·z, b = B·z, c = C·z and the gathers of the A and B MSMs' scalars, on a
//! backend. z is the full assignment, the public inputs (the constant one first) then the aux
//! variables. Each matrix is compressed sparse rows: per row its entries' variables (indices
//! into z) and coefficients, which are indices into one table of the distinct coefficients;
//! its first two entries are 1 and −1, so most terms take an addition or a subtraction, not a
//! product. Rows are the circuit's constraints, then one `input · 0 = 0` per public input, as
//! the key was generated with. This is the pre-compiled constraint evaluator of cuzk (Curio's
//! `extern/cuzk`), with the products done by the backend.
//!
//! A recording carries the densities a key's queries are filtered by (which aux variables A
//! uses, which variables B uses), so it is checked against a key the way synthesis is:
//! constraints (rounded up to the domain), inputs, aux, and the A and B query lengths. A
//! circuit whose constraints differ from its recording with the same counts is not caught
//! here: its proof does not verify, and the prover answers `ProofInvalid`.

mod file;
mod record;

pub use self::file::R1csFile;
#[cfg(feature = "cuda")]
pub(crate) use self::file::{Counts, Part, Piece, Sink};

use std::sync::Arc;

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::groth16::{KeyShape, ProvingKey};
use crate::synth::PartitionLengths;

/// Index of the coefficient 1 in every table.
pub(crate) const ONE: u32 = 0;
/// Index of the coefficient −1 in every table.
pub(crate) const MINUS_ONE: u32 = 1;

/// Rows processed per parallel task by the CPU products.
const ROWS_PER_TASK: usize = 1 << 12;

/// Row starts of a sparse matrix: 32-bit while its entries fit, 64-bit beyond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RowStarts {
    /// Fewer than 2^32 entries.
    Narrow(Vec<u32>),
    /// 2^32 entries or more.
    Wide(Vec<u64>),
}

impl RowStarts {
    fn from_wide(starts: Vec<u64>) -> Self {
        match starts.last().is_some_and(|&n| n > u64::from(u32::MAX)) {
            true => RowStarts::Wide(starts),
            false => RowStarts::Narrow(starts.into_iter().map(|s| s as u32).collect()),
        }
    }

    /// Entries `entries(rows)` belong to the rows `rows`.
    pub(crate) fn entries(&self, rows: std::ops::Range<usize>) -> std::ops::Range<usize> {
        match self {
            RowStarts::Narrow(s) => s[rows.start] as usize..s[rows.end] as usize,
            RowStarts::Wide(s) => s[rows.start] as usize..s[rows.end] as usize,
        }
    }

    /// Entries `range(i)` belong to row i.
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        self.entries(i..i + 1)
    }

    fn rows(&self) -> usize {
        self.len() - 1
    }

    /// Starts it holds.
    fn len(&self) -> usize {
        match self {
            RowStarts::Narrow(s) => s.len(),
            RowStarts::Wide(s) => s.len(),
        }
    }
}

/// One matrix in compressed sparse rows.
///
/// Invariants (checked on read): the starts rise from 0 to the entries' count; every
/// variable indexes z; every coefficient indexes the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Matrix {
    pub(crate) starts: RowStarts,
    /// Per entry, its variable's index in z.
    pub(crate) vars: Vec<u32>,
    /// Per entry, its coefficient's index in the table.
    pub(crate) coeffs: Vec<u32>,
}

impl Matrix {
    /// ⟨row i, z⟩.
    fn row_dot(&self, i: usize, z: Z<'_>, table: &[Scalar]) -> Scalar {
        let range = self.starts.range(i);
        let mut acc = Scalar::ZERO;
        for (&v, &k) in self.vars[range.clone()].iter().zip(&self.coeffs[range]) {
            let x = z.at(v);
            match k {
                ONE => acc += x,
                MINUS_ONE => acc -= x,
                k => acc += x * table[k as usize],
            }
        }
        acc
    }

    /// Rows of the matrix.
    #[cfg(any(feature = "cuda", test))]
    pub(crate) fn rows(&self) -> usize {
        self.starts.rows()
    }

    /// The rows cut into chunks of at most `entries` entries and `entries` rows, for a
    /// device that holds the matrix a chunk at a time: the chunks' first rows, then the rows'
    /// count. `None` when a row alone has more than `entries` entries.
    #[cfg(any(feature = "cuda", test))]
    pub(crate) fn chunks(&self, entries: usize) -> Option<Vec<usize>> {
        let entries = entries.max(1);
        let mut cuts = vec![0];
        // The chunk's first row and its first entry.
        let (mut first, mut first_entry) = (0, 0);
        for i in 0..self.rows() {
            let row = self.starts.range(i);
            if row.len() > entries {
                return None;
            }
            if row.end - first_entry > entries || i - first == entries {
                cuts.push(i);
                (first, first_entry) = (i, row.start);
            }
        }
        cuts.push(self.rows());
        Some(cuts)
    }

    /// Entries of its longest row: the fewest a chunk of rows must take.
    #[cfg(any(feature = "cuda", test))]
    pub(crate) fn longest_row(&self) -> usize {
        (0..self.rows()).map(|i| self.starts.range(i).len()).max().unwrap_or(0)
    }
}

/// z = input ‖ aux without the copy: the aux stay in the partition's pool buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Z<'a> {
    pub(crate) input: &'a [Scalar],
    pub(crate) aux: &'a [Scalar],
}

impl Z<'_> {
    /// Variable v of z.
    pub(crate) fn at(&self, v: u32) -> Scalar {
        let v = v as usize;
        match v.checked_sub(self.input.len()) {
            None => self.input[v],
            Some(j) => self.aux[j],
        }
    }
}

/// A recording's counts and sizes: what checking it against a key and placing it on a device
/// take, known from its file's head ([`R1csFile::open`]) without reading its matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordingSizes {
    pub(crate) shape: RecordingShape,
    pub(crate) a_query_len: usize,
    pub(crate) b_query_len: usize,
    /// Entries of A, B and C.
    pub(crate) entries: [usize; 3],
    /// Whether each matrix's row starts take 64 bits.
    pub(crate) wide: [bool; 3],
    /// Coefficients in the table.
    pub(crate) table: usize,
}

impl RecordingSizes {
    /// Checks that the recording describes `key`'s circuit shape: the domain (constraints
    /// and inputs, rounded up), inputs, aux variables, and the A and B query lengths.
    ///
    /// # Errors
    /// [`Error::Shape`] naming the first count that differs.
    pub(crate) fn check_shape(&self, key: &KeyShape) -> Result<()> {
        let RecordingShape { inputs, aux, .. } = self.shape;
        Error::first_shape_mismatch([
            ("recorded domain size (constraints + inputs, rounded up)", key.domain_size(), self.shape.domain()),
            ("recorded public inputs (with the constant one)", key.num_inputs(), inputs),
            ("recorded aux variables", key.num_aux(), aux),
            ("recorded a query length (variables used in A)", key.a_len(), self.a_query_len),
            ("recorded b query length (variables used in B)", key.b_len(), self.b_query_len),
        ])
    }

    /// Bytes of the three matrices: row starts (one more than the rows, 4 or 8 bytes) and
    /// entries (a variable and a coefficient index, 4 bytes each).
    pub(crate) fn matrices_bytes(&self) -> usize {
        let rows = self.shape.constraints + self.shape.inputs;
        let starts = |wide: bool| (rows + 1) * if wide { 8 } else { 4 };
        (0..3).map(|k| starts(self.wide[k]) + 8 * self.entries[k]).sum()
    }

    /// Bytes the recording holds in memory: matrices, table, densities.
    pub(crate) fn bytes(&self) -> usize {
        let densities = self.a_query_len - self.shape.inputs + self.b_query_len;
        self.matrices_bytes() + std::mem::size_of::<Scalar>() * self.table + 4 * densities
    }
}

/// A key's recording as a prover is given it: in memory, or its file, which a CUDA backend
/// reads straight into device memory as it places it.
#[derive(Debug, Clone)]
pub(crate) enum Recording {
    Memory(Arc<R1cs>),
    File(Arc<R1csFile>),
}

impl Recording {
    /// Its counts and sizes.
    pub(crate) fn sizes(&self) -> RecordingSizes {
        match self {
            Recording::Memory(r1cs) => r1cs.sizes(),
            Recording::File(file) => file.sizes(),
        }
    }

    /// The recording in memory: this one, or its file read whole.
    ///
    /// # Errors
    /// As [`R1csFile::read`].
    pub(crate) fn load(&self) -> Result<Arc<R1cs>> {
        match self {
            Recording::Memory(r1cs) => Ok(Arc::clone(r1cs)),
            Recording::File(file) => Ok(Arc::new(file.read()?)),
        }
    }
}

/// The counts of a recording that witness-only synthesis checks a circuit against: what a
/// prover keeps of it on the host, its backends holding the matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordingShape {
    pub(crate) inputs: usize,
    pub(crate) aux: usize,
    pub(crate) constraints: usize,
}

impl RecordingShape {
    /// The evaluation domain's size: constraints and inputs, rounded up to a power of two.
    pub(crate) fn domain(&self) -> usize {
        (self.constraints + self.inputs).checked_next_power_of_two().unwrap_or(usize::MAX)
    }
}

/// A circuit's constraints, recorded once per circuit shape, so that proving a circuit
/// needs only its witness: its A, B and C matrices over z (the public inputs, the constant
/// one first, then the aux variables), each in compressed sparse rows whose coefficients
/// index one table of the distinct ones (1 and −1 first, so most terms are an addition or a
/// subtraction). The rows are the circuit's constraints, then one `input · 0 = 0` per input,
/// as the key was generated with. It carries the densities the key's A and B queries are
/// filtered by.
///
/// Where it pays: when synthesis is the bound, as with bit-heavy circuits (SHA-256,
/// Poseidon) feeding a GPU from many synthesis threads; the circuit then runs witness-only
/// (its `enforce` only counts, native witness paths such as
/// [`gadgets::sha256`](crate::gadgets::sha256) are taken), into pool buffers that hold each
/// aux value 0 or 1 as a bit ([`PackedAux`](crate::backend::PackedAux)), and the backend
/// evaluates a = A·z, b = B·z, c = C·z (the CUDA backend on the device). On the CPU backend,
/// whose MSMs dominate, proofs per second stay about the same, with a small share of the
/// pool's bytes (`examples/synthesis` prints both).
///
/// A recording is checked against a key ([`ProvingKey::with_r1cs`]): constraints (rounded
/// up to the domain), inputs, aux, and the A and B query lengths. A circuit whose
/// constraints differ from the recording with the same counts is not caught there: its
/// proof does not verify, and the prover answers [`Error::ProofInvalid`], naming the
/// recording. Files: [`write`](Self::write) and [`read`](Self::read), digest-checked.
///
/// # Examples
/// ```
/// use pinprove::{Circuit, Config, ConstraintSystem, Field, Prover, R1cs, Scalar, SynthesisError};
/// use pinprove::{generate_random_parameters, prepare_verifying_key, verify_proof};
///
/// /// Knows x with x² = y, for public y.
/// struct Square(Scalar);
/// impl Circuit<Scalar> for Square {
///     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
///         let x = cs.alloc(|| "x", || Ok(self.0))?;
///         let y = cs.alloc_input(|| "y", || Ok(self.0.square()))?;
///         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
///         Ok(())
///     }
/// }
///
/// let key = generate_random_parameters(Square(Scalar::ZERO), &mut rand_core::OsRng)?;
/// // Once per circuit shape (or R1cs::read from a file that R1cs::write made):
/// let r1cs = R1cs::record(Square(Scalar::ZERO))?;
/// let key = key.with_r1cs(r1cs)?; // checked against the key
/// let prover = Prover::new(key, Config { synthesis_threads: 2, ..Config::default() })?;
/// // Synthesis now computes the witness only; the backend evaluates the constraints.
/// let proof = prover.prove(vec![Square(Scalar::from(3))])?.remove(0)?;
/// let pvk = prepare_verifying_key(prover.verifying_key());
/// assert!(verify_proof(&pvk, &proof, &[Scalar::from(9)])?);
/// prover.shutdown();
/// # Ok::<(), pinprove::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct R1cs {
    /// Public inputs, the constant one included.
    pub(crate) inputs: usize,
    pub(crate) aux: usize,
    /// The circuit's own constraints (the matrices have `inputs` rows more).
    pub(crate) constraints: usize,
    /// The distinct coefficients: `[ONE]` is 1, `[MINUS_ONE]` is −1.
    pub(crate) table: Vec<Scalar>,
    pub(crate) a: Matrix,
    pub(crate) b: Matrix,
    pub(crate) c: Matrix,
    /// The aux variables A uses (every input is used, by its `input · 0 = 0` row), rising.
    pub(crate) a_aux: Vec<u32>,
    /// The variables (indices into z) B uses, rising.
    pub(crate) b_vars: Vec<u32>,
}

impl R1cs {
    /// Public inputs, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.inputs
    }

    /// Its counts (see [`RecordingShape`]).
    pub(crate) fn shape(&self) -> RecordingShape {
        RecordingShape { inputs: self.inputs, aux: self.aux, constraints: self.constraints }
    }

    /// The lengths of its circuit's partitions, as its key's
    /// ([`KeyShape::partition_lengths`]).
    pub(crate) fn partition_lengths(&self) -> PartitionLengths {
        [self.shape().domain(), self.aux, self.a_query_len(), self.b_query_len()]
    }

    /// Aux (private) variables.
    pub fn num_aux(&self) -> usize {
        self.aux
    }

    /// The circuit's own constraints.
    pub fn num_constraints(&self) -> usize {
        self.constraints
    }

    /// Points of the A query of this circuit's key: every input, then the aux variables A
    /// uses.
    pub fn a_query_len(&self) -> usize {
        self.inputs + self.a_aux.len()
    }

    /// Points of each B query of this circuit's key: the variables B uses.
    pub fn b_query_len(&self) -> usize {
        self.b_vars.len()
    }

    /// Nonzero entries of A, B and C.
    pub fn entries(&self) -> [usize; 3] {
        [self.a.vars.len(), self.b.vars.len(), self.c.vars.len()]
    }

    /// Entries of the longest row of A, B and C: the fewest a streamed chunk must take.
    #[cfg(any(feature = "cuda", test))]
    pub(crate) fn longest_row(&self) -> usize {
        [&self.a, &self.b, &self.c].iter().map(|m| m.longest_row()).max().unwrap_or(0)
    }

    /// Bytes the recording holds in memory (matrices, table, densities): what a backend
    /// holds beside the key to evaluate it.
    pub fn bytes(&self) -> usize {
        self.sizes().bytes()
    }

    /// Its counts and sizes.
    pub(crate) fn sizes(&self) -> RecordingSizes {
        let [a, b, c] = [&self.a, &self.b, &self.c];
        RecordingSizes {
            shape: self.shape(),
            a_query_len: self.a_query_len(),
            b_query_len: self.b_query_len(),
            entries: self.entries(),
            wide: [a, b, c].map(|m| matches!(m.starts, RowStarts::Wide(_))),
            table: self.table.len(),
        }
    }

    /// Checks that this recording describes `key`'s circuit shape: the domain (constraints
    /// and inputs, rounded up), inputs, aux variables, and the A and B query lengths.
    ///
    /// # Errors
    /// [`Error::Shape`] naming the first count that differs.
    pub fn check_against(&self, key: &ProvingKey) -> Result<()> {
        self.check_shape(&key.shape())
    }

    /// [`check_against`](Self::check_against) a key's shape.
    pub(crate) fn check_shape(&self, key: &KeyShape) -> Result<()> {
        self.sizes().check_shape(key)
    }

    /// a = A·z, b = B·z, c = C·z on the current rayon pool, each zero-padded to the length
    /// of its output slice (the domain size).
    ///
    /// # Errors
    /// [`Error::Shape`] when z's parts are not inputs and aux long, or an output is shorter
    /// than the matrices' rows.
    pub(crate) fn evaluate(&self, z: Z<'_>, [a, b, c]: [&mut [Scalar]; 3]) -> Result<()> {
        self.check_z(z)?;
        for (m, out) in [(&self.a, a), (&self.b, b), (&self.c, c)] {
            let rows = m.starts.rows();
            if out.len() < rows {
                return Err(Error::Shape {
                    what: "evaluation length (at least the rows)",
                    expected: rows,
                    got: out.len(),
                });
            }
            let (head, tail) = out.split_at_mut(rows);
            head.par_chunks_mut(ROWS_PER_TASK).enumerate().for_each(|(t, chunk)| {
                for (j, x) in chunk.iter_mut().enumerate() {
                    *x = m.row_dot(t * ROWS_PER_TASK + j, z, &self.table);
                }
            });
            tail.par_iter_mut().for_each(|x| *x = Scalar::ZERO);
        }
        Ok(())
    }

    /// The scalars of the A and B MSMs: every input then the aux variables A uses, and the
    /// variables B uses, appended to `a` and `b`.
    ///
    /// # Errors
    /// [`Error::Shape`] when z's parts are not inputs and aux long.
    pub(crate) fn gather(&self, z: Z<'_>, a: &mut Vec<Scalar>, b: &mut Vec<Scalar>) -> Result<()> {
        self.check_z(z)?;
        a.clear();
        b.clear();
        a.extend_from_slice(z.input);
        a.extend(self.a_aux.iter().map(|&j| z.aux[j as usize]));
        b.extend(self.b_vars.iter().map(|&v| z.at(v)));
        Ok(())
    }

    fn check_z(&self, z: Z<'_>) -> Result<()> {
        Error::first_shape_mismatch([
            ("public inputs (with the constant one)", self.inputs, z.input.len()),
            ("aux variables", self.aux, z.aux.len()),
        ])
    }
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
    use blstrs::Scalar;

    use super::R1cs;

    /// Rows of 0 to 6 entries in A, one in B, two in C.
    struct Ragged;

    impl Circuit<Scalar> for Ragged {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let vars: Vec<_> = (0..8).map(|i| cs.alloc(|| "v", || Ok(Scalar::from(i)))).collect::<Result<_, _>>()?;
            for k in 0..200 {
                let a = vars[..k % 7].iter().fold(LinearCombination::zero(), |lc, &v| lc + v);
                cs.enforce(|| "row", |_| a, |lc| lc + vars[7], |lc| lc + vars[0] + vars[1]);
            }
            Ok(())
        }
    }

    #[test]
    fn chunks_cover_the_rows_within_their_limits_and_are_maximal() {
        let r1cs = R1cs::record(Ragged).unwrap();
        let a = &r1cs.a;
        assert_eq!((a.longest_row(), r1cs.longest_row()), (6, 6), "rows of 0 to 6 entries in A");
        assert_eq!(a.chunks(5), None, "a row of 6 entries in chunks of 5");
        for entries in [6, 7, 13, 64, 1 << 20] {
            let cuts = a.chunks(entries).unwrap();
            assert_eq!((cuts[0], *cuts.last().unwrap()), (0, a.rows()));
            for w in cuts.windows(2) {
                let (first, end) = (w[0], w[1]);
                let taken = a.starts.entries(first..end).len();
                assert!(first < end && end - first <= entries && taken <= entries, "{entries}: {w:?}");
                if end < a.rows() {
                    let one_more = a.starts.entries(first..end + 1).len();
                    assert!(one_more > entries || end - first == entries, "{entries}: {w:?} could take a row more");
                }
            }
        }
        assert_eq!(r1cs.b.chunks(1).unwrap().len(), r1cs.b.rows() + 1, "a row a chunk");
        assert_eq!(r1cs.c.chunks(1), None, "rows of two entries");
    }
}
