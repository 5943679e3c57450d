//! A blocking collective that is one operation on its communicator's
//! shared-memory area (a barrier, a small broadcast or reduction among the
//! ranks of one host) is run by its caller, not by the schedule executor:
//! arrive under the lock, then wait for the release without it, and read.
//! A barrier then costs an atomic add, a look at one word and a lock
//! round; through the executor it also cost a schedule, a request and a
//! wake-up frame.
//!
//! The executor still takes over whenever waiting needs more than
//! spinning: when something else arrives meanwhile (other requests must
//! progress while we wait) or the spin time is up (the executor's waiting
//! can sleep, and marks us sleeping on the area so the last member wakes
//! us with a frame).

use super::*;
use crate::state::{spin_for_arrivals, SpinPolicy};
use gridmpi_engine::coll::host::HostStep;
use gridmpi_engine::sched::Schedule;
use gridmpi_engine::Engine;

/// A step this process arrived at and may wait for itself, and the steps
/// to run after it, in order (a bcast's pieces).
pub struct Inline {
    step: Box<HostStep>,
    rest: std::vec::IntoIter<Box<HostStep>>,
    /// The reduction failed (we were last): the call's error, once done.
    error: Option<String>,
    /// How to wait without the lock (None: hand over at once).
    spin: Option<(std::sync::Arc<gridmpi_transport::progress::Arrivals>, SpinPolicy)>,
}

/// Arrive at `s`'s only step if it is a host-area operation that may start
/// now, else give `s` back to start as usual.
pub fn try_start(st: &mut State, s: Schedule) -> R<Result<Inline, Schedule>> {
    // Traced collectives keep their start and finish records; in a
    // fault-tolerant job the executor is what abandons an operation a
    // failed member will never arrive at.
    if st.rt.tracer.is_some() || st.rt.fault_tolerant || st.rt.engine.ft_active() {
        return Ok(Err(s));
    }
    let (step, rest) = match st.rt.engine.host_step_alone(s) {
        Ok(steps) => steps,
        Err(s) => return Ok(Err(s)),
    };
    Ok(Ok(arrive(st, step, rest.into_iter())?))
}

/// Arrive at `step` (its turn has come).
fn arrive(st: &mut State, step: Box<HostStep>, rest: std::vec::IntoIter<Box<HostStep>>) -> R<Inline> {
    // SAFETY: a blocking call's buffers are valid until it returns, and it
    // returns only after reading every operation (finish).
    let error = unsafe { st.rt.engine.host_arrive(&step) }.err();
    if st.rt.engine.has_actions() {
        // Frames that wake members which sleep.
        st.progress()?;
    }
    let spin = SpinPolicy::allowed(st).then(|| (st.rt.arrivals.clone(), SpinPolicy::of(st)));
    Ok(Inline { step, rest, error, spin })
}

/// Wait for each release (called without the lock) and read; arrive at
/// the next step once this one is read.
pub fn finish(mut inline: Inline) -> R<()> {
    let mut failed = None;
    loop {
        let Inline { step, rest, error, spin } = inline;
        let (area, op) = (step.host.area.clone(), step.host.op);
        let released = area.released(op)
            || spin.is_some_and(|(arrivals, policy)| spin_for_arrivals(&arrivals, &[(area.clone(), op)], None, policy) && area.released(op));
        let read = if released {
            // SAFETY: released; our buffers are valid (try_start).
            unsafe { Engine::host_finish(&step) }.err()
        } else {
            let r = state::with(|st| {
                let r = st.rt.engine.host_adopt(step);
                st.progress()?;
                Ok(r)
            })?;
            super::super::env::wait_engine(r)?;
            state::with(|st| Ok(st.rt.engine.take_host_error(r)))?
        };
        // The others go on to the next steps whatever failed here (only
        // the last member of a reduction learns of its error): so do we.
        failed = failed.or(error).or(read);
        let mut rest = rest;
        match rest.next() {
            Some(next) => inline = state::with(|st| arrive(st, next, rest))?,
            None => return failed.map_or(Ok(()), |msg| Err(schedule_error(msg))),
        }
    }
}
