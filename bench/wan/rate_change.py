#!/usr/bin/env python3
"""The WAN's rate changed mid-run: does alltoall follow? (issue 17)

Runs bench/wan/rate_change.c (MPI_Alltoall back to back, every call timed)
on the testbed's 2x4 grid, 8 ranks one per host, while this script changes
the WAN's rate under it: 100 Mbit/s, halved to 50 at --change-at, back to
100 at --back-at. GridMPI out of the box (the bandwidth measured at
MPI_Init, paced by it all along), GridMPI with GRIDMPI_WAN_FOLLOW=yes (the
rates following the WAN, crates/mpi/src/wan_rate.rs), MPICH and Open MPI,
jobs interleaved, in one run.

For each phase after a change it reports, per job:
  - settled: time from the change to the end of the last call that moved
    less than 85% of the bottleneck (0: none did);
  - goodput: the WAN bytes the calls moved per direction over the time they
    took, from 2 s after the change to the next one, as % of the bottleneck;
  - RTOs: the kernel's retransmission timeouts (all hosts) in that interval.

  sudo python3 bench/wan/rate_change.py [--rounds 3] [--size 1m] [--delay 10]
        [--cut 2] [--impls gridmpi,gridmpi-follow,mpich,openmpi] [--out bench/wan/RESULTS.md]

Root, after `make build`; takes the testbed (flock /tmp/testbed.lock).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as wanrun  # noqa: E402  (the WAN bench's constants and grid helpers)

REPO = wanrun.REPO
BUILD = os.path.join(REPO, "build")
TB = os.path.join(BUILD, "bin", "gridmpi-testbed")
SECTION = "## The WAN's rate changed mid-run"


def section(args):
    """The report's heading: a run with another --cut has a section of its own."""
    return SECTION if args.cut == 2 else "%s (cut %gx)" % (SECTION, args.cut)
PASS_SHARE = 0.85
SETTLE_S = 2.0


def log(msg):
    print(msg, flush=True)


def compile_all(work, impls):
    ccs = {"gridmpi": os.path.join(BUILD, "bin", "mpicc"), "mpich": wanrun.MPICH + "/bin/mpicc",
           "openmpi": wanrun.OMPI + "/bin/mpicc"}
    for impl in {i.split("-")[0] for i in impls}:
        exe = os.path.join(work, "rate_change-" + impl)
        r = subprocess.run([ccs[impl], "-O2", "-Wall", "-I", HERE, "-o", exe, os.path.join(HERE, "rate_change.c"), "-lm"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise SystemExit("compiling rate_change.c for %s failed:\n%s" % (impl, r.stdout))


def argv_of(impl, work, size, seconds):
    base = impl.split("-")[0]
    exe = [os.path.join(work, "rate_change-" + base), "--size", str(size), "--seconds", str(seconds)]
    hosts = ",".join(wanrun.HOSTS)
    if base == "mpich":
        return ["env", "MPIR_CVAR_CH4_NETMOD=ofi", "FI_PROVIDER=tcp", wanrun.MPICH + "/bin/mpiexec", "-launcher", "ssh",
                "-launcher-exec", wanrun.AGENT, "-hosts", hosts, "-n", "8"] + exe
    if base == "openmpi":
        return [wanrun.OMPI + "/bin/mpirun", "--allow-run-as-root", "--prtemca", "plm_ssh_agent", wanrun.AGENT,
                "--map-by", "node", "-H", hosts, "-n", "8", "--mca", "btl", "tcp,self", "--mca", "pml", "ob1"] + exe
    env = ["GRIDMPI_WAN_FOLLOW=yes"] if impl == "gridmpi-follow" else []
    if os.environ.get("GRIDMPI_DEBUG"):
        env.append("GRIDMPI_DEBUG=" + os.environ["GRIDMPI_DEBUG"])
    return ["env"] + env + [os.path.join(BUILD, "bin", "gridmpirun"), "--launcher", wanrun.AGENT, "-hosts", hosts,
                            "-n", "8"] + exe


def set_rate(mbit, delay, queue):
    r = subprocess.run([TB, "set", "c0-c1", "rate=%gmbit" % mbit, "delay=%gms" % delay, "queue=%s" % queue],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise SystemExit("gridmpi-testbed set failed: %s" % r.stdout)
    return time.monotonic()


def run_job(impl, args, work, jdir):
    """Run one job, changing the rate at its offsets; returns (calls, changes, output)."""
    os.makedirs(jdir, exist_ok=True)
    set_rate(args.rate, args.delay, args.queue)
    seconds = args.back_at + args.after
    mon_csv = os.path.join(jdir, "monitor.csv")
    subprocess.run([TB, "monitor", "-o", mon_csv, "--start"], stdout=subprocess.DEVNULL)
    p = subprocess.Popen([TB, "exec", "h0", "--", "timeout", str(int(seconds + 120))] + argv_of(impl, work, args.size, seconds),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=jdir)
    out, start, changes = [], None, []
    plan = [(args.change_at, args.rate / args.cut), (args.back_at, args.rate)]
    # The program says when its calls start (rank 0's first RESULT is at
    # the end): the first CALL line is printed at the end too, so the start
    # is taken from the HOSTS line, which rank 0 prints right before.
    for line in p.stdout:
        out.append(line)
        if start is None and line.startswith("HOSTS"):
            start = time.monotonic()
            break
    if start is not None:
        for at, mbit in plan:
            wait = start + at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            changes.append((set_rate(mbit, args.delay, args.queue), mbit))
    out += p.stdout.readlines()
    p.wait()
    subprocess.run([TB, "monitor", "--stop", "-o", mon_csv], stdout=subprocess.DEVNULL)
    set_rate(args.rate, args.delay, args.queue)
    text = "".join(out)
    with open(os.path.join(jdir, "output.txt"), "w") as f:
        f.write(text)
    calls = []
    for m in re.finditer(r"^CALL k=(\d+) end=([\d.]+) ms=([\d.]+) rtos=(\d+) retrans=(\d+)", text, re.M):
        calls.append({"end": float(m.group(2)), "ms": float(m.group(3)), "rtos": int(m.group(4)), "retrans": int(m.group(5))})
    ok = p.returncode == 0 and "CHECK ok errors=0" in text
    return calls, changes, text, ok


def phase_stats(calls, t0, t1, mbit, wan_bytes):
    """Stats of the calls in [t0, t1) (a phase at `mbit`)."""
    inside = [c for c in calls if c["end"] - c["ms"] / 1e3 >= t0 and c["end"] <= t1]
    if not inside:
        return None
    goodput = lambda c: wan_bytes * 8 / (c["ms"] / 1e3) / (mbit * 1e6)
    slow = [c for c in inside if goodput(c) < PASS_SHARE]
    settled = max((c["end"] - t0 for c in slow), default=0.0)
    late = [c for c in inside if c["end"] - c["ms"] / 1e3 >= t0 + SETTLE_S]
    share = (wan_bytes * 8 * len(late) / sum(c["ms"] / 1e3 for c in late) / (mbit * 1e6)) if late else None
    before = [c for c in calls if c["end"] < t0 + SETTLE_S]
    rto0 = before[-1]["rtos"] if before else 0
    rtos_late = (late[-1]["rtos"] - rto0) if late else None
    return {"calls": len(inside), "settled_s": settled, "goodput": share, "rtos_after": rtos_late,
            "rtos_all": inside[-1]["rtos"] - (([c for c in calls if c["end"] < t0] or [{"rtos": 0}])[-1]["rtos"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", default="1m", help="alltoall bytes per peer")
    ap.add_argument("--delay", type=float, default=10, help="one-way WAN delay, ms")
    ap.add_argument("--rate", type=float, default=100, help="the WAN's rate before and after, Mbit/s")
    ap.add_argument("--cut", type=float, default=2, help="the rate is divided by this between --change-at and --back-at")
    ap.add_argument("--queue", default="40p")
    ap.add_argument("--change-at", type=float, default=10, help="s after the calls start")
    ap.add_argument("--back-at", type=float, default=22)
    ap.add_argument("--after", type=float, default=10, help="s of calls after the rate is back")
    ap.add_argument("--impls", default="gridmpi,gridmpi-follow,mpich,openmpi")
    ap.add_argument("--out", default=None, help="markdown file whose section to replace (e.g. bench/wan/RESULTS.md)")
    ap.add_argument("--work", default="/tmp/gridmpi-rate-change")
    args = ap.parse_args()
    size = wanrun.parse_size(args.size)
    impls = args.impls.split(",")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    compile_all(args.work, impls)
    wan_bytes = 4 * 4 * size  # per direction per call: 4 ranks x 4 remote peers
    load_before = open("/proc/loadavg").read().split()[:3]
    r = subprocess.run([TB, "up", "2x4", "--rate", "%gmbit" % args.rate, "--delay", "%gms" % args.delay, "--queue",
                        args.queue, "--cc", "cubic"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise SystemExit("gridmpi-testbed up failed: %s" % r.stdout)
    rows = []
    try:
        for rnd in range(args.rounds):
            for impl in impls:
                jdir = os.path.join(args.work, "%s-%d" % (impl, rnd))
                calls, changes, text, ok = run_job(impl, args, args.work, jdir)
                if not ok or len(changes) != 2:
                    log("%s round %d: FAILED\n%s" % (impl, rnd, "".join(text.splitlines(True)[-10:])))
                    rows.append({"impl": impl, "round": rnd, "ok": False})
                    continue
                (tc, m1), (tb, m2) = changes
                end = calls[-1]["end"]
                first = calls[0]["end"] - calls[0]["ms"] / 1e3
                base = phase_stats(calls, first, tc, args.rate, wan_bytes)
                down = phase_stats(calls, tc, tb, m1, wan_bytes)
                up = phase_stats(calls, tb, end + 1, m2, wan_bytes)
                row = {"impl": impl, "round": rnd, "ok": True, "base": base, "down": down, "up": up, "dir": jdir}
                rows.append(row)
                f = lambda s: "-" if s is None else "settled %.2fs goodput %s rtos-after %s (all %s)" % (
                    s["settled_s"], "-" if s["goodput"] is None else "%.0f%%" % (100 * s["goodput"]), s["rtos_after"], s["rtos_all"])
                log("%-17s round %d: before %s | halved: %s | back: %s" % (
                    impl, rnd, "-" if base is None else "%.0f%%" % (100 * (base["goodput"] or 0)), f(down), f(up)))
        plot(rows, args)
    finally:
        subprocess.run([TB, "down"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    load_after = open("/proc/loadavg").read().split()[:3]
    md = report(rows, args, load_before, load_after)
    print(md)
    if args.out:
        replace_section(args.out, section(args), md)


def plot(rows, args):
    """The testbed monitor's plot of each implementation's first good job."""
    done = set()
    outdir = os.path.join(HERE, "plots")
    for r in rows:
        if not r["ok"] or r["impl"] in done:
            continue
        done.add(r["impl"])
        svg = os.path.join(outdir, "rate-change-%gx-%s.svg" % (args.cut, r["impl"]))
        title = "%s: MPI_Alltoall %s per peer back to back, 2x4 grid, %g ms, WAN %g -> %g -> %g Mbit/s" % (
            r["impl"], args.size, args.delay, args.rate, args.rate / args.cut, args.rate)
        subprocess.run([TB, "plot", os.path.join(r["dir"], "monitor.csv"), "-o", svg, "--title", title],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if os.path.exists(svg) and shutil.which("rsvg-convert"):
            subprocess.run(["rsvg-convert", "-w", "1200", svg, "-o", svg[:-4] + ".png"])


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def report(rows, args, load_before, load_after):
    cmd = "sudo python3 bench/wan/rate_change.py --rounds %d --size %s --delay %g --cut %g" % (args.rounds, args.size, args.delay, args.cut)
    lines = [section(args), "",
             "`%s` (%s; load before %s, after %s). 2x4 grid, 8 ranks one per host, MPI_Alltoall of %s per peer back to back; "
             "the WAN (one-way %g ms, %s queue) runs at %g Mbit/s, is cut to %g Mbit/s %g s after the calls start and is back %g s later. "
             "Per phase: *settled* is the time from the change to the end of the last call that moved less than %d%% of the "
             "bottleneck; *goodput* is what the calls moved across the WAN per direction from %g s after the change to the next "
             "one, as a share of the bottleneck (payload over the link's raw rate); *RTOs* are the kernel's retransmission "
             "timeouts on all hosts in that interval, per job. Medians over %d jobs per implementation (min-max)."
             % (cmd, time.strftime("%Y-%m-%d %H:%M"), " ".join(load_before), " ".join(load_after), args.size, args.delay,
                args.queue, args.rate, args.rate / args.cut, args.change_at, args.back_at - args.change_at, int(PASS_SHARE * 100), SETTLE_S,
                args.rounds), "",
             "| implementation | goodput before | cut: settled | cut: goodput after 2 s | cut: RTOs after 2 s | "
             "back: settled | back: goodput after 2 s | back: RTOs after 2 s | jobs ok |",
             "|---|---|---|---|---|---|---|---|---|"]

    def span(vals, fmt):
        v = [x for x in vals if x is not None]
        if not v:
            return "-"
        return (fmt % statistics.median(v)) + ("" if len(v) == 1 else " (%s-%s)" % (fmt % min(v), fmt % max(v)))

    def each(vals):
        """Counts, one per job (a median of 0 and 1 says too little)."""
        return ", ".join("-" if x is None else "%d" % x for x in vals) or "-"

    for impl in args.impls.split(","):
        rs = [r for r in rows if r["impl"] == impl and r["ok"]]
        g = lambda ph, k: [r[ph][k] if r[ph] else None for r in rs]
        pct = lambda v: [None if x is None else 100 * x for x in v]
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %d/%d |" % (
            impl, span(pct(g("base", "goodput")), "%.0f%%"),
            span(g("down", "settled_s"), "%.2f s"), span(pct(g("down", "goodput")), "%.0f%%"), each(g("down", "rtos_after")),
            span(g("up", "settled_s"), "%.2f s"), span(pct(g("up", "goodput")), "%.0f%%"), each(g("up", "rtos_after")),
            len(rs), len([r for r in rows if r["impl"] == impl])))
    lines += ["", "Plots (the testbed monitor, both directions, the whole job): " + ", ".join(
        "[%s](plots/rate-change-%gx-%s.svg)" % (i, args.cut, i) for i in args.impls.split(",")), ""]
    return "\n".join(lines) + "\n"


def replace_section(path, title, md):
    text = open(path).read() if os.path.exists(path) else ""
    start = text.find(title + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + md
    else:
        nxt = text.find("\n## ", start + len(title))
        text = text[:start] + md + (text[nxt + 1:] if nxt >= 0 else "")
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
