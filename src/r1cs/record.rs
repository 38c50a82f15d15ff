//! Recording a circuit's constraints: a `ConstraintSystem` that keeps each constraint's linear
//! combinations as matrix rows and never asks for a value (as key generation does not), so
//! the shape-only circuit a key was made from records as well as a real one. It is
//! extensible, as proving is (bellperson's `ProvingAssignment`): a circuit that synthesizes
//! parts apart records them on several threads, each part a recorder from `new` whose first
//! input is a temporary one, and `extend` renumbers a part's variables and coefficients into
//! the system's, its temporary one as the system's one. The recording is the one sequential
//! synthesis makes (key generation's path), row for row.

use std::collections::HashMap;

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::{Matrix, R1cs, RowStarts, MINUS_ONE, ONE};
use crate::error::{Error, Result};

/// A variable while recording: inputs and aux are numbered apart until the inputs' count is
/// known, so aux variables carry this bit.
const AUX: u64 = 1 << 63;

/// One matrix while recording.
#[derive(Debug)]
struct Rows {
    starts: Vec<u64>,
    vars: Vec<u64>,
    coeffs: Vec<u32>,
}

impl Default for Rows {
    fn default() -> Self {
        Rows { starts: vec![0], vars: vec![], coeffs: vec![] }
    }
}

impl Rows {
    fn end_row(&mut self) {
        self.starts.push(self.vars.len() as u64);
    }

    /// The matrix over z = inputs ‖ aux, which has at most 2^32 variables.
    fn finish(self, inputs: usize) -> Matrix {
        let z_index = |v: u64| (if v & AUX != 0 { (v & !AUX) + inputs as u64 } else { v }) as u32;
        Matrix {
            starts: RowStarts::from_wide(self.starts),
            vars: self.vars.into_iter().map(z_index).collect(),
            coeffs: self.coeffs,
        }
    }
}

/// The recording constraint system; see the module docs.
#[derive(Debug)]
pub(super) struct Recorder {
    inputs: usize,
    aux: usize,
    constraints: usize,
    table: Vec<Scalar>,
    /// Each coefficient's index in `table`, by its Montgomery limbs.
    index: HashMap<[u64; 4], u32>,
    rows: [Rows; 3],
    a_aux: Vec<bool>,
    b_inputs: Vec<bool>,
    b_aux: Vec<bool>,
}

impl Recorder {
    fn coefficient(&mut self, c: Scalar) -> u32 {
        let next = self.table.len() as u32;
        let k = *self.index.entry(blst::blst_fr::from(c).l).or_insert(next);
        if k == next {
            self.table.push(c);
        }
        k
    }

    /// Appends `lc` as a row of matrix `m`, marking the variables it uses (a nonzero
    /// coefficient) in the densities of that matrix.
    fn push_row(&mut self, m: usize, lc: &LinearCombination<Scalar>) {
        for (&i, c) in lc.iter_inputs() {
            if !bool::from(c.is_zero()) {
                let k = self.coefficient(*c);
                self.rows[m].vars.push(i as u64);
                self.rows[m].coeffs.push(k);
                if m == 1 {
                    self.b_inputs[i] = true;
                }
            }
        }
        for (&j, c) in lc.iter_aux() {
            if !bool::from(c.is_zero()) {
                let k = self.coefficient(*c);
                self.rows[m].vars.push(j as u64 | AUX);
                self.rows[m].coeffs.push(k);
                match m {
                    0 => self.a_aux[j] = true,
                    1 => self.b_aux[j] = true,
                    _ => {}
                }
            }
        }
        self.rows[m].end_row();
    }
}

impl ConstraintSystem<Scalar> for Recorder {
    type Root = Self;

    fn new() -> Self {
        let mut cs = Recorder {
            inputs: 0,
            aux: 0,
            constraints: 0,
            table: vec![],
            index: HashMap::new(),
            rows: Default::default(),
            a_aux: vec![],
            b_inputs: vec![],
            b_aux: vec![],
        };
        assert_eq!((cs.coefficient(Scalar::ONE), cs.coefficient(-Scalar::ONE)), (ONE, MINUS_ONE));
        cs
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        self.a_aux.push(false);
        self.b_aux.push(false);
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        self.b_inputs.push(false);
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.push_row(0, &a(LinearCombination::zero()));
        self.push_row(1, &b(LinearCombination::zero()));
        self.push_row(2, &c(LinearCombination::zero()));
        self.constraints += 1;
    }

    names_ignored!();

    fn is_extensible() -> bool {
        true
    }

    /// Appends a part made by [`new`](Self::new): its rows, its variables renumbered after
    /// the system's (its first input, a temporary one, is the system's one) and its
    /// coefficients by the system's table, and its densities.
    fn extend(&mut self, part: &Self) {
        let (inputs, aux) = (self.inputs as u64, self.aux as u64);
        let var = |v: u64| match (v & AUX != 0, v) {
            (true, v) => ((v & !AUX) + aux) | AUX,
            (false, 0) => 0,
            (false, i) => inputs + i - 1,
        };
        let coeffs: Vec<u32> = part.table.iter().map(|&c| self.coefficient(c)).collect();
        for (rows, theirs) in self.rows.iter_mut().zip(&part.rows) {
            for row in theirs.starts.windows(2) {
                let entries = row[0] as usize..row[1] as usize;
                rows.vars.extend(theirs.vars[entries.clone()].iter().map(|&v| var(v)));
                rows.coeffs.extend(theirs.coeffs[entries].iter().map(|&k| coeffs[k as usize]));
                rows.end_row();
            }
        }
        if let Some((&one, rest)) = part.b_inputs.split_first() {
            self.b_inputs[0] |= one;
            self.b_inputs.extend_from_slice(rest);
        }
        self.a_aux.extend_from_slice(&part.a_aux);
        self.b_aux.extend_from_slice(&part.b_aux);
        self.inputs += part.inputs.saturating_sub(1);
        self.aux += part.aux;
        self.constraints += part.constraints;
    }
}

impl R1cs {
    /// Records `circuit`'s constraints. Values are never asked for, so the circuit a key was
    /// generated from (often one without a witness) records as well as a real one.
    ///
    /// # Errors
    /// [`Error::Synthesis`] when the circuit fails; [`Error::NoConstraints`] when it enforces
    /// none; [`Error::Shape`] past 2^32 variables.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<R1cs> {
        let mut cs = Recorder::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        if cs.constraints == 0 {
            return Err(Error::NoConstraints);
        }
        // One `input · 0 = 0` row per input, as the key was generated with.
        for i in 0..cs.inputs {
            let a = LinearCombination::zero() + Variable::new_unchecked(Index::Input(i));
            cs.push_row(0, &a);
            cs.push_row(1, &LinearCombination::zero());
            cs.push_row(2, &LinearCombination::zero());
        }
        let (inputs, vars) = (cs.inputs, cs.inputs + cs.aux);
        if vars > 1 << 32 {
            return Err(Error::Shape {
                what: "variables, inputs and aux (at most 2^32)",
                expected: 1 << 32,
                got: vars,
            });
        }
        let used = |d: &[bool]| d.iter().enumerate().filter(|(_, u)| **u).map(|(i, _)| i as u32).collect::<Vec<_>>();
        let a_aux = used(&cs.a_aux);
        let b_vars =
            used(&cs.b_inputs).into_iter().chain(used(&cs.b_aux).into_iter().map(|j| j + inputs as u32)).collect();
        let [a, b, c] = cs.rows;
        Ok(R1cs {
            inputs,
            aux: cs.aux,
            constraints: cs.constraints,
            table: cs.table,
            a: a.finish(inputs),
            b: b.finish(inputs),
            c: c.finish(inputs),
            a_aux,
            b_vars,
        })
    }
}
