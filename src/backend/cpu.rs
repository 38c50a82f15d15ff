//! The CPU backend: the h stage and the MSMs on a rayon pool of its own (never the caller's
//! global pool, whose workers may all be blocked waiting for proofs). It proves exactly as
//! bellperson does and is the reference the GPU backend is checked against.

use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;

use super::Backend;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::groth16::MsmSums;
use crate::groth16::ProvingKey;
use crate::msm::{msm, split_or_whole};
use crate::r1cs::Z;
use crate::synth::{Assignment, Witness};
use crate::timings::PartitionTimings;

/// CPU kernels on a thread pool; keeps the NTT tables of the last domain size it saw, and the
/// vectors of recorded partitions (their aux expanded, their evaluations and MSM scalars,
/// which synthesis did not compute).
#[derive(Debug)]
pub struct CpuBackend {
    key: Arc<ProvingKey>,
    pool: Arc<rayon::ThreadPool>,
    domain: Option<Domain>,
    recorded: Recorded,
}

/// What a recorded partition's products fill: its aux expanded, a/b/c (then h in
/// `abc[0]`), and the A and B scalars. Kept from one partition to the next.
#[derive(Debug, Default)]
struct Recorded {
    aux: Vec<Scalar>,
    abc: [Vec<Scalar>; 3],
    a_scalars: Vec<Scalar>,
    b_scalars: Vec<Scalar>,
}

impl CpuBackend {
    /// A backend for `key` with a pool of its own, one thread per core.
    ///
    /// # Errors
    /// [`Error::Spawn`] when the pool's threads cannot be started.
    pub fn new(key: Arc<ProvingKey>) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("pinprove-cpu-{i}"))
            .build()
            .map_err(|e| Error::Spawn(std::io::Error::other(e)))?;
        Ok(Self::with_pool(key, Arc::new(pool)))
    }

    /// A backend for `key` whose kernels run on `pool` (a prover shares its compute pool this
    /// way).
    pub fn with_pool(key: Arc<ProvingKey>, pool: Arc<rayon::ThreadPool>) -> Self {
        CpuBackend { key, pool, domain: None, recorded: Recorded::default() }
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn h(&mut self, w: &mut Witness, t: &mut PartitionTimings) -> Result<()> {
        let key = Arc::clone(&self.key);
        let m = key.domain_size();
        if let Assignment::Packed(packed) = &w.assignment {
            let start = Instant::now();
            let r1cs = key
                .r1cs
                .as_deref()
                .ok_or(Error::Backend("a witness-only partition of a key without recorded constraints".into()))?;
            let rec = &mut self.recorded;
            rec.aux.resize(packed.len(), Scalar::ZERO);
            rec.abc.iter_mut().for_each(|v| v.resize(m, Scalar::ZERO));
            let [a, b, c] = &mut rec.abc;
            self.pool.install(|| {
                packed.expand_into(&mut rec.aux);
                let z = Z { input: &w.input, aux: &rec.aux };
                r1cs.evaluate(z, [a, b, c])?;
                r1cs.gather(z, &mut rec.a_scalars, &mut rec.b_scalars)
            })?;
            t.constraints += start.elapsed();
        }
        let start = Instant::now();
        // The tables too are computed in parallel: on this backend's pool, like the transforms.
        let domain = match self.domain.take() {
            Some(d) if d.size() == m => d,
            _ => self.pool.install(|| Domain::new(m))?,
        };
        let [a, b, c] = match &mut w.assignment {
            Assignment::Evaluated(e) => [&mut *e.abc.a, &mut *e.abc.b, &mut *e.abc.c],
            Assignment::Packed(_) => self.recorded.abc.each_mut().map(|v| v.as_mut_slice()),
        };
        self.pool.install(|| domain.compute_h(a, b, c));
        self.domain = Some(domain);
        t.ntt += start.elapsed();
        Ok(())
    }

    fn evaluates_recorded_constraints(&self) -> bool {
        true
    }

    fn msm(&mut self, w: &Witness, t: &mut PartitionTimings) -> Result<MsmSums> {
        let (key, start) = (&self.key, Instant::now());
        let rec = &self.recorded;
        let [h, l, a, b]: [&[Scalar]; 4] = match &w.assignment {
            Assignment::Evaluated(e) => [&e.abc.a, &e.aux, &e.a_scalars, &e.b_scalars],
            Assignment::Packed(_) => [&rec.abc[0], &rec.aux, &rec.a_scalars, &rec.b_scalars],
        };
        let h = &h[..key.domain_size() - 1];
        // B in G2 alongside the G1 sums, as a GPU backend overlaps it with its G1 MSMs.
        let g1 = split_or_whole::<G1Projective>;
        let ((h, l), ((a, b_g1), b_g2)) = self.pool.install(|| {
            rayon::join(
                || rayon::join(|| msm::<G1Projective>(&key.h, h), || g1(&key.l, l)),
                || {
                    rayon::join(
                        || rayon::join(|| g1(&key.a, a), || g1(&key.b_g1, b)),
                        || split_or_whole::<G2Projective>(&key.b_g2, b),
                    )
                },
            )
        });
        t.msm += start.elapsed();
        t.msms_split += [l.1, a.1, b_g1.1, b_g2.1].into_iter().map(u32::from).sum::<u32>();
        Ok(MsmSums { h, l: l.0, a: a.0, b_g1: b_g1.0, b_g2: b_g2.0 })
    }
}
