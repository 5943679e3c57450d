//! gridmpi-trace: reads the per-rank TCP histories that GridMPI records with
//! `gridmpirun --trace DIR` (`GRIDMPI_TRACE=DIR`) and turns them into a
//! terminal summary, a self-contained HTML report and CSV files.
//!
//! Layout: `format` (reading rank-N.trace files), `analysis` (per
//! connection and per collective statistics, stalls and their causes),
//! `summary` (text tables), `html` (the report), `csv` (export).

#![forbid(unsafe_code)]

pub mod analysis;
pub mod csv;
pub mod format;
pub mod html;
pub mod summary;

/// Read and analyse a trace directory.
pub fn load(dir: &std::path::Path) -> Result<analysis::Job, String> {
    let (ranks, warnings) = format::read_dir(dir)?;
    Ok(analysis::Job::new(ranks, warnings))
}
