#!/usr/bin/env python3
"""Hostile callers against a running job: the job must go on, correct.

A 4-rank job over TCP (GRIDMPI_TRANSPORT=tcp, so every rank listens and
talks through its port) waits 5 s after MPI_Init, then runs an all-to-all
and allreduce loop whose every byte is checked (tests/testbed/outage.c).
In those 5 s, before the ranks have connected to each other, against every
rank's listening port:

  - 5000 connections that say nothing (a rank caps the callers that have
    not proven the job secret, and closes them after a deadline);
  - 200 connections that send random bytes, and 200 that send a HELLO-like
    start with random fields (the handshake refuses them without taking
    any rank's slot);

The job must end with exit code 0 and "data correct"; its ranks must listen
on 127.0.0.1 only (a job on one host needs nothing more).

    python3 tests/hostile/run.py       # needs build/ (make build)
"""
import atexit
import os
import random
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "build", "bin")


def listening_ports(pids):
    """TCP ports the given processes listen on (from /proc, no tools)."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                try:
                    t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
                except OSError:
                    continue
                m = re.match(r"socket:\[(\d+)\]", t)
                if m:
                    inodes.add(m.group(1))
        except OSError:
            pass
    ports = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:  # LISTEN
                addr, port = parts[1].split(":")
                ports.add((int(port, 16), addr))
    return sorted(ports)


def rank_pids(launcher_pid, program):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].decode(errors="replace") == program:
            out.append(int(d))
    return out


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 12000
    if hard != resource.RLIM_INFINITY and hard < want:
        print("SKIP  hostile callers: the open-file limit (%d) is too low for 5000 connections" % hard)
        return 0
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    work = tempfile.mkdtemp(prefix="gridmpi-hostile-")
    # Nothing of the run outlives it (the secret files among them).
    atexit.register(shutil.rmtree, work, True)
    prog = os.path.join(work, "outage")
    subprocess.run([os.path.join(BIN, "mpicc"), "-O2", "-o", prog,
                    os.path.join(ROOT, "tests", "testbed", "outage.c")], check=True)
    env = dict(os.environ, GRIDMPI_TRANSPORT="tcp")
    # The ranks get the common default of 1024 descriptors, so callers that
    # were never closed would exhaust them (1250 per rank).
    job = subprocess.Popen([os.path.join(BIN, "gridmpirun"), "-n", "4", prog, "8", "2048", "5"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard)))
    ports = []
    deadline = time.time() + 10
    while time.time() < deadline and len(ports) < 4:
        time.sleep(0.2)
        ports = listening_ports(rank_pids(job.pid, prog))
    failures = []
    if len(ports) < 4:
        failures.append("found %d rank ports, expected 4" % len(ports))
    # A job on one host listens on the loopback address only.
    exposed = [p for p, addr in ports if addr != "0100007F"]
    if exposed:
        failures.append("rank ports %s listen beyond 127.0.0.1 in a single-host job" % exposed)
    ports = [p for p, _ in ports]
    rng = random.Random(2026)
    idle = []
    refused = 0
    for i in range(5000):
        port = ports[i % len(ports)] if ports else 1
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            idle.append(s)
        except OSError:
            refused += 1
            s.close()
    noisy = 0
    for i in range(400):
        port = ports[i % len(ports)] if ports else 1
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                if i % 2 == 0:
                    s.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300))))
                else:
                    # The handshake's first message has a fixed magic; send
                    # what a guesser could: the magic-sized start, random fields.
                    s.sendall(b"GMPI" + bytes(rng.getrandbits(8) for _ in range(60)))
                noisy += 1
        except OSError:
            pass
    try:
        out, _ = job.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        job.kill()
        out, _ = job.communicate()
        failures.append("the job hung")
    for s in idle:
        s.close()
    ok = job.returncode == 0 and "data correct" in out
    if not ok:
        failures.append("job exit code %s: %s" % (job.returncode, out.strip()[-600:]))
    summary = "%d idle connections (%d refused by the kernel's backlog), %d with garbage, to %d rank ports" % (
        len(idle), refused, noisy, len(ports))
    if failures:
        print("FAIL  hostile callers (%s): %s" % (summary, "; ".join(failures)))
        return 1
    line = [l for l in out.splitlines() if "outage:" in l]
    print("PASS  hostile callers: %s; the job: %s" % (summary, line[-1] if line else out.strip()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
