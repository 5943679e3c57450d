//! Pacing that follows the WAN when its capacity changes mid-job.
//!
//! Collective schedules pace WAN flows at their share of the bandwidth that
//! was measured at MPI_Init or given ([`gridmpi_engine::sched::Sites`]).
//! When the WAN later carries less (its rate was cut, another job's traffic
//! crosses it), flows paced by the old figure overflow the bottleneck's queue
//! as if unpaced: drops, retransmissions, timeouts. When it carries more,
//! pacing by the old figure leaves it idle. So every paced *episode* of a
//! WAN connection is watched, from the first cap the engine puts on the
//! connection to the moment the driver lifts it (once everything written
//! under the caps has left this host), in slices of at most [`SLICE`] (a
//! large alltoall's episode lasts seconds; the WAN must be followed within
//! a few round trips), and per remote cluster a factor is kept that the
//! driver applies to every rate the engine asks for:
//!
//! - **by the queue** (whenever the kernel reports RTTs, so on Linux): a
//!   slice whose packets waited more than [`QUEUE_HIGH`] in queues on the
//!   way (smoothed RTT over the least, less the packet interval of a
//!   paced flow, which delayed acknowledgments add; the queue at the
//!   slice's end, [`QUEUE_WEIGHT`]) found a standing queue
//!   at the bottleneck: the factor takes a step down ([`QUEUE_CUT`], or
//!   a smaller [`QUEUE_TRIM`] where its last step up ran into the queue);
//!   under [`QUEUE_LOW`], a step up, added, small at first
//!   ([`QUEUE_CREEP`]) and growing while they come in a row
//!   ([`QUEUE_GAIN`]), to the start-up bandwidth at most (added up,
//!   multiplied down: the ranks' factors come together). One step a slice, judged only by slices paced wholly at the
//!   factor as it is (and [`QUEUE_SLICE`] long), and a new factor applies
//!   to every connection at once. The queue is the one signal every rank
//!   of a cluster sees alike (losses of a drop-tail queue fall on some
//!   flows and not others), so ranks step together. The loss rules below
//!   then only apply where RTTs are not known.
//! - **down**: a slice that lost data (it retransmitted more than
//!   [`LOSS`] of what it sent, and [`LOST_BYTES`] at least) and reached
//!   less than [`DOWN_BELOW`] of its rate: the WAN carries no more than
//!   that now. The factor takes the ratio (at most [`MAX_CUT`] at once).
//!   Loss at the rate given changes nothing (the WAN's noise, or a flow a
//!   little over its share: a small cost, where cutting at every loss
//!   drove the factor down to a sixth on the testbed).
//! - **up**: a link below its start-up bandwidth ([`MAX_FACTOR`]) that
//!   lost nothing for a quiet time ([`LONGEST_WAIT`] after a cut,
//!   [`FIRST_WAIT`] after a successful probe) is probed: the slices that
//!   start then are paced [`PROBE_GAIN`] times faster. If together they
//!   reached that rate without loss, the factor keeps the gain; if not,
//!   the next probe waits twice as long (up to [`LONGEST_WAIT`]).
//!
//! Off by default (`GRIDMPI_WAN_FOLLOW`): measured on the testbed
//! (bench/wan/rate_change.py), by losses, ranks judging from their own
//! connections over a drop-tail queue that shares losses unevenly cut at
//! different times and by different amounts, and their factors wandered
//! below the bottleneck (74% of a halved WAN); by the queue, the ranks'
//! factors stay within about 0.1 of each other but swing together
//! between 0.4 and 0.7 of the start-up rates around the bottleneck's
//! share, and the calls move 81-85% of it with a timeout after the first
//! 2 s in one job of five, where pacing by the start-up figure lets the
//! flows' windows fill it (86-90%) at up to two timeouts a job;
//! docs/grid.md has the numbers.
//!
//! Each rank judges from its own connections and the factor is its own:
//! schedules (which flows are paced, rounds, algorithms) never depend on it,
//! only the rates do, so ranks need not agree on it.
//!
//! Sans-IO: the driver reads the kernel's counters (TCP_INFO) and passes
//! them in as [`Counters`]; time is passed in; changes come out of
//! [`WanRate::poll_change`].

use gridmpi_wire::Pid;
use std::time::{Duration, Instant};

/// Retransmitted bytes above this share of the bytes sent mean the slice
/// overflowed the bottleneck. (Paced flows that fit lose nothing on the
/// testbed; a reordering network or a rare drop stays below.)
pub const LOSS: f64 = 0.02;
/// ... and at least this much (four full packets): in a slice of a slowly
/// paced flow one packet is a few percent, and a single loss says little.
pub const LOST_BYTES: u64 = 4 * 1448;
/// A lossy slice that reached less than this share of its rate was
/// limited by the WAN, not by its pacing.
pub const DOWN_BELOW: f64 = 0.6;
/// The factor is never cut by more than this at once.
pub const MAX_CUT: f64 = 0.5;
/// How much faster a probe paces.
pub const PROBE_GAIN: f64 = 1.25;
/// A probe is a success when it reached this share of its rate.
pub const PROBE_REACHED: f64 = 0.9;
/// Quiet time before the next probe after a successful one.
pub const FIRST_WAIT: Duration = Duration::from_millis(500);
/// The quiet time after a cut, and the longest between probes.
pub const LONGEST_WAIT: Duration = Duration::from_secs(2);
/// An episode is judged every this long (and at its end).
pub const SLICE: Duration = Duration::from_millis(250);
/// How often the driver looks for slices that are due.
pub const TICK: Duration = Duration::from_millis(10);
/// Slices shorter than this, or sending less than [`SHORTEST_BYTES`],
/// say nothing about the WAN (a few round trips of start-up dominate).
pub const SHORTEST: Duration = Duration::from_millis(20);
pub const SHORTEST_BYTES: u64 = 16 * 1024;
/// The factor stays within these bounds.
pub const MIN_FACTOR: f64 = 1.0 / 64.0;
/// Probes never take the rates above the bandwidth measured at MPI_Init or
/// given (paced at its full measure, the rest of a WAN's capacity is TCP's
/// to find).
pub const MAX_FACTOR: f64 = 1.0;
/// A slice whose connections waited longer than this in queues on the
/// way (RTT over the connection's least) found a standing queue at the
/// bottleneck: the cluster sends more than the WAN carries. Measured on
/// the testbed (10 ms one-way, 40-packet queue, 1 MiB alltoalls): 2.5-5
/// ms at 100 Mbit/s paced by a start-up figure that read over it, 9-12
/// ms once the WAN was halved; every rank's connections see the same
/// queue, so all ranks cut in the same slices, where losses hit some
/// ranks' flows and not others'.
pub const QUEUE_HIGH: Duration = Duration::from_millis(2);
/// ... and below this the queue is empty enough to send faster.
pub const QUEUE_LOW: Duration = Duration::from_millis(1);
/// The factor's step down on a standing queue. (Steps of 0.85 and 1.1
/// swung it between 0.37 and 0.53 of the start-up rate on the halved
/// testbed WAN; a cut in proportion to the queue delay swung it further.)
pub const QUEUE_CUT: f64 = 0.9;
/// The step down on a queue the last step up ran into: the WAN's capacity
/// is then known to within that step, and a full cut would leave it a
/// tenth idle until the steps up found it again (with full cuts the
/// factor swung between 0.47 and 0.54 of the start-up rate on the halved
/// testbed WAN, and calls at the bottom moved under 85% of it).
pub const QUEUE_TRIM: f64 = 0.95;
/// The first step up after a step down (a share of the start-up rate,
/// added): the WAN was full just above.
pub const QUEUE_CREEP: f64 = 0.01;
/// The steps up after it, added: the n-th in a row (counting the creep)
/// is QUEUE_GAIN x (n-1), n-1 at most [`QUEUE_GAIN_STEPS`]. Added, not
/// multiplied: steps down are multiplied, so a rank whose factor stands
/// higher than another's comes down by more at every cut, and the ranks
/// of a cluster, each judging on its own, come together. Multiplied
/// both ways, steps kept any gap between them: on the testbed with the
/// WAN halved, the ranks' factors stood 0.12-0.23 apart on average and
/// up to 0.5 (one rank at 0.35 while another was at 0.7); added, 0.10-0.13
/// and at most 0.21. (Up to four growing steps, 1.05^4 multiplied or
/// 0.12 added, overshot to 0.7-0.9 of the start-up rate; two keep the
/// top near 0.7.)
pub const QUEUE_GAIN: f64 = 0.03;
pub const QUEUE_GAIN_STEPS: u32 = 2;
/// Queue samples a slice needs to be judged by them, and how long it
/// must be: a queue takes a round trip or two to show a step.
pub const QUEUE_SAMPLES: u32 = 3;
pub const QUEUE_SLICE: Duration = Duration::from_millis(150);
/// A slice is judged by its queue at the end, an average of its samples
/// that weighs each new one by this (the last 50 ms or so): a queue
/// still draining from before a cut is not a reason to cut again.
pub const QUEUE_WEIGHT: f64 = 0.2;
/// A full packet's payload, for a paced flow's packet interval.
const PACKET: u64 = 1448;

/// What the kernel counted on one connection (TCP_INFO), at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counters {
    /// Bytes sent, retransmissions included (`tcpi_bytes_sent`).
    pub bytes_sent: u64,
    /// Bytes retransmitted (`tcpi_bytes_retrans`).
    pub bytes_retrans: u64,
    /// Microseconds with data outstanding (`tcpi_busy_time`); 0 if the
    /// kernel does not say.
    pub busy_us: u64,
    /// Microseconds the connection's packets now wait in queues on the
    /// way: smoothed RTT less the least seen (`tcpi_rtt - tcpi_min_rtt`);
    /// None if the kernel does not say.
    pub queue_us: Option<u64>,
}

/// A change of one link's factor, for the debug channel.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The remote cluster.
    pub cluster: u32,
    pub from: f64,
    pub to: f64,
    /// Why, in words ("a paced slice lost 15.0% of 77 KB and reached 0.44
    /// of its rate").
    pub why: String,
}

/// One connection's paced episode, as its current slice.
struct Episode {
    cluster: u32,
    /// When the slice started.
    started: Instant,
    /// The rate the engine asked for (bytes/s).
    requested: u64,
    /// When `rate` was applied.
    since: Instant,
    /// The rate applied now (bytes/s).
    rate: u64,
    /// Σ rate × seconds so far, for the mean rate of the slice.
    allowed: f64,
    base: Option<Counters>,
    /// The link's factor when the slice started (times the probe gain,
    /// if it probes): what its rates are scaled by.
    factor: f64,
    /// The probe it belongs to.
    probe: Option<u64>,
    /// The queue delay by the slice's samples so far (µs, weighted
    /// toward the latest by [`QUEUE_WEIGHT`]), and how many were taken.
    queue_now: f64,
    queue_n: u32,
}

/// A probe under way: its slices, and what they did.
struct Probe {
    id: u64,
    started: Instant,
    /// Slices of the probe not yet ended.
    open: u32,
    /// Slices judged, the sum of their reached/rate ratios, and whether
    /// any lost data.
    judged: u32,
    ratios: f64,
    lossy: bool,
    /// The factor without the gain.
    factor: f64,
}

struct Link {
    factor: f64,
    /// Since when the link lost nothing (or last changed).
    quiet_since: Instant,
    wait: Duration,
    probe: Option<Probe>,
    /// Once slices carry queue delays, they steer the factor (and no
    /// probes start).
    by_queue: bool,
    /// When the queue delay last moved the factor.
    decided: Instant,
    /// Steps up in a row.
    ups: u32,
    /// The queue's last move of the factor was up: a standing queue now
    /// is the step's doing, not a WAN that carries less.
    climbed: bool,
}

/// Per remote cluster, the factor WAN rates are scaled by.
pub struct WanRate {
    /// The remote cluster each peer is in; None for peers of this cluster.
    cluster_of: Vec<Option<u32>>,
    links: Vec<Link>,
    episodes: Vec<Option<Episode>>,
    next_probe: u64,
    changes: Vec<Change>,
    /// When following began (for the debug channel's times).
    began: Instant,
    /// When slices were last looked at.
    ticked: Instant,
}

/// How an ended slice went.
#[derive(Clone, Copy, Debug)]
struct Outcome {
    /// What it reached over what its rate allowed.
    ratio: f64,
    lossy: bool,
    loss: f64,
    sent: u64,
    /// The queue delay at the slice's end, if sampled enough.
    queue: Option<Duration>,
}

impl WanRate {
    /// `cluster_of[pid]`: the cluster of every peer; `me_cluster` this
    /// rank's. Only peers in other clusters are watched.
    pub fn new(cluster_of: &[u32], me_cluster: u32, now: Instant) -> WanRate {
        let n = cluster_of.iter().copied().max().map_or(0, |m| m as usize + 1);
        let links = (0..n).map(|_| Link { factor: 1.0, quiet_since: now, wait: FIRST_WAIT, probe: None, by_queue: false, decided: now, ups: 0, climbed: false }).collect();
        WanRate {
            cluster_of: cluster_of.iter().map(|&c| (c != me_cluster).then_some(c)).collect(),
            links,
            episodes: cluster_of.iter().map(|_| None).collect(),
            next_probe: 0,
            changes: Vec::new(),
            began: now,
            ticked: now,
        }
    }

    /// How long it has been following (since MPI_Init or the restart).
    pub fn age(&self) -> Duration {
        self.began.elapsed()
    }

    /// Whether rates to `peer` are scaled (it is across the WAN).
    pub fn watches(&self, peer: Pid) -> bool {
        self.cluster_of.get(peer as usize).is_some_and(|c| c.is_some())
    }

    /// The factor toward `cluster`.
    pub fn factor(&self, cluster: u32) -> f64 {
        self.links.get(cluster as usize).map_or(1.0, |l| l.factor)
    }

    /// The engine asks to pace `peer` at `requested` (None: lift). Returns
    /// the rate to apply. `counters` are the connection's now (None if they
    /// cannot be read: the episode is then not judged).
    pub fn pace(&mut self, peer: Pid, requested: Option<u64>, now: Instant, counters: Option<Counters>) -> Option<u64> {
        let Some(cluster) = self.cluster_of.get(peer as usize).copied().flatten() else { return requested };
        let p = peer as usize;
        match (requested, self.episodes[p].as_mut()) {
            (Some(r), Some(ep)) => {
                ep.allowed += ep.rate as f64 * now.saturating_duration_since(ep.since).as_secs_f64();
                ep.since = now;
                ep.requested = r;
                ep.rate = scale(r, ep.factor);
                Some(ep.rate)
            }
            (Some(r), None) => {
                let (factor, probe) = self.slice_factor(cluster, now);
                let rate = scale(r, factor);
                self.episodes[p] = Some(Episode::new(cluster, now, r, rate, counters, factor, probe));
                Some(rate)
            }
            (None, Some(_)) => {
                let ep = self.episodes[p].take().expect("matched");
                self.end_slice(ep, now, counters);
                None
            }
            (None, None) => None,
        }
    }

    /// Whether slices may be due: at most every [`TICK`].
    pub fn due(&mut self, now: Instant) -> bool {
        if now.saturating_duration_since(self.ticked) < TICK || self.episodes.iter().all(|e| e.is_none()) {
            return false;
        }
        self.ticked = now;
        true
    }

    /// A peer in `cluster` (to name it).
    pub fn a_peer_in(&self, cluster: u32) -> Option<Pid> {
        self.cluster_of.iter().position(|&c| c == Some(cluster)).map(|p| p as Pid)
    }

    /// Peers with a paced episode under way (to [`WanRate::tick`]).
    pub fn paced_peers(&self) -> impl Iterator<Item = Pid> + '_ {
        self.episodes.iter().enumerate().filter(|(_, e)| e.is_some()).map(|(p, _)| p as Pid)
    }

    /// Judge the slice of `peer`'s episode if it is [`SLICE`] old, and
    /// start the next; returns the rate to apply now if it changes (the
    /// factor moved, or a probe starts or ends).
    pub fn tick(&mut self, peer: Pid, now: Instant, counters: Option<Counters>) -> Option<u64> {
        let ep = self.episodes.get_mut(peer as usize)?.as_mut()?;
        if let Some(q) = counters.and_then(|c| c.queue_us) {
            // A paced flow's packets leave one per interval, and a receiver
            // acknowledges every second one: the first of two waits an
            // interval for its acknowledgment, which is no queue (at a
            // sixteenth of 100 Mbit/s that is 2 ms; counted as queue, it
            // cut the factor further the lower it went).
            let interval_us = (PACKET as f64 / ep.rate.max(1) as f64 * 1e6) as u64;
            let q = q.saturating_sub(interval_us) as f64;
            ep.queue_now = if ep.queue_n == 0 { q } else { ep.queue_now + QUEUE_WEIGHT * (q - ep.queue_now) };
            ep.queue_n += 1;
        }
        // A factor moved by the queue applies at once: a slice paced by the
        // old one would show the old queue and cut again.
        let link = &self.links[ep.cluster as usize];
        let moved = link.by_queue && ep.probe.is_none() && ep.factor != link.factor;
        if now.saturating_duration_since(ep.started) < SLICE && !moved {
            return None;
        }
        let (cluster, requested, applied) = (ep.cluster, ep.requested, ep.rate);
        let ended = self.episodes[peer as usize].take().expect("checked");
        self.end_slice(ended, now, counters);
        let (factor, probe) = self.slice_factor(cluster, now);
        let rate = scale(requested, factor);
        self.episodes[peer as usize] = Some(Episode::new(cluster, now, requested, rate, counters, factor, probe));
        (rate != applied).then_some(rate)
    }

    fn end_slice(&mut self, mut ep: Episode, now: Instant, counters: Option<Counters>) {
        ep.allowed += ep.rate as f64 * now.saturating_duration_since(ep.since).as_secs_f64();
        let outcome = match (ep.base, counters) {
            (Some(a), Some(b)) => judge(&ep, a, b, now),
            _ => None,
        };
        self.ended(ep, outcome, now);
    }

    /// The next change of a link's factor, if any.
    pub fn poll_change(&mut self) -> Option<Change> {
        (!self.changes.is_empty()).then(|| self.changes.remove(0))
    }

    /// The factor a new slice toward `cluster` is paced by, starting a
    /// probe when the link has been quiet long enough.
    fn slice_factor(&mut self, cluster: u32, now: Instant) -> (f64, Option<u64>) {
        let link = &mut self.links[cluster as usize];
        if let Some(pr) = link.probe.as_mut() {
            // Slices that start soon after the probe join it; later ones
            // wait for its verdict at the factor it started from.
            if now.saturating_duration_since(pr.started) < SLICE {
                pr.open += 1;
                return ((pr.factor * PROBE_GAIN).min(MAX_FACTOR), Some(pr.id));
            }
            return (pr.factor, None);
        }
        if !link.by_queue && now.saturating_duration_since(link.quiet_since) >= link.wait && link.factor < MAX_FACTOR {
            let id = self.next_probe;
            self.next_probe += 1;
            link.probe = Some(Probe { id, started: now, open: 1, judged: 0, ratios: 0.0, lossy: false, factor: link.factor });
            return ((link.factor * PROBE_GAIN).min(MAX_FACTOR), Some(id));
        }
        (link.factor, None)
    }

    fn ended(&mut self, ep: Episode, outcome: Option<Outcome>, now: Instant) {
        let cluster = ep.cluster;
        let link = &mut self.links[cluster as usize];
        if let Some(id) = ep.probe {
            let Some(pr) = link.probe.as_mut().filter(|pr| pr.id == id) else { return };
            pr.open -= 1;
            if let Some(o) = outcome {
                pr.judged += 1;
                pr.ratios += o.ratio;
                pr.lossy |= o.lossy;
            }
            if pr.open > 0 {
                return;
            }
            let pr = link.probe.take().expect("filtered");
            link.quiet_since = now;
            let mean = if pr.judged > 0 { pr.ratios / pr.judged as f64 } else { 0.0 };
            if pr.judged > 0 && !pr.lossy && mean >= PROBE_REACHED {
                let from = link.factor;
                link.factor = (pr.factor * PROBE_GAIN).min(MAX_FACTOR);
                link.wait = FIRST_WAIT;
                let why = format!("{} paced slices reached {:.2} of a rate {PROBE_GAIN}x higher without loss", pr.judged, mean);
                self.changes.push(Change { cluster, from, to: link.factor, why });
            } else {
                // Nothing learned, or the WAN is full: ask again later.
                link.wait = (link.wait * 2).min(LONGEST_WAIT);
            }
            return;
        }
        let Some(o) = outcome else { return };
        if let Some(q) = o.queue {
            return self.follow_queue(cluster, q, ep.started, now);
        }
        // Where the queue steers, a slice too short to show it says
        // nothing (its losses included: the loss rules are for where RTTs
        // are not known).
        if link.by_queue || !o.lossy {
            return;
        }
        // Loss puts probing off.
        link.quiet_since = now;
        // Loss at the rate given is the WAN's noise or a flow a little over
        // its share; only a slice held well below its rate shows less room.
        if o.ratio >= DOWN_BELOW {
            return;
        }
        // After a cut the other ranks' flows come down too, over a few
        // slices; a probe before that would find room that is not there.
        link.wait = LONGEST_WAIT;
        let reached = o.ratio.max(MAX_CUT);
        let to = (ep.factor * reached).max(MIN_FACTOR);
        if to < link.factor {
            let from = link.factor;
            link.factor = to;
            let why = format!("a paced slice lost {:.1}% of {} KB and reached {:.2} of its rate", o.loss * 100.0, o.sent / 1000, o.ratio);
            self.changes.push(Change { cluster, from, to, why });
        }
    }
}

impl WanRate {
    /// A slice toward `cluster`, begun at `started`, saw queue delay `q`:
    /// a standing queue cuts the factor a step, an empty one raises it a
    /// step. Only slices paced wholly by the factor as it is now count (a
    /// rank's connections to a cluster share the queue, and the queue needs
    /// a slice to show a step), so it moves at most one step a slice.
    fn follow_queue(&mut self, cluster: u32, q: Duration, started: Instant, now: Instant) {
        let link = &mut self.links[cluster as usize];
        link.by_queue = true;
        if started < link.decided {
            return;
        }
        let (to, why) = if q > QUEUE_HIGH {
            link.ups = 0;
            let cut = if link.climbed { QUEUE_TRIM } else { QUEUE_CUT };
            ((link.factor * cut).max(MIN_FACTOR), "a standing queue")
        } else if q < QUEUE_LOW {
            // Each step up in a row is larger: a WAN given back its rate is
            // found in a few slices, one near the rate in small steps.
            link.ups = (link.ups + 1).min(QUEUE_GAIN_STEPS + 1);
            let step = if link.ups == 1 { QUEUE_CREEP } else { QUEUE_GAIN * (link.ups - 1) as f64 };
            ((link.factor + step).min(MAX_FACTOR), "an empty queue")
        } else {
            link.ups = 0;
            return;
        };
        if to == link.factor {
            return;
        }
        link.climbed = to > link.factor;
        let from = link.factor;
        link.factor = to;
        link.decided = now;
        let why = format!("{why}: a paced slice's packets waited {:.1} ms on the way", q.as_secs_f64() * 1e3);
        self.changes.push(Change { cluster, from, to, why });
    }
}

impl Episode {
    fn new(cluster: u32, now: Instant, requested: u64, rate: u64, base: Option<Counters>, factor: f64, probe: Option<u64>) -> Episode {
        Episode { cluster, started: now, requested, since: now, rate, allowed: 0.0, base, factor, probe, queue_now: 0.0, queue_n: 0 }
    }
}

fn scale(rate: u64, factor: f64) -> u64 {
    ((rate as f64 * factor) as u64).max(1)
}

/// How a slice went, from the counters at its start and end; None when
/// it was too short or small to say (or the connection was replaced).
fn judge(ep: &Episode, a: Counters, b: Counters, now: Instant) -> Option<Outcome> {
    let wall = now.saturating_duration_since(ep.started);
    if b.bytes_sent < a.bytes_sent || b.bytes_retrans < a.bytes_retrans || wall < SHORTEST {
        return None;
    }
    let sent = b.bytes_sent - a.bytes_sent;
    let retrans = (b.bytes_retrans - a.bytes_retrans).min(sent);
    let fresh = sent - retrans;
    if fresh < SHORTEST_BYTES || ep.allowed <= 0.0 {
        return None;
    }
    // The time the connection had data out (the kernel's busy time) when
    // known, rather than the episode's: a cap may sit on an idle connection
    // while the rank waits for others.
    let busy = Duration::from_micros(b.busy_us.saturating_sub(a.busy_us));
    let span = if busy >= SHORTEST && busy < wall { busy } else { wall };
    let mean_rate = ep.allowed / wall.as_secs_f64();
    let reached = fresh as f64 / span.as_secs_f64();
    let loss = retrans as f64 / sent as f64;
    let queue = (ep.queue_n >= QUEUE_SAMPLES && wall >= QUEUE_SLICE).then(|| Duration::from_micros(ep.queue_now as u64));
    Some(Outcome { ratio: reached / mean_rate, lossy: loss > LOSS && retrans >= LOST_BYTES, loss, sent, queue })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    /// A rank of cluster 0 with peers 0-1 in its cluster, 2-3 in cluster 1.
    fn rank() -> (WanRate, Instant) {
        let t0 = Instant::now();
        (WanRate::new(&[0, 0, 1, 1], 0, t0), t0)
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// One paced episode toward `peer` from `at` for `len`, asking `rate`:
    /// the connection sends `reached` (bytes/s) and retransmits `lost` of
    /// it. Returns the rate applied.
    fn episode(w: &mut WanRate, peer: Pid, at: Instant, len: Duration, rate: u64, reached: f64, lost: f64, base: &mut Counters) -> u64 {
        let applied = w.pace(peer, Some(rate), at, Some(*base)).unwrap();
        let fresh = reached * len.as_secs_f64();
        let retrans = fresh * lost / (1.0 - lost);
        base.bytes_sent += (fresh + retrans) as u64;
        base.bytes_retrans += retrans as u64;
        base.busy_us += len.as_micros() as u64;
        assert_eq!(w.pace(peer, None, at + len, Some(*base)), None);
        applied
    }

    #[test]
    fn peers_of_the_own_cluster_are_not_touched() {
        let (mut w, t0) = rank();
        assert!(!w.watches(1) && w.watches(2) && !w.watches(9));
        assert_eq!(w.pace(1, Some(5 * MB), t0, None), Some(5 * MB));
        assert_eq!(w.pace(1, None, t0 + ms(100), None), None);
        assert_eq!(w.pace(2, Some(5 * MB), t0, None), Some(5 * MB));
    }

    #[test]
    fn a_lossy_episode_below_its_rate_lowers_the_factor_to_what_it_reached() {
        let (mut w, t0) = rank();
        let mut c = Counters::default();
        // Paced at 6 MB/s, the WAN let through 3.3 MB/s and 5% was lost.
        episode(&mut w, 2, t0, ms(200), 6 * MB, 3.3e6, 0.05, &mut c);
        let f = w.factor(1);
        assert!((f - 0.55).abs() < 0.01, "{f}");
        let ch = w.poll_change().expect("a change");
        assert_eq!((ch.cluster, ch.from), (1, 1.0));
        assert!(ch.why.contains("lost 5.0%"), "{}", ch.why);
        assert_eq!(w.poll_change(), None);
        // The next episode is paced by it, both peers of that cluster.
        assert_eq!(w.pace(3, Some(6 * MB), t0 + ms(210), None), Some((6.0e6 * f) as u64));
        // The other cluster's... this rank's own is untouched.
        assert_eq!(w.factor(0), 1.0);
    }

    #[test]
    fn loss_at_the_rate_given_changes_nothing() {
        let (mut w, t0) = rank();
        let mut c = Counters::default();
        episode(&mut w, 2, t0, ms(200), 6 * MB, 6.0e6, 0.03, &mut c);
        assert_eq!(w.factor(1), 1.0);
        // Nor does a loss of three packets below the rate.
        episode(&mut w, 2, t0 + ms(200), ms(200), 6 * MB, 3.0e6, 3.0 * 1448.0 / 600_000.0, &mut c);
        assert_eq!(w.factor(1), 1.0);
    }

    #[test]
    fn slow_without_loss_is_not_the_wan() {
        // A rank that did not keep its socket full (descheduled, waiting)
        // sends below its rate but loses nothing: no change.
        let (mut w, t0) = rank();
        let mut c = Counters::default();
        episode(&mut w, 2, t0, ms(200), 6 * MB, 2.0e6, 0.0, &mut c);
        assert_eq!(w.factor(1), 1.0);
        assert_eq!(w.poll_change(), None);
    }

    #[test]
    fn a_deep_loss_is_cut_by_half_at_most_and_short_episodes_say_nothing() {
        let (mut w, t0) = rank();
        let mut c = Counters::default();
        episode(&mut w, 2, t0, ms(10), 6 * MB, 0.5e6, 0.2, &mut c);
        assert_eq!(w.factor(1), 1.0, "10 ms is too short to judge");
        episode(&mut w, 2, t0 + ms(20), ms(200), 6 * MB, 0.6e6, 0.2, &mut c);
        assert_eq!(w.factor(1), MAX_CUT);
    }

    #[test]
    fn episodes_of_one_round_do_not_compound() {
        // Two connections of the same round both report the same loss: the
        // factor is set once from the factor they were paced by.
        let (mut w, t0) = rank();
        let (mut a, mut b) = (Counters::default(), Counters::default());
        w.pace(2, Some(6 * MB), t0, Some(a));
        w.pace(3, Some(6 * MB), t0, Some(b));
        for (peer, c) in [(2, &mut a), (3, &mut b)] {
            c.bytes_sent += 700_000;
            c.bytes_retrans += 40_000;
            c.busy_us += 200_000;
            w.pace(peer, None, t0 + ms(200), Some(*c));
        }
        let f = w.factor(1);
        assert!((f - 0.55).abs() < 0.01, "{f}");
    }

    /// The WAN halved at `t`: an episode toward peer 2 reaches half its
    /// rate and loses 5%; the factor comes down to 0.5. Returns its end.
    fn halved(w: &mut WanRate, t: Instant, c: &mut Counters) -> Instant {
        episode(w, 2, t, ms(200), 6 * MB, 3.0e6, 0.05, c);
        assert!((w.factor(1) - 0.5).abs() < 0.01, "{}", w.factor(1));
        assert!(w.poll_change().is_some());
        t + ms(200)
    }

    #[test]
    fn a_quiet_link_is_probed_back_up_to_the_bandwidth_it_started_from() {
        let (mut w, t0) = rank();
        let mut c = Counters::default();
        let mut t = halved(&mut w, t0, &mut c);
        // Quiet episodes at the new rate, too soon after the cut to probe.
        assert_eq!(episode(&mut w, 2, t, ms(200), 6 * MB, 3.0e6, 0.0, &mut c), 3 * MB);
        t += LONGEST_WAIT;
        // LONGEST_WAIT after the cut the next episode probes 1.25x faster,
        // reaches it without loss, and the factor keeps it.
        assert_eq!(episode(&mut w, 2, t, ms(200), 6 * MB, 3.75e6, 0.0, &mut c), 3_750_000);
        assert!((w.factor(1) - 0.625).abs() < 1e-9);
        assert!(w.poll_change().unwrap().why.contains("without loss"));
        // Then every FIRST_WAIT while probes succeed, up to the start's 1.
        for _ in 0..4 {
            t += FIRST_WAIT + ms(250);
            let f = w.factor(1);
            let want = (6.0e6 * f * PROBE_GAIN).min(6.0e6);
            assert_eq!(episode(&mut w, 2, t, ms(200), 6 * MB, want, 0.0, &mut c), want as u64);
        }
        assert_eq!(w.factor(1), MAX_FACTOR);
        // At its start's bandwidth a link is not probed.
        t += LONGEST_WAIT * 2;
        assert_eq!(episode(&mut w, 2, t, ms(200), 6 * MB, 6.0e6, 0.0, &mut c), 6 * MB);
    }

    #[test]
    fn a_failed_probe_keeps_the_factor_and_waits_twice_as_long() {
        let (mut w, t0) = rank();
        let mut c = Counters::default();
        let mut t = halved(&mut w, t0, &mut c) + LONGEST_WAIT;
        // A probe that succeeds: the next may come FIRST_WAIT later.
        assert_eq!(episode(&mut w, 2, t, ms(200), 4 * MB, 2.5e6, 0.0, &mut c), 2_500_000);
        assert!((w.factor(1) - 0.625).abs() < 1e-9);
        w.poll_change();
        // It overflows the WAN (loss): no change, not even down.
        t += ms(200) + FIRST_WAIT;
        assert_eq!(episode(&mut w, 2, t, ms(200), 4 * MB, 3.0e6, 0.04, &mut c), 3_125_000);
        assert!((w.factor(1) - 0.625).abs() < 1e-9);
        assert_eq!(w.poll_change(), None);
        // FIRST_WAIT later is too soon: not a probe.
        t += ms(200) + FIRST_WAIT + ms(10);
        assert_eq!(episode(&mut w, 2, t, ms(200), 4 * MB, 2.5e6, 0.0, &mut c), 2_500_000);
        // Twice FIRST_WAIT after the failed probe ended: a probe.
        t += ms(200) + FIRST_WAIT;
        assert_eq!(episode(&mut w, 2, t, ms(200), 4 * MB, 3.0e6, 0.04, &mut c), 3_125_000);
    }

    #[test]
    fn all_episodes_of_a_probe_decide_together() {
        let (mut w, t0) = rank();
        let mut c = Counters::default();
        let t = halved(&mut w, t0, &mut c) + LONGEST_WAIT;
        let (mut a, mut b) = (Counters::default(), Counters::default());
        assert_eq!(w.pace(2, Some(4 * MB), t, Some(a)), Some(2_500_000));
        assert_eq!(w.pace(3, Some(4 * MB), t, Some(b)), Some(2_500_000), "joins the probe");
        a.bytes_sent += 500_000;
        a.busy_us += 200_000;
        w.pace(2, None, t + ms(200), Some(a));
        assert_eq!(w.factor(1), 0.5, "one of two episodes ended");
        b.bytes_sent += 525_000;
        b.bytes_retrans += 25_000;
        b.busy_us += 200_000;
        w.pace(3, None, t + ms(200), Some(b));
        assert_eq!(w.factor(1), 0.5, "the second lost data: the probe failed");
    }

    #[test]
    fn a_rate_changed_mid_episode_is_judged_by_its_mean_and_idle_time_is_not_counted() {
        let (mut w, t0) = rank();
        let mut c = Counters::default();
        w.pace(2, Some(8 * MB), t0, Some(c));
        w.pace(2, Some(4 * MB), t0 + ms(100), Some(c));
        // Mean rate 6 MB/s over 200 ms; sent 0.5 MB with 10% lost, in 150
        // ms of busy time: 3 MB/s = 0.5 of the mean.
        c.bytes_sent += 500_000;
        c.bytes_retrans += 50_000;
        c.busy_us += 150_000;
        w.pace(2, None, t0 + ms(200), Some(c));
        let f = w.factor(1);
        assert!((f - 450_000.0 / 0.150 / 6.0e6).abs() < 0.01, "{f}");
    }

    #[test]
    fn a_long_episode_is_judged_in_slices_and_its_rate_changes_within_it() {
        let (mut w, t0) = rank();
        let mut c = Counters::default();
        assert_eq!(w.pace(2, Some(6 * MB), t0, Some(c)), Some(6 * MB));
        // 100 ms in: not a slice yet.
        assert_eq!(w.tick(2, t0 + ms(100), Some(c)), None);
        // The WAN was halved: the first slice sent 3 MB/s and lost 4%.
        c.bytes_sent += 781_250;
        c.bytes_retrans += 31_250;
        c.busy_us += 250_000;
        let mut t = t0 + SLICE;
        assert_eq!(w.tick(2, t, Some(c)), Some(3 * MB), "the rate follows at once");
        assert!((w.factor(1) - 0.5).abs() < 1e-9);
        // The next slices go at that rate and lose nothing: no change,
        // until LONGEST_WAIT after the cut a slice probes, in the same
        // episode.
        assert_eq!(w.paced_peers().collect::<Vec<_>>(), vec![2]);
        let slices = (LONGEST_WAIT.as_millis() / SLICE.as_millis()) as u32;
        for i in 1..=slices {
            t += SLICE;
            c.bytes_sent += 750_000;
            c.busy_us += 250_000;
            let r = w.tick(2, t, Some(c));
            if i < slices {
                assert_eq!(r, None, "slice {i}");
            } else {
                assert_eq!(r, Some(3_750_000), "a probe starts");
            }
        }
        // The WAN carries it: the factor keeps the gain.
        c.bytes_sent += 3_750_000 / 4;
        c.busy_us += 250_000;
        assert_eq!(w.tick(2, t + SLICE, Some(c)), None, "the next slice keeps the probed rate");
        assert!((w.factor(1) - 0.625).abs() < 1e-9, "{}", w.factor(1));
        assert_eq!(w.pace(2, None, t + SLICE + ms(50), Some(c)), None);
        assert_eq!(w.paced_peers().count(), 0);
    }

    #[test]
    fn a_replaced_connection_is_not_judged() {
        let (mut w, t0) = rank();
        let base = Counters { bytes_sent: 10 * MB, bytes_retrans: 0, busy_us: 0, queue_us: None };
        w.pace(2, Some(6 * MB), t0, Some(base));
        // Reconnected: the new socket counts from 0.
        w.pace(2, None, t0 + ms(300), Some(Counters { bytes_sent: 100_000, bytes_retrans: 50_000, busy_us: 1000, queue_us: None }));
        assert_eq!(w.factor(1), 1.0);
    }

    /// A long paced episode toward peer 2 at the rate applied `rate`,
    /// ticked every TICK from `from` to `to`, its packets waiting
    /// `queue_ms` (plus the packet interval a paced flow's RTT carries).
    fn queued(w: &mut WanRate, c: &mut Counters, rate: &mut u64, from: Instant, to: Instant, queue_ms: f64) {
        let mut t = from;
        while t < to {
            t += TICK;
            c.bytes_sent += *rate * TICK.as_millis() as u64 / 1000;
            c.busy_us += TICK.as_micros() as u64;
            let interval_us = PACKET * 1_000_000 / *rate;
            c.queue_us = Some((queue_ms * 1e3) as u64 + interval_us);
            if w.due(t) {
                if let Some(r) = w.tick(2, t, Some(*c)) {
                    *rate = r;
                }
            }
        }
    }

    #[test]
    fn a_standing_queue_cuts_the_factor_a_step_a_slice_and_an_empty_one_raises_it() {
        let (mut w, t0) = rank();
        let mut c = Counters { queue_us: Some(0), ..Default::default() };
        let mut rate = MB;
        assert_eq!(w.pace(2, Some(MB), t0, Some(c)), Some(MB));
        // The queue stands (10 ms) for a second: one cut per slice (four),
        // applied at once.
        queued(&mut w, &mut c, &mut rate, t0, t0 + ms(1000), 10.0);
        let f = w.factor(1);
        assert!((f - QUEUE_CUT.powi(4)).abs() < 1e-9, "{f}");
        assert_eq!(rate, scale(MB, f));
        // Within the band (the packet interval does not count), the
        // factor stays.
        let t1 = t0 + ms(1000);
        queued(&mut w, &mut c, &mut rate, t1, t1 + ms(1000), 1.5);
        assert_eq!(w.factor(1), f);
        // Empty: back up a step a slice, added: a creep and then steps in
        // a row larger, up to two gains (eight slices from 0.66, where
        // steps of one gain would take twelve), never above the start-up
        // rate.
        let t2 = t1 + ms(1000);
        let mut want = f;
        for n in 1..=8u32 {
            let from = if n == 1 { t2 } else { t2 + SLICE * (n - 1) + ms(50) };
            queued(&mut w, &mut c, &mut rate, from, t2 + SLICE * n + ms(50), 0.2);
            want += if n == 1 { QUEUE_CREEP } else { QUEUE_GAIN * (n - 1).min(QUEUE_GAIN_STEPS) as f64 };
            want = want.min(MAX_FACTOR);
            assert!((w.factor(1) - want).abs() < 1e-9, "step {n}: {} {want}", w.factor(1));
            assert_eq!(want == MAX_FACTOR, n == 8);
        }
        assert_eq!(rate, MB);
        queued(&mut w, &mut c, &mut rate, t2 + SLICE * 8 + ms(50), t2 + ms(3000), 0.2);
        assert_eq!(w.factor(1), MAX_FACTOR);
        // Probes are the loss rule's: none was started.
        assert!(w.links[1].probe.is_none());
    }

    /// Where the last step up ran into a standing queue, the WAN's
    /// capacity lies within that step: a trim, not a cut; a queue that
    /// stands on after it is a WAN that carries less: full cuts.
    #[test]
    fn a_queue_the_last_step_up_ran_into_is_trimmed() {
        let (mut w, t0) = rank();
        let mut c = Counters { queue_us: Some(0), ..Default::default() };
        let mut rate = MB;
        w.pace(2, Some(MB), t0, Some(c));
        let slice = |i: u32| t0 + (SLICE + TICK) * i;
        queued(&mut w, &mut c, &mut rate, slice(0), slice(1), 10.0);
        assert_eq!(w.factor(1), QUEUE_CUT, "the first queue: a cut");
        queued(&mut w, &mut c, &mut rate, slice(1), slice(2), 0.2);
        let up = QUEUE_CUT + QUEUE_CREEP;
        assert!((w.factor(1) - up).abs() < 1e-9, "then a creep up: {}", w.factor(1));
        queued(&mut w, &mut c, &mut rate, slice(2), slice(3), 10.0);
        let trimmed = up * QUEUE_TRIM;
        assert!((w.factor(1) - trimmed).abs() < 1e-9, "the creep ran into the queue: a trim: {}", w.factor(1));
        queued(&mut w, &mut c, &mut rate, slice(3), slice(4), 10.0);
        assert!((w.factor(1) - trimmed * QUEUE_CUT).abs() < 1e-9, "the queue stands on: a cut: {}", w.factor(1));
        assert_eq!(rate, scale(MB, w.factor(1)));
    }

    #[test]
    fn a_queue_right_after_a_cut_is_the_old_rates_and_does_not_cut_again() {
        let (mut w, t0) = rank();
        let mut c = Counters { queue_us: Some(0), ..Default::default() };
        let mut rate = MB;
        w.pace(2, Some(MB), t0, Some(c));
        queued(&mut w, &mut c, &mut rate, t0, t0 + SLICE + TICK, 10.0);
        assert_eq!(w.factor(1), QUEUE_CUT);
        // The episode ends 50 ms after the cut: too short to show the
        // queue the cut left, so no second cut.
        let t1 = t0 + SLICE + TICK;
        queued(&mut w, &mut c, &mut rate, t1, t1 + ms(50), 10.0);
        w.pace(2, None, t1 + ms(50), Some(c));
        assert_eq!(w.factor(1), QUEUE_CUT);
        // Nor do its losses: a short lossy slice far below its rate leaves
        // the factor to the queue.
        let t2 = t1 + ms(60);
        w.pace(2, Some(MB), t2, Some(c));
        c.bytes_sent += 60_000;
        c.bytes_retrans += 20_000;
        c.busy_us += 100_000;
        w.pace(2, None, t2 + ms(100), Some(c));
        assert_eq!(w.factor(1), QUEUE_CUT);
    }

    /// Two ranks of a cluster share a WAN that carries half their planned
    /// rates, each judging by the queue on its own, at its own moments.
    /// Their factors start far apart (as seen on the testbed, 0.7 and
    /// 0.35) and come together, their sum near the WAN's rate.
    #[test]
    fn ranks_that_share_a_queue_come_to_one_factor() {
        let t0 = Instant::now();
        let mut ranks = [WanRate::new(&[0, 0, 1, 1], 0, t0), WanRate::new(&[0, 0, 1, 1], 0, t0)];
        let start = [0.7, 0.35];
        let capacity = MB as f64; // bytes/s: half of the two flows' plan
        let most = 40.0 * PACKET as f64; // a 40-packet queue
        let mut c = [Counters { queue_us: Some(0), ..Default::default() }; 2];
        let mut rate = [0u64; 2];
        for (i, w) in ranks.iter_mut().enumerate() {
            w.links[1].factor = start[i];
            rate[i] = w.pace(2 + i as Pid, Some(MB), t0, Some(c[i])).unwrap();
        }
        let (mut queue, mut t) = (0.0f64, t0);
        let (mut gaps, mut sums, mut n) = (0.0, 0.0, 0);
        while t < t0 + ms(30_000) {
            t += ms(1);
            let offered = (rate[0] + rate[1]) as f64;
            queue = (queue + (offered - capacity) / 1000.0).clamp(0.0, most);
            for (i, w) in ranks.iter_mut().enumerate() {
                c[i].bytes_sent += rate[i] / 1000;
                c[i].busy_us += 1000;
                let interval_us = PACKET * 1_000_000 / rate[i];
                c[i].queue_us = Some((queue / capacity * 1e6) as u64 + interval_us);
                // The second rank judges 4 ms after the first.
                let at = t + ms(4 * i as u64);
                if w.due(at) {
                    if let Some(r) = w.tick(2 + i as Pid, at, Some(c[i])) {
                        rate[i] = r;
                    }
                }
            }
            if t >= t0 + ms(20_000) {
                let (a, b) = (ranks[0].factor(1), ranks[1].factor(1));
                gaps += (a - b).abs();
                sums += a + b;
                n += 1;
            }
        }
        let (gap, sum) = (gaps / n as f64, sums / n as f64);
        assert!(gap < 0.05, "the factors stay apart by {gap:.3} on average");
        assert!((0.85..=1.1).contains(&sum), "together they ask {sum:.3} of the WAN's rate");
    }
}
