#!/usr/bin/env bash
# The MPI-5 standard ABI (libmpi_abi.so.1): every C program here is built
# twice, with GridMPI's mpicc_abi and with MPICH's (binary compatibility:
# MPICH's mpi_abi.h, run on our library), and run under gridmpirun at 1, 2
# and 4 ranks (MPICH's build also under MPICH's mpiexec, still on our
# library). Also: every function mpi_abi.h declares is exported.
#
# ABI_C_SUITE=1 also runs the whole C suite (tests/c) built with mpicc_abi,
# some minutes (tests/abi/xfail-c-suite.txt: what the standard ABI lacks).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
lib=$root/build/lib
MPICH=${MPICH_PREFIX:-/opt/peers/mpich}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
pass() { echo "PASS  $*"; }
failed() { echo "FAIL  $1"; shift; [ $# -gt 0 ] && printf '%s\n' "$@" | sed 's/^/    | /'; fail=1; }

# The header's functions are all in the library.
declared=$(grep -o '\bP\?MPI_[A-Za-z0-9_]*(' build/include/mpi_abi.h | tr -d '(' | grep -v '_function$' | sort -u)
exported=$(nm -D --defined-only "$lib/libmpi_abi.so.1" | awk '{print $3}' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -z "$missing" ]; then pass "every function of mpi_abi.h is exported by libmpi_abi.so.1 ($(echo "$declared" | wc -l))"
else failed "functions of mpi_abi.h missing from libmpi_abi.so.1" "$missing"; fi

# The header as C++.
if command -v c++ >/dev/null 2>&1; then
    printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' > "$work/hello.cc"
    if out=$(build/bin/mpicxx_abi -o "$work/hello_cc" "$work/hello.cc" 2>&1); then pass "mpi_abi.h compiles as C++ (mpicxx_abi)"
    else failed "mpi_abi.h as C++" "$out"; fi
fi

builds=(ours)
if [ -x "$MPICH/bin/mpicc_abi" ]; then builds+=(mpich)
else echo "SKIP  MPICH's mpicc_abi not found at $MPICH (binary compatibility not tested)"; fi

for src in tests/abi/*.c; do
    name=$(basename "$src" .c)
    for b in "${builds[@]}"; do
        exe=$work/${name}_$b
        case $b in
            ours) cc=(build/bin/mpicc_abi -O1 -Wall -Werror) ;;
            mpich) cc=("$MPICH/bin/mpicc_abi" -O1 -Wall) ;;
        esac
        if ! out=$("${cc[@]}" -o "$exe" "$src" 2>&1); then failed "$name: build with $b mpicc_abi" "$out"; continue; fi
        # It must load our libmpi_abi.so.1 (MPICH's binary through LD_LIBRARY_PATH,
        # which comes before its RUNPATH).
        resolved=$(LD_LIBRARY_PATH=$lib ldd "$exe")
        if ! grep -qF "$lib/libmpi_abi.so.1" <<<"$resolved"; then
            failed "$name ($b build) does not resolve to our libmpi_abi.so.1" "$resolved"; continue
        fi
        for n in 1 2 4; do
            if out=$(LD_LIBRARY_PATH=$lib timeout 60 build/bin/gridmpirun -n $n -x LD_LIBRARY_PATH "$exe" 2>&1) \
                && grep -q "$name OK ($n ranks)" <<<"$out"; then
                pass "$name ($b mpicc_abi) -n $n"
            else
                failed "$name ($b mpicc_abi) -n $n" "$out"
            fi
        done
        # And under MPICH's own launcher, our library its PMI client.
        if [ $b = mpich ] && [ -x "$MPICH/bin/mpiexec" ]; then
            if out=$(LD_LIBRARY_PATH=$lib timeout 60 "$MPICH/bin/mpiexec" -n 2 -genv LD_LIBRARY_PATH "$lib" "$exe" 2>&1) \
                && grep -q "$name OK (2 ranks)" <<<"$out"; then
                pass "$name ($b mpicc_abi) under MPICH's mpiexec -n 2, on our library"
            else
                failed "$name ($b mpicc_abi) under MPICH's mpiexec -n 2, on our library" "$out"
            fi
        fi
    done
done

if [ "${ABI_C_SUITE:-0}" = 1 ]; then
    python3 tests/run.py --mpicc build/bin/mpicc_abi --xfail tests/abi/xfail-c-suite.txt -j 1 || fail=1
fi
exit $fail
