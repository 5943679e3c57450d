#!/usr/bin/env python3
"""Collective MPI-IO bandwidth of GridMPI, MPICH and Open MPI, side by side.

    make build && python3 bench/io/run.py          # about 5 minutes; writes bench/io/RESULTS.md

io_bw.c (compiled with each MPI's own mpicc -O2) writes and reads a square
2-D array of doubles, a block per rank (a subarray file view), with
MPI_File_write_at_all / MPI_File_read_at_all; it checks every element. Runs:
4 ranks on this machine, and (as root, when no other grid is up) 8 ranks
across the two clusters of an emulated 2x4 grid (gridmpi-testbed, 100 Mbit/s
WAN, 5 ms each way), where the file is on the machine's file system, which
every emulated host shares: what crosses the WAN is the collective's own
exchange between ranks and aggregators. The MPIs run one after the other
for each point, rotating which goes first. Nothing here asserts on time.
"""

import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MPICH = os.environ.get("BENCH_MPICH_PREFIX", "/opt/peers/mpich")
OMPI = os.environ.get("BENCH_OPENMPI_PREFIX", "/opt/peers/openmpi")
TB = os.path.join(REPO, "build", "bin", "gridmpi-testbed")
AGENT = "/run/gridmpi-testbed/bin/gridmpi-testbed-ssh"
HOSTS = ",".join("h%d" % i for i in range(8))
IMPLS = ["gridmpi", "mpich", "openmpi"]
NAME = {"gridmpi": "GridMPI", "mpich": "MPICH", "openmpi": "Open MPI"}
MPICC = {"gridmpi": os.path.join(REPO, "build", "bin", "mpicc"), "mpich": MPICH + "/bin/mpicc", "openmpi": OMPI + "/bin/mpicc"}
CLEAN = ("GRIDMPI_", "MPIR_CVAR_", "MPICH_", "HYDRA_", "FI_", "UCX_", "OMPI_", "PMIX_", "PRTE_")


def log(msg):
    print(msg, flush=True)


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(CLEAN)}


def local_argv(impl, n, exe, args):
    if impl == "gridmpi":
        return [os.path.join(REPO, "build", "bin", "gridmpirun"), "-n", str(n), exe] + args
    if impl == "mpich":
        return [MPICH + "/bin/mpiexec", "-n", str(n), exe] + args
    extra = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return [OMPI + "/bin/mpiexec"] + extra + ["--oversubscribe", "-n", str(n), exe] + args


def grid_argv(impl, exe, args):
    """Run on h0 of the emulated grid, 8 ranks, one per host (as bench/wan does)."""
    if impl == "gridmpi":
        argv = [os.path.join(REPO, "build", "bin", "gridmpirun"), "--launcher", AGENT, "-hosts", HOSTS, "-n", "8", exe] + args
    elif impl == "mpich":
        argv = ["env", "MPIR_CVAR_CH4_NETMOD=ofi", "FI_PROVIDER=tcp", MPICH + "/bin/mpiexec", "-launcher", "ssh",
                "-launcher-exec", AGENT, "-hosts", HOSTS, "-n", "8", exe] + args
    else:
        argv = [OMPI + "/bin/mpirun", "--allow-run-as-root", "--prtemca", "plm_ssh_agent", AGENT, "--map-by", "node",
                "-H", HOSTS, "-n", "8", "--mca", "btl", "tcp,self", "--mca", "pml", "ob1", exe] + args
    return [TB, "exec", "h0", "--"] + argv


def run(argv, timeout, raw):
    raw.write("$ " + " ".join(argv) + "\n")
    try:
        r = subprocess.run(argv, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        out, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
    raw.write(out + "\n")
    m = re.search(r"^io_bw .*$", out, re.M)
    if rc != 0 or not m or "ERROR" in out:
        return None
    return {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", m.group(0)) if k.endswith(("best", "median"))}


def uptime():
    return subprocess.run(["uptime"], stdout=subprocess.PIPE, text=True).stdout.strip()


def table(title, rows, sizes):
    lines = ["### " + title, "", "| MiB | access | " + " | ".join(NAME[i] for i in IMPLS) + " |", "|---|---|" + "---|" * len(IMPLS)]
    for mib in sizes:
        for access in ("write", "read"):
            cells = []
            for impl in IMPLS:
                res = rows.get((impl, mib))
                cells.append("FAIL" if res is None else "%.0f (%.0f)" % (res[access + "_median"], res[access + "_best"]))
            lines.append("| %d | %s | %s |" % (mib, access, " | ".join(cells)))
    return lines + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="16,64,256", help="MiB of the array on one host (comma list)")
    ap.add_argument("--grid-sizes", default="16,64", help="MiB across the emulated grid")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--no-grid", action="store_true", help="skip the emulated grid")
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gridmpi-io-bench.")
    raw = open(os.path.join(HERE, "RESULTS-raw.log"), "w")
    exes = {}
    for impl in IMPLS:
        exe = os.path.join(work, "io_bw." + impl)
        r = subprocess.run([MPICC[impl], "-O2", "-o", exe, os.path.join(HERE, "io_bw.c"), "-lm"], env=clean_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            sys.exit("%s: compiling io_bw.c failed:\n%s" % (impl, r.stdout))
        exes[impl] = exe
    before = uptime()
    log("load before: " + before)
    sizes = [int(s) for s in args.sizes.split(",")]
    local, point = {}, 0
    for mib in sizes:
        order = IMPLS[point % 3:] + IMPLS[:point % 3]
        point += 1
        for impl in order:
            res = run(local_argv(impl, args.ranks, exes[impl], [os.path.join(work, "f." + impl), str(mib), str(args.reps)]), 600, raw)
            local[(impl, mib)] = res
            log("one host %s %d MiB: %s" % (impl, mib, res))
    grid, grid_note = {}, ""
    gsizes = [int(s) for s in args.grid_sizes.split(",")]
    if args.no_grid:
        grid_note = "not run (--no-grid)"
    elif os.geteuid() != 0:
        grid_note = "not run (needs root)"
    elif os.path.exists("/run/gridmpi-testbed/state.json"):
        grid_note = "not run (another emulated grid was up)"
    else:
        up = subprocess.run([TB, "up", "2x4", "--rate", "100mbit", "--delay", "5ms", "--queue", "100p"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
        if up.returncode != 0:
            grid_note = "not run (gridmpi-testbed up failed: %s)" % up.stdout.strip()[-200:]
        else:
            try:
                for mib in gsizes:
                    order = IMPLS[point % 3:] + IMPLS[:point % 3]
                    point += 1
                    for impl in order:
                        res = run(grid_argv(impl, exes[impl], [os.path.join(work, "g." + impl), str(mib), str(args.reps)]), 900, raw)
                        grid[(impl, mib)] = res
                        log("grid %s %d MiB: %s" % (impl, mib, res))
            finally:
                subprocess.run([TB, "down"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = uptime()
    log("load after: " + after)
    shutil.rmtree(work, ignore_errors=True)
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE, text=True).stdout.strip()
    out = [
        "# Collective MPI-IO bandwidth",
        "",
        "Written by `python3 bench/io/run.py` (see its docstring and [io_bw.c](io_bw.c)) on %s, GridMPI %s;"
        " raw output of every job in [RESULTS-raw.log](RESULTS-raw.log)." % (datetime.date.today().isoformat(), commit),
        "Load: before `%s`; after `%s` (2 CPUs)." % (before, after),
        "",
        "MB/s (10^6 bytes per second) of the whole array per collective access, median (best) of %d repetitions;"
        " a rank's block is a subarray view, %d ranks in a 2-D grid. FAIL: the job failed or read wrong data." % (args.reps, args.ranks),
        "",
    ]
    out += table("One host, %d ranks" % args.ranks, local, sizes)
    if grid:
        out += table("Emulated 2x4 grid, 8 ranks, one per host (100 Mbit/s WAN, 5 ms each way)", grid, gsizes)
    else:
        out += ["### Emulated 2x4 grid", "", grid_note, ""]
    with open(args.out, "w") as f:
        f.write("\n".join(out))
    log("wrote " + args.out)


if __name__ == "__main__":
    main()
