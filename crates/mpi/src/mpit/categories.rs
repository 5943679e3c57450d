//! MPI_T categories and enumerations.
//!
//! Categories: `gridmpi` holds the others (as subcategories) and nothing
//! else; each of the others holds the control variables of one part of
//! the registry and the performance variables about the same thing.
//! Enumerations: one per setting that is a choice (its words, valued by
//! position), and the states of a TCP connection.

use super::pvars::{self, PVARS};
use gridmpi_config::{Kind, Scope, Setting, SETTINGS};

/// A category (its index is its position in [`CATEGORIES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat {
    Root,
    Progress,
    Tcp,
    Grid,
    Traffic,
    Matching,
    Collectives,
    Tracing,
    Launcher,
}

pub struct Category {
    pub cat: Cat,
    pub name: &'static str,
    pub desc: &'static str,
}

pub static CATEGORIES: &[Category] = &[
    Category { cat: Cat::Root, name: "gridmpi", desc: "every variable of GridMPI, by subcategory" },
    Category { cat: Cat::Progress, name: "gridmpi_progress", desc: "progress, waiting, eager and rendezvous protocols, shared memory" },
    Category { cat: Cat::Tcp, name: "gridmpi_tcp", desc: "TCP connections: socket settings and each connection's TCP_INFO" },
    Category { cat: Cat::Grid, name: "gridmpi_grid", desc: "the cluster map, the WAN between clusters and pacing onto it" },
    Category { cat: Cat::Traffic, name: "gridmpi_traffic", desc: "bytes sent to each peer and to each cluster" },
    Category { cat: Cat::Matching, name: "gridmpi_matching", desc: "message matching: unexpected messages and posted receives" },
    Category { cat: Cat::Collectives, name: "gridmpi_collectives", desc: "the algorithm of each collective" },
    Category { cat: Cat::Tracing, name: "gridmpi_tracing", desc: "TCP tracing (gridmpirun --trace) and debug output" },
    Category { cat: Cat::Launcher, name: "gridmpi_launcher", desc: "settings of the launcher (gridmpirun), constant inside the library" },
];

/// Which category a setting belongs to.
pub fn category_of_setting(s: &Setting) -> Cat {
    let n = s.name.trim_start_matches("GRIDMPI_");
    if s.scope == Scope::Launcher {
        Cat::Launcher
    } else if n.starts_with("COLL_") {
        Cat::Collectives
    } else if n.starts_with("TRACE") || n == "DEBUG" {
        Cat::Tracing
    } else if n.starts_with("TCP_") {
        Cat::Tcp
    } else if n.starts_with("TOPOLOGY") || n.starts_with("CLUSTER") || n.starts_with("WAN_") || n.starts_with("PACE") {
        Cat::Grid
    } else {
        Cat::Progress
    }
}

pub fn index_of(name: &str) -> Option<usize> {
    CATEGORIES.iter().position(|c| c.name == name)
}

/// The control variables of category `i`, by index.
pub fn cvars_of(i: usize) -> Vec<i32> {
    let cat = CATEGORIES[i].cat;
    SETTINGS.iter().enumerate().filter(|(_, s)| category_of_setting(s) == cat).map(|(k, _)| k as i32).collect()
}

pub fn pvars_of(i: usize) -> Vec<i32> {
    let cat = CATEGORIES[i].cat;
    PVARS.iter().enumerate().filter(|(_, p)| p.category == cat).map(|(k, _)| k as i32).collect()
}

pub fn subcategories_of(i: usize) -> Vec<i32> {
    if CATEGORIES[i].cat == Cat::Root {
        (1..CATEGORIES.len() as i32).collect()
    } else {
        Vec::new()
    }
}

// ---- enumerations -----------------------------------------------------------

/// An enumeration: its name and its items (name, value).
pub struct Enum {
    pub name: String,
    pub items: Vec<(String, i32)>,
}

/// The enumerations, by index: one per choice setting, in registry order,
/// then those of the performance variables.
pub fn enums() -> Vec<Enum> {
    let mut out: Vec<Enum> = SETTINGS
        .iter()
        .filter_map(|s| match s.kind {
            Kind::Choice(words) => Some(Enum {
                name: s.name.to_ascii_lowercase(),
                items: words.iter().enumerate().map(|(i, w)| (w.to_string(), i as i32)).collect(),
            }),
            _ => None,
        })
        .collect();
    out.extend(pvars::enums());
    out
}

/// The enumeration of control variable `cvar`, if it is a choice.
pub fn enum_of_cvar(cvar: usize) -> Option<usize> {
    if !matches!(SETTINGS[cvar].kind, Kind::Choice(_)) {
        return None;
    }
    Some(SETTINGS[..cvar].iter().filter(|s| matches!(s.kind, Kind::Choice(_))).count())
}

/// The index of the `k`-th enumeration of the performance variables.
pub fn pvar_enum_index(k: usize) -> usize {
    SETTINGS.iter().filter(|s| matches!(s.kind, Kind::Choice(_))).count() + k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_in_one_category_under_the_root() {
        let cvars: usize = (0..CATEGORIES.len()).map(|i| cvars_of(i).len()).sum();
        assert_eq!(cvars, SETTINGS.len());
        let pvars: usize = (0..CATEGORIES.len()).map(|i| pvars_of(i).len()).sum();
        assert_eq!(pvars, PVARS.len());
        assert!(cvars_of(0).is_empty() && pvars_of(0).is_empty());
        assert_eq!(subcategories_of(0).len(), CATEGORIES.len() - 1);
        for (i, c) in CATEGORIES.iter().enumerate() {
            assert_eq!(index_of(c.name), Some(i));
        }
    }

    #[test]
    fn choice_settings_have_their_enumeration() {
        let e = enums();
        for (i, s) in SETTINGS.iter().enumerate() {
            if let Kind::Choice(words) = s.kind {
                let k = enum_of_cvar(i).unwrap();
                assert_eq!(e[k].name, s.name.to_ascii_lowercase());
                assert_eq!(e[k].items.len(), words.len());
            } else {
                assert_eq!(enum_of_cvar(i), None);
            }
        }
    }
}
