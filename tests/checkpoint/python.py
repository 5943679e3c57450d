"""A Python interpreter across a checkpoint: dicts, lists, hashlib's state,
io's output buffer, all in the interpreter's heap (and numpy's arrays
when numpy is there). The library is called through ctypes.

python.py IMAGE STEPS run|kill (as single.c; GRIDMPI_CKPT_LIB names
libgridmpi_checkpoint.so)."""
import ctypes
import hashlib
import os
import sys

lib = ctypes.CDLL(os.environ["GRIDMPI_CKPT_LIB"])
image, mode = sys.argv[1].encode(), sys.argv[3]
steps = {int(s) for s in sys.argv[2].split(",")}
try:
    import numpy as np
except ImportError:
    np = None

state = {"acc": 0, "words": []}
arr = np.arange(100000, dtype=np.float64) if np is not None else None
h = hashlib.sha256()
for step in range(30):
    state["acc"] = (state["acc"] * 31 + step) % (1 << 61)
    state["words"].append("w%d" % (step * step))
    h.update(repr(state).encode())
    extra = ""
    if arr is not None:
        arr = np.sqrt(arr * 1.0001 + step)
        extra = " numpy %.6f" % float(arr.sum())
    print("step %d acc %d sha256 %s%s" % (step, state["acc"], h.hexdigest()[:16], extra))
    if step in steps:
        r = lib.gridmpi_checkpoint(image)
        if r < 0:
            sys.exit(3)
        if r == 0 and mode == "kill":
            os.kill(os.getpid(), 9)
print("done", len(state["words"]))
