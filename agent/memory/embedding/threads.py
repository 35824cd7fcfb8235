"""NumPy for memory search, loaded with its BLAS on one thread."""

from __future__ import annotations

import importlib
import os
import sys

BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


# On two busy cores a second BLAS thread bought the embedder's batches nothing and made a
# query's embedding, on the way of every search, several times slower (bench/vector_bench.py).
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
