//! A key's recorded constraints on the device: the coefficients' table and the gathers'
//! indices uploaded once, and the matrices too where they fit (resident beside the key's
//! bases), else copied up a chunk of rows at a time each partition (streamed). Per
//! partition the input and the packed aux are copied up, the aux expanded, and a, b, c and
//! the A and B scalars computed there (`cuda/r1cs/packed.cuh` and `spmv.cuh`, launched by
//! `ffi/r1cs.rs`), so the host sends a few bits per variable of a bit-heavy circuit (32
//! bytes per value neither 0 nor 1), and the matrices' bytes when they are streamed.

use std::sync::Arc;

use blstrs::Scalar;
use cust::stream::Stream;

use crate::backend::cuda::ffi::r1cs::{
    wide, DeviceIndices, DeviceMatrix, DevicePacked, DeviceZ, MatrixRoom, PackedVars,
};
use crate::backend::cuda::ffi::r1cs::{R1csKernels, Which};
use crate::backend::cuda::ffi::{upload, DeviceVec, InFlight, Staging};
use crate::error::Result;
use crate::r1cs::{Counts, Piece, R1cs, R1csFile, RecordingShape, RecordingSizes, Sink};
use crate::synth::packed;
use crate::synth::PackedAux;

/// Where the matrices are.
#[derive(Debug)]
enum Matrices {
    /// On the device, uploaded once.
    Resident([DeviceMatrix; 3]),
    /// On the host (the key's recording), copied up a chunk of rows at a time into rooms of
    /// `entries` entries and rows: one for matrices with 32-bit row starts, one for 64-bit
    /// ones, as the matrices need them.
    Streamed {
        host: Arc<R1cs>,
        entries: usize,
        narrow: Option<DeviceMatrix>,
        wide: Option<DeviceMatrix>,
        /// Per matrix, its chunks' first rows, then its rows' count.
        cuts: [Vec<usize>; 3],
    },
}

/// The recording on the device.
#[derive(Debug)]
pub(crate) struct DeviceR1cs {
    matrices: Matrices,
    table: DeviceVec<Scalar>,
    /// The A scalars' variables (every input, then the aux A uses) and the B scalars', as
    /// indices into z.
    a_vars: DeviceIndices,
    b_vars: DeviceIndices,
    /// The partition's public inputs (z's head; the aux are expanded into the L MSM's
    /// scalars).
    input: DeviceVec<Scalar>,
    /// The partition's aux, packed.
    packed: DevicePacked,
    inputs: usize,
    aux: usize,
    /// Device bytes it holds.
    bytes: usize,
}

/// Device bytes of what a recording of `sizes` keeps on the device whether its matrices are
/// resident or streamed: the table, the gathers' indices (the A scalars' with every input's
/// too), the input, the packed aux' bitmaps and ranks, and its values' own room.
fn fixed_bytes(sizes: &RecordingSizes) -> usize {
    let (RecordingShape { inputs, aux, .. }, scalar) = (sizes.shape, std::mem::size_of::<Scalar>());
    let packed: usize = packed::bitmap_bytes(aux).iter().sum();
    let values = scalar * DevicePacked::own_values(aux, sizes.shape.domain());
    sizes.bytes() - sizes.matrices_bytes() + 4 * inputs + scalar * inputs + packed + values
}

/// Device bytes a recording of `sizes` takes with its matrices resident.
pub(crate) fn device_bytes(sizes: &RecordingSizes) -> usize {
    fixed_bytes(sizes) + sizes.matrices_bytes()
}

/// Device bytes a recording of `sizes` takes with its matrices streamed in chunks of
/// `entries`.
pub(crate) fn streamed_bytes(sizes: &RecordingSizes, entries: usize) -> usize {
    let [narrow, wide] = widths(sizes).map(usize::from);
    fixed_bytes(sizes) + (narrow + wide) * 8 * entries + (narrow * 4 + wide * 8) * (entries + 1)
}

/// Whether some matrix has 32-bit row starts, and whether some has 64-bit ones.
fn widths(sizes: &RecordingSizes) -> [bool; 2] {
    [sizes.wide.iter().any(|w| !w), sizes.wide.iter().any(|&w| w)]
}

/// What reading a recording's file leaves for the device: its table and densities kept,
/// its matrices copied up piece by piece.
struct DeviceSink<'s> {
    stream: &'s Stream,
    staging: &'s Staging,
    table: Vec<Scalar>,
    rooms: Vec<MatrixRoom>,
    densities: (Vec<u32>, Vec<u32>),
}

impl Sink for DeviceSink<'_> {
    fn table(&mut self, _: Counts, table: Vec<Scalar>) -> Result<()> {
        self.table = table;
        Ok(())
    }

    fn matrix(&mut self, _: usize, rows: usize, entries: usize, wide: bool) -> Result<()> {
        self.rooms.push(MatrixRoom::new(rows, entries, wide)?);
        Ok(())
    }

    fn piece(&mut self, piece: Piece<'_>) -> Result<()> {
        self.rooms.last_mut().expect("a matrix before its pieces").fill(piece, self.stream, self.staging)
    }

    fn densities(&mut self, a_aux: Vec<u32>, b_vars: Vec<u32>) -> Result<()> {
        self.densities = (a_aux, b_vars);
        Ok(())
    }
}

impl DeviceR1cs {
    /// Uploads `r1cs`, its matrices resident (the caller has checked that [`device_bytes`]
    /// fit).
    ///
    /// # Errors
    /// [`Error::DeviceOutOfMemory`](crate::Error::DeviceOutOfMemory), [`Error::Cuda`](crate::Error::Cuda).
    pub(crate) fn resident(r1cs: &R1cs, stream: &Stream, staging: &Staging) -> Result<Self> {
        let [a, b, c] = Which::ALL;
        let matrices = Matrices::Resident([
            DeviceMatrix::upload(r1cs, a, stream, staging)?,
            DeviceMatrix::upload(r1cs, b, stream, staging)?,
            DeviceMatrix::upload(r1cs, c, stream, staging)?,
        ]);
        let parts = (&r1cs.table[..], &r1cs.a_aux[..], &r1cs.b_vars[..]);
        Self::with(r1cs.sizes(), parts, matrices, (stream, staging))
    }

    /// Reads the recording in `file` straight into device memory, its matrices resident (the
    /// caller has checked that [`device_bytes`] fit), a checked piece at a time through the
    /// staging chunks: the host holds its table and densities alone.
    ///
    /// # Errors
    /// As [`R1csFile::read`] (a damaged file, its digest), and as [`resident`](Self::resident);
    /// nothing stays on the device.
    pub(crate) fn resident_from_file(file: &R1csFile, stream: &Stream, staging: &Staging) -> Result<Self> {
        let (table, rooms, densities) = (vec![], Vec::with_capacity(3), (vec![], vec![]));
        let mut sink = DeviceSink { stream, staging, table, rooms, densities };
        file.read_into(&mut sink)?;
        let mut rooms = sink.rooms.into_iter().map(MatrixRoom::finish);
        let mut next = || rooms.next().expect("three matrices read");
        let matrices = Matrices::Resident([next(), next(), next()]);
        let parts = (&sink.table[..], &sink.densities.0[..], &sink.densities.1[..]);
        Self::with(file.sizes(), parts, matrices, (stream, staging))
    }

    /// Uploads `r1cs` but its matrices, which it streams in chunks of at most `entries`
    /// entries and rows (the caller has checked that [`streamed_bytes`] fit). `None` when a
    /// row alone has more entries.
    ///
    /// # Errors
    /// As [`resident`](Self::resident).
    pub(crate) fn streamed(
        r1cs: &Arc<R1cs>,
        entries: usize,
        stream: &Stream,
        staging: &Staging,
    ) -> Result<Option<Self>> {
        let (Some(a), Some(b), Some(c)) = (r1cs.a.chunks(entries), r1cs.b.chunks(entries), r1cs.c.chunks(entries))
        else {
            return Ok(None);
        };
        let [narrow, wide] = widths(&r1cs.sizes());
        let matrices = Matrices::Streamed {
            host: Arc::clone(r1cs),
            entries,
            narrow: narrow.then(|| DeviceMatrix::chunk_room(entries, false)).transpose()?,
            wide: wide.then(|| DeviceMatrix::chunk_room(entries, true)).transpose()?,
            cuts: [a, b, c],
        };
        let parts = (&r1cs.table[..], &r1cs.a_aux[..], &r1cs.b_vars[..]);
        let sizes = r1cs.sizes();
        Self::with(sizes, parts, matrices, (stream, staging)).map(Some)
    }

    /// A recording of `sizes` on the device with its `matrices`: its table, A's aux variables
    /// and B's variables (`parts`) uploaded beside them.
    fn with(
        sizes: RecordingSizes,
        (table, a_aux, b_vars): (&[Scalar], &[u32], &[u32]),
        matrices: Matrices,
        (stream, staging): (&Stream, &Staging),
    ) -> Result<Self> {
        let RecordingShape { inputs, aux, .. } = sizes.shape;
        let bytes = match &matrices {
            Matrices::Resident(_) => device_bytes(&sizes),
            Matrices::Streamed { entries, .. } => streamed_bytes(&sizes, *entries),
        };
        let device_table = DeviceVec::new(table.len())?;
        upload(stream, staging, table, false, &device_table)?.wait()?;
        Ok(DeviceR1cs {
            matrices,
            table: device_table,
            a_vars: DeviceIndices::upload(&a_vars(inputs, a_aux), inputs + aux, stream, staging)?,
            b_vars: DeviceIndices::upload(b_vars, inputs + aux, stream, staging)?,
            input: DeviceVec::new(inputs)?,
            packed: DevicePacked::new(aux, sizes.shape.domain())?,
            inputs,
            aux,
            bytes,
        })
    }

    /// Device bytes it holds.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Entries (and rows) a chunk of the streamed matrices; `None` when they are resident.
    pub(crate) fn chunk_entries(&self) -> Option<usize> {
        match &self.matrices {
            Matrices::Resident(_) => None,
            Matrices::Streamed { entries, .. } => Some(*entries),
        }
    }

    /// Enqueues the copies of a partition's `input` and packed `aux` on `stream`, its values
    /// into `abc[2]` (the C product's output, free until [`evaluate`](Self::evaluate) has
    /// expanded them) when they fit.
    pub(crate) fn upload_witness<'a>(
        &mut self,
        (stream, staging): (&'a Stream, &Staging),
        input: &'a [Scalar],
        aux: &'a PackedAux,
        abc: &[DeviceVec<Scalar>; 3],
    ) -> Result<Vec<InFlight<'a>>> {
        let mut in_flight = vec![upload(stream, staging, input, false, &self.input)?];
        in_flight.extend(self.packed.upload((stream, staging), aux, &abc[2])?);
        Ok(in_flight)
    }

    /// Enqueues the aux expanded into `aux`, then abc[k] = (A, B, C)[k]·z over the first `m`
    /// elements (zero past the rows), with z = input ‖ aux, the witness copied up on `stream`
    /// ([`upload_witness`](Self::upload_witness)). Streamed matrices' chunks are copied up on
    /// `stream` too, each after the products of the last; the copies are done when this
    /// returns.
    pub(crate) fn evaluate(
        &mut self,
        kernels: &R1csKernels,
        (stream, staging): (&Stream, &Staging),
        aux: &DeviceVec<Scalar>,
        (abc, m): (&[DeviceVec<Scalar>; 3], usize),
    ) -> Result<()> {
        kernels.packed_expand(stream, (&self.packed, &abc[2]), aux)?; // before C's product
        let z =
            DeviceZ { input: &self.input, inputs: self.inputs, aux, packed: &self.packed, len: self.inputs + self.aux };
        match &mut self.matrices {
            Matrices::Resident(matrices) => {
                for (matrix, out) in matrices.iter().zip(abc) {
                    kernels.spmv(stream, matrix, &self.table, z, (0, m), out)?;
                }
            }
            Matrices::Streamed { host, narrow, wide: wide_room, cuts, .. } => {
                let mut in_flight: Vec<InFlight<'_>> = vec![];
                for ((which, cuts), out) in Which::ALL.into_iter().zip(cuts.iter()).zip(abc) {
                    let matrix = which.of(host);
                    let room = if wide(matrix) { wide_room.as_mut() } else { narrow.as_mut() };
                    let room = room.expect("rooms made for every width the matrices have");
                    for (k, w) in cuts.windows(2).enumerate() {
                        let (first, end) = (w[0], w[1]);
                        // The last chunk pads the rest of the domain with zeros.
                        let n = if k + 2 == cuts.len() { m - first } else { end - first };
                        let chunk = (&**host, which);
                        let copies = kernels.spmv_chunk(
                            (stream, staging),
                            chunk,
                            first..end,
                            room,
                            &self.table,
                            z,
                            (first, n),
                            out,
                        )?;
                        in_flight.extend(copies);
                    }
                }
                in_flight.into_iter().try_for_each(InFlight::wait)?;
            }
        }
        Ok(())
    }

    /// Enqueues the A and B scalars gathered from z = input ‖ aux (`aux` expanded by
    /// [`evaluate`](Self::evaluate); those that are 0 or 1 written from the packed aux'
    /// bitmaps) into `a` and `b`.
    pub(crate) fn gather(
        &self,
        kernels: &R1csKernels,
        stream: &Stream,
        aux: &DeviceVec<Scalar>,
        [a, b]: [&DeviceVec<Scalar>; 2],
    ) -> Result<()> {
        let z =
            DeviceZ { input: &self.input, inputs: self.inputs, aux, packed: &self.packed, len: self.inputs + self.aux };
        kernels.gather(stream, &self.a_vars, z, a)?;
        kernels.gather(stream, &self.b_vars, z, b)
    }

    /// The L, A and B MSMs' scalars as variables of z (the L scalars the aux themselves), for
    /// their split to class the zeros and ones from the bitmaps of the partition last copied
    /// up ([`upload_witness`](Self::upload_witness)).
    pub(crate) fn scalar_vars(&self) -> [PackedVars<'_>; 3] {
        let vars = |v| PackedVars::new(&self.packed, self.inputs, v);
        [vars(None), vars(Some(&self.a_vars)), vars(Some(&self.b_vars))]
    }
}

/// The A scalars' indices into z: every input, then the aux A uses (`a_aux`, indices into
/// the aux).
fn a_vars(inputs: usize, a_aux: &[u32]) -> Vec<u32> {
    let first_aux = inputs as u32; // the recording has at most 2^32 variables
    (0..first_aux).chain(a_aux.iter().map(|&j| first_aux + j)).collect()
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
    use blstrs::Scalar;
    use ff::Field;

    use crate::msm::Census;
    use crate::pool::{PinnedPool, PoolConfig};
    use crate::r1cs::{Matrix, R1cs, Z};
    use crate::synth::{synthesize_witness, Assignment, PackedAux};

    use super::a_vars;

    /// An input, aux that are zeros, ones and other values, and rows over all of them with
    /// coefficients 1, −1 and others.
    struct Mixed;

    impl Circuit<Scalar> for Mixed {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Scalar::from(7)))?;
            let value = |i: u64| if i % 5 == 3 { Scalar::from(i + 2) } else { Scalar::from(i % 2) };
            let aux: Vec<_> = (0..300).map(|i| cs.alloc(|| "v", || Ok(value(i)))).collect::<Result<_, _>>()?;
            let coeff = |i: usize| [Scalar::ONE, -Scalar::ONE, Scalar::from(3), -Scalar::from(5)][i % 4];
            for k in 0..200 {
                let lc = |from: usize, len: usize| {
                    (from..from + len).fold(LinearCombination::zero(), |lc, i| lc + (coeff(i + k), aux[i % aux.len()]))
                };
                cs.enforce(|| "row", |_| lc(k, k % 40) + x, |_| lc(3 * k, 1), |_| lc(3 * k, k % 7));
            }
            Ok(())
        }
    }

    /// `bit_of_z` (`cuda/r1cs/packed.cuh`): whether z[v] is read from the packed aux' bitmaps
    /// (an aux that is 0 or 1), and then whether it is 1.
    fn bit_of_z(v: usize, inputs: usize, packed: &PackedAux) -> Option<bool> {
        let bit = |bits: &[u64], j: usize| bits[j / 64] >> (j % 64) & 1 == 1;
        (v >= inputs && !bit(packed.others(), v - inputs)).then(|| bit(packed.ones(), v - inputs))
    }

    /// ⟨row i, z⟩ as `row_terms` reads z: an aux the bitmaps call 0 or 1 from them alone, its
    /// term its coefficient (the table's first entries are 1 and −1) or nothing; the inputs
    /// and the other aux as they are, times their coefficient (the kernel's additions for 1
    /// and −1 are `R1cs::evaluate`'s, the reference).
    fn row_as_the_device_reads_z(m: &Matrix, i: usize, table: &[Scalar], z: Z<'_>, packed: &PackedAux) -> Scalar {
        let range = m.starts.entries(i..i + 1);
        let mut acc = Scalar::ZERO;
        for (&v, &k) in m.vars[range.clone()].iter().zip(&m.coeffs[range]) {
            match bit_of_z(v as usize, z.input.len(), packed) {
                Some(true) => acc += table[k as usize],
                Some(false) => {}
                None => acc += z.at(v) * table[k as usize],
            }
        }
        acc
    }

    /// z[v] as `gather` writes it: an aux the bitmaps call 0 or 1 as that, else read from z.
    fn scalar_as_the_device_gathers_it(v: u32, z: Z<'_>, packed: &PackedAux) -> Scalar {
        match bit_of_z(v as usize, z.input.len(), packed) {
            Some(one) => Scalar::from(u64::from(one)),
            None => z.at(v),
        }
    }

    /// The class `msm_split` (`cuda/msm/split.cuh`) gives scalar i of scalars `s` that are
    /// variables of z, `vars[i]` (aux i where there are none), as the census of that one
    /// scalar, and whether it reads the scalar: not for an aux the bitmaps call 0 or 1.
    fn class_as_the_device_splits(
        i: usize,
        (vars, s): (Option<&[u32]>, &[Scalar]),
        z: Z<'_>,
        packed: &PackedAux,
    ) -> (Census, bool) {
        let inputs = z.input.len();
        match bit_of_z(vars.map_or(inputs + i, |v| v[i] as usize), inputs, packed) {
            Some(true) => (Census { ones: 1, ..Census::default() }, false),
            Some(false) => (Census { zeros: 1, ..Census::default() }, false),
            None => (Census::of(std::slice::from_ref(&s[i])), true),
        }
    }

    /// `Mixed` recorded, and its packed witness (zeros, ones and others) with the aux expanded
    /// as z, for `check`.
    fn on_mixed(check: impl FnOnce(&R1cs, Z<'_>, &PackedAux)) {
        let r1cs = R1cs::record(Mixed).unwrap();
        let pool = PinnedPool::new(PoolConfig::default());
        let witness = synthesize_witness(Mixed, &r1cs, &pool).unwrap();
        let Assignment::Packed(packed) = &witness.assignment else { panic!("a recording's witness is packed") };
        let census = packed.census();
        assert!(census.zeros > 0 && census.ones > 0 && census.others > 0, "{census:?}");
        let aux = packed.to_vec();
        check(&r1cs, Z { input: &witness.input, aux: &aux }, packed);
    }

    #[test]
    fn the_device_products_reading_bits_from_the_bitmaps_equal_the_cpus() {
        on_mixed(|r1cs, z, packed| {
            let rows = r1cs.a.rows();
            let mut abc = [vec![Scalar::ZERO; rows], vec![Scalar::ZERO; rows], vec![Scalar::ZERO; rows]];
            let [a, b, c] = &mut abc;
            r1cs.evaluate(z, [a, b, c]).unwrap();
            for (m, cpu) in [&r1cs.a, &r1cs.b, &r1cs.c].into_iter().zip(&abc) {
                let device: Vec<Scalar> =
                    (0..rows).map(|i| row_as_the_device_reads_z(m, i, &r1cs.table, z, packed)).collect();
                assert!(device == *cpu);
            }
            assert!(abc[0].iter().any(|x| !bool::from(x.is_zero())), "rows that sum something");
        });
    }

    #[test]
    fn the_device_gathers_writing_bits_from_the_bitmaps_equal_the_cpus() {
        on_mixed(|r1cs, z, packed| {
            let (mut a, mut b) = (vec![], vec![]);
            r1cs.gather(z, &mut a, &mut b).unwrap();
            // The device's indices (`DeviceR1cs`): A's with every input first, B's as they are.
            for (vars, cpu) in [(&a_vars(r1cs.inputs, &r1cs.a_aux), &a), (&r1cs.b_vars, &b)] {
                let device: Vec<Scalar> = vars.iter().map(|&v| scalar_as_the_device_gathers_it(v, z, packed)).collect();
                assert!(device == *cpu);
                let other = cpu.iter().any(|x| *x != Scalar::ZERO && *x != Scalar::ONE);
                assert!(cpu.contains(&Scalar::ZERO) && cpu.contains(&Scalar::ONE) && other, "every kind gathered");
            }
        });
    }

    #[test]
    fn the_split_classing_bits_from_the_bitmaps_gives_the_values_classes() {
        on_mixed(|r1cs, z, packed| {
            let (mut a, mut b) = (vec![], vec![]);
            r1cs.gather(z, &mut a, &mut b).unwrap();
            let a_vars = a_vars(r1cs.inputs, &r1cs.a_aux);
            // The L scalars (the aux), and the A and B scalars as the CPU gathers them (the
            // device's, by the test above).
            for scalars in [(None, z.aux), (Some(&a_vars[..]), &a[..]), (Some(&r1cs.b_vars[..]), &b[..])] {
                let classes: Vec<_> =
                    (0..scalars.1.len()).map(|i| class_as_the_device_splits(i, scalars, z, packed)).collect();
                let by_value = scalars.1.iter().map(|x| Census::of(std::slice::from_ref(x)));
                assert!(classes.iter().map(|&(class, _)| class).eq(by_value));
                let unread = classes.iter().filter(|&&(_, read)| !read).count();
                let others = Census::of(scalars.1).others;
                assert!(
                    unread > 0 && others > 0 && unread + others <= scalars.1.len(),
                    "{unread} unread, {others} others"
                );
            }
        });
    }
}
