#!/usr/bin/env python3
"""bench/wan/run.py: GridMPI against MPICH and Open MPI across an emulated WAN.

Brings up the testbed grid (gridmpi-testbed: 2 clusters x 4 hosts, one
100 Mbit/s WAN link with a 40-packet drop-tail queue), once per one-way delay
(0 and 5 ms), and runs on it, one rank per host:

  alltoall   bench/wan/wan_coll.c, MPI_Alltoall, 4 KiB .. 1 MiB per peer
  bcast      MPI_Bcast of 1 MiB (root 0), isolated calls and back-to-back
  allreduce  MPI_Allreduce of 1 MiB (MPI_DOUBLE, MPI_SUM), the same
  is         bench/wan/is_sort.c: NPB-IS-style bucket sort (Alltoall + Alltoallv)
  ft         bench/wan/ft_transpose.c: NPB-FT-style 3-D FFT with Alltoall transposes

for MPICH (pip, ch4/ofi/tcp), Open MPI (pip, ob1/tcp btl) and GridMPI with
each of its WAN features on and off (VARIANTS below). For every job it
records the program's own numbers (time per call, kernel TCP counters of
every host around the timed section), `nstat` of every host namespace before
and after the job, the testbed monitor (1 ms throughput, queue, drops) and,
for GridMPI, the trace (`gridmpirun --trace`, `gridmpi-trace summary`).
Then it writes bench/wan/RESULTS.md (tables, commands, plots) and
bench/wan/results/RUN.json (everything, for --report-only).

    python3 bench/wan/run.py                 # full run (about 75 minutes)
    python3 bench/wan/run.py --quick         # smoke run (about 15 minutes)
    python3 bench/wan/run.py --only alltoall --delays 5 --sizes 16k --impls mpich,gridmpi
    python3 bench/wan/run.py --report-only bench/wan/results/RUN.json

Run as root from anywhere, after `make build`. The GridMPI build is copied
(snapshot) before starting, so a rebuild during the run changes nothing.
Only a full run writes bench/wan/RESULTS.md; other runs write
bench/wan/results/RUN-partial.md unless --out says otherwise.
The grid is always taken down at the end (also on errors and Ctrl-C).
"""

import argparse
import atexit
import csv
import datetime
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HOSTS = ["h%d" % i for i in range(8)]
CLUSTERS = {"c0": HOSTS[:4], "c1": HOSTS[4:]}
RATE_BPS = 100e6
QUEUE = "40p"
MPICH = os.environ.get("MPICH_PREFIX", "/opt/peers/mpich")
OMPI = os.environ.get("OMPI_PREFIX", "/opt/peers/openmpi")
AGENT = "/run/gridmpi-testbed/bin/gridmpi-testbed-ssh"
PROGRAMS = ["wan_coll", "is_sort", "ft_transpose"]
KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR")

FULL_SIZES = [4096 << i for i in range(9)]          # 4 KiB .. 1 MiB
QUICK_SIZES = [4096, 16384, 65536, 1 << 20]

# GridMPI variants: name -> (what it shows, environment given the topology
# file and the job). "map" = GRIDMPI_TOPOLOGY, the cluster map with the WAN's
# bandwidth and delay. With a map, GridMPI tunes WAN connections, picks its
# cluster-aware ("wan") collective algorithms and paces their WAN phases.

def flat_collectives(job):
    """The algorithms GridMPI picks on one cluster (its flat table), named one
    by one: no single setting turns the cluster-aware algorithms off."""
    a2a = "scattered"
    if job["bench"] == "alltoall" and job["size"] >= 32768:
        a2a = "pairwise"
    if job["bench"] == "ft" and job["size"] >= 32768:
        a2a = "pairwise"
    return {"GRIDMPI_COLL_ALLTOALL": a2a, "GRIDMPI_COLL_BCAST": "scatter_allgather",
            "GRIDMPI_COLL_ALLREDUCE": "rabenseifner", "GRIDMPI_COLL_REDUCE": "rabenseifner",
            "GRIDMPI_COLL_BARRIER": "dissemination"}


VARIANTS = {
    "gridmpi": ("everything on: cluster map from a topology file (bandwidth, delay); WAN connections tuned "
                "(cubic, RTO min 5 ms, RTO max, NOTSENT_LOWAT, buffers); cluster-aware collectives; pacing of "
                "their WAN phases at 0.95 x bandwidth / flows (control frames first, unsent data bounded)",
                lambda topo, job: {"GRIDMPI_TOPOLOGY": topo}),
    "gridmpi-nopace": ("map, but no pacing (`GRIDMPI_PACE_SHARE=0`)",
                       lambda topo, job: {"GRIDMPI_TOPOLOGY": topo, "GRIDMPI_PACE_SHARE": "0"}),
    "gridmpi-flat": ("map and TCP tuning, but the flat collective algorithms of one cluster (each named: "
                     "`GRIDMPI_COLL_ALLTOALL=scattered` below 32 KiB per peer, `pairwise` from 32 KiB; "
                     "`BCAST=scatter_allgather`, `ALLREDUCE=rabenseifner`, `REDUCE=rabenseifner`, "
                     "`BARRIER=dissemination`); flat algorithms carry no pacing",
                     lambda topo, job: dict({"GRIDMPI_TOPOLOGY": topo}, **flat_collectives(job))),
    "gridmpi-rto200": ("map, but RTO min 200 ms (the kernel's) instead of 5 ms (`GRIDMPI_TCP_RTO_MIN=200ms`)",
                       lambda topo, job: {"GRIDMPI_TOPOLOGY": topo, "GRIDMPI_TCP_RTO_MIN": "200ms"}),
    "gridmpi-bbr": ("map, but congestion control BBR (this machine's default) instead of cubic "
                    "(`GRIDMPI_TCP_CC=bbr`)",
                    lambda topo, job: {"GRIDMPI_TOPOLOGY": topo, "GRIDMPI_TCP_CC": "bbr"}),
    "gridmpi-lowat-off": ("map, but no NOTSENT_LOWAT bound (`GRIDMPI_TCP_NOTSENT_LOWAT=4g`: the kernel's "
                          "default, unlimited)",
                          lambda topo, job: {"GRIDMPI_TOPOLOGY": topo, "GRIDMPI_TCP_NOTSENT_LOWAT": "4g"}),
    "gridmpi-discovery": ("out of the box: no map given, clusters discovered by handshake timing (hosts closer "
                          "than 1 ms RTT: at 0 ms delay everything is one cluster); the WAN bandwidth measured at "
                          "MPI_Init (GRIDMPI_WAN_PROBE, 300 ms a direction) and WAN phases paced by it",
                          lambda topo, job: {}),
    "gridmpi-noprobe": ("out of the box as before the start-up measurement (`GRIDMPI_WAN_PROBE=0`): clusters "
                        "discovered, the WAN bandwidth unknown, so buffers are autotuned and nothing is paced",
                        lambda topo, job: {"GRIDMPI_WAN_PROBE": "0"}),
    "gridmpi-wrongtopo": ("a topology file wrong by 10x (1 Gbit/s for the 100 Mbit/s WAN); the start-up "
                          "measurement overrules it",
                          lambda topo, job: {"GRIDMPI_TOPOLOGY": topo.replace(".txt", "-wrong.txt")}),
    "gridmpi-nomap": ("everything off: no map, no discovery (`GRIDMPI_CLUSTER_DISCOVERY=off`): one cluster, "
                      "no tuning, flat collectives, no pacing",
                      lambda topo, job: {"GRIDMPI_CLUSTER_DISCOVERY": "off"}),
}


def add_custom_variant(name):
    """`gridmpi+KEY=VAL+KEY=VAL`: everything on, plus these settings (for
    quick experiments from the command line)."""
    if name in VARIANTS or not name.startswith("gridmpi+"):
        return
    extra = dict(kv.split("=", 1) for kv in name.split("+")[1:])
    VARIANTS[name] = ("everything on, plus " + ", ".join("`%s=%s`" % kv for kv in extra.items()),
                      lambda topo, job: dict({"GRIDMPI_TOPOLOGY": topo}, **extra))


# The variants run for bcast, allreduce and the application kernels (alltoall runs them all).
SHORT_LIST = ("gridmpi", "gridmpi-nopace", "gridmpi-flat", "gridmpi-rto200", "gridmpi-nomap", "gridmpi-discovery",
              "gridmpi-noprobe", "gridmpi-wrongtopo")
# Variants whose settings this build lacks are left out.
NEEDS = {"gridmpi-nopace": "GRIDMPI_PACE_SHARE"}

IMPL_LABEL = {"mpich": "MPICH 5 (ofi/tcp)", "openmpi": "Open MPI 5 (ob1/tcp)"}


def log(msg):
    sys.stdout.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stdout.flush()


def fmt_size(b):
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return "%dM" % (b >> 20)
    if b >= 1024 and b % 1024 == 0:
        return "%dK" % (b >> 10)
    return str(b)


def parse_size(s):
    s = s.strip().lower()
    m = {"k": 1024, "m": 1 << 20}.get(s[-1:], 1)
    return int(float(s[:-1] if m > 1 else s) * m)


def run(cmd, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.STDOUT)
    kw.setdefault("text", True)
    return subprocess.run(cmd, **kw)


# ---------------------------------------------------------------- machine load

def cpu_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]) - v[3] - v[4]


def cpu_busy(seconds):
    """Share (%) of both CPUs busy over `seconds` (when none of our jobs runs: other users' load)."""
    a, t0 = cpu_ticks(), time.time()
    time.sleep(seconds)
    b, t1 = cpu_ticks(), time.time()
    hz = os.sysconf("SC_CLK_TCK")
    return min(100.0, 100.0 * (b - a) / hz / ((t1 - t0) * (os.cpu_count() or 1)))


def busiest(n=4):
    r = run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers"])
    return [" ".join(l.split()) for l in r.stdout.splitlines()[:n]]


def wait_idle(limit_s, threshold=30.0):
    """Wait (up to limit_s) until the machine is idle (< threshold % busy over 2 s)."""
    t0 = time.time()
    while True:
        b = cpu_busy(2.0)
        if b < threshold or time.time() - t0 > limit_s:
            return b
        log("machine busy (%.0f%%: %s), waiting" % (b, "; ".join(busiest(3))))
        time.sleep(8)


# ---------------------------------------------------------------- the grid

class Grid:
    """The testbed grid; at most one up at a time; always taken down."""

    def __init__(self, tb):
        self.tb = tb
        self.up_delay = None
        self.my_ident = None
        self.ups = 0
        atexit.register(self.down)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._signal)

    def _signal(self, signum, frame):
        log("signal %d: taking the grid down" % signum)
        self.down()
        sys.exit(128 + signum)

    STATE = "/run/gridmpi-testbed/state.json"

    def ident(self):
        """(creation time, emulator pid) of the grid that is up, None if none."""
        try:
            with open(self.STATE) as f:
                st = json.load(f)
            return (st.get("created"), json.dumps(st.get("emulator")))
        except (OSError, ValueError):
            return None

    def ours(self):
        return self.up_delay is not None and self.ident() == self.my_ident

    def someone_elses(self):
        return self.ident() is not None and not self.ours()

    def ensure(self, wait_s):
        """Before a job: is our grid still up? (Someone else's `down` or `up` may
        have replaced it.) If not, bring ours up again. True if it had to."""
        if self.ours():
            return False
        delay = self.up_delay
        log("our grid is gone (taken down or replaced by someone else); bringing it up again")
        self.up_delay = None
        self.up(delay, wait_s)
        return True

    def up(self, delay_ms, wait_s):
        t0 = time.time()
        while self.someone_elses():
            if time.time() - t0 > wait_s:
                raise SystemExit("a testbed grid is already up (not this run's): %s status; giving up after %d s"
                                 % (self.tb, wait_s))
            log("another grid is up (someone else's run); waiting for it to go down")
            time.sleep(15)
        cmd = [self.tb, "up", "2x4", "--rate", "100mbit", "--delay", "%gms" % delay_ms, "--queue", QUEUE,
               "--cc", "cubic"]
        log("$ " + " ".join(cmd))
        r = run(cmd)
        if r.returncode != 0:
            sys.stdout.write(r.stdout)
            raise SystemExit("gridmpi-testbed up failed")
        self.up_delay = delay_ms
        self.my_ident = self.ident()
        self.ups += 1
        return cmd

    def down(self):
        if self.up_delay is None:
            return
        if not self.ours():
            log("the grid that is up is not ours (or none is): leaving it alone")
            self.up_delay = None
            return
        self.kill_leftovers()
        r = run([self.tb, "down"])
        if r.returncode != 0:
            sys.stdout.write(r.stdout)
        log("grid down (%s)" % (r.stdout.strip().splitlines() or ["ok"])[-1])
        self.up_delay = None

    def host_pids(self):
        pids = []
        for h in HOSTS:
            r = run(["ip", "netns", "pids", "gtb-" + h], stderr=subprocess.DEVNULL)
            pids += [int(p) for p in r.stdout.split() if p.isdigit()]
        return pids

    def kill_leftovers(self):
        """End processes left in this run's host namespaces (a job that timed out), by pid."""
        if not self.ours():
            return
        pids = self.host_pids()
        if not pids:
            return
        log("ending %d leftover processes in the grid's host namespaces: %s" % (len(pids), pids))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in pids:
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
            time.sleep(1.0)
            pids = self.host_pids()
            if not pids:
                break

    def exec_argv(self, host, argv):
        return [self.tb, "exec", host, "--"] + argv

    def nstat_all(self):
        """{host: {counter: value}} absolute, every host namespace, in parallel."""
        procs = {h: subprocess.Popen(self.exec_argv(h, ["nstat", "-asz", "--json"]), stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True) for h in HOSTS}
        out = {}
        for h, p in procs.items():
            so, _ = p.communicate(timeout=30)
            try:
                out[h] = json.loads(so)["kernel"]
            except (ValueError, KeyError):
                out[h] = {}
        return out

    def status_json(self):
        r = run([self.tb, "status", "--json"], stderr=subprocess.DEVNULL)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return {}


NSTAT_KEYS = ["TcpExtTCPTimeouts", "TcpRetransSegs", "TcpExtTCPLossProbes", "TcpExtTCPLossProbeRecovery",
              "TcpExtTCPSackFailures", "TcpExtTCPLossFailures", "TcpExtTCPSackRecoveryFail",
              "TcpExtTCPSpuriousRTOs", "TcpExtTCPSynRetrans"]


def nstat_diff(a, b):
    per = {}
    for h in HOSTS:
        per[h] = {k: b.get(h, {}).get(k, 0) - a.get(h, {}).get(k, 0) for k in NSTAT_KEYS}
    tot = {k: sum(per[h][k] for h in HOSTS) for k in NSTAT_KEYS}
    return per, tot


# ---------------------------------------------------------------- monitor CSV

def monitor_stats(csv_path, mono_start_s, win):
    """Per direction over the timed window `win` (mono seconds) and over the whole job:
    bytes delivered, drops, max queue. Window edges are exact to a few ms."""
    res = {"job": {}, "window": {}}
    try:
        f = open(csv_path)
    except OSError:
        return res
    with f:
        rows = csv.reader(l for l in f if not l.startswith("#"))
        header = next(rows, None)
        if not header:
            return res
        ix = {n: i for i, n in enumerate(header)}
        for r in rows:
            t = int(r[ix["t_ms"]])
            d = r[ix["dir"]]
            vals = (int(r[ix["bytes_out"]]), int(r[ix["drops"]]), int(r[ix["qmax_pkts"]]))
            scopes = ["job"]
            if win and win[0] <= mono_start_s + t / 1000.0 < win[1]:
                scopes.append("window")
            for s in scopes:
                x = res[s].setdefault(d, {"bytes_out": 0, "drops": 0, "qmax": 0, "ms": 0})
                x["bytes_out"] += vals[0]
                x["drops"] += vals[1]
                x["qmax"] = max(x["qmax"], vals[2])
                x["ms"] += 1
    return res


def cut_monitor_csv(src, dst, mono_start_s, t_from, t_to):
    """Copy the rows of [t_from, t_to) (mono seconds) of a monitor CSV, times rebased to 0."""
    a = int(round((t_from - mono_start_s) * 1000))
    b = int(round((t_to - mono_start_s) * 1000))
    with open(src) as f, open(dst, "w") as g:
        for line in f:
            if line.startswith("#") or line.startswith("t_ms"):
                g.write(line)
                continue
            t = int(line.split(",", 1)[0])
            if a <= t < b:
                g.write("%d,%s" % (t - a, line.split(",", 1)[1]))


# ---------------------------------------------------------------- trace

def trace_summary(trace_bin, tdir):
    """gridmpi-trace summary DIR --csv: the text and the RTO/retransmission totals."""
    csvdir = os.path.join(tdir, "csv")
    r = run([trace_bin, "summary", tdir, "--csv", csvdir])
    out = {"text": r.stdout, "ok": r.returncode == 0}
    conns = os.path.join(csvdir, "connections.csv")
    if os.path.exists(conns):
        with open(conns) as f:
            rows = list(csv.DictReader(f))
        out["columns"] = list(rows[0].keys()) if rows else []

        def col(*names):
            for n in names:
                if rows and n in rows[0]:
                    return n
            return None
        c_rto, c_ret = col("rtos", "total_rto", "rto"), col("retrans_segs", "total_retrans", "retrans")
        c_cc = col("cc", "congestion_control")
        out["rtos"] = sum(int(float(x[c_rto] or 0)) for x in rows) if c_rto else None
        out["retrans_segs"] = sum(int(float(x[c_ret] or 0)) for x in rows) if c_ret else None
        out["cc"] = sorted(set(x[c_cc] for x in rows)) if c_cc else None
        out["connections"] = len(rows)
    colls = os.path.join(csvdir, "collectives.csv")
    if os.path.exists(colls):
        with open(colls) as f:
            rows = list(csv.DictReader(f))
        out["coll_columns"] = list(rows[0].keys()) if rows else []
        c = next((n for n in ("rtos", "rtos_inside", "rto") if rows and n in rows[0]), None)
        out["coll_rtos"] = sum(int(float(x[c] or 0)) for x in rows) if c else None
    return out


# ---------------------------------------------------------------- jobs

def parse_output(text):
    """Lines 'KEYWORD k=v k=v ...' -> list of (keyword, dict)."""
    recs = []
    for line in text.splitlines():
        parts = line.split()
        if not parts or not parts[0].isupper() or not any("=" in p for p in parts[1:]):
            continue
        d = {}
        for p in parts[1:]:
            if "=" in p:
                k, v = p.split("=", 1)
                d[k] = v
        recs.append((parts[0], d))
    return recs


class Runner:
    def __init__(self, args, work, grid, snap):
        self.args, self.work, self.grid, self.snap = args, work, grid, snap
        self.jobs = []
        self.raw = open(os.path.join(work, "raw.log"), "a")

    def launcher_argv(self, impl, variant, prog, pargs, trace_dir, topo, job):
        """argv run on h0 and the environment added to it."""
        exe = os.path.join(self.work, "bin", impl, prog)
        hosts = ",".join(HOSTS)
        if impl == "mpich":
            env = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}
            argv = [MPICH + "/bin/mpiexec", "-launcher", "ssh", "-launcher-exec", AGENT, "-hosts", hosts,
                    "-n", "8", exe] + pargs
        elif impl == "openmpi":
            env = {}
            argv = [OMPI + "/bin/mpirun", "--allow-run-as-root", "--prtemca", "plm_ssh_agent", AGENT,
                    "--map-by", "node", "-H", hosts, "-n", "8", "--mca", "btl", "tcp,self", "--mca", "pml", "ob1",
                    exe] + pargs
        else:
            env = VARIANTS[variant][1](topo, job)
            argv = [os.path.join(self.snap, "bin", "gridmpirun"), "--launcher", AGENT, "-hosts", hosts, "-n", "8"]
            if trace_dir:
                argv += ["--trace", trace_dir]
            argv += [exe] + pargs
        return argv, env

    def run_job(self, delay, bench, impl, variant, param, pargs, timeout):
        for attempt in range(3):
            self.grid.ensure(self.args.wait_grid)
            job = self.run_job_once(delay, bench, impl, variant, param, pargs, timeout)
            if self.grid.ours():
                break
            log("  the grid changed during %s: running it again" % job["name"])
        job["attempts"] = attempt + 1
        self.jobs.append(job)
        return job

    def run_job_once(self, delay, bench, impl, variant, param, pargs, timeout):
        name = "%s-d%g-%s-%s" % (bench, delay, variant, param)
        jdir = os.path.join(self.work, "jobs", name)
        shutil.rmtree(jdir, ignore_errors=True)
        os.makedirs(jdir)
        topo = os.path.join(self.work, "topology-d%g.txt" % delay)
        trace_dir = os.path.join(jdir, "trace") if impl == "gridmpi" and not self.args.no_trace else None
        argv, env_add = self.launcher_argv(impl, variant, PROG_OF[bench], pargs, trace_dir, topo,
                                           {"bench": bench, "size": size_param(bench, param)})
        env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
        env.update(env_add)
        full = self.grid.exec_argv("h0", (["env"] + ["%s=%s" % kv for kv in sorted(env_add.items())]
                                          if env_add else []) + argv)
        others, waited = cpu_busy(self.args.load_sample), 0.0
        while others > self.args.calm and waited < self.args.job_wait:
            time.sleep(3)
            waited += 3 + self.args.load_sample
            others = cpu_busy(self.args.load_sample)
        ns0 = self.grid.nstat_all()
        mon_csv = os.path.join(jdir, "monitor.csv")
        a = time.monotonic()
        run([self.grid.tb, "monitor", "-o", mon_csv, "--start"])
        b = time.monotonic()
        t0 = time.time()
        try:
            p = subprocess.run(full, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=timeout, cwd=jdir)
            out, rc, timed_out = p.stdout, p.returncode, False
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc, timed_out = None, True
            self.grid.kill_leftovers()
        elapsed = time.time() - t0
        run([self.grid.tb, "monitor", "--stop", "-o", mon_csv])
        ns1 = self.grid.nstat_all()
        per_host, ns_tot = nstat_diff(ns0, ns1)
        recs = parse_output(out)
        cmdline = " ".join(shlex.quote(x) for x in full)
        self.raw.write("==== %s (rc %s, %.1f s)\n$ %s\n%s\n" % (name, rc, elapsed, cmdline, out))
        self.raw.flush()
        job = {"name": name, "delay_ms": delay, "bench": bench, "impl": impl, "variant": variant,
               "param": param, "cmd": cmdline, "rc": rc, "timed_out": timed_out, "elapsed_s": elapsed,
               "others_busy_pct": others, "waited_for_calm_s": waited, "nstat_job": ns_tot, "nstat_per_host": per_host,
               "monitor_csv": mon_csv, "monitor_start_mono": (a + b) / 2, "monitor_start_err_s": (b - a) / 2,
               "records": recs, "dir": jdir}
        win = None
        for kw, d in recs:
            if kw == "WINDOW":
                win = (float(d["mono_start"]), float(d["mono_end"]))
        job["window"] = win
        job["monitor"] = monitor_stats(mon_csv, job["monitor_start_mono"], win)
        if trace_dir and os.path.isdir(trace_dir):
            job["trace"] = trace_summary(os.path.join(self.snap, "bin", "gridmpi-trace"), trace_dir)
            if not (bench == "alltoall" and param == PLOT_SIZE):   # keep the JSON small
                job["trace"]["text"] = "\n".join(job["trace"]["text"].splitlines()[:2])
        errs = [l for l in out.splitlines() if "ERROR" in l or "panick" in l or "error" in l.lower()]
        job["errors"] = errs[:20]
        if timed_out:
            job["status"] = "timeout"
        elif rc == 0 and any(kw == "CHECK" and d.get("errors") == "0" for kw, d in recs):
            job["status"] = "ok"
        else:
            job["status"] = "fail"
        summary = ""
        for kw, d in recs:
            if kw == "RESULT":
                summary += " %s=%sms" % (d.get("mode"), d.get("med_ms"))
            if kw == "KCOUNT":
                summary += " rto=%s" % d.get("TcpExtTCPTimeouts")
        log("  %-44s %-7s %5.1fs others %3.0f%% nstat-rto %d%s%s" % (
            name, job["status"], elapsed, others, ns_tot["TcpExtTCPTimeouts"], summary,
            (" trace-rto %s" % job["trace"].get("rtos")) if job.get("trace") else ""))
        if job["status"] != "ok":
            for l in out.strip().splitlines()[-12:]:
                log("    | " + l)
        return job


def size_param(bench, param):
    """Bytes per peer of the job's main exchange."""
    if bench == "alltoall":
        return parse_size(param)
    if bench == "ft":
        nx, ny, nz = (int(x) for x in param.split("x"))
        return nx * ny * nz * 16 // 64
    return 0


PROG_OF = {"alltoall": "wan_coll", "bcast": "wan_coll", "allreduce": "wan_coll", "is": "is_sort",
           "ft": "ft_transpose"}


# ---------------------------------------------------------------- setup

def newest_mtime(d):
    t = 0
    for root, _, files in os.walk(d):
        for f in files:
            try:
                t = max(t, os.lstat(os.path.join(root, f)).st_mtime)
            except OSError:
                pass
    return t


def snapshot_gridmpi(work, settle_s=60, limit_s=1800):
    """Copy build/ once nothing in it has changed for settle_s (a `make build`
    may be running: a half-copied build would mix two versions)."""
    build = os.path.join(REPO, "build")
    snap = os.path.join(work, "gridmpi")
    t0 = time.time()
    while True:
        age = time.time() - newest_mtime(build)
        if age >= settle_s or time.time() - t0 > limit_s:
            before = newest_mtime(build)
            shutil.rmtree(snap, ignore_errors=True)
            shutil.copytree(build, snap, symlinks=True)
            if newest_mtime(build) == before:
                break
        log("build/ changed %.0f s ago (a build is running?): waiting before copying it" % age)
        time.sleep(max(5, settle_s - age))
    lib = os.path.join(snap, "lib", "libmpi.so.12")
    h = hashlib.sha256(open(lib, "rb").read()).hexdigest()[:16]

    def git(*a):
        r = run(["git", "-C", REPO] + list(a), stderr=subprocess.DEVNULL)
        return r.stdout.strip() if r.returncode == 0 else "?"
    info = run([os.path.join(snap, "bin", "gridmpirun"), "--info"], env={"PATH": os.environ["PATH"]}).stdout
    return snap, {
        "commit": git("rev-parse", "--short", "HEAD"),
        "subject": git("log", "-1", "--format=%s"),
        "dirty": git("status", "--porcelain", "--untracked-files=no"),
        "lib_built": datetime.datetime.fromtimestamp(os.path.getmtime(lib)).isoformat(timespec="minutes"),
        "lib_sha256": h,
        "info": info,
    }


def detect_features(info):
    """Settings of the WAN work beyond TCP tuning (pacing, cluster-aware collectives) in this build."""
    names = re.findall(r"^(GRIDMPI_\S+)\s+(\S*)", info, re.M)
    return {n: v for n, v in names if "PACE" in n or "PACING" in n or n.startswith("GRIDMPI_COLL_WAN")
            or n.startswith("GRIDMPI_HIER")}


def compile_programs(work, snap):
    wrappers = {"gridmpi": os.path.join(snap, "bin", "mpicc"), "mpich": MPICH + "/bin/mpicc",
                "openmpi": OMPI + "/bin/mpicc"}
    versions = {}
    for impl, cc in wrappers.items():
        d = os.path.join(work, "bin", impl)
        os.makedirs(d, exist_ok=True)
        for prog in PROGRAMS:
            cmd = [cc, "-O2", "-Wall", "-o", os.path.join(d, prog), os.path.join(HERE, prog + ".c"), "-lm"]
            r = run(cmd)
            if r.returncode != 0:
                sys.stdout.write(r.stdout)
                raise SystemExit("compiling %s with %s failed" % (prog, impl))
    versions["mpich"] = run([MPICH + "/bin/mpichversion"]).stdout.split("\n")[0].strip()
    versions["openmpi"] = (run([OMPI + "/bin/mpirun", "--version"]).stdout.split("\n") or ["?"])[0].strip()
    return versions


def write_topology(work, delay):
    path = os.path.join(work, "topology-d%g.txt" % delay)
    with open(path, "w") as f:
        f.write("# the testbed grid: gridmpi-testbed up 2x4 --rate 100mbit --delay %gms --queue %s\n" % (delay, QUEUE))
        for c, hs in CLUSTERS.items():
            f.write("cluster %s %s\n" % (c, " ".join(hs)))
        f.write("wan c0 c1 bandwidth=100mbit delay=%gms\n" % delay)
    # The same, wrong by 10x (variant gridmpi-wrongtopo).
    with open(path.replace(".txt", "-wrong.txt"), "w") as f:
        f.write("# wrong on purpose: the WAN is 100 Mbit/s\n")
        for c, hs in CLUSTERS.items():
            f.write("cluster %s %s\n" % (c, " ".join(hs)))
        f.write("wan c0 c1 bandwidth=1gbit delay=%gms\n" % delay)
    return path


# ---------------------------------------------------------------- the plan

def plan(args, impls, variants):
    """[(bench, impl, variant, param, program args, timeout)] for one delay."""
    q = args.quick
    jobs = []
    members = [(i, i) for i in impls if i != "gridmpi"] + (
        [("gridmpi", v) for v in variants] if "gridmpi" in impls else [])

    def rotated(g):
        """members, starting with a different one for each group, so that no
        implementation is always first (or last) after a change of size."""
        k = g % len(members) if members else 0
        return members[k:] + members[:k]
    if "alltoall" in args.only:
        for g, size in enumerate(args.sizes):
            for impl, var in rotated(g):
                pa = ["--op", "alltoall", "--size", str(size), "--reps", str(3 if q else 5),
                      "--rep-ms", str(300 if q else 1000), "--warmup", "3", "--max-iters", "400"]
                jobs.append(("alltoall", impl, var, fmt_size(size), pa, 600))
    few = [m for m in members if m[1] in SHORT_LIST or m[0] != "gridmpi"]

    def rotated_few(g):
        k = g % len(few) if few else 0
        return few[k:] + few[:k]
    for op in ("bcast", "allreduce"):
        if op in args.only:
            for impl, var in rotated_few(len(jobs)):
                pa = ["--op", op, "--size", "1m", "--calls", str(5 if q else 11), "--loop", "--reps",
                      str(3 if q else 5), "--rep-ms", str(300 if q else 1000)]
                jobs.append((op, impl, var, "1M", pa, 300))
    for app, params in (("is", [("2^20keys", ["--keys-log2", "20"]), ("2^18keys", ["--keys-log2", "18"])]),
                        ("ft", [("64x64x64", ["--grid", "64x64x64"]), ("32x32x64", ["--grid", "32x32x64"])])):
        if app not in args.only:
            continue
        for pname, pa in (params[:1] if q else params):
            for impl, var in rotated_few(len(jobs)):
                extra = ["--iters", str(5 if q else 10), "--reps", str(2 if q else 3)]
                jobs.append((app, impl, var, pname, pa + extra, 600))
    return jobs


# ---------------------------------------------------------------- plots

PLOT_SIZE = "16K"
PLOT_SPAN_S = 0.6


def make_plots(data, tb, trace_bin, outdir, rel):
    """Monitor plots (a 0.6 s slice of the timed calls) of the 16 KiB alltoall for
    every implementation and the main GridMPI variants, and screenshots of
    gridmpi-trace reports. Returns {key: path relative to the report}."""
    os.makedirs(outdir, exist_ok=True)
    plots = {}
    chrome = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    for j in data["jobs"]:
        if j["bench"] != "alltoall" or j["param"] != PLOT_SIZE or not j.get("window"):
            continue
        if j["variant"] not in ("mpich", "openmpi", "gridmpi", "gridmpi-nopace", "gridmpi-flat", "gridmpi-nomap"):
            continue
        base = "a2a-%s-d%g-%s" % (PLOT_SIZE.lower(), j["delay_ms"], j["variant"])
        cut = os.path.join(j["dir"], base + ".csv")
        w0 = j["window"][0]
        cut_monitor_csv(j["monitor_csv"], cut, j["monitor_start_mono"], w0, w0 + PLOT_SPAN_S)
        svg = os.path.join(outdir, base + ".svg")
        title = "%s: MPI_Alltoall %s per peer, 2x4 grid, WAN 100 Mbit/s, %g ms, 40-packet queue (%.1f s of the timed calls)" % (
            j["variant"], PLOT_SIZE, j["delay_ms"], PLOT_SPAN_S)
        r = run([tb, "plot", cut, "-o", svg, "--title", title])
        if r.returncode == 0:
            plots["monitor:%g:%s" % (j["delay_ms"], j["variant"])] = os.path.join(rel, base + ".svg")
            if shutil.which("rsvg-convert"):
                run(["rsvg-convert", "-w", "1200", svg, "-o", svg[:-4] + ".png"])
        else:
            log("plot failed: %s" % r.stdout.strip())
    for j in data["jobs"]:
        if j["bench"] != "alltoall" or j["param"] != PLOT_SIZE or j["impl"] != "gridmpi":
            continue
        if j["variant"] not in ("gridmpi", "gridmpi-nopace", "gridmpi-rto200"):
            continue
        tdir = os.path.join(j["dir"], "trace")
        if not os.path.isdir(tdir):
            continue
        base = "trace-a2a-%s-d%g-%s" % (PLOT_SIZE.lower(), j["delay_ms"], j["variant"])
        html = os.path.join(j["dir"], base + ".html")
        r = run([trace_bin, "report", tdir, "-o", html, "--title",
                 "%s, MPI_Alltoall %s per peer, 2x4 grid, WAN 100 Mbit/s %g ms, 40-packet queue"
                 % (j["variant"], PLOT_SIZE, j["delay_ms"])])
        if r.returncode != 0 or not chrome:
            continue
        png = os.path.join(outdir, base + ".png")
        run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
             "--user-data-dir=" + os.path.join(j["dir"], "chrome"), "--window-size=1180,1400",
             "--screenshot=" + png, "file://" + html], stderr=subprocess.DEVNULL, timeout=120)
        if os.path.exists(png):
            plots["trace:%g:%s" % (j["delay_ms"], j["variant"])] = os.path.join(rel, base + ".png")
    return plots


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes, reps and iterations (a smoke run)")
    ap.add_argument("--delays", default="0,5", help="one-way WAN delays in ms (default 0,5)")
    ap.add_argument("--sizes", default=None, help="alltoall sizes per peer, e.g. 4k,16k,1m")
    ap.add_argument("--only", default="alltoall,bcast,allreduce,is,ft")
    ap.add_argument("--impls", default="mpich,openmpi,gridmpi")
    ap.add_argument("--variants", default=None, help="GridMPI variants (default: all known)")
    ap.add_argument("--out", default=None, help="markdown file to write")
    ap.add_argument("--no-trace", action="store_true", help="run GridMPI without --trace")
    ap.add_argument("--wait-idle", type=float, default=0, help="wait up to S s for an idle machine per delay")
    ap.add_argument("--wait-grid", type=float, default=1800, help="wait up to S s for someone else's grid")
    ap.add_argument("--load-sample", type=float, default=0.3, help="s of CPU sampling before each job")
    ap.add_argument("--calm", type=float, default=50,
                    help="before a job, wait while other users keep the CPUs busier than this (%%)")
    ap.add_argument("--job-wait", type=float, default=30, help="... but at most this long (s) per job")
    ap.add_argument("--work", default="/tmp/gridmpi-wan-bench", help="work directory (snapshot, jobs, traces)")
    ap.add_argument("--report-only", default=None, help="write the report from a RUN.json, run nothing")
    args = ap.parse_args()

    if args.report_only:
        import report
        data = json.load(open(args.report_only))
        out = args.out or os.path.join(HERE, "RESULTS.md")
        report.write(data, out, HERE)
        log("wrote %s" % out)
        return 0

    if os.geteuid() != 0:
        raise SystemExit("run.py needs root (the testbed makes network namespaces)")
    args.only = args.only.split(",")
    args.delays = [float(x) for x in args.delays.split(",")]
    args.sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else (
        QUICK_SIZES if args.quick else FULL_SIZES)
    impls = args.impls.split(",")
    full_run = not (args.quick or args.sizes != FULL_SIZES or args.only != ["alltoall", "bcast", "allreduce", "is",
                                                                             "ft"]
                    or args.impls != "mpich,openmpi,gridmpi" or args.variants or args.delays != [0.0, 5.0])

    stamp = time.strftime("%Y%m%d-%H%M%S")
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    for d in ("jobs", "bin"):
        shutil.rmtree(os.path.join(work, d), ignore_errors=True)
    log("work directory %s" % work)
    snap, src = snapshot_gridmpi(work)
    features = detect_features(src["info"])
    probe = run([os.path.join(snap, "bin", "gridmpirun"), "--info"],
                env={"PATH": os.environ["PATH"], "GRIDMPI_COLL_ALLTOALL": "wan"})
    if probe.returncode == 0:
        features["GRIDMPI_COLL_* = wan"] = "cluster-aware collectives, chosen by auto across clusters"
    log("GridMPI commit %s%s, libmpi built %s (sha256 %s); WAN features beyond TCP tuning: %s" % (
        src["commit"], " + uncommitted changes" if src["dirty"] else "", src["lib_built"], src["lib_sha256"],
        features or "none yet"))
    variants = args.variants.split(",") if args.variants else [
        v for v in VARIANTS if v not in NEEDS or NEEDS[v] in src["info"]]
    for v in variants:
        add_custom_variant(v)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        sys.exit("run.py: unknown variants %s (known: %s, or gridmpi+KEY=VALUE...)" % (unknown, ", ".join(VARIANTS)))
    versions = compile_programs(work, snap)
    tb = os.path.join(snap, "bin", "gridmpi-testbed")
    grid = Grid(tb)

    data = {"stamp": stamp, "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "argv": sys.argv, "full_run": full_run, "source": src, "features": features, "versions": versions,
            "machine": {"nproc": os.cpu_count(), "kernel": os.uname().release,
                        "loadavg_start": open("/proc/loadavg").read().strip()},
            "variants": {v: VARIANTS[v][0] for v in variants},
            "sizes": args.sizes, "delays": args.delays, "quick": args.quick, "jobs": [], "grids": []}
    runner = Runner(args, work, grid, snap)
    t_start = time.time()
    resdir = os.path.join(HERE, "results") if full_run else os.path.join(work, "results")
    os.makedirs(resdir, exist_ok=True)
    json_path = os.path.join(resdir, "%s%s.json" % (stamp, "" if full_run else "-partial"))

    def save():
        data["jobs"] = [{k: v for k, v in j.items()} for j in runner.jobs]
        data["duration_s"] = time.time() - t_start
        data["grid_ups"] = grid.ups
        data["machine"]["loadavg_end"] = open("/proc/loadavg").read().strip()
        with open(json_path, "w") as f:
            json.dump(data, f, indent=1)

    try:
        for delay in args.delays:
            write_topology(work, delay)
            if args.wait_idle:
                b = wait_idle(args.wait_idle)
                log("machine %.0f%% busy before the grid" % b)
            cmd = grid.up(delay, args.wait_grid)
            st = grid.status_json()
            data["grids"].append({"delay_ms": delay, "cmd": " ".join(cmd), "status": st})
            jobs = plan(args, impls, variants)
            log("delay %g ms: %d jobs" % (delay, len(jobs)))
            # Rotate which implementation goes first within each group of same (bench, param).
            for k, (bench, impl, var, param, pa, to) in enumerate(jobs):
                runner.run_job(delay, bench, impl, var, param, pa, to)
                if k % 10 == 9:
                    save()
            data["grids"][-1]["status_end"] = grid.status_json()
            grid.down()
            save()
    finally:
        save()
        grid.down()
    log("raw output: %s; data: %s; %.0f s" % (os.path.join(work, "raw.log"), json_path, time.time() - t_start))
    import report
    out = args.out or (os.path.join(HERE, "RESULTS.md") if full_run else
                       os.path.join(resdir, "%s-partial.md" % stamp))
    plotdir = os.path.join(HERE, "plots") if full_run else os.path.join(resdir, stamp + "-plots")
    data = json.load(open(json_path))
    try:
        data["plots"] = make_plots(data, tb, os.path.join(snap, "bin", "gridmpi-trace"), plotdir,
                                   os.path.relpath(plotdir, os.path.dirname(os.path.abspath(out))))
    except Exception as e:  # plots are a bonus: never lose the tables for them
        log("plots failed: %r" % e)
        data["plots"] = {}
    with open(json_path, "w") as f:
        json.dump(data, f, indent=1)
    report.write(data, out, HERE)
    log("wrote %s" % out)
    bad = [j["name"] for j in runner.jobs if j["status"] != "ok"]
    if bad:
        log("jobs that failed: %s" % ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main())
