#!/bin/sh
# write-pc.sh PREFIX VERSION MPICH_VERSION: write the pkg-config files of a
# GridMPI install in PREFIX (headers in PREFIX/include, libmpi in PREFIX/lib)
# into PREFIX/lib/pkgconfig. Run by `make build`.
#
#   mpi.pc      the generic name build systems ask for
#   gridmpi.pc  ours
#   mpich.pc    for build systems that look for MPICH by name: libmpi.so.12
#               is MPICH's ABI, and its Version is the MPICH version that
#               ABI and mpi.h match
#
# Every path is written from ${prefix}, so `pkg-config --define-prefix` and
# --define-variable=prefix=... relocate them.
set -eu
if [ $# -ne 3 ]; then
    echo "usage: $0 PREFIX VERSION MPICH_VERSION" >&2
    exit 2
fi
prefix=$(cd "$1" && pwd -P)
dir=$prefix/lib/pkgconfig
mkdir -p "$dir"

# write NAME VERSION DESCRIPTION
write() {
    cat > "$dir/$1.pc.tmp" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $1
Description: $3
Version: $2
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lmpi
PC
    mv "$dir/$1.pc.tmp" "$dir/$1.pc"
}

write mpi "$2" "MPI (GridMPI $2: an MPI for programs spanning several clusters, MPICH ABI)"
write gridmpi "$2" "GridMPI: an MPI for programs spanning several clusters, MPICH ABI"
write mpich "$3" "GridMPI $2, providing the MPICH $3 ABI (libmpi.so.12)"
