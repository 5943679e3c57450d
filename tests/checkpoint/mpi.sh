#!/bin/bash
# Coordinated checkpoint/restart of MPI jobs through gridmpirun (part of
# make test-checkpoint; docs/checkpoint.md).
#
# mpi_loop.c runs once uninterrupted for its reference result. Then, each
# ROUNDS times (default 2), with the checkpoint asked for at a random
# moment by SIGQUIT to gridmpirun:
#   continue  the job checkpoints twice and goes on: same result;
#   kill      the job is killed by SIGKILL once a checkpoint is written,
#             `gridmpirun --restart` resumes it: same result, no process or
#             /dev/shm file left behind;
#   chain     the restarted job is checkpointed and killed again, and
#             restarted again (a restored process checkpoints again);
#   stop      --checkpoint-and-stop: the job ends at its first checkpoint
#             (exit 0), the restart finishes it.
# And the NPB-like kernels of bench/wan (IS, FT, CG, LU, MG: is_sort.c,
# ft_transpose.c, cg_solve.c, lu_sweep.c, mg_vcycle.c; they verify their
# results), mpi_threads.c (threads
# inside MPI at the checkpoint) and an mpi4py + numpy program are killed
# after a checkpoint and restarted.
#
# RANKS (default 4), ITERS (default 1500) and ROUNDS set the size.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${GRIDMPI_BUILD:-$ROOT/build}
RUN=$BUILD/bin/gridmpirun
RANKS=${RANKS:-4}
ITERS=${ITERS:-1500}
ROUNDS=${ROUNDS:-2}
[ -x "$RUN" ] && [ -x "$BUILD/bin/gridmpi-restore" ] || { echo "mpi.sh: build first (make build)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/gridmpi-mpickpt.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
failures=0
checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { checks=$((checks + 1)); echo "ok: $*"; }

"$BUILD/bin/mpicc" -O1 -o "$WORK/mpi_loop" "$ROOT/tests/checkpoint/mpi_loop.c" || { echo "mpi.sh: cannot build mpi_loop.c" >&2; exit 2; }
"$BUILD/bin/mpicc" -O1 -pthread -o "$WORK/mpi_threads" "$ROOT/tests/checkpoint/mpi_threads.c" || { echo "mpi.sh: cannot build mpi_threads.c" >&2; exit 2; }
for k in is_sort ft_transpose cg_solve lu_sweep mg_vcycle; do
    "$BUILD/bin/mpicc" -O2 -o "$WORK/$k" "$ROOT/bench/wan/$k.c" -lm || { echo "mpi.sh: cannot build $k.c" >&2; exit 2; }
done

ref=$("$RUN" -n "$RANKS" "$WORK/mpi_loop" "$ITERS" | grep '^mpi_loop:')
case "$ref" in
    *"wrong 0") echo "reference: $ref" ;;
    *) echo "mpi.sh: the uninterrupted run failed: '$ref'" >&2; exit 1 ;;
esac

# latest DIR: the sequence number of DIR's newest complete checkpoint (0: none)
latest() { cat "$1/latest" 2> /dev/null || echo 0; }

# wait_checkpoint DIR SEQ: wait (30 s at most) until checkpoint SEQ is complete
wait_checkpoint() {
    local i
    for i in $(seq 300); do
        [ "$(latest "$1")" -ge "$2" ] 2> /dev/null && return 0
        sleep 0.1
    done
    return 1
}

# random_pause: 0.3 to 1.8 s, so the checkpoint falls anywhere in the run
random_pause() { sleep "$(printf '%d.%d' $((RANDOM % 2)) $((RANDOM % 10)))"; sleep 0.3; }

# leftovers: mpi_loop or gridmpi-restore processes of this test still running
leftovers() { pgrep -f "$WORK/" | grep -v "^$$\$" || true; }

# start_job OUT ARGS...: gridmpirun ARGS in the background, output to OUT
start_job() {
    local out=$1
    shift
    "$RUN" "$@" > "$out" 2>&1 &
    job=$!
    pids+=("$job")
}

# killed_after_checkpoint DIR SEQ NAME: ask for checkpoint SEQ, wait for it, SIGKILL the job
killed_after_checkpoint() {
    local dir=$1 seq=$2 name=$3
    random_pause
    kill -QUIT "$job"
    if ! wait_checkpoint "$dir" "$seq"; then
        fail "$name: checkpoint $seq was not written within 30 s: $(tail -3 "$WORK/out" | tr "\n" "|")"
        kill -9 "$job" 2> /dev/null
        wait "$job" 2> /dev/null
        return 1
    fi
    kill -9 "$job"
    wait "$job" 2> /dev/null
    # the ranks die with their launcher (PR_SET_PDEATHSIG)
    for _ in $(seq 50); do [ -z "$(leftovers)" ] && break; sleep 0.1; done
    [ -z "$(leftovers)" ] || { fail "$name: processes left after killing the job: $(leftovers | tr '\n' ' ')"; return 1; }
    return 0
}

# restart_and_check DIR NAME [ARGS]: gridmpirun --restart DIR must give the reference result
restart_and_check() {
    local dir=$1 name=$2
    shift 2
    local out
    out=$("$RUN" --restart "$dir" "$@" 2>&1)
    local rc=$?
    if [ $rc -eq 0 ] && grep -qxF "$ref" <<< "$out"; then
        pass "$name"
    else
        fail "$name: the restarted job (exit $rc) said:"
        sed 's/^/    /' <<< "$out" | tail -20 >&2
    fi
}

for round in $(seq "$ROUNDS"); do
    # continue: two checkpoints, the job goes on
    d=$WORK/continue-$round
    start_job "$WORK/out" -n "$RANKS" --checkpoint-dir "$d" "$WORK/mpi_loop" "$ITERS"
    random_pause
    kill -QUIT "$job"
    wait_checkpoint "$d" 1 && { sleep 0.3; kill -QUIT "$job"; wait_checkpoint "$d" 2; }
    wait "$job"
    rc=$?
    if [ $rc -eq 0 ] && grep -qxF "$ref" "$WORK/out" && [ "$(latest "$d")" = 2 ] && [ -f "$d/ckpt-2/MANIFEST" ]; then
        pass "continue after 2 checkpoints (round $round)"
    else
        fail "continue (round $round): exit $rc, latest $(latest "$d"):"
        tail -20 "$WORK/out" >&2
    fi

    # kill after a checkpoint, then restart
    d=$WORK/kill-$round
    start_job "$WORK/out" -n "$RANKS" --checkpoint-dir "$d" "$WORK/mpi_loop" "$ITERS"
    killed_after_checkpoint "$d" 1 "kill (round $round)" && restart_and_check "$d" "killed after a checkpoint, restarted (round $round)"

    # chain: the restarted job checkpoints, is killed and restarted again
    d=$WORK/chain-$round
    start_job "$WORK/out" -n "$RANKS" --checkpoint-dir "$d" "$WORK/mpi_loop" $((ITERS * 2))
    if killed_after_checkpoint "$d" 1 "chain (round $round)"; then
        start_job "$WORK/out" --restart "$d"
        if killed_after_checkpoint "$d" 2 "chain, restarted (round $round)"; then
            out=$("$RUN" --restart "$d" 2>&1)
            grep -q "^mpi_loop: $RANKS ranks, $((ITERS * 2)) iterations, checksum .*, wrong 0$" <<< "$out" \
                && pass "restarted twice (round $round)" || { fail "chain (round $round):"; tail -20 <<< "$out" >&2; }
        fi
    fi
done

# stop: --checkpoint-and-stop ends the job at its first checkpoint
d=$WORK/stop
start_job "$WORK/out" -n "$RANKS" --checkpoint-dir "$d" --checkpoint-and-stop "$WORK/mpi_loop" "$ITERS"
random_pause
kill -QUIT "$job"
wait "$job"
rc=$?
if [ $rc -eq 0 ] && [ "$(latest "$d")" = 1 ] && ! grep -q '^mpi_loop:' "$WORK/out"; then
    pass "--checkpoint-and-stop ended the job at its checkpoint"
    restart_and_check "$d" "restarted after --checkpoint-and-stop"
else
    fail "--checkpoint-and-stop: exit $rc, latest $(latest "$d"):"
    tail -20 "$WORK/out" >&2
fi

# bench/wan's NPB-like kernels: each verifies its own results (IS every
# iteration's sort, FT the data after every forward and inverse 3-D FFT,
# CG the solution against the known one, LU and MG the grid against rank
# 0's serial computation, bit for bit) and prints CHECK ok errors=0.
kernel_case() { # NAME BINARY ARGS...
    local name=$1 d=$WORK/ck-$1
    shift
    start_job "$WORK/out" -n "$RANKS" --checkpoint-dir "$d" "$@"
    killed_after_checkpoint "$d" 1 "$name" || return
    local out rc
    out=$("$RUN" --restart "$d" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^CHECK ok errors=0' <<< "$out"; then
        pass "$name killed after a checkpoint, restarted, verified"
    else
        fail "$name restart (exit $rc):"
        tail -20 <<< "$out" >&2
    fi
}
# Each runs about 5 s on 4 ranks of this 2-CPU machine: well past the
# latest checkpoint request (random_pause: at most 2.1 s). At 2 s (12 IS
# repetitions) a job sometimes ended before its checkpoint was asked for.
kernel_case is_sort "$WORK/is_sort" --keys-log2 20 --iters 50 --reps 30
kernel_case ft_transpose "$WORK/ft_transpose" --reps 75
kernel_case cg_solve "$WORK/cg_solve" --reps 40
kernel_case lu_sweep "$WORK/lu_sweep" --iters 20 --reps 90
kernel_case mg_vcycle "$WORK/mg_vcycle" --reps 250

# threads inside MPI at the checkpoint (MPI_THREAD_MULTIPLE, 3 threads a rank)
tref=$("$RUN" -n "$RANKS" --checkpoint-dir "$WORK/tref" "$WORK/mpi_threads" 3000 | grep '^mpi_threads:')
d=$WORK/ck-threads
start_job "$WORK/out" -n "$RANKS" --checkpoint-dir "$d" "$WORK/mpi_threads" 3000
if killed_after_checkpoint "$d" 1 "mpi_threads"; then
    out=$("$RUN" --restart "$d" 2>&1)
    if [[ "$tref" == *"wrong 0" ]] && grep -qxF "$tref" <<< "$out"; then
        pass "threads inside MPI: killed after a checkpoint, restarted"
    else
        fail "mpi_threads restart: expected '$tref', got:"
        tail -20 <<< "$out" >&2
    fi
fi

# mpi4py + numpy (the wheel in /opt/mpi4py, with numpy beside it)
PY=${MPI4PY_VENV:-/opt/mpi4py}/bin/python
if [ -x "$PY" ] && "$PY" -c 'import mpi4py, numpy' 2> /dev/null; then
    export LD_LIBRARY_PATH=$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    cp "$ROOT/tests/checkpoint/mpi4py_loop.py" "$WORK/"
    # (the reference runs as a checkpointed job does, on TCP only: the
    # order of its floating-point sums depends on the collectives' algorithms)
    pyref=$("$RUN" -n "$RANKS" --checkpoint-dir "$WORK/pyref" "$PY" "$WORK/mpi4py_loop.py" 800 | grep '^mpi4py_loop:')
    d=$WORK/python
    start_job "$WORK/out" -n "$RANKS" --checkpoint-dir "$d" "$PY" "$WORK/mpi4py_loop.py" 800
    if killed_after_checkpoint "$d" 1 "mpi4py"; then
        out=$("$RUN" --restart "$d" 2>&1)
        if [[ "$pyref" == *"wrong 0" ]] && grep -qxF "$pyref" <<< "$out"; then
            pass "mpi4py + numpy killed after a checkpoint, restarted"
        else
            fail "mpi4py restart: expected '$pyref', got:"
            tail -20 <<< "$out" >&2
        fi
    fi
else
    echo "skip: mpi4py + numpy (no $PY with both)"
fi

[ -z "$(ls /dev/shm | grep gridmpi- || true)" ] || echo "note: /dev/shm holds gridmpi files (other jobs?)"
echo "mpi.sh: $checks passed, $failures failed"
[ $failures -eq 0 ]
