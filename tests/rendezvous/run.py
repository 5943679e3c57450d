#!/usr/bin/env python3
"""Jobs formed at a rendezvous from groups of ranks started separately.

A rendezvous server (gridmpirun --rendezvous-server) and two or three
groups, each started by its own launcher on this host, form one job:

  - two gridmpirun groups named A and B run the checked all-to-all and
    allreduce loop (tests/testbed/outage.c), and the cluster map says A
    and B (tests/testbed/cluster_map.c);
  - a gridmpirun group, a group started by MPICH's mpiexec (hydra; when
    /opt/peers/mpich is installed) and a process started with no launcher
    at all (a group of one) run the same loop;
  - a rank that calls MPI_Abort, and a rank killed by SIGKILL: every group
    and the server end within seconds, the server with the abort's code,
    naming the rank and its group;
  - a group with the wrong secret is refused with a clear error, while
    the job waits; 300 idle connections, 100 of random bytes and forged
    join lines during the wait do not stop the right group from forming
    the job with the others;
  - a secret file other users can read is refused;
  - relays on this host (every connection between the two clusters forced
    through them with GRIDMPI_TRANSPORT=tcp): the loop is right and the
    relays' logs show the connections; a relay started with another
    secret refuses the ranks, and the job ends naming the relay and
    GRIDMPI_JOB_SECRET_FILE. (Private sites and the relays' bandwidth are
    in the testbed suite and bench/wan/relay.sh.)

    python3 tests/rendezvous/run.py       # needs build/ (make build)
"""
import atexit
import os
import random
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "build", "bin")
MPICH = os.environ.get("MPICH_PREFIX", "/opt/peers/mpich")
failures = []


def check(name, ok, detail=""):
    print("%s  %s" % ("PASS" if ok else "FAIL", name))
    if not ok:
        failures.append(name)
        if detail:
            print("      " + detail.strip().replace("\n", "\n      "))


class Rendezvous:
    def __init__(self, work, groups, secret):
        self.addr_file = os.path.join(work, "addr-%d" % random.randrange(1 << 30))
        self.log = tempfile.TemporaryFile(mode="w+")
        cmd = [os.path.join(BIN, "gridmpirun"), "--rendezvous-server", "127.0.0.1:0", "--groups", str(groups),
               "--secret-file", secret, "--address-file", self.addr_file]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.exists(self.addr_file) and open(self.addr_file).read().endswith("\n"):
                break
            time.sleep(0.05)
        self.addr = open(self.addr_file).read().strip()

    def output(self):
        self.log.seek(0)
        return self.log.read()


def group(how, addr, secret, n, argv, cluster):
    """Start a group of n ranks running argv, by `how` (gridmpirun, hydra, none)."""
    env = dict(os.environ, GRIDMPI_CLUSTER=cluster)
    env.pop("GRIDMPI_RENDEZVOUS", None)
    if how == "gridmpirun":
        cmd = [os.path.join(BIN, "gridmpirun"), "--rendezvous", addr, "--secret-file", secret, "-n", str(n)] + argv
    else:
        env.update(GRIDMPI_RENDEZVOUS=addr, GRIDMPI_JOB_SECRET_FILE=secret)
        cmd = ([os.path.join(MPICH, "bin", "mpiexec"), "-n", str(n)] if how == "hydra" else []) + argv
    log = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    p.log = log
    p.name = "%s group %s" % (how, cluster)
    return p


def finish(procs, timeout):
    """Wait for every process; kill what is still running at the deadline.
    Returns {proc: (rc or None, output)}."""
    deadline = time.time() + timeout
    out = {}
    for p in procs:
        try:
            rc = p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            rc = None
        log = p.log if hasattr(p, "log") else None
        text = ""
        if log is not None:
            log.seek(0)
            text = log.read()
        out[p] = (rc, text)
    return out


def secret_file(work, name):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write("%064x\n" % random.getrandbits(256))
    os.chmod(path, 0o600)
    return path


def hostile(addr, secret_ok):
    """Idle connections, random bytes and forged join lines at the server."""
    host, port = addr.rsplit(":", 1)
    idle = []
    for _ in range(300):
        s = socket.create_connection((host, int(port)))
        idle.append(s)
    for i in range(100):
        s = socket.create_connection((host, int(port)))
        s.settimeout(5)
        try:
            s.recv(200)
            s.sendall(os.urandom(random.randrange(1, 2000)))
        except OSError:
            pass
        s.close()
    for i in range(20):
        s = socket.create_connection((host, int(port)))
        s.settimeout(5)
        try:
            s.recv(200)
            s.sendall(("join group=abcd name=B size=2 rank=%d nonce=%064x mac=%064x\n"
                       % (i % 2, random.getrandbits(256), random.getrandbits(256))).encode())
            s.recv(200)
        except OSError:
            pass
        s.close()
    return idle


def main():
    work = tempfile.mkdtemp(prefix="gridmpi-rendezvous-")
    # Nothing of the run outlives it (the secret files among them).
    atexit.register(shutil.rmtree, work, True)
    for src, exe in [("tests/testbed/outage.c", "outage"), ("tests/testbed/cluster_map.c", "cmap"),
                     ("tests/rendezvous/fail.c", "fail")]:
        subprocess.check_call([os.path.join(BIN, "mpicc"), "-O2", "-o", os.path.join(work, exe), os.path.join(ROOT, src)])
    outage = [os.path.join(work, "outage"), "2"]
    secret = secret_file(work, "secret")

    # Two gridmpirun groups: the loop, and the cluster map.
    for argv, what in [(outage, "data correct"), ([os.path.join(work, "cmap")], "2 cluster(s) [A:2 B:2]")]:
        rv = Rendezvous(work, 2, secret)
        a = group("gridmpirun", rv.addr, secret, 2, argv, "A")
        b = group("gridmpirun", rv.addr, secret, 2, argv, "B")
        res = finish([a, b, rv.proc], 60)
        text = res[a][1] + res[b][1]
        check("two gridmpirun groups: %s" % what,
              all(res[p][0] == 0 for p in (a, b, rv.proc)) and what in text,
              text + rv.output())

    # Three launchers: gridmpirun, hydra, none.
    rv = Rendezvous(work, 3, secret)
    procs = [group("gridmpirun", rv.addr, secret, 2, outage, "A"), group("none", rv.addr, secret, 1, outage, "C")]
    if os.path.exists(os.path.join(MPICH, "bin", "mpiexec")):
        procs.append(group("hydra", rv.addr, secret, 2, outage, "B"))
    else:
        print("note: %s/bin/mpiexec not found: a gridmpirun group stands in for hydra's" % MPICH)
        procs.append(group("gridmpirun", rv.addr, secret, 2, outage, "B"))
    res = finish(procs + [rv.proc], 60)
    text = "".join(res[p][1] for p in procs)
    check("groups by gridmpirun, hydra and no launcher form one job", all(res[p][0] == 0 for p in procs + [rv.proc])
          and "data correct" in text and "the job has 5 ranks in 3 groups" in rv.output(), text + rv.output())

    # A failing rank ends every group.
    for mode, victim, code in [("abort", 3, 7), ("crash", 1, 1)]:
        rv = Rendezvous(work, 2, secret)
        argv = [os.path.join(work, "fail"), mode, str(victim)]
        a = group("gridmpirun", rv.addr, secret, 2, argv, "A")
        b = group("gridmpirun", rv.addr, secret, 2, argv, "B")
        start = time.time()
        res = finish([a, b, rv.proc], 30)
        took = time.time() - start
        log = rv.output()
        # The failing rank's own launcher reports the abort's code too.
        own = b if victim >= 2 else a
        check("rank %d %s: every group ends (%.2f s), the server exits %d naming it" % (victim, mode, took, code),
              res[rv.proc][0] == code and res[a][0] not in (None, 0) and res[b][0] not in (None, 0)
              and (mode != "abort" or res[own][0] == code)
              and ("rank %d (rank %d of group %s" % (victim, victim % 2, "AB"[victim // 2])) in log,
              "rcs %s %s %s\n" % (res[a][0], res[b][0], res[rv.proc][0]) + res[a][1] + res[b][1] + log)

    # The wrong secret is refused; hostile callers do not stop the job.
    rv = Rendezvous(work, 2, secret)
    a = group("gridmpirun", rv.addr, secret, 2, outage, "A")
    wrong = group("gridmpirun", rv.addr, secret_file(work, "wrong"), 2, outage, "B")
    res = finish([wrong], 30)
    check("a group with the wrong secret is refused, saying why",
          res[wrong][0] not in (None, 0) and "refused" in res[wrong][1] and "GRIDMPI_RENDEZVOUS" in res[wrong][1],
          res[wrong][1])
    idle = hostile(rv.addr, secret)
    b = group("gridmpirun", rv.addr, secret, 2, outage, "B")
    res = finish([a, b, rv.proc], 60)
    for s in idle:
        s.close()
    log = rv.output()
    check("after refusals and hostile callers the right groups form the job",
          all(res[p][0] == 0 for p in (a, b, rv.proc)) and "data correct" in res[a][1] + res[b][1]
          and "refused a connection" in log, res[a][1] + res[b][1] + log[-3000:])

    # A secret others can read.
    loose = secret_file(work, "loose")
    os.chmod(loose, 0o644)
    rv = Rendezvous(work, 1, secret)
    p = group("gridmpirun", rv.addr, loose, 1, outage, "A")
    res = finish([p], 20)
    rv.proc.kill()
    rv.proc.wait()
    check("a secret file other users can read is refused", res[p][0] not in (None, 0) and "chmod 600" in res[p][1], res[p][1])

    # Relays: the way between the clusters goes through one relay each.
    def relay(secret_path):
        addr_file = os.path.join(work, "relay-%d" % random.randrange(1 << 30))
        log = tempfile.TemporaryFile(mode="w+")
        p = subprocess.Popen([os.path.join(BIN, "gridmpirun"), "--relay", "127.0.0.1:0", "--secret-file", secret_path,
                              "--address-file", addr_file], stdout=log, stderr=subprocess.STDOUT,
                             env=dict(os.environ, GRIDMPI_DEBUG="relay"))
        for _ in range(100):
            if os.path.exists(addr_file) and open(addr_file).read().endswith("\n"):
                break
            time.sleep(0.05)
        p.log = log
        return p, open(addr_file).read().strip()

    def two_clusters_through(relay_a, relay_b):
        cmd = [os.path.join(BIN, "gridmpirun"), "--secret-file", secret,
               "-n", "2", "-env", "GRIDMPI_CLUSTER", "A", "-env", "GRIDMPI_RELAY", relay_a] + outage + [
               ":", "-n", "2", "-env", "GRIDMPI_CLUSTER", "B", "-env", "GRIDMPI_RELAY", relay_b] + outage
        log = tempfile.TemporaryFile(mode="w+")
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, GRIDMPI_TRANSPORT="tcp"))
        p.log = log
        return p

    (ra, a_addr), (rb, b_addr) = relay(secret), relay(secret)
    job = two_clusters_through(a_addr, b_addr)
    res = finish([job], 60)
    for r in (ra, rb):
        r.terminate()
    logs = finish([ra, rb], 10)
    relayed = [logs[r][1].count("relaying") for r in (ra, rb)]
    # 2 x 2 pairs across the clusters, each through both relays.
    check("two clusters through a relay each: loop right, both relays carry the connections (%s)" % relayed,
          res[job][0] == 0 and "data correct" in res[job][1] and min(relayed) >= 4,
          res[job][1] + logs[ra][1] + logs[rb][1])

    stranger, s_addr = relay(secret_file(work, "relay-other"))
    job = two_clusters_through(s_addr, "")
    res = finish([job], 60)
    stranger.terminate()
    slog = finish([stranger], 10)[stranger][1]
    check("a relay started with another secret refuses the ranks; the error names it and the secret file",
          res[job][0] not in (None, 0) and ("the relay " + s_addr) in res[job][1]
          and "GRIDMPI_JOB_SECRET_FILE" in res[job][1] and "refused" in slog, res[job][1] + slog)

    if failures:
        print("%d rendezvous test(s) failed: %s" % (len(failures), ", ".join(failures)))
        sys.exit(1)
    print("rendezvous: all passed")


if __name__ == "__main__":
    main()
