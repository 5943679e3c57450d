#!/usr/bin/env python3
"""GridMPI end-to-end Fortran test runner.

Compiles every tests/fortran/*.f90 and *.f with an MPI Fortran compiler
wrapper and runs each program through an MPI launcher at every rank count the
test declares, then prints one PASS/FAIL/SKIP line per (test, rank count),
the output of each failure, and a closing summary line

    summary: N passed, N failed, N skipped

The exit status is 0 when nothing failed, 1 otherwise. The conventions are
those of tests/run.py (the C runner): defaults are GridMPI's own build,
build/bin/mpifort and build/bin/gridmpirun; $MPIFORT and $MPIEXEC or the
options override them.

Binary compatibility with MPICH: with --mpich-fc (default: /usr/bin/mpif90
when it is Debian's MPICH wrapper), every test whose header says
mpich-abi=yes is also compiled with MPICH's own wrapper (against MPICH's
mpif.h / mpi module and libmpichfort.so.12) and run on GridMPI's libraries
through LD_LIBRARY_PATH=build/lib, as "NAME[mpich-abi]".

Test header
-----------
A test declares how it is run in comment lines of the form

    ! gridmpi-test: KEY=VALUE KEY=VALUE ...

(split like a POSIX shell line). Keys:

  ranks=1,2,4        rank counts to run at (default: 1)
  timeout=SECONDS    wall-clock limit of one run (default: 60)
  expect=pass|fail   whether the launcher must exit 0 (default: pass)
  stderr=REGEX       must match the job's combined output (repeatable)
  env=NAME=VALUE     environment of the launcher and ranks (repeatable)
  mpich-abi=yes      also build with MPICH's wrapper and run on GridMPI

A test is SKIPped while it calls an MPI routine that abi/functions.txt still
lists under a `pending:` or `unavailable:` section (the reason names it), so
tests of collectives run as soon as the collectives land.

Each rank decides its own exit status (STOP 1 after MPI_FINALIZE on
failure); the launcher exits non-zero when any rank does.
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST_DIR = os.path.join(REPO_ROOT, "tests", "fortran")
HEADER_RE = re.compile(r"^\s*!\s*gridmpi-test:(.*)$", re.M | re.I)
CALL_RE = re.compile(r"\b(?:call\s+)?(p?mpi_[a-z0-9_]+)\s*\(", re.I)
KNOWN_KEYS = {"ranks", "timeout", "expect", "stderr", "env", "mpich-abi"}
MAX_SHOWN_LINES = 80


def unavailable_functions():
    """{lowercase name: section} of functions that are stubs for now."""
    out = {}
    section = ""
    with open(os.path.join(REPO_ROOT, "abi", "functions.txt")) as f:
        for line in f:
            line = line.strip()
            if line.startswith("## "):
                section = line[3:].strip()
                continue
            m = re.search(r"\b(MPI_\w+)\s*\(", line)
            if m and not line.startswith("#") and section.split(":")[0] in ("pending", "unavailable"):
                out[m.group(1).lower()] = section
    return out


class Test:
    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.ranks = [1]
        self.timeout = 60.0
        self.expect_fail = False
        self.stderr_res = []
        self.env = {}
        self.mpich_abi = False
        self.error = None
        with open(path, encoding="utf-8", errors="replace") as f:
            self.text = f.read()
        try:
            found = False
            for m in HEADER_RE.finditer(self.text):
                found = True
                for item in shlex.split(m.group(1)):
                    key, sep, value = item.partition("=")
                    if not sep or key not in KNOWN_KEYS:
                        raise ValueError("bad header item %r" % item)
                    self._set(key, value)
            if not found:
                raise ValueError("no '! gridmpi-test: ...' header")
        except (ValueError, re.error) as exc:
            self.error = str(exc)

    def _set(self, key, value):
        if key == "ranks":
            self.ranks = [int(x) for x in value.split(",") if x.strip()]
        elif key == "timeout":
            self.timeout = float(value)
        elif key == "expect":
            if value not in ("pass", "fail"):
                raise ValueError("expect must be pass or fail")
            self.expect_fail = value == "fail"
        elif key == "stderr":
            self.stderr_res.append(re.compile(value))
        elif key == "env":
            name, sep, val = value.partition("=")
            if not sep:
                raise ValueError("env needs NAME=VALUE")
            self.env[name] = val
        elif key == "mpich-abi":
            self.mpich_abi = value in ("yes", "1", "true")

    def needs(self, stubs):
        """Names of stub routines this test calls."""
        code = "\n".join(line.split("!")[0] for line in self.text.splitlines())
        called = {m.group(1).lower() for m in CALL_RE.finditer(code)}
        return sorted(n for n in called if n in stubs or n.replace("pmpi_", "mpi_", 1) in stubs)


def shown(output):
    lines = output.rstrip("\n").split("\n")
    if len(lines) > MAX_SHOWN_LINES:
        lines = lines[:20] + ["... (%d lines omitted) ..." % (len(lines) - MAX_SHOWN_LINES)] + lines[-(MAX_SHOWN_LINES - 20):]
    return "\n".join("    | " + line for line in lines)


def compile_test(test, fc, outdir, suffix, fflags):
    exe = os.path.join(outdir, test.name + suffix)
    cmd = shlex.split(fc) + ["-O1", "-g", test.path, "-o", exe] + shlex.split(fflags)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              universal_newlines=True, errors="replace", timeout=300, cwd=outdir)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, "compile command failed: %s\n%s" % (" ".join(cmd), exc)
    if proc.returncode != 0:
        return None, "$ %s\n%s" % (" ".join(cmd), proc.stdout)
    return exe, proc.stdout


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def run_one(test, exe, n, args, extra_env):
    cmd = shlex.split(args.mpiexec) + ["-n", str(n)] + [exe]
    env = dict(os.environ)
    env.update(test.env)
    env.update(extra_env)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    except OSError as exc:
        return False, "cannot start launcher: %s" % exc, " ".join(cmd), 0.0
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=test.timeout * args.timeout_scale)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
        out, _ = proc.communicate()
    finally:
        kill_group(proc)
    secs = time.monotonic() - start
    env_text = "".join("%s=%s " % kv for kv in extra_env.items())
    output = "$ %s%s\n%s" % (env_text, " ".join(shlex.quote(c) for c in cmd), out.decode("utf-8", errors="replace"))
    if timed_out:
        return False, "timed out after %gs" % (test.timeout * args.timeout_scale), output, secs
    rc = proc.returncode
    rc_text = "killed by signal %d" % -rc if rc < 0 else "exit status %d" % rc
    if test.expect_fail and rc == 0:
        return False, "job succeeded but the test expects it to fail", output, secs
    if not test.expect_fail and rc != 0:
        return False, rc_text, output, secs
    for regex in test.stderr_res:
        if not regex.search(output):
            return False, "output does not match /%s/" % regex.pattern, output, secs
    return True, rc_text, output, secs


def default_mpich_fc():
    fc = "/usr/bin/mpif90"
    if not os.path.exists(fc):
        return ""
    try:
        show = subprocess.run([fc, "-show"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return fc if "mpich" in show else ""


def main(argv=None):
    p = argparse.ArgumentParser(description="Compile and run GridMPI's Fortran tests (tests/fortran/*.f90, *.f).")
    p.add_argument("--mpifort", default=os.environ.get("MPIFORT", os.path.join(REPO_ROOT, "build", "bin", "mpifort")))
    p.add_argument("--mpiexec", default=os.environ.get("MPIEXEC", os.path.join(REPO_ROOT, "build", "bin", "gridmpirun")))
    p.add_argument("--mpich-fc", default=None,
                   help="MPICH's Fortran wrapper for the mpich-abi tests (default: /usr/bin/mpif90 if it is MPICH's; '' to skip)")
    p.add_argument("--libdir", default=os.path.join(REPO_ROOT, "build", "lib"),
                   help="GridMPI's libraries, put on LD_LIBRARY_PATH for the mpich-abi runs")
    p.add_argument("-k", dest="filters", action="append", default=[], metavar="SUBSTRING")
    p.add_argument("--ranks", default=None, help="rank counts that replace every test's own list")
    p.add_argument("--timeout-scale", type=float, default=1.0)
    p.add_argument("--fflags", default="", help="extra compiler flags")
    p.add_argument("--workdir", default=None, help="keep compiled programs here")
    p.add_argument("--no-skip", action="store_true", help="run tests even when they call stub routines")
    p.add_argument("-v", "--verbose", action="store_true", help="show the output of passing runs too")
    args = p.parse_args(argv)
    if args.mpich_fc is None:
        args.mpich_fc = default_mpich_fc()

    paths = sorted(os.path.join(TEST_DIR, f) for f in os.listdir(TEST_DIR) if f.endswith((".f90", ".f")))
    tests = [Test(path) for path in paths]
    if args.filters:
        tests = [t for t in tests if any(s in t.name for s in args.filters)]
    stubs = {} if args.no_skip else unavailable_functions()

    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        workdir, cleanup = os.path.abspath(args.workdir), None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="gridmpi-ftests-")
        workdir = cleanup.name

    print("mpifort: %s  mpiexec: %s  mpich-abi: %s" % (args.mpifort, args.mpiexec, args.mpich_fc or "(none)"))
    sys.stdout.flush()
    passed = failed = skipped = 0
    failures = []

    def report(label, ok, reason, output, secs):
        nonlocal passed, failed
        if ok:
            passed += 1
            print("PASS  %-40s %6.2fs" % (label, secs))
            if args.verbose:
                print(shown(output))
        else:
            failed += 1
            failures.append(label)
            print("FAIL  %-40s %6.2fs  %s" % (label, secs, reason))
            print(shown(output))
        sys.stdout.flush()

    try:
        for t in tests:
            variants = [("", args.mpifort, {})]
            if t.mpich_abi and args.mpich_fc:
                libdir = os.path.abspath(args.libdir)
                ld = libdir + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
                variants.append(("[mpich-abi]", args.mpich_fc, {"LD_LIBRARY_PATH": ld}))
            ranks = [int(x) for x in args.ranks.split(",")] if args.ranks else t.ranks
            if t.error:
                report(t.name, False, "header error: " + t.error, "", 0.0)
                continue
            missing = t.needs(stubs)
            if missing:
                for suffix, _, _ in variants:
                    for n in ranks:
                        skipped += 1
                        print("SKIP  %-40s (calls %s, still %s)" % ("%s%s -n %d" % (t.name, suffix, n),
                              ", ".join(missing[:3]) + (" ..." if len(missing) > 3 else ""), stubs[missing[0].replace("pmpi_", "mpi_", 1)]))
                continue
            for suffix, fc, extra_env in variants:
                exe, cout = compile_test(t, fc, workdir, "." + suffix.strip("[]").replace("-", "_") if suffix else "", args.fflags)
                for n in ranks:
                    label = "%s%s -n %d" % (t.name, suffix, n)
                    if exe is None:
                        report(label, False, "compile failed", cout, 0.0)
                    else:
                        report(label, *run_one(t, exe, n, args, extra_env))
    finally:
        if cleanup:
            cleanup.cleanup()
    if failures:
        print("failed: " + ", ".join(failures))
    print("summary: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
