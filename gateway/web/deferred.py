"""The control page's server, imported without aiohttp's HTTP client.

``from aiohttp import web`` runs ``aiohttp/__init__`` first, and that imports aiohttp's HTTP
client with it: the client session, its connector (which makes two TLS contexts as it is
imported, loading the system's certificate authorities into each), the cookie jar, the
resolvers and the tracing. The page serves HTTP and never makes a request. With aiohttp 3.14
that is 17 modules, 3.7 MiB of memory and 150 ms of CPU of what the page's import costs a
gateway (9.8 MiB and 270 ms in all).

``import_server`` imports the page with aiohttp's package in place but its ``__init__`` not yet
run (``defer_init``). aiohttp's web server imports its own modules and the ones it shares with
the client (``hdrs``, ``helpers``, ``http``...) by their names, and of what the ``__init__``
binds it takes only ``__version__``, a constant, which is read from the ``__init__``'s source.
The first time anyone asks ``aiohttp`` for another name its ``__init__`` binds
(``aiohttp.ClientSession``, ``from aiohttp import TCPConnector``: Discord and ``web_fetch`` do),
the ``__init__`` runs, once, and from then on the package is what it always is. A submodule
asked for by name is imported, as ``from aiohttp import web`` expects. Where aiohttp is loaded
already (Discord is on), it is used as it is.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import threading
from importlib.machinery import PathFinder
from types import ModuleType
from typing import Any

from gateway.infra.imports import without

_lock = threading.RLock()  # one ``__init__`` run at a time, and the package put in place once


# aiohttp's web server keeps its signals (on_startup, on_shutdown, ...) in aiosignal's lists,
# which are frozenlist's FrozenList. frozenlist's compiled FrozenList maps 1 MiB of the page's
# memory for those four lists; its own pure-Python one, which it uses when the compiled one
# cannot be imported, does the same for a list that is read at start and stop.
PAGE_UNUSED = {"frozenlist._frozenlist": "the control page's lists of signal handlers"}


def import_server() -> ModuleType:
    """``gateway.web.server``, with aiohttp's ``__init__`` deferred if aiohttp is not loaded
    and frozenlist's pure-Python FrozenList if frozenlist is not."""
    defer_init("aiohttp")
    with without(PAGE_UNUSED):
        return importlib.import_module("gateway.web.server")


def defer_init(name: str) -> ModuleType | None:
    """Put the package ``name`` in ``sys.modules`` with its ``__init__`` left to run when a
    name it binds is first asked for. None when the package is loaded already, or is not an
    ordinary package with an ``__init__`` (then it imports as it comes)."""
    with _lock:
        if name in sys.modules:
            return None
        spec = importlib.util.find_spec(name)
        if (
            spec is None
            or spec.loader is None
            or spec.origin is None
            or not spec.origin.endswith("__init__.py")
            or spec.submodule_search_locations is None
        ):
            return None
        package = importlib.util.module_from_spec(spec)
        package.__dict__.update(_constants(spec.origin))
        package.__dict__["__getattr__"] = _on_first_name(package)
        # setdefault: a plain import begun in another thread meanwhile is left to finish.
        return package if sys.modules.setdefault(name, package) is package else None


def _on_first_name(package: ModuleType) -> Any:
    """The package's ``__getattr__`` until its ``__init__`` has run (PEP 562)."""
    name = package.__name__
    ran = False

    def __getattr__(attr: str) -> Any:
        nonlocal ran
        if attr.startswith("__") and attr != "__all__":
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if not ran and PathFinder.find_spec(f"{name}.{attr}", package.__path__) is not None:
            return importlib.import_module(f"{name}.{attr}")
        with _lock:
            if not ran:
                ran = True
                spec = package.__spec__
                assert spec is not None and spec.loader is not None
                try:
                    spec.loader.exec_module(package)
                except BaseException:
                    # As a failed import leaves it: gone, so that the next import starts over.
                    if sys.modules.get(name) is package:
                        del sys.modules[name]
                    raise
        if attr in package.__dict__:
            return package.__dict__[attr]
        own = package.__dict__.get("__getattr__")  # the ``__init__``'s own, if it has one
        if own is not None and own is not __getattr__:
            return own(attr)
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    return __getattr__


def _constants(init: str) -> dict[str, object]:
    """The ``__init__``'s top-level assignments of a constant to a name (``__version__``)."""
    try:
        with open(init, encoding="utf-8") as file:
            tree = ast.parse(file.read(), init)
    except (OSError, SyntaxError, ValueError):
        return {}
    return {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }
