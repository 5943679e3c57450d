//! Process sets: the named groups of processes a session offers
//! (MPI 4.1, 11.3.2).
//!
//! - `mpi://WORLD`: every process of the job;
//! - `mpi://SELF`: the calling process;
//! - `gridmpi://cluster/NAME`, one per cluster of the job's cluster map
//!   (clustermap.rs: a topology file, the launcher's cluster names, or
//!   measured round-trip times), so a program can build a communicator of
//!   its own site without MPI_Comm_split_type;
//! - `gridmpi://cluster/SELF`: the calling process's cluster, under one
//!   name on every process.
//!
//! The `mpi://` names are matched without regard to case, as MPICH and
//! Open MPI do; GridMPI's own names exactly.

use crate::clustermap::ClusterMap;
use gridmpi_engine::Pid;

pub const WORLD: &str = "mpi://WORLD";
pub const SELF: &str = "mpi://SELF";
pub const CLUSTER_PREFIX: &str = "gridmpi://cluster/";
pub const MY_CLUSTER: &str = "gridmpi://cluster/SELF";

/// The process sets of a process, in the order MPI_Session_get_nth_pset
/// lists them.
pub struct Psets {
    sets: Vec<(String, Vec<Pid>)>,
}

impl Psets {
    /// The sets of process `me` of a job of `size` processes laid out as
    /// `map` says.
    pub fn new(me: Pid, size: u32, map: &ClusterMap) -> Psets {
        let mut sets = vec![(WORLD.to_string(), (0..size).collect()), (SELF.to_string(), vec![me])];
        let members = |c: u32| (0..size).filter(|&p| map.cluster_of(p) == c).collect::<Vec<Pid>>();
        for (c, name) in map.names.iter().enumerate() {
            sets.push((format!("{CLUSTER_PREFIX}{name}"), members(c as u32)));
        }
        sets.push((MY_CLUSTER.to_string(), members(map.cluster_of(me))));
        Psets { sets }
    }

    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The name of the `n`-th set (0-based).
    pub fn name(&self, n: usize) -> Option<&str> {
        self.sets.get(n).map(|(name, _)| name.as_str())
    }

    /// The members of the set named `name`, in rank order.
    pub fn members(&self, name: &str) -> Option<&[Pid]> {
        self.sets
            .iter()
            .find(|(n, _)| if n.starts_with("mpi://") { n.eq_ignore_ascii_case(name) } else { n == name })
            .map(|(_, m)| m.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clustermap::MapSource;

    #[test]
    fn world_self_and_one_set_per_cluster() {
        let names: Vec<String> = ["a", "b", "a", "b", "b"].iter().map(|s| s.to_string()).collect();
        let map = ClusterMap::from_names(&names, MapSource::Launcher);
        let p = Psets::new(3, 5, &map);
        assert_eq!(p.len(), 5);
        assert_eq!(p.name(0), Some("mpi://WORLD"));
        assert_eq!(p.members("mpi://WORLD"), Some(&[0, 1, 2, 3, 4][..]));
        assert_eq!(p.members("MPI://world"), Some(&[0, 1, 2, 3, 4][..]));
        assert_eq!(p.members("mpi://SELF"), Some(&[3][..]));
        let cluster_of_a = map.cluster_of(0) as usize;
        assert_eq!(p.members(&format!("gridmpi://cluster/{}", map.names[cluster_of_a])), Some(&[0, 2][..]));
        assert_eq!(p.members("gridmpi://cluster/SELF"), Some(&[1, 3, 4][..]));
        assert_eq!(p.members("gridmpi://cluster/self"), None);
        assert_eq!(p.members("gridmpi://cluster/c"), None);
        assert_eq!(p.name(5), None);
    }

    #[test]
    fn a_single_cluster_job() {
        let p = Psets::new(0, 2, &ClusterMap::single(2));
        assert_eq!(p.members("gridmpi://cluster/cluster0"), Some(&[0, 1][..]));
        assert_eq!(p.members("gridmpi://cluster/SELF"), Some(&[0, 1][..]));
    }
}
