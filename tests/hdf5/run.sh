#!/usr/bin/env bash
# Parallel HDF5 on GridMPI: Debian's libhdf5-mpich (built against MPICH,
# linked to libmpich.so.12, which build/lib provides) runs phdf5_basic.c
# through gridmpirun at 1, 2 and 4 ranks, and (as root, when no other grid
# is up) at 8 ranks across the two clusters of an emulated 2x4 grid; after
# the 4- and 8-rank runs h5dump (hdf5-tools) reads the file and every
# element is checked. SKIPs (exit 0) when the package is absent (apt-get
# install libhdf5-mpich-dev). Prints PASS/FAIL per run and a closing
# "N passed, N failed" line; exits 1 on a failure.
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
# h5dump FILE N: the file phdf5_basic wrote at N ranks holds what it should.
h5check() {
    if ! command -v h5dump >/dev/null; then
        echo "SKIP  h5dump of the $2-rank file (apt-get install hdf5-tools)"
        return
    fi
    if python3 - "$1" "$2" <<'PY'
import re, subprocess, sys
path, n = sys.argv[1], int(sys.argv[2])
rows, cols = 8, 100  # phdf5_basic.c: ROWS per rank, COLS
for p, name in enumerate(["collective", "independent"]):
    out = subprocess.run(["h5dump", "-y", "-w", "0", "-d", "/" + name, path], capture_output=True, text=True, check=True).stdout
    data = out[out.index("DATA {") + 6:]
    got = [int(x) for x in re.findall(r"-?\d+", data[:data.index("}")])]
    want = [p * 1000000 + r * 10000 + i for r in range(n) for i in range(rows * cols)]
    if got != want:
        bad = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
        sys.exit(f"/{name}: {len(got)} values, expected {len(want)}; first difference at {bad}")
out = subprocess.run(["h5dump", "-a", "/ranks", path], capture_output=True, text=True, check=True).stdout
if not re.search(r"\(0\): %d\b" % n, out):
    sys.exit("attribute /ranks is not %d: %s" % (n, out))
PY
    then
        echo "PASS  h5dump of the $2-rank file: every element and the attribute"
        passed=$((passed + 1))
    else
        echo "FAIL  h5dump of the $2-rank file"
        failed=$((failed + 1))
    fi
}

for n in 1 2 4; do
    rm -f "$work/t.h5"
    if out=$(LD_LIBRARY_PATH=$PWD/build/lib timeout 120 build/bin/gridmpirun -n $n "$work/phdf5_basic" "$work/t.h5" keep 2>&1) \
        && grep -q "$n ranks OK" <<<"$out"; then
        echo "PASS  hdf5 phdf5_basic -n $n"
        passed=$((passed + 1))
        [ $n = 4 ] && h5check "$work/t.h5" 4
    else
        echo "FAIL  hdf5 phdf5_basic -n $n"
        sed 's/^/    | /' <<<"$out" | tail -20
        failed=$((failed + 1))
    fi
done

# Across the two clusters of an emulated 2x4 grid (WAN 5 ms each way).
. tests/testbed/grid.sh
up=0
grid_up "hdf5 on the 2x4 testbed" 2x4 --delay 5ms || up=$?
case $up in
0)
    rm -f "$work/t.h5"
    if out=$(timeout 180 "$GRID_TB" exec h0 -- "$PWD/build/bin/gridmpirun" --launcher /run/gridmpi-testbed/bin/gridmpi-testbed-ssh \
            -hosts h0,h1,h2,h3,h4,h5,h6,h7 -n 8 -genv LD_LIBRARY_PATH "$PWD/build/lib" "$work/phdf5_basic" "$work/t.h5" keep 2>&1) \
        && grep -q "8 ranks OK" <<<"$out"; then
        echo "PASS  hdf5 phdf5_basic -n 8 on the 2x4 testbed"
        passed=$((passed + 1))
        h5check "$work/t.h5" 8
    else
        echo "FAIL  hdf5 phdf5_basic -n 8 on the 2x4 testbed"
        sed 's/^/    | /' <<<"$out" | tail -20
        failed=$((failed + 1))
    fi
    grid_down ;;
2) failed=$((failed + 1)) ;;
esac
echo "summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
