//! The CUDA backend against the CPU backend, bit for bit. Needs a GPU: run with
//! `--include-ignored` on the GPU machine (a skipped test is reported as ignored, never passed).
//! Each test checks many cases and reports every one that fails, not only the first: device
//! time is scarce, so one run should say all there is to say.

use bellperson::groth16 as bp;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use pinprove::backend::cuda::DeviceReport;
use pinprove::backend::cuda::{CudaDevice, KeyPlacement};
use pinprove::backend::{Backend, CpuBackend};
use pinprove::internal::cuda::{copies_window_bits, window_bits, BasesLayout, Bench, G1Bases, G2Bases, Transform};
use pinprove::internal::synthesize;
use pinprove::internal::Domain;
use pinprove::internal::{msm, CpuMsm};
use pinprove::{prepare_verifying_key, verify_proof};
use pinprove::{Config, Error, PartitionTimings, PinnedPool, PoolConfig, Proof, Prover};
use rand::{Rng, SeedableRng};

use crate::circuits::random_scalars;
use crate::circuits::timing_key::{g1_points, g2_points};
use crate::support::{chain, faulty_devices, key, partition_bytes};

/// A prover on device 0, as a user builds one.
fn cuda_prover(key: pinprove::ProvingKey, config: Config) -> Prover {
    let device = CudaDevice::open(0).unwrap();
    Prover::with_backends(key, config, device.pinned_pool(config.pool), vec![device.backend_factory()]).unwrap()
}

/// `points` with every 1000th at infinity and every 1000th (offset 500) a copy of its
/// predecessor, so buckets meet infinity and equal points (the doubling case).
fn with_edges<P: Copy + Default>(mut points: Vec<P>) -> Vec<P> {
    for i in (999..points.len()).step_by(1000) {
        points[i] = P::default(); // blstrs' default affine point is the identity
        points[i - 499] = points[i - 500];
    }
    points
}

/// Scalars of one kind, for the MSM cases.
#[derive(Debug, Clone, Copy)]
enum Scalars {
    Random,
    /// Zeros, ones and minus ones mixed with random values.
    Edges,
    /// Every scalar 1: one bucket holds every point.
    AllOne,
    /// The same random value everywhere.
    Repeated,
    /// Small values (< 2^16): only the lowest windows are used.
    Small,
}

fn scalars(kind: Scalars, n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    match kind {
        Scalars::Random => random_scalars(n, seed),
        Scalars::Edges => (0..n)
            .map(|i| match i % 5 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                2 => -Scalar::ONE,
                _ => Scalar::random(&mut rng),
            })
            .collect(),
        Scalars::AllOne => vec![Scalar::ONE; n],
        Scalars::Repeated => vec![Scalar::random(&mut rng); n],
        Scalars::Small => (0..n).map(|_| Scalar::from(rng.gen_range(0..1u64 << 16))).collect(),
    }
}

/// A group whose MSMs the device runs.
trait DeviceMsm: CpuMsm + std::fmt::Debug {
    type Bases;
    fn upload(gpu: &mut Bench, bases: &[Self::Affine], layout: BasesLayout) -> pinprove::Result<Self::Bases>;
    fn msm(gpu: &mut Bench, bases: &Self::Bases, s: &[Scalar], window: Option<u32>) -> pinprove::Result<Self>;
    fn split(gpu: &mut Bench, bases: &Self::Bases, s: &[Scalar]) -> pinprove::Result<Option<Self>>;
}

impl DeviceMsm for G1Projective {
    type Bases = G1Bases;
    fn upload(gpu: &mut Bench, bases: &[G1Affine], layout: BasesLayout) -> pinprove::Result<G1Bases> {
        gpu.upload_g1_bases(bases, layout)
    }
    fn msm(gpu: &mut Bench, bases: &G1Bases, s: &[Scalar], window: Option<u32>) -> pinprove::Result<Self> {
        gpu.msm_g1(bases, s, window).map(|(p, _)| p)
    }
    fn split(gpu: &mut Bench, bases: &G1Bases, s: &[Scalar]) -> pinprove::Result<Option<Self>> {
        gpu.split_msm_g1(bases, s).map(|(p, _)| p)
    }
}

impl DeviceMsm for G2Projective {
    type Bases = G2Bases;
    fn upload(gpu: &mut Bench, bases: &[G2Affine], layout: BasesLayout) -> pinprove::Result<G2Bases> {
        gpu.upload_g2_bases(bases, layout)
    }
    fn msm(gpu: &mut Bench, bases: &G2Bases, s: &[Scalar], window: Option<u32>) -> pinprove::Result<Self> {
        gpu.msm_g2(bases, s, window).map(|(p, _)| p)
    }
    fn split(gpu: &mut Bench, bases: &G2Bases, s: &[Scalar]) -> pinprove::Result<Option<Self>> {
        gpu.split_msm_g2(bases, s).map(|(p, _)| p)
    }
}

/// Why a device MSM's result is wrong, or `None` when it equals `expected`.
fn verdict<G: PartialEq>(got: pinprove::Result<G>, expected: &G) -> Option<String> {
    match got {
        Ok(got) if &got == expected => None,
        Ok(_) => Some("differs from the CPU".to_string()),
        Err(e) => Some(e.to_string()),
    }
}

/// Runs every MSM case of G1 or G2 over plain bases and over shifted ones, collecting the
/// failures. A case without a window runs over all of `bases` (shifted for the pipeline's
/// choice); a case with one over its first n bases, shifted for that window.
fn msm_cases<G: DeviceMsm>(
    gpu: &mut Bench,
    cases: &[(usize, Scalars, Option<u32>)],
    bases: &[G::Affine],
) -> Vec<String> {
    let mut failures = Vec::new();
    let plain = G::upload(gpu, bases, BasesLayout::Plain).unwrap();
    let shifted = G::upload(gpu, bases, BasesLayout::Shifted { window: None }).unwrap();
    for (i, &(n, kind, window)) in cases.iter().enumerate() {
        let s = scalars(kind, n, i as u64);
        let expected = msm::<G>(&bases[..n], &s);
        let case = format!("n = {n}, {kind:?}, window {window:?}");
        let plain = match (window, G::msm(gpu, &plain, &s, window)) {
            (Some(22..), Err(Error::Shape { .. })) => None, // plain bases refuse windows over 21 bits
            (Some(c @ 22..), got) => Some(format!("a window of {c} bits not refused: {:?}", got.map(|_| ()))),
            (_, got) => verdict(got, &expected),
        };
        failures.extend(plain.map(|f| format!("plain: {case}: {f}")));
        let got = match window {
            None => G::msm(gpu, &shifted, &s, None),
            Some(c) => G::upload(gpu, &bases[..n], BasesLayout::Shifted { window: Some(c) })
                .and_then(|own| G::msm(gpu, &own, &s, None)),
        };
        failures.extend(verdict(got, &expected).map(|f| format!("shifted: {case}: {f}")));
    }
    failures
}

#[test]
fn opening_a_missing_device_is_a_typed_error() {
    assert!(matches!(CudaDevice::open(999), Err(Error::NoDevice { id: 999 })));
}

const KINDS: [Scalars; 5] = [Scalars::Random, Scalars::Edges, Scalars::AllOne, Scalars::Repeated, Scalars::Small];

/// Runs the G1 and G2 cases on the device against the CPU MSM, and fails with every case
/// that differs.
fn check_msm_cases(g1_cases: &[(usize, Scalars, Option<u32>)], g2_cases: &[(usize, Scalars, Option<u32>)]) {
    let device = CudaDevice::open(0).unwrap();
    let mut gpu = Bench::new(&device).unwrap();
    let largest = |cases: &[(usize, Scalars, Option<u32>)]| cases.iter().map(|c| c.0).max().unwrap_or(0);
    let g1_bases: Vec<G1Affine> = with_edges(g1_points(largest(g1_cases), 1));
    let mut failures = msm_cases::<G1Projective>(&mut gpu, g1_cases, &g1_bases);
    let g2_bases: Vec<G2Affine> = with_edges(g2_points(largest(g2_cases), 2));
    failures.extend(msm_cases::<G2Projective>(&mut gpu, g2_cases, &g2_bases).into_iter().map(|f| format!("G2: {f}")));
    println!(
        "msm cases (each plain and shifted): G1 {}, G2 {}, failed {}",
        g1_cases.len(),
        g2_cases.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{} MSM cases failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_msm_equals_cpu_msm_up_to_2_12_every_window() {
    // Sizes 2^0..2^12 and odd ones with every kind of scalar; every window width at 2^10.
    let mut g1: Vec<(usize, Scalars, Option<u32>)> = Vec::new();
    for n in (0..=12).map(|lg| 1 << lg).chain([0, 3, 5, 1000, 4095]) {
        g1.extend(KINDS.iter().map(|&k| (n, k, None)));
    }
    g1.extend((2..=21).map(|c| (1 << 10, Scalars::Edges, Some(c))));
    let mut g2: Vec<(usize, Scalars, Option<u32>)> = Vec::new();
    for n in [1, 2, 3, 64, 1000, 4096] {
        g2.extend(KINDS.iter().map(|&k| (n, k, None)));
    }
    g2.extend([2, 5, 9, 13, 16, 21].map(|c| (1 << 10, Scalars::Edges, Some(c))));
    // Windows of 22..=24 bits: shifted bases take them, plain ones refuse them.
    g1.extend((22..=24).map(|c| (1 << 10, Scalars::Edges, Some(c))));
    g2.push((1 << 10, Scalars::Edges, Some(24)));
    check_msm_cases(&g1, &g2);
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_msm_equals_cpu_msm_from_2_13_to_2_22() {
    // G1 at every size 2^13..2^22 (random and edge scalars), the skewed kinds at 2^16 and
    // 2^20, and every window at 2^14; G2 at 2^14..2^22.
    let mut g1: Vec<(usize, Scalars, Option<u32>)> = Vec::new();
    for lg in 13..=22 {
        g1.push((1 << lg, Scalars::Random, None));
        g1.push((1 << lg, Scalars::Edges, None));
    }
    g1.push((100_003, Scalars::Random, None));
    for lg in [16, 20] {
        g1.extend(KINDS[2..].iter().map(|&k| (1 << lg, k, None)));
    }
    g1.extend((2..=21).map(|c| (1 << 14, Scalars::Random, Some(c))));
    let mut g2: Vec<(usize, Scalars, Option<u32>)> =
        (14..=20).step_by(2).map(|lg| (1 << lg, Scalars::Random, None)).collect();
    g2.extend(KINDS[1..].iter().map(|&k| (1 << 18, k, None)));
    g1.extend((22..=24).map(|c| (1 << 14, Scalars::Random, Some(c))));
    check_msm_cases(&g1, &g2);
}

/// MSMs of G1 or G2 over the bases and fewer shifted copies of them than windows (each copy
/// serving a group of windows, which sum into sets of buckets of their own) against the
/// CPU's: every kind of scalar at each size, over every count of copies from 2 to 12 that
/// some window takes at that size.
fn copies_cases<G: DeviceMsm>(gpu: &mut Bench, sizes: &[usize], bases: &[G::Affine]) -> (usize, Vec<String>) {
    // Each size's and kind's scalars and the CPU's MSM of them, once for every count of copies.
    let expected: Vec<(usize, Scalars, Vec<Scalar>, G)> = sizes
        .iter()
        .flat_map(|&n| KINDS.iter().enumerate().map(move |(i, &kind)| (n, kind, scalars(kind, n, (n + i) as u64))))
        .map(|(n, kind, s)| {
            let sum = msm::<G>(&bases[..n], &s);
            (n, kind, s, sum)
        })
        .collect();
    let (mut cases, mut failures) = (0, Vec::new());
    for copies in 2..=12 {
        let Some(c) = copies_window_bits(bases.len(), copies) else { continue };
        let copied = G::upload(gpu, bases, BasesLayout::Copies { copies }).unwrap();
        for (n, kind, s, sum) in &expected {
            let case = format!("{copies} copies ({c}-bit windows), n = {n}, {kind:?}");
            cases += 1;
            failures.extend(verdict(G::msm(gpu, &copied, s, None), sum).map(|f| format!("{case}: {f}")));
        }
    }
    (cases, failures)
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_msm_over_fewer_copies_equals_cpu_msm() {
    let device = CudaDevice::open(0).unwrap();
    let mut gpu = Bench::new(&device).unwrap();
    let sizes = [1, 3, 1000, 4096, 100_003, 1 << 18];
    let (g1_cases, mut failures) = copies_cases::<G1Projective>(&mut gpu, &sizes, &with_edges(g1_points(1 << 18, 7)));
    let (g2_cases, g2) = copies_cases::<G2Projective>(&mut gpu, &sizes[..4], &with_edges(g2_points(1 << 14, 8)));
    failures.extend(g2.into_iter().map(|f| format!("G2: {f}")));
    println!("msm cases over fewer copies: G1 {g1_cases}, G2 {g2_cases}, failed {}", failures.len());
    assert!(g1_cases > 0 && g2_cases > 0);
    assert!(failures.is_empty(), "{} MSM cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// Scalars of a bit-heavy witness: zeros and ones (none of either for `ones` or `zeros`
/// false), and a value neither 0 nor 1 every `other_every`th (none for 0).
fn bits(n: usize, (zeros, ones): (bool, bool), other_every: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| match (rng.gen::<bool>(), zeros, ones) {
            _ if other_every > 0 && i % other_every == other_every / 2 => Scalar::random(&mut rng),
            (true, true, _) | (_, true, false) => Scalar::ZERO,
            _ => Scalar::ONE,
        })
        .collect()
}

/// The split MSMs of G1 or G2 over plain and shifted bases against the CPU's: all zero, all
/// one, without ones, mixed, and random scalars (more others than the split takes, a 16th of
/// the points and at least one: refused).
fn split_cases<G: DeviceMsm>(gpu: &mut Bench, sizes: &[usize], bases: &[G::Affine]) -> Vec<String> {
    let mut failures = Vec::new();
    let plain = G::upload(gpu, bases, BasesLayout::Plain).unwrap();
    let shifted = G::upload(gpu, bases, BasesLayout::Shifted { window: None }).unwrap();
    for &n in sizes {
        let mixes = [
            ("all zero", bits(n, (true, false), 0, 1)),
            ("all one", bits(n, (false, true), 0, 2)),
            ("without ones", bits(n, (true, false), 20, 3)),
            ("mixed", bits(n, (true, true), 50, 4)),
            ("bits alone", bits(n, (true, true), 0, 5)),
            ("random", scalars(Scalars::Random, n, 6)),
        ];
        for (mix, s) in mixes {
            let expected = msm::<G>(&bases[..n], &s);
            let others = s.iter().filter(|x| **x != Scalar::ZERO && **x != Scalar::ONE).count();
            for (layout, b) in [("plain", &plain), ("shifted", &shifted)] {
                let case = format!("{layout}: n = {n}, {mix} ({others} others)");
                match (G::split(gpu, b, &s), others <= (n / 16).max(1)) {
                    (Ok(Some(got)), true) if got == expected => {}
                    (Ok(None), false) => {}
                    (Ok(Some(_)), true) => failures.push(format!("{case}: differs from the CPU")),
                    (Ok(got), _) => {
                        failures.push(format!("{case}: split {}", if got.is_some() { "taken" } else { "refused" }))
                    }
                    (Err(e), _) => failures.push(format!("{case}: {e}")),
                }
            }
        }
    }
    failures
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_split_msm_equals_cpu_msm_for_every_mix() {
    let device = CudaDevice::open(0).unwrap();
    let mut gpu = Bench::new(&device).unwrap();
    let sizes = [1, 3, 100, 1000, 4096, 1 << 14, 100_003, 1 << 18];
    let mut failures = split_cases::<G1Projective>(&mut gpu, &sizes, &with_edges(g1_points(1 << 18, 5)));
    let g2 = split_cases::<G2Projective>(&mut gpu, &sizes[..6], &with_edges(g2_points(1 << 14, 6)));
    failures.extend(g2.into_iter().map(|f| format!("G2: {f}")));
    assert!(failures.is_empty(), "{} split MSM cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// An MSM of `n` random scalars over `distinct` bases repeated to n points, plain, shifted and
/// in 2, 3 and 6 copies, against the CPU's MSM of the distinct bases with the scalars of each
/// one's repeats summed: sizes whose CPU MSM would take minutes.
fn tiled_msm_case<G: DeviceMsm>(gpu: &mut Bench, distinct: &[G::Affine], n: usize) -> Vec<String>
where
    G::Affine: Copy,
{
    let bases: Vec<G::Affine> = distinct.iter().cycle().take(n).copied().collect();
    let s = scalars(Scalars::Random, n, 24);
    let mut folded = vec![Scalar::ZERO; distinct.len()];
    for (i, x) in s.iter().enumerate() {
        folded[i % distinct.len()] += x;
    }
    let expected = msm::<G>(distinct, &folded);
    let layouts = [BasesLayout::Plain, BasesLayout::Shifted { window: None }];
    let fewer = [2, 3, 6].map(|copies| BasesLayout::Copies { copies });
    layouts
        .into_iter()
        .chain(fewer)
        .filter_map(|layout| {
            let got = G::upload(gpu, &bases, layout).and_then(|b| G::msm(gpu, &b, &s, None));
            verdict(got, &expected).map(|f| format!("n = {n}, {layout:?}: {f}"))
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_msm_equals_cpu_msm_at_2_24_over_repeated_bases() {
    // 2^24 points: the size at which shifted plans bin their entries before placing them.
    let device = CudaDevice::open(0).unwrap();
    let mut gpu = Bench::new(&device).unwrap();
    let mut failures = tiled_msm_case::<G1Projective>(&mut gpu, &with_edges(g1_points(1 << 16, 3)), 1 << 24);
    let g2 = tiled_msm_case::<G2Projective>(&mut gpu, &with_edges(g2_points(1 << 16, 4)), 1 << 24);
    failures.extend(g2.into_iter().map(|f| format!("G2: {f}")));
    assert!(failures.is_empty(), "{} MSMs at 2^24 failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_transforms_equal_the_cpu_for_2_1_to_2_13() {
    check_transforms(1..=13);
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_transforms_equal_the_cpu_for_2_14_to_2_24() {
    check_transforms(14..=24);
}

/// Every transform of random input, GPU against CPU, at each size 2^lg.
fn check_transforms(lgs: std::ops::RangeInclusive<u64>) {
    let mut gpu = Bench::new(&CudaDevice::open(0).unwrap()).unwrap();
    let mut failures = Vec::new();
    for lg in lgs {
        let input = random_scalars(1 << lg, lg);
        let cpu = Domain::new(input.len()).unwrap();
        type CpuTransform = fn(&Domain, &mut [Scalar]);
        let ops: [(Transform, CpuTransform); 4] = [
            (Transform::Ntt, Domain::ntt),
            (Transform::Intt, Domain::intt),
            (Transform::CosetNtt, Domain::coset_ntt),
            (Transform::CosetIntt, Domain::icoset_ntt),
        ];
        for (transform, reference) in ops {
            let (mut on_gpu, mut on_cpu) = (input.clone(), input.clone());
            gpu.transform(&mut on_gpu, transform).unwrap();
            rayon::ThreadPoolBuilder::new().build().unwrap().install(|| reference(&cpu, &mut on_cpu));
            if on_gpu != on_cpu {
                failures.push(format!("{transform:?} at 2^{lg}"));
            }
        }
    }
    assert!(failures.is_empty(), "transforms differ: {failures:?}");
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_h_stage_equals_the_cpu_from_2_0_to_2_22() {
    // Every size to 2^16 (2^0: the transforms are epilogues alone, with no pass), then larger.
    let mut gpu = Bench::new(&CudaDevice::open(0).unwrap()).unwrap();
    let mut failures = Vec::new();
    for lg in (0..=16).chain([18, 20, 22]) {
        let m = 1usize << lg;
        let [a, b, c] = [1, 2, 3].map(|seed| random_scalars(m, 100 * lg + seed));
        let (mut on_gpu, mut on_cpu) = ([a.clone(), b.clone(), c.clone()], [a, b.clone(), c.clone()]);
        let [ga, gb, gc] = &mut on_gpu;
        gpu.h_stage([ga, gb, gc]).unwrap();
        let [ca, cb, cc] = &mut on_cpu;
        Domain::new(m).unwrap().compute_h(ca, cb, cc);
        if on_gpu[0] != on_cpu[0] || on_gpu[1] != b || on_gpu[2] != c {
            failures.push(format!("2^{lg}"));
        }
    }
    assert!(failures.is_empty(), "h differs from the CPU's at {failures:?}");
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_h_and_msm_sums_equal_the_cpu_for_real_circuits() {
    let device = CudaDevice::open(0).unwrap();
    let pinned = PinnedPool::with_allocator(PoolConfig::default(), device.pinned_allocator());
    let heap = PinnedPool::new(PoolConfig::default());
    for lg in [10, 14, 16] {
        let key = key(lg);
        let mut cpu = CpuBackend::new(std::sync::Arc::new(key.clone())).unwrap();
        let mut gpu = device.backend(&key).unwrap();
        let mut on_gpu = synthesize(chain(lg, 5), &key, &pinned).unwrap();
        let mut on_cpu = synthesize(chain(lg, 5), &key, &heap).unwrap();
        assert!(on_gpu.is_pinned() && !on_cpu.is_pinned());
        let mut t = PartitionTimings::default();
        gpu.h(&mut on_gpu, &mut t).unwrap();
        cpu.h(&mut on_cpu, &mut PartitionTimings::default()).unwrap();
        let m = key.domain_size();
        let mut h = vec![Scalar::ZERO; m - 1];
        gpu.download_h(&mut h).unwrap();
        let on_cpu_h = &on_cpu.evaluated().expect("synthesized in full").abc.a[..m - 1];
        assert!(h == on_cpu_h, "h differs at 2^{lg}");
        let sums = gpu.msm(&on_gpu, &mut t).unwrap();
        let expected = cpu.msm(&on_cpu, &mut PartitionTimings::default()).unwrap();
        assert_eq!(sums, expected, "MSM sums differ at 2^{lg}");
        assert!(t.h2d > std::time::Duration::ZERO && t.ntt == t.ntt_steps.total() && t.msm == t.msm_steps.total());
        assert!(t.device_end > t.device_start, "{t:?}");
        let report = device.report();
        assert!(report.key_bytes > 0 && report.memory_used > report.key_bytes, "{report:?}");
        let abc = 3 * m.next_power_of_two() * std::mem::size_of::<Scalar>();
        assert!(report.partition_bytes >= abc && report.partition_bytes < report.backend_bytes, "{report:?}");
    }
    let s = pinned.stats();
    assert_eq!((s.checkouts, s.checkins), (18, 18));
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_pipeline_proofs_equal_cpu_proofs_and_verify() {
    let key = key(14);
    let pvk = prepare_verifying_key(&key.vk);
    let config = Config { synthesis_threads: 4, queue_depth_per_device: 2, ..Config::default() };
    let jobs = || (0..8u64).map(|i| (chain(14, i), Scalar::from(i + 1), Scalar::from(i + 100))).collect::<Vec<_>>();
    let gpu = cuda_prover(key.clone(), config);
    let cpu = Prover::new(key, config).unwrap();
    let on_gpu = gpu.prove_with_randomness(jobs()).unwrap();
    let on_cpu = cpu.prove_with_randomness(jobs()).unwrap();
    let bp_pvk = bp::prepare_verifying_key(&bp::VerifyingKey::from(gpu.verifying_key()));
    for (i, (g, c)) in on_gpu.into_iter().zip(on_cpu).enumerate() {
        let g = g.unwrap();
        assert_eq!(g, c.unwrap(), "job {i}: GPU proof differs from the CPU proof");
        let inputs = chain(14, i as u64).public_inputs();
        assert!(verify_proof(&pvk, &g, &inputs).unwrap());
        assert!(bp::verify_proof(&bp_pvk, &bp::Proof::from(g), &inputs).unwrap(), "job {i}: bellperson rejects it");
    }
    assert!(gpu.pool().is_pinned());
    let timings = gpu.take_timings();
    assert!(timings
        .iter()
        .all(|t| t.pinned && t.h2d > std::time::Duration::ZERO && t.msm_steps.b_g2 > std::time::Duration::ZERO));
    assert!(PartitionTimings::device_busy(&timings) > std::time::Duration::ZERO);
}

#[test]
#[ignore = "needs a CUDA device"]
fn a_faulting_gpu_leaves_service_and_another_proves_its_partitions_bit_for_bit() {
    let key = key(14);
    let device = CudaDevice::open(0).unwrap();
    let config = Config { synthesis_threads: 4, queue_depth_per_device: 2, ..Config::default() };
    let proved = std::sync::Arc::default();
    // Two backends on the device; the second faults on its 2nd partition.
    let make = {
        let device = device.clone();
        move |key: &pinprove::KeySource| device.backend_from(key)
    };
    let factories = faulty_devices(make, &[(None, false), (Some(2), false)], &proved);
    let gpu = Prover::with_backends(key.clone(), config, device.pinned_pool(config.pool), factories).unwrap();
    let jobs = || (0..12u64).map(|i| (chain(14, i), Scalar::from(i + 1), Scalar::from(i + 100))).collect::<Vec<_>>();
    let on_gpu = gpu.prove_with_randomness(jobs()).unwrap();
    let on_cpu = Prover::new(key, config).unwrap().prove_with_randomness(jobs()).unwrap();
    for (i, (g, c)) in on_gpu.into_iter().zip(on_cpu).enumerate() {
        assert_eq!(g.unwrap(), c.unwrap(), "job {i}");
    }
    assert_eq!(gpu.failed_devices(), 1);
    let mut proved = proved.lock().clone();
    proved.sort_unstable();
    assert_eq!(proved, (0..12).collect::<Vec<u64>>(), "every job proved exactly once");
    let s = gpu.pool().stats();
    assert_eq!(s.checkouts, s.checkins);
}

/// The least memory limit, from `from` up by `step` at a time, in which a backend of `key` is
/// made on `device` and its report `holds` what the test needs.
fn least_room(
    device: &CudaDevice,
    key: &pinprove::ProvingKey,
    (from, step): (usize, usize),
    holds: impl Fn(&DeviceReport) -> bool,
) -> usize {
    (0..)
        .map(|steps| from + step * steps)
        .find(|&limit| {
            let limited = device.clone().with_memory_limit(limit);
            limited.backend(key).is_ok() && holds(&limited.report())
        })
        .expect("some room fits")
}

/// Proofs of `jobs` jobs with fixed r, s on `device`, with the report of its backend.
fn proofs_on(
    device: &CudaDevice,
    key: &pinprove::ProvingKey,
    jobs: u64,
) -> pinprove::Result<(Vec<Proof>, DeviceReport)> {
    proofs_from(device, key.clone(), key.domain_size().trailing_zeros(), jobs)
}

/// As [`proofs_on`], the key from `key` (a file's read by the backend), of a 2^lg domain.
fn proofs_from(
    device: &CudaDevice,
    key: impl Into<pinprove::KeySource>,
    lg: u32,
    jobs: u64,
) -> pinprove::Result<(Vec<Proof>, DeviceReport)> {
    let config = Config { synthesis_threads: 4, queue_depth_per_device: 2, ..Config::default() };
    let prover = Prover::with_backends(key, config, device.pinned_pool(config.pool), vec![device.backend_factory()])?;
    let report = device.report();
    let proofs = prover.prove_with_randomness(
        (0..jobs).map(|i| (chain(lg, i), Scalar::from(i + 1), Scalar::from(i + 100))).collect(),
    )?;
    let s = prover.pool().stats();
    assert_eq!(s.checkouts, s.checkins);
    Ok((proofs.into_iter().collect::<pinprove::Result<_>>()?, report))
}

#[test]
#[ignore = "needs a CUDA device"]
fn keys_shifted_shifted_h_resident_in_chunks_or_streamed_prove_bit_for_bit() {
    let key = key(16);
    let device = CudaDevice::open(0).unwrap();
    let (shifted, report) = proofs_on(&device, &key, 4).unwrap();
    assert_eq!(report.key_placement, KeyPlacement::Shifted);
    assert!(report.shifted_bytes > 10 * report.key_bytes, "{report:?}");
    // Room for a report's placement less half of its bases' shifted copies.
    let fewer_copies = |r: &DeviceReport| r.backend_bytes - (r.shifted_bytes - r.key_bytes) / 2;
    // Room for everything but half the shifted copies: the H MSM's alone (about a sixth of
    // them: its bases are a quarter of the G1 ones, and a G2 base takes two G1 bases' room).
    let h_only = fewer_copies(&report);
    let (shifted_h, part) = proofs_on(&device.clone().with_memory_limit(h_only), &key, 4).unwrap();
    let KeyPlacement::ShiftedH { copies: all } = part.key_placement else { panic!("{part:?}") };
    assert!(part.backend_bytes <= h_only, "{part:?}, limit {h_only}");
    assert!(part.shifted_bytes > 2 * part.key_bytes && 3 * part.shifted_bytes < report.shifted_bytes, "{part:?}");
    // Room for everything but half the H MSM's copies: fewer of them, each serving a group of
    // windows.
    let fewer_h = fewer_copies(&part);
    let (grouped_h, grouped) = proofs_on(&device.clone().with_memory_limit(fewer_h), &key, 4).unwrap();
    let KeyPlacement::ShiftedH { copies } = grouped.key_placement else { panic!("{grouped:?}") };
    assert!(copies < all && grouped.backend_bytes <= fewer_h, "{grouped:?}, limit {fewer_h}");
    // Room for everything but the H MSM's copies and the witness's MSMs' own scratch (and
    // three quarters of a copy, for the sorts' rooms, which differ between plans): the bases
    // alone, sorted whole.
    let copy = (part.shifted_bytes - part.key_bytes) / (all - 1);
    let bare_limit = part.backend_bytes - part.witness_scratch_bytes - (all - 1) * copy + copy * 3 / 4;
    let bare = device.clone().with_memory_limit(bare_limit);
    bare.backend(&key).unwrap();
    let bare = bare.report();
    assert_eq!(bare.key_placement, KeyPlacement::Resident, "{bare:?}");
    // The least room, an eighth of a copy at a time, in which the witness's scratch comes
    // too: the bases alone, the witness's MSMs beside H's (the copies come only with that
    // room and more).
    let bases_only = least_room(&device, &key, (bare.backend_bytes, copy / 8), |r| r.witness_scratch_bytes > 0);
    let (resident, plain) = proofs_on(&device.clone().with_memory_limit(bases_only), &key, 4).unwrap();
    assert_eq!(plain.key_placement, KeyPlacement::Resident, "{plain:?}");
    assert!(plain.backend_bytes <= bases_only && plain.shifted_bytes == 0, "{plain:?}, limit {bases_only}");
    // All four have room for the witness's MSMs' own scratch: they ran beside the H MSM.
    // Half of it less: they follow it.
    let witness_scratch = [&report, &part, &grouped, &plain].map(|r| r.witness_scratch_bytes);
    assert!(witness_scratch.iter().all(|&b| b > 0), "{report:?}\n{part:?}\n{grouped:?}\n{plain:?}");
    let sorts_whole = plain.backend_bytes - plain.witness_scratch_bytes;
    let after_h = sorts_whole + plain.witness_scratch_bytes / 2;
    let (one_stream, alone) = proofs_on(&device.clone().with_memory_limit(after_h), &key, 4).unwrap();
    assert_eq!((alone.key_placement, alone.witness_scratch_bytes), (KeyPlacement::Resident, 0), "{alone:?}");
    // Half the room of the whole MSMs' sorts less: the bases stay, their MSMs sorted a chunk
    // at a time. (A byte less is not enough: the device hands out memory in pages, so the
    // bytes a backend holds are more than it reserved.)
    let less = sorts_whole - (sorts_whole - plain.key_bytes - plain.partition_bytes) / 2;
    let (in_chunks, chunked) = proofs_on(&device.clone().with_memory_limit(less), &key, 4).unwrap();
    let KeyPlacement::ResidentInChunks { chunk } = chunked.key_placement else { panic!("{chunked:?}") };
    assert!(chunk < key.domain_size() && chunked.backend_bytes <= less, "{chunked:?}, limit {less}");
    assert_eq!(chunked.witness_scratch_bytes, 0, "{chunked:?}");
    // The least room in which a backend is made above the partition's bytes: the bases
    // streamed (the bases and a chunk's sorts need more).
    let quarter = plain.key_bytes / 4;
    let no_scratch = least_room(&device, &key, (plain.partition_bytes + quarter, quarter), |_| true);
    let (streamed, limited) = proofs_on(&device.clone().with_memory_limit(no_scratch), &key, 4).unwrap();
    let KeyPlacement::Streamed { chunk } = limited.key_placement else { panic!("{limited:?}") };
    assert!(chunk < key.domain_size() && limited.backend_bytes <= no_scratch, "{limited:?}, limit {no_scratch}");
    println!(
        "shifted {report:?}\nH shifted {part:?}\nH in fewer copies {grouped:?}\nresident {plain:?}\n\
         in chunks {chunked:?}\nstreamed {limited:?}"
    );
    let cpu = Prover::new(key.clone(), Config::default()).unwrap();
    let on_cpu = cpu
        .prove_with_randomness((0..4).map(|i| (chain(16, i), Scalar::from(i + 1), Scalar::from(i + 100))).collect())
        .unwrap();
    let placed = [&shifted, &shifted_h, &grouped_h, &resident, &one_stream, &in_chunks, &streamed];
    for (i, c) in on_cpu.iter().enumerate() {
        let c = c.as_ref().unwrap();
        let [h, p, g, r, o, k, s] = placed.map(|proofs| &proofs[i]);
        assert_eq!(h, c, "job {i}: the shifted key's proof differs from the CPU's");
        assert_eq!(p, c, "job {i}: the proof of the key with the H MSM's bases alone shifted differs from the CPU's");
        assert_eq!(g, c, "job {i}: the proof of the key with the H MSM's bases in fewer copies differs from the CPU's");
        assert_eq!(r, c, "job {i}: the resident key's proof differs from the CPU's");
        assert_eq!(o, c, "job {i}: the resident key's proof, the MSMs on one stream, differs from the CPU's");
        assert_eq!(k, c, "job {i}: the proof of the key sorted in chunks differs from the CPU's");
        assert_eq!(s, c, "job {i}: the streamed key's proof differs from the CPU's");
    }
    // The same six placements, the bases read from the key's file by the backend.
    let path = std::env::temp_dir().join(format!("pinprove-{}-placements.params", std::process::id()));
    key.write(std::fs::File::create(&path).unwrap()).unwrap();
    let file = pinprove::KeyFile::open(&path, pinprove::Check::OnCurve).unwrap();
    let limits = [
        (None, report),
        (Some(h_only), part),
        (Some(fewer_h), grouped),
        (Some(bases_only), plain),
        (Some(less), chunked),
        (Some(no_scratch), limited),
    ];
    for (limit, placement) in limits {
        let device = limit.map_or(device.clone(), |l| device.clone().with_memory_limit(l));
        let (proofs, from_file) = proofs_from(&device, file.clone(), 16, 4).unwrap();
        assert_eq!(from_file.key_placement, placement.key_placement, "{from_file:?}");
        assert_eq!(from_file.key_bytes, placement.key_bytes, "{from_file:?}");
        for (i, (p, c)) in proofs.iter().zip(&on_cpu).enumerate() {
            assert_eq!(p, c.as_ref().unwrap(), "job {i}: {:?} from the file", from_file.key_placement);
        }
    }
    std::fs::remove_file(&path).unwrap();
}

/// A key's file that a CUDA backend reads checked on the curve is decoded on the device, a
/// batch of the file at a time (every query of a 2^17 key spans two), into resident bases or
/// back into the streamed bases' pinned copy: the proofs equal the CPU's, bit for bit with
/// fixed r, s; and a damaged point (off the curve, a coordinate past p, a flag bit, the
/// infinity, in G1 and in G2) is refused with the error the host's decode of the file gives.
#[test]
#[ignore = "needs a CUDA device"]
fn key_files_are_decoded_on_the_device_as_the_host_decodes_them() {
    use pinprove::{Check, KeyFile};
    let key = key(17);
    let path = std::env::temp_dir().join(format!("pinprove-{}-decode.params", std::process::id()));
    key.write(std::fs::File::create(&path).unwrap()).unwrap();
    let file = KeyFile::open(&path, Check::OnCurve).unwrap();
    let device = CudaDevice::open(0).unwrap();
    let (resident, report) = proofs_from(&device, file.clone(), 17, 2).unwrap();
    assert!(!matches!(report.key_placement, KeyPlacement::Streamed { .. }), "{report:?}");
    let quarter = report.key_bytes / 4;
    let streams = least_room(&device, &key, (report.partition_bytes + quarter, quarter), |_| true);
    let limited = device.clone().with_memory_limit(streams);
    let (streamed, limited_report) = proofs_from(&limited, file, 17, 2).unwrap();
    assert!(matches!(limited_report.key_placement, KeyPlacement::Streamed { .. }), "{limited_report:?}");
    let cpu = Prover::new(key.clone(), Config::default()).unwrap();
    let jobs = (0..2).map(|i| (chain(17, i), Scalar::from(i + 1), Scalar::from(i + 100))).collect();
    for (i, ((r, s), c)) in resident.iter().zip(&streamed).zip(cpu.prove_with_randomness(jobs).unwrap()).enumerate() {
        let c = c.unwrap();
        assert_eq!(r, &c, "job {i}: decoded into resident bases");
        assert_eq!(s, &c, "job {i}: decoded into streamed bases");
    }
    // Where point i of a query starts in the file: the verifying key, then each query's
    // count and points.
    let vk = 3 * 96 + 3 * 192 + 4 + key.vk.ic.len() * 96;
    let queries =
        [(key.h.len(), 96), (key.l.len(), 96), (key.a.len(), 96), (key.b_g1.len(), 96), (key.b_g2.len(), 192)];
    let point =
        |q: usize, i: usize| vk + queries[..q].iter().map(|(n, b)| 4 + n * b).sum::<usize>() + 4 + i * queries[q].1;
    let bytes = std::fs::read(&path).unwrap();
    type Damage = fn(&mut [u8]);
    let damages: [(&str, usize, Damage); 5] = [
        ("y off the curve", point(0, 70_000), |p| p[95] ^= 1),
        ("x past p", point(1, 3), |p| p[0] = 0x1b),
        ("the compression flag", point(2, 65_536), |p| p[0] |= 0x80),
        ("the infinity", point(3, 100), |p| {
            p[..96].fill(0);
            p[0] = 0x40;
        }),
        ("a G2 y off the curve", point(4, key.b_g2.len() - 1), |p| p[191] ^= 1),
    ];
    for (what, at, damage) in damages {
        let mut damaged = bytes.clone();
        damage(&mut damaged[at..]);
        std::fs::write(&path, &damaged).unwrap();
        let host = KeyFile::open(&path, Check::OnCurve).unwrap().read().unwrap_err();
        assert!(matches!(host, Error::Decode { .. }), "{what}: {host}");
        for device in [&device, &limited] {
            let file = KeyFile::open(&path, Check::OnCurve).unwrap();
            let e = proofs_from(device, file, 17, 1).unwrap_err();
            assert_eq!(e.to_string(), host.to_string(), "{what}, {:?}", device.report().key_placement);
        }
    }
    std::fs::remove_file(&path).unwrap();
}

/// Under the smallest memory limit at which a backend still evaluates the recorded
/// constraints, they are streamed (whole, they leave no room for the bases), and the proofs
/// equal the CPU's, bit for bit with fixed r, s.
#[test]
#[ignore = "needs a CUDA device"]
fn a_recording_that_does_not_fit_is_streamed_and_proves_the_cpus_proofs() {
    let key = key(17);
    let recorded = key.clone().with_r1cs(pinprove::R1cs::record(chain(17, 0)).unwrap()).unwrap();
    let device = CudaDevice::open(0).unwrap();
    let evaluates = |limit: usize| {
        let limited = device.clone().with_memory_limit(limit);
        limited.backend(&recorded).is_ok_and(|b| b.evaluates_recorded_constraints())
    };
    // The smallest such limit (within a MiB), from none up to the resident placement's.
    let (mut lo, mut hi) = (0, {
        device.backend(&recorded).unwrap();
        device.report().backend_bytes
    });
    assert!(device.report().r1cs_chunk.is_none() && evaluates(hi), "{:?}", device.report());
    while hi - lo > 1 << 20 {
        let mid = lo + (hi - lo) / 2;
        if evaluates(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let (proofs, report) = proofs_on(&device.clone().with_memory_limit(hi), &recorded, 4).unwrap();
    println!("limit {hi}: {report:?}");
    assert!(report.r1cs_chunk.is_some(), "streamed under the smallest limit: {report:?}");
    let cpu = Prover::new(key, Config::default()).unwrap();
    let jobs = (0..4).map(|i| (chain(17, i), Scalar::from(i + 1), Scalar::from(i + 100))).collect();
    for (i, (gpu, cpu)) in proofs.iter().zip(cpu.prove_with_randomness(jobs).unwrap()).enumerate() {
        assert_eq!(gpu, &cpu.unwrap(), "job {i}");
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn device_out_of_memory_is_typed_loses_nothing_and_the_device_stays_usable() {
    let key = key(16);
    let device = CudaDevice::open(0).unwrap();
    // Under a limit too small for a partition's buffers.
    let tiny = device.clone().with_memory_limit(1 << 20);
    assert!(matches!(proofs_on(&tiny, &key, 1), Err(Error::DeviceOutOfMemory { .. })));
    // With the device itself nearly full.
    let _current = Bench::new(&device).unwrap(); // makes the context current here
    let (free, _) = cust::memory::mem_get_info().unwrap();
    let blocker = cust::memory::DeviceBuffer::<u8>::zeroed(free - (4 << 20)).unwrap();
    let r = proofs_on(&device, &key, 1);
    assert!(matches!(r, Err(Error::DeviceOutOfMemory { .. })), "{r:?}");
    drop(blocker);
    let (proofs, report) = proofs_on(&device, &key, 2).unwrap();
    let pvk = prepare_verifying_key(&key.vk);
    for (i, p) in proofs.iter().enumerate() {
        assert!(verify_proof(&pvk, p, &chain(16, i as u64).public_inputs()).unwrap());
    }
    assert_eq!(report.key_placement, KeyPlacement::Shifted);
}

#[test]
#[ignore = "needs a CUDA device"]
fn after_prewarm_100_partitions_allocate_no_pinned_memory() {
    let prover = cuda_prover(key(12), Config { synthesis_threads: 4, ..Config::default() });
    let warm = prover.pool().stats();
    assert_eq!(warm.allocations, 6 * prover.max_in_flight() as u64);
    let results = prover.prove((0..100).map(|i| chain(12, i)).collect()).unwrap();
    assert!(results.iter().all(Result::is_ok));
    let s = prover.pool().stats();
    assert_eq!((s.allocations, s.reuses, s.fallbacks), (warm.allocations, 600, 0), "{s:?}");
    assert_eq!(s.checkouts, s.checkins);
    assert!(s.alloc_time > std::time::Duration::ZERO, "pinning time is measured");
}

#[test]
#[ignore = "needs a CUDA device"]
fn pageable_partitions_prove_through_staging_and_are_counted() {
    let key = key(12);
    let pvk = prepare_verifying_key(&key.vk);
    // Room for one pinned partition only: the others fall back to the heap.
    let pool = PoolConfig { max_bytes: partition_bytes(&key), ..PoolConfig::default() };
    let config = Config { synthesis_threads: 4, queue_depth_per_device: 2, pool, ..Config::default() };
    let prover = cuda_prover(key, config);
    let results = prover.prove((0..12).map(|i| chain(12, i)).collect()).unwrap();
    for (i, r) in results.into_iter().enumerate() {
        assert!(verify_proof(&pvk, &r.unwrap(), &chain(12, i as u64).public_inputs()).unwrap());
    }
    let s = prover.pool().stats();
    let staged = prover.take_timings().iter().filter(|t| !t.pinned).count() as u64;
    assert!(s.fallbacks > 0 && staged > 0, "{s:?}");
    assert_eq!(s.fallbacks, 6 * staged, "every fallback partition went through staging");
    assert_eq!(s.checkouts, s.checkins);
}

#[test]
fn window_bits_are_in_the_kernels_range() {
    for lg in 0..=30 {
        assert!((2..=21).contains(&window_bits(1 << lg)));
    }
}

/// Witness-only partitions on the GPU (the packed aux expanded and the constraints evaluated
/// there from the recording, resident, then streamed in chunks of several sizes) against full
/// partitions on the CPU: the aux equal, h equal, and the five MSM sums, on the three
/// benchmark shapes (timing keys: the expansion, products and gathers, not the keys, are
/// under test), and the device's recording reported.
#[test]
#[ignore = "needs a CUDA device"]
fn gpu_recorded_constraints_resident_or_streamed_give_the_cpus_h_and_msm_sums() {
    use crate::circuits::shapes::{Chain, Shape};
    use crate::circuits::timing_key::timing_key;
    use pinprove::internal::synthesize_witness;
    use pinprove::R1cs;
    let device = CudaDevice::open(0).unwrap();
    let pinned = PinnedPool::with_allocator(PoolConfig::default(), device.pinned_allocator());
    let heap = PinnedPool::new(PoolConfig::default());
    let mut failures = vec![];
    for (shape, lg) in [(Shape::Dense, 10), (Shape::Sparse, 12), (Shape::Sha256, 15), (Shape::Sha256, 17)] {
        let key = timing_key(shape, lg, 3);
        let mut cpu = CpuBackend::new(std::sync::Arc::new(key.clone())).unwrap();
        let r1cs = R1cs::record(Chain::new(shape, lg, 0)).unwrap();
        let recorded = key.clone().with_r1cs(r1cs.clone()).unwrap();
        let mut gpu = device.backend(&recorded).unwrap();
        assert!(gpu.evaluates_recorded_constraints(), "{}: the recording fits", shape.name());
        let report = device.report();
        assert!(report.r1cs_bytes >= r1cs.bytes() && report.r1cs_chunk.is_none(), "{}: {report:?}", shape.name());
        let circuit = Chain::new(shape, lg, 5);
        let mut witness = synthesize_witness(circuit, &r1cs, &pinned).unwrap();
        let mut full = synthesize(circuit, &key, &heap).unwrap();
        cpu.h(&mut full, &mut PartitionTimings::default()).unwrap();
        let cpu_sums = cpu.msm(&full, &mut PartitionTimings::default()).unwrap();
        let m = key.domain_size();
        let cpu_h = &full.evaluated().expect("synthesized in full").abc.a[..m - 1];
        let mut streamed = 0;
        for entries in [None, Some(64), Some(4096), Some(1 << 16)] {
            let name = format!(
                "{} 2^{lg} {}",
                shape.name(),
                entries.map_or("resident".into(), |n| format!("in chunks of {n}"))
            );
            match entries.map(|n| gpu.stream_recorded_constraints(&recorded, n)) {
                Some(Err(Error::Shape { .. })) => continue, // a row longer than the chunk
                Some(e) => {
                    e.unwrap();
                    streamed += 1;
                }
                None => {}
            }
            let mut t = PartitionTimings::default();
            gpu.h(&mut witness, &mut t).unwrap();
            let mut h = vec![Scalar::ZERO; m - 1];
            gpu.download_h(&mut h).unwrap();
            if h != cpu_h {
                failures.push(format!("{name}: h differs"));
            }
            let mut aux = vec![Scalar::ZERO; key.num_aux()];
            gpu.download_aux(&mut aux).unwrap();
            if aux[..] != full.evaluated().expect("synthesized in full").aux[..] {
                failures.push(format!("{name}: the aux expanded differ"));
            }
            // The gathers, which read no matrix, are the same streamed or not.
            if entries.is_none() && gpu.msm(&witness, &mut t).unwrap() != cpu_sums {
                failures.push(format!("{name}: MSM sums differ"));
            }
            let bytes = (witness.host_bytes(), t.h2d_bytes);
            println!(
                "{name}: expansion, products and gathers {:?}, h2d {:?}; bytes held, copied {bytes:?}",
                t.constraints, t.h2d
            );
        }
        assert!(streamed >= 2, "{} 2^{lg}: streamed in {streamed} chunk sizes", shape.name());
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A witness-only prover on the GPU proves bellperson's proofs bit for bit (fixed r, s),
/// splitting the MSMs of bit-heavy witnesses by value and not a dense one's, and answers a
/// circuit whose constraints differ from the recording `ProofInvalid`; the same with the
/// bases streamed.
#[test]
#[ignore = "needs a CUDA device"]
fn gpu_witness_only_proofs_equal_bellperson_and_catch_other_constraints() {
    use crate::circuits::shapes::{Chain, Shape};
    use pinprove::R1cs;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(31);
    for (shape, lg) in [(Shape::Dense, 10), (Shape::Sparse, 10), (Shape::Sha256, 15), (Shape::Sha256Native, 15)] {
        let params = bp::generate_random_parameters::<blstrs::Bls12, _, _>(Chain::new(shape, lg, 0), &mut rng).unwrap();
        let key =
            pinprove::ProvingKey::from(&params).with_r1cs(R1cs::record(Chain::new(shape, lg, 0)).unwrap()).unwrap();
        let device = CudaDevice::open(0).unwrap();
        let config = Config { synthesis_threads: 4, ..Config::default() };
        let prover =
            Prover::with_backends(key.clone(), config, device.pinned_pool(config.pool), vec![device.backend_factory()]);
        let (prover, r) = (prover.unwrap(), device.report());
        // The bit-heavy keys again with their bases streamed: in the least room, above the
        // partition's, the recording's and the key's bytes, in which a backend is made that
        // holds the recording (the bases and a chunk's sorts need more). The device hands out
        // memory in pages, so the least room of any backend may hold none (an H100 did).
        let streamed = matches!(shape, Shape::Sha256 | Shape::Sha256Native).then(|| {
            let from = r.partition_bytes + r.r1cs_bytes + r.key_bytes;
            let limit = least_room(&device, &key, (from, r.key_bytes / 4), |r| r.r1cs_bytes > 0);
            let limited = device.clone().with_memory_limit(limit);
            let backends = vec![limited.backend_factory()];
            let prover = Prover::with_backends(key.clone(), config, limited.pinned_pool(config.pool), backends);
            let placement = limited.report().key_placement;
            assert!(matches!(placement, KeyPlacement::Streamed { .. }), "{} 2^{lg}: {placement:?}", shape.name());
            prover.unwrap()
        });
        for prover in std::iter::once(&prover).chain(&streamed) {
            assert!(prover.is_witness_only(), "{}", shape.name());
            let jobs: Vec<_> = (1..4)
                .map(|x0| (Chain::new(shape, lg, x0), Scalar::random(&mut rng), Scalar::random(&mut rng)))
                .collect();
            for ((c, r, s), proof) in jobs.clone().into_iter().zip(prover.prove_with_randomness(jobs).unwrap()) {
                let theirs = Proof::from(&bp::create_proof::<blstrs::Bls12, _, _>(c, &params, r, s).unwrap());
                assert_eq!(proof.unwrap(), theirs, "{} 2^{lg}", shape.name());
            }
            // The bit-heavy witnesses' four MSMs were split by value on the device (streamed:
            // every chunk), the dense one's not.
            let split: Vec<u32> = prover.take_timings().iter().map(|t| t.msms_split).collect();
            match shape {
                Shape::Dense => assert_eq!(split, [0; 3], "{}", shape.name()),
                Shape::Sha256 | Shape::Sha256Native => assert_eq!(split, [4; 3], "{}", shape.name()),
                Shape::Sparse => println!("sparse 2^{lg}: witness MSMs split {split:?}"),
            }
        }
        prover.shutdown();
        if let Some(streamed) = streamed {
            streamed.shutdown();
        }
    }
    // More aux than the domain has points: their values take a room of their own, not C's buffer.
    let wide = |x0: u64| crate::circuits::WideSums { x0: Scalar::from(x0), rounds: 60, width: 7 };
    let params = bp::generate_random_parameters::<blstrs::Bls12, _, _>(wide(3), &mut rng).unwrap();
    let wide_key = pinprove::ProvingKey::from(&params).with_r1cs(R1cs::record(wide(3)).unwrap()).unwrap();
    assert!(wide_key.num_aux() > 4 * wide_key.domain_size(), "{} aux", wide_key.num_aux());
    let prover = cuda_prover(wide_key, Config { synthesis_threads: 2, ..Config::default() });
    let jobs: Vec<_> = (5..8).map(|x0| (wide(x0), Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
    for ((c, r, s), proof) in jobs.clone().into_iter().zip(prover.prove_with_randomness(jobs).unwrap()) {
        let theirs = Proof::from(&bp::create_proof::<blstrs::Bls12, _, _>(c, &params, r, s).unwrap());
        assert_eq!(proof.unwrap(), theirs, "more aux than the domain");
    }
    prover.shutdown();
    let chain = crate::support::chain(10, 3);
    let recorded = key(10).with_r1cs(pinprove::R1cs::record(chain.clone()).unwrap()).unwrap();
    let prover = cuda_prover(recorded, Config { synthesis_threads: 2, ..Config::default() });
    let other = crate::circuits::MimcChain {
        constants: std::sync::Arc::new(chain.constants.iter().map(|k| k + Scalar::ONE).collect()),
        ..chain.clone()
    };
    let answers = prover.prove(vec![other, chain]).unwrap();
    assert!(matches!(answers[0], Err(Error::ProofInvalid { .. })), "{:?}", answers[0]);
    assert!(answers[1].is_ok(), "the prover goes on: {:?}", answers[1]);
    prover.shutdown();
}

/// A GPU prover holds nothing of the host's key (its backend copied the bases to the device;
/// the prover keeps the key's shape), and proves what the CPU backend proves, bit for bit
/// with fixed r, s.
#[test]
#[ignore = "needs a CUDA device"]
fn a_gpu_prover_holds_no_host_key_and_proves_the_cpus_proofs() {
    let key = std::sync::Arc::new(key(10));
    let config = Config { synthesis_threads: 2, ..Config::default() };
    let device = CudaDevice::open(0).unwrap();
    let pool = device.pinned_pool(config.pool);
    let gpu = Prover::with_backends(std::sync::Arc::clone(&key), config, pool, vec![device.backend_factory()]).unwrap();
    assert_eq!(std::sync::Arc::strong_count(&key), 1, "neither the prover nor its backend holds the host key");
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(41);
    let jobs: Vec<_> = (1..5).map(|x0| (chain(10, x0), Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
    let cpu = Prover::new(key, Config { synthesis_threads: 2, ..Config::default() }).unwrap();
    let expected = cpu.prove_with_randomness(jobs.clone()).unwrap();
    for (got, expected) in gpu.prove_with_randomness(jobs).unwrap().into_iter().zip(expected) {
        assert_eq!(got.unwrap(), expected.unwrap());
    }
    gpu.shutdown();
    cpu.shutdown();
}

/// A GPU prover given a key file and its recording's file ([`pinprove::R1csFile`]): the
/// matrices read straight into device memory, a piece at a time, prove the CPU's proofs
/// witness-only; a recording's file damaged once opened is refused when the prover is made.
#[test]
#[ignore = "needs a CUDA device"]
fn a_gpu_prover_reads_the_recording_from_its_file_and_proves_the_cpus_proofs() {
    use pinprove::{Check, KeyFile, R1cs, R1csFile};
    let key = key(10);
    let dir = std::env::temp_dir();
    let (key_path, r1cs_path) = (dir.join("pinprove-gpu-r1cs.params"), dir.join("pinprove-gpu.r1cs"));
    key.write(std::fs::File::create(&key_path).unwrap()).unwrap();
    let r1cs = R1cs::record(chain(10, 0)).unwrap();
    let mut recording = Vec::new();
    r1cs.write(&mut recording).unwrap();
    std::fs::write(&r1cs_path, &recording).unwrap();
    let source = || {
        let file = KeyFile::open(&key_path, Check::OnCurve).unwrap();
        file.with_r1cs_file(R1csFile::open(&r1cs_path).unwrap()).unwrap()
    };
    let config = Config { synthesis_threads: 2, ..Config::default() };
    let device = CudaDevice::open(0).unwrap();
    let gpu = Prover::with_backends(source(), config, device.pinned_pool(config.pool), vec![device.backend_factory()])
        .unwrap();
    assert!(gpu.is_witness_only() && device.report().r1cs_chunk.is_none(), "the recording resident");
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(43);
    let jobs: Vec<_> = (1..5).map(|x0| (chain(10, x0), Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
    let cpu = Prover::new(key, config).unwrap();
    let expected = cpu.prove_with_randomness(jobs.clone()).unwrap();
    for (got, expected) in gpu.prove_with_randomness(jobs).unwrap().into_iter().zip(expected) {
        assert_eq!(got.unwrap(), expected.unwrap());
    }
    gpu.shutdown();
    cpu.shutdown();
    let attached = source();
    let third = recording.len() / 3;
    recording[third] ^= 1;
    std::fs::write(&r1cs_path, &recording).unwrap();
    let refused =
        Prover::with_backends(attached, config, device.pinned_pool(config.pool), vec![device.backend_factory()]);
    assert!(matches!(refused.err(), Some(Error::Decode { .. })), "damaged once opened");
    let _ = (std::fs::remove_file(&key_path), std::fs::remove_file(&r1cs_path));
}
