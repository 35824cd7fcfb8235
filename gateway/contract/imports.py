"""Importing a library without the optional packages it would load for what Corvid never uses.

A library that imports an optional package inside ``try: ... except ImportError`` runs as its
default install does when that package is missing. ``without`` makes such packages missing for
one import: a finder at the front of ``sys.meta_path`` refuses them, with the reason, for as
long as the import runs. Modules already loaded are left as they are, and anything that imports
these packages afterwards gets them as usual.

httpx is one such library: it imports its command-line client whenever ``click``, ``pygments``
and ``rich`` are installed (other packages bring them: uvicorn, pytest), 1.5 MiB and 9 ms that
no HTTP request needs. ``import_httpx`` imports it without them; Corvid's modules that use httpx
call it before they import httpx.

A leaf of the contract: it imports nothing from Corvid.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
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
    def __init__(self, unused: Mapping[str, str]) -> None:
        self.unused = unused

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        for package, why in self.unused.items():
            if fullname == package or fullname.startswith(package + "."):
                raise ImportError(f"not imported: used only for {why}")
        return None


@contextlib.contextmanager
def without(unused: Mapping[str, str]) -> Iterator[None]:
    """While inside, importing one of ``unused`` (package: what it is for) fails as if it were
    not installed; one already loaded is paid for and left alone."""
    finder = _NotUsed({p: why for p, why in unused.items() if p not in sys.modules})
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def import_httpx() -> ModuleType:
    """httpx, imported (if it is not yet) without its command-line client."""
    if "httpx" in sys.modules:
        return sys.modules["httpx"]
    with without(HTTPX_CLI):
        return importlib.import_module("httpx")
