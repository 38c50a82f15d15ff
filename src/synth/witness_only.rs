//! Witness-only synthesis, for keys with recorded constraints: `enforce` only counts, the
//! aux assignment goes straight into one pool buffer, and gadgets with a native witness path
//! take it (`is_witness_generator` is true; `allocate_empty`, `extend_inputs` and
//! `extend_aux` write into that buffer). Circuits that synthesize independent parts on several
//! threads may do so: a part is a constraint system of its own, from `new`, whose first
//! input is a temporary one, appended with `extend` (as bellperson's `ProvingAssignment`
//! takes them; see [`synth`](super)).

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::Witness;
use crate::error::{Error, Result};
use crate::pool::PinnedPool;
use crate::pool::PinnedVec;
use crate::r1cs::{R1cs, RecordingShape};

/// Where the aux assignment is written.
#[derive(Debug)]
enum Aux {
    /// The partition's pool buffer.
    Pool(PinnedVec<Scalar>),
    /// A part's own vector (a system from `new`), or the assignment of a circuit that
    /// outgrew its buffer (whose shape check then fails).
    Heap(Vec<Scalar>),
}

/// The witness-only constraint system; see the module docs.
#[derive(Debug)]
pub(super) struct WitnessOnlyCs {
    input: Vec<Scalar>,
    aux: Aux,
    constraints: usize,
    /// Whether a native witness path wrote values (`allocate_empty`, `extend_aux`,
    /// `extend_inputs`): such gadgets enforce nothing here, so the constraints' count says
    /// nothing and is not checked.
    native: bool,
}

impl Aux {
    fn as_slice(&self) -> &[Scalar] {
        match self {
            Aux::Pool(v) => v,
            Aux::Heap(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Scalar] {
        match self {
            Aux::Pool(v) => v,
            Aux::Heap(v) => v,
        }
    }
}

impl WitnessOnlyCs {
    fn aux(&self) -> &[Scalar] {
        self.aux.as_slice()
    }

    /// Appends `n` aux values from `values`; a buffer too small for them moves to the heap.
    fn extend_aux_with(&mut self, n: usize, values: impl IntoIterator<Item = Scalar>) {
        if let Aux::Pool(v) = &self.aux {
            if v.len() + n > v.capacity() {
                self.aux = Aux::Heap(v.to_vec()); // the buffer goes back to the pool
            }
        }
        match &mut self.aux {
            Aux::Pool(v) => v.extend_within_capacity(values).expect("room checked above"),
            Aux::Heap(v) => v.extend(values),
        }
    }

    /// `aux_n` and `inputs_n` zeros appended, for the caller to overwrite: the new tails.
    fn append_zeros(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.native = true;
        self.extend_aux_with(aux_n, std::iter::repeat_n(Scalar::ZERO, aux_n));
        let inputs = self.input.len();
        self.input.resize(inputs + inputs_n, Scalar::ZERO);
        let aux = self.aux.as_mut_slice();
        let aux_start = aux.len() - aux_n;
        (&mut aux[aux_start..], &mut self.input[inputs..])
    }
}

/// Runs `circuit` witness-only into a pool buffer, checking its counts against `r1cs` (its
/// key's recorded constraints): the partition's backend evaluates the constraints.
///
/// # Errors
/// As [`synthesize`](super::synthesize); [`Error::Shape`] when the circuit's inputs or aux
/// variables are not as many as the recording's, or its constraints, unless a native
/// witness path skipped them.
pub fn synthesize_witness<C: Circuit<Scalar>>(circuit: C, r1cs: &R1cs, pool: &PinnedPool) -> Result<Witness> {
    synthesize_witness_to(circuit, &r1cs.shape(), pool)
}

/// [`synthesize_witness`] against a recording's counts (what a prover keeps of it).
pub(crate) fn synthesize_witness_to<C: Circuit<Scalar>>(
    circuit: C,
    r1cs: &RecordingShape,
    pool: &PinnedPool,
) -> Result<Witness> {
    let aux = PinnedVec::checkout(pool, r1cs.aux)?;
    let input = Vec::with_capacity(r1cs.inputs);
    let mut cs = WitnessOnlyCs { input, aux: Aux::Pool(aux), constraints: 0, native: false };
    cs.input.push(Scalar::ONE);
    circuit.synthesize(&mut cs)?;
    if cs.constraints == 0 && !cs.native {
        return Err(Error::NoConstraints);
    }
    let constraints = if cs.native { r1cs.constraints } else { cs.constraints };
    Error::first_shape_mismatch([
        ("constraints (as recorded)", r1cs.constraints, constraints),
        ("public inputs (with the constant one)", r1cs.inputs, cs.input.len()),
        ("aux variables", r1cs.aux, cs.aux().len()),
    ])?;
    match cs.aux {
        Aux::Pool(aux) => Ok(Witness { input: cs.input, aux, evaluated: None }),
        // Only a count past the buffer's, so past the recording's, moves to the heap.
        Aux::Heap(v) => Err(Error::Shape { what: "aux variables", expected: r1cs.aux, got: v.len() }),
    }
}

impl ConstraintSystem<Scalar> for WitnessOnlyCs {
    type Root = Self;

    /// A part, to be appended to the partition's system with [`extend`](Self::extend): no
    /// input (its first, allocated by the circuit, is a temporary one), as bellperson's
    /// `ProvingAssignment::new`.
    fn new() -> Self {
        WitnessOnlyCs { input: vec![], aux: Aux::Heap(vec![]), constraints: 0, native: false }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.extend_aux_with(1, [f()?]);
        Ok(Variable::new_unchecked(Index::Aux(self.aux().len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1; // the backend evaluates the recorded constraint
    }

    names_ignored!();

    fn is_extensible() -> bool {
        true
    }

    /// Appends a part made by [`new`](Self::new): its inputs but its first (its temporary
    /// one), its aux, its constraints' count.
    fn extend(&mut self, other: &Self) {
        self.input.extend_from_slice(other.input.get(1..).unwrap_or_default());
        self.extend_aux_with(other.aux().len(), other.aux().iter().copied());
        self.constraints += other.constraints;
        self.native |= other.native;
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.native = true;
        self.input.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.native = true;
        self.extend_aux_with(new_aux.len(), new_aux.iter().copied());
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.append_zeros(aux_n, inputs_n)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.append_zeros(0, n).1
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.append_zeros(n, 0).0
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.input
    }

    fn aux_slice(&self) -> &[Scalar] {
        self.aux()
    }
}
