//! Which algorithm each collective runs: the engine's table
//! (`gridmpi_engine::coll::select`) with the user's overrides, from the
//! `GRIDMPI_COLL_*` settings (listed by `gridmpirun --info`). Read when MPI
//! starts and again when a tool writes one of them through MPI_T (the
//! state keeps the result: State::coll_selector).

use gridmpi_config::Config;
use gridmpi_engine::coll::select::Selector;

/// The selector the settings in `cfg` describe.
pub fn build_selector(cfg: &Config) -> Selector {
    let mut s = Selector::from_settings(|name| cfg.text(name).to_string()).unwrap_or_else(|e| {
        eprintln!("GridMPI: {e}; using the default collective algorithms");
        Selector::default()
    });
    if let Some(n) = cfg.size("GRIDMPI_COLL_ALLTOALL_INFLIGHT") {
        s.alltoall_inflight = n.clamp(1, i32::MAX as u64) as i32;
    }
    s
}

#[cfg(test)]
mod tests {
    use gridmpi_engine::coll::select::SETTINGS;

    /// Every override setting is registered, and offers exactly "auto" and
    /// the engine's algorithms.
    #[test]
    fn registry_lists_every_algorithm() {
        for (name, algos) in SETTINGS {
            let s = gridmpi_config::find(name).unwrap_or_else(|| panic!("{name} is not in the registry"));
            let gridmpi_config::Kind::Choice(choices) = s.kind else { panic!("{name} is not a choice") };
            assert_eq!(choices[0], "auto");
            assert_eq!(&choices[1..], *algos, "{name}");
        }
    }
}
