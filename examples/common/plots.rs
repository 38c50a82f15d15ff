//! Pictures of a batch, drawn as SVG with plotters: the pipeline's timeline (one row per
//! synthesis worker, proving thread and device), and throughput and busy time against the
//! dispatch throttle's depth.

use std::collections::BTreeSet;
use std::error::Error;

use pinprove::{PartitionTimings, SpanKind, Track};
use plotters::prelude::*;

/// One bar of the timeline: a row, an interval and what it is.
struct Bar {
    row: usize,
    start: f64,
    end: f64,
    kind: SpanKind,
}

/// Each kind of span, in the legend's order: its colour and its label. Queue waits are drawn
/// translucent, so that overlapping ones (partitions waiting at once) show darker.
const KINDS: [(SpanKind, RGBColor, &str); 9] = [
    (SpanKind::Synthesis, RGBColor(66, 133, 244), "synthesis"),
    (SpanKind::QueueWait, RGBColor(255, 152, 0), "queue wait"),
    (SpanKind::Proving, RGBColor(251, 188, 5), "proving thread"),
    (SpanKind::Copy, RGBColor(128, 128, 128), "copies"),
    (SpanKind::Constraints, RGBColor(0, 172, 193), "constraints"),
    (SpanKind::Ntt, RGBColor(52, 168, 83), "h stage (NTT)"),
    (SpanKind::MsmG1, RGBColor(234, 67, 53), "MSM G1"),
    (SpanKind::MsmG2, RGBColor(156, 39, 176), "MSM G2"),
    (SpanKind::Compute, RGBColor(0, 150, 136), "assembly, verification"),
];

/// The colour of a span's kind.
fn colour(kind: SpanKind) -> RGBColor {
    KINDS.iter().find(|(k, ..)| *k == kind).map_or(BLACK, |(_, colour, _)| *colour)
}

/// Draws the spans of `timings` ([`PartitionTimings::spans`], the Chrome trace's too) as a
/// timeline into `path`, a row per track, coloured by kind with a legend; a one-pixel gap
/// ends every bar, so that back-to-back partitions stay apart, and a bar shorter than a
/// pixel is drawn a pixel wide.
pub fn timeline(path: &str, title: &str, timings: &[PartitionTimings]) -> Result<(), Box<dyn Error>> {
    let spans = PartitionTimings::spans(timings);
    let tracks: BTreeSet<Track> = spans.iter().map(|s| s.track).collect();
    let rows: Vec<String> = tracks.iter().map(Track::name).collect();
    let bars: Vec<Bar> = spans
        .iter()
        .map(|s| Bar {
            row: tracks.iter().position(|t| *t == s.track).unwrap_or(0),
            start: s.start.as_secs_f64(),
            end: (s.start + s.length).as_secs_f64(),
            kind: s.kind,
        })
        .collect();
    let end = bars.iter().map(|b| b.end).fold(0.0, f64::max).max(1e-3);
    let width = 1400u32;
    let root = SVGBackend::new(path, (width, 160 + 28 * rows.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(130)
        .build_cartesian_2d(0.0..end * 1.2, 0.0..rows.len() as f64)?; // the legend's room on the right
    chart
        .configure_mesh()
        .x_desc("seconds since the prover was made")
        .y_labels(2 * rows.len() + 1)
        .y_label_formatter(&|y| {
            let row = (y - 0.5).round();
            match (y - 0.5 - row).abs() < 1e-6 && row >= 0.0 {
                true => rows.get(rows.len() - 1 - row as usize).cloned().unwrap_or_default(),
                false => String::new(),
            }
        })
        .disable_y_mesh()
        .draw()?;
    let pixel = 1.2 * end / f64::from(width);
    for (kind, colour, label) in KINDS {
        let style = if kind == SpanKind::QueueWait { colour.mix(0.35).filled() } else { colour.filled() };
        let top = rows.len() as f64;
        let series = bars.iter().filter(|b| b.kind == kind && b.end > b.start).map(move |b| {
            let (low, high) = (top - b.row as f64 - 0.9, top - b.row as f64 - 0.1);
            // A pixel's gap after a bar of three or more; at least a pixel for a shorter one.
            let right = if b.end - b.start >= 3.0 * pixel { b.end - pixel } else { b.start + pixel };
            Rectangle::new([(b.start, low), (right, high)], style)
        });
        chart
            .draw_series(series)?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
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
    chart.configure_mesh().x_desc("queue_depth_per_device").y_desc("proofs / s").draw()?;
    chart.configure_secondary_axes().y_desc("proving thread busy %").draw()?;
    for (slow, colour) in [(false, colour(SpanKind::MsmG1)), (true, colour(SpanKind::Synthesis))] {
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
