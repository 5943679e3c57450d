//! `gridmpirun --proxy`: runs on a remote host, started by the launch agent.
//! It starts that host's ranks, carries their PMI bytes, output and exit
//! statuses to gridmpirun over its stdin/stdout, and kills them all if
//! that link drops.

use std::io::{self, Read, Write};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::link::{self, Down, Up};
use crate::ranks::{self, LocalRanks};
use crate::sys::{self, ExitStatus};

enum Event {
    Down(Down),
    UpstreamGone,
    Up(Up),
    Reaped(u32, ExitStatus),
    Signal,
}

pub fn run() -> i32 {
    let mut shm_prefixes = Vec::new();
    let code = serve(&mut shm_prefixes);
    // Every rank here has ended: what they left in /dev/shm goes.
    for p in &shm_prefixes {
        sys::remove_shm_files(p);
    }
    code
}

/// Run the ranks the launcher sends; note their shared-memory prefixes.
fn serve(shm_prefixes: &mut Vec<String>) -> i32 {
    let stdout = Arc::new(Mutex::new(io::stdout()));
    {
        let mut out = stdout.lock().expect("stdout lock");
        if out.write_all(link::MAGIC).and_then(|_| out.flush()).is_err() {
            return 1;
        }
    }
    let (tx, rx) = mpsc::channel::<Event>();
    if let Ok(mut pipe) = sys::signal_pipe(&[]) {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut b = [0u8; 1];
            while let Ok(1) = pipe.read(&mut b) {
                let _ = tx.send(Event::Signal);
            }
        });
    }
    {
        let tx = tx.clone();
        ranks::start_reaper(move |pid, status| {
            let _ = tx.send(Event::Reaped(pid, status));
        });
    }
    {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut stdin = io::stdin().lock();
            loop {
                match link::read_down(&mut stdin) {
                    Ok(Some(d)) => {
                        if tx.send(Event::Down(d)).is_err() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        eprintln!("gridmpirun proxy on {}: {e}", sys::hostname());
                        break;
                    }
                }
            }
            let _ = tx.send(Event::UpstreamGone);
        });
    }
    let send_up = {
        let stdout = stdout.clone();
        move |up: &Up| -> bool {
            let mut out = stdout.lock().expect("stdout lock");
            link::write_all(&mut *out, &up.encode()).is_ok()
        }
    };
    send_up(&Up::Hello { hostname: sys::hostname() });

    let sink_tx = Mutex::new(tx.clone());
    drop(tx);
    let mut local: Option<LocalRanks> = None;
    let mut grace = Duration::from_secs(3);
    let mut upstream = true;
    let mut term_at: Option<Instant> = None;
    let mut killed = false;
    let make_local = |n: u32| {
        let tx = sink_tx.lock().expect("sink").clone();
        LocalRanks::new(n, Arc::new(move |up| {
            let _ = tx.send(Event::Up(up));
        }))
    };
    loop {
        let running = local.as_ref().map_or(0, |l| l.running());
        if !upstream && running == 0 {
            return 0;
        }
        let now = Instant::now();
        if let Some(t) = term_at {
            if !killed && now >= t + grace {
                killed = true;
                if let Some(l) = &local {
                    l.kill_all(libc::SIGKILL);
                }
            }
            if !upstream && killed && now >= t + grace + Duration::from_secs(2) {
                return 1;
            }
        }
        let ev = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(ev) => ev,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return 1,
        };
        match ev {
            Event::Down(Down::Launch { size, ranks, kill_grace_ms }) => {
                grace = Duration::from_millis(kill_grace_ms);
                let l = local.get_or_insert_with(|| make_local(size));
                let n = ranks.len() as u32;
                for (i, spec) in ranks.iter().enumerate() {
                    if let Some((_, v)) = spec.env.iter().find(|(k, _)| k == "GRIDMPI_SHM_PREFIX") {
                        if !shm_prefixes.contains(v) {
                            shm_prefixes.push(v.clone());
                        }
                    }
                    l.spawn(spec, i as u32, n);
                }
            }
            Event::Down(Down::Pmi { rank, data }) => {
                if let Some(l) = &mut local {
                    l.write_pmi(rank, &data);
                }
            }
            Event::Down(Down::Stdin { data }) => {
                if let Some(l) = &mut local {
                    l.write_stdin(data);
                }
            }
            Event::Down(Down::StdinClose) => {
                if let Some(l) = &mut local {
                    l.close_stdin();
                }
            }
            Event::Down(Down::Kill { signal }) => {
                if let Some(l) = &local {
                    l.kill_all(signal);
                }
                // A checkpoint request, or the notice that a rank of a
                // fault-tolerant job failed: the ranks go on.
                if signal == gridmpi_pmi::checkpoint_signal() || signal == gridmpi_pmi::failure_signal() {
                    continue;
                }
                if signal == libc::SIGKILL {
                    killed = true;
                }
                term_at.get_or_insert(Instant::now());
            }
            Event::Up(up) => {
                if upstream && !send_up(&up) {
                    upstream = false;
                }
                if !upstream && term_at.is_none() {
                    term_at = Some(Instant::now());
                    if let Some(l) = &local {
                        l.kill_all(libc::SIGTERM);
                    }
                }
            }
            Event::Reaped(pid, status) => {
                if let Some(l) = &mut local {
                    l.reaped(pid, status);
                }
            }
            Event::UpstreamGone | Event::Signal => {
                upstream = false;
                if term_at.is_none() {
                    term_at = Some(Instant::now());
                    if let Some(l) = &local {
                        l.kill_all(libc::SIGTERM);
                    }
                }
            }
        }
    }
}
