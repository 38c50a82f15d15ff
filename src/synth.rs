//! Synthesis: running a circuit straight into a partition's pool buffers.
//!
//! Phase: witness generation, on the synthesis threads. [`WitnessCs`] is a bellpepper
//! `ConstraintSystem` that evaluates each constraint's ⟨A,z⟩, ⟨B,z⟩, ⟨C,z⟩ as it is enforced
//! and appends them to a/b/c, like bellperson 0.27's `ProvingAssignment`, but into buffers
//! checked out for the key's domain size: no matrices are built and nothing reallocates.
//! Densities record which variables the A and B queries use, as the key's filtered queries
//! expect.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::abc::PinnedAbcBuffers;
use crate::error::{Error, Result};
use crate::groth16::ProvingKey;
use crate::pool::PinnedPool;

/// Which variables of one kind a query uses (bellperson's `DensityTracker`).
#[derive(Debug, Clone, Default)]
pub struct Density {
    used: Vec<bool>,
    count: usize,
}

impl Density {
    fn add_variable(&mut self) {
        self.used.push(false);
    }

    fn mark(&mut self, i: usize) {
        if !self.used[i] {
            self.used[i] = true;
            self.count += 1;
        }
    }

    /// How many variables are used.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The values of the used variables, in order: the scalars of a filtered query's MSM.
    pub fn gather<'v>(&'v self, values: &'v [Scalar]) -> impl Iterator<Item = Scalar> + 'v {
        values.iter().zip(&self.used).filter(|(_, used)| **used).map(|(v, _)| *v)
    }
}

/// One synthesized circuit: what the proving thread needs, and nothing else.
#[derive(Debug)]
pub struct Witness {
    /// a, b, c, each zero-padded to the domain size m.
    pub abc: PinnedAbcBuffers,
    /// Public input assignment, the constant one first.
    pub input: Vec<Scalar>,
    /// Auxiliary assignment.
    pub aux: Vec<Scalar>,
    /// Aux variables used in A (inputs always are: each has its `input · 0 = 0` constraint).
    pub a_aux_density: Density,
    /// Inputs used in B.
    pub b_input_density: Density,
    /// Aux variables used in B.
    pub b_aux_density: Density,
}

/// Synthesizes `circuit` into buffers checked out from `pool`, checking its shape against `key`.
///
/// # Errors
/// The pool's errors ([`Error::PoolTooSmall`], [`Error::OutOfMemory`]); [`Error::Synthesis`]
/// when the circuit fails; [`Error::NoConstraints`] for an empty circuit; [`Error::Shape`] when
/// the circuit does not match the key. The buffers are back in the pool when an error returns.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C, key: &ProvingKey, pool: &PinnedPool) -> Result<Witness> {
    let m = key.domain_size();
    let mut w = Witness {
        abc: PinnedAbcBuffers::checkout(pool, m)?,
        input: Vec::with_capacity(key.num_inputs()),
        aux: Vec::with_capacity(key.num_aux()),
        a_aux_density: Density::default(),
        b_input_density: Density::default(),
        b_aux_density: Density::default(),
    };
    let mut cs = WitnessCs { w: &mut w, m, overflow: 0 };
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    let constraints = cs.w.abc.a.len() + cs.overflow;
    if constraints == 0 {
        return Err(Error::NoConstraints);
    }
    let n = constraints + cs.w.input.len();
    if n.next_power_of_two() != m {
        return Err(Error::Shape {
            what: "domain size (constraints + inputs, rounded up)",
            expected: m,
            got: n.next_power_of_two(),
        });
    }
    w.check_against(key)?;
    // One `input · 0 = 0` constraint per input, as the key was generated with.
    for i in 0..w.input.len() {
        w.push_evaluations(w.input[i], Scalar::ZERO, Scalar::ZERO);
    }
    for v in [&mut w.abc.a, &mut w.abc.b, &mut w.abc.c] {
        v.resize(m, Scalar::ZERO)?;
    }
    Ok(w)
}

impl Witness {
    fn check_against(&self, key: &ProvingKey) -> Result<()> {
        let checks = [
            ("public inputs (with the constant one)", key.num_inputs(), self.input.len()),
            ("aux variables", key.num_aux(), self.aux.len()),
            ("a query length (variables used in A)", key.a.len(), self.input.len() + self.a_aux_density.count()),
            (
                "b query length (variables used in B)",
                key.b_g1.len(),
                self.b_input_density.count() + self.b_aux_density.count(),
            ),
        ];
        match checks.into_iter().find(|(_, expected, got)| expected != got) {
            Some((what, expected, got)) => Err(Error::Shape { what, expected, got }),
            None => Ok(()),
        }
    }

    fn push_evaluations(&mut self, a: Scalar, b: Scalar, c: Scalar) {
        // Callers check the length against m, which the three buffers' capacity covers.
        for (v, x) in [(&mut self.abc.a, a), (&mut self.abc.b, b), (&mut self.abc.c, c)] {
            v.push_within_capacity(x).expect("buffers hold m scalars");
        }
    }
}

/// The synthesis-time constraint system; see the module docs.
#[derive(Debug)]
pub struct WitnessCs<'w> {
    w: &'w mut Witness,
    /// The domain size; constraints past it are counted, not stored.
    m: usize,
    overflow: usize,
}

/// ⟨lc, z⟩, marking the variables with nonzero coefficients in the given densities.
fn eval(
    lc: &LinearCombination<Scalar>,
    (input, aux): (&[Scalar], &[Scalar]),
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            acc += input[i] * coeff;
            if let Some(d) = input_density.as_deref_mut() {
                d.mark(i);
            }
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            acc += aux[i] * coeff;
            if let Some(d) = aux_density.as_deref_mut() {
                d.mark(i);
            }
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for WitnessCs<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.aux.push(f()?);
        self.w.a_aux_density.add_variable();
        self.w.b_aux_density.add_variable();
        Ok(Variable::new_unchecked(Index::Aux(self.w.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.input.push(f()?);
        self.w.b_input_density.add_variable();
        Ok(Variable::new_unchecked(Index::Input(self.w.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if self.w.abc.a.len() == self.m {
            // Too many for the key; `synthesize` reports the shape once the count is known.
            self.overflow += 1;
            return;
        }
        let w = &mut *self.w;
        let z = (w.input.as_slice(), w.aux.as_slice());
        let va = eval(&a(LinearCombination::zero()), z, None, Some(&mut w.a_aux_density));
        let vb = eval(&b(LinearCombination::zero()), z, Some(&mut w.b_input_density), Some(&mut w.b_aux_density));
        let vc = eval(&c(LinearCombination::zero()), z, None, None);
        w.push_evaluations(va, vb, vc);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}
