"""Waiting, bounded, until a thread waits for a lock the test holds (``writers.waiting``)."""

from __future__ import annotations

import threading
import time

import pytest

from agent.workspace import writers


def watched(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """An event set once any writer waits for another."""
    event, real = threading.Event(), writers.waiting

    def waiting(pause: float) -> None:
        event.set()
        real(pause)

    monkeypatch.setattr(writers, "waiting", waiting)
    return event


def until_waiting(event: threading.Event, thread: threading.Thread) -> None:
    """Return once ``thread`` waits (``event``, from ``watched``); fail if it ends first, or
    does not come within ten seconds."""
    deadline = time.monotonic() + 10
    while not event.wait(0.01):
        assert thread.is_alive(), "it did not wait for the lock"
        assert time.monotonic() < deadline, "it never came to the lock"
