//! BLAKE2b-512 (RFC 7693): the digest of parameter files (filecoin-proofs' manifest keeps
//! its first 32 hex digits) and of the files pinprove writes. A file's digest is one
//! sequential stream, so a trusted load goes no faster than one core hashes; and which of
//! two implementations hashes faster depends on the core: blake2b_simd's, vectorised (AVX2
//! where there is one), or the scalar rounds here, which some cores run faster (the CI
//! machine's AMD EPYC cores: benches/README.md). Each process times both once, on the same
//! bytes, and hashes with the faster; both give the same digest.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Bytes of a BLAKE2b-512 digest.
pub(crate) const DIGEST_BYTES: usize = 64;

/// Bytes of a block, the unit the rounds take.
const BLOCK: usize = 128;

/// The initial hash words (SHA-512's).
const IV: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// The message words' order in each of the ten distinct rounds (rounds 10 and 11 repeat 0
/// and 1).
const SIGMA: [[usize; 16]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

/// A BLAKE2b-512 state: [`update`](Self::update) with the bytes in order, then
/// [`finalize`](Self::finalize).
///
/// ```
/// use pinprove::internal::Digest;
///
/// let mut d = Digest::new();
/// d.update(b"a");
/// d.update(b"bc");
/// assert!(d.finalize_hex().starts_with("ba80a53f981c4d0d6a2797b69f12f6e9")); // RFC 7693
/// ```
#[derive(Debug, Clone)]
pub struct Digest(Engine);

#[derive(Debug, Clone)]
enum Engine {
    Vector(blake2b_simd::State),
    Scalar(Scalar),
}

impl Digest {
    /// A new digest, in this process's faster implementation ([`scalar_is_faster`]).
    pub fn new() -> Self {
        if scalar_is_faster() {
            Digest(Engine::Scalar(Scalar::new()))
        } else {
            Digest(Engine::Vector(vector()))
        }
    }

    /// Hashes `bytes` after those before.
    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.0 {
            Engine::Vector(state) => {
                state.update(bytes);
            }
            Engine::Scalar(state) => state.update(bytes),
        }
    }

    /// The digest of every byte hashed.
    pub fn finalize(self) -> [u8; DIGEST_BYTES] {
        match self.0 {
            Engine::Vector(state) => state.finalize().as_bytes().try_into().expect("a 64-byte digest"),
            Engine::Scalar(state) => state.finalize(),
        }
    }

    /// The digest in lowercase hex, as `b2sum` prints it and manifests keep it.
    pub fn finalize_hex(self) -> String {
        self.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    fn update_then_finalize(mut self, bytes: &[u8]) -> [u8; DIGEST_BYTES] {
        self.update(bytes);
        self.finalize()
    }
}

impl Default for Digest {
    fn default() -> Self {
        Self::new()
    }
}

fn vector() -> blake2b_simd::State {
    blake2b_simd::Params::new().hash_length(DIGEST_BYTES).to_state()
}

/// Whether the scalar rounds hash faster than blake2b_simd's on this host: each hashes the
/// same 1 MiB three times, in turn, and the best times are compared; decided once per
/// process (about 5 ms).
fn scalar_is_faster() -> bool {
    static FASTER: OnceLock<bool> = OnceLock::new();
    *FASTER.get_or_init(|| {
        let bytes = vec![0x5a; 1 << 20];
        let time = |hash: fn(&[u8]) -> [u8; DIGEST_BYTES]| {
            let start = Instant::now();
            black_box(hash(black_box(&bytes)));
            start.elapsed()
        };
        let (mut scalar, mut vectorised) = (Duration::MAX, Duration::MAX);
        for _ in 0..3 {
            scalar = scalar.min(time(|b| Digest(Engine::Scalar(Scalar::new())).update_then_finalize(b)));
            vectorised = vectorised.min(time(|b| Digest(Engine::Vector(vector())).update_then_finalize(b)));
        }
        log::debug!("BLAKE2b on this host: scalar {scalar:?}, vectorised {vectorised:?} a MiB");
        scalar < vectorised
    })
}

/// The scalar implementation: RFC 7693 as written, the rounds on u64 words.
#[derive(Debug, Clone)]
struct Scalar {
    h: [u64; 8],
    /// Bytes hashed so far, the last block's included once it is compressed.
    t: u128,
    /// The last block seen, held until more bytes show that it is not the final one.
    block: [u8; BLOCK],
    held: usize,
}

impl Scalar {
    fn new() -> Self {
        let mut h = IV;
        h[0] ^= 0x0101_0000 ^ DIGEST_BYTES as u64; // no key, 64-byte digest
        Scalar { h, t: 0, block: [0; BLOCK], held: 0 }
    }

    fn update(&mut self, mut bytes: &[u8]) {
        // The held block is compressed only once bytes follow it: the final block is
        // compressed differently.
        if bytes.len() > BLOCK - self.held {
            let fill = BLOCK - self.held;
            self.block[self.held..].copy_from_slice(&bytes[..fill]);
            bytes = &bytes[fill..];
            self.t += BLOCK as u128;
            compress(&mut self.h, &self.block, self.t, false);
            self.held = 0;
            while bytes.len() > BLOCK {
                let (block, rest) = bytes.split_at(BLOCK);
                self.t += BLOCK as u128;
                compress(&mut self.h, block.try_into().expect("a block"), self.t, false);
                bytes = rest;
            }
        }
        self.block[self.held..self.held + bytes.len()].copy_from_slice(bytes);
        self.held += bytes.len();
    }

    fn finalize(mut self) -> [u8; DIGEST_BYTES] {
        self.t += self.held as u128;
        self.block[self.held..].fill(0);
        compress(&mut self.h, &self.block, self.t, true);
        let mut out = [0u8; DIGEST_BYTES];
        for (bytes, word) in out.chunks_exact_mut(8).zip(self.h) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
        out
    }
}

/// The compression function F: `block` into `h`, `t` bytes hashed with it, `last` for the
/// final block.
fn compress(h: &mut [u64; 8], block: &[u8; BLOCK], t: u128, last: bool) {
    let mut m = [0u64; 16];
    for (word, bytes) in m.iter_mut().zip(block.chunks_exact(8)) {
        *word = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    }
    let mut v = [0u64; 16];
    v[..8].copy_from_slice(h);
    v[8..].copy_from_slice(&IV);
    v[12] ^= t as u64;
    v[13] ^= (t >> 64) as u64;
    if last {
        v[14] = !v[14];
    }
    // Twelve rounds, written out so that every index is a constant and the words stay in
    // registers.
    round(&mut v, &m, &SIGMA[0]);
    round(&mut v, &m, &SIGMA[1]);
    round(&mut v, &m, &SIGMA[2]);
    round(&mut v, &m, &SIGMA[3]);
    round(&mut v, &m, &SIGMA[4]);
    round(&mut v, &m, &SIGMA[5]);
    round(&mut v, &m, &SIGMA[6]);
    round(&mut v, &m, &SIGMA[7]);
    round(&mut v, &m, &SIGMA[8]);
    round(&mut v, &m, &SIGMA[9]);
    round(&mut v, &m, &SIGMA[0]);
    round(&mut v, &m, &SIGMA[1]);
    for i in 0..8 {
        h[i] ^= v[i] ^ v[i + 8];
    }
}

/// One round: G on the columns, then on the diagonals, with the message words in `s`'s order.
#[inline(always)]
fn round(v: &mut [u64; 16], m: &[u64; 16], s: &[usize; 16]) {
    mix(v, [0, 4, 8, 12], m[s[0]], m[s[1]]);
    mix(v, [1, 5, 9, 13], m[s[2]], m[s[3]]);
    mix(v, [2, 6, 10, 14], m[s[4]], m[s[5]]);
    mix(v, [3, 7, 11, 15], m[s[6]], m[s[7]]);
    mix(v, [0, 5, 10, 15], m[s[8]], m[s[9]]);
    mix(v, [1, 6, 11, 12], m[s[10]], m[s[11]]);
    mix(v, [2, 7, 8, 13], m[s[12]], m[s[13]]);
    mix(v, [3, 4, 9, 14], m[s[14]], m[s[15]]);
}

/// The mixing function G on the words `at` of `v` with message words x and y.
#[inline(always)]
fn mix(v: &mut [u64; 16], [a, b, c, d]: [usize; 4], x: u64, y: u64) {
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
    v[d] = (v[d] ^ v[a]).rotate_right(32);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(24);
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(63);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(bytes: &[u8], pieces: &[usize]) -> ([u8; 64], [u8; 64]) {
        let (mut scalar, mut vectorised) = (Scalar::new(), vector());
        let mut rest = bytes;
        for &n in pieces.iter().chain(std::iter::once(&usize::MAX)) {
            let (piece, after) = rest.split_at(n.min(rest.len()));
            scalar.update(piece);
            vectorised.update(piece);
            rest = after;
        }
        (scalar.finalize(), vectorised.finalize().as_bytes().try_into().unwrap())
    }

    #[test]
    fn the_scalar_rounds_give_blake2b_simds_digest_however_the_bytes_come() {
        let bytes: Vec<u8> = (0..3000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        // Empty, within a block, a block exactly, one past, many blocks; in one piece, and in
        // pieces that end on and off the block boundaries.
        for len in [0, 1, 3, 127, 128, 129, 255, 256, 257, 1000, 3000] {
            let b = &bytes[..len];
            for pieces in [&[][..], &[0, 0, 5], &[128, 128], &[127, 1, 1, 300], &[1; 200], &[129, 0, 256]] {
                let (scalar, vectorised) = both(b, pieces);
                assert!(scalar == vectorised, "{len} bytes in pieces {pieces:?}");
            }
        }
        // RFC 7693, appendix A: BLAKE2b-512("abc").
        let abc: String = both(b"abc", &[]).0.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            abc,
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1\
             7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
        );
    }

    #[test]
    fn a_digest_is_the_same_in_either_implementation() {
        let bytes = vec![3u8; 5 << 10];
        let mut d = Digest::new();
        d.update(&bytes[..1000]);
        d.update(&bytes[1000..]);
        assert!(d.finalize() == both(&bytes, &[]).1);
    }
}
