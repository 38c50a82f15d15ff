//! The CUDA backend measured on its device, each figure beside its reference in one run:
//! H2D bandwidth from pinned pool buffers against pageable memory, NTT time per size against
//! the data-movement bound, G1 and G2 MSM times per size (bases resident, plain and shifted,
//! random scalars), MSMs of bit-heavy scalars through the plan over every scalar against the
//! split by value, the pipeline on the GPU against the CPU backend, and the pacing study
//! (queue depth against busy time and memory) on the CUDA backend.
//!
//! Flags: `--help` (see `USAGE` below).

mod common;

use std::time::{Duration, Instant};

use blstrs::Scalar;
use common::flags::Flags;
use common::timing_key::{g1_points, g2_points};
use common::{pacing, report, MimcChain};
use ff::Field;
use pinprove::backend::cuda::CudaDevice;
use pinprove::internal::cuda::{self, BasesLayout, Bench, MsmRun, SplitRun, Transform};
use pinprove::{generate_random_parameters, prepare_verifying_key};
use pinprove::{Config, PinnedPool, PinnedVec, PoolConfig, Prover};
use rayon::prelude::*;

/// What `--help` prints.
const USAGE: &str = "cargo run --release --features cuda --example gpu_report -- [--lg-m 16] [--proofs 32] \\
    [--max-lg-ntt 26] [--max-lg-msm 24] [--msm-windows 19,20] [--msm-bases both] [--msm-copies 2,3] \
    [--pacing-jobs 0]
`--proofs 0` stops after the bandwidth, NTT and MSM sections; `--split-others 17,40,62` times
the bit-heavy MSMs with that many others per thousand scalars (47.3 % ones, the rest zeros;
default 17, as Filecoin's PoRep witness; `\"\"` skips them); `--pacing-jobs 0` skips the
pacing study; `--msm-windows` times the MSMs at each of these window widths (2..=21 over plain
bases, 2..=24 over shifted ones) instead of the pipeline's choice; `--msm-bases` times them
over `plain` bases, `shifted` ones (a copy per window) or `both`; `--msm-copies` adds rows
over that many shifted copies, each serving a group of windows (at the pipeline's window); the
MSM rows run at 2^20, 2^22, .. up to `--max-lg-msm`, and at it where it is odd (27: PoRep's).";

/// Device memory bandwidth measured on the H200 (device-to-device copy, bytes read + written).
const DEVICE_BYTES_PER_S: f64 = 4.3e12;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let flags = Flags::parse(
        USAGE,
        &[
            "--lg-m",
            "--proofs",
            "--max-lg-ntt",
            "--max-lg-msm",
            "--msm-windows",
            "--msm-bases",
            "--msm-copies",
            "--split-others",
            "--pacing-jobs",
        ],
    )?;
    let (lg_m, proofs) = (flags.get("--lg-m", 16u32)?, flags.get("--proofs", 32usize)?);
    let (max_lg_ntt, max_lg_msm) = (flags.get("--max-lg-ntt", 26u32)?, flags.get("--max-lg-msm", 24u32)?);
    let pacing_jobs = flags.get("--pacing-jobs", 0u64)?;
    let list = |flag: &str, default: &str| -> Result<Vec<u32>, String> {
        match flags.get(flag, default.to_owned())?.as_str() {
            "" => Ok(Vec::new()),
            list => {
                list.split(',').map(|c| c.trim().parse()).collect::<Result<_, _>>().map_err(|e| format!("{flag}: {e}"))
            }
        }
    };
    let (windows, split_others) = (list("--msm-windows", "")?, list("--split-others", "17")?);
    let bases = flags.get("--msm-bases", String::from("both"))?;
    let mut layouts = match bases.as_str() {
        "plain" => vec![Layout::Plain],
        "shifted" => vec![Layout::Shifted],
        "both" => vec![Layout::Plain, Layout::Shifted],
        other => return Err(format!("--msm-bases: plain, shifted or both, not {other}").into()),
    };
    layouts.extend(list("--msm-copies", "")?.into_iter().map(|t| Layout::Copies(t as usize)));
    let device = CudaDevice::open(0)?;
    println!("pinprove gpu_report on {} (device 0)", device.name());
    let mut gpu = Bench::new(&device)?;

    h2d(&device, &mut gpu)?;
    ntt(&mut gpu, max_lg_ntt)?;
    msm(&mut gpu, max_lg_msm, &windows, &layouts)?;
    split(&mut gpu, max_lg_msm, &split_others)?;
    drop(gpu);
    if proofs == 0 {
        return Ok(());
    }
    pipeline(lg_m, proofs, pacing_jobs)
}

/// Pinned vs pageable H2D, best of five copies each.
fn h2d(device: &CudaDevice, gpu: &mut Bench) -> Result<(), Box<dyn std::error::Error>> {
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
/// read and one write of the vector at device bandwidth, the coset iNTT beside it (the
/// transform and its scaling by g⁻ⁱ/m), and the whole h stage of a partition (a, b, c to h).
fn ntt(gpu: &mut Bench, max_lg: u32) -> Result<(), Box<dyn std::error::Error>> {
    println!("\nNTT on the device (median of 3)   forward ms   bound ms   time/bound   coset iNTT ms   h stage ms");
    for lg in (16..=max_lg).step_by(2) {
        let n = 1usize << lg;
        let mut v: Vec<Scalar> = (0..n).into_par_iter().map(|i| Scalar::from(i as u64 + 1).square()).collect();
        let median = |run: &mut dyn FnMut() -> Result<Duration, pinprove::Error>| -> Result<f64, pinprove::Error> {
            run()?; // warm-up: tables and buffers of this size
            let mut times: Vec<Duration> = (0..3).map(|_| run()).collect::<Result<_, _>>()?;
            times.sort();
            Ok(times[1].as_secs_f64())
        };
        let forward = median(&mut || gpu.transform(&mut v, Transform::Ntt))?;
        let coset_intt = median(&mut || gpu.transform(&mut v, Transform::CosetIntt))?;
        let [mut a, mut b, mut c] =
            [v.clone(), v.iter().rev().copied().collect(), v.iter().map(|x| x.square()).collect()];
        let h = median(&mut || gpu.h_stage([&mut a, &mut b, &mut c]))?;
        let bound = (2 * 32 * n) as f64 / DEVICE_BYTES_PER_S;
        println!(
            "  2^{lg:<2}                          {:>10.3} {:>10.3} {:>12.1} {:>15.3} {:>12.3}",
            forward * 1e3,
            bound * 1e3,
            forward / bound,
            coset_intt * 1e3,
            h * 1e3
        );
    }
    Ok(())
}

/// How the MSM rows' bases are laid out on the device.
#[derive(Debug, Clone, Copy)]
enum Layout {
    Plain,
    /// A copy per window.
    Shifted,
    /// This many copies, each serving a group of windows.
    Copies(usize),
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layout::Plain => f.pad("plain"),
            Layout::Shifted => f.pad("shifted"),
            Layout::Copies(copies) => f.pad(&format!("{copies} copies")),
        }
    }
}

/// G1 and G2 MSMs with resident bases, plain or shifted (`layouts`), and random scalars:
/// median of 3 after a warm-up, split into the scalars' copy, the bucket sort (plan) and the
/// sums; at each of `windows` (bits), or at the pipeline's choice when it is empty (over
/// fewer copies: the pipeline's choice alone). Shifted bases are made for each size and
/// window (their setup: upload and copies, wall time).
fn msm(gpu: &mut Bench, max_lg: u32, windows: &[u32], layouts: &[Layout]) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "\nMSM on the device (median of 3)   bases    window   h2d ms   plan ms   sums ms   total ms   ns/point   setup s"
    );
    let n = 1usize << max_lg;
    let sizes = MsmSizes {
        max_lg,
        scalars: common::random_scalars(n, 13),
        choices: if windows.is_empty() { vec![None] } else { windows.iter().map(|&c| Some(c)).collect() },
        layouts,
    };
    sizes.rows(gpu, "G1", &g1_points(n, 11), |g, b, l| g.upload_g1_bases(b, l), |g, b, s, c| g.msm_g1(b, s, c))?;
    sizes.rows(gpu, "G2", &g2_points(n, 12), |g, b, l| g.upload_g2_bases(b, l), |g, b, s, c| g.msm_g2(b, s, c))?;
    Ok(())
}

/// MSMs of bit-heavy scalars, with `others` per thousand neither 0 nor 1 (Filecoin's PoRep
/// witness: 17), 47.3 % ones and the rest zeros, over shifted bases, the pipeline's placement,
/// in G1 and G2: the plan over every scalar against the split by value (`msm/split.rs`),
/// median of 3 after a warm-up each, and whether the two agree.
fn split(gpu: &mut Bench, max_lg: u32, others: &[u32]) -> Result<(), Box<dyn std::error::Error>> {
    if others.is_empty() {
        return Ok(()); // `--split-others ""`: no rows, so no shifted bases to make
    }
    println!("\nMSM of bit-heavy scalars (median of 3, shifted bases)   others   plan ms   split ms   equal");
    let n = 1usize << max_lg;
    let (g1, g2) = (g1_points(n, 11), g2_points(n, 12));
    for lg in (20..=max_lg).step_by(2) {
        let (g1, g2) = (&g1[..1 << lg], &g2[..1 << lg]);
        split_rows(gpu, ("G1", lg, others), g1, Bench::upload_g1_bases, Bench::msm_g1, Bench::split_msm_g1)?;
        split_rows(gpu, ("G2", lg, others), g2, Bench::upload_g2_bases, Bench::msm_g2, Bench::split_msm_g2)?;
    }
    Ok(())
}

/// A group's rows of [`split`] at one size, over its shifted bases made for them: a row that
/// does not fit the device says so, and the rows after it run; bases that do not fit take
/// one such line (at the first share) for the group's rows at that size.
fn split_rows<P, B, S: PartialEq>(
    gpu: &mut Bench,
    (group, lg, others): (&str, u32, &[u32]),
    points: &[P],
    upload: Upload<P, B>,
    msm: DeviceMsm<B, S>,
    split: SplitMsm<B, S>,
) -> pinprove::Result<()> {
    let bases = upload(gpu, points, BasesLayout::Shifted { window: None });
    let Some(bases) = fits(bases, || split_name(group, lg, others[0]))? else {
        return Ok(());
    };
    for &o in others {
        let s = bit_heavy(points.len(), u64::from(o));
        fits(split_row(gpu, (group, lg, o), &bases, &s, msm, split), || split_name(group, lg, o))?;
    }
    Ok(())
}

/// A split row's first columns: its group, size and share of other scalars.
fn split_name(group: &str, lg: u32, others: u32) -> String {
    format!("  {group} 2^{lg:<2}                                {:>5.1} %", f64::from(others) / 10.0)
}

/// `n` scalars, `others` per thousand neither 0 nor 1, 473 per thousand ones, the rest zeros,
/// spread by a multiplicative hash of the index.
fn bit_heavy(n: usize, others: u64) -> Vec<Scalar> {
    (0..n as u64)
        .map(|i| match i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 1000 {
            k if k < others => Scalar::from(i + 2),
            k if k < others + 473 => Scalar::ONE,
            _ => Scalar::ZERO,
        })
        .collect()
}

/// A group's split MSM.
type SplitMsm<B, S> = fn(&mut Bench, &B, &[Scalar]) -> pinprove::Result<(Option<S>, SplitRun)>;

/// One row of [`split`]: the plan's and the split's median device times over `bases`.
fn split_row<B, S: PartialEq>(
    gpu: &mut Bench,
    (group, lg, others): (&str, u32, u32),
    bases: &B,
    s: &[Scalar],
    msm: DeviceMsm<B, S>,
    split: SplitMsm<B, S>,
) -> pinprove::Result<()> {
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[1]
    };
    let (all, parts) = (msm(gpu, bases, s, None)?.0, split(gpu, bases, s)?.0);
    let plan = median((0..3).map(|_| msm(gpu, bases, s, None).map(|r| r.1.plan + r.1.sums)).collect::<Result<_, _>>()?);
    let taken = median((0..3).map(|_| split(gpu, bases, s).map(|r| r.1.msm)).collect::<Result<_, _>>()?);
    let equal = parts.map_or("split refused".to_owned(), |p| (p == all).to_string());
    println!("{} {:>9.2} {:>10.2}   {equal}", split_name(group, lg, others), report::ms(plan), report::ms(taken));
    Ok(())
}

/// What the MSM rows are timed on.
struct MsmSizes<'a> {
    max_lg: u32,
    scalars: Vec<Scalar>,
    choices: Vec<Option<u32>>,
    layouts: &'a [Layout],
}

/// A group's bases uploaded to the device, laid out as asked.
type Upload<P, B> = fn(&mut Bench, &[P], BasesLayout) -> pinprove::Result<B>;

/// A group's MSM on the device.
type DeviceMsm<B, S> = fn(&mut Bench, &B, &[Scalar], Option<u32>) -> pinprove::Result<(S, MsmRun)>;

impl MsmSizes<'_> {
    /// One group's rows: each layout, size 2^20, 2^22, .. (and 2^max_lg where it is odd:
    /// 2^27, Filecoin's PoRep) and window choice. A row whose bases or scratch do not fit the
    /// device says so, and the report goes on.
    fn rows<P, B, S>(
        &self,
        gpu: &mut Bench,
        group: &str,
        points: &[P],
        upload: Upload<P, B>,
        msm: DeviceMsm<B, S>,
    ) -> pinprove::Result<()> {
        for &layout in self.layouts {
            let plain = matches!(layout, Layout::Plain).then(|| upload(gpu, points, BasesLayout::Plain)).transpose();
            let Some(plain) = fits(plain, || row_name(group, self.max_lg, layout))? else {
                continue;
            };
            let odd_top = (self.max_lg % 2 == 1).then_some(self.max_lg);
            for lg in (20..=self.max_lg).step_by(2).chain(odd_top) {
                let choices = match layout {
                    Layout::Copies(_) => &[None][..],
                    _ => &self.choices,
                };
                for &c in choices {
                    let row = self.row(gpu, (group, lg, c, layout), plain.as_ref(), points, upload, msm);
                    fits(row, || row_name(group, lg, layout))?;
                }
            }
        }
        Ok(())
    }

    /// The row of one size, layout and window choice (over `plain` when the layout is plain).
    fn row<P, B, S>(
        &self,
        gpu: &mut Bench,
        (group, lg, c, layout): (&str, u32, Option<u32>, Layout),
        plain: Option<&B>,
        points: &[P],
        upload: Upload<P, B>,
        msm: DeviceMsm<B, S>,
    ) -> pinprove::Result<()> {
        let s = &self.scalars[..1 << lg];
        let start = Instant::now();
        let own;
        let (bases, window, setup, bits) = match (plain, layout) {
            (Some(plain), _) => (plain, c, String::new(), cuda::window_bits(1 << lg)),
            (None, Layout::Copies(copies)) => {
                own = upload(gpu, &points[..1 << lg], BasesLayout::Copies { copies })?;
                let setup = format!("{:>9.2}", start.elapsed().as_secs_f64());
                (&own, None, setup, cuda::copies_window_bits(1 << lg, copies).unwrap_or(0))
            }
            (None, _) => {
                own = upload(gpu, &points[..1 << lg], BasesLayout::Shifted { window: c })?;
                let setup = format!("{:>9.2}", start.elapsed().as_secs_f64());
                (&own, None, setup, cuda::shifted_window_bits(1 << lg))
            }
        };
        msm(gpu, bases, s, window)?; // warm-up
        let mut runs = (0..3).map(|_| msm(gpu, bases, s, window).map(|r| r.1)).collect::<Result<Vec<_>, _>>()?;
        runs.sort_by_key(|r| r.plan + r.sums);
        let (r, total) = (runs[1], runs[1].plan + runs[1].sums);
        println!(
            "{} {:>6} {:>8.2} {:>9.2} {:>9.2} {:>10.2} {:>10.2} {setup}",
            row_name(group, lg, layout),
            c.unwrap_or(bits),
            report::ms(r.h2d),
            report::ms(r.plan),
            report::ms(r.sums),
            report::ms(total),
            total.as_secs_f64() * 1e9 / (1u64 << lg) as f64
        );
        Ok(())
    }
}

/// An MSM row's first columns: its group, size and bases.
fn row_name(group: &str, lg: u32, layout: Layout) -> String {
    format!("  {group} 2^{lg:<2}                 {layout:<8}")
}

/// `result`'s value; `None`, with a line naming the row (`row()`), when the device had no room
/// for it: the rows after it still run. Any other error ends the report.
fn fits<T>(result: pinprove::Result<T>, row: impl FnOnce() -> String) -> pinprove::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e @ pinprove::Error::DeviceOutOfMemory { .. }) => {
            println!("{} does not fit: {e}", row());
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The same batch through the CUDA backend and the CPU backend, then the pacing study.
fn pipeline(lg_m: u32, proofs: usize, pacing_jobs: u64) -> Result<(), Box<dyn std::error::Error>> {
    let constants = MimcChain::constants(MimcChain::rounds_for_domain(lg_m));
    let circuits = || (0..proofs as u64).map(|x0| MimcChain::new(x0, &constants)).collect::<Vec<_>>();
    let start = Instant::now();
    let key = generate_random_parameters(MimcChain::new(0, &constants), &mut rand::thread_rng())?;
    println!("\npipeline: {proofs} proofs of a 2^{lg_m} domain (setup {:.1} s)", start.elapsed().as_secs_f64());
    let pvk = prepare_verifying_key(&key.vk);
    let config = Config::default();
    println!(
        " cuda backend, pinned pool, {} synthesis threads, depth {}",
        config.synthesis_threads, config.queue_depth_per_device
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
