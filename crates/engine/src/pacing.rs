//! Pacing of connections, as one state machine (the way quinn-proto keeps
//! its pacer inside the connection).
//!
//! Collective schedules cap the sending rate to some peers while a WAN
//! phase runs ([`Engine::pace`]). Per peer:
//!
//! ```text
//!            cap                       cap / release (others remain)
//!  Free ───────────▶ Capped(rates) ◀──────────────┐
//!   ▲                  │  release (last)            │
//!   │ unsent = 0       ▼                            │
//!   └────────────── Lifting ─────── cap ────────────┘
//! ```
//!
//! Caps nest and the smallest applies. When the last cap is released the
//! rate is not lifted at once: what was written under the cap is still in
//! the socket, and lifting the cap would send it as a burst. The engine
//! lifts it once the driver reports (through [`Engine::handle_unsent`]) that
//! nothing is left unsent. Drain waits ([`Engine::drain`]) complete the same
//! way. Every change of the rate to apply is one [`Action::SetPace`].

use crate::engine::Action;
use crate::request::{ReqId, Status};
use crate::Engine;
use gridmpi_wire::Pid;
use std::collections::HashMap;
use std::time::Duration;

#[derive(Default)]
pub(crate) struct Pacing {
    /// Caps in force per peer (nested; the smallest applies).
    caps: HashMap<Pid, Vec<u64>>,
    /// Peers whose last cap was released, to be lifted once drained.
    lifting: Vec<Pid>,
    /// Requests completed once the peer's connection has nothing unsent.
    drains: Vec<(Pid, ReqId)>,
}

impl Pacing {
    /// The rate in force for `peer` (bytes/s), if capped.
    pub(crate) fn rate(&self, peer: Pid) -> Option<u64> {
        self.caps.get(&peer).and_then(|c| c.iter().min().copied())
    }

    /// Add a cap; returns the rate to apply.
    fn cap(&mut self, peer: Pid, rate: u64) -> u64 {
        self.lifting.retain(|&p| p != peer);
        self.caps.entry(peer).or_default().push(rate);
        self.rate(peer).expect("just capped")
    }

    /// Release one cap; returns the rate to apply now, if it changes now.
    fn release(&mut self, peer: Pid) -> Option<u64> {
        let caps = self.caps.get_mut(&peer)?;
        caps.pop();
        if caps.is_empty() {
            self.caps.remove(&peer);
            if !self.lifting.contains(&peer) {
                self.lifting.push(peer);
            }
            return None;
        }
        self.rate(peer)
    }
}

impl Engine {
    /// Cap the sending rate to `peer` at `bytes_per_sec` (Some), or release
    /// the latest cap (None).
    pub fn pace(&mut self, peer: Pid, bytes_per_sec: Option<u64>) {
        if peer == self.me {
            return;
        }
        let apply = match bytes_per_sec {
            Some(rate) => Some(self.pacing.cap(peer, rate)),
            None => self.pacing.release(peer),
        };
        if let Some(rate) = apply {
            self.actions.push_back(Action::SetPace { peer, bytes_per_sec: Some(rate) });
        }
    }

    /// A request that completes once what was handed to the transport for
    /// `peer` has left this host, not just the process.
    pub fn drain(&mut self, peer: Pid) -> ReqId {
        let req = self.external_request();
        self.pacing.drains.push((peer, req));
        req
    }

    /// Peers whose unsent bytes the engine waits on: report each with
    /// [`Engine::handle_unsent`] when progressing.
    pub fn unsent_watch(&self) -> impl Iterator<Item = Pid> + '_ {
        self.pacing.lifting.iter().copied().chain(self.pacing.drains.iter().map(|d| d.0))
    }

    pub fn watching_unsent(&self) -> bool {
        !self.pacing.lifting.is_empty() || !self.pacing.drains.is_empty()
    }

    /// The connection to `peer` holds `unsent` bytes not yet sent (0 for
    /// transports without a queue of their own, and for closed connections).
    pub fn handle_unsent(&mut self, peer: Pid, unsent: u64) {
        if unsent > 0 {
            return;
        }
        if let Some(i) = self.pacing.lifting.iter().position(|&p| p == peer) {
            self.pacing.lifting.swap_remove(i);
            self.actions.push_back(Action::SetPace { peer, bytes_per_sec: None });
        }
        let mut done = Vec::new();
        self.pacing.drains.retain(|&(p, r)| {
            if p == peer {
                done.push(r);
            }
            p != peer
        });
        for r in done {
            self.complete_external(r, Status::default());
        }
    }

    /// How long the driver may sleep before it must report unsent bytes
    /// again: nothing wakes a process when a socket's queue drains, so while
    /// the engine waits on one the driver looks again every millisecond
    /// (epoll's resolution); so it does while an RMA call waits for a lock
    /// word in shared memory, which no transport reports on.
    pub fn poll_timeout(&self) -> Option<Duration> {
        (self.watching_unsent() || self.rma_polls_shared()).then_some(Duration::from_millis(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EngineConfig;

    fn paces(e: &mut Engine) -> Vec<(Pid, Option<u64>)> {
        let mut out = Vec::new();
        while let Some(a) = e.poll_action() {
            if let Action::SetPace { peer, bytes_per_sec } = a {
                out.push((peer, bytes_per_sec));
            }
        }
        out
    }

    #[test]
    fn caps_nest_and_the_smallest_applies() {
        let mut e = Engine::new(0, 3, EngineConfig::default());
        e.pace(1, Some(1000));
        e.pace(1, Some(500));
        e.pace(1, Some(800));
        assert_eq!(paces(&mut e), vec![(1, Some(1000)), (1, Some(500)), (1, Some(500))]);
        e.pace(1, None);
        assert_eq!(paces(&mut e), vec![(1, Some(500))]);
        e.pace(1, None);
        assert_eq!(paces(&mut e), vec![(1, Some(1000))]);
        assert_eq!(e.pacing.rate(1), Some(1000));
    }

    #[test]
    fn the_last_release_lifts_only_once_drained() {
        let mut e = Engine::new(0, 3, EngineConfig::default());
        e.pace(2, Some(1000));
        e.pace(2, None);
        assert_eq!(paces(&mut e), vec![(2, Some(1000))]);
        assert_eq!(e.unsent_watch().collect::<Vec<_>>(), vec![2]);
        assert!(e.poll_timeout().is_some());
        e.handle_unsent(2, 4096);
        assert!(paces(&mut e).is_empty(), "lifted with data still unsent");
        e.handle_unsent(2, 0);
        assert_eq!(paces(&mut e), vec![(2, None)]);
        assert!(!e.watching_unsent());
        assert_eq!(e.poll_timeout(), None);
    }

    #[test]
    fn a_new_cap_while_lifting_cancels_the_lift() {
        let mut e = Engine::new(0, 3, EngineConfig::default());
        e.pace(1, Some(1000));
        e.pace(1, None);
        e.pace(1, Some(2000));
        e.handle_unsent(1, 0);
        assert_eq!(paces(&mut e), vec![(1, Some(1000)), (1, Some(2000))]);
        assert_eq!(e.pacing.rate(1), Some(2000));
    }

    #[test]
    fn drains_complete_when_their_peer_has_nothing_unsent() {
        let mut e = Engine::new(0, 3, EngineConfig::default());
        let a = e.drain(1);
        let b = e.drain(2);
        e.handle_unsent(1, 10);
        e.handle_unsent(2, 0);
        assert!(!e.is_complete(a));
        assert!(e.is_complete(b));
        e.handle_unsent(1, 0);
        assert!(e.is_complete(a));
        assert!(!e.watching_unsent());
    }

    #[test]
    fn releasing_without_a_cap_is_harmless() {
        let mut e = Engine::new(0, 2, EngineConfig::default());
        e.pace(1, None);
        assert!(paces(&mut e).is_empty());
        assert!(!e.watching_unsent());
    }
}
