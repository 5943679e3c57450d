#!/usr/bin/env python3
"""bench/wan/scale.py: GridMPI against MPICH and Open MPI at the seeds'
scale (two clusters of 16 hosts) and across four clusters with unequal
links (issue 17), one rank per host, on the testbed.

    sudo python3 bench/wan/scale.py                       # both grids
    sudo python3 bench/wan/scale.py --grids 2x16 --delays 10
    sudo python3 bench/wan/scale.py --grids 4x8 --only alltoall

Grids:
  2x16  gridmpi-testbed up 2x16 --rate 100mbit --delay D --queue 40p --cc cubic
        (one WAN link, per direction 100 Mbit/s, 40-packet drop-tail queue)
  4x8   gridmpi-testbed up bench/wan/grids/4x8-unequal.toml (a full mesh of
        six links of 25-100 Mbit/s and 5-15 ms, 40-packet queues)

Programs (bench/wan/, each built with its MPI's own mpicc -O2): is_sort
(NPB-IS-like: MPI_Alltoall of counts, MPI_Alltoallv of keys), ft_transpose
(NPB-FT-like: MPI_Alltoall transposes), wan_coll --op alltoall. Every
program checks its result and reads the kernel's retransmission timeouts
(TcpExtTCPTimeouts) on every host right before its first and after its
last timed call; the drops at the WAN queues are the testbed's counters
before and after the whole job (start-up included: GridMPI's start-up
measurement of the WAN overflows the queue on purpose for 300 ms per
direction of every link).

Implementations: MPICH over TCP (FI_PROVIDER=tcp), Open MPI (ob1, tcp),
`gridmpi` out of the box (no topology file, no setting: clusters and WAN
bandwidths found at start-up) and `gridmpi-file` (a topology file with
the grid's true rates and delays). GridMPI runs from build/ (make build).
"""

import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(REPO, "build")
TB = os.path.join(BUILD, "bin", "gridmpi-testbed")
AGENT = "/run/gridmpi-testbed/bin/gridmpi-testbed-ssh"
MPICH = os.environ.get("MPICH_PREFIX", "/opt/peers/mpich")
OMPI = os.environ.get("OMPI_PREFIX", "/opt/peers/openmpi")
PROGRAMS = ["wan_coll", "is_sort", "ft_transpose"]
IMPLS = ["mpich", "openmpi", "gridmpi", "gridmpi-file"]
UNEQUAL = os.path.join(HERE, "grids", "4x8-unequal.toml")
KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR")


def log(msg):
    print(time.strftime("%H:%M:%S ") + msg, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def links_of(grid):
    """[(a, b, rate bit/s, one-way delay s)] of the grid's WAN links."""
    if grid["name"] == "2x16":
        return [(0, 1, 100e6, grid["delay_ms"] / 1e3)]
    links = []
    text = open(UNEQUAL).read()
    for block in text.split("[[link]]")[1:]:
        a, b = re.search(r'clusters = \["c(\d)", "c(\d)"\]', block).groups()
        rate = float(re.search(r'rate = "(\d+)mbit"', block).group(1)) * 1e6
        delay = float(re.search(r'delay = "(\d+)ms"', block).group(1)) / 1e3
        links.append((int(a), int(b), rate, delay))
    return links


def grids(args):
    out = []
    for g in args.grids:
        if g == "2x16":
            for d in args.delays:
                out.append({"name": "2x16", "delay_ms": d, "clusters": 2, "per": 16,
                            "up": [TB, "up", "2x16", "--rate", "100mbit", "--delay", "%gms" % d, "--queue", "40p",
                                   "--cc", "cubic"],
                            "title": "2 clusters x 16 hosts, 100 Mbit/s, %g ms one-way, 40-packet queue" % d})
        elif g == "4x8":
            out.append({"name": "4x8", "delay_ms": None, "clusters": 4, "per": 8, "up": [TB, "up", UNEQUAL],
                        "title": "4 clusters x 8 hosts, six unequal links (bench/wan/grids/4x8-unequal.toml)"})
        else:
            raise SystemExit("unknown grid %s (2x16, 4x8)" % g)
    return out


def write_topology(work, grid):
    path = os.path.join(work, "topology-%s-%s.txt" % (grid["name"], grid["delay_ms"]))
    per = grid["per"]
    with open(path, "w") as f:
        f.write("# the testbed grid: %s\n" % " ".join(grid["up"][1:]))
        for c in range(grid["clusters"]):
            f.write("cluster c%d %s\n" % (c, " ".join("h%d" % (c * per + i) for i in range(per))))
        for a, b, rate, delay in links_of(grid):
            f.write("wan c%d c%d bandwidth=%dmbit delay=%gms\n" % (a, b, rate / 1e6, delay * 1e3))
    return path


def compile_programs(work):
    wrappers = {"gridmpi": os.path.join(BUILD, "bin", "mpicc"), "mpich": MPICH + "/bin/mpicc",
                "openmpi": OMPI + "/bin/mpicc"}
    for impl, cc in wrappers.items():
        d = os.path.join(work, "bin", impl)
        os.makedirs(d, exist_ok=True)
        for prog in PROGRAMS:
            r = run([cc, "-O2", "-o", os.path.join(d, prog), os.path.join(HERE, prog + ".c"), "-lm"])
            if r.returncode != 0:
                sys.stdout.write(r.stdout)
                raise SystemExit("compiling %s with %s failed" % (prog, impl))


def wan_drops():
    r = run([TB, "status"])
    return sum(int(x) for x in re.findall(r"drop-tail drops (\d+)", r.stdout))


def job_argv(impl, n, exe, pargs, topo):
    hosts = ",".join("h%d" % i for i in range(n))
    if impl == "mpich":
        return {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}, [
            MPICH + "/bin/mpiexec", "-launcher", "ssh", "-launcher-exec", AGENT, "-hosts", hosts, "-n", str(n), exe] + pargs
    if impl == "openmpi":
        return {}, [OMPI + "/bin/mpirun", "--allow-run-as-root", "--prtemca", "plm_ssh_agent", AGENT, "--map-by", "node",
                    "-H", hosts, "-n", str(n), "--mca", "btl", "tcp,self", "--mca", "pml", "ob1", exe] + pargs
    env = {"GRIDMPI_TOPOLOGY": topo} if impl == "gridmpi-file" else {}
    return env, [os.path.join(BUILD, "bin", "gridmpirun"), "--launcher", AGENT, "-hosts", hosts, "-n", str(n), exe] + pargs


def run_job(work, grid, impl, bench, pargs, topo, timeout):
    n = grid["clusters"] * grid["per"]
    exe = os.path.join(work, "bin", "gridmpi" if impl.startswith("gridmpi") else impl, bench)
    env, argv = job_argv(impl, n, exe, pargs, topo)
    envs = ["%s=%s" % (k, os.environ[k]) for k in KEEP_ENV if k in os.environ] + ["%s=%s" % kv for kv in env.items()]
    cmd = [TB, "exec", "h0", "--", "env", "-i"] + envs + argv
    d0, t0 = wan_drops(), time.time()
    try:
        r = run(cmd, timeout=timeout)
        out, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), -1
        run([TB, "exec", "h0", "--", "pkill", "-f", exe])
    drops = wan_drops() - d0
    res = {"impl": impl, "bench": bench, "args": pargs, "rc": rc, "drops": drops, "secs": time.time() - t0}
    m = re.search(r"^RESULT .*med_ms=([\d.]+)", out, re.M)
    k = re.search(r"^KCOUNT .*TcpExtTCPTimeouts=(\d+)", out, re.M)
    ok = rc == 0 and m and ("CHECK ok" in out or bench == "wan_coll")
    res["ms"] = float(m.group(1)) if m else None
    res["rtos"] = int(k.group(1)) if k else None
    res["ok"] = bool(ok)
    if not ok:
        res["tail"] = out.strip().splitlines()[-8:]
    log("  %-13s %-13s %-28s %s ms, RTOs %s, drops %d (%.0f s)%s" % (
        impl, bench, " ".join(pargs[:4]), res["ms"], res["rtos"], drops, res["secs"], "" if ok else " FAILED"))
    return res


BENCHES = {
    "is": ("is_sort", ["--keys-log2", "20", "--iters", "10", "--reps", "3"], "IS 2^20 keys"),
    "ft": ("ft_transpose", ["--grid", "64x64x64", "--iters", "5", "--reps", "3"], "FT 64x64x64"),
    "alltoall": ("wan_coll", ["--op", "alltoall", "--size", "16384", "--reps", "3", "--rep-ms", "1000", "--warmup", "2",
                              "--max-iters", "50"], "alltoall 16 KiB"),
}


def bounds(grid, size):
    """Physical minimum of an alltoall of `size` bytes per peer: per link
    (one direction) its bytes over its rate plus its delay; the links run
    at once, so the largest, and their sum."""
    per = grid["per"]
    times = [per * per * size * 8 / rate + delay for _, _, rate, delay in links_of(grid)]
    return max(times) * 1e3, sum(times) * 1e3


def report(results, args, started):
    lines = ["## At scale: 2 x 16 hosts and 4 clusters with unequal links (issue 17)", "",
             "`%s` (%s, commit %s; load average before %s)." % (
                 "sudo python3 bench/wan/scale.py " + " ".join(sys.argv[1:]), started,
                 run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"]).stdout.strip(), args.load), "",
             "One rank per host, 32 ranks on this machine's 2 CPUs. Median rep, ms per iteration (IS, FT) or per call "
             "(alltoall); in brackets the retransmission timeouts of the timed calls (all hosts) and the drops at the "
             "WAN queues during the whole job (start-up included); speedup over MPICH. `gridmpi`: out of the box (no "
             "topology file, no setting); `gridmpi-file`: the grid's true topology file.", ""]
    for g in results:
        grid = g["grid"]
        lines.append("### " + grid["title"])
        lines.append("")
        lines.append("| | " + " | ".join(IMPLS) + " |")
        lines.append("|---" * (len(IMPLS) + 1) + "|")
        for key in args.only:
            row = [BENCHES[key][2]]
            base = next((j["ms"] for j in g["jobs"] if j["key"] == key and j["impl"] == "mpich" and j["ok"]), None)
            for impl in IMPLS:
                j = next((j for j in g["jobs"] if j["key"] == key and j["impl"] == impl), None)
                if j is None:
                    row.append("-")
                elif not j["ok"]:
                    row.append("failed")
                else:
                    sp = ", %.2fx" % (base / j["ms"]) if base and impl != "mpich" else ""
                    row.append("%.1f (%s RTOs, %d drops%s)" % (j["ms"], j["rtos"], j["drops"], sp))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        if "alltoall" in args.only:
            par, tot = bounds(grid, 16384)
            lines.append("Alltoall of 16 KiB per peer: physical minimum %.1f ms (the slowest link's bytes over its "
                         "rate plus its delay; all links at once), %.1f ms summed over the links." % (par, tot))
            for impl in IMPLS:
                j = next((j for j in g["jobs"] if j["key"] == "alltoall" and j["impl"] == impl and j["ok"]), None)
                if j:
                    lines.append("- %s: %.2fx the minimum, %.2fx the sum." % (impl, j["ms"] / par, j["ms"] / tot))
            lines.append("")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grids", default="2x16,4x8")
    ap.add_argument("--delays", default="0,10", help="one-way delays of the 2x16 grid, ms")
    ap.add_argument("--only", default="is,ft,alltoall")
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--work", default="/tmp/gridmpi-wan-scale")
    ap.add_argument("--out", default=None, help="markdown file to write")
    args = ap.parse_args()
    args.grids = args.grids.split(",")
    args.delays = [float(d) for d in args.delays.split(",")]
    args.only = args.only.split(",")
    impls = args.impls.split(",")
    args.load = " ".join(open("/proc/loadavg").read().split()[:3])
    started = time.strftime("%Y-%m-%d %H:%M")
    os.makedirs(args.work, exist_ok=True)
    compile_programs(args.work)
    results = []
    try:
        for grid in grids(args):
            run([TB, "down"])
            log("$ " + " ".join(grid["up"]))
            r = run(grid["up"], stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                sys.stdout.write(r.stdout)
                raise SystemExit("gridmpi-testbed up failed")
            topo = write_topology(args.work, grid)
            jobs = []
            for key in args.only:
                prog, pargs, _ = BENCHES[key]
                for impl in impls:
                    j = run_job(args.work, grid, impl, prog, pargs, topo, 900)
                    j["key"] = key
                    jobs.append(j)
            results.append({"grid": grid, "jobs": jobs})
    finally:
        run([TB, "down"])
    text = report(results, args, started)
    sys.stdout.write("\n" + text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0 if all(j["ok"] for g in results for j in g["jobs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
