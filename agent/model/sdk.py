"""The anthropic SDK, imported without its clients for other clouds and its tool runner.

``import anthropic`` loads, beside the client of the Anthropic API that Corvid uses, the SDK's
clients for Amazon Bedrock, Google Vertex AI, Microsoft Foundry, AWS and Google Cloud, and
through them every resource class of the API (``anthropic.resources``): with anthropic 2.14,
645 of the 3,154 modules the import loads, 11.5 MiB of memory and 150 ms of CPU, on the way to
a start's first reply. Corvid sends its calls with the client's own ``post``
(``agent/model/llm.py``) and needs none of them. Nor does it run tools with the SDK's tool
runner (``anthropic.lib.tools``, and ``docstring_parser`` under it: 0.6 MiB more).

``load`` imports the SDK with those six packages stood in for by empty modules. Where the
SDK's package takes a name from one of them, it gets a class that says, when used, that it was
not loaded. Once the SDK is loaded the stand-ins leave ``sys.modules``, so an import of
``anthropic.lib.vertex`` afterwards, by anyone, loads the real package. Should a version of the
SDK not import with the stand-ins, it is imported again whole, as it comes.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

# What ``anthropic/__init__.py`` imports and Corvid never uses.
LEFT_OUT = {
    "anthropic.lib.bedrock": "the Amazon Bedrock client",
    "anthropic.lib.vertex": "the Google Vertex AI client",
    "anthropic.lib.foundry": "the Microsoft Foundry client",
    "anthropic.lib.aws": "the AWS client",
    "anthropic.lib.google_cloud": "the Google Cloud client",
    "anthropic.lib.tools": "the SDK's tool runner",
}

_lock = threading.Lock()  # one import at a time: the start's thread and a turn may both ask


class _StandIn(ModuleType):
    """An empty module: ``from it import *`` takes nothing, a name taken from it is a class
    that cannot be used."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__all__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _not_loaded(name, self.__name__)


def _not_loaded(name: str, module: str) -> type:
    def refuse(*args: object, **kwargs: object) -> None:
        raise ImportError(
            f"anthropic's {name} ({LEFT_OUT[module]}) is not loaded: Corvid imports the SDK "
            "without the parts it never uses"
        )

    return type(name, (), {"__init__": refuse, "__module__": module})


class _StandIns(MetaPathFinder, Loader):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        return ModuleSpec(fullname, self) if fullname in LEFT_OUT else None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return _StandIn(spec.name)

    def exec_module(self, module: ModuleType) -> None:
        pass


def load(name: str = "anthropic") -> ModuleType:
    """The SDK (``name``: another module, for tests), imported on the first call."""
    with _lock:
        if name in sys.modules:  # loaded, or being loaded by an import of its own
            return importlib.import_module(name)
        finder = _StandIns()
        sys.meta_path.insert(0, finder)
        try:
            return importlib.import_module(name)
        except Exception as exc:
            if isinstance(exc, ImportError) and not _partly_loaded(name):
                raise  # not there at all: the caller says so
            log.info("the anthropic SDK did not import without its other clients (%s)", exc)
        finally:
            sys.meta_path.remove(finder)
            _remove_stand_ins()
        _forget(name)
        return importlib.import_module(name)


def _partly_loaded(name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in sys.modules)


def _remove_stand_ins() -> None:
    """Out of ``sys.modules`` and off their parent package: imported later, a platform's
    client is the real one."""
    for module in LEFT_OUT:
        if isinstance(sys.modules.get(module), _StandIn):
            del sys.modules[module]
        parent, _, child = module.rpartition(".")
        if isinstance(getattr(sys.modules.get(parent), child, None), _StandIn):
            delattr(sys.modules[parent], child)


def _forget(name: str) -> None:
    """Whatever of ``name`` a failed import left, for a clean second one."""
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]
