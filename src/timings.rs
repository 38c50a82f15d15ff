//! Per-partition timings, the pipeline's measure of where time goes, and their export as a
//! Chrome trace (loadable in Perfetto or chrome://tracing) to see a batch as a timeline.
//!
//! The synthesis workers fill the first fields, the proving thread the waits and its busy
//! time, and the backend its stages: on the CPU backend wall times of its kernels, on the
//! CUDA backend device times from CUDA events.

use std::time::Duration;

/// Declares [`PartitionTimings`] with the stage durations listed once: they are its fields
/// and [`StageSums`]' fields, and [`PartitionTimings::total`] adds them up, so that a new
/// stage is one entry here.
macro_rules! partition_timings {
    (
        $(#[$meta:meta])*
        pub struct PartitionTimings { $( $(#[$doc:meta])* pub $field:ident: $ty:ty, )* }
        stages { $( $(#[$stage_doc:meta])* pub $stage:ident: $stage_ty:ty, )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct PartitionTimings {
            $( $(#[$doc])* pub $field: $ty, )*
            $( $(#[$stage_doc])* pub $stage: $stage_ty, )*
        }

        /// The stage durations of [`PartitionTimings`] (the fields of the same names, which
        /// say what each measures on each backend), each summed over a batch.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct StageSums {
            $( $(#[$stage_doc])* pub $stage: $stage_ty, )*
        }

        impl StageSums {
            /// These sums with `t`'s stages added.
            fn plus(self, t: &PartitionTimings) -> StageSums {
                StageSums { $( $stage: self.$stage + t.$stage, )* }
            }
        }
    };
}

partition_timings! {
    /// Where one partition's time went. Stages a backend does not have stay zero (the CPU
    /// backend has no host-to-device copy).
    pub struct PartitionTimings {
        /// Submission order of the job, from 0 per prover.
        pub job: u64,
        /// Which proving thread (backend) proved it: the index of its factory in
        /// [`Prover::with_backends`](crate::Prover::with_backends), one per device.
        pub device: usize,
        /// Which thread of the prover's synthesis pool synthesized it.
        pub synthesis_worker: usize,
        /// When its synthesis started, measured from the prover's creation.
        pub synthesis_start: Duration,
        /// When its proving thread took it, measured from the prover's creation.
        pub proving_start: Duration,
        /// When the device started and finished this partition's copies and kernels, measured
        /// from a fixed point of its proving thread's device (device events; zero on the CPU
        /// backend). The union of these intervals over a batch is the time the device was busy.
        pub device_start: Duration,
        /// See [`device_start`](Self::device_start).
        pub device_end: Duration,
        /// Whether a/b/c were pinned (false for the CPU backend's heap pool and for fallbacks;
        /// the CUDA backend copies such partitions through its pinned staging buffers).
        pub pinned: bool,
        /// Bytes of the pool buffers its witness held ([`Witness::host_bytes`](crate::backend::Witness::host_bytes)).
        pub witness_bytes: usize,
        /// Bytes of its witness copied to the device (zero on the CPU backend): a/b/c and the
        /// MSMs' scalars, or, witness-only, the input and the packed aux.
        pub h2d_bytes: usize,
        /// How many of its witness's four MSMs (L, A, and B in G1 and in G2) were split by
        /// value, the bases of the ones summed and the zeros dropped, as a bit-heavy witness's
        /// are (each backend decides from the scalars' [`Census`](crate::backend::Census));
        /// the H MSM's scalars never are.
        pub msms_split: u32,
        /// When each of the witness's MSMs (L, A, B in G1, B in G2) started, from the H
        /// MSM's start (device events; zero on the CPU backend): after it, or beside it when
        /// the CUDA backend holds their own scratch (its `DeviceReport::witness_scratch_bytes`).
        pub witness_msm_starts: [Duration; 4],
    }
    stages {
        /// Checkout of a/b/c plus the circuit's synthesis, on a synthesis thread.
        pub synthesis: Duration,
        /// From the end of synthesis to the proving thread taking the partition; includes the
        /// time the worker was blocked by the dispatch throttle (a full channel).
        pub queue_wait: Duration,
        /// How long the proving thread sat idle waiting for this partition: time the device
        /// had no work.
        pub input_wait: Duration,
        /// Waiting for the device's lock: nonzero only when several proving threads share one
        /// device (zero on the CPU backend, which has no lock).
        pub device_lock_wait: Duration,
        /// Holding the device's lock, host wall time: enqueueing this partition's copies and
        /// kernels and waiting for them (zero on the CPU backend).
        pub device_lock_held: Duration,
        /// Host-to-device copies (device events, CUDA backend; zero on the CPU backend): a/b/c
        /// and the MSMs' scalars from the first's start to the last's end, the scalars' copies
        /// overlapping the h stage; for a witness-only partition, the input and the aux.
        pub h2d: Duration,
        /// Expanding the packed aux, evaluating the recorded constraints (a = A·z, b = B·z,
        /// c = C·z) and gathering the A and B scalars: device time on the CUDA backend, wall
        /// time on the CPU backend; zero when synthesis evaluated them.
        pub constraints: Duration,
        /// The h stage: NTTs and the pointwise (a·b − c)/Z; the CPU backend's wall time, or
        /// the device's, the sum of `ntt_steps`.
        pub ntt: Duration,
        /// The h stage step by step (device events; zero on the CPU backend).
        pub ntt_steps: NttSteps,
        /// The five multi-scalar multiplications: the CPU backend's wall time (they run at
        /// once), or the device's, the sum of `msm_steps`.
        pub msm: Duration,
        /// Each MSM on a device (device events; zero on the CPU backend, which runs them at
        /// once).
        pub msm_steps: MsmSteps,
        /// Wall time the proving thread spent on this partition, all stages and checkin
        /// included, on every backend (the CPU backend's kernels, or a device's copies and
        /// kernels and the waits for them).
        pub proving: Duration,
        /// Assembling the proof from the MSM sums and r, s, on the compute pool after the
        /// proving thread let go of the partition.
        pub assemble: Duration,
        /// Verifying the proof, on the compute pool after its assembly (zero when
        /// [`Config::verify_proofs`](crate::Config::verify_proofs) is off).
        pub verify: Duration,
    }
}

/// The steps of the h stage on a device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NttSteps {
    /// iNTT of a and b: their coefficients shifted to the coset gH.
    pub intt: Duration,
    /// NTT of a and b on the coset, and their product.
    pub coset_ntt: Duration,
    /// c's iNTT (its coefficients over Z), then the product's back to coefficients, the
    /// shift back, over Z, less c's: h.
    pub coset_intt: Duration,
}

impl NttSteps {
    /// The sum of the steps.
    pub fn total(&self) -> Duration {
        self.intt + self.coset_ntt + self.coset_intt
    }
}

/// The five MSMs of a partition on a device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MsmSteps {
    /// Σ hᵢ·Hᵢ (G1).
    pub h: Duration,
    /// Σ auxᵢ·Lᵢ (G1).
    pub l: Duration,
    /// The A query (G1).
    pub a: Duration,
    /// The B query in G1.
    pub b_g1: Duration,
    /// The B query in G2 (with a resident key, its buckets are the G1 one's).
    pub b_g2: Duration,
}

impl MsmSteps {
    /// The sum of the steps.
    pub fn total(&self) -> Duration {
        self.h + self.l + self.a + self.b_g1 + self.b_g2
    }
}

impl std::ops::Add for MsmSteps {
    type Output = MsmSteps;
    fn add(self, o: MsmSteps) -> MsmSteps {
        MsmSteps {
            h: self.h + o.h,
            l: self.l + o.l,
            a: self.a + o.a,
            b_g1: self.b_g1 + o.b_g1,
            b_g2: self.b_g2 + o.b_g2,
        }
    }
}

impl std::ops::Add for NttSteps {
    type Output = NttSteps;
    fn add(self, o: NttSteps) -> NttSteps {
        NttSteps {
            intt: self.intt + o.intt,
            coset_ntt: self.coset_ntt + o.coset_ntt,
            coset_intt: self.coset_intt + o.coset_intt,
        }
    }
}

impl PartitionTimings {
    /// The device's busy time over `timings` of one device: the length of the union of their
    /// device intervals (zero on the CPU backend).
    pub fn device_busy<'a>(timings: impl IntoIterator<Item = &'a PartitionTimings>) -> Duration {
        let mut spans: Vec<(Duration, Duration)> =
            timings.into_iter().map(|t| (t.device_start, t.device_end)).collect();
        spans.sort();
        let mut busy = Duration::ZERO;
        let mut covered = Duration::ZERO; // end of the union so far
        for (start, end) in spans {
            let start = start.max(covered);
            if end > start {
                busy += end - start;
                covered = end;
            }
        }
        busy
    }

    /// The batch of `timings` added up: each duration summed, and the batch's span.
    pub fn total<'a>(timings: impl IntoIterator<Item = &'a PartitionTimings>) -> BatchTimings {
        let timings: Vec<&PartitionTimings> = timings.into_iter().collect();
        let earliest = |start: fn(&PartitionTimings) -> Duration| timings.iter().map(|t| start(t)).min();
        let sums = timings.iter().fold(StageSums::default(), |sums, t| sums.plus(t));
        BatchTimings {
            partitions: timings.len(),
            sums,
            synthesis_start: earliest(|t| t.synthesis_start).unwrap_or_default(),
            proving_start: earliest(|t| t.proving_start).unwrap_or_default(),
            device_start: earliest(|t| t.device_start).unwrap_or_default(),
            device_end: timings.iter().map(|t| t.device_end).max().unwrap_or_default(),
        }
    }
}

/// A batch's timings added up ([`PartitionTimings::total`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchTimings {
    /// Partitions in the batch.
    pub partitions: usize,
    /// Each duration of [`PartitionTimings`] summed over the batch.
    pub sums: StageSums,
    /// The earliest synthesis start, measured from the prover's creation.
    pub synthesis_start: Duration,
    /// The earliest proving start, measured from the prover's creation.
    pub proving_start: Duration,
    /// The earliest device start and the latest device end (device events, measured from a
    /// fixed point of the device; zero on the CPU backend).
    pub device_start: Duration,
    /// See [`device_start`](Self::device_start).
    pub device_end: Duration,
}

/// A row of a batch's timeline: a thread of the prover, or a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Track {
    /// A thread of the synthesis pool.
    Synthesis(usize),
    /// The channel: partitions synthesized and waiting for a proving thread (overlapping
    /// spans: as many as wait at once).
    Queue,
    /// The proving thread of a device.
    Proving(usize),
    /// A device's copies and kernels (CUDA backend).
    Device(usize),
    /// The compute pool's assembly and verification of the proofs.
    Compute,
}

impl Track {
    /// The track's name, e.g. `synthesis 3` or `device 0`.
    pub fn name(&self) -> String {
        match self {
            Track::Synthesis(w) => format!("synthesis {w}"),
            Track::Queue => "queue".to_owned(),
            Track::Proving(d) => format!("proving thread {d}"),
            Track::Device(d) => format!("device {d}"),
            Track::Compute => "assembly, verification".to_owned(),
        }
    }
}

/// What a span of the timeline is, for pictures to colour by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpanKind {
    /// A circuit's synthesis.
    Synthesis,
    /// A partition waiting in the channel (its worker blocked in `send` when it is full).
    QueueWait,
    /// A proving thread's work on a partition.
    Proving,
    /// Host-to-device copies.
    Copy,
    /// The recorded constraints' products and gathers.
    Constraints,
    /// A step of the h stage.
    Ntt,
    /// An MSM in G1.
    MsmG1,
    /// The MSM in G2.
    MsmG2,
    /// A proof's assembly or verification.
    Compute,
}

/// One interval of a batch's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Its row.
    pub track: Track,
    /// What it is.
    pub kind: SpanKind,
    /// Its name, e.g. `MSM b G2`.
    pub name: &'static str,
    /// The job it belongs to.
    pub job: u64,
    /// When it starts, measured from the prover's creation.
    pub start: Duration,
    /// How long it lasts (never zero: empty stages are left out).
    pub length: Duration,
}

impl PartitionTimings {
    /// The batch as spans on named tracks, the one timeline the Chrome trace and the
    /// examples' picture both draw: each synthesis on its worker, each partition's wait in
    /// the channel on the queue's track, each partition on its proving thread, its device
    /// stages on the device (drawn from the moment its proving thread took it, one after the
    /// other, with their device-measured lengths, but the witness's MSMs from their start
    /// after or beside the H MSM's), and the proofs' assembly and verification on the
    /// compute pool.
    pub fn spans(timings: &[PartitionTimings]) -> Vec<Span> {
        let mut spans = Vec::new();
        for t in timings {
            let mut push = |track, kind, name, start, length: Duration| {
                if !length.is_zero() {
                    spans.push(Span { track, kind, name, job: t.job, start, length });
                }
            };
            push(
                Track::Synthesis(t.synthesis_worker),
                SpanKind::Synthesis,
                "synthesize",
                t.synthesis_start,
                t.synthesis,
            );
            let queued = t.synthesis_start + t.synthesis;
            push(Track::Queue, SpanKind::QueueWait, "queue wait", queued, t.queue_wait);
            push(Track::Proving(t.device), SpanKind::Proving, "prove", t.proving_start, t.proving);
            let on_pool = t.proving_start + t.proving;
            push(Track::Compute, SpanKind::Compute, "assemble", on_pool, t.assemble);
            push(Track::Compute, SpanKind::Compute, "verify", on_pool + t.assemble, t.verify);
            let (n, m) = (&t.ntt_steps, &t.msm_steps);
            let stages = [
                (SpanKind::Copy, "h2d", t.h2d),
                (SpanKind::Constraints, "constraints", t.constraints),
                (SpanKind::Ntt, "iNTT+shift", n.intt),
                (SpanKind::Ntt, "coset NTT", n.coset_ntt),
                (SpanKind::Ntt, "coset iNTT", n.coset_intt),
                (SpanKind::MsmG1, "MSM h", m.h),
            ];
            let witness_msms = [
                (SpanKind::MsmG1, "MSM l", m.l),
                (SpanKind::MsmG1, "MSM a", m.a),
                (SpanKind::MsmG1, "MSM b G1", m.b_g1),
                (SpanKind::MsmG2, "MSM b G2", m.b_g2),
            ];
            if t.device_end.is_zero() {
                continue;
            }
            let mut at = t.proving_start + t.device_lock_wait;
            for (kind, name, length) in stages {
                push(Track::Device(t.device), kind, name, at, length);
                at += length;
            }
            let h_start = at - m.h;
            for ((kind, name, length), start) in witness_msms.into_iter().zip(t.witness_msm_starts) {
                push(Track::Device(t.device), kind, name, h_start + start, length);
            }
        }
        spans
    }

    /// The timings as a Chrome trace (the JSON array format that Perfetto and
    /// chrome://tracing load) of their [spans](Self::spans): one thread a track.
    pub fn chrome_trace(timings: &[PartitionTimings]) -> String {
        let spans = Self::spans(timings);
        let tracks: std::collections::BTreeSet<Track> = spans.iter().map(|s| s.track).collect();
        let tid = |track: &Track| tracks.iter().position(|t| t == track).unwrap_or(0) + 1;
        let mut events: Vec<String> = spans
            .iter()
            .map(|s| {
                format!(
                    r#"{{"name":"{} {}","ph":"X","pid":1,"tid":{},"ts":{:.3},"dur":{:.3}}}"#,
                    s.name,
                    s.job,
                    tid(&s.track),
                    s.start.as_secs_f64() * 1e6,
                    s.length.as_secs_f64() * 1e6
                )
            })
            .collect();
        for track in &tracks {
            events.push(format!(
                r#"{{"name":"thread_name","ph":"M","pid":1,"tid":{},"args":{{"name":"{}"}}}}"#,
                tid(track),
                track.name()
            ));
        }
        format!("[\n{}\n]\n", events.join(",\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_and_the_picture_draw_one_timeline_of_named_tracks() {
        let ms = Duration::from_millis;
        let on_device = PartitionTimings {
            job: 7,
            device: 1,
            synthesis_worker: 2,
            synthesis: ms(5),
            queue_wait: ms(5),
            proving_start: ms(10),
            proving: ms(4),
            device_lock_wait: ms(1),
            h2d: ms(1),
            msm_steps: MsmSteps { h: ms(3), l: ms(1), b_g2: ms(2), ..MsmSteps::default() },
            witness_msm_starts: [ms(1), ms(2), ms(2), ms(2)], // beside the H MSM
            device_end: ms(15),
            verify: ms(1),
            ..PartitionTimings::default()
        };
        let on_cpu = PartitionTimings { device_end: Duration::ZERO, constraints: ms(3), ..on_device };
        let spans = PartitionTimings::spans(&[on_device]);
        let names: Vec<_> = spans.iter().map(|s| (s.track, s.name, s.start, s.length)).collect();
        assert_eq!(
            names,
            [
                (Track::Synthesis(2), "synthesize", ms(0), ms(5)),
                (Track::Queue, "queue wait", ms(5), ms(5)),
                (Track::Proving(1), "prove", ms(10), ms(4)),
                (Track::Compute, "verify", ms(14), ms(1)),
                (Track::Device(1), "h2d", ms(11), ms(1)),
                (Track::Device(1), "MSM h", ms(12), ms(3)),
                (Track::Device(1), "MSM l", ms(13), ms(1)),
                (Track::Device(1), "MSM b G2", ms(14), ms(2)),
            ]
        );
        // Without device events (the CPU backend) nothing is drawn on a device track.
        assert!(PartitionTimings::spans(&[on_cpu]).iter().all(|s| !matches!(s.track, Track::Device(_))));
        let trace = PartitionTimings::chrome_trace(&[on_device]);
        assert!(
            trace.contains(r#""name":"MSM b G2 7","ph":"X","pid":1,"tid":4,"ts":14000.000,"dur":2000.000"#),
            "{trace}"
        );
        assert!(trace.contains(r#""tid":4,"args":{"name":"device 1"}"#), "{trace}");
    }

    #[test]
    fn total_sums_durations_and_spans_instants() {
        let ms = Duration::from_millis;
        let t = |job, start, end| PartitionTimings {
            job,
            device: job as usize,
            synthesis: ms(10),
            msm_steps: MsmSteps { h: ms(job), ..MsmSteps::default() },
            synthesis_start: ms(start),
            proving_start: ms(start + 10),
            device_start: ms(start + 11),
            device_end: ms(end),
            ..PartitionTimings::default()
        };
        let batch = [t(1, 30, 90), t(2, 20, 60), t(3, 40, 80)];
        let total = PartitionTimings::total(&batch);
        assert_eq!((total.partitions, total.sums.synthesis, total.sums.msm_steps.h), (3, ms(30), ms(6)));
        assert_eq!((total.synthesis_start, total.proving_start), (ms(20), ms(30)));
        assert_eq!((total.device_start, total.device_end), (ms(31), ms(90)));
        assert_eq!(PartitionTimings::total(&[]), BatchTimings::default());
    }
}
