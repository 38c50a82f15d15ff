//! The CPU backend: the h stage and the MSMs on a rayon pool of its own (never the caller's
//! global pool, whose workers may all be blocked waiting for proofs). It proves exactly as
//! bellperson does and is the reference the GPU backend is checked against.

use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective};

use super::Backend;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::groth16::prover::MsmSums;
use crate::groth16::ProvingKey;
use crate::msm::msm;
use crate::synth::Witness;
use crate::timings::PartitionTimings;

/// CPU kernels on a thread pool; keeps the NTT tables of the last domain size it saw.
#[derive(Debug)]
pub struct CpuBackend {
    pool: Arc<rayon::ThreadPool>,
    domain: Option<Domain>,
}

impl CpuBackend {
    /// A backend with a pool of its own, one thread per core.
    ///
    /// # Errors
    /// [`Error::Config`] when the pool's threads cannot be started.
    pub fn new() -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("pinprove-cpu-{i}"))
            .build()
            .map_err(|e| Error::Spawn(std::io::Error::other(e)))?;
        Ok(Self::with_pool(Arc::new(pool)))
    }

    /// A backend whose kernels run on `pool` (a prover shares its compute pool this way).
    pub fn with_pool(pool: Arc<rayon::ThreadPool>) -> Self {
        CpuBackend { pool, domain: None }
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn h(&mut self, key: &ProvingKey, w: &mut Witness, t: &mut PartitionTimings) -> Result<()> {
        let start = Instant::now();
        let m = key.domain_size();
        // The tables too are computed in parallel: on this backend's pool, like the transforms.
        let domain = match self.domain.take() {
            Some(d) if d.size() == m => d,
            _ => self.pool.install(|| Domain::new(m))?,
        };
        self.pool.install(|| domain.compute_h(&mut w.abc.a, &mut w.abc.b, &mut w.abc.c));
        self.domain = Some(domain);
        t.ntt += start.elapsed();
        Ok(())
    }

    fn msm(&mut self, key: &ProvingKey, w: &Witness, t: &mut PartitionTimings) -> Result<MsmSums> {
        let start = Instant::now();
        let h = &w.abc.a[..key.domain_size() - 1];
        let (a, b) = (&*w.a_scalars, &*w.b_scalars);
        // B in G2 alongside the G1 sums, as a GPU backend overlaps it with its G1 MSMs.
        let ((h, l), ((a, b_g1), b_g2)) = self.pool.install(|| {
            rayon::join(
                || rayon::join(|| msm::<G1Projective>(&key.h, h), || msm::<G1Projective>(&key.l, &w.aux)),
                || {
                    rayon::join(
                        || rayon::join(|| msm::<G1Projective>(&key.a, a), || msm::<G1Projective>(&key.b_g1, b)),
                        || msm::<G2Projective>(&key.b_g2, b),
                    )
                },
            )
        });
        t.msm += start.elapsed();
        Ok(MsmSums { h, l, a, b_g1, b_g2 })
    }
}
