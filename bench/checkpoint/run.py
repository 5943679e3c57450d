#!/usr/bin/env python3
"""Checkpoint/restart of whole MPI jobs, the full version of
tests/checkpoint/mpi.sh (docs/checkpoint.md).

    python3 bench/checkpoint/run.py [--rounds 10] [--where host,testbed] [--only NAMES] [--out FILE]

For each program (tests/checkpoint/mpi_loop.c; bench/wan's NPB-like IS,
FT, CG, LU and MG kernels, which verify their own results; an mpi4py + numpy
program) at 4 ranks on this host and 8 ranks on an emulated 2x4 grid
(100 Mbit/s, 5 ms, as root; the grid is brought up and down here; the
restarts alternate between every rank on another host of its cluster and
half the ranks moved to the other cluster, a new cluster map): the job
is checkpointed at a random moment (SIGQUIT to gridmpirun), killed by
SIGKILL once the checkpoint is complete, and restarted with
`gridmpirun --restart`; the restarted run must verify (the kernels' CHECK
line; the loops' checksum equal to an uninterrupted run's). Reported per
program: runs verified, the checkpoint's time (slowest rank, as gridmpirun
says it), the images' size, and the restart's time to the end of the job
against the uninterrupted run's whole time.

A benchmark: nothing here asserts on time; a run that does not verify
is counted, and the table says so.
"""
import argparse
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("GRIDMPI_BUILD", os.path.join(ROOT, "build"))
RUN = os.path.join(BUILD, "bin", "gridmpirun")
TB = os.path.join(BUILD, "bin", "gridmpi-testbed")
AGENT = "/run/gridmpi-testbed/bin/gridmpi-testbed-ssh"
PY = os.path.join(os.environ.get("MPI4PY_VENV", "/opt/mpi4py"), "bin", "python")
HOSTS = ["h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"]
# The restarts alternate: every rank on another host of its cluster, or
# half the ranks moved to the other cluster (a new cluster map).
OTHER_HOSTS = ["h1", "h0", "h3", "h2", "h5", "h4", "h7", "h6"]
MOVED_HOSTS = ["h0", "h4", "h1", "h5", "h2", "h6", "h3", "h7"]


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build(work):
    cc = os.path.join(BUILD, "bin", "mpicc")
    sh([cc, "-O1", "-o", f"{work}/mpi_loop", f"{ROOT}/tests/checkpoint/mpi_loop.c"])
    for k in ("is_sort", "ft_transpose", "cg_solve", "lu_sweep", "mg_vcycle"):
        sh([cc, "-O2", "-o", f"{work}/{k}", f"{ROOT}/bench/wan/{k}.c", "-lm"])
    shutil.copy(f"{ROOT}/tests/checkpoint/mpi4py_loop.py", work)


def programs(work, where):
    """(name, argv, how the output verifies: a regex, or 'same' as the reference)."""
    big = where == "host"
    progs = [
        ("mpi_loop", [f"{work}/mpi_loop", "1500" if big else "150"], "same"),
        ("IS-like", [f"{work}/is_sort", "--keys-log2", "20", "--iters", "50", "--reps", "12" if big else "4"], r"^CHECK ok errors=0$"),
        ("FT-like", [f"{work}/ft_transpose", "--reps", "30" if big else "6"], r"^CHECK ok errors=0$"),
        ("CG-like", [f"{work}/cg_solve", "--reps", "6" if big else "2"], r"^CHECK ok errors=0$"),
        ("LU-like", [f"{work}/lu_sweep", "--iters", "20", "--reps", "20" if big else "4"], r"^CHECK ok errors=0$"),
        ("MG-like", [f"{work}/mg_vcycle", "--reps", "150" if big else "8"], r"^CHECK ok errors=0$"),
    ]
    if os.access(PY, os.X_OK) and subprocess.run([PY, "-c", "import mpi4py, numpy"], capture_output=True).returncode == 0:
        progs.append(("mpi4py + numpy", [PY, f"{work}/mpi4py_loop.py", "800" if big else "200"], "same"))
    return progs


class Place:
    """Where jobs run: this host, or the emulated grid (through h0/h1)."""

    def __init__(self, where):
        self.where = where
        self.ranks = 4 if where == "host" else 8

    def cmd(self, args, hosts=HOSTS):
        if self.where == "host":
            return [RUN] + args
        return [TB, "exec", hosts[0], "--", RUN, "--launcher", AGENT, "-hosts", ",".join(hosts),
                "-genv", "LD_LIBRARY_PATH", os.path.join(BUILD, "lib")] + args


def gridmpirun_pid(popen, ckdir):
    """The gridmpirun process of a job (under the testbed, a child of exec)."""
    for _ in range(50):
        out = subprocess.run(["pgrep", "-f", f"^{RUN} .*--checkpoint-dir {ckdir}( |$)"], capture_output=True, text=True).stdout.split()
        if out:
            return int(out[0])
        time.sleep(0.1)
    return popen.pid


def latest(ckdir):
    try:
        return int(open(os.path.join(ckdir, "latest")).read().strip() or 0)
    except (OSError, ValueError):
        return 0


def one_round(place, name, argv, verify, ref_line, ref_time, work, n):
    ckdir = f"{work}/ck-{place.where}-{re.sub('[^a-z0-9]', '', name.lower())}-{n}"
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "lib"))
    job = subprocess.Popen(place.cmd(["-n", str(place.ranks), "--checkpoint-dir", ckdir] + argv),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    pid = gridmpirun_pid(job, ckdir)
    time.sleep(random.uniform(0.15, 0.6) * ref_time)
    asked = time.monotonic()
    try:
        os.kill(pid, signal.SIGQUIT)
    except ProcessLookupError:
        pass
    while latest(ckdir) < 1 and time.monotonic() - asked < 60 and job.poll() is None:
        time.sleep(0.05)
    complete = latest(ckdir) >= 1
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    out, _ = job.communicate()
    m = re.search(r"checkpoint 1 written: \d+ ranks, ([\d.]+) MB, slowest rank (\d+) ms", out)
    if not complete or not m:
        return {"ok": False, "why": "no checkpoint: " + out.strip()[-300:]}
    started = time.monotonic()
    moved = n % 2 == 1
    r = subprocess.run(place.cmd(["--restart", ckdir], MOVED_HOSTS if moved else OTHER_HOSTS), capture_output=True, text=True, env=env, timeout=600)
    took = time.monotonic() - started
    lines = r.stdout.splitlines()
    ok = r.returncode == 0 and (ref_line in lines if verify == "same" else any(re.match(verify, l) for l in lines))
    why = "" if ok else (r.stdout + r.stderr).strip()[-300:]
    if ok and moved and place.where != "host" and "cluster map changed at the restart" not in r.stdout + r.stderr:
        ok, why = False, "the restart into other clusters did not report a new cluster map"
    shutil.rmtree(ckdir, ignore_errors=True)
    return {"ok": ok, "mb": float(m.group(1)), "ms": int(m.group(2)), "restart_s": took,
            "why": why}


def grid_up():
    if os.geteuid() != 0 or not os.access(TB, os.X_OK):
        return "needs root and build/bin/gridmpi-testbed"
    if os.path.exists("/run/gridmpi-testbed/state.json"):
        return "another emulated grid is up"
    r = subprocess.run([TB, "up", "2x4", "--rate", "100mbit", "--delay", "5ms", "--queue", "100p"], capture_output=True, text=True)
    return None if r.returncode == 0 else "gridmpi-testbed up failed: " + r.stderr[-300:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--where", default="host,testbed")
    ap.add_argument("--out", default=None, help="also append the table to this file")
    ap.add_argument("--only", default=None, help="these programs only (comma-separated names as in the table)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gridmpi-ckbench.")
    os.chmod(work, 0o755)
    build(work)
    rows = []
    load = os.getloadavg()[0]
    started = time.strftime('%Y-%m-%d %H:%M')
    for where in args.where.split(","):
        if where == "testbed":
            why = grid_up()
            if why:
                print(f"skip testbed: {why}", file=sys.stderr)
                continue
        place = Place(where)
        try:
            for name, argv, verify in programs(work, where):
                if args.only and name not in args.only.split(","):
                    continue
                env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "lib"))
                t0 = time.monotonic()
                # The reference runs as a checkpointed job does (TCP only).
                ref = subprocess.run(place.cmd(["-n", str(place.ranks), "--checkpoint-dir", f"{work}/ref"] + argv),
                                     capture_output=True, text=True, env=env, timeout=600)
                ref_time = time.monotonic() - t0
                ref_line = next((l for l in ref.stdout.splitlines() if re.match(r"^(mpi_loop|mpi4py_loop):.*wrong 0$", l)), None)
                if ref.returncode != 0 or (verify == "same" and ref_line is None):
                    print(f"{name} on {where}: the uninterrupted run failed: {ref.stdout[-300:]} {ref.stderr[-300:]}", file=sys.stderr)
                    continue
                results = []
                for n in range(args.rounds):
                    r = one_round(place, name, argv, verify, ref_line, ref_time, work, n)
                    results.append(r)
                    print(f"{where} {name} round {n + 1}: {'verified' if r['ok'] else 'FAILED ' + r['why']}", flush=True)
                good = [r for r in results if "ms" in r]
                rows.append((name, where, place.ranks, sum(r["ok"] for r in results), len(results),
                             statistics.median(r["ms"] for r in good) if good else None,
                             max((r["ms"] for r in good), default=None),
                             statistics.median(r["mb"] for r in good) if good else None,
                             statistics.median(r["restart_s"] for r in good) if good else None, ref_time))
        finally:
            if where == "testbed":
                subprocess.run([TB, "down"], capture_output=True)
    head = (f"Checkpoint at a random moment, SIGKILL, `gridmpirun --restart`, {args.rounds} rounds each "
            f"(`python3 bench/checkpoint/run.py --rounds {args.rounds}`, started {started}, load {load:.2f} at the start):\n\n"
            "| program | where | ranks | restarts verified | checkpoint ms (median, worst; slowest rank) | images MB (all ranks) | restart to end s (median) | uninterrupted run s |\n"
            "|---|---|---|---|---|---|---|---|\n")
    table = head + "".join(
        f"| {n} | {'this host' if w == 'host' else '2x4 testbed, 5 ms'} | {k} | {ok}/{tot} | "
        + (f"{ms:.0f}, {worst} | {mb:.1f} | {rs:.2f} |" if ms is not None else "- | - | - |")
        + f" {rt:.2f} |\n"
        for (n, w, k, ok, tot, ms, worst, mb, rs, rt) in rows)
    print("\n" + table)
    if args.out:
        with open(args.out, "a") as f:
            f.write(table + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
