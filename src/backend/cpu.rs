//! The CPU backend: the h stage and the MSMs on the global rayon pool. It proves exactly as
//! bellperson does and is the reference the GPU backend is checked against.

use std::time::Instant;

use blstrs::{G1Projective, G2Projective, Scalar};

use super::Backend;
use crate::domain::Domain;
use crate::error::Result;
use crate::groth16::prover::MsmSums;
use crate::groth16::ProvingKey;
use crate::msm::msm;
use crate::synth::Witness;
use crate::timings::PartitionTimings;

/// CPU kernels; keeps the NTT tables of the last domain size it saw.
#[derive(Debug, Default)]
pub struct CpuBackend {
    domain: Option<Domain>,
}

impl CpuBackend {
    /// A backend with no tables yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn h(&mut self, key: &ProvingKey, w: &mut Witness, t: &mut PartitionTimings) -> Result<()> {
        let start = Instant::now();
        let m = key.domain_size();
        let domain = match self.domain.take() {
            Some(d) if d.size() == m => d,
            _ => Domain::new(m)?,
        };
        domain.compute_h(&mut w.abc.a, &mut w.abc.b, &mut w.abc.c);
        self.domain = Some(domain);
        t.ntt += start.elapsed();
        Ok(())
    }

    fn msm(&mut self, key: &ProvingKey, w: &Witness, t: &mut PartitionTimings) -> Result<MsmSums> {
        let start = Instant::now();
        let h = &w.abc.a[..key.domain_size() - 1];
        let a_scalars: Vec<Scalar> = w.input.iter().copied().chain(w.a_aux_density.gather(&w.aux)).collect();
        let b_scalars: Vec<Scalar> = w.b_input_density.gather(&w.input).chain(w.b_aux_density.gather(&w.aux)).collect();
        // B in G2 alongside the G1 sums, as a GPU backend overlaps it with its G1 MSMs.
        let ((h, l), ((a, b_g1), b_g2)) = rayon::join(
            || rayon::join(|| msm::<G1Projective>(&key.h, h), || msm::<G1Projective>(&key.l, &w.aux)),
            || {
                rayon::join(
                    || {
                        rayon::join(
                            || msm::<G1Projective>(&key.a, &a_scalars),
                            || msm::<G1Projective>(&key.b_g1, &b_scalars),
                        )
                    },
                    || msm::<G2Projective>(&key.b_g2, &b_scalars),
                )
            },
        );
        t.msm += start.elapsed();
        Ok(MsmSums { h, l, a, b_g1, b_g2 })
    }
}
