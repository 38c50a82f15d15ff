//! Parameter files in bellperson 0.27's layout: round trips with bellperson's own reader and
//! writer, and every way a file can be bad giving a typed error, never a panic; a prover
//! made from a file ([`KeyFile`]) proving bellperson's proofs.

use std::io::Cursor;
use std::sync::Arc;

use bellperson::groth16 as bp;
use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use pinprove::backend::CpuBackend;
use pinprove::{Check, Config, KeyFile, KeySource, PinnedPool, PoolConfig, Proof, Prover, R1cs, R1csFile};
use pinprove::{Error, ProvingKey};
use rand::{Rng, SeedableRng};

use crate::support::{chain, cpu};

fn bellperson_file(lg_m: u32) -> (bp::Parameters<Bls12>, Vec<u8>) {
    let params = bp::generate_random_parameters::<Bls12, _, _>(chain(lg_m, 0), &mut rand::thread_rng()).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    (params, bytes)
}

#[test]
fn files_round_trip_bit_for_bit_with_bellperson_at_two_sizes() {
    for lg_m in [4, 9] {
        let (params, bytes) = bellperson_file(lg_m);
        for check in [Check::Full, Check::OnCurve] {
            let key = ProvingKey::read(Cursor::new(&bytes), check).unwrap();
            assert_eq!(key, ProvingKey::from(&params), "2^{lg_m}, {check:?}");
            let mut ours = Vec::new();
            key.write(&mut ours).unwrap();
            assert!(ours == bytes, "2^{lg_m}: our file differs from bellperson's");
            let theirs = bp::Parameters::<Bls12>::read(Cursor::new(&ours), true).unwrap();
            assert_eq!(ProvingKey::from(&theirs), key);
        }
    }
}

/// Reads `bytes`, which must fail, and returns the error (a panic fails the test too).
fn refused(bytes: &[u8], check: Check) -> Error {
    match ProvingKey::read(Cursor::new(bytes), check) {
        Ok(_) => panic!("a bad file of {} bytes was read", bytes.len()),
        Err(e) => e,
    }
}

#[test]
fn every_truncation_and_byte_flip_is_an_error() {
    let (_, bytes) = bellperson_file(3);
    for len in 0..bytes.len() {
        match refused(&bytes[..len], Check::OnCurve) {
            Error::Decode { offset, reason, .. } => {
                assert!(offset <= len as u64, "cut at {len}: error at {offset}");
                assert!(reason.contains("ends") || reason.contains("exceeds"), "cut at {len}: {reason}");
            }
            other => panic!("cut at {len}: {other:?}"),
        }
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    for _ in 0..2000 {
        let mut bad = bytes.clone();
        let at = rng.gen_range(0..bad.len());
        bad[at] ^= 1 << rng.gen_range(0..8);
        let e = refused(&bad, Check::Full);
        assert!(matches!(e, Error::Decode { .. } | Error::InvalidKey(_)), "flip at {at}: {e:?}");
    }
}

#[test]
fn a_length_larger_than_the_file_is_refused_before_reading_on() {
    let (_, mut bytes) = bellperson_file(3);
    // The h query's count follows the verifying key (864 bytes) and the IC query.
    let ic = u32::from_be_bytes(bytes[864..868].try_into().unwrap()) as usize;
    let h_count = 868 + 96 * ic;
    bytes[h_count..h_count + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    match refused(&bytes, Check::Full) {
        Error::Decode { what, offset, reason } => {
            assert_eq!(offset, h_count as u64);
            assert!(what.starts_with("length of h") && reason.contains("exceeds"), "{what}: {reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// A point on the curve but outside the prime-order subgroup: decompressing an x without
/// the subgroup check finds one almost always.
fn point_outside_the_subgroup() -> G1Affine {
    (1u8..)
        .find_map(|x| {
            let mut compressed = [0u8; 48];
            compressed[0] = 0x80; // compressed, not infinity, smaller y
            compressed[47] = x;
            let p: Option<G1Affine> = G1Affine::from_compressed_unchecked(&compressed).into();
            p.filter(|p| !bool::from(p.is_torsion_free()))
        })
        .expect("some small x is on the curve")
}

#[test]
fn checked_reads_reject_a_point_outside_the_subgroup_and_infinity() {
    let (params, _) = bellperson_file(4);
    let mut key = ProvingKey::from(&params);
    key.l[1] = point_outside_the_subgroup();
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    match refused(&bytes, Check::Full) {
        Error::Decode { what, reason, .. } => {
            assert_eq!((what.as_str(), reason), ("l[1]", "not in the prime-order subgroup"))
        }
        other => panic!("{other:?}"),
    }
    // Trusted files skip the subgroup check, as bellperson's unchecked read does.
    assert_eq!(ProvingKey::read(Cursor::new(&bytes), Check::OnCurve).unwrap().l[1], key.l[1]);

    key.l[1] = G1Affine::identity();
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    assert!(matches!(refused(&bytes, Check::OnCurve), Error::Decode { reason: "point at infinity", .. }));
}

#[test]
fn queries_whose_lengths_disagree_are_an_invalid_key() {
    let (params, _) = bellperson_file(4);
    let mut key = ProvingKey::from(&params);
    key.b_g2.pop();
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    assert!(matches!(refused(&bytes, Check::Full), Error::InvalidKey(m) if m.contains("b_g1 and b_g2")));
}

/// A file trusted by its digest, as filecoin-proofs' `parameters.json` gives it (the first
/// 32 hex digits of the file's BLAKE2b-512): accepted when it matches, whatever its case or
/// length of hex digits; refused, typed, when one digit, one byte of the file or one byte
/// more differs; a digest that is not hex is a configuration error.
#[test]
fn a_file_trusted_by_its_digest_is_read_only_when_the_digest_matches() {
    let (params, bytes) = bellperson_file(6);
    let hex = |b: &[u8]| -> String {
        let hash = blake2b_simd::Params::new().hash_length(64).hash(b);
        hash.as_bytes().iter().map(|x| format!("{x:02x}")).collect()
    };
    let full = hex(&bytes);
    let manifest = &full[..32];
    let read = |b: &[u8], digest: &str| ProvingKey::read_digested(Cursor::new(b), Check::OnCurve, digest);
    assert_eq!(read(&bytes, manifest).unwrap(), ProvingKey::from(&params));
    assert!(read(&bytes, &full).is_ok() && read(&bytes, &manifest.to_uppercase()).is_ok());
    let mut wrong = manifest.to_owned().into_bytes();
    wrong[31] = if wrong[31] == b'0' { b'1' } else { b'0' };
    let wrong = String::from_utf8(wrong).unwrap();
    assert!(matches!(read(&bytes, &wrong), Err(Error::Digest { ref got, .. }) if got == manifest));
    // Two valid points swapped (h[0] and h[1]): every check of the points passes, and only
    // the digest tells the file is not the one described.
    let h0 = 864 + 4 + 96 * params.vk.ic.len() + 4; // the verifying key, its ic, h's count
    let mut swapped = bytes.clone();
    swapped[h0..h0 + 192].rotate_left(96);
    let silently = ProvingKey::read(Cursor::new(&swapped), Check::Full).unwrap();
    assert_ne!(silently, ProvingKey::from(&params), "a read without a digest takes it");
    assert!(matches!(read(&swapped, manifest), Err(Error::Digest { .. })));
    let mut damaged = bytes.clone();
    *damaged.last_mut().unwrap() ^= 1;
    assert!(matches!(read(&damaged, manifest), Err(Error::Digest { .. } | Error::Decode { .. })));
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(read(&longer, manifest), Err(Error::Digest { .. })), "a byte more is another file");
    assert!(ProvingKey::read(Cursor::new(&longer), Check::OnCurve).is_ok(), "without a digest it is read");
    assert!(matches!(read(&bytes, "not hex"), Err(Error::Config(_))));
}

/// A key whose queries span several of the reader's batches (2^16 points each): h 2^18 − 1
/// points (three whole batches and one short), l, a and the b queries a batch and a few.
fn key_of_several_batches() -> ProvingKey {
    let vk = ProvingKey::from(&bellperson_file(3).0).vk;
    let distinct: Vec<G1Affine> = (1..=97u64).map(|i| (G1Affine::generator() * Scalar::from(i)).into()).collect();
    let g1 = |n: usize| distinct.iter().cycle().take(n).copied().collect::<Vec<_>>();
    let g2 = (1..=31u64).map(|i| (G2Affine::generator() * Scalar::from(i)).into()).collect::<Vec<G2Affine>>();
    let (aux, b) = ((1 << 16) + 9, (1 << 16) + 3);
    let a = vk.ic.len() + aux;
    let b_g2 = g2.iter().cycle().take(b).copied().collect();
    ProvingKey::new(vk, g1((1 << 18) - 1), g1(aux), g1(a), g1(b), b_g2)
}

#[test]
fn queries_longer_than_a_batch_read_back_and_fail_at_the_point_that_is_bad() {
    let key = key_of_several_batches();
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    assert_eq!(ProvingKey::read(Cursor::new(&bytes), Check::OnCurve).unwrap(), key);
    let file = TempFile::with("batches", &bytes);
    assert_eq!(KeyFile::open(&file.0, Check::OnCurve).unwrap().read().unwrap(), key);
    // A point of h's third batch off the curve: named by its index and its offset.
    let h0 = 864 + 4 + 96 * key.vk.ic.len() + 4;
    let bad = (2 << 16) + 7;
    let mut flipped = bytes.clone();
    flipped[h0 + 96 * bad + 95] ^= 1;
    match refused(&flipped, Check::OnCurve) {
        Error::Decode { what, offset, .. } => {
            assert_eq!((what.as_str(), offset), (format!("h[{bad}]").as_str(), (h0 + 96 * bad) as u64))
        }
        other => panic!("{other:?}"),
    }
    // A read failing inside l's second batch: the read of that batch names it.
    let l0 = h0 + 96 * ((1 << 18) - 1) + 4;
    let failing = FailsFrom { inner: Cursor::new(&bytes), at: (l0 + 96 * ((1 << 16) + 2)) as u64 };
    match ProvingKey::read(failing, Check::OnCurve) {
        Err(Error::Decode { what, offset, reason }) => {
            let second = format!("l[65536..{}]", (1 << 16) + 9);
            assert_eq!((what.as_str(), offset), (second.as_str(), (l0 + 96 * (1 << 16)) as u64));
            assert!(reason.contains("cannot be read"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// A reader whose reads fail once they reach byte `at`.
struct FailsFrom<'a> {
    inner: Cursor<&'a Vec<u8>>,
    at: u64,
}

impl std::io::Read for FailsFrom<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.at.saturating_sub(self.inner.position()) as usize);
        match n {
            0 => Err(std::io::Error::other("the disk failed")),
            _ => std::io::Read::read(&mut self.inner, &mut buf[..n]),
        }
    }
}

impl std::io::Seek for FailsFrom<'_> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(to)
    }
}

/// A file under the system's temporary directory, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn with(name: &str, bytes: &[u8]) -> Self {
        let path = std::env::temp_dir().join(format!("pinprove-{}-{name}.params", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_prover_made_from_a_key_file_proves_bellpersons_proofs_bit_for_bit() {
    let (params, bytes) = bellperson_file(6);
    let file = TempFile::with("proves", &bytes);
    let opened = KeyFile::open(&file.0, Check::Full).unwrap();
    assert_eq!(opened.verifying_key(), &ProvingKey::from(&params).vk);
    assert_eq!(opened.read().unwrap(), ProvingKey::from(&params), "read batch by batch as ProvingKey::read");
    let prover = Prover::new(opened, Config { synthesis_threads: 2, ..Config::default() }).unwrap();
    let mut rng = rand::thread_rng();
    let jobs: Vec<_> = (0..3u64).map(|i| (chain(6, i), Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
    let pvk = bp::prepare_verifying_key(&params.vk);
    for ((c, r, s), ours) in jobs.clone().into_iter().zip(prover.prove_with_randomness(jobs).unwrap()) {
        let ours = ours.unwrap();
        let inputs = c.public_inputs();
        assert_eq!(ours, Proof::from(&bp::create_proof::<Bls12, _, _>(c, &params, r, s).unwrap()));
        assert!(bp::verify_proof(&pvk, &bp::Proof::from(ours), &inputs).unwrap());
    }
    prover.shutdown();
}

#[test]
fn a_key_file_is_refused_when_its_digest_differs_or_it_changed_since_it_was_opened() {
    let (params, bytes) = bellperson_file(6);
    let file = TempFile::with("refused", &bytes);
    let digest: String = blake2b_simd::Params::new().hash_length(64).hash(&bytes).as_bytes()[..16]
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    let config = Config { synthesis_threads: 2, ..Config::default() };
    let open = || KeyFile::open(&file.0, Check::OnCurve).unwrap();
    assert_eq!(open().with_digest(&digest).unwrap().read().unwrap(), ProvingKey::from(&params));
    let wrong = if digest.starts_with('0') { digest.replacen('0', "1", 1) } else { format!("0{}", &digest[1..]) };
    let refused = Prover::new(open().with_digest(&wrong).unwrap(), config).err();
    assert!(matches!(refused, Some(Error::Digest { got, .. }) if got == digest), "refused when the prover is made");
    assert!(matches!(open().with_digest("not hex"), Err(Error::Config(_))));

    // Another key of the same shape written over the file once it is opened.
    let opened = open();
    let (_, other) = bellperson_file(6);
    std::fs::write(&file.0, &other).unwrap();
    assert!(matches!(opened.read(), Err(Error::Decode { ref what, .. }) if what == "the verifying key"));
    std::fs::write(&file.0, &bytes[..bytes.len() - 1]).unwrap();
    assert!(matches!(KeyFile::open(&file.0, Check::OnCurve), Err(Error::Decode { .. })), "truncated");
    std::fs::write(&file.0, &bytes).unwrap();
    let mut longer_h = bytes.clone();
    let h_count = 864 + 4 + 96 * params.vk.ic.len();
    longer_h[h_count + 3] += 1; // one point more in h than in the file
    std::fs::write(&file.0, &longer_h).unwrap();
    assert!(KeyFile::open(&file.0, Check::OnCurve).is_err(), "counts disagreeing with the file");
    std::fs::write(&file.0, &bytes).unwrap();
    let opened = open();
    std::fs::write(&file.0, &longer_h).unwrap();
    assert!(matches!(opened.read(), Err(Error::Decode { .. })), "changed counts");
    assert!(matches!(KeyFile::open("/nonexistent/pinprove.params", Check::OnCurve), Err(Error::Io(_))));
}

#[test]
fn a_key_file_takes_its_circuits_recording_and_refuses_another_circuits() {
    let (params, bytes) = bellperson_file(6);
    let file = TempFile::with("recording", &bytes);
    let opened = KeyFile::open(&file.0, Check::OnCurve).unwrap();
    let r1cs = Arc::new(R1cs::record(chain(6, 0)).unwrap());
    let config = Config { synthesis_threads: 2, ..Config::default() };
    let cpu_prover = Prover::new(opened.clone().with_r1cs(Arc::clone(&r1cs)).unwrap(), config).unwrap();
    assert_eq!(Arc::strong_count(&r1cs), 2, "this handle and the CPU backend's key: the prover keeps none");
    // A backend that copies the recording, as a device does, leaves the host none of it.
    let copying = |source: &KeySource| {
        let key = source.load()?;
        let mut copy = ProvingKey::clone(&key);
        copy.r1cs = key.r1cs.as_deref().map(|r| Arc::new(r.clone()));
        CpuBackend::new(Arc::new(copy))
    };
    let recorded = opened.clone().with_r1cs(Arc::clone(&r1cs)).unwrap();
    let pool = PinnedPool::new(config.pool);
    let copying = Prover::with_backends(recorded, config, pool, vec![copying]).unwrap();
    assert_eq!(Arc::strong_count(&r1cs), 2, "the copying prover holds no handle of it");
    let (r, s) = (Scalar::from(5), Scalar::from(7));
    let theirs = Proof::from(&bp::create_proof::<Bls12, _, _>(chain(6, 2), &params, r, s).unwrap());
    for prover in [cpu_prover, copying] {
        assert!(prover.is_witness_only());
        let ours = prover.prove_with_randomness(vec![(chain(6, 2), r, s)]).unwrap().remove(0).unwrap();
        assert_eq!(ours, theirs);
        prover.shutdown();
    }
    assert_eq!(Arc::strong_count(&r1cs), 1, "nothing kept once the provers are gone");
    assert!(matches!(opened.with_r1cs(R1cs::record(chain(7, 0)).unwrap()), Err(Error::Shape { .. })));
}

#[test]
fn a_key_file_that_fails_while_the_backends_read_it_is_an_error_and_leaves_the_pool_balanced() {
    let (_, bytes) = bellperson_file(6);
    let file = TempFile::with("fails", &bytes);
    let opened = KeyFile::open(&file.0, Check::OnCurve).unwrap();
    std::fs::write(&file.0, &bytes[..bytes.len() / 2]).unwrap(); // cut short once opened
    let pool = PinnedPool::new(PoolConfig::default());
    let made = Prover::with_backends(opened, Config::default(), pool.clone(), vec![cpu, cpu]);
    assert!(matches!(made.err(), Some(Error::Decode { .. })));
    let s = pool.stats();
    assert_eq!((s.allocations, s.bytes_held, s.checkouts), (0, 0, 0), "nothing prewarmed for a prover not made");
}

/// A key file with its recording's file ([`R1csFile`]): opened for the counts alone, checked
/// against the key, read whole by the CPU backend, proving bellperson's proofs witness-only;
/// another circuit's recording refused when attached, a file cut short or damaged after it
/// was opened refused when the prover is made.
#[test]
fn a_key_file_with_its_recordings_file_proves_bellpersons_proofs() {
    let (params, bytes) = bellperson_file(6);
    let key_file = TempFile::with("with-r1cs", &bytes);
    let r1cs = R1cs::record(chain(6, 0)).unwrap();
    let mut recording = Vec::new();
    r1cs.write(&mut recording).unwrap();
    let r1cs_file = TempFile::with("with-r1cs.r1cs", &recording);
    let opened = R1csFile::open(&r1cs_file.0).unwrap();
    assert_eq!(
        (opened.num_inputs(), opened.num_aux(), opened.bytes()),
        (r1cs.num_inputs(), r1cs.num_aux(), r1cs.bytes())
    );
    assert_eq!(opened.read().unwrap(), r1cs);
    let key = || KeyFile::open(&key_file.0, Check::OnCurve).unwrap();
    let config = Config { synthesis_threads: 2, ..Config::default() };
    let prover = Prover::new(key().with_r1cs_file(opened.clone()).unwrap(), config).unwrap();
    assert!(prover.is_witness_only());
    let (r, s) = (Scalar::from(3), Scalar::from(8));
    let theirs = Proof::from(&bp::create_proof::<Bls12, _, _>(chain(6, 5), &params, r, s).unwrap());
    assert_eq!(prover.prove_with_randomness(vec![(chain(6, 5), r, s)]).unwrap().remove(0).unwrap(), theirs);
    prover.shutdown();

    let mut other = Vec::new();
    R1cs::record(chain(7, 0)).unwrap().write(&mut other).unwrap();
    let other = TempFile::with("other.r1cs", &other);
    assert!(matches!(key().with_r1cs_file(R1csFile::open(&other.0).unwrap()), Err(Error::Shape { .. })));
    assert!(matches!(R1csFile::open(&key_file.0), Err(Error::Decode { ref what, .. }) if what == "magic"));
    assert!(matches!(R1csFile::open("/nonexistent/pinprove.r1cs"), Err(Error::Io(_))));
    std::fs::write(&r1cs_file.0, &recording[..recording.len() / 2]).unwrap();
    assert!(matches!(R1csFile::open(&r1cs_file.0), Err(Error::Decode { .. })), "cut short before it is opened");
    std::fs::write(&r1cs_file.0, &recording).unwrap();
    let attached = key().with_r1cs_file(R1csFile::open(&r1cs_file.0).unwrap()).unwrap();
    let mut damaged = recording.clone();
    damaged[recording.len() / 2] ^= 0x40;
    std::fs::write(&r1cs_file.0, &damaged).unwrap();
    assert!(matches!(Prover::new(attached, config).err(), Some(Error::Decode { .. })), "damaged once opened");
}
