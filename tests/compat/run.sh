#!/usr/bin/env bash
# Binary compatibility with the MPICH ABI: a program compiled with MPICH's
# own mpicc (pip package) runs unchanged on GridMPI's libmpi.so.12, both under
# gridmpirun and under MPICH's mpiexec (our library as a PMI client of hydra).
set -euo pipefail
cd "$(dirname "$0")/../.."
MPICH=${MPICH_PREFIX:-/opt/peers/mpich}
if [ ! -x "$MPICH/bin/mpicc" ]; then
    echo "compat: MPICH not found at $MPICH (install: python3 -m venv $MPICH && $MPICH/bin/pip install mpich)" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$MPICH/bin/mpicc" -O2 -o "$work/pi" examples/pi.c
lib=$(pwd)/build/lib
fail=0
check() { # name, expected library path, command...
    local name=$1; shift
    if out=$("$@" 2>&1) && grep -q "data intact" <<<"$out" && grep -q "error [-0-9.e]*" <<<"$out"; then
        echo "PASS  $name"
    else
        echo "FAIL  $name"; echo "$out" | sed 's/^/    | /'; fail=1
    fi
}
# The binary must really load our library.
# (ldd's output is captured first: `ldd | grep -q` under pipefail fails when
# grep exits at the match before ldd has written its last line.)
resolved=$(LD_LIBRARY_PATH=$lib ldd "$work/pi")
if ! grep -qF "$lib/libmpi.so.12" <<<"$resolved"; then
    echo "FAIL  the MPICH-built binary does not resolve to our libmpi"
    echo "$resolved" | sed 's/^/    | /'
    exit 1
fi
check "MPICH-built binary under gridmpirun -n 4" env LD_LIBRARY_PATH=$lib build/bin/gridmpirun -n 4 -x LD_LIBRARY_PATH "$work/pi" 200000
check "MPICH-built binary under MPICH's mpiexec -n 4" env LD_LIBRARY_PATH=$lib "$MPICH/bin/mpiexec" -n 4 -genv LD_LIBRARY_PATH "$lib" "$work/pi" 200000
check "MPICH-built binary under MPICH's mpiexec, PMI-2" env LD_LIBRARY_PATH=$lib "$MPICH/bin/mpiexec" -n 3 -genv LD_LIBRARY_PATH "$lib" -genv PMI_VERSION 2 "$work/pi" 200000
# Under a PMIx server (Open MPI's mpirun, which is PRRTE): our library
# speaks PMIx through the system's libpmix (libpmix2), so the ranks know
# their rank and size instead of running as singletons.
OMPI=${OMPI_PREFIX:-/opt/peers/openmpi}
if [ -x "$OMPI/bin/mpirun" ]; then
    build/bin/mpicc -O2 -o "$work/pi-gridmpi" examples/pi.c
    # (check's markers, and every rank must see the job of 3: a singleton
    # would print "rank 0 of 1" three times)
    check "GridMPI-built binary under Open MPI's mpirun (PMIx) -n 3" bash -c \
        "out=\$('$OMPI/bin/mpirun' --allow-run-as-root --oversubscribe -n 3 '$work/pi-gridmpi' 200000 2>&1); echo \"\$out\"; grep -q 'rank 2 of 3' <<<\"\$out\" && grep -q 'rank 0 of 3' <<<\"\$out\""
else
    echo "SKIP  GridMPI under a PMIx server: Open MPI not found at $OMPI"
fi
# MPI_T through MPICH's header: its constants, pointer handles and the
# MPI_T_PVAR_ALL_HANDLES data symbol, resolved to ours.
"$MPICH/bin/mpicc" -O2 -o "$work/mpit_list" examples/mpit_list.c
if out=$(env LD_LIBRARY_PATH=$lib GRIDMPI_TRANSPORT=tcp build/bin/gridmpirun -n 2 -x LD_LIBRARY_PATH "$work/mpit_list" 2>&1) \
    && grep -q "GRIDMPI_EAGER_LIMIT" <<<"$out" && grep -q "gridmpi_tcp_cwnd" <<<"$out"; then
    echo "PASS  MPICH-built MPI_T tool (examples/mpit_list.c) under gridmpirun -n 2"
else
    echo "FAIL  MPICH-built MPI_T tool (examples/mpit_list.c) under gridmpirun -n 2"; echo "$out" | sed 's/^/    | /'; fail=1
fi
exit $fail
