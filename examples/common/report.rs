//! The examples' batch report: a progress line while a batch runs, then throughput, stage
//! timings, busy fractions and pool counters.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use pinprove::{verify_proof, PreparedVerifyingKey};
use pinprove::{Circuit, Field, PartitionTimings, PoolStats, Proof, Prover, Scalar};

use super::MimcChain;

/// Submits every circuit (fresh random r, s) and waits for each answer in turn; on a terminal,
/// a progress line (done/total, proofs/s, ETA) is kept up to date.
pub fn prove_with_progress<C>(prover: &Prover, circuits: Vec<C>) -> Vec<pinprove::Result<Proof>>
where
    C: Circuit<Scalar> + Send + 'static,
{
    let (total, start) = (circuits.len(), Instant::now());
    let mut rng = rand::thread_rng();
    let pending: Vec<_> =
        circuits.into_iter().map(|c| prover.submit(c, Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
    let progress = std::io::stderr().is_terminal();
    let mut results = Vec::with_capacity(total);
    for p in pending {
        results.push(p.wait());
        if progress {
            let (done, seconds) = (results.len(), start.elapsed().as_secs_f64());
            let rate = done as f64 / seconds;
            eprint!("\r  {done}/{total} proofs, {rate:.2} proofs/s, ETA {:.0} s   ", (total - done) as f64 / rate);
            let _ = std::io::stderr().flush();
        }
    }
    if progress {
        eprintln!();
    }
    results
}

/// Proves `circuits` as one batch, verifies every proof, prints the report and returns the
/// batch's timings.
pub fn run_batch(
    prover: &Prover,
    circuits: Vec<MimcChain>,
    pvk: &PreparedVerifyingKey,
) -> Result<Vec<PartitionTimings>, Box<dyn std::error::Error>> {
    let inputs: Vec<_> = circuits.iter().map(MimcChain::public_inputs).collect();
    let n = circuits.len();
    let start = Instant::now();
    let results = prove_with_progress(prover, circuits);
    let wall = start.elapsed();
    for (i, (result, inputs)) in results.into_iter().zip(&inputs).enumerate() {
        if !verify_proof(pvk, &result?, inputs)? {
            return Err(format!("proof {i} does not verify").into());
        }
    }
    println!("  backend {}: {n}/{n} proofs verified", prover.backend());
    let timings = prover.take_timings();
    print_batch(n, wall, &timings, &prover.pool().stats(), prover.pool().is_pinned());
    Ok(timings)
}

type Stage = fn(&PartitionTimings) -> Duration;

const STAGES: [(&str, Stage); 20] = [
    ("synthesis", |t| t.synthesis),
    ("queue wait", |t| t.queue_wait),
    ("input wait", |t| t.input_wait),
    ("device lock wait", |t| t.device_lock_wait),
    ("device lock held", |t| t.device_lock_held),
    ("h2d", |t| t.h2d),
    ("constraints (A·z, B·z, C·z)", |t| t.constraints),
    ("ntt: intt+shift", |t| t.ntt_steps.intt),
    ("ntt: coset ntt", |t| t.ntt_steps.coset_ntt),
    ("ntt: coset intt", |t| t.ntt_steps.coset_intt),
    ("ntt (h stage)", |t| t.ntt),
    ("msm: h (G1)", |t| t.msm_steps.h),
    ("msm: l (G1)", |t| t.msm_steps.l),
    ("msm: a (G1)", |t| t.msm_steps.a),
    ("msm: b (G1)", |t| t.msm_steps.b_g1),
    ("msm: b (G2)", |t| t.msm_steps.b_g2),
    ("msm", |t| t.msm),
    ("busy", |t| t.proving),
    ("assemble (compute)", |t| t.assemble),
    ("verify (compute)", |t| t.verify),
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
        let mean = timings.iter().map(stage).sum::<Duration>() / timings.len().max(1) as u32;
        println!("    {name:<20} {:>10.2} {:>10.2}", ms(mean), ms(max));
    }
    println!(
        "  proving thread busy: {:.1} % of the batch's wall time",
        100.0 * total.sums.proving.as_secs_f64() / wall.as_secs_f64()
    );
    let mean = |bytes: fn(&PartitionTimings) -> usize| {
        mib(timings.iter().map(bytes).sum::<usize>()) / timings.len().max(1) as f64
    };
    println!(
        "  per partition: its witness held {:.2} MiB of the pool's, {:.2} MiB copied to the device; {:.2} of 4 witness MSMs split by value",
        mean(|t| t.witness_bytes),
        mean(|t| t.h2d_bytes),
        timings.iter().map(|t| t.msms_split as f64).sum::<f64>() / timings.len().max(1) as f64
    );
    let device = PartitionTimings::device_busy(timings);
    if !device.is_zero() {
        println!(
            "  device busy (union of its copy and kernel intervals): {:.1} % of the batch's wall time",
            100.0 * device.as_secs_f64() / wall.as_secs_f64()
        );
    }
    println!(
        "  pool: {} allocations ({:.3} s), {} reuses, {} fallbacks; checkouts {} = checkins {}; peak {:.1} MiB held, {:.1} MiB in use; pinned: {pinned}",
        pool.allocations,
        pool.alloc_time.as_secs_f64(),
        pool.reuses,
        pool.fallbacks,
        pool.checkouts,
        pool.checkins,
        mib(pool.peak_bytes_held),
        mib(pool.peak_bytes_in_use),
    );
}

/// Peak resident memory of this process, in bytes (Linux).
pub fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok());
    kb.unwrap_or(0u64) * 1024
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}
