#!/usr/bin/env bash
# Parallel HDF5 on GridMPI: Debian's libhdf5-mpich (built against MPICH,
# linked to libmpich.so.12, which build/lib provides) runs phdf5_basic.c
# through gridmpirun at 1, 2 and 4 ranks. SKIPs (exit 0) when the package
# is absent (apt-get install libhdf5-mpich-dev). Prints PASS/FAIL per rank
# count and a closing "N passed, N failed" line; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
inc=/usr/include/hdf5/mpich
libdir=/usr/lib/x86_64-linux-gnu/hdf5/mpich
mpiinc=/usr/include/x86_64-linux-gnu/mpich
if [ ! -f "$inc/hdf5.h" ] || [ ! -d "$libdir" ] || [ ! -d "$mpiinc" ]; then
    echo "SKIP  hdf5: libhdf5-mpich-dev is not installed"
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O1 -o "$work/phdf5_basic" tests/hdf5/phdf5_basic.c -I"$inc" -I"$mpiinc" -L"$libdir" -lhdf5 -lmpich
passed=0 failed=0
for n in 1 2 4; do
    if out=$(LD_LIBRARY_PATH=$PWD/build/lib timeout 120 build/bin/gridmpirun -n $n "$work/phdf5_basic" "$work/t.h5" 2>&1) \
        && grep -q "$n ranks OK" <<<"$out"; then
        echo "PASS  hdf5 phdf5_basic -n $n"
        passed=$((passed + 1))
    else
        echo "FAIL  hdf5 phdf5_basic -n $n"
        sed 's/^/    | /' <<<"$out" | tail -20
        failed=$((failed + 1))
    fi
done
echo "summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
