//! Witness-only synthesis, for keys with recorded constraints: `enforce` only counts, the
//! aux assignment goes straight into the partition's packed aux (`packed.rs`: pool buffers,
//! each 0 or 1 a bit), and gadgets with a native witness path take it
//! (`is_witness_generator` is true; `extend_inputs` and `extend_aux` append to it,
//! `allocate_empty` hands out slices that are packed at the system's next call, and
//! `aux_slice` expands the aux for the rare circuit that reads them back). Circuits that
//! synthesize independent parts on several threads may do so: a part is a constraint system
//! of its own, from `new`, whose first input is a temporary one and whose aux stay on the
//! heap, appended with `extend` (as bellperson's `ProvingAssignment` takes them; see
//! [`synth`](super)).

use std::cell::OnceCell;

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::packed::PackedAux;
use super::{Assignment, Witness};
use crate::error::{Error, Result};
use crate::pool::PinnedPool;
use crate::r1cs::{R1cs, RecordingShape};

/// Where the aux assignment is written.
#[derive(Debug)]
enum Aux {
    /// The partition's, packed into pool buffers (boxed: a part holds a `Vec` alone).
    Packed { packed: Box<PackedAux>, pool: PinnedPool },
    /// A part's own vector (a system from `new`).
    Heap(Vec<Scalar>),
}

/// The witness-only constraint system; see the module docs.
#[derive(Debug)]
pub(super) struct WitnessOnlyCs {
    input: Vec<Scalar>,
    aux: Aux,
    /// Aux values `allocate_empty` handed out to a packed system: packed at the next call.
    pending: Vec<Scalar>,
    /// The aux expanded by `aux_slice`, until the next change.
    expanded: OnceCell<Vec<Scalar>>,
    /// Aux values past the recording's count, or lost to a failed checkout: counted, so that
    /// the variables' indices and the shape error stay right.
    extra_aux: usize,
    /// The pool's error when a chunk of values could not be had: the partition's answer.
    failed: Option<Error>,
    constraints: usize,
    /// Whether a native witness path wrote values (`allocate_empty`, `extend_aux`,
    /// `extend_inputs`): such gadgets enforce nothing here, so the constraints' count says
    /// nothing and is not checked.
    native: bool,
}

impl WitnessOnlyCs {
    fn with_aux(aux: Aux) -> Self {
        let (pending, expanded) = (vec![], OnceCell::new());
        WitnessOnlyCs {
            input: vec![],
            aux,
            pending,
            expanded,
            extra_aux: 0,
            failed: None,
            constraints: 0,
            native: false,
        }
    }

    /// Aux values appended so far.
    fn aux_len(&self) -> usize {
        let written = match &self.aux {
            Aux::Packed { packed, .. } => packed.len(),
            Aux::Heap(v) => v.len(),
        };
        written + self.pending.len() + self.extra_aux
    }

    /// Packs what `allocate_empty` handed out, and forgets the expanded aux: every call that
    /// changes the system starts here.
    fn settle(&mut self) {
        if self.expanded.get().is_some() {
            self.expanded.take();
        }
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.push_aux(&pending);
            self.pending = pending;
            self.pending.clear();
        }
    }

    /// Appends aux values (after [`settle`](Self::settle)).
    fn push_aux(&mut self, values: &[Scalar]) {
        let Self { aux, extra_aux, failed, .. } = self;
        match aux {
            Aux::Heap(v) => v.extend_from_slice(values),
            Aux::Packed { packed, pool } => {
                let taken = match failed {
                    Some(_) => 0,
                    None => packed.extend(values, pool).unwrap_or_else(|e| {
                        *failed = Some(e);
                        0
                    }),
                };
                *extra_aux += values.len() - taken;
            }
        }
    }

    /// `aux_n` and `inputs_n` zeros appended, for the caller to overwrite: the new tails.
    fn append_zeros(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.settle();
        self.native = true;
        let inputs = self.input.len();
        self.input.resize(inputs + inputs_n, Scalar::ZERO);
        let Self { aux, pending, input, .. } = self;
        let aux = match aux {
            Aux::Heap(v) => {
                v.resize(v.len() + aux_n, Scalar::ZERO);
                let start = v.len() - aux_n;
                &mut v[start..]
            }
            Aux::Packed { .. } => {
                pending.resize(aux_n, Scalar::ZERO);
                &mut pending[..]
            }
        };
        (aux, &mut input[inputs..])
    }
}

/// Runs `circuit` witness-only into pool buffers, checking its counts against `r1cs` (its
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
    let packed = Box::new(PackedAux::checkout(pool, r1cs.aux)?);
    let mut cs = WitnessOnlyCs::with_aux(Aux::Packed { packed, pool: pool.clone() });
    cs.input.reserve(r1cs.inputs);
    cs.input.push(Scalar::ONE);
    circuit.synthesize(&mut cs)?;
    cs.settle();
    if let Some(e) = cs.failed {
        return Err(e);
    }
    if cs.constraints == 0 && !cs.native {
        return Err(Error::NoConstraints);
    }
    let constraints = if cs.native { r1cs.constraints } else { cs.constraints };
    Error::first_shape_mismatch([
        ("constraints (as recorded)", r1cs.constraints, constraints),
        ("public inputs (with the constant one)", r1cs.inputs, cs.input.len()),
        ("aux variables", r1cs.aux, cs.aux_len()),
    ])?;
    match cs.aux {
        Aux::Packed { packed, .. } => Ok(Witness { input: cs.input, assignment: Assignment::Packed(*packed) }),
        Aux::Heap(_) => unreachable!("the partition's system packs its aux"),
    }
}

impl ConstraintSystem<Scalar> for WitnessOnlyCs {
    type Root = Self;

    /// A part, to be appended to the partition's system with [`extend`](Self::extend): no
    /// input (its first, allocated by the circuit, is a temporary one), as bellperson's
    /// `ProvingAssignment::new`.
    fn new() -> Self {
        WitnessOnlyCs::with_aux(Aux::Heap(vec![]))
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.settle();
        self.push_aux(&[f()?]);
        Ok(Variable::new_unchecked(Index::Aux(self.aux_len() - 1)))
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
        self.settle();
        self.input.extend_from_slice(other.input.get(1..).unwrap_or_default());
        self.push_aux(other.aux_slice());
        self.constraints += other.constraints;
        self.native |= other.native;
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.settle();
        self.native = true;
        self.input.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.settle();
        self.native = true;
        self.push_aux(new_aux);
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

    /// The aux so far; a packed system's expanded (kept until the next change).
    fn aux_slice(&self) -> &[Scalar] {
        match &self.aux {
            Aux::Heap(v) => v,
            Aux::Packed { packed, .. } => self.expanded.get_or_init(|| {
                let mut v = packed.to_vec();
                v.extend_from_slice(&self.pending);
                v
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use blstrs::Scalar;
    use ff::Field;

    use super::synthesize_witness_to;
    use crate::pool::{PinnedPool, PoolConfig};
    use crate::r1cs::RecordingShape;
    use crate::synth::Assignment;

    /// Zeros, ones and other values, 64 · 5 of them, so that a part's and `allocate_empty`'s
    /// cross words and chunks.
    fn value(i: usize) -> Scalar {
        match i % 7 {
            0 | 3 => Scalar::ZERO,
            1 | 4 | 5 => Scalar::ONE,
            _ => Scalar::from(i as u64 + 2),
        }
    }

    /// Writes its aux through every path a witness generator offers, then reads them back
    /// with `aux_slice` (when `read_back`; a panic here fails the synthesis, and the test).
    struct EveryPath {
        read_back: bool,
    }

    impl Circuit<Scalar> for EveryPath {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            assert!(cs.is_witness_generator());
            let mut i = 0;
            let mut next = |n: usize| -> Vec<Scalar> { (i..i + n).map(value).inspect(|_| i += 1).collect() };
            for x in next(70) {
                cs.alloc(|| "x", || Ok(x))?;
            }
            let block = next(100);
            let (aux, inputs) = cs.allocate_empty(block.len(), 1);
            aux.copy_from_slice(&block);
            inputs[0] = Scalar::from(9);
            let expected: Vec<Scalar> = (0..320).map(value).collect();
            if self.read_back {
                assert!(cs.aux_slice() == &expected[..170], "the aux so far, allocate_empty's included");
            }
            cs.extend_aux(&next(90));
            let mut part = CS::new();
            part.alloc_input(|| "its one", || Ok(Scalar::ONE))?;
            for x in next(60) {
                part.alloc(|| "x", || Ok(x))?;
            }
            cs.extend(&part);
            if self.read_back {
                assert!(cs.aux_slice() == expected, "the whole aux, after more were written");
            }
            Ok(())
        }
    }

    #[test]
    fn every_witness_path_packs_the_values_it_wrote() {
        let pool = PinnedPool::new(PoolConfig::default());
        let shape = RecordingShape { inputs: 2, aux: 320, constraints: 1 };
        let w = synthesize_witness_to(EveryPath { read_back: true }, &shape, &pool).unwrap();
        let Assignment::Packed(packed) = &w.assignment else { panic!("witness-only synthesis packs") };
        assert!(packed.to_vec() == (0..320).map(value).collect::<Vec<_>>(), "the values as written");
        assert_eq!(w.input, [Scalar::ONE, Scalar::from(9)]);
        let census = packed.census();
        assert_eq!((census.zeros + census.ones + census.others, census.others), (320, 320 * 2 / 7));
        drop(w);
        let s = pool.stats();
        assert_eq!(s.checkouts, s.checkins, "every buffer back");
    }

    #[test]
    fn more_aux_than_recorded_is_a_shape_error_and_gives_every_buffer_back() {
        let pool = PinnedPool::new(PoolConfig::default());
        let shape = RecordingShape { inputs: 2, aux: 319, constraints: 1 };
        let e = synthesize_witness_to(EveryPath { read_back: false }, &shape, &pool).unwrap_err();
        assert!(matches!(e, crate::Error::Shape { what: "aux variables", expected: 319, got: 320 }), "{e}");
        let s = pool.stats();
        assert_eq!(s.checkouts, s.checkins, "every buffer back");
    }
}
