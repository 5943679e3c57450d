#!/usr/bin/env bash
# The main demo: an MPI program run by gridmpirun. (Once the grid testbed is
# in, this runs across an emulated two-cluster grid; see docs/.)
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
mkdir -p $B/examples
$B/bin/mpicc -O2 -o $B/examples/pi examples/pi.c
echo "== 4 ranks on this machine (shared memory) =="
$B/bin/gridmpirun -n 4 $B/examples/pi
echo
echo "== 4 ranks forced onto TCP =="
$B/bin/gridmpirun -n 4 -genv GRIDMPI_TRANSPORT tcp $B/examples/pi
