//! A witness of bits: a witness-only partition's aux assignment with each 0 or 1 as one bit
//! and every other value as it is. Bit-heavy circuits (SHA-256, Filecoin's PoRep) are nearly
//! all zeros and ones, so their partitions hold, and send to a device, a few bits a value
//! instead of 32 bytes; a dense circuit holds its values and two bits more.
//!
//! The layout, which the device's expansion reads as it is (`cuda/r1cs/packed.cuh`): value i
//! is bit i % 64 of word i / 64 of `ones` (it is 1) and of `others` (it is neither 0 nor 1:
//! the next of `values`, which keeps them in index order); `ranks[g]` counts the others
//! before value g·[`GROUP`], so that each group expands on its own. The values come in
//! chunks of the pool's as synthesis needs them.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::error::Result;
use crate::msm::Census;
use crate::pool::{PinnedPool, PinnedVec};

/// Values per rank: a device block expands one group (`PACKED_GROUP`, cuda/geometry.h), and
/// the CPU one group per task.
pub(crate) const GROUP: usize = 4096;

/// 1 in Montgomery form, as blst holds it.
const ONE_LIMBS: [u64; 4] =
    [0x0000_0001_ffff_fffe, 0x5884_b7fa_0003_4802, 0x998c_4fef_ecbc_4ff5, 0x1824_b159_acc5_056f];

/// The most values of a chunk of others: 2 MiB, copied to a device at the link's full rate.
pub(crate) const CHUNK: usize = 1 << 16;

/// A witness-only partition's aux assignment, packed: each value 0 or 1 a bit, the others as
/// they are. A backend expands it ([`expand_into`](Self::expand_into)) or copies its parts.
///
/// # Examples
/// ```
/// use pinprove::backend::Assignment;
/// use pinprove::internal::synthesize_witness;
/// use pinprove::{Circuit, ConstraintSystem, PinnedPool, PoolConfig, R1cs, Scalar, SynthesisError};
///
/// /// A bit b and x = 5·b.
/// struct Scaled(bool);
/// impl Circuit<Scalar> for Scaled {
///     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
///         let b = Scalar::from(u64::from(self.0));
///         let bit = cs.alloc(|| "b", || Ok(b))?;
///         let x = cs.alloc(|| "x", || Ok(b * Scalar::from(5)))?;
///         cs.enforce(|| "5b = x", |lc| lc + (Scalar::from(5), bit), |lc| lc + CS::one(), |lc| lc + x);
///         Ok(())
///     }
/// }
///
/// let r1cs = R1cs::record(Scaled(false))?;
/// let witness = synthesize_witness(Scaled(true), &r1cs, &PinnedPool::new(PoolConfig::default()))?;
/// let Assignment::Packed(aux) = &witness.assignment else { unreachable!() };
/// assert_eq!((aux.census().ones, aux.census().others), (1, 1)); // b = 1 a bit, x = 5 a value
/// assert_eq!(aux.to_vec(), [Scalar::from(1), Scalar::from(5)]);
/// # Ok::<(), pinprove::Error>(())
/// ```
#[derive(Debug)]
pub struct PackedAux {
    len: usize,
    /// The values it can hold: the recording's aux count.
    capacity: usize,
    ones: PinnedVec<u64>,
    others: PinnedVec<u64>,
    ranks: PinnedVec<u32>,
    values: Vec<PinnedVec<Scalar>>,
    others_len: usize,
    /// Values per chunk ([`chunk_len`]).
    chunk: usize,
}

/// Whether `x` is 1, and whether it is neither 0 nor 1, as bits, from its limbs without a
/// branch.
#[inline]
fn classify(x: &Scalar) -> (u64, u64) {
    let [l0, l1, l2, l3] = blst::blst_fr::from(*x).l;
    let [r0, r1, r2, r3] = ONE_LIMBS;
    let zero = u64::from((l0 | l1 | l2 | l3) == 0);
    let one = u64::from(((l0 ^ r0) | (l1 ^ r1) | (l2 ^ r2) | (l3 ^ r3)) == 0);
    (one, 1 ^ zero ^ one)
}

/// Bytes of the buffers a packed aux of `capacity` values holds before its values: the two
/// bitmaps and the ranks.
pub(crate) fn bitmap_bytes(capacity: usize) -> [usize; 3] {
    let words = capacity.div_ceil(64);
    [8 * words, 8 * words, 4 * capacity.div_ceil(GROUP)]
}

/// Values in a chunk of a packed aux of `capacity` values: a 64th of them (half a byte a
/// value, as much as a bitmap takes), so that the last, partly filled chunk of a bit-heavy
/// partition stays small beside its bitmaps, and a dense one takes 64 chunks; at least 64,
/// at most [`CHUNK`].
pub(crate) fn chunk_len(capacity: usize) -> usize {
    (capacity / 64).clamp(64, CHUNK)
}

impl PackedAux {
    /// An empty packed aux for `capacity` values, its bitmaps and ranks checked out of
    /// `pool` together (the values' chunks come as they are pushed).
    ///
    /// # Errors
    /// As [`PinnedPool::checkout_many`].
    pub(crate) fn checkout(pool: &PinnedPool, capacity: usize) -> Result<Self> {
        let [ones, others, ranks] = pool.checkout_many(bitmap_bytes(capacity))?;
        let words = capacity.div_ceil(64);
        let (mut ones, mut others) = (PinnedVec::new(ones), PinnedVec::new(others));
        ones.resize(words, 0)?;
        others.resize(words, 0)?;
        let chunk = chunk_len(capacity);
        let ranks = PinnedVec::new(ranks);
        Ok(PackedAux { len: 0, capacity, ones, others, ranks, values: vec![], others_len: 0, chunk })
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends as many of `xs` as it has room for, checking out a chunk of values when one
    /// neither 0 nor 1 finds the last full; returns how many it took. A word of bits at a
    /// time: a native witness path appends its values by the thousand.
    ///
    /// # Errors
    /// The pool's, when a chunk cannot be had; what was appended before stays.
    pub(crate) fn extend(&mut self, xs: &[Scalar], pool: &PinnedPool) -> Result<usize> {
        if let [x] = xs {
            return self.push(*x, pool).map(usize::from);
        }
        let n = xs.len().min(self.capacity - self.len);
        let mut taken = 0;
        while taken < n {
            let i = self.len;
            if i % GROUP == 0 {
                self.ranks.push_within_capacity(self.others_len as u32).expect("a rank per group");
            }
            // The values up to the end of value i's word, classified without a branch on
            // their bits (one mispredicted on each coin flip cost a native SHA-256 witness a
            // sixth of its time), then the rare others stored.
            let word = &xs[taken..n.min(taken + 64 - i % 64)];
            let (mut ones, mut others) = (0u64, 0u64);
            for (b, x) in word.iter().enumerate() {
                let (one, other) = classify(x);
                ones |= one << b;
                others |= other << b;
            }
            let mut left = others;
            while left != 0 {
                self.push_value(word[left.trailing_zeros() as usize], pool)?;
                left &= left - 1;
            }
            self.ones[i / 64] |= ones << (i % 64);
            self.others[i / 64] |= others << (i % 64);
            self.len += word.len();
            taken += word.len();
        }
        Ok(taken)
    }

    /// Appends `x` unless it is full (false), as [`extend`](Self::extend) does: a circuit's
    /// `alloc` appends one value at a time.
    fn push(&mut self, x: Scalar, pool: &PinnedPool) -> Result<bool> {
        let i = self.len;
        if i == self.capacity {
            return Ok(false);
        }
        if i % GROUP == 0 {
            self.ranks.push_within_capacity(self.others_len as u32).expect("a rank per group");
        }
        let (one, other) = classify(&x);
        if other == 1 {
            self.push_value(x, pool)?;
        }
        self.ones[i / 64] |= one << (i % 64);
        self.others[i / 64] |= other << (i % 64);
        self.len += 1;
        Ok(true)
    }

    /// Appends `x` to the values neither 0 nor 1.
    fn push_value(&mut self, x: Scalar, pool: &PinnedPool) -> Result<()> {
        match self.values.last_mut() {
            Some(chunk) if chunk.len() < self.chunk => chunk.push_within_capacity(x).expect("room checked"),
            _ => {
                let mut chunk = PinnedVec::checkout(pool, self.chunk)?;
                chunk.push_within_capacity(x).expect("a new chunk has room");
                self.values.push(chunk);
            }
        }
        self.others_len += 1;
        Ok(())
    }

    /// Writes the values into `out`, in parallel on the current rayon pool.
    ///
    /// # Panics
    /// If `out` is not [`len`](Self::len) long.
    pub fn expand_into(&self, out: &mut [Scalar]) {
        assert_eq!(out.len(), self.len, "expanding {} values into {}", self.len, out.len());
        out.par_chunks_mut(GROUP).enumerate().for_each(|(g, out)| {
            let mut rank = self.ranks[g] as usize;
            for (k, x) in out.iter_mut().enumerate() {
                let i = g * GROUP + k;
                let (word, bit) = (i / 64, 1u64 << (i % 64));
                *x = if self.others[word] & bit != 0 {
                    rank += 1;
                    self.values[(rank - 1) / self.chunk][(rank - 1) % self.chunk]
                } else if self.ones[word] & bit != 0 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                };
            }
        });
    }

    /// The values, expanded into a new vector.
    pub fn to_vec(&self) -> Vec<Scalar> {
        let mut out = vec![Scalar::ZERO; self.len];
        self.expand_into(&mut out);
        out
    }

    /// How many of its values are 0, 1, and neither: from the bitmaps.
    pub fn census(&self) -> Census {
        let ones = self.ones.iter().map(|w| w.count_ones() as usize).sum();
        Census { zeros: self.len - ones - self.others_len, ones, others: self.others_len }
    }

    /// Word i / 64's bit i % 64 says whether value i is 1: as many words as the capacity
    /// needs.
    pub fn ones(&self) -> &[u64] {
        &self.ones
    }

    /// Word i / 64's bit i % 64 says whether value i is neither 0 nor 1.
    pub fn others(&self) -> &[u64] {
        &self.others
    }

    /// Per group of 4096 values, how many values before it are neither 0 nor 1.
    pub fn ranks(&self) -> &[u32] {
        &self.ranks
    }

    /// The values neither 0 nor 1, in index order, in chunks of
    /// [`chunk_len`](Self::chunk_len) values (the last may hold fewer).
    pub fn value_chunks(&self) -> &[PinnedVec<Scalar>] {
        &self.values
    }

    /// Values per chunk of [`value_chunks`](Self::value_chunks).
    pub fn chunk_len(&self) -> usize {
        self.chunk
    }

    /// Bytes of the pool buffers it holds.
    pub fn host_bytes(&self) -> usize {
        let bitmaps = [self.ones.buffer(), self.others.buffer(), self.ranks.buffer()];
        let values = self.values.iter().map(|c| c.buffer().capacity());
        bitmaps.iter().map(|b| b.capacity()).chain(values).sum()
    }

    /// Bytes a device copies of it: the bitmaps, the ranks and the values.
    pub fn copied_bytes(&self) -> usize {
        8 * (self.ones.len() + self.others.len()) + 4 * self.ranks.len() + 32 * self.others_len
    }

    /// Whether every buffer it holds is page-locked.
    pub fn is_pinned(&self) -> bool {
        self.bitmaps_pinned() && self.values.iter().all(|c| c.is_pinned())
    }

    /// Whether the bitmaps and ranks are page-locked (checked out together, they all are or
    /// none is).
    pub(crate) fn bitmaps_pinned(&self) -> bool {
        self.ones.is_pinned() && self.others.is_pinned() && self.ranks.is_pinned()
    }
}

#[cfg(test)]
mod tests {
    use blstrs::Scalar;
    use ff::Field;

    use super::{Census, PackedAux, GROUP};
    use crate::pool::{PinnedPool, PoolConfig};

    fn packed(values: &[Scalar], pool: &PinnedPool) -> PackedAux {
        let mut p = PackedAux::checkout(pool, values.len()).unwrap();
        // One at a time, then in runs that start and end inside words.
        let (one_by_one, runs) = values.split_at(values.len().min(100));
        one_by_one.iter().for_each(|x| assert_eq!(p.extend(std::slice::from_ref(x), pool).unwrap(), 1));
        runs.chunks(97).for_each(|run| assert_eq!(p.extend(run, pool).unwrap(), run.len()));
        assert_eq!(p.extend(&[Scalar::ONE], pool).unwrap(), 0, "full");
        p
    }

    #[test]
    fn one_limbs_are_blsts_one() {
        assert_eq!(blst::blst_fr::from(Scalar::ONE).l, super::ONE_LIMBS);
    }

    #[test]
    fn values_expand_to_themselves_across_words_groups_and_chunks() {
        let pool = PinnedPool::new(PoolConfig::default());
        let n = 3 * GROUP + 77;
        let patterns: [fn(usize) -> Scalar; 5] = [
            |_| Scalar::ZERO,
            |_| Scalar::ONE,
            |i| Scalar::from(i as u64 + 2),
            |i| Scalar::from([0, 1, 5][i % 3]),
            |i| if i % 997 == 0 { -Scalar::from(i as u64) } else { Scalar::from((i % 2) as u64) },
        ];
        for (k, pattern) in patterns.into_iter().enumerate() {
            let values: Vec<Scalar> = (0..n).map(pattern).collect();
            let p = packed(&values, &pool);
            assert_eq!(p.to_vec(), values, "pattern {k}");
            let census = Census::of(&values);
            assert_eq!(p.census(), census, "pattern {k}");
            assert_eq!(p.copied_bytes(), 16 * n.div_ceil(64) + 4 * 4 + 32 * census.others, "pattern {k}");
        }
    }

    /// The device's expansion (`cuda/r1cs/packed.cuh`) on the host: per group, the others
    /// before each of its words from the group's rank and the words' counts (the warp's
    /// scan), then each value from its word's count and the bits below its own, the chunks
    /// read as one vector (as they are copied up, chunk j at j · chunk_len).
    fn expand_as_the_device_does(p: &PackedAux) -> Vec<Scalar> {
        let values: Vec<Scalar> = p.value_chunks().iter().flat_map(|c| c.iter().copied()).collect();
        let (ones, others, len) = (p.ones(), p.others(), p.len());
        let mut out = Vec::with_capacity(len);
        for (g, &rank) in p.ranks().iter().enumerate() {
            let (first, word0) = (g * GROUP, g * GROUP / 64);
            let words = (len - first).min(GROUP).div_ceil(64);
            let before: Vec<u32> = (0..words)
                .scan(rank, |acc, w| Some(std::mem::replace(acc, *acc + others[word0 + w].count_ones())))
                .collect();
            for k in 0..(len - first).min(GROUP) {
                let (bit, other) = (1u64 << (k % 64), others[word0 + k / 64]);
                out.push(if other & bit != 0 {
                    values[(before[k / 64] + (other & (bit - 1)).count_ones()) as usize]
                } else if ones[word0 + k / 64] & bit != 0 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                });
            }
        }
        out
    }

    #[test]
    fn the_device_expansion_reads_the_layout_as_the_cpu_does() {
        let pool = PinnedPool::new(PoolConfig::default());
        for n in [0, 1, 63, 64, 65, GROUP - 1, GROUP, GROUP + 1, 2 * super::CHUNK + 3 * GROUP + 100] {
            let values: Vec<Scalar> = (0..n)
                .map(|i| if i % 5 == 3 { Scalar::from(i as u64 + 2) } else { Scalar::from((i % 2) as u64) })
                .collect();
            let p = packed(&values, &pool);
            assert_eq!(expand_as_the_device_does(&p), values, "{n} values");
        }
    }

    #[test]
    fn others_past_a_chunk_take_another_and_it_all_goes_back() {
        let pool = PinnedPool::new(PoolConfig::default());
        let n = 2 * super::CHUNK + 5;
        let values: Vec<Scalar> = (0..n).map(|i| Scalar::from(i as u64 + 7)).collect();
        let p = packed(&values, &pool);
        assert_eq!((p.value_chunks().len(), p.chunk_len()), (65, n / 64));
        assert_eq!(p.value_chunks()[64].len(), 5, "n is 64 chunks and 5 values");
        assert_eq!(p.to_vec(), values);
        assert_eq!(pool.stats().checkouts, 68, "two bitmaps, the ranks, 65 chunks");
        drop(p);
        assert_eq!(pool.stats().checkins, 68);
    }
}
