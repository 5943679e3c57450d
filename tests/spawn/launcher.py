#!/usr/bin/env python3
"""gridmpirun's side of MPI_Comm_spawn, without the MPI library.

Run without arguments (make test-spawn-launcher): starts jobs of
build/bin/gridmpirun whose rank is this script again (`rank MODE DIR`),
speaking PMI-1 itself over PMI_FD: spawn requests (mcmd=spawn), the
name service, finalize. Checks what the children saw (their environment,
MPI_APPNUM, working directory), the errors of spawns that cannot start,
that a child failing after it started fails the job, and that no process
outlives a job killed by SIGTERM or SIGKILL.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GRIDMPIRUN = os.environ.get("GRIDMPIRUN", os.path.join(HERE, "..", "..", "build", "bin", "gridmpirun"))
SLEEP_MARK = "37.123"  # children `sleep 37.123`, found again by their arguments


# --- the rank: a PMI-1 client ------------------------------------------------

class Pmi:
    def __init__(self):
        fd = int(os.environ["PMI_FD"])
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
        self.reader = self.sock.makefile("rb")
        r = self.request("cmd=init pmi_version=1 pmi_subversion=1\n")
        assert r["cmd"] == "response_to_init" and r["rc"] == "0", r

    def request(self, text):
        self.sock.sendall(text.encode())
        line = self.reader.readline().decode().rstrip("\n")
        assert line, "the PMI server closed the connection"
        # Words split at unescaped spaces; "\x" stands for x.
        out = {}
        for word in re.split(r"(?<!\\) ", line):
            k, _, v = word.partition("=")
            out[k] = re.sub(r"\\(.)", r"\1", v)
        return out

    def spawn(self, apps, preput):
        """apps: (command, args, maxprocs, info pairs)."""
        blocks = []
        for i, (cmd, args, n, info) in enumerate(apps):
            lines = [f"mcmd=spawn", f"nprocs={n}", f"execname={cmd}", f"totspawns={len(apps)}",
                     f"spawnssofar={i + 1}", f"argcnt={len(args)}"]
            lines += [f"arg{k + 1}={a}" for k, a in enumerate(args)]
            if i == 0:
                lines.append(f"preput_num={len(preput)}")
                for k, (key, val) in enumerate(preput):
                    lines += [f"preput_key_{k}={key}", f"preput_val_{k}={val}"]
            lines.append(f"info_num={len(info)}")
            for k, (key, val) in enumerate(info):
                lines += [f"info_key_{k}={key}", f"info_val_{k}={val}"]
            lines.append("endcmd")
            blocks.append("\n".join(lines) + "\n")
        r = self.request("".join(blocks))
        assert r["cmd"] == "spawn_result", r
        return int(r["rc"]), r.get("msg", "")


class Pmi2:
    """The PMI-2 wire: a 6-character length, then cmd=NAME;key=value;..."""

    def __init__(self):
        fd = int(os.environ["PMI_FD"])
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
        self.reader = self.sock.makefile("rb")
        self.sock.sendall(b"cmd=init pmi_version=2 pmi_subversion=0\n")
        line = self.reader.readline().decode()
        assert "rc=0" in line and "pmi_version=2" in line, line
        r = self.request([("cmd", "fullinit"), ("pmirank", os.environ["PMI_RANK"])])
        assert r["cmd"] == "fullinit-response" and r["rc"] == "0", r

    def request(self, pairs):
        body = "".join(f"{k}={v.replace(';', ';;')};" for k, v in pairs)
        self.sock.sendall(f"{len(body):6}{body}".encode())
        n = int(self.reader.read(6))
        text = self.reader.read(n).decode()
        out = {}
        for field in re.split(r"(?<!;);(?!;)", text.replace(";;", "\0")):
            if field:
                k, _, v = field.partition("=")
                out[k] = v.replace("\0", ";")
        return out


def wait_for_files(paths, limit=20):
    end = time.time() + limit
    while time.time() < end:
        if all(os.path.exists(p) and open(p).read().endswith("\n") for p in paths):
            return [open(p).read().strip() for p in paths]
        time.sleep(0.05)
    raise AssertionError(f"not written in {limit}s: {[p for p in paths if not os.path.exists(p)]}")


def rank_pmi2(d):
    pmi = Pmi2()
    write = 'echo "$PMI_RANK $PMI_SIZE $GRIDMPI_PARENT_PORT" > "$0/pmi2.$PMI_RANK"'
    r = pmi.request([("cmd", "spawn"), ("thrid", "0x5"), ("ncmds", "1"), ("preputcount", "1"),
                     ("ppkey0", "GRIDMPI_PARENT_PORT"), ("ppval0", "a;b"), ("subcmd", "/bin/sh"),
                     ("maxprocs", "2"), ("argc", "3"), ("argv0", "-c"), ("argv1", write), ("argv2", d), ("infokeycount", "0")])
    assert (r["cmd"], r["rc"], r.get("thrid")) == ("spawn-response", "0", "0x5"), r
    # (sh -c SCRIPT ARG0: the directory is $0 of the script.)
    got = wait_for_files([f"{d}/pmi2.0", f"{d}/pmi2.1"])
    assert got == ["0 2 a;b", "1 2 a;b"], got
    r = pmi.request([("cmd", "spawn"), ("ncmds", "1"), ("subcmd", "/nonexistent/program"), ("maxprocs", "1"), ("argc", "0")])
    assert r["rc"] != "0" and "not found" in r.get("errmsg", ""), r
    # A child speaking PMI finds the preput pairs in its job's key-value
    # space too (where MPICH's library looks), and PMI_SPAWNED=1.
    r = pmi.request([("cmd", "spawn"), ("ncmds", "1"), ("preputcount", "1"), ("ppkey0", "PARENT_ROOT_PORT_NAME"),
                     ("ppval0", "port 7"), ("subcmd", sys.executable), ("maxprocs", "1"), ("argc", "4"),
                     ("argv0", os.path.abspath(__file__)), ("argv1", "rank"), ("argv2", "kvschild"), ("argv3", d)])
    assert r["rc"] == "0", r
    got = wait_for_files([f"{d}/kvschild"])
    assert got == ["port 7 1"], got
    r = pmi.request([("cmd", "finalize")])
    assert r["cmd"] == "finalize-response", r
    print("rank: pmi2 done", flush=True)


def rank(mode, d):
    if mode == "pmi2":
        return rank_pmi2(d)
    pmi = Pmi()
    if mode == "kvschild":
        kvs = pmi.request("cmd=get_my_kvsname\n")["kvsname"]
        r = pmi.request(f"cmd=get kvsname={kvs} key=PARENT_ROOT_PORT_NAME\n")
        assert r["rc"] == "0", r
        open(f"{d}/kvschild", "w").write(f"{r['value']} {os.environ.get('PMI_SPAWNED')}\n")
        pmi.request("cmd=finalize\n")
        return
    kvs = pmi.request("cmd=get_my_kvsname\n")["kvsname"]
    assert os.environ.get("GRIDMPI_SPAWN_SERVER") == kvs, "gridmpirun marks its ranks with the job's kvsname"
    u = pmi.request("cmd=get_universe_size\n")
    print(f"rank: universe {u['size']}", flush=True)
    if mode == "basic":
        assert u["size"] == "8", u
        # Each child writes what it sees into DIR/TAG.APPNUM.RANK.
        write = 'echo "$PMI_RANK $PMI_SIZE $GRIDMPI_APPNUM $GRIDMPI_PARENT_PORT $(pwd) $1" > "$0/$1.$GRIDMPI_APPNUM.$PMI_RANK"'
        rc, msg = pmi.spawn([("/bin/sh", ["-c", write, d, "first"], 2, [])], [("GRIDMPI_PARENT_PORT", "xyz")])
        assert rc == 0, msg
        got = wait_for_files([f"{d}/first.0.0", f"{d}/first.0.1"])
        assert got == [f"0 2 0 xyz {os.getcwd()} first", f"1 2 0 xyz {os.getcwd()} first"], got
        # MPI_Comm_spawn_multiple: one job, MPI_APPNUM per program; wdir
        # and path are per program (the second, with no wdir, runs here).
        rc, msg = pmi.spawn([("sh", ["-c", write, d, "one"], 1, [("path", "/nonexistent:/bin"), ("wdir", "/")]),
                             ("/bin/sh", ["-c", write, d, "two"], 2, [])],
                            [("GRIDMPI_PARENT_PORT", "p q;r")])
        assert rc == 0, msg
        got = wait_for_files([f"{d}/one.0.0", f"{d}/two.1.1", f"{d}/two.1.2"])
        assert got == ["0 3 0 p q;r / one", f"1 3 1 p q;r {os.getcwd()} two", f"2 3 1 p q;r {os.getcwd()} two"], got
        # What cannot start is an error reply, and the job goes on.
        rc, msg = pmi.spawn([("/nonexistent/program", [], 1, [])], [])
        assert rc != 0 and "/nonexistent/program" in msg and "not found" in msg, (rc, msg)
        print(f"rank: spawn of a missing program: rc={rc} {msg}", flush=True)
        rc, msg = pmi.spawn([("/bin/true", [], 1, [("wdir", "/nonexistent/dir")])], [])
        assert rc != 0 and "/nonexistent/dir" in msg, (rc, msg)
        rc, msg = pmi.spawn([("/bin/true", [], 1, [("host", "no/such/host")])], [])
        assert rc != 0 and "host" in msg, (rc, msg)
        # The job runs here alone: its ranks listen on 127.0.0.1, which
        # processes on another host could not reach.
        rc, msg = pmi.spawn([("/bin/true", [], 1, [("host", "otherhost")])], [])
        assert rc != 0 and "127.0.0.1" in msg, (rc, msg)
        # The name service.
        r = pmi.request("cmd=publish_name service=svc port=tag\\ 1\n")
        assert r["rc"] == "0", r
        r = pmi.request("cmd=lookup_name service=svc\n")
        assert (r["rc"], r["port"]) == ("0", "tag 1"), r
    elif mode == "childfails":
        rc, msg = pmi.spawn([("/bin/sh", ["-c", "sleep 0.3; exit 3"], 1, [])], [])
        assert rc == 0, msg
    elif mode in ("sigterm", "kill9"):
        rc, msg = pmi.spawn([("sleep", [SLEEP_MARK], 2, [])], [])
        assert rc == 0, msg
        open(f"{d}/spawned", "w").write("\n")
        time.sleep(60)
    r = pmi.request("cmd=finalize\n")
    assert r["cmd"] == "finalize_ack", r
    print(f"rank: {mode} done", flush=True)


# --- the driver ---------------------------------------------------------------

def run(mode, d, extra=()):
    cmd = [GRIDMPIRUN, *extra, "-n", "1", sys.executable, os.path.abspath(__file__), "rank", mode, d]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def sleepers():
    out = subprocess.run(["pgrep", "-f", f"^sleep {SLEEP_MARK}$"], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def no_sleepers_left(limit=10):
    end = time.time() + limit
    while time.time() < end:
        if not sleepers():
            return True
        time.sleep(0.1)
    left = sleepers()
    for pid in left:  # ours: clean up, then fail
        os.kill(pid, signal.SIGKILL)
    return False


def main():
    failures = []

    def check(name, ok, detail=""):
        print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if not ok and detail else ""), flush=True)
        if not ok:
            failures.append(name)

    assert not sleepers(), f"processes `sleep {SLEEP_MARK}` already run: not ours, stop them first"
    with tempfile.TemporaryDirectory() as d:
        p = run("basic", d, ["-hosts", "localhost:8"])
        out, err = p.communicate(timeout=120)
        check("spawn, spawn_multiple, errors, names", p.returncode == 0 and "rank: basic done" in out, f"exit {p.returncode}\n{out}\n{err}")
        check("free slots: no oversubscription warning", "oversubscribed" not in err, err)
        check("a missing program is named", "command not found" in out, out)

    with tempfile.TemporaryDirectory() as d:
        p = run("pmi2", d, ["-hosts", "localhost:4"])
        out, err = p.communicate(timeout=60)
        check("spawn over PMI-2", p.returncode == 0 and "rank: pmi2 done" in out, f"exit {p.returncode}\n{out}\n{err}")

    with tempfile.TemporaryDirectory() as d:
        p = run("childfails", d)
        out, err = p.communicate(timeout=60)
        check("a failing spawned job fails the job", p.returncode == 3 and "spawned job 1" in err, f"exit {p.returncode}\n{err}")

    for mode, sig in (("sigterm", signal.SIGTERM), ("kill9", signal.SIGKILL)):
        with tempfile.TemporaryDirectory() as d:
            p = run(mode, d)
            try:
                wait_for_files([f"{d}/spawned"], 30)
                time.sleep(0.3)
                check(f"{mode}: the children run", len(sleepers()) == 2, str(sleepers()))
                p.send_signal(sig)
                p.communicate(timeout=30)
                check(f"{mode}: no process outlives the job", no_sleepers_left())
            finally:
                if p.poll() is None:
                    p.kill()
                    p.communicate()

    print("all passed" if not failures else f"{len(failures)} failed: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "rank":
        rank(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
