//! Proving keys to and from bellperson 0.27's parameter files (`Parameters::write`, what
//! Filecoin's `.params` files hold), streamed straight into and out of a [`ProvingKey`].
//!
//! Layout (every point uncompressed, big-endian, as `to_uncompressed` writes it): the
//! verifying key (α₁, β₁, β₂, γ₂, δ₁, δ₂, then a u32 BE count and the IC points), then the
//! h, l, a, b_g1 (G1) and b_g2 (G2) queries, each a u32 BE count and its points.
//!
//! Reading decodes each chunk of points on every core while nothing else is held: the key's
//! vectors are allocated once, at their exact length, and only after the length field has
//! been checked against the bytes left, so a corrupt length costs an error, not an
//! allocation. Like bellperson, every point must decode, and the query points must not be at
//! infinity; [`Check::Full`] also checks that each one is in its prime-order subgroup (the
//! verifying key's points always are).

use std::io::{Read, Seek, Write};

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

use super::{ProvingKey, VerifyingKey};
use crate::decode::Reader;
use crate::error::{Error, Result};

/// How much of each point a read checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Check {
    /// On the curve and in its prime-order subgroup (the default: files are inputs).
    #[default]
    Full,
    /// On the curve only, for files the caller trusts (much faster: no subgroup checks). A
    /// CUDA backend reading a [`KeyFile`](super::KeyFile) so checked decodes and checks the
    /// points on its device.
    OnCurve,
}

/// Points decoded per parallel batch: 6 MiB of G1 points, 12 MiB of G2 points.
pub(super) const BATCH: usize = 1 << 16;

/// A point type of the file format.
pub(super) trait FilePoint: PrimeCurveAffine + UncompressedEncoding + Send {
    /// Bytes of its uncompressed encoding.
    const BYTES: usize;
    /// Whether it lies in the prime-order subgroup.
    fn in_subgroup(&self) -> bool;
}

impl FilePoint for G1Affine {
    const BYTES: usize = 96;
    fn in_subgroup(&self) -> bool {
        self.is_torsion_free().into()
    }
}

impl FilePoint for G2Affine {
    const BYTES: usize = 192;
    fn in_subgroup(&self) -> bool {
        self.is_torsion_free().into()
    }
}

impl<R: Read + Seek> Reader<R> {
    /// One point of the verifying key: on the curve and in its subgroup, always.
    fn vk_point<P: FilePoint>(&mut self, what: &str) -> Result<P> {
        let mut repr = P::Uncompressed::default();
        let at = self.offset;
        self.read_exact(repr.as_mut(), || what.to_owned())?;
        decode::<P>(&repr, Check::Full, false).map_err(|reason| Error::Decode {
            what: what.to_owned(),
            offset: at,
            reason,
        })
    }

    /// A query: its count, then its points, decoded in parallel batches.
    fn query<P: FilePoint>(&mut self, name: &str, check: Check) -> Result<Vec<P>> {
        let n = self.count(name, P::BYTES)?;
        let mut points = Vec::with_capacity(n);
        self.batches(name, n, P::BYTES, decoded::<P>(name, check), &mut |_, batch: Vec<P>| {
            points.extend_from_slice(&batch);
            Ok(())
        })?;
        Ok(points)
    }

    /// The `n` points of `point_bytes` each of query `name` (its count read), batch by batch:
    /// what `work` makes of each batch's bytes (given the index of its first point and its
    /// file offset) handed to `each` with that index. Four things overlap: batch k's work (on
    /// the rayon pool of the calling thread), its digest (when the file is trusted by one: the
    /// file's bytes in order, on one core), and on this thread the read of batch k+1, then
    /// `each` of batch k−1; so that the load runs at the rate of its slowest part, not of
    /// their sum.
    pub(super) fn batches<T: Send>(
        &mut self,
        name: &str,
        n: usize,
        point_bytes: usize,
        work: impl Fn(&[u8], usize, u64) -> Result<T> + Sync,
        each: &mut dyn FnMut(usize, T) -> Result<()>,
    ) -> Result<()> {
        let bytes = |k: usize| (n - k * BATCH).min(BATCH) * point_bytes;
        let what = |k: usize| format!("{name}[{}..{n}]", k * BATCH);
        let (mut this, mut next) = (vec![0u8; bytes(0)], vec![0u8; if n > BATCH { bytes(1) } else { 0 }]);
        let mut digest = self.take_digest();
        let mut at = self.offset;
        let mut read = self.read_exact(&mut this, || what(0));
        let mut last: Option<(usize, T)> = None;
        for k in 0..n.div_ceil(BATCH) {
            read?;
            let (first, at_next) = (k * BATCH, self.offset);
            let this_bytes = &this[..bytes(k)];
            let mut made = None;
            let handed;
            // In place: this thread reads and hands on while the batch's work and digest run
            // on the pool this thread is in (the global one outside any).
            (read, handed) = rayon::in_place_scope(|scope| {
                scope.spawn(|_| made = Some(work(this_bytes, first, at)));
                if let Some(state) = digest.as_mut() {
                    scope.spawn(move |_| {
                        state.update(this_bytes);
                    });
                }
                let read = match first + BATCH < n {
                    true => self.read_exact(&mut next[..bytes(k + 1)], || what(k + 1)),
                    false => Ok(()),
                };
                (read, last.take().map_or(Ok(()), |(first, made)| each(first, made)))
            });
            let made = made.expect("the scope ends once its work has run");
            handed?;
            last = Some((first, made?));
            (this, next, at) = (next, this, at_next);
        }
        self.restore_digest(digest);
        last.map_or(Ok(()), |(first, made)| each(first, made))
    }

    /// The verifying key, the first part of the file.
    pub(super) fn verifying_key(&mut self) -> Result<VerifyingKey> {
        Ok(VerifyingKey {
            alpha_g1: self.vk_point("vk.alpha_g1")?,
            beta_g1: self.vk_point("vk.beta_g1")?,
            beta_g2: self.vk_point("vk.beta_g2")?,
            gamma_g2: self.vk_point("vk.gamma_g2")?,
            delta_g1: self.vk_point("vk.delta_g1")?,
            delta_g2: self.vk_point("vk.delta_g2")?,
            ic: self.query("vk.ic", Check::Full)?,
        })
    }
}

/// `digest` as a trusted file's expected digest: 1 to 128 hex digits, lower case.
///
/// # Errors
/// [`Error::Config`] when it is not.
pub(super) fn digest_form(digest: &str) -> Result<String> {
    let expected = digest.to_ascii_lowercase();
    if expected.is_empty() || expected.len() > 128 || !expected.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::Config(format!("a digest is 1 to 128 hex digits, not `{digest}`")));
    }
    Ok(expected)
}

/// Finishes the digest of a file read from its start (the rest of it read) and compares it
/// with `expected`.
///
/// # Errors
/// [`Error::Digest`] when it differs.
pub(super) fn check_digest<R: Read + Seek>(src: &mut Reader<R>, expected: &str) -> Result<()> {
    let got = src.digest()?;
    if !got.starts_with(expected) {
        return Err(Error::Digest { got: got[..expected.len()].to_owned(), expected: expected.to_owned() });
    }
    Ok(())
}

/// The work of [`Reader::batches`] that decodes the points of query `name` in parallel,
/// checked as `check` says.
pub(super) fn decoded<P: FilePoint>(
    name: &str,
    check: Check,
) -> impl Fn(&[u8], usize, u64) -> Result<Vec<P>> + Sync + '_ {
    move |bytes, first, at| {
        bytes
            .par_chunks_exact(P::BYTES)
            .enumerate()
            .map(|(i, b)| point_at::<P>(b, check, (name, first + i, at + (i * P::BYTES) as u64)))
            .collect()
    }
}

/// The point encoded in `bytes`, query `name`'s point `index` at file offset `offset`, as a
/// query point: decoded, checked as `check` says, not at infinity.
///
/// # Errors
/// [`Error::Decode`] naming the point and why it is refused.
pub(crate) fn point_at<P: FilePoint>(
    bytes: &[u8],
    check: Check,
    (name, index, offset): (&str, usize, u64),
) -> Result<P> {
    let mut repr = P::Uncompressed::default();
    repr.as_mut().copy_from_slice(bytes);
    decode::<P>(&repr, check, true).map_err(|reason| Error::Decode { what: format!("{name}[{index}]"), offset, reason })
}

/// A point from its encoding, or why not.
fn decode<P: FilePoint>(repr: &P::Uncompressed, check: Check, finite: bool) -> std::result::Result<P, &'static str> {
    // blst reads a compressed point from the first half when the compression flag (0x80) is
    // set, and ignores the sort flag (0x20) of an uncompressed one: neither belongs here.
    if repr.as_ref()[0] & 0xa0 != 0 {
        return Err("flag bits an uncompressed point does not have");
    }
    let on_curve: Option<P> = P::from_uncompressed_unchecked(repr).into();
    let point = on_curve.ok_or("not the encoding of a point on the curve")?;
    if check == Check::Full && !point.in_subgroup() {
        return Err("not in the prime-order subgroup");
    }
    if finite && bool::from(point.is_identity()) {
        return Err("point at infinity");
    }
    Ok(point)
}

impl ProvingKey {
    /// Reads a key in bellperson 0.27's `Parameters::write` layout, what Filecoin's
    /// `.params` files hold: every point uncompressed, big-endian (`to_uncompressed`); the
    /// verifying key (α₁, β₁, β₂, γ₂, δ₁, δ₂, then a u32 BE count and the IC points), then
    /// the h, l, a, b_g1 (G1) and b_g2 (G2) queries, each a u32 BE count and its points.
    ///
    /// Each chunk of points is decoded on every core; the key's vectors are allocated once,
    /// at their exact length, after their length was checked against the bytes left. Like
    /// bellperson, every point must decode and no query point may be at infinity;
    /// [`Check::Full`] also checks each query point's subgroup (the verifying key's always
    /// are), at about a hundredth of the speed of [`Check::OnCurve`] (33.7 MB: 7.96 s against
    /// 0.08 s on 2 cores). What no check here catches: points that are valid but not the
    /// setup's (a key of another circuit, or damaged to another valid point): its proofs then
    /// do not verify, and the prover answers [`Error::ProofInvalid`].
    ///
    /// # Errors
    /// [`Error::Decode`] naming what is wrong and where (vector, index, byte offset): a file
    /// cut short, a length larger than the bytes left, a point that does not decode, is off its
    /// curve, outside its subgroup (with [`Check::Full`]) or at infinity in a query;
    /// [`Error::InvalidKey`] for queries whose lengths disagree; [`Error::Io`] when `reader`
    /// cannot tell its length (seek).
    pub fn read<R: Read + Seek>(reader: R, check: Check) -> Result<Self> {
        Self::read_from(&mut Reader::new(reader)?, check)
    }

    /// Reads a key as [`read`](Self::read) does, from a file trusted by its digest: the
    /// BLAKE2b-512 of the file (the reader's bytes from its position to its end), computed in
    /// the same pass, must begin with `digest`, in the form of filecoin-proofs'
    /// `parameters.json` manifest (its first 32 hex digits; any length of hex digits is
    /// compared). A file trusted so needs no subgroup checks: [`Check::OnCurve`] fits it, at
    /// a hundredth of [`Check::Full`]'s cost. The digest is one sequential stream, hashed on
    /// one core beside the read and the decode, so it sets a trusted load's least time: about
    /// 1.45 GB/s on an AMD EPYC core, 0.7 to 0.8 on the GPU machines' Xeon cores.
    ///
    /// # Errors
    /// [`Error::Digest`] when the file's digest differs; [`Error::Config`] when `digest` is
    /// not hex digits; as [`read`](Self::read) otherwise. Nothing is returned of a file whose
    /// digest differs.
    pub fn read_digested<R: Read + Seek>(reader: R, check: Check, digest: &str) -> Result<Self> {
        let expected = digest_form(digest)?;
        let mut src = Reader::new(reader)?;
        src.hash_all();
        let key = Self::read_from(&mut src, check)?;
        check_digest(&mut src, &expected)?;
        Ok(key)
    }

    fn read_from<R: Read + Seek>(src: &mut Reader<R>, check: Check) -> Result<Self> {
        let vk = src.verifying_key()?;
        let (h, l, a) = (src.query("h", check)?, src.query("l", check)?, src.query("a", check)?);
        let key = ProvingKey::new(vk, h, l, a, src.query("b_g1", check)?, src.query("b_g2", check)?);
        key.validate()?;
        Ok(key)
    }

    /// Writes the key in bellperson 0.27's `Parameters::write` layout, encoding batches of
    /// points in parallel.
    ///
    /// # Errors
    /// [`Error::Io`] when `writer` fails.
    pub fn write<W: Write>(&self, mut writer: W) -> Result<()> {
        let vk = &self.vk;
        let mut head = Vec::new();
        head.extend_from_slice(vk.alpha_g1.to_uncompressed().as_ref());
        head.extend_from_slice(vk.beta_g1.to_uncompressed().as_ref());
        head.extend_from_slice(vk.beta_g2.to_uncompressed().as_ref());
        head.extend_from_slice(vk.gamma_g2.to_uncompressed().as_ref());
        head.extend_from_slice(vk.delta_g1.to_uncompressed().as_ref());
        head.extend_from_slice(vk.delta_g2.to_uncompressed().as_ref());
        writer.write_all(&head)?;
        write_query(&mut writer, &vk.ic)?;
        for query in [&self.h, &self.l, &self.a, &self.b_g1] {
            write_query(&mut writer, query)?;
        }
        Ok(write_query(&mut writer, &self.b_g2)?)
    }
}

fn write_query<P: FilePoint + Sync, W: Write>(writer: &mut W, points: &[P]) -> std::io::Result<()> {
    let count = u32::try_from(points.len())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "more than 2^32 points"))?;
    writer.write_all(&count.to_be_bytes())?;
    let mut bytes = vec![0u8; BATCH.min(points.len()) * P::BYTES];
    for batch in points.chunks(BATCH) {
        let bytes = &mut bytes[..batch.len() * P::BYTES];
        bytes
            .par_chunks_exact_mut(P::BYTES)
            .zip(batch)
            .for_each(|(out, p)| out.copy_from_slice(p.to_uncompressed().as_ref()));
        writer.write_all(bytes)?;
    }
    Ok(())
}
