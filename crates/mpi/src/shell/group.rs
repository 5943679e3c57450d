//! Groups: ordered sets of processes; every MPI_Group_* operation.

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
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

fn new_group(out: *mut MPI_Group, name: &'static str, f: impl FnOnce(&mut State) -> R<Group>) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(out, "newgroup")?;
        let h = state::with(|st| {
            let g = f(st)?;
            Ok(if g.pids.is_empty() { MPI_GROUP_EMPTY } else { st.new_group(g) })
        })?;
        // SAFETY: checked non-null.
        unsafe { *out = h };
        Ok(())
    })
}

pub(crate) fn group_rank(st: &mut State, group: MPI_Group) -> R<c_int> {
    Ok(st.group(group)?.rank_of(st.rt.me).unwrap_or(MPI_UNDEFINED))
}

pub(crate) fn group_size(st: &mut State, group: MPI_Group) -> R<c_int> {
    Ok(st.group(group)?.size())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_translate_ranks(group1: MPI_Group, n: c_int, ranks1: *const c_int, group2: MPI_Group, ranks2: *mut c_int) -> c_int {
    api("MPI_Group_translate_ranks", Target::NoComm, || {
        if n < 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid number of ranks {n}")));
        }
        let (g1, g2) = state::with(|st| Ok((st.group(group1)?, st.group(group2)?)))?;
        if n == 0 {
            return Ok(());
        }
        check_ptr(ranks1, "ranks1")?;
        check_ptr(ranks2, "ranks2")?;
        for i in 0..n as usize {
            let r = *ranks1.add(i);
            let out = if r == MPI_PROC_NULL {
                MPI_PROC_NULL
            } else if r < 0 || r >= g1.size() {
                return Err(err(MPI_ERR_RANK, format!("ranks1[{i}] = {r} is not a rank of group1 (size {})", g1.size())));
            } else {
                g2.rank_of(g1.pids[r as usize]).unwrap_or(MPI_UNDEFINED)
            };
            *ranks2.add(i) = out;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_compare(group1: MPI_Group, group2: MPI_Group, result: *mut c_int) -> c_int {
    api("MPI_Group_compare", Target::NoComm, || {
        check_ptr(result, "result")?;
        let (g1, g2) = state::with(|st| Ok((st.group(group1)?, st.group(group2)?)))?;
        *result = compare_groups(&g1, &g2);
        Ok(())
    })
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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_union(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    new_group(newgroup, "MPI_Group_union", |st| {
        let (a, b) = (st.group(group1)?, st.group(group2)?);
        let mut pids = a.pids.clone();
        let sa: HashSet<_> = a.pids.iter().copied().collect();
        pids.extend(b.pids.iter().filter(|p| !sa.contains(p)));
        Ok(Group { pids, session: common_session(&a, &b)? })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_intersection(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    new_group(newgroup, "MPI_Group_intersection", |st| {
        let (a, b) = (st.group(group1)?, st.group(group2)?);
        let sb: HashSet<_> = b.pids.iter().copied().collect();
        Ok(Group { pids: a.pids.iter().copied().filter(|p| sb.contains(p)).collect(), session: common_session(&a, &b)? })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_difference(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    new_group(newgroup, "MPI_Group_difference", |st| {
        let (a, b) = (st.group(group1)?, st.group(group2)?);
        let sb: HashSet<_> = b.pids.iter().copied().collect();
        Ok(Group { pids: a.pids.iter().copied().filter(|p| !sb.contains(p)).collect(), session: common_session(&a, &b)? })
    })
}

/// The session a group made from two others derives from: groups of two
/// different sessions cannot be combined (MPI 4.1, 11.3.2).
fn common_session(a: &Group, b: &Group) -> R<Option<MPI_Session>> {
    match (a.session, b.session) {
        (Some(x), Some(y)) if x != y => Err(err(MPI_ERR_GROUP, "the two groups derive from different sessions")),
        (x, y) => Ok(x.or(y)),
    }
}

unsafe fn rank_list(g: &Group, n: c_int, ranks: *const c_int) -> R<Vec<i32>> {
    if n < 0 || n > g.size() {
        return Err(err(MPI_ERR_ARG, format!("invalid number of ranks {n} for a group of {}", g.size())));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    check_ptr(ranks, "ranks")?;
    let v: Vec<i32> = std::slice::from_raw_parts(ranks, n as usize).to_vec();
    let mut seen = HashSet::new();
    for (i, &r) in v.iter().enumerate() {
        if r < 0 || r >= g.size() {
            return Err(err(MPI_ERR_RANK, format!("ranks[{i}] = {r} is not a rank of the group (size {})", g.size())));
        }
        if !seen.insert(r) {
            return Err(err(MPI_ERR_RANK, format!("rank {r} appears twice in ranks")));
        }
    }
    Ok(v)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_incl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> c_int {
    new_group(newgroup, "MPI_Group_incl", |st| {
        let g = st.group(group)?;
        let v = rank_list(&g, n, ranks)?;
        Ok(g.derived(v.iter().map(|&r| g.pids[r as usize]).collect()))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_excl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> c_int {
    new_group(newgroup, "MPI_Group_excl", |st| {
        let g = st.group(group)?;
        let v: HashSet<i32> = rank_list(&g, n, ranks)?.into_iter().collect();
        Ok(g.derived(g.pids.iter().enumerate().filter(|(r, _)| !v.contains(&(*r as i32))).map(|(_, &p)| p).collect()))
    })
}

/// Expand (first, last, stride) triplets into ranks, checking them.
unsafe fn ranges(g: &Group, n: c_int, r: *mut [c_int; 3]) -> R<Vec<i32>> {
    if n < 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid number of ranges {n}")));
    }
    if n > 0 {
        check_ptr(r, "ranges")?;
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for i in 0..n as usize {
        let [first, last, stride] = *r.add(i);
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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_range_incl(group: MPI_Group, n: c_int, ranges_: *mut [c_int; 3], newgroup: *mut MPI_Group) -> c_int {
    new_group(newgroup, "MPI_Group_range_incl", |st| {
        let g = st.group(group)?;
        let v = ranges(&g, n, ranges_)?;
        Ok(g.derived(v.iter().map(|&r| g.pids[r as usize]).collect()))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_range_excl(group: MPI_Group, n: c_int, ranges_: *mut [c_int; 3], newgroup: *mut MPI_Group) -> c_int {
    new_group(newgroup, "MPI_Group_range_excl", |st| {
        let g = st.group(group)?;
        let v: HashSet<i32> = ranges(&g, n, ranges_)?.into_iter().collect();
        Ok(g.derived(g.pids.iter().enumerate().filter(|(r, _)| !v.contains(&(*r as i32))).map(|(_, &p)| p).collect()))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_free(group: *mut MPI_Group) -> c_int {
    api("MPI_Group_free", Target::NoComm, || {
        check_ptr(group, "group")?;
        let h = *group;
        if h != MPI_GROUP_EMPTY {
            state::with(|st| st.groups.remove(h).map(|_| ()).ok_or_else(|| err(MPI_ERR_GROUP, format!("invalid group handle {h:#x}"))))?;
        }
        *group = MPI_GROUP_NULL;
        Ok(())
    })
}
