//! Drawing a monitor recording as an SVG: per direction, throughput (the
//! 1 ms values as a band, their average as a line, the link rate dashed) and
//! the queue (length, limit dashed, drop-tail drops and random losses as
//! ticks).

use crate::monitor::{self, Recording, Row};
use std::fmt::Write as _;
use std::path::Path;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const THROUGHPUT_H: f64 = 170.0;
const QUEUE_H: f64 = 110.0;
const GAP: f64 = 75.0;
const TOP: f64 = 50.0;

/// A round step for about `n` ticks up to `max`.
fn tick_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm <= 1.0 { 1.0 } else if norm <= 2.0 { 2.0 } else if norm <= 5.0 { 5.0 } else { 10.0 };
    nice * mag
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// One pixel column's worth of milliseconds.
#[derive(Default, Clone, Copy)]
struct Column {
    min_mbit: f64,
    max_mbit: f64,
    mean_mbit: f64,
    qmax: u32,
    drops: u32,
    losses: u32,
}

fn columns(rows: &[Row], total_ms: u64, n_cols: usize) -> Vec<Column> {
    let per = (total_ms as f64 / n_cols as f64).max(1.0);
    let mut cols = vec![Column { min_mbit: f64::MAX, ..Default::default() }; n_cols];
    let mut counts = vec![0u64; n_cols];
    let mut dense = vec![Row::default(); total_ms as usize];
    for r in rows {
        if let Some(slot) = dense.get_mut(r.t_ms as usize) {
            *slot = *r;
        }
    }
    for (t, r) in dense.iter().enumerate() {
        let c = ((t as f64 / per) as usize).min(n_cols - 1);
        let mbit = r.bytes_out as f64 * 8.0 / 1000.0;
        let col = &mut cols[c];
        col.min_mbit = col.min_mbit.min(mbit);
        col.max_mbit = col.max_mbit.max(mbit);
        col.mean_mbit += mbit;
        col.qmax = col.qmax.max(r.qlen_pkts).max(r.qmax_pkts);
        col.drops += r.drops;
        col.losses += r.losses;
        counts[c] += 1;
    }
    for (col, n) in cols.iter_mut().zip(counts) {
        if n > 0 {
            col.mean_mbit /= n as f64;
        } else {
            col.min_mbit = 0.0;
        }
    }
    cols
}

/// Moving average over `window` ms (for short recordings, where a column is
/// a single millisecond).
fn moving_average(values: &[f64], window: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(values.len());
    let mut sum = 0.0;
    for i in 0..values.len() {
        sum += values[i];
        if i >= window {
            sum -= values[i - window];
        }
        out.push(sum / (i + 1).min(window) as f64);
    }
    out
}

pub fn render(rec: &Recording, title: &str) -> String {
    let total_ms = rec.rows.values().flat_map(|r| r.last()).map(|r| r.t_ms + 1).max().unwrap_or(1).max(1);
    let plot_w = WIDTH - LEFT - RIGHT;
    let n_cols = (total_ms as usize).min(plot_w as usize).max(1);
    let panel_h = THROUGHPUT_H + 30.0 + QUEUE_H + GAP;
    let height = TOP + panel_h * rec.dirs.len().max(1) as f64;
    let x_of = |col: f64| LEFT + col / n_cols as f64 * plot_w;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{LEFT}" y="24" font-size="16" font-weight="bold">{}</text>
<text x="{LEFT}" y="40" fill="#555">1 ms bins, {:.3} s recorded; band: min..max of 1 ms throughput per pixel, line: average</text>
"##,
        esc(title),
        total_ms as f64 / 1000.0
    );
    for (k, dir) in rec.dirs.iter().enumerate() {
        let rows = rec.rows.get(dir).map(Vec::as_slice).unwrap_or(&[]);
        let params = rec.params.get(dir).cloned().unwrap_or_default();
        let rate_mbit = monitor::param(&params, "rate_bps").and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 1e6;
        let delay_ms = monitor::param(&params, "delay_ns").and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 1e6;
        let queue = monitor::param(&params, "queue").unwrap_or_default();
        let limit_pkts = queue.strip_suffix('p').and_then(|v| v.parse::<f64>().ok());
        let cols = columns(rows, total_ms, n_cols);
        let total_bytes: u64 = rows.iter().map(|r| r.bytes_out).sum();
        let drops: u64 = rows.iter().map(|r| r.drops as u64).sum();
        let losses: u64 = rows.iter().map(|r| r.losses as u64).sum();
        let late_max = rows.iter().map(|r| r.late_max_us).max().unwrap_or(0);
        let avg_mbit = total_bytes as f64 * 8.0 / (total_ms as f64 / 1000.0) / 1e6;
        let y0 = TOP + k as f64 * panel_h + 20.0;
        // ---- throughput panel ----
        let peak = cols.iter().map(|c| c.max_mbit).fold(0.0, f64::max);
        let ymax = (rate_mbit * 1.15).max(peak * 1.05).max(1.0);
        let ty = |v: f64| y0 + THROUGHPUT_H - v / ymax * THROUGHPUT_H;
        let _ = writeln!(
            svg,
            r##"<text x="{LEFT}" y="{:.1}" font-weight="bold">{} — rate {} Mbit/s, delay {} ms, queue {} — delivered {:.2} Mbit/s on average, {} drop-tail drops, {} random losses, release error max {} us</text>"##,
            y0 - 6.0,
            esc(dir),
            rate_mbit,
            delay_ms,
            esc(&queue),
            avg_mbit,
            drops,
            losses,
            late_max
        );
        axes(&mut svg, y0, THROUGHPUT_H, ymax, "Mbit/s", total_ms, plot_w);
        let mut band = String::new();
        for (i, c) in cols.iter().enumerate() {
            let _ = write!(band, "{:.1},{:.1} ", x_of(i as f64 + 0.5), ty(c.max_mbit));
        }
        for (i, c) in cols.iter().enumerate().rev() {
            let _ = write!(band, "{:.1},{:.1} ", x_of(i as f64 + 0.5), ty(c.min_mbit));
        }
        let _ = writeln!(svg, r##"<polygon points="{band}" fill="#9ecae1" stroke="none"/>"##);
        let means: Vec<f64> = cols.iter().map(|c| c.mean_mbit).collect();
        let per_col_ms = total_ms as f64 / n_cols as f64;
        let smooth = if per_col_ms < 10.0 { moving_average(&means, (10.0 / per_col_ms).round() as usize) } else { means };
        let line: String =
            smooth.iter().enumerate().map(|(i, v)| format!("{:.1},{:.1} ", x_of(i as f64 + 0.5), ty(*v))).collect();
        let _ = writeln!(svg, r##"<polyline points="{line}" fill="none" stroke="#08519c" stroke-width="1.5"/>"##);
        if rate_mbit > 0.0 {
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#d62728" stroke-dasharray="6,4"/>"##,
                LEFT + plot_w,
                y = ty(rate_mbit)
            );
        }
        // ---- queue panel ----
        let qy0 = y0 + THROUGHPUT_H + 30.0;
        let qpeak = cols.iter().map(|c| c.qmax).max().unwrap_or(0) as f64;
        let qmax = (limit_pkts.unwrap_or(0.0) * 1.1).max(qpeak * 1.1).max(1.0);
        let qy = |v: f64| qy0 + QUEUE_H - v / qmax * QUEUE_H;
        axes(&mut svg, qy0, QUEUE_H, qmax, "queue (pkts)", total_ms, plot_w);
        let qline: String =
            cols.iter().enumerate().map(|(i, c)| format!("{:.1},{:.1} ", x_of(i as f64 + 0.5), qy(c.qmax as f64))).collect();
        let _ = writeln!(svg, r##"<polyline points="{qline}" fill="none" stroke="#2ca02c" stroke-width="1"/>"##);
        if let Some(limit) = limit_pkts {
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#d62728" stroke-dasharray="6,4"/>"##,
                LEFT + plot_w,
                y = qy(limit)
            );
        }
        for (i, c) in cols.iter().enumerate() {
            let x = x_of(i as f64 + 0.5);
            if c.drops > 0 {
                let _ = writeln!(
                    svg,
                    r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#d62728"/>"##,
                    qy0 + QUEUE_H,
                    qy0 + QUEUE_H - 10.0
                );
            }
            if c.losses > 0 {
                let _ = writeln!(
                    svg,
                    r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#ff7f0e"/>"##,
                    qy0 + QUEUE_H - 10.0,
                    qy0 + QUEUE_H - 18.0
                );
            }
        }
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555"><tspan fill="#2ca02c">— queue</tspan>  <tspan fill="#d62728">| drop-tail drop</tspan>  <tspan fill="#ff7f0e">| random loss</tspan></text>"##,
            LEFT + plot_w,
            qy0 - 4.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn axes(svg: &mut String, y0: f64, h: f64, ymax: f64, label: &str, total_ms: u64, plot_w: f64) {
    let _ = writeln!(svg, r##"<rect x="{LEFT}" y="{y0:.1}" width="{plot_w:.1}" height="{h:.1}" fill="none" stroke="#888"/>"##);
    let step = tick_step(ymax, 4.0);
    let mut v = 0.0;
    while v <= ymax + 1e-9 {
        let y = y0 + h - v / ymax * h;
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 5.0,
            y + 4.0,
            trim(v)
        );
        v += step;
    }
    let _ = writeln!(
        svg,
        r##"<text transform="translate(14,{:.1}) rotate(-90)" text-anchor="middle" fill="#555">{label}</text>"##,
        y0 + h / 2.0
    );
    let secs = total_ms as f64 / 1000.0;
    let tstep = tick_step(secs, 10.0);
    let mut t = 0.0;
    while t <= secs + 1e-9 {
        let x = LEFT + t / secs * plot_w;
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#888"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}s</text>"##,
            y0 + h,
            y0 + h + 4.0,
            y0 + h + 16.0,
            trim(t)
        );
        t += tstep;
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Plot a monitor CSV into an SVG file.
pub fn plot_file(csv: &Path, svg: &Path, title: Option<&str>) -> Result<(), String> {
    let rec = monitor::read_csv(csv).map_err(|e| e.to_string())?;
    let title = title.map(String::from).unwrap_or_else(|| format!("gridmpi-testbed monitor: {}", csv.display()));
    std::fs::write(svg, render(&rec, &title)).map_err(|e| format!("{}: {e}", svg.display()))
}

/// The SVG path that goes with a monitor file: x.csv -> x.svg.
pub fn default_svg(csv: &Path) -> std::path::PathBuf {
    csv.with_extension("svg")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn renders_svg() {
        let rows: Vec<Row> = (0..5000)
            .map(|t| Row { t_ms: t, bytes_out: 12_000, qlen_pkts: (t % 50) as u32, drops: (t % 700 == 0) as u32, ..Default::default() })
            .collect();
        let mut params = HashMap::new();
        params.insert("a>b".into(), "rate_bps=100000000 delay_ns=5000000 queue=50p loss=0".into());
        let rec = Recording { params, dirs: vec!["a>b".into()], rows: HashMap::from([("a>b".to_string(), rows)]) };
        let svg = render(&rec, "test");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("96.00 Mbit/s on average"));
        assert!(svg.contains("8 drop-tail drops"));
    }
}
