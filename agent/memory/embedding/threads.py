"""NumPy for memory search, loaded with its BLAS on one thread.

On two busy cores a second BLAS thread bought the embedder's batches nothing (5.0 and 9.0
chunks/s with one thread, 5.2 and 10.2 with two) and made a query's embedding several times
slower (p95 28-195 ms with one thread, 227-1030 ms with two: the threads wait for each
other's core), and that embedding is on the way of every search and every turn's recall.
An explicit setting in the environment wins; the environment is put back as it was once
NumPy is loaded, so that programs Corvid runs are not affected.
"""

from __future__ import annotations

import importlib
import os
import sys

BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def load_numpy_on_one_thread() -> bool:
    """Import NumPy with one BLAS thread; False when it was loaded before (its BLAS has its
    threads then, and keeps them)."""
    if "numpy" in sys.modules:
        return False
    saved = {name: os.environ.get(name) for name in BLAS_THREADS}
    for name in BLAS_THREADS:
        os.environ.setdefault(name, "1")
    try:
        importlib.import_module("numpy")
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return True
