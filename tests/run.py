#!/usr/bin/env python3
"""GridMPI end-to-end C test runner.

Compiles every tests/c/*.c with an MPI compiler wrapper and runs each program
through an MPI launcher at every rank count the test declares, then prints one
PASS/FAIL/SKIP line per (test, rank count), the output of each failure, and a
closing summary line of the form

    summary: N passed, N failed, N skipped

The exit status is 0 when nothing failed, 1 otherwise (2 for usage errors).

Defaults are GridMPI's own build: --mpicc build/bin/mpicc and
--mpiexec build/bin/gridmpirun, relative to the repository root (the parent of
this file's directory). The environment variables MPICC and MPIEXEC override
the defaults; the options override both. To validate a test against another
MPI:

    python3 tests/run.py --mpicc /opt/peers/mpich/bin/mpicc \\
                         --mpiexec /opt/peers/mpich/bin/mpiexec
    python3 tests/run.py --mpicc /opt/peers/openmpi/bin/mpicc \\
        --mpiexec /opt/peers/openmpi/bin/mpiexec \\
        --extra-mpiexec-args "--allow-run-as-root --oversubscribe"

Test header
-----------
Each test file declares how it is run in one or more header comments, each of
which is a line of the form

    /* gridmpi-test: KEY=VALUE KEY=VALUE ... */

The text between "gridmpi-test:" and "*/" is split like a POSIX shell line, so
a value containing spaces is quoted: stderr='rank 1.*aborted'. Header lines
may appear anywhere in the file but by convention open it. Keys:

  ranks=1,2,4,8        rank counts to run the test at (default: 1)
  min-ranks=N          smallest rank count the test supports (default: 1);
  max-ranks=N          largest one (default: none). Counts from --ranks outside
                       [min-ranks, max-ranks] are reported as SKIP.
  timeout=SECONDS      wall-clock limit for one run (default: 60). A run that
                       hits it is killed (whole process group) and FAILs, even
                       with expect=fail: a hang is never the expected failure.
  expect=pass|fail     pass: the launcher must exit 0 (default).
                       fail: the launcher must exit non-zero.
  exitcode=N           the launcher must exit with status N (implies
                       expect=fail when N != 0).
  stderr=REGEX         Python regex that must match (re.search) somewhere in
                       the combined stdout+stderr of the job. Repeatable: all
                       must match. Use (?s) to let '.' cross line ends.
  gridmpi-stderr=REGEX like stderr=, but only checked with --impl gridmpi: for
                       GridMPI's own error-message format, e.g.
                       gridmpi-stderr='MPI_Send.*rank 0.*tag'.
  env=NAME=VALUE       environment variable for the launcher (and, through
                       it, the ranks). Repeatable.
  args=ARGS            program arguments (shell-split).
  gridmpi-clusters=A,B with GridMPI, the ranks are started as consecutive groups
                       (MPMD), one per name, each with GRIDMPI_CLUSTER=name: a
                       grid of clusters on one host. Other MPIs run it plainly.
  gridmpi-launcher-args=ARGS
                       with GridMPI, options for gridmpirun before the program
                       (e.g. '--with-ft ulfm'); other MPIs run it plainly.
  stdin=FILE           file fed to the launcher's standard input, relative to
                       tests/c/ (default: /dev/null).

Programs are compiled with -I tests/c (for testutil.h) and with
-DTEST_IMPL_GRIDMPI=1 when the implementation under test is GridMPI (0
otherwise), so a test may check GridMPI-specific promises (such as
MPI_Get_version returning 4.1) only when they apply.

Each rank decides its own exit status (see testutil.h: test_finish()); a
conforming launcher exits non-zero when any rank does.

Expected failures
-----------------
With --impl gridmpi, tests/xfail-gridmpi.txt (or the file given with
--xfail) lists runs that are known to fail for now (a feature not yet
implemented), one per line:

    PATTERN [RANKS]   # reason

PATTERN is a shell glob on the test name (coll_*), RANKS an optional comma
list of rank counts (default: all). A listed run that fails is reported as
XFAIL and does not fail the suite; one that passes is reported as XPASS (it
should be taken off the list). --no-xfail ignores the list. In the summary
line, expected failures are counted with the skipped runs.
"""

import argparse
import concurrent.futures
import fnmatch
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_DIR = os.path.join(REPO_ROOT, "tests", "c")
HEADER_RE = re.compile(r"/\*\s*gridmpi-test:(.*?)\*/")
KNOWN_KEYS = {
    "ranks", "min-ranks", "max-ranks", "timeout", "expect", "exitcode",
    "stderr", "gridmpi-stderr", "env", "args", "stdin", "gridmpi-clusters",
    "gridmpi-launcher-args",
}
MAX_SHOWN_LINES = 80


class HeaderError(Exception):
    pass


class Test:
    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.ranks = [1]
        self.min_ranks = 1
        self.max_ranks = None
        self.timeout = 60.0
        self.expect_fail = False
        self.exitcode = None
        self.stderr_res = []
        self.gridmpi_stderr_res = []
        self.env = {}
        self.args = []
        self.stdin = None
        self.clusters = []
        self.launcher_args = []
        self.header_error = None
        try:
            self._parse()
        except HeaderError as exc:
            self.header_error = str(exc)

    def _parse(self):
        with open(self.path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        found = False
        for m in HEADER_RE.finditer(text):
            found = True
            try:
                items = shlex.split(m.group(1))
            except ValueError as exc:
                raise HeaderError("bad header quoting: %s" % exc)
            for item in items:
                key, sep, value = item.partition("=")
                if not sep:
                    raise HeaderError("header item %r is not KEY=VALUE" % item)
                self._set(key, value)
        if not found:
            raise HeaderError("no '/* gridmpi-test: ... */' header")

    def _set(self, key, value):
        if key not in KNOWN_KEYS:
            raise HeaderError("unknown header key %r" % key)
        try:
            if key == "ranks":
                self.ranks = parse_rank_list(value)
            elif key == "min-ranks":
                self.min_ranks = int(value)
            elif key == "max-ranks":
                self.max_ranks = int(value)
            elif key == "timeout":
                self.timeout = float(value)
            elif key == "expect":
                if value not in ("pass", "fail"):
                    raise HeaderError("expect must be pass or fail")
                self.expect_fail = value == "fail"
            elif key == "exitcode":
                self.exitcode = int(value)
                if self.exitcode != 0:
                    self.expect_fail = True
            elif key in ("stderr", "gridmpi-stderr"):
                regex = re.compile(value)
                if key == "stderr":
                    self.stderr_res.append(regex)
                else:
                    self.gridmpi_stderr_res.append(regex)
            elif key == "env":
                name, sep, val = value.partition("=")
                if not sep or not name:
                    raise HeaderError("env needs NAME=VALUE")
                self.env[name] = val
            elif key == "args":
                self.args = shlex.split(value)
            elif key == "stdin":
                self.stdin = os.path.join(TEST_DIR, value)
            elif key == "gridmpi-clusters":
                self.clusters = [c for c in value.split(",") if c]
            elif key == "gridmpi-launcher-args":
                self.launcher_args = shlex.split(value)
        except (ValueError, re.error) as exc:
            raise HeaderError("bad value for %s: %s" % (key, exc))

    def supports(self, n):
        if n < self.min_ranks:
            return False
        return self.max_ranks is None or n <= self.max_ranks


def load_xfail(path):
    """[(pattern, set of rank counts or None, reason)] from an xfail file."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            text, _, reason = line.partition("#")
            words = text.split()
            if not words:
                continue
            if len(words) > 2:
                raise HeaderError("%s:%d: expected 'PATTERN [RANKS] # reason'" % (path, lineno))
            ranks = set(parse_rank_list(words[1])) if len(words) == 2 else None
            entries.append((words[0], ranks, reason.strip() or "listed in %s" % os.path.basename(path)))
    return entries


def xfail_reason(entries, name, n):
    for pattern, ranks, reason in entries:
        if fnmatch.fnmatchcase(name, pattern) and (ranks is None or n in ranks):
            return reason
    return None


def parse_rank_list(text):
    ranks = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        n = int(part)
        if n < 1:
            raise ValueError("rank count must be >= 1")
        ranks.append(n)
    if not ranks:
        raise ValueError("empty rank list")
    return ranks


def shown(output):
    lines = output.rstrip("\n").split("\n")
    if len(lines) > MAX_SHOWN_LINES:
        head = lines[: MAX_SHOWN_LINES // 4]
        tail = lines[-(MAX_SHOWN_LINES - len(head)):]
        lines = head + ["... (%d lines omitted) ..." % (len(lines) - len(head) - len(tail))] + tail
    return "\n".join("    | " + line for line in lines)


def compile_test(test, args, outdir):
    exe = os.path.join(outdir, test.name)
    cmd = shlex.split(args.mpicc) + [
        "-std=gnu11", "-O1", "-g", "-Wall", "-Wno-unused-function",
        "-Wno-deprecated-declarations",
        "-I", TEST_DIR,
        "-DTEST_IMPL_GRIDMPI=%d" % (1 if args.impl == "gridmpi" else 0),
        test.path, "-o", exe, "-lm",
    ] + shlex.split(args.cflags)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, universal_newlines=True,
                              errors="replace", timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, "compile command failed: %s\n%s" % (" ".join(cmd), exc)
    if proc.returncode != 0:
        return None, "$ %s\n%s" % (" ".join(cmd), proc.stdout)
    return exe, proc.stdout


def run_one(test, exe, nranks, args):
    """Runs one job. Returns (ok, reason, output, seconds)."""
    own = test.launcher_args if args.impl == "gridmpi" else []
    cmd = shlex.split(args.mpiexec) + own + ["-n", str(nranks)] + \
        shlex.split(args.extra_mpiexec_args) + [exe] + test.args
    if test.clusters and args.impl == "gridmpi":
        # The ranks in consecutive groups, one per cluster (MPMD), as if
        # on the sites of a grid.
        parts = min(len(test.clusters), nranks)
        cmd = shlex.split(args.mpiexec) + shlex.split(args.extra_mpiexec_args)
        for i in range(parts):
            n = nranks // parts + (1 if i < nranks % parts else 0)
            cmd += ([":"] if i else []) + ["-n", str(n), "-env", "GRIDMPI_CLUSTER", test.clusters[i], exe] + test.args
    env = dict(os.environ)
    env.update(test.env)
    try:
        stdin = open(test.stdin, "rb") if test.stdin else subprocess.DEVNULL
    except OSError as exc:
        return False, "cannot open stdin file: %s" % exc, "", 0.0
    timeout = test.timeout * args.timeout_scale
    start = time.monotonic()
    timed_out = False
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=stdin, env=env, start_new_session=True)
    except OSError as exc:
        return False, "cannot start launcher: %s" % exc, " ".join(cmd), 0.0
    finally:
        if test.stdin:
            stdin.close()
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        stop_job(proc)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            out = b""
    finally:
        # Ranks that outlive the launcher (a broken launcher) must not leak.
        kill_group(proc, quiet=True)
    secs = time.monotonic() - start
    output = out.decode("utf-8", errors="replace")
    header = "$ %s\n" % " ".join(shlex.quote(c) for c in cmd)
    if timed_out:
        return False, "timed out after %gs" % timeout, header + output, secs
    rc = proc.returncode
    if rc < 0:
        rc_text = "killed by signal %d" % -rc
    else:
        rc_text = "exit status %d" % rc
    if test.exitcode is not None and rc != test.exitcode:
        return False, "%s, expected exit status %d" % (rc_text, test.exitcode), header + output, secs
    if test.expect_fail and rc == 0:
        return False, "job succeeded but the test expects it to fail", header + output, secs
    if not test.expect_fail and rc != 0:
        return False, rc_text, header + output, secs
    regexes = list(test.stderr_res)
    if args.impl == "gridmpi":
        regexes += test.gridmpi_stderr_res
    for regex in regexes:
        if not regex.search(output):
            return False, "output does not match /%s/" % regex.pattern, header + output, secs
    return True, rc_text, header + output, secs


def kill_group(proc, quiet=False, sig=signal.SIGKILL):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    except OSError as exc:
        if not quiet:
            print("warning: cannot signal process group %d: %s" % (proc.pid, exc))


def descendants(root_pid):
    """Pids of all live descendants of root_pid (Linux /proc), including
    those that moved to a session or process group of their own."""
    children = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                stat = f.read().decode("utf-8", "replace")
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root_pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def stop_job(proc):
    """Ends a timed-out job: SIGTERM to the launcher's process group so it
    can tear its ranks down, then SIGKILL to whatever is left of the whole
    process tree (ranks may have left the group)."""
    tree = descendants(proc.pid)
    kill_group(proc, quiet=True, sig=signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    tree += [p for p in descendants(proc.pid) if p not in tree]
    kill_group(proc, quiet=True)
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def detect_impl(mpiexec):
    words = shlex.split(mpiexec)
    if not words:
        return "other"
    exe = words[0]
    candidates = [os.path.basename(exe)]
    try:
        candidates.append(os.path.basename(os.path.realpath(exe)))
    except OSError:
        pass
    return "gridmpi" if any(c.startswith("gridmpirun") for c in candidates) else "other"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Compile and run GridMPI's end-to-end C tests (tests/c/*.c).",
        epilog="See the top of this file and tests/README.md for the test header format.")
    parser.add_argument("--mpicc", default=os.environ.get("MPICC", os.path.join(REPO_ROOT, "build", "bin", "mpicc")),
                        help="MPI C compiler wrapper (default: $MPICC or build/bin/mpicc)")
    parser.add_argument("--mpiexec", default=os.environ.get("MPIEXEC", os.path.join(REPO_ROOT, "build", "bin", "gridmpirun")),
                        help="MPI launcher (default: $MPIEXEC or build/bin/gridmpirun)")
    parser.add_argument("--extra-mpiexec-args", default="",
                        help="extra launcher arguments placed after '-n N', e.g. "
                             "'--allow-run-as-root --oversubscribe' for Open MPI")
    parser.add_argument("--impl", choices=("gridmpi", "other"), default=None,
                        help="implementation under test (default: gridmpi when the launcher is gridmpirun)")
    parser.add_argument("-k", dest="filters", action="append", default=[], metavar="SUBSTRING",
                        help="only tests whose name contains SUBSTRING (repeatable: any of them)")
    parser.add_argument("--list", action="store_true", help="list the selected tests and rank counts, run nothing")
    parser.add_argument("--ranks", default=None,
                        help="comma-separated rank counts that replace every test's own list")
    parser.add_argument("--keep-going", dest="keep_going", action="store_true", default=True,
                        help="run everything even after a failure (default)")
    parser.add_argument("--no-keep-going", "-x", dest="keep_going", action="store_false",
                        help="stop at the first failure")
    parser.add_argument("--timeout-scale", type=float, default=1.0,
                        help="multiply every test's timeout (for slow machines or debug builds)")
    parser.add_argument("--cflags", default="", help="extra compiler flags")
    parser.add_argument("--workdir", default=None,
                        help="keep compiled programs in this directory (default: a temporary one, removed)")
    parser.add_argument("-j", "--jobs", type=int, default=max(1, os.cpu_count() or 1),
                        help="parallel compiles (jobs always run one at a time)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the output of passing runs too")
    parser.add_argument("--xfail", default=None, metavar="FILE",
                        help="expected-failure list (default with --impl gridmpi: tests/xfail-gridmpi.txt)")
    parser.add_argument("--no-xfail", action="store_true", help="ignore the expected-failure list")
    args = parser.parse_args(argv)

    if args.impl is None:
        args.impl = detect_impl(args.mpiexec)
    override = None
    if args.ranks:
        try:
            override = parse_rank_list(args.ranks)
        except ValueError as exc:
            parser.error("--ranks: %s" % exc)

    paths = sorted(os.path.join(TEST_DIR, f) for f in os.listdir(TEST_DIR) if f.endswith(".c"))
    tests = [Test(p) for p in paths]
    if args.filters:
        tests = [t for t in tests if any(s in t.name for s in args.filters)]
    if not tests:
        print("no tests selected")
        print("summary: 0 passed, 0 failed")
        return 1

    xfails = []
    xfail_path = args.xfail
    if xfail_path is None and args.impl == "gridmpi":
        default = os.path.join(REPO_ROOT, "tests", "xfail-gridmpi.txt")
        xfail_path = default if os.path.exists(default) else None
    if xfail_path and not args.no_xfail:
        try:
            xfails = load_xfail(xfail_path)
        except (OSError, ValueError, HeaderError) as exc:
            parser.error("--xfail: %s" % exc)

    plan = []  # (test, n, skip_reason)
    for t in tests:
        for n in (override if override is not None else t.ranks):
            plan.append((t, n, None if t.supports(n) else "needs %d..%s ranks" % (t.min_ranks, t.max_ranks or "")))

    if args.list:
        for t in tests:
            extra = []
            if t.expect_fail:
                extra.append("expect=fail")
            if t.header_error:
                extra.append("HEADER ERROR: " + t.header_error)
            ns = [str(n) for (tt, n, skip) in plan if tt is t and skip is None]
            xf = [str(n) for (tt, n, skip) in plan if tt is t and skip is None and xfail_reason(xfails, t.name, n)]
            if xf:
                extra.append("xfail at %s" % ",".join(xf))
            print("%-32s ranks=%-12s timeout=%-5g %s" % (t.name, ",".join(ns), t.timeout, " ".join(extra)))
        return 0

    for what, cmd in (("--mpicc", args.mpicc), ("--mpiexec", args.mpiexec)):
        words = shlex.split(cmd)
        if not words or shutil.which(words[0]) is None:
            print("error: %s %r not found or not executable%s" % (
                what, cmd, " (build GridMPI first: make)" if cmd.startswith(REPO_ROOT) else ""))
            print("summary: 0 passed, 0 failed")
            return 2
    print("impl: %s  mpicc: %s  mpiexec: %s %s" % (args.impl, args.mpicc, args.mpiexec, args.extra_mpiexec_args))
    sys.stdout.flush()

    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        workdir, cleanup = os.path.abspath(args.workdir), None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="gridmpi-tests-")
        workdir = cleanup.name

    passed = failed = skipped = xfailed = 0
    failures, xpasses = [], []
    try:
        built = {}
        to_build = [t for t in tests if not t.header_error]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for t, res in zip(to_build, pool.map(lambda t: compile_test(t, args, workdir), to_build)):
                built[t.name] = res
        stop = False
        for t, n, skip in plan:
            label = "%s -n %d" % (t.name, n)
            if stop:
                break
            if skip:
                skipped += 1
                print("SKIP  %-36s (%s)" % (label, skip))
                continue
            if t.header_error:
                ok, reason, output, secs = False, "header error: " + t.header_error, "", 0.0
            else:
                exe, cout = built[t.name]
                if exe is None:
                    ok, reason, output, secs = False, "compile failed", cout, 0.0
                else:
                    ok, reason, output, secs = run_one(t, exe, n, args)
            expected = xfail_reason(xfails, t.name, n)
            if ok and expected:
                passed += 1
                xpasses.append(label)
                print("XPASS %-36s %6.2fs  listed as expected to fail (%s): take it off the list" % (label, secs, expected))
            elif ok:
                passed += 1
                print("PASS  %-36s %6.2fs" % (label, secs))
                if args.verbose and output.strip():
                    print(shown(output))
            elif expected:
                xfailed += 1
                print("XFAIL %-36s %6.2fs  %s (expected: %s)" % (label, secs, reason, expected))
                if args.verbose and output.strip():
                    print(shown(output))
            else:
                failed += 1
                failures.append(label)
                print("FAIL  %-36s %6.2fs  %s" % (label, secs, reason))
                if output.strip():
                    print(shown(output))
                if not args.keep_going:
                    stop = True
            sys.stdout.flush()
    finally:
        if cleanup is not None:
            cleanup.cleanup()

    if failures:
        print("failed: " + " ".join("'%s'" % f for f in failures))
    if xfailed or xpasses:
        print("expected failures: %d (from %s); unexpected passes: %d%s" % (
            xfailed, os.path.relpath(xfail_path, REPO_ROOT), len(xpasses),
            (" (" + ", ".join(xpasses) + ")") if xpasses else ""))
    print("summary: %d passed, %d failed, %d skipped" % (passed, failed, skipped + xfailed))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. piped into head
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
