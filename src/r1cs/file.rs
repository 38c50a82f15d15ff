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

use std::io::{Read, Seek, Write};

use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::{Matrix, R1cs, RowStarts, MINUS_ONE, ONE};
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
        let mut src = Reader::new(reader)?;
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
        let mut matrix = |name: &str| read_matrix(&mut src, name, rows, vars, table.len());
        let (a, b, c) = (matrix("a")?, matrix("b")?, matrix("c")?);
        let a_aux = read_rising(&mut src, "a_aux", aux)?;
        let b_vars = read_rising(&mut src, "b_vars", vars)?;
        src.check_digest()?;
        let usize_of = |n: u64| n as usize; // each fits: the file holds as many rows or entries
        Ok(R1cs {
            inputs: usize_of(inputs),
            aux: usize_of(aux),
            constraints: usize_of(constraints),
            table,
            a,
            b,
            c,
            a_aux,
            b_vars,
        })
    }
}

fn bad(what: &str, offset: u64, reason: &'static str) -> Error {
    Error::Decode { what: what.to_owned(), offset, reason }
}

/// One matrix of `rows` rows over `vars` variables and a table of `coefficients`.
fn read_matrix<R: Read + Seek>(
    src: &mut Reader<R>,
    name: &str,
    rows: u64,
    vars: u64,
    coefficients: usize,
) -> Result<Matrix> {
    let at = src.offset;
    let width = src.u64_le(&format!("{name}: width of the row starts"))?;
    let entries = src.u64_le(&format!("{name}: entries"))?;
    let what = format!("{name}: row starts");
    let starts_at = src.offset;
    let starts = match width {
        4 => RowStarts::Narrow(src.u32s_le(&what, rows.saturating_add(1))?),
        8 => {
            let halves = src.u32s_le(&what, rows.saturating_add(1).saturating_mul(2))?;
            RowStarts::Wide(halves.chunks_exact(2).map(|h| u64::from(h[0]) | u64::from(h[1]) << 32).collect())
        }
        _ => return Err(bad(&format!("{name}: width of the row starts"), at, "neither 4 nor 8")),
    };
    if !starts.rise_to(entries) {
        return Err(bad(&what, starts_at, "they do not rise from 0 to the entries' count"));
    }
    let at = src.offset;
    let var_indices = src.u32s_le(&format!("{name}: variables"), entries)?;
    if var_indices.iter().any(|&v| u64::from(v) >= vars) {
        return Err(bad(&format!("{name}: variables"), at, "an index past the variables"));
    }
    let at = src.offset;
    let coeffs = src.u32s_le(&format!("{name}: coefficients"), entries)?;
    if coeffs.iter().any(|&k| k as usize >= coefficients) {
        return Err(bad(&format!("{name}: coefficients"), at, "an index past the table"));
    }
    Ok(Matrix { starts, vars: var_indices, coeffs })
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
