//! Parameter files in bellperson 0.27's layout: round trips with bellperson's own reader and
//! writer, and every way a file can be bad giving a typed error, never a panic.

use std::io::Cursor;

use bellperson::groth16 as bp;
use blstrs::{Bls12, G1Affine};
use group::prime::PrimeCurveAffine;
use pinprove::Check;
use pinprove::{Error, ProvingKey};
use rand::{Rng, SeedableRng};

use crate::support::chain;

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
