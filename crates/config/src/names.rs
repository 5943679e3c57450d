//! The `GRIDMPI_` namespace: which names in it mean something, and the
//! check gridmpirun makes of its environment, so a misspelled setting is
//! named instead of silently doing nothing (in a config file a misspelling
//! is already an error; in the environment it cannot be, since any
//! program may carry variables down to us).

use crate::SETTINGS;

/// `GRIDMPI_*` variables that are not settings, and who reads them. A name
/// here is never warned about.
pub static OTHER_VARIABLES: &[(&str, &str)] = &[
    ("GRIDMPI_CONFIG", "the config file to read instead of ~/.gridmpi.conf"),
    ("GRIDMPI_CMDLINE_SET", "set by gridmpirun for its ranks: the settings given on its command line"),
    ("GRIDMPI_SPAWN_SERVER", "set by gridmpirun for its ranks (to the job's PMI key-value space): their PMI server starts processes (MPI_Comm_spawn)"),
    ("GRIDMPI_PARENT_PORT", "set for processes started by MPI_Comm_spawn: the port of their parent job"),
    ("GRIDMPI_CC", "mpicc's compiler"),
    ("GRIDMPI_CXX", "mpicxx's compiler"),
    ("GRIDMPI_FC", "mpifort's compiler"),
    ("GRIDMPI_WRAPPER_LANGUAGE", "set by mpicxx for mpicc"),
    ("GRIDMPI_TESTBED_DIR", "gridmpi-testbed's state directory"),
    ("GRIDMPI_TESTBED", "test scripts: the gridmpi-testbed binary to test"),
    ("GRIDMPI_BUILD", "test scripts: the build directory to test"),
    ("GRIDMPI_TRACE_TOOL", "test scripts: the gridmpi-trace binary to test"),
    ("GRIDMPI_CHECKPOINT_DIR", "set by gridmpirun --checkpoint-dir for its ranks: where they write their images (docs/checkpoint.md)"),
    ("GRIDMPI_FT", "set by gridmpirun --with-ft ulfm for its ranks (to ulfm): the job is fault tolerant, a rank that dies does not end it"),
    ("GRIDMPI_CHECKPOINT_SIGNAL", "the checkpointer (crates/checkpoint): the signal that stops threads for an image"),
    ("GRIDMPI_RESTORE_VERBOSE", "gridmpi-restore: say what is restored and what is not"),
    ("GRIDMPI_RESTORE_OTHER_KERNEL", "gridmpi-restore: accept an image taken under another kernel release"),
    ("GRIDMPI_RESTORE_NO_RSEQ", "set by gridmpi-restore for itself when it runs itself again without rseq"),
];

/// Whether `name` is a setting or one of the [`OTHER_VARIABLES`].
pub fn is_known(name: &str) -> bool {
    SETTINGS.iter().any(|s| s.name == name) || OTHER_VARIABLES.iter().any(|(n, _)| *n == name)
}

/// A `GRIDMPI_*` variable nobody reads, and the known name it most likely
/// meant to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    pub name: String,
    pub nearest: Option<&'static str>,
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.nearest {
            Some(n) => write!(f, "{} is not a GridMPI setting; did you mean {n}?", self.name),
            None => write!(f, "{} is not a GridMPI setting (gridmpirun --info lists them)", self.name),
        }
    }
}

/// Every unknown `GRIDMPI_*` name of `env`, in the order given.
pub fn unknown_variables(env: &[(String, String)]) -> Vec<Unknown> {
    env.iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("GRIDMPI_") && !is_known(k))
        .map(|k| Unknown { name: k.clone(), nearest: nearest_name(k) })
        .collect()
}

/// The known name closest to `name` in edit distance, if close enough to
/// be a slip of the keyboard rather than a different word: at most one
/// edit per four characters of the part after `GRIDMPI_`, and at least one.
pub fn nearest_name(name: &str) -> Option<&'static str> {
    let tail = name.strip_prefix("GRIDMPI_").unwrap_or(name);
    let limit = (tail.chars().count() / 4).max(1);
    let known = SETTINGS.iter().map(|s| s.name).chain(OTHER_VARIABLES.iter().map(|(n, _)| *n));
    known
        .map(|k| (edit_distance(tail, k.strip_prefix("GRIDMPI_").unwrap_or(k)), k))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// Edits (insert, delete, substitute, or swap two neighbours: the usual
/// typing slips) that turn `a` into `b`.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for j in 0..=b.len() {
        d[0][j] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(names: &[&str]) -> Vec<(String, String)> {
        names.iter().map(|n| (n.to_string(), "1".to_string())).collect()
    }

    #[test]
    fn distances() {
        assert_eq!(edit_distance("BUDGET", "BUDGET"), 0);
        assert_eq!(edit_distance("BUGDET", "BUDGET"), 1, "a swap is one slip");
        assert_eq!(edit_distance("SPIN", "SPINS"), 1);
        assert_eq!(edit_distance("", "ABC"), 3);
        assert_eq!(edit_distance("KITTEN", "SITTING"), 3);
    }

    #[test]
    fn misspellings_are_named_with_the_nearest_setting() {
        let got = unknown_variables(&env(&["PATH", "GRIDMPI_WAN_OUTAGE_BUGDET", "GRIDMPI_SPIN_US", "GRIDMPI_EAGER_LIMT"]));
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].to_string(),
            "GRIDMPI_WAN_OUTAGE_BUGDET is not a GridMPI setting; did you mean GRIDMPI_WAN_OUTAGE_BUDGET?"
        );
        assert_eq!(got[1].nearest, Some("GRIDMPI_EAGER_LIMIT"));
        // Far from everything: no guess.
        let got = unknown_variables(&env(&["GRIDMPI_SOMETHING_ELSE_ENTIRELY"]));
        assert_eq!(got[0].nearest, None);
        assert!(got[0].to_string().contains("gridmpirun --info"), "{}", got[0]);
    }

    #[test]
    fn what_the_launcher_and_tools_set_is_known() {
        let internal = ["GRIDMPI_CMDLINE_SET", "GRIDMPI_SHM_PREFIX", "GRIDMPI_APPNUM", "GRIDMPI_CLUSTER", "GRIDMPI_CONFIG", "GRIDMPI_CC"];
        assert!(unknown_variables(&env(&internal)).is_empty());
        for (name, _) in OTHER_VARIABLES {
            assert!(name.starts_with("GRIDMPI_"), "{name}");
            assert!(!SETTINGS.iter().any(|s| s.name == *name), "{name} is a setting and listed as not one");
        }
    }
}
