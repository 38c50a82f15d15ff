//! Pictures of a batch, drawn as SVG with plotters: the pipeline's timeline (one row per
//! synthesis worker, proving thread and device), and throughput and busy time against the
//! dispatch throttle's depth.

use std::error::Error;
use std::time::Duration;

use pinprove::PartitionTimings;
use plotters::prelude::*;

/// One bar of the timeline: a row, an interval and a colour.
struct Bar {
    row: usize,
    start: f64,
    end: f64,
    colour: RGBColor,
}

const SYNTHESIS: RGBColor = RGBColor(66, 133, 244);
const PROVING: RGBColor = RGBColor(251, 188, 5);
const COPY: RGBColor = RGBColor(128, 128, 128);
const NTT: RGBColor = RGBColor(52, 168, 83);
const MSM_G1: RGBColor = RGBColor(234, 67, 53);
const MSM_G2: RGBColor = RGBColor(156, 39, 176);
const VERIFY: RGBColor = RGBColor(0, 150, 136);

/// Draws `timings` as a timeline into `path`: synthesis (blue) per worker; proving threads
/// (yellow); each device's copies (grey), NTT steps (green), G1 MSMs (red) and G2 MSM
/// (purple), placed from the moment their proving thread took the partition; the proofs'
/// assembly and verification (teal) on the compute pool.
pub fn timeline(path: &str, title: &str, timings: &[PartitionTimings]) -> Result<(), Box<dyn Error>> {
    let workers = timings.iter().map(|t| t.synthesis_worker + 1).max().unwrap_or(1);
    let devices = timings.iter().map(|t| t.device + 1).max().unwrap_or(1);
    let on_device = timings.iter().any(|t| !t.h2d.is_zero());
    let mut rows: Vec<String> = (0..workers).map(|w| format!("synthesis {w}")).collect();
    rows.extend((0..devices).map(|d| format!("proving thread {d}")));
    if on_device {
        rows.extend((0..devices).map(|d| format!("device {d}")));
    }
    rows.push("assembly, verification".into());
    let s = |d: Duration| d.as_secs_f64();
    let mut bars = Vec::new();
    for t in timings {
        let bar = |row, start: Duration, length: Duration, colour| Bar {
            row,
            start: s(start),
            end: s(start + length),
            colour,
        };
        bars.push(bar(t.synthesis_worker, t.synthesis_start, t.synthesis, SYNTHESIS));
        bars.push(bar(workers + t.device, t.proving_start, t.gpu_busy, PROVING));
        bars.push(bar(rows.len() - 1, t.proving_start + t.gpu_busy, t.assemble + t.verify, VERIFY));
        if on_device {
            let row = workers + devices + t.device;
            let n = &t.ntt_steps;
            let m = &t.msm_steps;
            let stages = [
                (t.h2d, COPY),
                (n.intt + n.coset_ntt + n.quotient + n.coset_intt, NTT),
                (m.h + m.l + m.a + m.b_g1, MSM_G1),
                (m.b_g2, MSM_G2),
            ];
            let mut at = t.proving_start + t.gpu_lock_wait;
            for (length, colour) in stages {
                bars.push(bar(row, at, length, colour));
                at += length;
            }
        }
    }
    let end = bars.iter().map(|b| b.end).fold(0.0, f64::max).max(1e-3);
    let root = SVGBackend::new(path, (1400, 120 + 28 * rows.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(130)
        .build_cartesian_2d(0.0..end, (0..rows.len()).into_segmented())?;
    chart
        .configure_mesh()
        .x_desc("seconds since the prover was made")
        .y_labels(rows.len())
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(row) => rows.get(*row).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .disable_y_mesh()
        .draw()?;
    chart.draw_series(bars.iter().filter(|b| b.end > b.start).map(|b| {
        let (low, high) = (SegmentValue::Exact(b.row), SegmentValue::Exact(b.row + 1));
        Rectangle::new([(b.start, low), (b.end, high)], b.colour.filled())
    }))?;
    root.present()?;
    Ok(())
}

/// One run of the pacing study: the queue depth and what it gave.
#[derive(Debug, Clone, Copy)]
pub struct PacingRow {
    /// The channel's capacity.
    pub depth: usize,
    /// Whether synthesis was slowed to half the proving rate.
    pub slow: bool,
    /// Proofs per second over the batch.
    pub proofs_per_s: f64,
    /// The proving thread's busy share of the batch's wall time, in percent.
    pub busy: f64,
}

/// Draws throughput (left axis) and proving busy % (right axis) against queue depth, one line
/// each for fast and slow synthesis.
pub fn pacing(path: &str, title: &str, rows: &[PacingRow]) -> Result<(), Box<dyn Error>> {
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let depths = rows.iter().map(|r| r.depth).max().unwrap_or(1) as f64;
    let rate = rows.iter().map(|r| r.proofs_per_s).fold(0.0, f64::max) * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .right_y_label_area_size(60)
        .build_cartesian_2d(0.5..depths + 0.5, 0.0..rate.max(1e-3))?
        .set_secondary_coord(0.5..depths + 0.5, 0.0..105.0);
    chart.configure_mesh().x_desc("max_gpu_queue_depth").y_desc("proofs / s").draw()?;
    chart.configure_secondary_axes().y_desc("proving thread busy %").draw()?;
    for (slow, colour) in [(false, MSM_G1), (true, SYNTHESIS)] {
        let points: Vec<(f64, f64, f64)> =
            rows.iter().filter(|r| r.slow == slow).map(|r| (r.depth as f64, r.proofs_per_s, r.busy)).collect();
        let name = if slow { "slow synthesis" } else { "fast synthesis" };
        chart
            .draw_series(LineSeries::new(points.iter().map(|p| (p.0, p.1)), colour.stroke_width(2)))?
            .label(format!("{name}: proofs/s"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
        chart
            .draw_secondary_series(DashedLineSeries::new(
                points.iter().map(|p| (p.0, p.2)),
                6,
                4,
                colour.stroke_width(2),
            ))?
            .label(format!("{name}: busy %"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(1)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}
