//! The pacing study: how the dispatch throttle (queue depth) trades proving-thread busy time
//! against memory, for synthesis faster and slower than the proving thread.

use std::time::Instant;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use pinprove::{Config, PartitionTimings, Prover};

use super::plots::PacingRow;
use super::MimcChain;

/// A chain whose synthesis first recomputes the chain `extra` times: synthesis cost to order.
#[derive(Clone, Debug)]
pub struct Paced {
    /// The circuit proved.
    pub chain: MimcChain,
    /// Extra chain evaluations before synthesis.
    pub extra: u32,
}

impl Circuit<Scalar> for Paced {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let spin: Scalar = (0..self.extra).map(|_| self.chain.output()).sum();
        std::hint::black_box(spin);
        self.chain.synthesize(cs)
    }
}

/// Runs `jobs` partitions at queue depths 1, 2, 4, 8, with synthesis fast (the plain chain)
/// and slow (extra chain evaluations, chosen from the first run so that the synthesis threads
/// together deliver half the partitions the proving thread could take), and prints one row per
/// run, and returns the rows. `prover` makes a prover for a config (CPU or CUDA backend).
pub fn study(
    jobs: u64,
    constants: &std::sync::Arc<Vec<Scalar>>,
    base: Config,
    prover: &dyn Fn(Config) -> pinprove::Result<Prover>,
) -> pinprove::Result<Vec<PacingRow>> {
    let mut rows = Vec::new();
    println!("  synthesis  depth  proofs/s  proving busy %  h stage %  peak partitions out");
    let mut extra = 0;
    for (name, slow) in [("fast", false), ("slow", true)] {
        for depth in [1, 2, 4, 8] {
            let prover = prover(Config { queue_depth_per_device: depth, ..base })?;
            let work = if slow { extra } else { 0 };
            let circuits = (0..jobs).map(|x0| Paced { chain: MimcChain::new(x0, constants), extra: work }).collect();
            let start = Instant::now();
            let results = prover.prove(circuits)?;
            let wall = start.elapsed().as_secs_f64();
            results.into_iter().collect::<pinprove::Result<Vec<_>>>()?;
            let t = PartitionTimings::total(&prover.take_timings()).sums;
            let h_stage = (t.h2d + t.ntt).as_secs_f64();
            let s = prover.pool().stats();
            let partition = prover.partition_bytes();
            let row = PacingRow {
                depth,
                slow,
                proofs_per_s: jobs as f64 / wall,
                busy: 100.0 * t.proving.as_secs_f64() / wall,
            };
            println!(
                "  {name:<9} {depth:>6} {:>9.2} {:>15.1} {:>10.1} {:>20.1}",
                row.proofs_per_s,
                row.busy,
                100.0 * h_stage / wall,
                s.peak_bytes_checked_out as f64 / partition as f64
            );
            rows.push(row);
            if !slow && depth == 1 {
                // Aim for a synthesis rate of half the proving rate: each of the threads spends
                // 2·threads·busy per partition, the extra in timed chain evaluations.
                let eval = Instant::now();
                std::hint::black_box(MimcChain::new(0, constants).output());
                let eval = eval.elapsed().as_secs_f64();
                let target = 2.0 * base.synthesis_threads as f64 * t.proving.as_secs_f64() / jobs as f64;
                extra = ((target - t.synthesis.as_secs_f64() / jobs as f64).max(0.0) / eval).ceil() as u32;
            }
        }
        if !slow {
            println!("  (slow synthesis: {extra} extra chain evaluations per partition)");
        }
    }
    Ok(rows)
}
