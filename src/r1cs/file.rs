//! Recorded constraints to and from a file, so that a proving service records a circuit
//! shape once, not at every start.
//!
//! Layout, every number little-endian: the magic `pinr1cs\0`, the version (u64, 2); the
//! inputs, aux variables and constraints (u64 each); the table (a u64 count, then each
//! coefficient's 32-byte canonical encoding, `PrimeField::to_repr`); A, B and C, each as the
//! width of its row starts (u64, 4 or 8), its entries' count (u64), the starts (rows + 1 of
//! them, rows = constraints + inputs), the entries' variables (u32) and coefficient indices
//! (u32); then A's aux variables and B's variables (a u64 count and u32s each); last, the
//! BLAKE2b-512 digest of every byte before it.
//!
//! Reading checks everything a backend relies on (starts rising from 0 to the entries, every
//! index in range, the densities rising, the table's first entries 1 and −1), every length
//! against the bytes left before allocating for it, and the digest, computed in the same pass:
//! a damaged file is refused, whether or not the damage breaks its structure.

use std::fs::File;
use std::io::{BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::{Matrix, R1cs, RecordingShape, RecordingSizes, RowStarts, MINUS_ONE, ONE};
use crate::decode::{write_u32s_le, DigestWriter, Reader};
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"pinr1cs\0";
const VERSION: u64 = 2;

impl R1cs {
    /// Writes the recording. Layout, every number little-endian: the magic `pinr1cs\0`, the
    /// version (u64, 2); the inputs, aux variables and constraints (u64 each); the table (a
    /// u64 count, then each coefficient's 32-byte canonical encoding); A, B and C, each as
    /// the width of its row starts (u64, 4 or 8), its entries' count (u64), the starts (one
    /// more than the rows, which are the constraints and then one per input), the entries'
    /// variables (u32) and coefficient indices (u32); then A's aux variables and B's variables
    /// (a u64 count and u32s each); last, the BLAKE2b-512 digest of every byte before it.
    ///
    /// # Errors
    /// [`Error::Io`] when `writer` fails.
    pub fn write<W: Write>(&self, writer: W) -> Result<()> {
        let mut writer = DigestWriter::new(writer);
        let w = &mut writer;
        w.write_all(MAGIC)?;
        for n in [VERSION, self.inputs as u64, self.aux as u64, self.constraints as u64, self.table.len() as u64] {
            w.write_all(&n.to_le_bytes())?;
        }
        for c in &self.table {
            w.write_all(c.to_repr().as_ref())?;
        }
        for m in [&self.a, &self.b, &self.c] {
            let width: u64 = match m.starts {
                RowStarts::Narrow(_) => 4,
                RowStarts::Wide(_) => 8,
            };
            w.write_all(&width.to_le_bytes())?;
            w.write_all(&(m.vars.len() as u64).to_le_bytes())?;
            match &m.starts {
                RowStarts::Narrow(s) => write_u32s_le(w, s)?,
                RowStarts::Wide(s) => s.iter().try_for_each(|x| w.write_all(&x.to_le_bytes()))?,
            }
            write_u32s_le(w, &m.vars)?;
            write_u32s_le(w, &m.coeffs)?;
        }
        for d in [&self.a_aux, &self.b_vars] {
            w.write_all(&(d.len() as u64).to_le_bytes())?;
            write_u32s_le(w, d)?;
        }
        Ok(writer.finish()?)
    }

    /// Reads a recording [`write`](Self::write) made, checking all of it: the structure a
    /// backend relies on (row starts rising from 0 to the entries, every variable and
    /// coefficient index in range, the densities rising, the table's first entries 1 and −1),
    /// every length against the bytes left before allocating for it, and the digest,
    /// computed in the same pass, so that no damaged file is read. What it cannot tell is
    /// whether the recording is of the circuit it will be used with: [`with_r1cs`] checks
    /// the counts against the key, and a circuit whose constraints differ with the same
    /// counts gets [`Error::ProofInvalid`] from the prover.
    ///
    /// [`with_r1cs`]: crate::ProvingKey::with_r1cs
    ///
    /// # Errors
    /// [`Error::Decode`] naming what is wrong and where: another file, another version, a
    /// file cut short, a length larger than the bytes left, an index out of range, starts or
    /// densities out of order, a coefficient that is not a canonical field element, contents
    /// that do not match their digest;
    /// [`Error::Io`] when `reader` cannot tell its length (seek).
    pub fn read<R: Read + Seek>(reader: R) -> Result<Self> {
        let mut recording = Collected::default();
        read_into(reader, &mut recording)?;
        Ok(recording.into_r1cs())
    }
}

/// A recording's file, opened for its counts and sizes ([`open`](Self::open) reads its head
/// and the lengths of its arrays, not the arrays): a [`KeyFile`](crate::KeyFile) given it
/// ([`with_r1cs_file`](crate::KeyFile::with_r1cs_file)) has each CUDA backend read the
/// matrices straight into device memory, a piece at a time through its staging buffers,
/// checked and digest-verified in that pass, so the host never holds them; the CPU backend,
/// and a device that must stream them, read it whole ([`read`](Self::read)).
///
/// # Examples
/// ```
/// use pinprove::{R1cs, R1csFile};
/// # use pinprove::{Circuit, ConstraintSystem, Scalar, SynthesisError};
/// # struct Square;
/// # impl Circuit<Scalar> for Square {
/// #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
/// #         let x = cs.alloc(|| "x", || Ok(Scalar::from(3)))?;
/// #         let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9)))?;
/// #         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
/// #         Ok(())
/// #     }
/// # }
/// let r1cs = R1cs::record(Square)?;
/// let path = std::env::temp_dir().join(format!("square-{}.r1cs", std::process::id()));
/// r1cs.write(std::fs::File::create(&path)?)?;
/// let file = R1csFile::open(&path)?; // the counts alone
/// assert_eq!((file.num_constraints(), file.bytes()), (r1cs.num_constraints(), r1cs.bytes()));
/// assert_eq!(file.read()?, r1cs); // whole, checked
/// # std::fs::remove_file(path)?;
/// # Ok::<(), pinprove::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct R1csFile {
    path: PathBuf,
    sizes: RecordingSizes,
}

impl R1csFile {
    /// Opens the recording at `path` for its counts and sizes: its head and its arrays'
    /// lengths, each checked against the bytes left; the arrays and the digest are checked
    /// when they are read.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be opened or sought; [`Error::Decode`] for another
    /// file, another version, or lengths past the file's end.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let mut src = Reader::new(BufReader::new(File::open(&path)?))?;
        let Head { inputs, aux, constraints, rows, .. } = read_head(&mut src)?;
        // Items of `bytes` each, checked against the file's length, then skipped.
        let skip = |src: &mut Reader<_>, what: &str, count: u64, bytes: usize| {
            let n = src.fits(what, count, bytes)?;
            src.skip(what, (n * bytes) as u64)
        };
        let table = src.u64_le("length of table")?;
        skip(&mut src, "table", table, 32)?;
        let (mut entries, mut wide) = ([0u64; 3], [false; 3]);
        for (k, name) in ["a", "b", "c"].into_iter().enumerate() {
            let width = src.u64_le(&format!("{name}: width of the row starts"))?;
            entries[k] = src.u64_le(&format!("{name}: entries"))?;
            wide[k] = width == 8;
            skip(&mut src, &format!("{name}: row starts"), rows.saturating_add(1), width.min(8) as usize)?;
            skip(&mut src, &format!("{name}: entries"), entries[k], 8)?;
        }
        let a_aux = src.u64_le("length of a_aux")?;
        skip(&mut src, "a_aux", a_aux, 4)?;
        let b_vars = src.u64_le("length of b_vars")?;
        skip(&mut src, "b_vars", b_vars, 4)?;
        // Each count fits: the file holds as many items.
        let shape = RecordingShape { inputs: inputs as usize, aux: aux as usize, constraints: constraints as usize };
        let sizes = RecordingSizes {
            shape,
            a_query_len: shape.inputs + a_aux as usize,
            b_query_len: b_vars as usize,
            entries: entries.map(|e| e as usize),
            wide,
            table: table as usize,
        };
        Ok(R1csFile { path, sizes })
    }

    /// The whole recording, read and checked as [`R1cs::read`] does.
    ///
    /// # Errors
    /// As [`R1cs::read`]; [`Error::Io`] when the file cannot be opened.
    pub fn read(&self) -> Result<R1cs> {
        R1cs::read(BufReader::with_capacity(1 << 22, File::open(&self.path)?))
    }

    /// The recording read into `sink`, checked as [`R1cs::read`] does.
    #[cfg(feature = "cuda")]
    pub(crate) fn read_into(&self, sink: &mut impl Sink) -> Result<()> {
        read_into(BufReader::with_capacity(1 << 22, File::open(&self.path)?), sink)
    }

    /// Public inputs, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.sizes.shape.inputs
    }

    /// Aux (private) variables.
    pub fn num_aux(&self) -> usize {
        self.sizes.shape.aux
    }

    /// The circuit's own constraints.
    pub fn num_constraints(&self) -> usize {
        self.sizes.shape.constraints
    }

    /// Bytes the recording takes in memory, as [`R1cs::bytes`].
    pub fn bytes(&self) -> usize {
        self.sizes.bytes()
    }

    /// Its counts and sizes.
    pub(crate) fn sizes(&self) -> RecordingSizes {
        self.sizes
    }
}

/// The counts at a recording's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) inputs: usize,
    pub(crate) aux: usize,
    pub(crate) constraints: usize,
}

/// A piece of one of a recording's matrices as reading its file checked it: row starts rising
/// from 0 (the last piece's last is the entries' count), variables below z's length or
/// coefficient indices below the table's, each below [`below`](Self::below). Only reading
/// makes them, so that a device may copy them where its kernels index with them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece<'a> {
    which: usize,
    first: usize,
    part: Part<'a>,
    /// Read by the device's copy (`MatrixRoom`), which bounds its kernels' indices by it.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    below: u64,
}

/// What a [`Piece`] holds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part<'a> {
    Narrow(&'a [u32]),
    Wide(&'a [u64]),
    Vars(&'a [u32]),
    Coeffs(&'a [u32]),
}

impl<'a> Piece<'a> {
    /// The matrix: 0, 1, 2 for A, B, C.
    pub(crate) fn which(&self) -> usize {
        self.which
    }

    /// Index of its first item in the matrix's starts, variables or coefficients.
    pub(crate) fn first(&self) -> usize {
        self.first
    }

    pub(crate) fn part(&self) -> Part<'a> {
        self.part
    }

    /// Every item is below this (for starts, at most it: the entries' count).
    #[cfg(feature = "cuda")]
    pub(crate) fn below(&self) -> u64 {
        self.below
    }
}

/// What reading a recording's file hands on, in the file's order, each part checked as
/// [`R1cs::read`] says: a recording in memory keeps them, a device copies them up. The
/// reading fails, and the sink is to be dropped, unless the whole file and its digest check.
pub(crate) trait Sink {
    /// The counts and the coefficients' table, first.
    fn table(&mut self, counts: Counts, table: Vec<Scalar>) -> Result<()>;
    /// Matrix `which` (0, 1, 2: A, B, C): its rows, entries and row starts' width (`wide`:
    /// 64 bits), before its pieces.
    fn matrix(&mut self, which: usize, rows: usize, entries: usize, wide: bool) -> Result<()>;
    /// The pieces of the last matrix announced: its starts, then its variables, then its
    /// coefficients, each in order.
    fn piece(&mut self, piece: Piece<'_>) -> Result<()>;
    /// A's aux variables and B's variables, last.
    fn densities(&mut self, a_aux: Vec<u32>, b_vars: Vec<u32>) -> Result<()>;
}

/// Reads the recording in `reader` into `sink`, checking everything [`R1cs::read`] says, the
/// digest last.
///
/// # Errors
/// As [`R1cs::read`], and the sink's.
pub(crate) fn read_into<R: Read + Seek>(reader: R, sink: &mut impl Sink) -> Result<()> {
    let mut src = Reader::new(reader)?;
    let Head { inputs, aux, constraints, vars, rows } = read_head(&mut src)?;
    let count = src.u64_le("length of table")?;
    let n = src.fits("table", count, 32)?;
    let mut table = Vec::with_capacity(n);
    for i in 0..n {
        let (at, mut repr) = (src.offset, <Scalar as PrimeField>::Repr::default());
        src.read_exact(repr.as_mut(), || format!("table[{i}]"))?;
        let c: Option<Scalar> = Scalar::from_repr(repr).into();
        table.push(c.ok_or_else(|| bad(&format!("table[{i}]"), at, "not a canonical field element"))?);
    }
    if table.get(ONE as usize) != Some(&Scalar::ONE) || table.get(MINUS_ONE as usize) != Some(&-Scalar::ONE) {
        return Err(bad("table", src.offset, "its first entries are not 1 and -1"));
    }
    let coefficients = table.len() as u64;
    // Each count fits: the file holds as many rows or entries.
    let counts = Counts { inputs: inputs as usize, aux: aux as usize, constraints: constraints as usize };
    sink.table(counts, table)?;
    for (which, name) in ["a", "b", "c"].into_iter().enumerate() {
        read_matrix(&mut src, (which, name), rows, (vars, coefficients), sink)?;
    }
    let a_aux = read_rising(&mut src, "a_aux", aux)?;
    let b_vars = read_rising(&mut src, "b_vars", vars)?;
    src.check_digest()?;
    sink.densities(a_aux, b_vars)
}

/// A recording read into memory ([`R1cs::read`]).
#[derive(Debug, Default)]
struct Collected {
    counts: Option<Counts>,
    table: Vec<Scalar>,
    matrices: Vec<Matrix>,
    densities: (Vec<u32>, Vec<u32>),
}

impl Sink for Collected {
    fn table(&mut self, counts: Counts, table: Vec<Scalar>) -> Result<()> {
        (self.counts, self.table) = (Some(counts), table);
        Ok(())
    }

    fn matrix(&mut self, _: usize, rows: usize, entries: usize, wide: bool) -> Result<()> {
        let starts = match wide {
            false => RowStarts::Narrow(Vec::with_capacity(rows + 1)),
            true => RowStarts::Wide(Vec::with_capacity(rows + 1)),
        };
        self.matrices.push(Matrix { starts, vars: Vec::with_capacity(entries), coeffs: Vec::with_capacity(entries) });
        Ok(())
    }

    fn piece(&mut self, piece: Piece<'_>) -> Result<()> {
        debug_assert_eq!(piece.which() + 1, self.matrices.len(), "pieces of the last matrix");
        let m = self.matrices.last_mut().expect("a matrix before its pieces");
        let kept = match piece.part() {
            Part::Narrow(_) | Part::Wide(_) => m.starts.len(),
            Part::Vars(_) => m.vars.len(),
            Part::Coeffs(_) => m.coeffs.len(),
        };
        debug_assert_eq!(piece.first(), kept, "pieces in order");
        match (piece.part(), &mut m.starts) {
            (Part::Narrow(s), RowStarts::Narrow(starts)) => starts.extend_from_slice(s),
            (Part::Wide(s), RowStarts::Wide(starts)) => starts.extend_from_slice(s),
            (Part::Vars(v), _) => m.vars.extend_from_slice(v),
            (Part::Coeffs(c), _) => m.coeffs.extend_from_slice(c),
            _ => unreachable!("the starts are as wide as the matrix said"),
        }
        Ok(())
    }

    fn densities(&mut self, a_aux: Vec<u32>, b_vars: Vec<u32>) -> Result<()> {
        self.densities = (a_aux, b_vars);
        Ok(())
    }
}

impl Collected {
    fn into_r1cs(self) -> R1cs {
        let counts = self.counts.expect("read_into read the counts");
        let mut matrices = self.matrices.into_iter();
        let mut next = || matrices.next().expect("three matrices");
        let (a, b, c) = (next(), next(), next());
        let (a_aux, b_vars) = self.densities;
        R1cs {
            inputs: counts.inputs,
            aux: counts.aux,
            constraints: counts.constraints,
            table: self.table,
            a,
            b,
            c,
            a_aux,
            b_vars,
        }
    }
}

/// The counts at a recording file's head, checked: at least one input, at most 2^32
/// variables, rows (constraints and inputs) that a u64 counts.
struct Head {
    inputs: u64,
    aux: u64,
    constraints: u64,
    /// Inputs and aux: z's length.
    vars: u64,
    rows: u64,
}

/// Reads a recording file's magic, version and counts; hashes from the magic on (the
/// digest's own bytes not left to read).
fn read_head<R: Read + Seek>(src: &mut Reader<R>) -> Result<Head> {
    let mut magic = [0u8; 8];
    src.read_exact(&mut magic, || "magic".to_owned())?;
    if &magic != MAGIC {
        return Err(bad("magic", 0, "not a pinprove r1cs file"));
    }
    src.hash_from(MAGIC);
    let at = src.offset;
    if src.u64_le("version")? != VERSION {
        return Err(bad("version", at, "a version this build does not read (2)"));
    }
    let [inputs, aux, constraints] = [src.u64_le("inputs")?, src.u64_le("aux")?, src.u64_le("constraints")?];
    let at = src.offset;
    let vars = inputs.checked_add(aux).filter(|&v| v <= 1 << 32 && inputs > 0);
    let vars = vars.ok_or_else(|| bad("inputs and aux", at, "no inputs, or more than 2^32 variables"))?;
    let rows = constraints.checked_add(inputs).ok_or_else(|| bad("constraints", at, "too many rows"))?;
    Ok(Head { inputs, aux, constraints, vars, rows })
}

fn bad(what: &str, offset: u64, reason: &'static str) -> Error {
    Error::Decode { what: what.to_owned(), offset, reason }
}

/// Matrix `which` of `rows` rows over `vars` variables and a table of `coefficients`, into
/// `sink` piece by piece, each checked before it is handed on.
fn read_matrix<R: Read + Seek>(
    src: &mut Reader<R>,
    (which, name): (usize, &str),
    rows: u64,
    (vars, coefficients): (u64, u64),
    sink: &mut impl Sink,
) -> Result<()> {
    let at = src.offset;
    let width = src.u64_le(&format!("{name}: width of the row starts"))?;
    let entries = src.u64_le(&format!("{name}: entries"))?;
    let wide = match width {
        4 => false,
        8 => true,
        _ => return Err(bad(&format!("{name}: width of the row starts"), at, "neither 4 nor 8")),
    };
    let (what, starts_at, starts) = (format!("{name}: row starts"), src.offset, rows.saturating_add(1));
    // Each count fits: the file holds them (checked before each is read).
    src.fits(&what, starts, width as usize)?;
    src.fits(&format!("{name}: entries"), entries, 8)?;
    sink.matrix(which, rows as usize, entries as usize, wide)?;
    let not_rising = || bad(&what, starts_at, "they do not rise from 0 to the entries' count");
    let mut last: Option<u64> = None;
    let mut rising = |s: &mut dyn Iterator<Item = u64>| {
        for x in s {
            if !(last.map_or(x == 0, |l| l <= x) && x <= entries) {
                return Err(not_rising());
            }
            last = Some(x);
        }
        Ok(())
    };
    match wide {
        false => src.u32s_le_each(&what, starts, |first, s| {
            rising(&mut s.iter().map(|&x| u64::from(x)))?;
            sink.piece(Piece { which, first, part: Part::Narrow(s), below: entries })
        })?,
        true => src.u32s_le_each(&what, starts.saturating_mul(2), |first, halves| {
            let s: Vec<u64> = halves.chunks_exact(2).map(|h| u64::from(h[0]) | u64::from(h[1]) << 32).collect();
            rising(&mut s.iter().copied())?;
            sink.piece(Piece { which, first: first / 2, part: Part::Wide(&s), below: entries })
        })?,
    }
    if last != Some(entries) {
        return Err(not_rising());
    }
    let at = src.offset;
    src.u32s_le_each(&format!("{name}: variables"), entries, |first, v| {
        match v.iter().all(|&x| u64::from(x) < vars) {
            true => sink.piece(Piece { which, first, part: Part::Vars(v), below: vars }),
            false => Err(bad(&format!("{name}: variables"), at, "an index past the variables")),
        }
    })?;
    let at = src.offset;
    src.u32s_le_each(&format!("{name}: coefficients"), entries, |first, c| {
        match c.iter().all(|&k| u64::from(k) < coefficients) {
            true => sink.piece(Piece { which, first, part: Part::Coeffs(c), below: coefficients }),
            false => Err(bad(&format!("{name}: coefficients"), at, "an index past the table")),
        }
    })
}

/// A count and that many strictly rising u32 indices below `bound`.
fn read_rising<R: Read + Seek>(src: &mut Reader<R>, name: &str, bound: u64) -> Result<Vec<u32>> {
    let count = src.u64_le(&format!("length of {name}"))?;
    let at = src.offset;
    let v = src.u32s_le(name, count)?;
    if !v.windows(2).all(|w| w[0] < w[1]) || v.last().is_some_and(|&x| u64::from(x) >= bound) {
        return Err(bad(name, at, "not strictly rising, or an index out of range"));
    }
    Ok(v)
}
