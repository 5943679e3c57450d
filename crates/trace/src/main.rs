//! `gridmpi-trace`: tables, plots and CSV from `gridmpirun --trace DIR`.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "gridmpi-trace", version, about = "Per-connection TCP history of a GridMPI job (gridmpirun --trace DIR): tables, an HTML report, CSV")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Terminal tables: per connection (bytes, retransmissions, RTOs and the
    /// time lost to them, stalls, max cwnd, mean RTT) and per collective.
    Summary {
        /// The trace directory (holds rank-N.trace files).
        dir: PathBuf,
        /// Also write CSV files (samples, events, connections, collectives) into this directory.
        #[arg(long, value_name = "OUTDIR")]
        csv: Option<PathBuf>,
    },
    /// One self-contained HTML page with plots of every connection.
    Report {
        dir: PathBuf,
        /// Output file.
        #[arg(short, long, value_name = "FILE.html", default_value = "trace.html")]
        output: PathBuf,
        /// Also write CSV files into this directory.
        #[arg(long, value_name = "OUTDIR")]
        csv: Option<PathBuf>,
        /// Title of the page (default: the directory).
        #[arg(long)]
        title: Option<String>,
    },
    /// Only the CSV files.
    Csv {
        dir: PathBuf,
        #[arg(short, long, value_name = "OUTDIR", default_value = "trace-csv")]
        output: PathBuf,
    },
    /// Every record of one rank's file, as text (for debugging).
    Dump {
        /// A rank-N.trace file.
        file: PathBuf,
    },
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("gridmpi-trace: {msg}");
    std::process::exit(1);
}

fn csv_out(job: &gridmpi_trace::analysis::Job, dir: &std::path::Path) {
    match gridmpi_trace::csv::write(job, dir) {
        Ok(files) => eprintln!("wrote {}", files.join(", ")),
        Err(e) => fail(format!("cannot write CSV into {}: {e}", dir.display())),
    }
}

fn main() {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Summary { dir, csv } => {
            let job = gridmpi_trace::load(&dir).unwrap_or_else(|e| fail(e));
            print!("{}", gridmpi_trace::summary::render(&job, &dir.display().to_string()));
            if let Some(c) = csv {
                csv_out(&job, &c);
            }
        }
        Cmd::Report { dir, output, csv, title } => {
            let job = gridmpi_trace::load(&dir).unwrap_or_else(|e| fail(e));
            let title = title.unwrap_or_else(|| dir.display().to_string());
            let page = gridmpi_trace::html::render(&job, &title);
            std::fs::write(&output, page).unwrap_or_else(|e| fail(format!("cannot write {}: {e}", output.display())));
            eprintln!("wrote {}", output.display());
            if let Some(c) = csv {
                csv_out(&job, &c);
            }
        }
        Cmd::Csv { dir, output } => {
            let job = gridmpi_trace::load(&dir).unwrap_or_else(|e| fail(e));
            csv_out(&job, &output);
        }
        Cmd::Dump { file } => {
            let t = gridmpi_trace::format::read_file(&file).unwrap_or_else(|e| fail(e));
            print!("{}", dump(&t));
        }
    }
}

fn dump(t: &gridmpi_trace::format::RankTrace) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for (k, v) in &t.header {
        let _ = writeln!(s, "header {k}={v}");
    }
    for c in &t.conns {
        let _ = writeln!(
            s,
            "conn {} peer {} ({}) {} -> {} cc={} sndbuf={} rcvbuf={} open {:.6}s close {}",
            c.id,
            c.peer,
            c.peer_host,
            c.local_addr,
            c.remote_addr,
            c.congestion_control,
            c.sndbuf,
            c.rcvbuf,
            c.open_us as f64 / 1e6,
            c.close_us.map_or("-".into(), |u| format!("{:.6}s", u as f64 / 1e6))
        );
        for smp in &c.samples {
            let fields: Vec<String> = t
                .fields
                .iter()
                .enumerate()
                .filter(|(i, _)| c.avail & (1 << i) != 0)
                .map(|(i, n)| format!("{n}={}", smp.vals[i]))
                .collect();
            let _ = writeln!(s, "  sample conn {} t={:.6}s {}", c.id, smp.t_us as f64 / 1e6, fields.join(" "));
        }
    }
    for tu in &t.tunings {
        let _ = writeln!(s, "tuning t={:.6}s peer {} {}={}", tu.t_us as f64 / 1e6, tu.peer, tu.option, tu.value);
    }
    for c in &t.colls {
        let _ = writeln!(
            s,
            "coll {} ctx {} bytes {} {:.6}s..{}",
            c.name,
            c.ctx,
            c.bytes,
            c.begin_us as f64 / 1e6,
            c.end_us.map_or("-".into(), |u| format!("{:.6}s", u as f64 / 1e6))
        );
    }
    for (k, v) in &t.stats {
        let _ = writeln!(s, "stats {k}={v}");
    }
    if t.truncated {
        s.push_str("(truncated: no STATS record)\n");
    }
    s
}
