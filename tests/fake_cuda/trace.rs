//! The CUDA backend's host side driven through every path that launches kernels, for
//! `tests/fake_cuda/run.sh`, which runs it under a fake driver without a GPU: transforms
//! 2^0..2^12; G1 and G2 MSMs over plain and shifted bases at several sizes and windows;
//! dense, sparse and sha256 keys placed shifted, the H MSM's alone shifted and resident (under
//! memory limits), resident and sorted in chunks (a byte less) and streamed (a smaller one),
//! each proving a partition; recorded constraints resident and streamed in chunks; a key read
//! from its file, placed the five ways, and with its
//! recording's file; MSMs split by value
//! (with the fake's readbacks set to k, `run.sh`'s READ, a split of k ones and k others).
//! `TRACE_PART` picks parts: ntt, small, large (2^14 MSMs), keys, files, split. Its results are not checked (the fake
//! runs no kernel): its log of launches and copies is the output, compared between builds.
#[path = "../../examples/common/mod.rs"]
mod common;

use common::random_scalars;
use common::shapes::{Chain, Shape};
use common::timing_key::{g1_points, g2_points, timing_key};
use pinprove::backend::cuda::{CudaBackend, CudaDevice};
use pinprove::backend::{Backend, Witness};
use pinprove::internal::cuda::{BasesLayout, Transform};
use pinprove::internal::{synthesize, synthesize_witness};
use pinprove::{Check, KeyFile, KeySource, PartitionTimings, PinnedPool, PoolConfig, R1cs, R1csFile};

fn part(name: &str) -> bool {
    std::env::var("TRACE_PART").map_or(true, |p| p.split(',').any(|x| x == name))
}

fn main() {
    let device = CudaDevice::open(0).unwrap();
    single_kernels(&device);
    if part("keys") {
        keys(&device);
    }
    if part("files") {
        files(&device);
    }
}

/// Transforms, copies and MSMs alone, on a bench.
fn single_kernels(device: &CudaDevice) {
    let mut bench = pinprove::internal::cuda::Bench::new(device).unwrap();
    if part("ntt") {
        for lg in 0..=12u32 {
            for t in [Transform::Ntt, Transform::Intt, Transform::CosetNtt, Transform::CosetIntt] {
                println!("transform 2^{lg} {t:?}");
                let mut v = random_scalars(1 << lg, lg as u64);
                bench.transform(&mut v, t).unwrap();
            }
        }
        bench.time_h2d(&random_scalars(1000, 1)).unwrap();
    }
    let sizes: &[usize] = if part("small") { &[1, 3, 100, 4096] } else { &[] };
    let large: &[usize] = if part("large") { &[1 << 14] } else { &[] };
    let g1 = g1_points(1 << 14, 1);
    let g2 = g2_points(1 << 14, 2);
    for layout in [BasesLayout::Plain, BasesLayout::Shifted { window: None }, BasesLayout::Shifted { window: Some(10) }]
    {
        let b1 = bench.upload_g1_bases(&g1, layout).unwrap();
        let b2 = bench.upload_g2_bases(&g2, layout).unwrap();
        if part("split") {
            for n in [1, 100, 4096] {
                println!("split msm n={n} {layout:?}");
                let s = random_scalars(n, n as u64);
                bench.split_msm_g1(&b1, &s).unwrap();
                bench.split_msm_g2(&b2, &s).unwrap();
            }
        }
        for &n in sizes.iter().chain(large) {
            let s = random_scalars(n, n as u64);
            println!("msm n={n} {layout:?}");
            bench.msm_g1(&b1, &s, None).unwrap();
            bench.msm_g2(&b2, &s, None).unwrap();
            if layout == BasesLayout::Plain {
                for c in [2, 9, 16, 21] {
                    bench.msm_g1(&b1, &s, Some(c)).unwrap();
                }
            }
        }
    }
}

/// Keys placed shifted, resident and streamed, each proving a partition, and recorded
/// constraints resident and streamed.
fn keys(device: &CudaDevice) {
    let pool = PinnedPool::with_allocator(PoolConfig::default(), device.pinned_allocator());
    for (shape, lg) in [(Shape::Dense, 10), (Shape::Sparse, 12), (Shape::Sha256, 15)] {
        let key = timing_key(shape, lg, 3);
        let r1cs = R1cs::record(Chain::new(shape, lg, 0)).unwrap();
        let recorded = key.clone().with_r1cs(r1cs.clone()).unwrap();
        let circuit = Chain::new(shape, lg, 5);
        for limit in limits(device, &key) {
            let d = match limit {
                Some(l) => device.clone().with_memory_limit(l),
                None => device.clone(),
            };
            let mut gpu = d.backend(&key).unwrap();
            println!("{} 2^{lg} full, limit {limit:?}: {:?}", shape.name(), d.report().key_placement);
            let mut w = synthesize(circuit, &key, &pool).unwrap();
            prove(&mut gpu, &mut w);
        }
        let mut gpu = device.backend(&recorded).unwrap();
        println!("{} 2^{lg} recorded", shape.name());
        let mut w = synthesize_witness(circuit, &r1cs, &pool).unwrap();
        prove(&mut gpu, &mut w);
        for entries in [4096, 1 << 16] {
            if gpu.stream_recorded_constraints(&recorded, entries).is_ok() {
                println!("{} 2^{lg} recorded, streamed in {entries}", shape.name());
                gpu.h(&mut w, &mut PartitionTimings::default()).unwrap();
            }
        }
    }
}

/// A key read from its file by the backend, placed shifted, resident, in chunks and streamed, each
/// proving a partition: the launches of `keys`' dense 2^10 key, the bases' copies in the
/// file's batches.
fn files(device: &CudaDevice) {
    let pool = PinnedPool::with_allocator(PoolConfig::default(), device.pinned_allocator());
    let key = timing_key(Shape::Dense, 10, 3);
    let path = std::env::temp_dir().join(format!("pinprove-trace-{}.params", std::process::id()));
    key.write(std::fs::File::create(&path).unwrap()).unwrap();
    let file = KeySource::from(KeyFile::open(&path, Check::OnCurve).unwrap());
    for limit in limits(device, &key) {
        let d = match limit {
            Some(l) => device.clone().with_memory_limit(l),
            None => device.clone(),
        };
        let mut gpu = d.backend_from(&file).unwrap();
        println!("dense 2^10 from its file, limit {limit:?}: {:?}", d.report().key_placement);
        let mut w = synthesize(Chain::new(Shape::Dense, 10, 5), &key, &pool).unwrap();
        prove(&mut gpu, &mut w);
    }
    // With its recording's file: the matrices read into device memory a piece at a time,
    // then a witness-only partition.
    let r1cs = R1cs::record(Chain::new(Shape::Dense, 10, 0)).unwrap();
    let r1cs_path = path.with_extension("r1cs");
    r1cs.write(std::fs::File::create(&r1cs_path).unwrap()).unwrap();
    let r1cs_file = R1csFile::open(&r1cs_path).unwrap();
    let recorded = KeySource::from(KeyFile::open(&path, Check::OnCurve).unwrap().with_r1cs_file(r1cs_file).unwrap());
    let mut gpu = device.backend_from(&recorded).unwrap();
    println!("dense 2^10 from its file with its recording's: {:?}", device.report().r1cs_chunk);
    let mut w = synthesize_witness(Chain::new(Shape::Dense, 10, 5), &r1cs, &pool).unwrap();
    prove(&mut gpu, &mut w);
    std::fs::remove_file(&r1cs_path).unwrap();
    std::fs::remove_file(&path).unwrap();
}

/// One partition's h stage and MSMs on `gpu`.
fn prove(gpu: &mut CudaBackend, w: &mut Witness) {
    let mut t = PartitionTimings::default();
    gpu.h(w, &mut t).unwrap();
    gpu.msm(w, &mut t).unwrap();
}

/// No memory limit (shifted bases), then one that leaves the H MSM's alone shifted, one that
/// leaves the bases alone, one that sorts them in chunks, and one that streams them.
fn limits(device: &CudaDevice, key: &pinprove::ProvingKey) -> Vec<Option<usize>> {
    // Room for the report's placement less half of its bases' shifted copies.
    let fewer_copies =
        |r: &pinprove::backend::cuda::DeviceReport| r.backend_bytes - (r.shifted_bytes - r.key_bytes) / 2;
    device.backend(key).unwrap();
    let h_only = fewer_copies(&device.report());
    let part = device.clone().with_memory_limit(h_only);
    part.backend(key).unwrap();
    let bases_only = fewer_copies(&part.report());
    let resident = device.clone().with_memory_limit(bases_only);
    resident.backend(key).unwrap();
    let plain = resident.report();
    // Less room than the bases' whole-MSM scratch (the witness's own is not needed).
    let in_chunks = plain.backend_bytes - plain.witness_scratch_bytes - 1;
    // The least room in which a backend is made, a quarter key at a time above the
    // partition's bytes: the bases streamed.
    let streamed = (1..)
        .map(|quarters| plain.partition_bytes + plain.key_bytes * quarters / 4)
        .find(|&limit| device.clone().with_memory_limit(limit).backend(key).is_ok())
        .expect("some room fits");
    vec![None, Some(h_only), Some(bases_only), Some(in_chunks), Some(streamed)]
}
