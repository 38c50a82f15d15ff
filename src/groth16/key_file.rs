//! A proving key in its parameter file, for backends to read as they are made, and the two
//! places a prover's key can come from ([`KeySource`]). A file is opened once for its
//! verifying key and its queries' lengths (the points skipped, by seeking); a CUDA backend
//! then reads the points, batch by batch, straight into its device memory (or into pinned
//! host memory when it streams them), hashing the file in the same pass when it is trusted
//! by its digest, so the host never holds the whole key; the CPU backend reads the whole key.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};

use super::params::{check_digest, decoded, digest_form, FilePoint};
use super::{Check, KeyShape, ProvingKey, VerifyingKey};
use crate::decode::Reader;
use crate::error::{Error, Result};
use crate::r1cs::{R1cs, R1csFile, Recording};

/// The queries' names in the file's order: four of G1 points, then b_g2's of G2 points.
const QUERIES: [&str; 5] = ["h", "l", "a", "b_g1", "b_g2"];

/// Bytes of a point of query `query` (of [`QUERIES`]) in the file.
fn point_bytes(query: usize) -> usize {
    if query < 4 {
        G1Affine::BYTES
    } else {
        G2Affine::BYTES
    }
}

/// The error of a file that is not the one opened: `what`, at byte `offset`, differs.
fn changed(what: &str, offset: u64) -> Error {
    Error::Decode { what: what.to_owned(), offset, reason: "it differs from the file as it was opened" }
}

/// A parameter file in bellperson 0.27's layout ([`ProvingKey::read`]), opened: its
/// verifying key and its queries' lengths read, its points left in the file for a prover's
/// backends to read as they are made, a CUDA device straight into its memory.
///
/// # Examples
/// ```
/// # fn main() -> pinprove::Result<()> {
/// # use pinprove::{Circuit, ConstraintSystem, Field, Scalar, SynthesisError};
/// # struct Square(Scalar);
/// # impl Circuit<Scalar> for Square {
/// #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
/// #         let x = cs.alloc(|| "x", || Ok(self.0))?;
/// #         let y = cs.alloc_input(|| "y", || Ok(self.0.square()))?;
/// #         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
/// #         Ok(())
/// #     }
/// # }
/// use pinprove::{Check, Config, KeyFile, Prover};
///
/// let key = pinprove::generate_random_parameters(Square(Scalar::ZERO), &mut pinprove::rand_core::OsRng)?;
/// let path = std::env::temp_dir().join(format!("pinprove-doc-{}.params", std::process::id()));
/// key.write(std::fs::File::create(&path)?)?;
/// let file = KeyFile::open(&path, Check::OnCurve)?; // the verifying key and the lengths only
/// assert_eq!(file.verifying_key(), &key.vk);
/// let prover = Prover::new(file, Config { synthesis_threads: 2, ..Config::default() })?;
/// assert!(prover.prove(vec![Square(Scalar::from(3))])?.remove(0).is_ok());
/// prover.shutdown();
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct KeyFile {
    path: PathBuf,
    check: Check,
    /// The digest the file is trusted by (hex, lower case), checked at each read.
    digest: Option<String>,
    vk: VerifyingKey,
    /// The points of h, l, a, b_g1 and b_g2.
    lengths: [usize; 5],
    r1cs: Option<Recording>,
}

impl KeyFile {
    /// Opens the parameter file at `path`, reading its verifying key (every point checked)
    /// and its queries' lengths; each read of its points will check them as `check` says.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be opened; [`Error::Decode`] for a verifying key
    /// that does not decode, or a query longer than the file; [`Error::InvalidKey`] for
    /// lengths that disagree.
    pub fn open(path: impl AsRef<Path>, check: Check) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let mut src = Reader::new(BufReader::with_capacity(1 << 20, File::open(&path)?))?;
        let vk = src.verifying_key()?;
        let mut lengths = [0; 5];
        for (k, name) in QUERIES.into_iter().enumerate() {
            lengths[k] = src.count(name, point_bytes(k))?;
            src.skip(name, (lengths[k] * point_bytes(k)) as u64)?;
        }
        KeyShape::checked(vk.clone(), lengths, None)?;
        Ok(KeyFile { path, check, digest: None, vk, lengths, r1cs: None })
    }

    /// This file trusted by its digest, in the form of filecoin-proofs' `parameters.json`
    /// (see [`ProvingKey::read_digested`]): every read of its points hashes the whole file
    /// and refuses it, before anything is used, when the digest differs.
    ///
    /// # Errors
    /// [`Error::Config`] when `digest` is not 1 to 128 hex digits.
    pub fn with_digest(mut self, digest: &str) -> Result<Self> {
        self.digest = Some(digest_form(digest)?);
        Ok(self)
    }

    /// This file with `r1cs`, its circuit's recorded constraints (see
    /// [`ProvingKey::with_r1cs`]).
    ///
    /// # Errors
    /// [`Error::Shape`] when the recording is not of this key's circuit shape.
    pub fn with_r1cs(self, r1cs: impl Into<Arc<R1cs>>) -> Result<Self> {
        self.with_recording(Recording::Memory(r1cs.into()))
    }

    /// This file with the recorded constraints in `file` (see [`R1csFile`]): a CUDA backend
    /// reads them straight into device memory, so that neither the key nor the recording
    /// passes whole through host memory.
    ///
    /// # Errors
    /// [`Error::Shape`] when the recording is not of this key's circuit shape.
    pub fn with_r1cs_file(self, file: R1csFile) -> Result<Self> {
        self.with_recording(Recording::File(Arc::new(file)))
    }

    fn with_recording(mut self, recording: Recording) -> Result<Self> {
        recording.sizes().check_shape(&self.shape())?;
        self.r1cs = Some(recording);
        Ok(self)
    }

    /// The verifying key, read when the file was opened.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.vk
    }

    /// The whole key in host memory (with the recording), checked as the file says.
    ///
    /// # Errors
    /// As [`ProvingKey::read_digested`]; [`Error::Decode`] when the file changed since it was
    /// opened.
    pub fn read(&self) -> Result<ProvingKey> {
        let mut g1: [Vec<G1Affine>; 4] = std::array::from_fn(|q| Vec::with_capacity(self.lengths[q]));
        let mut b_g2 = Vec::with_capacity(self.lengths[4]);
        self.read_points(
            |q, _, batch| {
                g1[q].extend_from_slice(batch);
                Ok(())
            },
            |_, batch| {
                b_g2.extend_from_slice(batch);
                Ok(())
            },
        )?;
        let [h, l, a, b_g1] = g1;
        let mut key = ProvingKey::new(self.vk.clone(), h, l, a, b_g1, b_g2);
        key.r1cs = self.r1cs.as_ref().map(Recording::load).transpose()?;
        Ok(key)
    }

    /// The key's shape, from its verifying key and lengths.
    pub(crate) fn shape(&self) -> KeyShape {
        let [h, l, a, b, _] = self.lengths;
        KeyShape::new(self.vk.clone(), [h, l, a, b], self.r1cs.as_ref().map(|r| r.sizes().shape))
    }

    /// Points of h, l, a, b_g1 and b_g2.
    #[cfg(feature = "cuda")]
    pub(crate) fn lengths(&self) -> [usize; 5] {
        self.lengths
    }

    /// The recorded constraints, when set.
    #[cfg(feature = "cuda")]
    pub(crate) fn r1cs(&self) -> Option<&Recording> {
        self.r1cs.as_ref()
    }

    /// Reads the points in the file's order, batch by batch, checked as the file says: each
    /// G1 query's (h, l, a, b_g1: 0 to 3) to `g1(query, first point, batch)`, then b_g2's to
    /// `g2(first, batch)`; then, for a file trusted by its digest, checks it. The file must be
    /// the one opened.
    ///
    /// # Errors
    /// As [`ProvingKey::read_digested`]; [`Error::Decode`] when the file changed since it was
    /// opened; what `g1` and `g2` return.
    pub(crate) fn read_points(
        &self,
        mut g1: impl FnMut(usize, usize, &[G1Affine]) -> Result<()>,
        mut g2: impl FnMut(usize, &[G2Affine]) -> Result<()>,
    ) -> Result<()> {
        let check = self.check;
        self.read_queries(|src, q, n| match q {
            4 => src.batches(QUERIES[4], n, G2Affine::BYTES, decoded(QUERIES[4], check), &mut |first, batch| {
                g2(first, &batch)
            }),
            q => src.batches(QUERIES[q], n, G1Affine::BYTES, decoded(QUERIES[q], check), &mut |first, batch| {
                g1(q, first, &batch)
            }),
        })
    }

    /// Whether the points may be decoded elsewhere than by [`read_points`](Self::read_points)
    /// (on a device): checked on their curve only, which the device's decode does too.
    #[cfg(feature = "cuda")]
    pub(crate) fn raw_points(&self) -> bool {
        self.check == Check::OnCurve
    }

    /// Reads the points as [`read_points`](Self::read_points) does, but hands on each batch's
    /// bytes as they are in the file, kept as `keep` keeps them (off the reading thread), for
    /// a device to decode and check as [`Check::OnCurve`] says (see [`RawBatch::refused`]).
    ///
    /// # Errors
    /// As [`read_points`](Self::read_points) (but for the points' decode); what `keep` and
    /// `each` return.
    #[cfg(feature = "cuda")]
    pub(crate) fn read_raw<B: std::ops::Deref<Target = [u8]> + Send>(
        &self,
        keep: impl Fn(&[u8]) -> Result<B> + Sync,
        mut each: impl FnMut(RawBatch<B>) -> Result<()>,
    ) -> Result<()> {
        self.read_queries(|src, query, n| {
            let work = |bytes: &[u8], _, offset| Ok((keep(bytes)?, offset));
            src.batches(QUERIES[query], n, point_bytes(query), work, &mut |first, (bytes, offset)| {
                each(RawBatch { query, first, offset, bytes })
            })
        })
    }

    /// Reads the file from its start, checks that it is the one opened, hands each query's
    /// reader and point count (its count read) to `query(reader, query, n)`, and at the end
    /// checks the digest of a file trusted by one.
    fn read_queries(
        &self,
        mut query: impl FnMut(&mut Reader<BufReader<File>>, usize, usize) -> Result<()>,
    ) -> Result<()> {
        // A buffer smaller than a batch, which a batch's read then bypasses: it lands in the
        // batch's bytes with one copy out of the page cache, not two.
        let mut src = Reader::new(BufReader::with_capacity(1 << 20, File::open(&self.path)?))?;
        if self.digest.is_some() {
            src.hash_all();
        }
        if src.verifying_key()? != self.vk {
            return Err(changed("the verifying key", 0));
        }
        for (q, name) in QUERIES.into_iter().enumerate() {
            let at = src.offset;
            let n = src.count(name, point_bytes(q))?;
            if n != self.lengths[q] {
                return Err(changed(name, at));
            }
            query(&mut src, q, n)?;
        }
        match &self.digest {
            Some(expected) => check_digest(&mut src, expected),
            None => Ok(()),
        }
    }
}

/// A batch of a key's points as its file holds them ([`KeyFile::read_raw`]), its bytes kept
/// in a `B`.
#[cfg(feature = "cuda")]
#[derive(Debug)]
pub(crate) struct RawBatch<B> {
    /// The query (h, l, a, b_g1, b_g2: 0 to 4).
    pub(crate) query: usize,
    /// Its first point's index in the query.
    pub(crate) first: usize,
    /// Its first point's file offset.
    pub(crate) offset: u64,
    /// Its points' encodings.
    pub(crate) bytes: B,
}

#[cfg(feature = "cuda")]
impl RawBatch<()> {
    /// The most points a batch holds.
    pub(crate) const MOST_POINTS: usize = super::params::BATCH;
    /// The most bytes a batch holds (of G2 points).
    pub(crate) const MOST_BYTES: usize = Self::MOST_POINTS * G2Affine::BYTES;
}

#[cfg(feature = "cuda")]
impl<B: std::ops::Deref<Target = [u8]>> RawBatch<B> {
    /// Its points.
    pub(crate) fn points(&self) -> usize {
        self.bytes.len() / point_bytes(self.query)
    }

    /// Why point `index` of this batch, which a device refused, is refused: the host's decode
    /// of it ([`Check::OnCurve`]), or, should the host take it (or the index be past the
    /// batch), that the device did not.
    pub(crate) fn refused(&self, index: usize) -> Error {
        match self.query {
            4 => self.refused_as::<G2Affine>(index),
            _ => self.refused_as::<G1Affine>(index),
        }
    }

    fn refused_as<P: FilePoint>(&self, index: usize) -> Error {
        use super::params::point_at;
        let (name, offset) = (QUERIES[self.query], self.offset + (index * P::BYTES) as u64);
        let at = (name, self.first + index, offset);
        match self.bytes.chunks_exact(P::BYTES).nth(index).map(|b| point_at::<P>(b, Check::OnCurve, at)) {
            Some(Err(e)) => e,
            _ => Error::Decode { what: format!("{name}[{}]", at.1), offset, reason: "the device's decode refused it" },
        }
    }
}

/// Where a prover's key comes from: a key in host memory, or its parameter file, which each
/// backend reads as it is made (a CUDA device straight into its memory).
#[derive(Debug, Clone)]
pub enum KeySource {
    /// A key in host memory, shared with the backends that keep it (the CPU backend).
    Memory(Arc<ProvingKey>),
    /// A parameter file.
    File(Arc<KeyFile>),
}

impl KeySource {
    /// The whole key in host memory: this one's, or read from the file (for a backend that
    /// reads the bases on the host, as the CPU backend does).
    ///
    /// # Errors
    /// As [`KeyFile::read`].
    pub fn load(&self) -> Result<Arc<ProvingKey>> {
        match self {
            KeySource::Memory(key) => Ok(Arc::clone(key)),
            KeySource::File(file) => Ok(Arc::new(file.read()?)),
        }
    }

    /// The key's shape.
    pub(crate) fn shape(&self) -> KeyShape {
        match self {
            KeySource::Memory(key) => key.shape(),
            KeySource::File(file) => file.shape(),
        }
    }

    /// Checks the key's invariants (a file's were checked when it was opened).
    pub(crate) fn validate(&self) -> Result<()> {
        match self {
            KeySource::Memory(key) => key.validate(),
            KeySource::File(_) => Ok(()),
        }
    }
}

impl From<ProvingKey> for KeySource {
    fn from(key: ProvingKey) -> Self {
        KeySource::Memory(Arc::new(key))
    }
}

impl From<Arc<ProvingKey>> for KeySource {
    fn from(key: Arc<ProvingKey>) -> Self {
        KeySource::Memory(key)
    }
}

impl From<KeyFile> for KeySource {
    fn from(file: KeyFile) -> Self {
        KeySource::File(Arc::new(file))
    }
}
