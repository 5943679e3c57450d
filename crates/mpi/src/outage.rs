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
//! [`REPEAT`] while it lasts, and when the link is back ([`News`]). The
//! runtime sends the news to gridmpirun, which says once per link what all
//! its ranks see (crates/launcher/src/outages.rs); under another launcher
//! each rank says it itself ([`News::line`]).

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

/// What a rank has to say about the WAN link to one remote cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct News {
    pub cluster: String,
    pub state: LinkState,
    /// How long the link has been down (for `Back`: how long it was).
    pub secs: u64,
    /// How long the job waits (GRIDMPI_WAN_OUTAGE_BUDGET, seconds); None:
    /// as long as the kernel retries.
    pub budget: Option<u64>,
}

/// How long the job waits, as a user reads it.
pub fn budget_words(budget: Option<u64>) -> String {
    budget.map_or_else(|| "the kernel's retry count".to_string(), |b| format!("{b} s (GRIDMPI_WAN_OUTAGE_BUDGET)"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    Down,
    StillDown,
    Back,
}

impl LinkState {
    pub fn word(self) -> &'static str {
        match self {
            LinkState::Down => "down",
            LinkState::StillDown => "still",
            LinkState::Back => "back",
        }
    }
}

impl News {
    /// The line a rank prints itself (when gridmpirun does not gather them).
    pub fn line(&self, me: Pid, host: &str) -> String {
        let (name, s, budget) = (&self.cluster, self.secs, budget_words(self.budget));
        match self.state {
            LinkState::Down => format!("GridMPI: rank {me} ({host}): the WAN link to cluster {name} looks down: nothing acknowledged for {s} s; waiting up to {budget}"),
            LinkState::StillDown => format!("GridMPI: rank {me} ({host}): the WAN link to cluster {name} is still down after {s} s; waiting up to {budget}"),
            LinkState::Back => format!("GridMPI: rank {me} ({host}): the WAN link to cluster {name} is back after {s} s"),
        }
    }
}

pub struct OutageWatch {
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
    /// Our cluster's name.
    mine: String,
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
        let mine = map.names.get(mine as usize).cloned().unwrap_or_default();
        OutageWatch { remote, budget, next_check: Instant::now(), down, waiting_since, mine }
    }

    /// Some link is reported down (and not yet back).
    pub fn any_down(&self) -> bool {
        self.down.iter().any(|d| d.is_some())
    }

    /// Look at the WAN connections if a second has passed; what changed.
    pub fn check(&mut self, driver: &Driver) -> Vec<News> {
        let mut news = Vec::new();
        if self.remote.is_empty() {
            return news;
        }
        let now = Instant::now();
        if now < self.next_check {
            return news;
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
            let budget = self.budget.map(|b| b.as_secs());
            let say = |state, secs: u64| News { cluster: name.clone(), state, secs, budget };
            match (waited.filter(|&w| w >= REPORT_AFTER), self.down[i]) {
                (Some(w), None) => {
                    news.push(say(LinkState::Down, w.as_secs()));
                    self.down[i] = Some((now - w, now));
                }
                (Some(_), Some((since, last))) if now - last >= REPEAT => {
                    news.push(say(LinkState::StillDown, (now - since).as_secs()));
                    self.down[i] = Some((since, now));
                }
                (None, Some((since, _))) => {
                    news.push(say(LinkState::Back, (now - since).as_secs()));
                    self.down[i] = None;
                }
                _ => {}
            }
        }
        news
    }

    /// This rank's own cluster (its name, for the news).
    pub fn my_cluster(&self) -> &str {
        &self.mine
    }
}
