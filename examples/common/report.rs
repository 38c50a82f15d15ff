//! The examples' batch report: throughput, per-stage timings, busy fraction, pool counters.

use std::time::{Duration, Instant};

use pinprove::groth16::{verify_proof, PreparedVerifyingKey};
use pinprove::{PartitionTimings, PoolStats, Prover};

use super::MimcChain;

/// Proves `circuits` as one batch, verifies every proof, and prints the report.
pub fn run_batch(
    prover: &Prover,
    circuits: Vec<MimcChain>,
    pvk: &PreparedVerifyingKey,
) -> Result<(), Box<dyn std::error::Error>> {
    let inputs: Vec<_> = circuits.iter().map(MimcChain::public_inputs).collect();
    let n = circuits.len();
    let start = Instant::now();
    let results = prover.prove(circuits)?;
    let wall = start.elapsed();
    for (i, (result, inputs)) in results.into_iter().zip(&inputs).enumerate() {
        if !verify_proof(pvk, &result?, inputs)? {
            return Err(format!("proof {i} does not verify").into());
        }
    }
    println!("  backend {}: {n}/{n} proofs verified", prover.backend());
    print_batch(n, wall, &prover.take_timings(), &prover.pool().stats(), prover.pool().is_pinned());
    Ok(())
}

type Stage = fn(&PartitionTimings) -> Duration;

const STAGES: [(&str, Stage); 14] = [
    ("synthesis", |t| t.synthesis),
    ("queue wait", |t| t.queue_wait),
    ("input wait", |t| t.input_wait),
    ("gpu lock wait", |t| t.gpu_lock_wait),
    ("gpu lock held", |t| t.gpu_lock_held),
    ("h2d", |t| t.h2d),
    ("ntt: intt+shift", |t| t.ntt_steps.intt),
    ("ntt: coset ntt", |t| t.ntt_steps.coset_ntt),
    ("ntt: quotient", |t| t.ntt_steps.quotient),
    ("ntt: coset intt", |t| t.ntt_steps.coset_intt),
    ("ntt (h stage)", |t| t.ntt),
    ("d2h", |t| t.d2h),
    ("msm", |t| t.msm),
    ("busy", |t| t.gpu_busy),
];

/// Prints one batch: `proofs` proofs in `wall`, their partitions' timings and the pool's stats.
pub fn print_batch(proofs: usize, wall: Duration, timings: &[PartitionTimings], pool: &PoolStats, pinned: bool) {
    let total = PartitionTimings::total(timings);
    println!("  batch:      {:>9.3} s  {:.2} proofs/s", wall.as_secs_f64(), proofs as f64 / wall.as_secs_f64());
    println!("  per partition             mean ms     max ms");
    for (name, stage) in STAGES {
        let max = timings.iter().map(stage).max().unwrap_or_default();
        if max.is_zero() {
            continue; // a stage this backend does not have
        }
        let mean = stage(&total) / timings.len().max(1) as u32;
        println!("    {name:<20} {:>10.2} {:>10.2}", ms(mean), ms(max));
    }
    println!(
        "  proving thread busy: {:.1} % of the batch's wall time",
        100.0 * total.gpu_busy.as_secs_f64() / wall.as_secs_f64()
    );
    println!(
        "  pool: {} allocations ({:.3} s), {} reuses, {} fallbacks; checkouts {} = checkins {}; peak {:.1} MiB held, {:.1} MiB in use; pinned: {pinned}",
        pool.allocations,
        pool.alloc_time.as_secs_f64(),
        pool.reuses,
        pool.fallbacks,
        pool.checkouts,
        pool.checkins,
        mib(pool.peak_bytes_pinned),
        mib(pool.peak_bytes_in_use),
    );
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}
