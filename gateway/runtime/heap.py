"""Memory freed after a burst of turns goes back to the system.

The C library keeps the memory a program frees, to reuse it. After many turns at once (a group
waking up, every chat answered after an outage) the process would stay at that peak's size,
though little of it is still in use. Once no turn has run or ended for ``QUIET`` seconds,
``malloc_trim`` hands the free pages back. Where the C library has no ``malloc_trim`` (musl,
macOS) nothing is done.

The start's objects are kept out of Python's full garbage collections (``gc.freeze``): the
modules, the configuration, the channels and the model's SDK, some 220,000 objects that live as
long as the process. A full collection walking them took 130 ms of CPU, well under 1 ms without
them. ``corvid run`` turns the collector off while it starts (``pause_collection``): the SDK's
import alone set off three full collections (160 ms, on the way to the first poll and the first
reply). Once the SDK is loaded, ``resume_collection`` freezes what is alive as it is and turns
the collector back on, so a burst of messages right after a start walks none of it either.

Refcounts still free a frozen object that is let go, but the collector never looks at it again,
so a reference cycle frozen would be kept for good. The first quiet spell after the start
therefore unfreezes everything, runs one full collection and freezes what is left: only what is
really alive stays frozen. Without it the start's own cycles would stay, and so would those of a
busy spell before the quiet (13 MiB once, when 200 chats' failed sends still each left an
exception, its traceback's frames, the task that held it and the connection it failed on in a
cycle).

glibc also gives each thread that allocates its own arena, up to eight per core, and each keeps
what it once held. Corvid's threads (file writes, searches, the SDK's import) wait on the GIL
more than on each other, so ``limit_arenas`` keeps them to ``ARENAS``, as ``MALLOC_ARENA_MAX``
would; a ``MALLOC_ARENA_MAX`` in the environment wins.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
from collections.abc import Callable

log = logging.getLogger(__name__)

QUIET = 5.0  # seconds without a turn before the free memory is handed back
ARENAS = 2  # glibc malloc arenas shared by all threads
_M_ARENA_MAX = -8  # mallopt's parameter, from glibc's malloc.h


def _libc(function: str, *argtypes: type) -> Callable[..., int] | None:
    """A function of the C library, or None where it has no such function. Looked up among
    the process's own symbols, where the interpreter has loaded the C library (finding it by
    name, ``ctypes.util.find_library``, runs ``ldconfig`` in a subprocess at every start)."""
    try:
        found = getattr(ctypes.CDLL(None), function)
    except (OSError, AttributeError):
        return None
    found.argtypes = list(argtypes)
    found.restype = ctypes.c_int
    return found  # type: ignore[no-any-return]


def limit_arenas(count: int = ARENAS) -> bool:
    """Keep the process to ``count`` malloc arenas; True if set. Call before threads start:
    an arena given to a thread stays."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    mallopt = _libc("mallopt", ctypes.c_int, ctypes.c_int)
    return mallopt is not None and bool(mallopt(_M_ARENA_MAX, count))


def _malloc_trim() -> Callable[[], None] | None:
    trim = _libc("malloc_trim", ctypes.c_size_t)
    if trim is None:
        return None

    def run() -> None:
        trim(0)

    return run


_paused = False  # the collector was turned off by ``pause_collection``


def pause_collection() -> None:
    """No garbage collection until ``resume_collection``: for the start's imports, which would
    set off full collections of everything they made so far (see the module docstring). Call
    ``resume_collection`` when they are done, whatever the outcome."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collection() -> None:
    """The start's imports are done: freeze what lives now, without the full collection that
    would walk it all, and turn the collector back on. Nothing if it was not paused."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def freeze_alive() -> None:
    """Collect the garbage there is, what an earlier freeze holds included, then freeze what
    is left (see the module docstring)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class HeapTrim:
    """``turn_over`` after each turn (and once the start is done); the trim runs once the
    gateway has been quiet, and the first quiet spell freezes the objects alive then."""

    def __init__(
        self,
        running: Callable[[], int],
        quiet: float = QUIET,
        trim: Callable[[], None] | None = None,
        freeze: Callable[[], None] | None = None,
    ) -> None:
        self._running = running  # turns running now
        self.quiet = quiet
        self._trim = trim if trim is not None else _malloc_trim()
        self._freeze: Callable[[], None] | None = freeze or freeze_alive  # None once done
        self._last = 0.0  # when the last turn ended
        self._timer: asyncio.TimerHandle | None = None
        self.trims = 0

    def turn_over(self) -> None:
        self._last = asyncio.get_running_loop().time()
        if (self._trim is not None or self._freeze is not None) and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.quiet, self._check)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        if self._running():
            return  # the turn running now calls turn_over when it ends
        left = self._last + self.quiet - asyncio.get_running_loop().time()
        if left > 0:  # a turn ended since this was set: wait for the quiet after it
            self._timer = asyncio.get_running_loop().call_later(left, self._check)
            return
        if self._freeze is not None:
            freeze, self._freeze = self._freeze, None
            freeze()
        if self._trim is None:
            return
        try:
            self._trim()
        except Exception:  # never worth a failed turn
            log.debug("malloc_trim failed", exc_info=True)
        self.trims += 1
