//! Telling the user that a WAN link is down while the job waits for it.
//!
//! WAN connections carry `TCP_USER_TIMEOUT` = the outage budget
//! (`GRIDMPI_WAN_OUTAGE_BUDGET`, bootstrap.rs), so the kernel keeps
//! retransmitting through an outage instead of giving up after its retry
//! count, and traffic resumes by itself when the link is back. Meanwhile the
//! job only stalls; this watch says why. A blocked call looks at most once a
//! second (state::wait, before sleeping; while a link is reported down, at
//! every blocked call, so its return is told even if the rank then never
//! sleeps): a WAN connection with data sent
//! but not acknowledged for [`REPORT_AFTER`] counts as stalled, and each
//! rank reports per remote cluster when the stall begins, every
//! [`REPEAT`] while it lasts, and when the link is back.

use crate::clustermap::ClusterMap;
use crate::driver::Driver;
use gridmpi_engine::Pid;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// How long sent data may wait for an acknowledgment before we speak.
const REPORT_AFTER: Duration = Duration::from_secs(5);
/// How often a lasting outage is reported again.
const REPEAT: Duration = Duration::from_secs(60);
/// How often connections are looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);

pub struct OutageWatch {
    me: Pid,
    /// The remote clusters and the ranks in each (empty with one cluster).
    remote: Vec<(String, Vec<Pid>)>,
    budget: Option<Duration>,
    next_check: Instant,
    /// Per entry of `remote`: since when it has been reported down, and
    /// when it was last reported.
    down: Vec<Option<(Instant, Instant)>>,
    /// Per rank: since when its connection has held unacknowledged data
    /// with no acknowledgment coming. (The kernel's time since the last ack
    /// alone would count an idle period before the data was sent.)
    waiting_since: Vec<Option<Instant>>,
}

/// What `struct tcp_info` says of unacknowledged data: how much, and how
/// long ago an acknowledgment last came (ms).
fn unacked(fd: RawFd) -> Option<(u32, u32)> {
    let mut buf = [0u8; crate::trace::INFO_ROOM];
    let len = crate::trace::read_tcp_info(fd, &mut buf).ok()?;
    if len < 56 {
        return None;
    }
    let u32_at = |o: usize| u32::from_ne_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]);
    // tcpi_unacked at 24, tcpi_last_ack_recv at 52 (linux/tcp.h).
    Some((u32_at(24), u32_at(52)))
}

impl OutageWatch {
    pub fn new(me: Pid, map: &ClusterMap, budget: Option<Duration>) -> OutageWatch {
        let mine = map.cluster_of(me);
        let remote: Vec<(String, Vec<Pid>)> = (0..map.clusters() as u32)
            .filter(|&c| c != mine)
            .map(|c| (map.names[c as usize].clone(), (0..map.of_pid.len() as u32).filter(|&p| map.cluster_of(p) == c).collect()))
            .collect();
        let down = vec![None; remote.len()];
        let waiting_since = vec![None; map.of_pid.len()];
        OutageWatch { me, remote, budget, next_check: Instant::now(), down, waiting_since }
    }

    /// Some link is reported down (and not yet back).
    pub fn any_down(&self) -> bool {
        self.down.iter().any(|d| d.is_some())
    }

    /// Look at the WAN connections if a second has passed; report changes.
    pub fn check(&mut self, driver: &Driver, host: &str) {
        if self.remote.is_empty() {
            return;
        }
        let now = Instant::now();
        if now < self.next_check {
            return;
        }
        self.next_check = now + CHECK_EVERY;
        for (i, (name, pids)) in self.remote.iter().enumerate() {
            // The longest any connection to that cluster has waited for an ack.
            let mut waited: Option<Duration> = None;
            for &p in pids {
                let since = &mut self.waiting_since[p as usize];
                match driver.tcp_fd(p).and_then(unacked) {
                    Some((bytes, ack_ms)) if bytes > 0 && ack_ms as u64 >= CHECK_EVERY.as_millis() as u64 => {
                        let start = *since.get_or_insert(now - CHECK_EVERY.min(Duration::from_millis(ack_ms as u64)));
                        let w = (now - start).min(Duration::from_millis(ack_ms as u64));
                        waited = Some(waited.map_or(w, |x| x.max(w)));
                    }
                    _ => *since = None,
                }
            }
            let budget = self.budget.map_or_else(|| "the kernel's retry count".to_string(), |b| format!("{} s (GRIDMPI_WAN_OUTAGE_BUDGET)", b.as_secs()));
            match (waited.filter(|&w| w >= REPORT_AFTER), self.down[i]) {
                (Some(w), None) => {
                    eprintln!(
                        "GridMPI: rank {} ({host}): the WAN link to cluster {name} looks down: nothing acknowledged for {} s; waiting up to {budget}",
                        self.me,
                        w.as_secs()
                    );
                    self.down[i] = Some((now - w, now));
                }
                (Some(_), Some((since, last))) if now - last >= REPEAT => {
                    eprintln!(
                        "GridMPI: rank {} ({host}): the WAN link to cluster {name} is still down after {} s; waiting up to {budget}",
                        self.me,
                        (now - since).as_secs()
                    );
                    self.down[i] = Some((since, now));
                }
                (None, Some((since, _))) => {
                    eprintln!("GridMPI: rank {} ({host}): the WAN link to cluster {name} is back after {} s", self.me, (now - since).as_secs());
                    self.down[i] = None;
                }
                _ => {}
            }
        }
    }
}
