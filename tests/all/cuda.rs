//! The CUDA backend against the CPU backend, bit for bit. Needs a GPU: run with
//! `--include-ignored` on the GPU machine (a skipped test is reported as ignored, never passed).

use blstrs::Scalar;
use ff::Field;
use pinprove::backend::cuda::{self, CudaDevice, Transform};
use pinprove::backend::{Backend, CpuBackend};
use pinprove::domain::Domain;
use pinprove::groth16::{prepare_verifying_key, verify_proof};
use pinprove::synth::synthesize;
use pinprove::{Config, Error, PartitionTimings, PinnedPool, PoolConfig, Prover};
use rand::SeedableRng;
use rayon::prelude::*;

use crate::support::{chain, key};

fn random_vector(lg: u32, seed: u64) -> Vec<Scalar> {
    let chunk = 1 << 14;
    (0..(1usize << lg).div_ceil(chunk))
        .into_par_iter()
        .flat_map_iter(|k| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (k as u64) << 32);
            (0..chunk.min(1 << lg)).map(move |_| Scalar::random(&mut rng))
        })
        .collect()
}

#[test]
fn opening_a_missing_device_is_a_typed_error() {
    assert!(matches!(CudaDevice::open(999), Err(Error::NoDevice { id: 999 })));
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_transforms_equal_the_cpu_for_2_10_to_2_24() {
    let mut gpu = CudaDevice::open(0).unwrap().backend().unwrap();
    for lg in 10..=24 {
        let input = random_vector(lg, u64::from(lg));
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
            reference(&cpu, &mut on_cpu);
            assert!(on_gpu == on_cpu, "{transform:?} differs at 2^{lg}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_h_equals_the_cpu_h_for_real_circuits() {
    let device = CudaDevice::open(0).unwrap();
    let mut gpu = device.backend().unwrap();
    let pinned = PinnedPool::with_allocator(PoolConfig::default(), device.pinned_allocator());
    let heap = PinnedPool::new(PoolConfig::default());
    for lg in [10, 14, 16] {
        let key = key(lg);
        let mut on_gpu = synthesize(chain(lg, 5), &key, &pinned).unwrap();
        let mut on_cpu = synthesize(chain(lg, 5), &key, &heap).unwrap();
        assert!(on_gpu.abc.is_pinned() && !on_cpu.abc.is_pinned());
        let mut t = PartitionTimings::default();
        gpu.h(&key, &mut on_gpu, &mut t).unwrap();
        CpuBackend::new().h(&key, &mut on_cpu, &mut PartitionTimings::default()).unwrap();
        let m = key.domain_size();
        assert!(on_gpu.abc.a[..m - 1] == on_cpu.abc.a[..m - 1], "h differs at 2^{lg}");
        assert!(t.h2d > std::time::Duration::ZERO && t.ntt == t.ntt_steps.total() && t.d2h > std::time::Duration::ZERO);
    }
    let s = pinned.stats();
    assert_eq!((s.checkouts, s.checkins), (9, 9));
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_pipeline_proofs_equal_cpu_proofs_and_verify() {
    let key = key(14);
    let pvk = prepare_verifying_key(&key.vk);
    let config = Config { synthesis_threads: 4, max_gpu_queue_depth: 2, ..Config::default() };
    let jobs = || (0..8u64).map(|i| (chain(14, i), Scalar::from(i + 1), Scalar::from(i + 100))).collect::<Vec<_>>();
    let gpu = cuda::prover(key.clone(), config, &[0]).unwrap();
    let cpu = Prover::new(key, config).unwrap();
    let on_gpu = gpu.prove_with_randomness(jobs()).unwrap();
    let on_cpu = cpu.prove_with_randomness(jobs()).unwrap();
    for (i, (g, c)) in on_gpu.into_iter().zip(on_cpu).enumerate() {
        let g = g.unwrap();
        assert_eq!(g, c.unwrap(), "job {i}: GPU proof differs from the CPU proof");
        assert!(verify_proof(&pvk, &g, &chain(14, i as u64).public_inputs()).unwrap());
    }
    assert!(gpu.pool().is_pinned());
    assert!(gpu.take_timings().iter().all(|t| t.pinned && t.h2d > std::time::Duration::ZERO));
}

#[test]
#[ignore = "needs a CUDA device"]
fn after_prewarm_100_partitions_allocate_no_pinned_memory() {
    let prover = cuda::prover(key(12), Config { synthesis_threads: 4, ..Config::default() }, &[0]).unwrap();
    let warm = prover.pool().stats();
    assert_eq!(warm.allocations, 3 * prover.max_in_flight() as u64);
    let results = prover.prove((0..100).map(|i| chain(12, i)).collect()).unwrap();
    assert!(results.iter().all(Result::is_ok));
    let s = prover.pool().stats();
    assert_eq!((s.allocations, s.reuses, s.fallbacks), (warm.allocations, 300, 0), "{s:?}");
    assert_eq!(s.checkouts, s.checkins);
    assert!(s.alloc_time > std::time::Duration::ZERO, "pinning time is measured");
}

#[test]
#[ignore = "needs a CUDA device"]
fn pageable_partitions_prove_through_staging_and_are_counted() {
    let key = key(12);
    let pvk = prepare_verifying_key(&key.vk);
    // Room for one pinned partition only: the others fall back to the heap.
    let pool = PoolConfig { max_bytes: 3 * key.abc_buffer_bytes(), ..PoolConfig::default() };
    let config = Config { synthesis_threads: 4, max_gpu_queue_depth: 2, pool, ..Config::default() };
    let prover = cuda::prover(key, config, &[0]).unwrap();
    let results = prover.prove((0..12).map(|i| chain(12, i)).collect()).unwrap();
    for (i, r) in results.into_iter().enumerate() {
        assert!(verify_proof(&pvk, &r.unwrap(), &chain(12, i as u64).public_inputs()).unwrap());
    }
    let s = prover.pool().stats();
    let staged = prover.take_timings().iter().filter(|t| !t.pinned).count() as u64;
    assert!(s.fallbacks > 0 && staged > 0, "{s:?}");
    assert_eq!(s.fallbacks, 3 * staged, "every fallback partition went through staging");
    assert_eq!(s.checkouts, s.checkins);
}
