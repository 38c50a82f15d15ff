//! The CUDA backend measured on its device, each figure beside its reference in one run:
//! H2D bandwidth from pinned pool buffers against pageable memory, NTT time per size against
//! the data-movement bound, G1 and G2 MSM times per size (bases resident, random scalars), the
//! pipeline on the GPU against the CPU backend, and the pacing study (queue depth against busy
//! time and memory) on the CUDA backend.
//!
//! Flags: `--help` (see `USAGE` below).

mod common;

use std::time::{Duration, Instant};

use blstrs::Scalar;
use common::flags::Flags;
use common::timing_key::{g1_points, g2_points};
use common::{pacing, report, MimcChain};
use ff::Field;
use pinprove::backend::cuda::{self, CudaBackend, CudaDevice, MsmRun, Transform};
use pinprove::groth16::{generator, prepare_verifying_key};
use pinprove::{Config, PinnedPool, PinnedVec, PoolConfig, Prover};
use rayon::prelude::*;

/// What `--help` prints.
const USAGE: &str = "cargo run --release --features cuda --example gpu_report -- [--lg-m 16] [--proofs 32] \\
    [--max-lg-ntt 26] [--max-lg-msm 24] [--msm-windows 19,20] [--pacing-jobs 0]
`--proofs 0` stops after the bandwidth, NTT and MSM sections; `--pacing-jobs 0` skips the
pacing study; `--msm-windows` times the MSMs at each of these window widths (2..=21) instead
of the pipeline's choice.";

/// Device memory bandwidth measured on the H200 (device-to-device copy, bytes read + written).
const DEVICE_BYTES_PER_S: f64 = 4.3e12;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let flags =
        Flags::parse(USAGE, &["--lg-m", "--proofs", "--max-lg-ntt", "--max-lg-msm", "--msm-windows", "--pacing-jobs"])?;
    let (lg_m, proofs) = (flags.get("--lg-m", 16u32)?, flags.get("--proofs", 32usize)?);
    let (max_lg_ntt, max_lg_msm) = (flags.get("--max-lg-ntt", 26u32)?, flags.get("--max-lg-msm", 24u32)?);
    let pacing_jobs = flags.get("--pacing-jobs", 0u64)?;
    let windows: Vec<u32> = match flags.get("--msm-windows", String::new())?.as_str() {
        "" => Vec::new(),
        list => list
            .split(',')
            .map(|c| c.trim().parse())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("--msm-windows: {e}"))?,
    };
    let device = CudaDevice::open(0)?;
    println!("pinprove gpu_report on {} (device 0)", device.name());
    let mut gpu = device.bare_backend()?;

    h2d(&device, &mut gpu)?;
    ntt(&mut gpu, max_lg_ntt)?;
    msm(&mut gpu, max_lg_msm, &windows)?;
    drop(gpu);
    if proofs == 0 {
        return Ok(());
    }
    pipeline(lg_m, proofs, pacing_jobs)
}

/// Pinned vs pageable H2D, best of five copies each.
fn h2d(device: &CudaDevice, gpu: &mut CudaBackend) -> Result<(), Box<dyn std::error::Error>> {
    println!("\nH2D bandwidth (best of 5)            pinned pool buffer   pageable Vec");
    let pool = PinnedPool::with_allocator(PoolConfig::default(), device.pinned_allocator());
    for lg in [21u32, 25, 27] {
        let n = 1usize << lg;
        let mut pinned = PinnedVec::<Scalar>::checkout(&pool, n)?;
        pinned.resize(n, Scalar::ONE)?;
        let pageable = vec![Scalar::ONE; n];
        let mut best = |src: &[Scalar]| -> Result<f64, pinprove::Error> {
            let mut t = Duration::MAX;
            for _ in 0..5 {
                t = t.min(gpu.time_h2d(src)?);
            }
            Ok((n * 32) as f64 / t.as_secs_f64() / 1e9)
        };
        let (p, q) = (best(&pinned)?, best(&pageable)?);
        println!("  {:>6} MiB                        {p:>12.1} GB/s {q:>12.1} GB/s", (n * 32) >> 20);
    }
    let s = pool.stats();
    println!("  pinning: {} allocations, {:.3} s in cuMemHostAlloc", s.allocations, s.alloc_time.as_secs_f64());
    Ok(())
}

/// Forward NTT device time per size (median of 3 after a warm-up) against the bound of one
/// read and one write of the vector at device bandwidth, and the coset iNTT beside it (the
/// h stage's last step: the transform and its scaling by g⁻ⁱ/m).
fn ntt(gpu: &mut CudaBackend, max_lg: u32) -> Result<(), Box<dyn std::error::Error>> {
    println!("\nNTT on the device (median of 3)   forward ms   bound ms   time/bound   coset iNTT ms");
    for lg in (16..=max_lg).step_by(2) {
        let n = 1usize << lg;
        let mut v: Vec<Scalar> = (0..n).into_par_iter().map(|i| Scalar::from(i as u64 + 1).square()).collect();
        let mut median = |t: Transform| -> Result<f64, pinprove::Error> {
            gpu.transform(&mut v, t)?; // warm-up: tables and buffers of this size
            let mut times: Vec<Duration> = (0..3).map(|_| gpu.transform(&mut v, t)).collect::<Result<_, _>>()?;
            times.sort();
            Ok(times[1].as_secs_f64())
        };
        let (forward, coset_intt) = (median(Transform::Ntt)?, median(Transform::CosetIntt)?);
        let bound = (2 * 32 * n) as f64 / DEVICE_BYTES_PER_S;
        println!(
            "  2^{lg:<2}                          {:>10.3} {:>10.3} {:>12.1} {:>15.3}",
            forward * 1e3,
            bound * 1e3,
            forward / bound,
            coset_intt * 1e3
        );
    }
    Ok(())
}

/// G1 and G2 MSMs with resident bases and random scalars: median of 3 after a warm-up, split
/// into the scalars' copy, the bucket sort (plan) and the sums; at each of `windows` (bits),
/// or at the pipeline's choice when it is empty.
fn msm(gpu: &mut CudaBackend, max_lg: u32, windows: &[u32]) -> Result<(), Box<dyn std::error::Error>> {
    println!("\nMSM on the device (median of 3)   window   h2d ms   plan ms   sums ms   total ms   ns/point");
    let row = |group: &str, lg: u32, c: u32, runs: &mut Vec<MsmRun>| {
        runs.sort_by_key(|r| r.plan + r.sums);
        let r = runs[1];
        let total = r.plan + r.sums;
        println!(
            "  {group} 2^{lg:<2}                          {c:>6} {:>8.2} {:>9.2} {:>9.2} {:>10.2} {:>10.2}",
            report::ms(r.h2d),
            report::ms(r.plan),
            report::ms(r.sums),
            report::ms(total),
            total.as_secs_f64() * 1e9 / (1u64 << lg) as f64
        );
    };
    let n = 1usize << max_lg;
    let scalars = common::random_scalars(n, 13);
    type Run<'a> = dyn FnMut(&[Scalar], Option<u32>) -> Result<MsmRun, pinprove::Error> + 'a;
    let choices: Vec<Option<u32>> =
        if windows.is_empty() { vec![None] } else { windows.iter().map(|&c| Some(c)).collect() };
    let sizes = |group: &str, run: &mut Run| {
        for lg in (20..=max_lg).step_by(2) {
            for &c in &choices {
                run(&scalars[..1 << lg], c)?; // warm-up
                let mut runs = (0..3).map(|_| run(&scalars[..1 << lg], c)).collect::<Result<Vec<_>, _>>()?;
                row(group, lg, c.unwrap_or_else(|| cuda::window_bits(1 << lg)), &mut runs);
            }
        }
        Ok::<(), pinprove::Error>(())
    };
    let bases = gpu.upload_g1_bases(&g1_points(n, 11))?;
    sizes("G1", &mut |s, c| gpu.msm_g1(&bases, s, c).map(|r| r.1))?;
    drop(bases);
    let bases = gpu.upload_g2_bases(&g2_points(n, 12))?;
    sizes("G2", &mut |s, c| gpu.msm_g2(&bases, s, c).map(|r| r.1))?;
    Ok(())
}

/// The same batch through the CUDA backend and the CPU backend, then the pacing study.
fn pipeline(lg_m: u32, proofs: usize, pacing_jobs: u64) -> Result<(), Box<dyn std::error::Error>> {
    let constants = MimcChain::constants(MimcChain::rounds_for_domain(lg_m));
    let circuits = || (0..proofs as u64).map(|x0| MimcChain::new(x0, &constants)).collect::<Vec<_>>();
    let start = Instant::now();
    let key = generator::generate_random_parameters(MimcChain::new(0, &constants), &mut rand::thread_rng())?;
    println!("\npipeline: {proofs} proofs of a 2^{lg_m} domain (setup {:.1} s)", start.elapsed().as_secs_f64());
    let pvk = prepare_verifying_key(&key.vk);
    let config = Config::default();
    println!(
        " cuda backend, pinned pool, {} synthesis threads, depth {}",
        config.synthesis_threads, config.max_gpu_queue_depth
    );
    let device = CudaDevice::open(0)?;
    let gpu =
        Prover::with_backends(key.clone(), config, device.pinned_pool(config.pool), vec![device.backend_factory()])?;
    report::run_batch(&gpu, circuits(), &pvk)?;
    drop(gpu);
    println!(" cpu backend, same batch");
    let cpu = Prover::new(key.clone(), config)?;
    report::run_batch(&cpu, circuits(), &pvk)?;
    drop(cpu);
    if pacing_jobs == 0 {
        return Ok(());
    }
    println!(
        "\npacing study, cuda backend: {pacing_jobs} proofs of a 2^{lg_m} domain, {} synthesis threads",
        config.synthesis_threads
    );
    let key = std::sync::Arc::new(key);
    pacing::study(pacing_jobs, &constants, config, &|config| {
        Prover::with_backends(key.clone(), config, device.pinned_pool(config.pool), vec![device.backend_factory()])
    })?;
    Ok(())
}
