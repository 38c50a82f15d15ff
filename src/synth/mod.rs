//! Synthesis: running a circuit straight into a partition's pool buffers.
//!
//! Phase: witness generation, on the synthesis threads. With recorded constraints (a key's
//! [`r1cs`](ProvingKey::r1cs)) a circuit runs witness-only (`witness_only.rs`): its
//! `enforce` only counts and the aux go straight into pool buffers, packed (`packed.rs`: each
//! 0 or 1 a bit, the other values as they are). Without, `WitnessCs` is
//! a bellpepper `ConstraintSystem` that evaluates each constraint's ⟨A,z⟩, ⟨B,z⟩, ⟨C,z⟩ as it
//! is enforced and appends them to a/b/c, like bellperson 0.27's `ProvingAssignment`, but into
//! buffers checked out for the key's sizes: no matrices are built and nothing reallocates. Densities
//! record which variables the A and B queries use; once the circuit is done, the scalars of
//! the A and B multi-scalar multiplications are gathered here too, so the proving thread only
//! launches work.
//!
//! Circuits that synthesize independent parts on several threads (Filecoin's WindowPoSt:
//! `CS::is_extensible()`, a system per group of sectors from `CS::new()`, each first
//! allocating a temporary one as its input 0, then `extend`ed into the partition's) do so on
//! every path, as with bellperson 0.27's `ProvingAssignment`: a part from `new` holds no
//! input, writes into heap vectors, and `extend` appends its evaluations, its aux and its
//! inputs but the first (its one), coalescing its densities.
//!
//! What the shape checks catch: a different number of constraints (rounded up to the domain),
//! public inputs or aux variables, and a different set of variables used in A or B. What only
//! verifying the proof catches: the same sizes with different constraints (say, one enforced
//! twice), or a witness that does not satisfy them.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

pub(crate) mod packed;
mod witness_only;

pub use self::packed::PackedAux;
pub use self::witness_only::synthesize_witness;
pub(crate) use self::witness_only::synthesize_witness_to;
use crate::error::{Error, Result};
use crate::groth16::{KeyFile, KeyShape, ProvingKey};
use crate::pool::PinnedPool;
use crate::pool::{PinnedAbcBuffers, PinnedVec};
use crate::r1cs::R1cs;

/// Which variables of one kind a query uses (bellperson's `DensityTracker`).
#[derive(Debug, Clone, Default)]
struct Density {
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
    fn count(&self) -> usize {
        self.count
    }

    /// Appends a part's density of aux variables.
    fn append(&mut self, part: &Density) {
        self.used.extend_from_slice(&part.used);
        self.count += part.count;
    }

    /// Appends a part's density of inputs: its first, the part's temporary one, is the
    /// system's one (bellperson's `DensityTracker::extend` of an input density).
    fn append_inputs(&mut self, part: &Density) {
        let Some((&one, rest)) = part.used.split_first() else { return };
        if one {
            self.mark(0);
        }
        self.used.extend_from_slice(rest);
        self.count += rest.iter().filter(|u| **u).count();
    }

    /// The values of the used variables, in order: the scalars of a filtered query's MSM.
    fn gather<'v>(&'v self, values: &'v [Scalar]) -> impl Iterator<Item = Scalar> + 'v {
        values.iter().zip(&self.used).filter(|(_, used)| **used).map(|(v, _)| *v)
    }
}

/// Where a constraint system writes a vector of scalars: the partition's pool buffer, or,
/// for a part (a system from `new`, to be appended with `extend`), the heap.
#[derive(Debug)]
enum Values {
    Pool(PinnedVec<Scalar>),
    Heap(Vec<Scalar>),
}

impl Values {
    fn as_slice(&self) -> &[Scalar] {
        match self {
            Values::Pool(v) => v,
            Values::Heap(v) => v,
        }
    }

    fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Appends `x`, or hands it back when a pool buffer is full.
    fn push(&mut self, x: Scalar) -> std::result::Result<(), Scalar> {
        match self {
            Values::Pool(v) => v.push_within_capacity(x),
            Values::Heap(v) => {
                v.push(x);
                Ok(())
            }
        }
    }

    /// The pool buffer of the partition's system.
    ///
    /// # Panics
    /// For a part's heap vector.
    fn into_pool(self) -> PinnedVec<Scalar> {
        match self {
            Values::Pool(v) => v,
            Values::Heap(_) => panic!("a part's values are appended to the partition's buffers, not returned"),
        }
    }
}

/// One synthesized circuit: what the proving thread needs, and nothing else. Every vector
/// but the (short) public inputs lives in pool buffers.
#[derive(Debug)]
pub struct Witness {
    /// Public input assignment, the constant one first.
    pub input: Vec<Scalar>,
    /// The rest: the constraints evaluated, or the aux alone, packed.
    pub assignment: Assignment,
}

/// What synthesis wrote besides the public inputs.
#[derive(Debug)]
pub enum Assignment {
    /// The constraints evaluated and the aux as scalars, for keys without recorded
    /// constraints.
    Evaluated(Evaluated),
    /// The aux alone, packed (zeros and ones as bits): the partition's backend evaluates
    /// the key's recorded constraints ([`ProvingKey::r1cs`]) on z = input ‖ aux.
    Packed(PackedAux),
}

/// The constraints evaluated during synthesis, for keys without recorded constraints.
#[derive(Debug)]
pub struct Evaluated {
    /// a, b, c, each zero-padded to the domain size m.
    pub abc: PinnedAbcBuffers,
    /// Auxiliary assignment: the scalars of the L query's MSM.
    pub aux: PinnedVec<Scalar>,
    /// The scalars of the A query's MSM: every input, then the aux variables used in A.
    pub a_scalars: PinnedVec<Scalar>,
    /// The scalars of the B queries' MSMs (G1 and G2): the inputs, then the aux variables,
    /// used in B.
    pub b_scalars: PinnedVec<Scalar>,
}

impl Witness {
    /// Whether every pool buffer of the witness is page-locked.
    pub fn is_pinned(&self) -> bool {
        match &self.assignment {
            Assignment::Evaluated(e) => {
                e.abc.is_pinned() && e.aux.is_pinned() && e.a_scalars.is_pinned() && e.b_scalars.is_pinned()
            }
            Assignment::Packed(p) => p.is_pinned(),
        }
    }

    /// The public inputs without the constant one: what a verifier is given.
    pub fn public_inputs(&self) -> &[Scalar] {
        &self.input[1..]
    }

    /// What synthesis evaluated, unless the witness is the aux alone.
    pub fn evaluated(&self) -> Option<&Evaluated> {
        match &self.assignment {
            Assignment::Evaluated(e) => Some(e),
            Assignment::Packed(_) => None,
        }
    }

    /// Bytes of the pool buffers the witness holds.
    pub fn host_bytes(&self) -> usize {
        match &self.assignment {
            Assignment::Evaluated(e) => {
                let [a, b, c] = [&e.abc.a, &e.abc.b, &e.abc.c];
                [a, b, c, &e.aux, &e.a_scalars, &e.b_scalars].iter().map(|v| v.buffer().capacity()).sum()
            }
            Assignment::Packed(p) => p.host_bytes(),
        }
    }
}

/// A partition's lengths: the domain, the aux, the A and B queries' (the MSM scalars').
pub(crate) type PartitionLengths = [usize; 4];

/// Bytes of the pool buffers one partition of these `lengths` holds: `witness_only`, its packed aux's
/// bitmaps and ranks and one chunk of values (a 64th of the aux, 64 to 65,536 values; a
/// partition takes as many chunks as its values neither 0 nor 1 fill, none for an aux of
/// bits); else a, b, c (m scalars each), the aux, and the A and B scalars. Prewarming and
/// the pool's cap are counted in these.
///
/// # Errors
/// [`Error::Config`] when the sizes overflow `usize` (no host could hold them).
pub(crate) fn witness_buffer_bytes(lengths: PartitionLengths, witness_only: bool) -> Result<Vec<usize>> {
    let [m, aux, a_len, b_len] = lengths;
    let overflow = || Error::Config("a partition's buffers overflow usize".into());
    let scalars = |n: usize| n.checked_mul(std::mem::size_of::<Scalar>()).ok_or_else(overflow);
    match witness_only {
        true => {
            let chunk = scalars(packed::chunk_len(aux))?;
            Ok(packed::bitmap_bytes(aux).into_iter().chain([chunk]).collect())
        }
        false => [m, m, m, aux, a_len, b_len].into_iter().map(scalars).collect(),
    }
}

/// Bytes the pool holds for one partition of `key`, synthesized `witness_only` (with the
/// key's recorded constraints) or in full: its buffers, each at least one byte (as the pool
/// hands them out). A pool's cap must hold this much. Witness-only, it is the least a
/// partition holds: its packed aux's values neither 0 nor 1 take 32 bytes each, in chunks
/// ([`Witness::host_bytes`] says how many a partition held).
///
/// # Errors
/// [`Error::Config`] when the sizes overflow `usize`.
pub fn partition_bytes(key: &ProvingKey, witness_only: bool) -> Result<usize> {
    lengths_partition_bytes(key.shape().partition_lengths(), witness_only)
}

/// [`partition_bytes`] of the key in `file`.
///
/// # Errors
/// As [`partition_bytes`].
pub fn file_partition_bytes(file: &KeyFile, witness_only: bool) -> Result<usize> {
    lengths_partition_bytes(file.shape().partition_lengths(), witness_only)
}

/// [`partition_bytes`] of a key for `r1cs`'s circuit, without the key (whose points a
/// 2^27 circuit's would take 40 GB of).
///
/// # Errors
/// As [`partition_bytes`].
pub fn recording_partition_bytes(r1cs: &R1cs, witness_only: bool) -> Result<usize> {
    lengths_partition_bytes(r1cs.partition_lengths(), witness_only)
}

/// [`partition_bytes`] of a partition of these lengths.
pub(crate) fn lengths_partition_bytes(lengths: PartitionLengths, witness_only: bool) -> Result<usize> {
    witness_buffer_bytes(lengths, witness_only)?
        .iter()
        .try_fold(0usize, |sum, b| sum.checked_add((*b).max(1)))
        .ok_or_else(|| Error::Config("a partition's buffers overflow usize".into()))
}

/// Synthesizes `circuit` into buffers checked out from `pool`, checking its shape against
/// `key`: the constraints' evaluations and the witness (for the witness alone, see
/// [`synthesize_witness`]).
///
/// # Errors
/// The pool's errors ([`Error::PoolTooSmall`], [`Error::OutOfMemory`]); [`Error::Synthesis`]
/// when the circuit fails; [`Error::NoConstraints`] for an empty circuit; [`Error::Shape`] when
/// the circuit does not match the key. The buffers are back in the pool when an error returns.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C, key: &ProvingKey, pool: &PinnedPool) -> Result<Witness> {
    synthesize_into(circuit, &key.shape(), pool)
}

/// [`synthesize`] against a prover's key shape.
pub(crate) fn synthesize_into<C: Circuit<Scalar>>(circuit: C, key: &KeyShape, pool: &PinnedPool) -> Result<Witness> {
    let m = key.domain_size();
    let [a, b, c, aux, a_scalars, b_scalars] =
        <[usize; 6]>::try_from(witness_buffer_bytes(key.partition_lengths(), false)?)
            .map(|bytes| pool.checkout_many(bytes))
            .expect("six buffers when synthesis evaluates")?;
    let pool = |b| Values::Pool(PinnedVec::new(b));
    let mut cs = WitnessCs { abc: [pool(a), pool(b), pool(c)], aux: pool(aux), m, ..WitnessCs::new() };
    cs.input.reserve(key.num_inputs());
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    cs.check_against(key)?;
    // One `input · 0 = 0` constraint per input, as the key was generated with.
    for i in 0..cs.input.len() {
        cs.push_evaluations([cs.input[i], Scalar::ZERO, Scalar::ZERO]);
    }
    let [a, b, c] = cs.abc.map(Values::into_pool);
    let mut abc = PinnedAbcBuffers { a, b, c };
    for v in [&mut abc.a, &mut abc.b, &mut abc.c] {
        v.resize(m, Scalar::ZERO)?;
    }
    let (aux, input) = (cs.aux.into_pool(), cs.input);
    let mut a_scalars = PinnedVec::new(a_scalars);
    let mut b_scalars = PinnedVec::new(b_scalars);
    let a = input.iter().copied().chain(cs.a_aux_density.gather(&aux));
    let b = cs.b_input_density.gather(&input).chain(cs.b_aux_density.gather(&aux));
    a_scalars.extend_within_capacity(a)?;
    b_scalars.extend_within_capacity(b)?;
    let evaluated = Evaluated { abc, aux, a_scalars, b_scalars };
    Ok(Witness { input, assignment: Assignment::Evaluated(evaluated) })
}

/// The synthesis-time constraint system; see the module docs.
#[derive(Debug)]
struct WitnessCs {
    /// ⟨A,z⟩, ⟨B,z⟩, ⟨C,z⟩ per constraint.
    abc: [Values; 3],
    input: Vec<Scalar>,
    aux: Values,
    /// Aux variables used in A (inputs always are: each has its `input · 0 = 0` constraint).
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    /// The domain size (no bound for a part).
    m: usize,
    /// Constraints and aux variables past what the key's buffers hold: counted, not stored,
    /// so the shape error can say how many there were.
    extra_constraints: usize,
    extra_aux: usize,
}

impl WitnessCs {
    fn check_against(&self, key: &KeyShape) -> Result<()> {
        let constraints = self.abc[0].len() + self.extra_constraints;
        if constraints == 0 {
            return Err(Error::NoConstraints);
        }
        let domain = (constraints + self.input.len()).checked_next_power_of_two().unwrap_or(usize::MAX);
        Error::first_shape_mismatch([
            ("domain size (constraints + inputs, rounded up)", key.domain_size(), domain),
            ("public inputs (with the constant one)", key.num_inputs(), self.input.len()),
            ("aux variables", key.num_aux(), self.aux.len() + self.extra_aux),
            ("a query length (variables used in A)", key.a_len(), self.input.len() + self.a_aux_density.count()),
            (
                "b query length (variables used in B)",
                key.b_len(),
                self.b_input_density.count() + self.b_aux_density.count(),
            ),
        ])
    }

    /// Whether a constraint enforced now can be stored: the circuit is not larger than the
    /// key (and stored every value it used). Otherwise it is counted, and `synthesize`
    /// reports the shape once the counts are known.
    fn stores_constraint(&mut self) -> bool {
        if self.abc[0].len() == self.m || self.extra_aux > 0 {
            self.extra_constraints += 1;
            return false;
        }
        true
    }

    fn push_evaluations(&mut self, abc: [Scalar; 3]) {
        // Callers check the length against m, which the three buffers' capacity covers.
        for (v, x) in self.abc.iter_mut().zip(abc) {
            v.push(x).map_err(|_| ()).expect("buffers hold m scalars");
        }
    }

    /// Stores an aux value, or counts it when the key has fewer.
    fn store_aux(&mut self, x: Scalar) {
        if self.aux.push(x).is_err() {
            self.extra_aux += 1;
        }
    }
}

/// coeff · value, without the product when the coefficient is one, as most are: the
/// products were a fifth of a dense chain's synthesis.
fn term(value: Scalar, coeff: &Scalar) -> Scalar {
    if *coeff == Scalar::ONE {
        value
    } else {
        value * coeff
    }
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
            acc += term(input[i], coeff);
            if let Some(d) = input_density.as_deref_mut() {
                d.mark(i);
            }
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            acc += term(aux[i], coeff);
            if let Some(d) = aux_density.as_deref_mut() {
                d.mark(i);
            }
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let index = self.aux.len() + self.extra_aux;
        self.store_aux(f()?);
        self.a_aux_density.add_variable();
        self.b_aux_density.add_variable();
        Ok(Variable::new_unchecked(Index::Aux(index)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input.push(f()?);
        self.b_input_density.add_variable();
        Ok(Variable::new_unchecked(Index::Input(self.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if !self.stores_constraint() {
            return;
        }
        let z = (self.input.as_slice(), self.aux.as_slice());
        let va = eval(&a(LinearCombination::zero()), z, None, Some(&mut self.a_aux_density));
        let vb = eval(&b(LinearCombination::zero()), z, Some(&mut self.b_input_density), Some(&mut self.b_aux_density));
        let vc = eval(&c(LinearCombination::zero()), z, None, None);
        self.push_evaluations([va, vb, vc]);
    }

    names_ignored!();

    /// A part: no input (its first, allocated by the circuit, is a temporary one), its
    /// values on the heap, no bound on its constraints.
    fn new() -> Self {
        WitnessCs {
            abc: [Values::Heap(vec![]), Values::Heap(vec![]), Values::Heap(vec![])],
            input: vec![],
            aux: Values::Heap(vec![]),
            a_aux_density: Density::default(),
            b_input_density: Density::default(),
            b_aux_density: Density::default(),
            m: usize::MAX,
            extra_constraints: 0,
            extra_aux: 0,
        }
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends a part made by [`new`](Self::new): its evaluations, its aux, and its inputs
    /// but its first (its temporary one), with their densities, as bellperson's
    /// `ProvingAssignment::extend` does.
    fn extend(&mut self, part: &Self) {
        self.input.extend_from_slice(part.input.get(1..).unwrap_or_default());
        self.b_input_density.append_inputs(&part.b_input_density);
        for &x in part.aux.as_slice() {
            self.store_aux(x);
        }
        self.a_aux_density.append(&part.a_aux_density);
        self.b_aux_density.append(&part.b_aux_density);
        self.extra_aux += part.extra_aux;
        let [a, b, c] = part.abc.each_ref().map(Values::as_slice);
        for ((&a, &b), &c) in a.iter().zip(b).zip(c) {
            if self.stores_constraint() {
                self.push_evaluations([a, b, c]);
            }
        }
        self.extra_constraints += part.extra_constraints;
    }
}
