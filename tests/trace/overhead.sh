#!/usr/bin/env bash
# What tracing costs: the same MPI_Alltoall loop (tests/trace/exchange.c,
# 1 MiB to every rank) with and without gridmpirun --trace, alternating runs
# so that load from elsewhere hits both alike. Prints the median time per
# iteration of each and the difference.
#
#   tests/trace/overhead.sh [RANKS] [ROUNDS]       # default 4 ranks, 6 rounds
#   GRIDMPI_BUILD=/path/to/build SIZE=1m ITERS=30 REPS=5 tests/trace/overhead.sh
#
# Ranks talk over TCP (GRIDMPI_TRANSPORT=tcp), the transport that is traced.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${GRIDMPI_BUILD:-$ROOT/build}
NP=${1:-4}
ROUNDS=${2:-6}
SIZE=${SIZE:-1m}
ITERS=${ITERS:-30}
REPS=${REPS:-5}
WORK=$(mktemp -d /tmp/gridmpi-trace-overhead.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$BUILD/bin/mpicc" -O2 -o "$WORK/exchange" "$ROOT/tests/trace/exchange.c"
run() { # extra gridmpirun options...
    "$BUILD/bin/gridmpirun" -n "$NP" -genv GRIDMPI_TRANSPORT tcp "$@" "$WORK/exchange" -s "$SIZE" -n "$ITERS" -r "$REPS" |
        sed -n 's/.*us_per_iter=\([0-9.]*\).*/\1/p'
}
: >"$WORK/off"
: >"$WORK/on"
for i in $(seq "$ROUNDS"); do
    run >>"$WORK/off"
    rm -rf "$WORK/trace"
    run --trace "$WORK/trace" >>"$WORK/on"
done
summary=$("$BUILD/bin/gridmpi-trace" summary "$WORK/trace" 2>/dev/null | grep '^tracer:' || true)
python3 - "$WORK/off" "$WORK/on" "$NP" "$SIZE" "$ITERS" "$REPS" "$ROUNDS" "$summary" <<'PY'
import statistics, sys
off = [float(x) for x in open(sys.argv[1]).read().split()]
on = [float(x) for x in open(sys.argv[2]).read().split()]
np_, size, iters, reps, rounds, tracer = sys.argv[3:9]
mo, mn = statistics.median(off), statistics.median(on)
print(f"MPI_Alltoall {size} per rank pair, {np_} ranks over TCP, {rounds} rounds x {reps} reps x {iters} iterations")
print(f"  untraced: median {mo:.1f} us/iteration (min {min(off):.1f}, max {max(off):.1f}, n={len(off)})")
print(f"  traced:   median {mn:.1f} us/iteration (min {min(on):.1f}, max {max(on):.1f}, n={len(on)})")
print(f"  overhead: {100 * (mn - mo) / mo:+.2f}% (median), {100 * (min(on) - min(off)) / min(off):+.2f}% (best)")
if tracer:
    print(f"  last traced run: {tracer}")
PY
