//! Keys and proofs: plain data in the layout bellperson's `Parameters` uses.

use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;

use crate::error::{Error, Result};
use crate::r1cs::{R1cs, RecordingShape};
use crate::synth::PartitionLengths;

/// Bytes of [`Proof::to_bytes`]: compressed A (48), B (96) and C (48).
pub const PROOF_BYTES: usize = 192;

/// The verifying key: what a verifier needs besides the proof and public inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyingKey {
    /// α·G1.
    pub alpha_g1: G1Affine,
    /// β·G1.
    pub beta_g1: G1Affine,
    /// β·G2.
    pub beta_g2: G2Affine,
    /// γ·G2.
    pub gamma_g2: G2Affine,
    /// δ·G1.
    pub delta_g1: G1Affine,
    /// δ·G2.
    pub delta_g2: G2Affine,
    /// (β·Aᵢ(τ) + α·Bᵢ(τ) + Cᵢ(τ))/γ·G1 for each public input i, the constant one first.
    pub ic: Vec<G1Affine>,
}

/// The proving key of one circuit shape.
///
/// Invariants (checked by [`ProvingKey::validate`]): `h.len() + 1` is the domain size m, a power
/// of two; `l` has one point per aux variable; `a`, `b_g1`, `b_g2` hold only the variables with a
/// nonzero A (resp. B) polynomial, inputs first, as bellperson's generator filters them.
///
/// A prover gives the key to its backends when they are made (a CUDA device copies the bases
/// to the device, the CPU backend keeps the key) and keeps only its shape (the verifying key,
/// the counts, the recording's counts): the caller that hands it over without keeping a clone
/// frees the host copy of the bases, and of the recording's matrices, once no backend holds
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvingKey {
    /// The verifying key.
    pub vk: VerifyingKey,
    /// τⁱ·Z(τ)/δ·G1 for i in 0..m−1.
    pub h: Vec<G1Affine>,
    /// (β·Aᵢ(τ) + α·Bᵢ(τ) + Cᵢ(τ))/δ·G1 for each aux variable.
    pub l: Vec<G1Affine>,
    /// Aᵢ(τ)·G1 for each input, then each aux variable used in A.
    pub a: Vec<G1Affine>,
    /// Bᵢ(τ)·G1 for each input and aux variable used in B.
    pub b_g1: Vec<G1Affine>,
    /// Bᵢ(τ)·G2, likewise.
    pub b_g2: Vec<G2Affine>,
    /// The circuit's recorded constraints, when it has them: then synthesis computes the
    /// witness only and the backend evaluates the constraints ([`R1cs`]). Not part of the
    /// parameter file; set by [`with_r1cs`](Self::with_r1cs), checked by
    /// [`validate`](Self::validate).
    pub r1cs: Option<Arc<R1cs>>,
}

/// What a prover keeps of its key on the host, the bases and the recorded constraints' matrices
/// left to its backends: the verifying key (to assemble and verify proofs), the counts
/// synthesis checks a circuit against and sizes its buffers by, the recording's counts.
#[derive(Debug, Clone)]
pub(crate) struct KeyShape {
    pub(crate) vk: VerifyingKey,
    domain_size: usize,
    num_aux: usize,
    a_len: usize,
    b_len: usize,
    /// The recorded constraints' counts, when the key has a recording.
    pub(crate) recording: Option<RecordingShape>,
}

impl KeyShape {
    /// Its partitions' lengths (the domain, the aux, the A and B queries').
    pub(crate) fn partition_lengths(&self) -> PartitionLengths {
        [self.domain_size, self.num_aux, self.a_len, self.b_len]
    }

    /// The shape of a key with this verifying key, query lengths h, l, a and b (b_g1 and
    /// b_g2 alike), and recording.
    pub(crate) fn new(vk: VerifyingKey, [h, l, a, b]: [usize; 4], recording: Option<RecordingShape>) -> Self {
        KeyShape { vk, domain_size: h + 1, num_aux: l, a_len: a, b_len: b, recording }
    }

    /// The shape of a key whose queries h, l, a, b_g1 and b_g2 hold `points`, checked: the
    /// two b queries agree, then [`validate`](Self::validate). A key in memory and a key in
    /// its file are checked by this one function.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] naming the first invariant that fails.
    pub(crate) fn checked(vk: VerifyingKey, points: [usize; 5], recording: Option<RecordingShape>) -> Result<Self> {
        let [h, l, a, b_g1, b_g2] = points;
        if b_g1 != b_g2 {
            return Err(Error::InvalidKey("b_g1 and b_g2 queries differ in length"));
        }
        let shape = KeyShape::new(vk, [h, l, a, b_g1], recording);
        shape.validate()?;
        Ok(shape)
    }

    /// Checks the invariants of its counts and verifying key that a prover relies on.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] naming the first one that fails.
    pub(crate) fn validate(&self) -> Result<()> {
        let vars = self.num_inputs() + self.num_aux();
        let fail = |reason| Err(Error::InvalidKey(reason));
        if !self.domain_size().is_power_of_two() {
            return fail("h query length + 1 is not a power of two");
        }
        if self.num_inputs() == 0 {
            return fail("ic query is empty (it must hold at least the constant one)");
        }
        if self.a_len() < self.num_inputs() {
            return fail("a query is shorter than the ic query: it must hold a point for every input");
        }
        // The aux variables are counted by the l query, so a short l shows up here first.
        if self.a_len() > vars {
            return fail("l query is shorter than the aux variables the a query uses (or the a query is too long)");
        }
        if self.b_len() > vars {
            return fail("l query is shorter than the aux variables the b queries use (or the b queries are too long)");
        }
        if bool::from(self.vk.delta_g1.is_identity() | self.vk.delta_g2.is_identity()) {
            // A zero delta lets anyone forge proofs; bellperson refuses it too.
            return fail("delta is the identity");
        }
        Ok(())
    }

    pub(crate) fn num_inputs(&self) -> usize {
        self.vk.ic.len()
    }

    pub(crate) fn num_aux(&self) -> usize {
        self.num_aux
    }

    pub(crate) fn domain_size(&self) -> usize {
        self.domain_size
    }

    pub(crate) fn a_len(&self) -> usize {
        self.a_len
    }

    pub(crate) fn b_len(&self) -> usize {
        self.b_len
    }
}

impl ProvingKey {
    /// A key from its parts (no recorded constraints).
    pub fn new(
        vk: VerifyingKey,
        h: Vec<G1Affine>,
        l: Vec<G1Affine>,
        a: Vec<G1Affine>,
        b_g1: Vec<G1Affine>,
        b_g2: Vec<G2Affine>,
    ) -> Self {
        ProvingKey { vk, h, l, a, b_g1, b_g2, r1cs: None }
    }

    /// Public inputs, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.vk.ic.len()
    }

    /// Auxiliary (private) variables.
    pub fn num_aux(&self) -> usize {
        self.l.len()
    }

    /// Domain size m: constraints plus inputs, rounded up to a power of two.
    pub fn domain_size(&self) -> usize {
        self.h.len() + 1
    }

    /// Points of the A query: every input, then the aux variables A uses.
    pub fn a_len(&self) -> usize {
        self.a.len()
    }

    /// Points of each B query: the variables B uses.
    pub fn b_len(&self) -> usize {
        self.b_g1.len()
    }

    /// Points of h, l, a, b_g1 and b_g2.
    pub(crate) fn points(&self) -> [usize; 5] {
        [self.h.len(), self.l.len(), self.a.len(), self.b_g1.len(), self.b_g2.len()]
    }

    /// What a prover keeps of this key on the host.
    pub(crate) fn shape(&self) -> KeyShape {
        let lengths = [self.h.len(), self.l.len(), self.a.len(), self.b_g1.len()];
        KeyShape::new(self.vk.clone(), lengths, self.r1cs.as_deref().map(R1cs::shape))
    }

    /// This key with `r1cs`, its circuit's recorded constraints.
    ///
    /// # Errors
    /// [`Error::Shape`] when the recording is not of this key's circuit shape
    /// ([`R1cs::check_against`]).
    pub fn with_r1cs(mut self, r1cs: impl Into<Arc<R1cs>>) -> Result<Self> {
        let r1cs = r1cs.into();
        r1cs.check_against(&self)?;
        self.r1cs = Some(r1cs);
        Ok(self)
    }

    /// Checks the invariants a prover relies on.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] naming the first one that fails; [`Error::Shape`] when the
    /// recorded constraints are not of this key's circuit shape.
    pub fn validate(&self) -> Result<()> {
        KeyShape::checked(self.vk.clone(), self.points(), None)?;
        match &self.r1cs {
            Some(r1cs) => r1cs.check_against(self),
            None => Ok(()),
        }
    }
}

/// A Groth16 proof: A ∈ G1, B ∈ G2, C ∈ G1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proof {
    /// A.
    pub a: G1Affine,
    /// B.
    pub b: G2Affine,
    /// C.
    pub c: G1Affine,
}

impl Proof {
    /// Compressed encoding A ‖ B ‖ C (48 + 96 + 48 bytes), as bellperson writes it.
    pub fn to_bytes(&self) -> [u8; PROOF_BYTES] {
        let mut out = [0u8; PROOF_BYTES];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }
}

impl Proof {
    /// Reads [`to_bytes`](Self::to_bytes)' encoding (and bellperson's), checking that each
    /// point is on its curve and in its prime-order subgroup.
    ///
    /// # Errors
    /// [`Error::Decode`] naming the point that does not decode.
    pub fn from_bytes(bytes: &[u8; PROOF_BYTES]) -> Result<Self> {
        fn decode<T>(point: Option<T>, what: &str, offset: u64) -> Result<T> {
            point.ok_or_else(|| Error::Decode {
                what: format!("proof point {what}"),
                offset,
                reason: "not a compressed point of the prime-order subgroup",
            })
        }
        let a = decode(G1Affine::from_compressed(bytes[..48].try_into().expect("48 bytes")).into(), "A", 0)?;
        let b = decode(G2Affine::from_compressed(bytes[48..144].try_into().expect("96 bytes")).into(), "B", 48)?;
        let c = decode(G1Affine::from_compressed(bytes[144..].try_into().expect("48 bytes")).into(), "C", 144)?;
        Ok(Proof { a, b, c })
    }
}
