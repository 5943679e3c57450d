//! The quick road of the commonest blocking collectives among the ranks of
//! one host: MPI_Barrier, and MPI_Bcast, MPI_Reduce, MPI_Allreduce and
//! MPI_Alltoall of a predefined datatype whose data fits one slot of the
//! communicator's shared-memory area (coll/host.rs in the engine).
//!
//! The general road plans the call (a boxed closure over checked
//! arguments), builds a schedule of one host step and runs the step
//! inline (host_inline.rs): about 3,400 instructions for an 8-byte
//! allreduce on 2 ranks, where the work on the area is a few hundred. This
//! road does the same operation on the area directly from the caller's
//! buffers. It is taken only where the general road would choose the area
//! too (the same table, the same input), and it takes the same collective
//! tag and operation number, so ranks on either road meet on the area.
//! Anything else (another datatype, an argument the general road would
//! refuse, a traced or fault-tolerant job) goes the general road, which
//! also reports every error.

use super::*;
use crate::state::{spin_for_arrivals, SpinPolicy};
use gridmpi_datatype::BasicType;
use gridmpi_engine::coll::host::{Few, Gather, HostArea, HostOp, HostStep, Source};
use gridmpi_engine::rma::Op;
use gridmpi_transport::progress::Arrivals;
use gridmpi_wire::Pid;

/// MPI_Barrier.
pub(crate) fn barrier(name: &'static str, comm: MPI_Comm) -> Option<c_int> {
    run(name, comm, |st| {
        let Some((t, ())) = Turn::take(st, comm, |st, c| (st.coll_selector.barrier(&c.input(0)) == sel::Barrier::Host).then_some(()))? else { return Ok(None) };
        // SAFETY: nothing is written or read.
        unsafe { t.arrive(st, 0, None, None, Read::Nothing) }.map(Some)
    })
}

/// MPI_Bcast.
pub(crate) fn bcast(name: &'static str, buffer: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> Option<c_int> {
    run(name, comm, |st| {
        let Some(bytes) = dense_bytes(st, datatype, count).filter(|&b| b == 0 || !buffer.is_null()) else { return Ok(None) };
        let fits = |st: &State, c: &CommShape| {
            ((0..c.size).contains(&root) && bytes as u64 <= c.host_slot && st.coll_selector.bcast(&c.input(bytes as u64)) == sel::Bcast::Host).then_some(())
        };
        let Some((t, ())) = Turn::take(st, comm, fits)? else { return Ok(None) };
        let (write, read) = if t.member == root as usize {
            (Some((buffer as *const u8, bytes)), Read::Nothing)
        } else {
            (None, Read::One(Source::Member(root as usize), buffer as *mut u8, bytes))
        };
        // SAFETY: the caller's buffer holds `bytes` dense bytes (checked
        // type and count), valid for the blocking call.
        unsafe { t.arrive(st, bytes as u64, write, None, read) }.map(Some)
    })
}

/// MPI_Allreduce.
pub(crate) fn allreduce(name: &'static str, sendbuf: *const c_void, recvbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> Option<c_int> {
    let o = super::super::op::predefined_op(op)?;
    run(name, comm, |st| {
        let Some(bytes) = dense_bytes(st, datatype, count) else { return Ok(None) };
        let input = if in_place(sendbuf) { recvbuf as *const c_void } else { sendbuf };
        // Aliased or missing buffers: the general road says so.
        if bytes > 0 && (recvbuf.is_null() || input.is_null() || (!in_place(sendbuf) && std::ptr::eq(sendbuf, recvbuf))) {
            return Ok(None);
        }
        let fits = |st: &State, c: &CommShape| {
            let r = Reduction::of(st, datatype, o, count)?;
            r.on_host(c, |i| st.coll_selector.allreduce(i) == sel::Allreduce::Host).then_some((r.basic, r.count))
        };
        let Some((t, (b, n))) = Turn::take(st, comm, fits)? else { return Ok(None) };
        // SAFETY: both buffers hold `bytes` dense bytes of `b` (checked),
        // valid for the blocking call.
        unsafe { t.arrive(st, bytes as u64, Some((input as *const u8, bytes)), Some((o, b, n as usize)), Read::One(Source::Result, recvbuf as *mut u8, bytes)) }.map(Some)
    })
}

/// MPI_Reduce.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce(name: &'static str, sendbuf: *const c_void, recvbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) -> Option<c_int> {
    let o = super::super::op::predefined_op(op)?;
    run(name, comm, |st| {
        let Some(bytes) = dense_bytes(st, datatype, count) else { return Ok(None) };
        let Ok(rank) = st.comm(comm).map(|c| c.rank) else { return Ok(None) };
        let at_root = rank == root;
        // In place only at the root; the root's buffers not aliased; every
        // buffer there: else the general road says what is wrong.
        let input = if at_root && in_place(sendbuf) { recvbuf as *const c_void } else { sendbuf };
        if (!at_root && in_place(sendbuf)) || (bytes > 0 && (input.is_null() || (at_root && (recvbuf.is_null() || (!in_place(sendbuf) && std::ptr::eq(sendbuf, recvbuf)))))) {
            return Ok(None);
        }
        let fits = |st: &State, c: &CommShape| {
            let r = Reduction::of(st, datatype, o, count).filter(|_| (0..c.size).contains(&root))?;
            r.on_host(c, |i| st.coll_selector.reduce(i) == sel::Reduce::Host).then_some((r.basic, r.count))
        };
        let Some((t, (b, n))) = Turn::take(st, comm, fits)? else { return Ok(None) };
        let read = if at_root { Read::One(Source::Result, recvbuf as *mut u8, bytes) } else { Read::Nothing };
        // SAFETY: the buffers hold `bytes` dense bytes of `b` (checked),
        // valid for the blocking call.
        unsafe { t.arrive(st, bytes as u64, Some((input as *const u8, bytes)), Some((o, b, n as usize)), read) }.map(Some)
    })
}

/// MPI_Alltoall (not in place).
#[allow(clippy::too_many_arguments)]
pub(crate) fn alltoall(
    name: &'static str, sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count,
    recvtype: MPI_Datatype, comm: MPI_Comm,
) -> Option<c_int> {
    if in_place(sendbuf) {
        return None;
    }
    run(name, comm, |st| {
        let (Some(block), Some(sent)) = (dense_bytes(st, recvtype, recvcount), dense_bytes(st, sendtype, sendcount)) else { return Ok(None) };
        // Blocks of another length, missing or aliased buffers: the
        // general road says what is wrong.
        if sent != block || (block > 0 && (sendbuf.is_null() || recvbuf.is_null() || std::ptr::eq(sendbuf, recvbuf))) {
            return Ok(None);
        }
        let fits = |st: &State, c: &CommShape| (st.coll_selector.alltoall(&c.input(block as u64)) == sel::Alltoall::Host).then_some(());
        let Some((t, ())) = Turn::take(st, comm, fits)? else { return Ok(None) };
        let (me, members) = (t.member, t.members);
        // SAFETY: each buffer holds `members` blocks of `block` dense bytes
        // (checked types and counts), valid for the blocking call; the
        // table chose the area, so they fit a slot.
        unsafe { t.arrive(st, block as u64, Some((sendbuf as *const u8, block * members)), None, Read::Gather { to: recvbuf as *mut u8, at: me * block, block }) }.map(Some)
    })
}

/// A reduction of a predefined type and operation the general road
/// accepts: what its plan looks up, without making the reducer (an
/// allocation-free lookup: with many ranks on few cores every instruction
/// here is paid once per rank sharing a core).
struct Reduction<'a> {
    op: Op,
    basic: BasicType,
    count: u64,
    dt: &'a Datatype,
}

impl<'a> Reduction<'a> {
    fn of(st: &'a State, datatype: MPI_Datatype, op: Op, count: MPI_Count) -> Option<Reduction<'a>> {
        let (dt, _) = st.predef.get(datatype)?;
        super::super::op::check_predefined(op, dt).ok()?;
        let basic = dt.basic_type()?;
        Some(Reduction { op, basic, count: u64::try_from(count).ok()?, dt })
    }

    /// Whether the general road runs it on the area: its data fits a slot
    /// and the table, asked by `choose` with the plan's input, says so.
    fn on_host(&self, c: &CommShape, choose: impl FnOnce(&Input) -> bool) -> bool {
        let (i, basic) = super::reductions::selection_input(c, self.count, self.dt, self.op.is_commutative(), false);
        basic.is_some() && choose(&i)
    }
}

/// Start under the lock (`start` gives None when the general road must
/// take the call, before anything was taken), then wait without it.
fn run(name: &'static str, comm: MPI_Comm, start: impl FnOnce(&mut State) -> R<Option<Arrived>>) -> Option<c_int> {
    let started = match state::with(start) {
        Ok(None) => return None,
        Ok(Some(a)) => Ok(a),
        Err(e) => Err(e),
    };
    Some(api(name, Target::Comm(comm), || started.and_then(Arrived::finish)))
}

/// Bytes of `count` items of the predefined, dense (gapless, from 0)
/// `datatype`, if it is one and `count` is valid.
fn dense_bytes(st: &State, datatype: MPI_Datatype, count: MPI_Count) -> Option<usize> {
    let (dt, _) = st.predef.get(datatype)?;
    let dense = dt.size() as i64 == dt.extent() && dt.true_lb() == 0 && dt.is_contiguous() && dt.pair().is_none();
    let count = u64::try_from(count).ok().filter(|_| dense)?;
    usize::try_from(count.checked_mul(dt.size())?).ok()
}

/// The area's next operation, taken for this call.
struct Turn {
    area: Arc<dyn HostArea>,
    op: u64,
    member: usize,
    members: usize,
    pids: Arc<[Pid]>,
}

impl Turn {
    /// Take `comm`'s next blocking collective tag and area operation if the
    /// general road would run this call there (`fits` gives Some, asked
    /// with what its plan asks the table; its value is returned with the
    /// turn) and may run it inline now (host_inline.rs).
    fn take<T>(st: &mut State, comm: MPI_Comm, fits: impl FnOnce(&State, &CommShape) -> Option<T>) -> R<Option<(Turn, T)>> {
        if st.rt.tracer.is_some() || st.rt.fault_tolerant || st.rt.engine.ft_active() || st.map_switch.is_some() {
            return Ok(None);
        }
        let Ok(shape) = CommShape::of(st, comm) else { return Ok(None) };
        if shape.remote.is_some() || shape.host_slot == 0 {
            return Ok(None);
        }
        let Some(fit) = fits(st, &shape) else { return Ok(None) };
        let c = st.comm_mut(comm)?;
        let HostColl::Area { area, next_op, .. } = &mut c.host else { return Ok(None) };
        if area.turn() != *next_op {
            return Ok(None);
        }
        let (area, op) = (area.clone(), *next_op);
        *next_op += 1;
        let _tag = c.next_coll_tag();
        Ok(Some((Turn { area, op, member: c.rank as usize, members: c.size() as usize, pids: c.coll_pids.clone() }, fit)))
    }

    /// Put `write` into our slot, state the operation's `size` (as
    /// HostStep::size) and arrive; the last member judges the sizes,
    /// combines (`combine`: the contributions, in rank order, as
    /// HostStep::arrive does), releases and wakes the members that sleep.
    ///
    /// # Safety
    /// `write` and `read` are valid for their lengths until the call
    /// returns; they fit a slot.
    unsafe fn arrive(self, st: &mut State, size: u64, write: Option<(*const u8, usize)>, combine: Option<(Op, BasicType, usize)>, read: Read) -> R<Arrived> {
        let (area, op) = (&self.area, self.op);
        if let Some((from, n)) = write.filter(|w| w.1 > 0) {
            std::ptr::copy_nonoverlapping(from, area.contribution(self.member, op), n);
        }
        area.state_size(op, size);
        let mut error: Option<String> = None;
        if area.arrive(op) {
            let sizes = area.settle_sizes(op);
            if let Some((o, b, count)) = combine.filter(|c| c.2 > 0 && sizes.agree()) {
                let reduce = |left: *const u8, inout: *mut u8| gridmpi_reduce::reduce(o, b, left, inout, count).map_err(|e| e.to_string());
                error = host::combine_in_rank_order(area.as_ref(), op, self.members, count * b.size(), reduce).err();
            }
            // Released even after a failed reduction (as HostStep::arrive).
            host::release(area.as_ref(), op, sizes);
            st.rt.engine.wake_host_sleepers(area.as_ref(), self.member, &self.pids);
            if st.rt.engine.has_actions() {
                st.progress()?;
            }
        }
        let spin = SpinPolicy::allowed(st).then(|| (st.rt.arrivals.clone(), SpinPolicy::of(st)));
        Ok(Arrived { turn: self, read, spin, error })
    }
}

/// What a member reads once an operation is released.
#[derive(Clone, Copy)]
enum Read {
    Nothing,
    /// `len` bytes from the start of a slot to `to`.
    One(Source, *mut u8, usize),
    /// From every member's slot, the `block` bytes at `at`, one after the
    /// other into `to` (an alltoall).
    Gather { to: *mut u8, at: usize, block: usize },
}

/// An operation this process arrived at.
struct Arrived {
    turn: Turn,
    /// What to read once it is released, and where to.
    read: Read,
    spin: Option<(Arc<Arrivals>, SpinPolicy)>,
    /// We combined, and the reduction failed.
    error: Option<String>,
}

impl Arrived {
    /// Wait for the release (spinning without the lock, as host_inline.rs
    /// does, or handing the wait to the executor) and read.
    fn finish(self) -> R<()> {
        let Arrived { turn, read, spin, mut error } = self;
        let (area, op) = (turn.area.clone(), turn.op);
        let released = area.released(op) || spin.is_some_and(|(arrivals, policy)| spin_for_arrivals(&arrivals, &[(area.clone(), op)], None, policy) && area.released(op));
        if let Some(sizes) = released.then(|| area.differing_sizes(op)).flatten() {
            error = error.or(Some(sizes.mismatch()));
            area.set_turn(op + 1);
        } else if released {
            // SAFETY: released: the slots hold the operation's bytes until
            // every member started the operation two after it, which needs
            // us; `to` holds what is read into it (arrive).
            match read {
                Read::Nothing => {}
                Read::One(from, to, n) => {
                    let base = match from {
                        Source::Member(m) => area.contribution(m, op),
                        Source::Result => area.result(op),
                    };
                    unsafe { std::ptr::copy_nonoverlapping(base, to, n) };
                }
                Read::Gather { to, at, block } => {
                    for m in 0..turn.members {
                        unsafe { std::ptr::copy_nonoverlapping(area.contribution(m, op).add(at), to.add(m * block), block) };
                    }
                }
            }
            area.set_turn(op + 1);
        } else {
            let mut step = HostStep {
                host: HostOp { area, op },
                member: turn.member,
                members: turn.members,
                write: Few::None,
                combine: None,
                read: Few::None,
                gather: None,
                part: 0,
                pids: turn.pids,
                size: 0, // stated at arrival already
            };
            // SAFETY (both): as above; the blocking call waits for the step.
            let bytes = |to: *mut u8, n: usize| unsafe { UserBuf::new(to, n as u64, gridmpi_engine::sched::byte_type()) };
            match read {
                Read::Nothing => {}
                Read::One(from, to, n) => step.read.push((from, 0, bytes(to, n))),
                Read::Gather { to, at, block } => {
                    step.gather = Some(Gather { buf: bytes(to, block * turn.members), at: at as u64, block: block as u64 })
                }
            }
            let r = state::with(|st| {
                let r = st.rt.engine.host_adopt(Box::new(step));
                st.progress()?;
                Ok(r)
            })?;
            super::super::env::wait_engine(r)?;
            error = error.or(state::with(|st| Ok(st.rt.engine.take_host_error(r)))?);
        }
        error.map_or(Ok(()), |msg| Err(schedule_error(msg)))
    }
}
