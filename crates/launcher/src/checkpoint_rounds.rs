//! When a checkpointed job's checkpoints happen: one round at a time, a
//! round every `--checkpoint-interval` after the last one ended, the time
//! every rank has to freeze, and the end of a job told
//! `--checkpoint-and-stop`. The triggers themselves (SIGQUIT, the
//! interval) and the protocol are the job's and the PMI server's; this
//! only keeps the clock.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long every rank has to freeze, unless `--checkpoint-timeout` says.
pub const FREEZE_TIMEOUT: Duration = Duration::from_secs(60);
/// After `--checkpoint-and-stop`'s checkpoint, how long the ranks have to
/// exit before they are killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// A round in progress.
struct Current {
    seq: u64,
    started: Instant,
    /// When every rank had frozen (the images are being written).
    frozen: Option<Instant>,
}

pub struct Rounds {
    /// Where the checkpoints go (absolute).
    pub dir: PathBuf,
    /// The number the next checkpoint gets. Only a complete checkpoint
    /// advances it: an abandoned round's number (and directory, with
    /// whatever images it got) is the next round's, so the complete
    /// ones are numbered without gaps and `ckpt-(N-2)` is the one to remove.
    next_seq: u64,
    interval: Option<Duration>,
    timeout: Duration,
    pub and_stop: bool,
    current: Option<Current>,
    /// When the last round ended (at first: when the job started); the
    /// interval counts from there.
    idle_since: Instant,
    /// When the ranks were told to exit after the checkpoint (`--checkpoint-and-stop`).
    stopped_at: Option<Instant>,
    /// Whether the ranks still alive [`STOP_GRACE`] after that were killed.
    stop_enforced: bool,
    /// Why the last trigger was refused (said once, not at every interval).
    refused: Option<String>,
}

impl Rounds {
    pub fn new(dir: PathBuf, first_seq: u64, interval: Option<Duration>, timeout: Option<Duration>, and_stop: bool, now: Instant) -> Rounds {
        Rounds {
            dir,
            next_seq: first_seq,
            interval,
            timeout: timeout.unwrap_or(FREEZE_TIMEOUT),
            and_stop,
            current: None,
            idle_since: now,
            stopped_at: None,
            stop_enforced: false,
            refused: None,
        }
    }

    /// The number the next round gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The round in progress.
    pub fn in_progress(&self) -> Option<u64> {
        self.current.as_ref().map(|c| c.seq)
    }

    /// A round starts; its number.
    pub fn begin(&mut self, now: Instant) -> u64 {
        self.refused = None;
        self.current = Some(Current { seq: self.next_seq, started: now, frozen: None });
        self.next_seq
    }

    /// Every rank froze: how long it took.
    pub fn frozen(&mut self, now: Instant) -> Option<Duration> {
        let c = self.current.as_mut()?;
        c.frozen = Some(now);
        Some(now.saturating_duration_since(c.started))
    }

    /// The round ended: with a complete checkpoint, or abandoned.
    pub fn ended(&mut self, complete: bool, now: Instant) {
        if self.current.take().is_some() && complete {
            self.next_seq += 1;
        }
        self.idle_since = now;
    }

    /// A trigger was refused (a rank finishing, the job ending): the
    /// interval counts again from now. Whether `reason` is new since the
    /// last round or refusal (worth saying).
    pub fn skipped(&mut self, now: Instant, reason: &str) -> bool {
        self.idle_since = now;
        let new = self.refused.as_deref() != Some(reason);
        self.refused = Some(reason.to_string());
        new
    }

    /// The ranks were told to exit (`--checkpoint-and-stop`).
    pub fn stop(&mut self, now: Instant) {
        self.stopped_at = Some(now);
    }

    pub fn stopping(&self) -> bool {
        self.stopped_at.is_some()
    }

    /// Whether `--checkpoint-interval` calls for a round now.
    pub fn interval_due(&self, now: Instant) -> bool {
        self.interval_deadline().is_some_and(|t| now >= t)
    }

    /// The round in progress whose ranks have not all frozen in time:
    /// its number, and the timeout, once (the caller abandons it).
    pub fn freeze_overdue(&mut self, now: Instant) -> Option<(u64, Duration)> {
        let c = self.current.as_mut()?;
        if c.frozen.is_some() || now < c.started + self.timeout {
            return None;
        }
        // Said once even if the round is not ended at once.
        c.frozen = Some(now);
        Some((c.seq, self.timeout))
    }

    /// Whether the ranks told to stop had [`STOP_GRACE`] to exit and the
    /// stragglers must be killed now (true once).
    pub fn stop_overdue(&mut self, now: Instant) -> bool {
        match self.stopped_at {
            Some(t) if !self.stop_enforced && now >= t + STOP_GRACE => {
                self.stop_enforced = true;
                true
            }
            _ => false,
        }
    }

    /// The next moment one of the above may become true.
    pub fn next_deadline(&self) -> Option<Instant> {
        let freeze = self.current.as_ref().filter(|c| c.frozen.is_none()).map(|c| c.started + self.timeout);
        let stop = self.stopped_at.filter(|_| !self.stop_enforced).map(|t| t + STOP_GRACE);
        [self.interval_deadline(), freeze, stop].into_iter().flatten().min()
    }

    fn interval_deadline(&self) -> Option<Instant> {
        if self.current.is_some() || self.stopped_at.is_some() {
            return None;
        }
        self.interval.map(|i| self.idle_since + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_follow_the_interval_and_number_only_complete_checkpoints() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut r = Rounds::new(PathBuf::from("/ck"), 4, Some(s(30)), None, false, t0);
        assert_eq!(r.next_deadline(), Some(t0 + s(30)));
        assert!(!r.interval_due(t0 + s(29)));
        assert!(r.interval_due(t0 + s(30)));
        assert_eq!(r.begin(t0 + s(30)), 4);
        assert!(!r.interval_due(t0 + s(90)), "one round at a time");
        assert_eq!(r.next_deadline(), Some(t0 + s(90)), "the freeze timeout");
        assert_eq!(r.freeze_overdue(t0 + s(89)), None);
        assert_eq!(r.freeze_overdue(t0 + s(90)), Some((4, FREEZE_TIMEOUT)));
        assert_eq!(r.freeze_overdue(t0 + s(91)), None, "once");
        // Abandoned: the number is used again, the interval counts from the end.
        r.ended(false, t0 + s(91));
        assert_eq!((r.in_progress(), r.next_seq()), (None, 4));
        assert_eq!(r.next_deadline(), Some(t0 + s(121)));
        r.begin(t0 + s(121));
        assert_eq!(r.frozen(t0 + s(122)), Some(s(1)));
        assert_eq!(r.next_deadline(), None, "writing has no deadline");
        r.ended(true, t0 + s(130));
        assert_eq!(r.next_seq(), 5);
        assert!(r.skipped(t0 + s(140), "rank 1 is finishing"));
        assert_eq!(r.next_deadline(), Some(t0 + s(170)));
        assert!(!r.skipped(t0 + s(170), "rank 1 is finishing"), "said once");
        assert!(r.skipped(t0 + s(200), "the job is ending"));
    }

    #[test]
    fn a_stopped_job_has_its_stragglers_killed_once() {
        let t0 = Instant::now();
        let mut r = Rounds::new(PathBuf::from("/ck"), 1, Some(Duration::from_secs(5)), None, true, t0);
        r.begin(t0);
        r.ended(true, t0);
        r.stop(t0);
        assert!(r.stopping());
        assert!(!r.interval_due(t0 + Duration::from_secs(60)), "no round after the stop");
        assert_eq!(r.next_deadline(), Some(t0 + STOP_GRACE));
        assert!(!r.stop_overdue(t0 + Duration::from_secs(9)));
        assert!(r.stop_overdue(t0 + STOP_GRACE));
        assert!(!r.stop_overdue(t0 + STOP_GRACE));
        assert_eq!(r.next_deadline(), None);
    }
}
