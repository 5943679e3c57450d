#!/usr/bin/env bash
# mpi4py's own tests (the PyPI wheel, built for the MPICH ABI) on GridMPI's
# libmpi.so.12, through gridmpirun at 1, 2 and 4 ranks.
#
#   bash tests/mpi4py/run.sh                         # the one-sided tests
#   bash tests/mpi4py/run.sh test_comm.py test_p2p_buf.py   # any others
#   MPI4PY_TESTS=all bash tests/mpi4py/run.sh        # the whole suite and mpi4py.futures' tests
#
# Needs a venv with mpi4py (MPI4PY_VENV, default /opt/mpi4py):
#   python3 -m venv /opt/mpi4py && /opt/mpi4py/bin/pip install mpi4py
# The test sources come from the matching sdist (pip download, kept in
# MPI4PY_SRC, default build/mpi4py-src). Prints PASS/FAIL per rank count
# and a closing "N passed, N failed" line; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${MPI4PY_VENV:-/opt/mpi4py}
src=${MPI4PY_SRC:-$(pwd)/build/mpi4py-src}
lib=$(pwd)/build/lib
launcher=$(pwd)/build/bin/gridmpirun
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import mpi4py' 2>/dev/null; then
    echo "mpi4py: no mpi4py in $venv (python3 -m venv $venv && $venv/bin/pip install mpi4py)" >&2
    exit 1
fi
version=$("$venv/bin/python" -c 'import mpi4py; print(mpi4py.__version__)')
tests_dir="$src/mpi4py-$version/test"
if [ ! -d "$tests_dir" ]; then
    mkdir -p "$src"
    "$venv/bin/pip" download -q --no-binary :all: --no-deps "mpi4py==$version" -d "$src"
    tar xzf "$src/mpi4py-$version.tar.gz" -C "$src"
fi
if [ $# -gt 0 ]; then
    tests=("$@")
elif [ "${MPI4PY_TESTS:-}" = all ]; then
    tests=()
else
    tests=(test_rma.py test_rma_nb.py test_win.py)
fi
passed=0 failed=0
for n in 1 2 4; do
    log=$(mktemp)
    if (cd "$tests_dir" && LD_LIBRARY_PATH=$lib timeout 900 "$launcher" -n $n \
            "$venv/bin/python" main.py "${tests[@]}") >"$log" 2>&1 \
        && [ "$(grep -c '^OK' "$log")" -ge "$n" ]; then
        echo "PASS  mpi4py ${tests[*]:-(all)} -n $n  ($(grep -m1 '^Ran' "$log"))"
        passed=$((passed + 1))
    else
        echo "FAIL  mpi4py ${tests[*]:-(all)} -n $n"
        grep -v '^\[' "$log" | tail -40 | sed 's/^/    | /'
        failed=$((failed + 1))
    fi
    rm -f "$log"
done
# mpi4py.futures' own tests (in the sdist's demo/): the pool spawns its
# workers at 1 rank; `-m mpi4py.futures` makes the world the pool.
if [ "${MPI4PY_TESTS:-}" = all ] && [ $# -eq 0 ]; then
    for run in "1" "2" "4" "2 -m mpi4py.futures" "4 -m mpi4py.futures"; do
        n=${run%% *} how=${run#"$n"}
        log=$(mktemp)
        # shellcheck disable=SC2086
        if (cd "$tests_dir/../demo/futures" && LD_LIBRARY_PATH=$lib timeout 900 "$launcher" -n $n \
                "$venv/bin/python" $how test_futures.py) >"$log" 2>&1 && grep -q '^OK' "$log"; then
            echo "PASS  mpi4py futures$how -n $n  ($(grep -m1 '^Ran' "$log"))"
            passed=$((passed + 1))
        else
            echo "FAIL  mpi4py futures$how -n $n"
            tail -40 "$log" | sed 's/^/    | /'
            failed=$((failed + 1))
        fi
        rm -f "$log"
    done
fi
echo "summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
