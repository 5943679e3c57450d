//! Groups: ordered sets of processes; every MPI_Group_* operation.

use super::*;
use crate::objects::*;
use std::collections::HashSet;

impl State {
    pub fn group(&self, h: MPI_Group) -> R<Arc<Group>> {
        if h == MPI_GROUP_EMPTY {
            return Ok(Arc::new(Group::new(Vec::new())));
        }
        if h == MPI_GROUP_NULL {
            return Err(err(MPI_ERR_GROUP, "the group is MPI_GROUP_NULL"));
        }
        self.groups.get(h).cloned().ok_or_else(|| err(MPI_ERR_GROUP, format!("invalid group handle {h:#x}")))
    }
}

// The MPI_Group_X of this file are generated from abi/functions.txt; these
// are their implementations.

/// A handle for a group made by an operation (MPI_GROUP_EMPTY if empty).
fn made(st: &mut State, g: Group) -> R<MPI_Group> {
    Ok(if g.pids.is_empty() { MPI_GROUP_EMPTY } else { st.new_group(g) })
}

pub(crate) fn group_rank(st: &mut State, group: MPI_Group) -> R<c_int> {
    Ok(st.group(group)?.rank_of(st.rt.me).unwrap_or(MPI_UNDEFINED))
}

pub(crate) fn group_size(st: &mut State, group: MPI_Group) -> R<c_int> {
    Ok(st.group(group)?.size())
}

pub(crate) fn translate_ranks(st: &mut State, group1: MPI_Group, _n: c_int, ranks1: &[c_int], group2: MPI_Group) -> R<Vec<c_int>> {
    let (g1, g2) = (st.group(group1)?, st.group(group2)?);
    let rank_in_2 = |(i, &r): (usize, &c_int)| match r {
        MPI_PROC_NULL => Ok(MPI_PROC_NULL),
        r if !(0..g1.size()).contains(&r) => Err(err(MPI_ERR_RANK, format!("ranks1[{i}] = {r} is not a rank of group1 (size {})", g1.size()))),
        r => Ok(g2.rank_of(g1.pids[r as usize]).unwrap_or(MPI_UNDEFINED)),
    };
    ranks1.iter().enumerate().map(rank_in_2).collect()
}

pub(crate) fn group_compare(st: &mut State, group1: MPI_Group, group2: MPI_Group) -> R<c_int> {
    Ok(compare_groups(&*st.group(group1)?, &*st.group(group2)?))
}

pub fn compare_groups(a: &Group, b: &Group) -> c_int {
    if a.pids == b.pids {
        MPI_IDENT
    } else if a.pids.len() == b.pids.len() && {
        let sa: HashSet<_> = a.pids.iter().collect();
        b.pids.iter().all(|p| sa.contains(p))
    } {
        MPI_SIMILAR
    } else {
        MPI_UNEQUAL
    }
}

pub(crate) fn group_union(st: &mut State, group1: MPI_Group, group2: MPI_Group) -> R<MPI_Group> {
    let (a, b) = (st.group(group1)?, st.group(group2)?);
    let mut pids = a.pids.clone();
    let sa: HashSet<_> = a.pids.iter().copied().collect();
    pids.extend(b.pids.iter().filter(|p| !sa.contains(p)));
    made(st, Group { pids, session: common_session(&a, &b)? })
}

/// The members of `group1` that are (`keep` true) or are not in `group2`.
fn filtered(st: &mut State, group1: MPI_Group, group2: MPI_Group, keep: bool) -> R<MPI_Group> {
    let (a, b) = (st.group(group1)?, st.group(group2)?);
    let sb: HashSet<_> = b.pids.iter().copied().collect();
    made(st, Group { pids: a.pids.iter().copied().filter(|p| sb.contains(p) == keep).collect(), session: common_session(&a, &b)? })
}

pub(crate) fn group_intersection(st: &mut State, group1: MPI_Group, group2: MPI_Group) -> R<MPI_Group> {
    filtered(st, group1, group2, true)
}

pub(crate) fn group_difference(st: &mut State, group1: MPI_Group, group2: MPI_Group) -> R<MPI_Group> {
    filtered(st, group1, group2, false)
}

/// The session a group made from two others derives from: groups of two
/// different sessions cannot be combined (MPI 4.1, 11.3.2).
fn common_session(a: &Group, b: &Group) -> R<Option<MPI_Session>> {
    match (a.session, b.session) {
        (Some(x), Some(y)) if x != y => Err(err(MPI_ERR_GROUP, "the two groups derive from different sessions")),
        (x, y) => Ok(x.or(y)),
    }
}

/// Distinct ranks of `g`, checked.
fn rank_list(g: &Group, ranks: &[c_int]) -> R<Vec<i32>> {
    if ranks.len() > g.pids.len() {
        return Err(err(MPI_ERR_ARG, format!("invalid number of ranks {} for a group of {}", ranks.len(), g.size())));
    }
    let mut seen = HashSet::new();
    for (i, &r) in ranks.iter().enumerate() {
        if r < 0 || r >= g.size() {
            return Err(err(MPI_ERR_RANK, format!("ranks[{i}] = {r} is not a rank of the group (size {})", g.size())));
        }
        if !seen.insert(r) {
            return Err(err(MPI_ERR_RANK, format!("rank {r} appears twice in ranks")));
        }
    }
    Ok(ranks.to_vec())
}

/// The members of `g` at `ranks` (`incl`), or all others in rank order.
fn pick(st: &mut State, g: &Group, ranks: Vec<i32>, incl: bool) -> R<MPI_Group> {
    let pids = if incl {
        ranks.iter().map(|&r| g.pids[r as usize]).collect()
    } else {
        let out: HashSet<i32> = ranks.into_iter().collect();
        g.pids.iter().enumerate().filter(|(r, _)| !out.contains(&(*r as i32))).map(|(_, &p)| p).collect()
    };
    made(st, g.derived(pids))
}

pub(crate) fn group_incl(st: &mut State, group: MPI_Group, _n: c_int, ranks: &[c_int], incl: bool) -> R<MPI_Group> {
    let g = st.group(group)?;
    let v = rank_list(&g, ranks)?;
    pick(st, &g, v, incl)
}

pub(crate) fn group_range_incl(st: &mut State, group: MPI_Group, _n: c_int, r: &[[c_int; 3]], incl: bool) -> R<MPI_Group> {
    let g = st.group(group)?;
    let v = ranges(&g, r)?;
    pick(st, &g, v, incl)
}

/// Expand (first, last, stride) triplets into ranks, checking them.
fn ranges(g: &Group, r: &[[c_int; 3]]) -> R<Vec<i32>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (i, &[first, last, stride]) in r.iter().enumerate() {
        if stride == 0 {
            return Err(err(MPI_ERR_ARG, format!("ranges[{i}] has stride 0")));
        }
        for (what, v) in [("first", first), ("last", last)] {
            if v < 0 || v >= g.size() {
                return Err(err(MPI_ERR_RANK, format!("ranges[{i}].{what} = {v} is not a rank of the group (size {})", g.size())));
            }
        }
        if (stride > 0 && first > last) || (stride < 0 && first < last) {
            continue;
        }
        let mut x = first;
        loop {
            if !seen.insert(x) {
                return Err(err(MPI_ERR_RANK, format!("rank {x} appears twice in the ranges")));
            }
            out.push(x);
            let next = x as i64 + stride as i64;
            if (stride > 0 && next > last as i64) || (stride < 0 && next < last as i64) {
                break;
            }
            x = next as i32;
        }
    }
    Ok(out)
}

pub(crate) fn group_free(st: &mut State, h: MPI_Group) -> R<MPI_Group> {
    if h != MPI_GROUP_EMPTY {
        st.groups.remove(h).ok_or_else(|| err(MPI_ERR_GROUP, format!("invalid group handle {h:#x}")))?;
    }
    Ok(MPI_GROUP_NULL)
}
