//! What gridmpirun says about WAN links that are down: once per link for
//! the whole job, from the reports of its ranks (`gridmpi_outage`, sent by
//! crates/mpi/src/outage.rs when a rank's connections to another cluster
//! have had nothing acknowledged for 5 s, every minute while that lasts,
//! and when the link is back). Sans-IO: reports in, lines out.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// How often a link that stays down is told again.
const REPEAT: Duration = Duration::from_secs(60);

struct Down {
    /// Ranks that see the link down now.
    ranks: BTreeSet<u32>,
    /// When the first report said it went down (its `secs` taken off).
    since: Instant,
    last_said: Instant,
    budget: Option<u64>,
}

#[derive(Default)]
pub struct Outages {
    /// By link (the two clusters' names, in order).
    down: BTreeMap<(String, String), Down>,
}

fn budget_words(budget: Option<u64>) -> String {
    budget.map_or_else(|| "as long as the kernel retries".to_string(), |b| format!("up to {} (GRIDMPI_WAN_OUTAGE_BUDGET)", duration(b)))
}

fn duration(s: u64) -> String {
    if s >= 120 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

impl Outages {
    /// Rank `rank` of cluster `from` reports the link to `to`: down for
    /// `secs` seconds, or back after them. The line to say, if any.
    pub fn report(&mut self, rank: u32, from: &str, to: &str, back: bool, secs: u64, budget: Option<u64>, now: Instant) -> Option<String> {
        let key = if from <= to { (from.to_string(), to.to_string()) } else { (to.to_string(), from.to_string()) };
        let (a, b) = (&key.0, &key.1);
        if back {
            let d = self.down.get_mut(&key)?;
            d.ranks.remove(&rank);
            if !d.ranks.is_empty() {
                return None;
            }
            let d = self.down.remove(&key).expect("present");
            return Some(format!("the WAN link between clusters {a} and {b} is back after {}", duration((now - d.since).as_secs().max(secs))));
        }
        let since = now.checked_sub(Duration::from_secs(secs)).unwrap_or(now);
        match self.down.get_mut(&key) {
            None => {
                self.down.insert(key.clone(), Down { ranks: BTreeSet::from([rank]), since, last_said: now, budget });
                Some(format!(
                    "the WAN link between clusters {a} and {b} looks down: rank {rank} (cluster {from}) has had nothing acknowledged for {secs} s; the job waits {}",
                    budget_words(budget)
                ))
            }
            Some(d) => {
                d.ranks.insert(rank);
                d.since = d.since.min(since);
                if now - d.last_said < REPEAT {
                    return None;
                }
                d.last_said = now;
                Some(format!(
                    "the WAN link between clusters {a} and {b} is still down after {} ({} ranks waiting on it); the job waits {}",
                    duration((now - d.since).as_secs()),
                    d.ranks.len(),
                    budget_words(d.budget)
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_told_once_by_the_first_rank_and_back_when_the_last_sees_it() {
        let t0 = Instant::now();
        let mut o = Outages::default();
        let first = o.report(5, "c1", "c0", false, 6, Some(900), t0).expect("the first report is said");
        assert!(first.contains("between clusters c0 and c1 looks down") && first.contains("rank 5") && first.contains("15 min 0 s"), "{first}");
        // The other ranks, either side, say nothing new.
        for r in [0, 1, 2, 3, 4, 6, 7] {
            let (f, t) = if r < 4 { ("c0", "c1") } else { ("c1", "c0") };
            assert_eq!(o.report(r, f, t, false, 6, Some(900), t0 + Duration::from_secs(1)), None);
        }
        // A minute on, the next report tells it again with the count.
        let again = o.report(0, "c0", "c1", false, 66, Some(900), t0 + Duration::from_secs(61)).expect("repeated after a minute");
        assert!(again.contains("still down after 67 s") && again.contains("8 ranks"), "{again}");
        assert_eq!(o.report(1, "c0", "c1", false, 67, Some(900), t0 + Duration::from_secs(62)), None);
        // Back only once every rank that saw it down says so.
        for r in 0..7 {
            assert_eq!(o.report(r, "c0", "c1", true, 80, Some(900), t0 + Duration::from_secs(80)), None, "rank {r}");
        }
        let back = o.report(7, "c1", "c0", true, 80, Some(900), t0 + Duration::from_secs(80)).expect("back");
        assert!(back.contains("between clusters c0 and c1 is back after 86 s"), "{back}");
        assert!(o.down.is_empty());
        // A report of a link nobody said was down is not news.
        assert_eq!(o.report(3, "c0", "c1", true, 1, None, t0), None);
    }

    #[test]
    fn links_are_kept_apart() {
        let t0 = Instant::now();
        let mut o = Outages::default();
        assert!(o.report(0, "a", "b", false, 5, None, t0).is_some());
        assert!(o.report(0, "a", "c", false, 5, None, t0).is_some());
        assert!(o.report(0, "a", "b", true, 9, None, t0).unwrap().contains("a and b is back"));
        assert_eq!(o.down.keys().cloned().collect::<Vec<_>>(), vec![("a".to_string(), "c".to_string())]);
    }
}
