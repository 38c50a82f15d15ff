//! Reading files of untrusted bytes (parameter files, recorded constraints): every read says
//! what and where on failure, and every length is checked against the bytes left before
//! anything is allocated for it, so a corrupt length costs an error, not an allocation. A
//! file may end with a BLAKE2b-512 digest of the bytes before it ([`DigestWriter`] writes
//! it): the reader hashes what it reads, in the same pass, and checks it at the end.

use std::io::{Read, Seek, SeekFrom};

use crate::digest::{Digest, DIGEST_BYTES};
use crate::error::{Error, Result};

/// A reader that knows its offset and the bytes left, for errors that say where, and
/// hashes what it reads when the file carries a digest.
pub(crate) struct Reader<R> {
    inner: R,
    /// Bytes read so far (from the reader's start), for errors that say where.
    pub(crate) offset: u64,
    len: u64,
    /// The digest of what was read so far, for a file that ends with one.
    digest: Option<Digest>,
}

impl<R: Read + Seek> Reader<R> {
    pub(crate) fn new(mut reader: R) -> Result<Self> {
        let offset = reader.stream_position()?;
        let len = reader.seek(SeekFrom::End(0))?;
        reader.seek(SeekFrom::Start(offset))?;
        Ok(Reader { inner: reader, offset, len, digest: None })
    }

    /// Hashes every byte read from now on (the bytes already read were `head`), for
    /// [`check_digest`](Self::check_digest) at the end. The digest's own bytes are not
    /// counted as left to read.
    pub(crate) fn hash_from(&mut self, head: &[u8]) {
        self.hash_all();
        if let Some(state) = &mut self.digest {
            state.update(head);
        }
        self.len = self.len.saturating_sub(DIGEST_BYTES as u64);
    }

    /// Hashes every byte read from now on, for [`digest`](Self::digest): a file that does not
    /// carry its digest, whose digest a caller knows.
    pub(crate) fn hash_all(&mut self) {
        self.digest = Some(Digest::new());
    }

    /// The BLAKE2b-512 of every byte from where hashing began to the end of the file (the
    /// bytes not yet read are read for it), as lowercase hex.
    ///
    /// # Errors
    /// [`Error::Decode`] when the rest of the file cannot be read.
    pub(crate) fn digest(&mut self) -> Result<String> {
        let mut rest = vec![0u8; CHUNK];
        while self.left() > 0 {
            let n = (self.left() as usize).min(CHUNK);
            self.read_exact(&mut rest[..n], || "the bytes after the key".to_owned())?;
        }
        let state = self.digest.take().expect("hash_all was called");
        Ok(state.finalize_hex())
    }

    /// Reads the digest that ends the file and checks it against what was read, and that
    /// nothing follows it.
    ///
    /// # Errors
    /// [`Error::Decode`] when they differ (the file is damaged), or the file is not all read.
    pub(crate) fn check_digest(&mut self) -> Result<()> {
        let state = self.digest.take().expect("hash_from was called");
        if self.left() != 0 {
            return Err(Error::Decode {
                what: "the contents before the digest".to_owned(),
                offset: self.offset,
                reason: "bytes are left over: the file is damaged",
            });
        }
        let at = self.offset;
        self.len += DIGEST_BYTES as u64;
        let mut stored = [0u8; DIGEST_BYTES];
        self.read_exact(&mut stored, || "digest".to_owned())?;
        if state.finalize() != stored {
            return Err(Error::Decode {
                what: "digest".to_owned(),
                offset: at,
                reason: "the contents do not match their digest: the file is damaged",
            });
        }
        Ok(())
    }

    pub(crate) fn left(&self) -> u64 {
        self.len.saturating_sub(self.offset)
    }

    /// The digest's state (when the file is hashed), for the caller to add the bytes it
    /// reads to, beside other work on them, and to give back with
    /// [`restore_digest`](Self::restore_digest); reads until then are not hashed.
    pub(crate) fn take_digest(&mut self) -> Option<Digest> {
        self.digest.take()
    }

    /// Gives back the digest's state [`take_digest`](Self::take_digest) took.
    pub(crate) fn restore_digest(&mut self, state: Option<Digest>) {
        self.digest = state;
    }

    /// Fills `buf`, or names `what` as cut short (or unreadable).
    pub(crate) fn read_exact(&mut self, buf: &mut [u8], what: impl FnOnce() -> String) -> Result<()> {
        let at = self.offset;
        let reason = if (buf.len() as u64) > self.left() {
            "the file ends inside it"
        } else {
            match self.inner.read_exact(buf) {
                Ok(()) => {
                    self.offset += buf.len() as u64;
                    if let Some(state) = &mut self.digest {
                        state.update(buf);
                    }
                    return Ok(());
                }
                Err(_) => "it cannot be read",
            }
        };
        Err(Error::Decode { what: what(), offset: at, reason })
    }

    /// A u32 BE count of `what` items of `bytes` each, checked against the bytes left before
    /// anything is allocated for them.
    pub(crate) fn count(&mut self, what: &str, bytes: usize) -> Result<usize> {
        let at = self.offset;
        let mut buf = [0u8; 4];
        self.read_exact(&mut buf, || format!("length of {what}"))?;
        let count = u32::from_be_bytes(buf) as u64;
        if count * bytes as u64 > self.left() {
            return Err(Error::Decode {
                what: format!("length of {what} ({count} points)"),
                offset: at,
                reason: "it exceeds the bytes left in the file",
            });
        }
        Ok(count as usize)
    }

    /// Skips `bytes` of `what`, unread (and unhashed), once checked against the bytes left.
    ///
    /// # Errors
    /// [`Error::Decode`] when the file ends inside them; [`Error::Io`] when the seek fails.
    pub(crate) fn skip(&mut self, what: &str, bytes: u64) -> Result<()> {
        if bytes > self.left() {
            let (offset, reason) = (self.offset, "the file ends inside it");
            return Err(Error::Decode { what: what.to_owned(), offset, reason });
        }
        self.inner.seek(SeekFrom::Current(bytes as i64))?;
        self.offset += bytes;
        Ok(())
    }

    /// A little-endian u64.
    pub(crate) fn u64_le(&mut self, what: &str) -> Result<u64> {
        let mut buf = [0u8; 8];
        self.read_exact(&mut buf, || what.to_owned())?;
        Ok(u64::from_le_bytes(buf))
    }

    /// Checks that `count` items of `bytes` each fit in the bytes left, before anything is
    /// allocated for them.
    ///
    /// # Errors
    /// [`Error::Decode`] naming `what` when they do not.
    pub(crate) fn fits(&self, what: &str, count: u64, bytes: usize) -> Result<usize> {
        if count.checked_mul(bytes as u64).is_none_or(|total| total > self.left()) {
            return Err(Error::Decode {
                what: format!("length of {what} ({count} items)"),
                offset: self.offset,
                reason: "it exceeds the bytes left in the file",
            });
        }
        // It fits in the file, so in the address space of the machine that holds the file.
        Ok(count as usize)
    }

    /// `count` little-endian u32s, read in chunks (no second copy of a large array).
    pub(crate) fn u32s_le(&mut self, what: &str, count: u64) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(self.fits(what, count, 4)?);
        self.u32s_le_each(what, count, |_, piece| {
            out.extend_from_slice(piece);
            Ok(())
        })?;
        Ok(out)
    }

    /// `count` little-endian u32s handed to `f` a piece at a time (an even number of them
    /// but the last), with the index of the piece's first.
    ///
    /// # Errors
    /// As [`u32s_le`](Self::u32s_le), and `f`'s.
    pub(crate) fn u32s_le_each(
        &mut self,
        what: &str,
        count: u64,
        mut f: impl FnMut(usize, &[u32]) -> Result<()>,
    ) -> Result<()> {
        let n = self.fits(what, count, 4)?;
        let (mut buf, mut piece) = (vec![0u8; 4 * n.min(CHUNK)], Vec::with_capacity(n.min(CHUNK)));
        let mut first = 0;
        while first < n {
            let bytes = &mut buf[..4 * (n - first).min(CHUNK)];
            self.read_exact(bytes, || format!("{what}[{first}..{n}]"))?;
            piece.clear();
            piece.extend(bytes.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes"))));
            f(first, &piece)?;
            first += piece.len();
        }
        Ok(())
    }
}

/// Items read or written per chunk of an array.
const CHUNK: usize = 1 << 18;

/// Writes `values` as little-endian u32s, in chunks.
pub(crate) fn write_u32s_le<W: std::io::Write>(writer: &mut W, values: &[u32]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(4 * values.len().min(CHUNK));
    for chunk in values.chunks(CHUNK) {
        buf.clear();
        buf.extend(chunk.iter().flat_map(|v| v.to_le_bytes()));
        writer.write_all(&buf)?;
    }
    Ok(())
}

/// A writer that hashes what it writes, and ends the file with the digest
/// ([`finish`](Self::finish)), which [`Reader::check_digest`] checks.
pub(crate) struct DigestWriter<W> {
    inner: W,
    state: Digest,
}

impl<W: std::io::Write> DigestWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        DigestWriter { inner, state: Digest::new() }
    }

    /// Writes the digest of everything written, and flushes.
    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        self.inner.write_all(&self.state.finalize())?;
        self.inner.flush()
    }
}

impl<W: std::io::Write> std::io::Write for DigestWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.state.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
