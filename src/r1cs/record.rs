//! Recording a circuit's constraints: a `ConstraintSystem` that keeps each constraint's linear
//! combinations as matrix rows and never asks for a value (as key generation does not), so
//! the shape-only circuit a key was made from records as well as a real one. Like key
//! generation (bellperson's `KeypairAssembly`), it is not extensible: a recording is made
//! by one sequential synthesis, which is well defined; circuits that synthesize parts apart
//! do so on the witness-only path.

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
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).expect("recording allocates without values");
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
