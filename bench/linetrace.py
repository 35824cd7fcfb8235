"""A pytest plugin for ``bench/mutation.py``: which tests run which lines of the mutated modules.

Loaded with ``-p linetrace`` (``bench/`` on the path) and ``CORVID_TRACE_FILES`` (the module
paths, separated by ``os.pathsep``); writes ``CORVID_TRACE_OUT``: a JSON object mapping each
test's node id to the ``"path:line"`` entries it executed. Only frames of those files are
traced, in every thread, so the rest of the suite runs at nearly full speed.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

_FILES = {
    str(Path(p).resolve()): Path(p).as_posix()
    for p in os.environ.get("CORVID_TRACE_FILES", "").split(os.pathsep)
    if p
}
_ROOT = Path.cwd().resolve()
_hits: set[str] = set()
_by_test: dict[str, list[str]] = {}


def _local(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "line":
        _hits.add(f"{_FILES[frame.f_code.co_filename]}:{frame.f_lineno}")
    return _local


def _global(frame: FrameType, event: str, arg: Any) -> Any:
    if frame.f_code.co_filename in _FILES:
        _hits.add(f"{_FILES[frame.f_code.co_filename]}:{frame.f_lineno}")
        return _local
    return None


def _relative(files: dict[str, str]) -> dict[str, str]:
    out = {}
    for absolute in files:
        try:
            out[absolute] = Path(absolute).relative_to(_ROOT).as_posix()
        except ValueError:
            out[absolute] = files[absolute]
    return out


_FILES = _relative(_FILES)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _hits.clear()
    sys.settrace(_global)
    threading.settrace(_global)
    try:
        yield
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        _by_test[item.nodeid] = sorted(_hits)


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("CORVID_TRACE_OUT")
    if out:
        Path(out).write_text(json.dumps(_by_test))
