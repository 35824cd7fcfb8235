"""Importing a library without the optional packages it would load for what Corvid never uses.

A library that imports an optional package inside ``try: ... except ImportError`` runs as its
default install does when that package is missing. ``without`` makes such packages missing for
one import, in the thread that runs it: one finder, at the front of ``sys.meta_path`` from its
first use on, refuses them (with the reason) while that thread is inside ``without``. The finder
is never taken off the list: Python's import walks ``sys.meta_path`` as it stands, so a finder
removed while another thread walks it can make that thread skip the next one (the path finder
itself) and fail an import that should succeed. Modules already loaded are left as they are,
other threads import as usual meanwhile, and anything that imports these packages afterwards
gets them.

httpx is one such library: it imports its command-line client whenever ``click``, ``pygments``
and ``rich`` are installed (other packages bring them: uvicorn, pytest), 1.5 MiB and 9 ms that
no HTTP request needs. ``import_httpx`` imports it without them; Corvid's modules that use httpx
call it before they import httpx.

A leaf: it imports nothing from Corvid.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

# What httpx imports, if it can, for its command-line client.
HTTPX_CLI = {
    "click": "httpx's command-line client",
    "pygments": "httpx's command-line client",
    "rich": "httpx's command-line client",
}


class _NotUsed(MetaPathFinder):
    """Refuses, in a thread inside ``without``, the packages it was given there."""

    def __init__(self) -> None:
        self._local = threading.local()

    def refusing(self) -> list[Mapping[str, str]]:
        stack: list[Mapping[str, str]] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        for unused in getattr(self._local, "stack", ()):
            for package, why in unused.items():
                if fullname == package or fullname.startswith(package + "."):
                    raise ImportError(f"not imported: used only for {why}")
        return None


_finder = _NotUsed()
_placed = threading.Lock()  # the finder placed once; sys.modules' entries taken out one at a time


@contextlib.contextmanager
def without(unused: Mapping[str, str]) -> Iterator[None]:
    """While inside, importing one of ``unused`` (package: what it is for) in this thread fails
    as if it were not installed; one already loaded is paid for and left alone."""
    with _placed:
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
    stack = _finder.refusing()
    stack.append({p: why for p, why in unused.items() if p not in sys.modules})
    try:
        yield
    finally:
        stack.pop()


def take_out(name: str, module: ModuleType) -> None:
    """Take ``module`` out of ``sys.modules`` if it is still there as ``name``: checked and
    taken out under one lock, so a real module put there meanwhile stays."""
    with _placed:
        if sys.modules.get(name) is module:
            del sys.modules[name]


def import_httpx() -> ModuleType:
    """httpx, imported (if it is not yet) without its command-line client. A module in its
    place without a spec (python-telegram-bot's stand-in while it loads, in
    ``channels/telegram/sdk.py``) is not httpx: the real one is imported."""
    found = sys.modules.get("httpx")
    if found is not None and found.__spec__ is not None:
        return found
    if found is not None:
        take_out("httpx", found)
    with without(HTTPX_CLI):
        return importlib.import_module("httpx")
