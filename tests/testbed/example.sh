#!/usr/bin/env bash
# The example of docs/testbed.md: an MPI all-to-all across a 2x4 grid whose
# two clusters are joined by a 100 Mbit/s WAN link with 5 ms one-way delay,
# recorded by the 1 ms monitor and plotted. Run as root:
#
#   tests/testbed/example.sh [OUTDIR]      (default /tmp/gridmpi-testbed-example)
#
# Runs MPICH (pip's, at /opt/peers/mpich) through mpiexec with the testbed as
# its ssh launcher, then the same program under GridMPI's gridmpirun, then
# the program built with GridMPI's own library, if they are built (build/).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TB=${GRIDMPI_TESTBED:-$ROOT/target-testbed/release/gridmpi-testbed}
MPICH=${MPICH_PREFIX:-/opt/peers/mpich}
OUT=${1:-/tmp/gridmpi-testbed-example}
mkdir -p "$OUT"
HOSTS=h0,h1,h2,h3,h4,h5,h6,h7
AGENT=/run/gridmpi-testbed/bin/gridmpi-testbed-ssh

"$TB" up 2x4 --rate 100mbit --delay 5ms --queue 100p --cc cubic
trap '"$TB" down' EXIT

"$MPICH/bin/mpicc" -O2 -o "$OUT/alltoall" "$ROOT/tests/testbed/mpi_hello.c"

echo "== MPICH: mpiexec with gridmpi-testbed as its ssh launcher"
"$TB" monitor -o "$OUT/mpich.csv" --title "MPICH MPI_Alltoall (64 KiB per peer) on 2x4, WAN 100 Mbit/s, 5 ms, 100-packet queue" -- \
    "$TB" exec h0 -- env MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp \
    "$MPICH/bin/mpiexec" -launcher ssh -launcher-exec "$AGENT" -hosts $HOSTS -n 8 "$OUT/alltoall" 65536 20

if [ -x "$ROOT/build/bin/gridmpirun" ]; then
    echo "== GridMPI: gridmpirun with gridmpi-testbed as its launch agent"
    "$TB" monitor -o "$OUT/gridmpirun.csv" --title "gridmpirun, same program, same grid" -- \
        "$TB" exec h0 -- "$ROOT/build/bin/gridmpirun" --launcher "$AGENT" -hosts $HOSTS -n 8 \
        -genv MPIR_CVAR_CH4_NETMOD ofi -genv FI_PROVIDER tcp "$OUT/alltoall" 65536 20
fi
if [ -x "$ROOT/build/bin/gridmpirun" ] && [ -x "$ROOT/build/bin/mpicc" ] && [ -e "$ROOT/build/lib/libmpi.so.12" ]; then
    echo "== GridMPI: its own library (build/bin/mpicc) under gridmpirun"
    "$ROOT/build/bin/mpicc" -O2 -o "$OUT/alltoall-gridmpi" "$ROOT/tests/testbed/mpi_hello.c"
    "$TB" monitor -o "$OUT/gridmpi.csv" --title "GridMPI library, same program, same grid" -- \
        "$TB" exec h0 -- "$ROOT/build/bin/gridmpirun" --launcher "$AGENT" -hosts $HOSTS -n 8 \
        "$OUT/alltoall-gridmpi" 65536 20 || echo "(the GridMPI library run failed; see its messages above)"
fi
"$TB" status | sed -n '/^link/,$p'
