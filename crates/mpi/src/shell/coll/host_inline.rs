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

/// A step this process arrived at and may wait for itself.
pub struct Inline {
    step: Box<HostStep>,
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
    let step = match st.rt.engine.host_step_alone(s) {
        Ok(step) => step,
        Err(s) => return Ok(Err(s)),
    };
    // SAFETY: a blocking call's buffers are valid until it returns, and it
    // returns only after reading the operation (finish).
    let error = unsafe { st.rt.engine.host_arrive(&step) }.err();
    if st.rt.engine.has_actions() {
        // Frames that wake members which sleep.
        st.progress()?;
    }
    let spin = SpinPolicy::allowed(st).then(|| (st.rt.arrivals.clone(), SpinPolicy::of(st)));
    Ok(Ok(Inline { step, error, spin }))
}

/// Wait for the release (called without the lock) and read.
pub fn finish(inline: Inline) -> R<()> {
    let Inline { step, error, spin } = inline;
    let (area, op) = (step.host.area.clone(), step.host.op);
    let released = area.released(op)
        || spin.is_some_and(|(arrivals, policy)| spin_for_arrivals(&arrivals, &[(area.clone(), op)], policy) && area.released(op));
    if released {
        // SAFETY: released; our buffers are valid (try_start).
        unsafe { Engine::host_finish(&step) };
    } else {
        let r = state::with(|st| {
            let r = st.rt.engine.host_adopt(step);
            st.progress()?;
            Ok(r)
        })?;
        super::super::env::wait_engine(r)?;
    }
    error.map_or(Ok(()), |msg| Err(schedule_error(msg)))
}
