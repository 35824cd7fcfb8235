"""Memory search loads NumPy with its BLAS on one thread unless the environment asks for
more, and leaves the environment of the programs Corvid runs as it was. Each case runs in a
fresh interpreter: a process loads its BLAS once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
PROBE = """
import ctypes, os, sys
from pathlib import Path
from gateway.config.home import init_home
from gateway.config.loader import parse_config
from gateway.tool_setup import memory_index, memory_search
home = Path(sys.argv[1])
init_home(home, {})
section = {"provider": "openai", "api_key": "k", "base_url": "http://127.0.0.1:9/v1"}
config = parse_config({"memory": {"embeddings": section}}, home=home, environ={})
memory_search(config, memory_index(config))
libs = sorted({line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line})
get = getattr(ctypes.CDLL(libs[0]), "scipy_openblas_get_num_threads64_", None) if libs else None
print(get() if get else "unknown", os.environ.get("OPENBLAS_NUM_THREADS", "unset"))
"""


def _probe(tmp_path: Path, **env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "home")],
        cwd=ROOT,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.split()


def test_numpy_gets_one_blas_thread_and_the_environment_is_left_alone(tmp_path):
    threads, seen = _probe(tmp_path)
    if threads == "unknown":
        pytest.skip("this NumPy's BLAS does not say how many threads it has")
    assert (threads, seen) == ("1", "unset")


def test_a_thread_count_the_environment_sets_wins(tmp_path):
    threads, seen = _probe(tmp_path, OPENBLAS_NUM_THREADS="2")
    if threads == "unknown":
        pytest.skip("this NumPy's BLAS does not say how many threads it has")
    assert (threads, seen) == ("2", "2")
