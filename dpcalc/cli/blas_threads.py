"""One BLAS thread for `dpcalc simulate`'s training loop, unless the user chose.

The loop multiplies small matrices (a batch of 256 × 50 by 50 × 20 by default). OpenBLAS
runs them on a thread per core, and its idle threads spin: measured here (2 cores), the
default run used 1.0 s of CPU for 0.55 s of wall with them and 0.5 s for the same wall
with one thread; `--hidden 512 --batch-size 1024 --epochs 3` took 3.6 s either way (5.6
against 3.4 s of CPU). The core they spun on is the one the live accounting runs on
(simulate_accounting.LiveAccountant). OpenBLAS reads its thread count once, when NumPy
loads it: this must run before NumPy is imported, and does nothing after.
"""
from __future__ import annotations

import os
import sys

# OpenBLAS (NumPy's wheels), MKL (conda's NumPy), and the OpenMP setting both honour
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")


def single_blas_thread() -> bool:
    """Ask for one BLAS thread where NumPy is not loaded yet and none of the thread
    variables is set (the user's choice stands); True if it did."""
    if "numpy" in sys.modules or any(name in os.environ for name in _THREAD_VARIABLES):
        return False
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    return True
