"""An mpi4py + numpy program to checkpoint at any moment (tests/checkpoint/mpi.sh).

    python mpi4py_loop.py ITERATIONS

Each iteration: a ring exchange of a numpy array (sizes from 1 to 200k
float64) with Sendrecv, an Alltoall of int64, an Allreduce of a vector,
a few Python objects through pickle (bcast), on a duplicate of
COMM_WORLD; every value received is checked. Rank 0 prints the checksum
and the number of wrong values at the end: a run checkpointed, killed and
restarted prints what an uninterrupted run prints.
"""
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD.Dup()
rank, size = comm.Get_rank(), comm.Get_size()
iters = int(sys.argv[1])
sizes = [1, 500, 9000, 200_000]
to, frm = (rank + 1) % size, (rank - 1) % size
acc = np.zeros(64, dtype=np.float64)
wrong = 0
for it in range(iters):
    n = sizes[it % len(sizes)]
    out = np.arange(n, dtype=np.float64) * (rank + 1) + it
    got = np.empty(n, dtype=np.float64)
    comm.Sendrecv(out, dest=to, recvbuf=got, source=frm, sendtag=it, recvtag=it)
    wrong += int(np.count_nonzero(got != np.arange(n, dtype=np.float64) * (frm + 1) + it))
    a2a = np.array([rank * 1000 + j + it for j in range(size)], dtype=np.int64)
    back = np.empty(size, dtype=np.int64)
    comm.Alltoall(a2a, back)
    wrong += int(np.count_nonzero(back != np.array([j * 1000 + rank + it for j in range(size)])))
    acc += got[: min(n, 64)].sum() / (it + 1)
    total = np.empty_like(acc)
    comm.Allreduce(acc, total, op=MPI.SUM)
    acc = total / size
    obj = comm.bcast({"it": it, "from": 0} if rank == 0 else None, root=0)
    wrong += obj != {"it": it, "from": 0}
    time.sleep(0.002)
checksum = comm.reduce(float(acc.sum()), op=MPI.SUM, root=0)
wrong_all = comm.reduce(wrong, op=MPI.SUM, root=0)
if rank == 0:
    print(f"mpi4py_loop: {size} ranks, {iters} iterations, checksum {checksum!r}, wrong {wrong_all}", flush=True)
comm.Free()
