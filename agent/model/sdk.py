"""The anthropic SDK, imported without the parts Corvid never uses, its types and its tracing
loaded as they are used.

``import anthropic`` loads, beside the client of the Anthropic API that Corvid uses, the SDK's
clients for Amazon Bedrock, Google Vertex AI, Microsoft Foundry, AWS and Google Cloud, and
through them every resource class of the API (``anthropic.resources``): with anthropic 2.14,
645 of the 3,154 modules the import loads, 11.5 MiB of memory and 150 ms of CPU, on the way to
a start's first reply. Corvid sends its calls with the client's own ``post``
(``agent/model/llm.py``) and needs none of them. Nor does it use the SDK's tool runner
(``anthropic.lib.tools``, and ``docstring_parser`` under it), its helpers for streamed messages
(``anthropic.lib.streaming``: it reads the stream's events itself, ``agent/model/answer.py``)
or its fallback for beta refusals (``anthropic.lib.middleware``); the last two import some 400
modules of beta types.

``load`` imports the SDK with those eight packages stood in for by empty modules. Where the
SDK's package takes a name from one of them, it gets a class that says, when used, that it was
not loaded. Once the SDK is loaded the stand-ins leave ``sys.modules``, so an import of
``anthropic.lib.vertex`` afterwards, by anyone, loads the real package. Should a version of the
SDK not import with the stand-ins, it is imported again whole, as it comes.

The SDK also imports, if it can, its transport over aiohttp (``anthropic._vendor.httpx_aiohttp``,
for ``DefaultAioHttpClient``), and through it aiohttp: with anthropic 2.14, 94 modules, 10 MiB
and 200 ms of CPU. Corvid's client is the SDK's default over httpx2, and aiohttp is otherwise
loaded only for the control page, Discord and web_fetch. ``load`` answers that import as if the
SDK's ``aiohttp`` extra were not installed, which the SDK expects and handles: its
``DefaultAioHttpClient`` then says, when made, that the extra is missing. Nothing of it stays
behind: imported after the load, by anyone, the transport is the real one.

The SDK's types are most of what is left: its packages under ``anthropic.types`` re-export
2,000 modules of pydantic and TypedDict classes, two thirds of them for beta APIs, and the
SDK's own modules import a few names from a package, which runs the package's ``__init__``
and with it every module the package has. A package whose ``__init__`` is nothing but such
re-exports (``from .module import Name``) is made a lazy one (PEP 562): a name asked of it
imports the one module that defines it, as its ``__init__`` would have, and keeps it.

The client imports two names of the SDK's OpenTelemetry tracing (``anthropic.lib._tracing``):
a class it makes with every client, and a function it calls only to end a traced call's span.
Corvid's calls are never traced (the SDK traces its own methods), yet the tracing's modules
import 200 more of beta types. That package is lazy too, and each function it gives is one that
imports its module when first called.

The client's error handling imports ``anthropic._error_classes``, which imports an exception
class for each of the API's finer error codes (``error.details.error_code``), most of them
for beta and admin APIs: with anthropic 2.14, 237 modules and 100-160 ms of CPU, for a function
(``make_status_error``) called only when the API refuses a call. While the SDK loads, that
module is a stand-in whose function imports the real module when first called, and leaves
``sys.modules`` with the other stand-ins: the first refusal pays for the import, and gets the
class the SDK as it comes would give.

With anthropic 2.14, all of this loads 95 of the SDK's modules (3,154 as it comes), in 0.45-0.5 s
of CPU on a machine where the SDK as it comes takes 2.9 s (0.55-0.65 s with the error classes
loaded, 0.8-1.3 s with only the types lazy and the platforms' clients, the tool runner and
aiohttp left out; 11 MiB more).
"""

from __future__ import annotations

import ast
import functools
import importlib
import keyword
import logging
import re
import sys
import threading
from collections.abc import Callable, Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
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
    "anthropic.lib.streaming": "the SDK's helpers for streamed messages",
    "anthropic.lib.middleware": "the SDK's fallback for beta refusals",
}

# What ``anthropic`` imports only if it can: taken as not installed while it loads.
ABSENT = {
    "anthropic._vendor.httpx_aiohttp": "the SDK's transport over aiohttp",
}

# Modules the SDK's client imports only for a function it calls when the API refuses a call,
# with the names it takes from them: stood in for while the SDK loads by modules whose functions
# import the real module when first called.
ON_REFUSAL = {"anthropic._error_classes": ("make_status_error",)}

# Packages whose names are loaded as they are used: the types, and the SDK's tracing, whose
# functions (called only with OpenTelemetry set up) load their module when first called.
LAZY = ("anthropic.types", "anthropic.lib._tracing")
CALLED_LATE = {"anthropic.lib._tracing"}

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


class _OnRefusal(ModuleType):
    """A module of functions that import the real module when first called; any other name
    asked of it is missing, so an SDK that wants more of it is imported whole."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        for function in ON_REFUSAL[name]:
            setattr(self, function, _called_late(name, function))


class _StandIns(MetaPathFinder, Loader):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        return (
            ModuleSpec(fullname, self) if fullname in LEFT_OUT or fullname in ON_REFUSAL else None
        )

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return _OnRefusal(spec.name) if spec.name in ON_REFUSAL else _StandIn(spec.name)

    def exec_module(self, module: ModuleType) -> None:
        pass


class _Absent(MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname in ABSENT:
            raise ModuleNotFoundError(
                f"{fullname} ({ABSENT[fullname]}) is not loaded with the SDK", name=fullname
            )
        return None


class _LazyPackages(MetaPathFinder, Loader):
    """Packages under ``LAZY`` whose ``__init__`` only re-exports, made lazy."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not any(fullname == lazy or fullname.startswith(lazy + ".") for lazy in LAZY):
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.origin is None or spec.submodule_search_locations is None:
            return None  # not a package: imported as it comes
        names = _reexports(spec.origin)
        if names is None:
            return None
        spec.loader, spec.loader_state = self, names
        return spec

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the usual module, its __path__ and __file__ the package's own

    def exec_module(self, module: ModuleType) -> None:
        spec = module.__spec__
        assert spec is not None
        names: dict[str, tuple[str, str]] = spec.loader_state
        modules = {sub for sub, _ in names.values()}
        package = module.__name__
        folder = module.__path__[0]  # a package: find_spec took only those
        late = package in CALLED_LATE

        def __getattr__(attr: str) -> Any:
            value: Any
            if attr in names:
                sub, original = names[attr]
                if late and original in _functions(f"{folder}/{sub}.py"):
                    value = _called_late(f"{package}.{sub}", original)
                else:
                    value = getattr(importlib.import_module(f"{package}.{sub}"), original)
            elif attr in modules:  # bound by the __init__'s imports in the package as it comes
                value = importlib.import_module(f"{package}.{attr}")
            else:
                raise AttributeError(f"module {package!r} has no attribute {attr!r}")
            setattr(module, attr, value)
            return value

        module.__dict__["__getattr__"] = __getattr__
        module.__dict__["__all__"] = sorted(names)


# Stays on the import path once the SDK has loaded in its lighter form: a types package first
# imported later is a lazy one too. Were it imported whole, its ``__init__`` would import its
# modules in its own order while a lazy package is in the middle of importing one of them, and
# the SDK's types import each other in cycles that only that order resolves.
_LAZY = _LazyPackages()


def _parsed(path: str) -> ast.Module | None:
    """A module's source as a syntax tree; None if it cannot be read."""
    try:
        with open(path, encoding="utf-8") as file:
            return ast.parse(file.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None


@functools.cache
def _functions(path: str) -> frozenset[str]:
    """The functions a module's source defines at its top level (none if it cannot be read)."""
    tree = _parsed(path)
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    return frozenset(n.name for n in tree.body if isinstance(n, kinds)) if tree else frozenset()


def _called_late(module: str, name: str) -> Callable[..., Any]:
    """A function that imports ``module`` when it is first called, and calls its ``name``."""
    real: Callable[..., Any] | None = None

    def call(*args: Any, **kwargs: Any) -> Any:
        nonlocal real
        if real is None:
            real = getattr(importlib.import_module(module), name)
        return real(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = module
    return call


# What a package's ``__init__`` may hold besides re-exports, and a re-export itself, as the
# SDK writes them: ``from .module import Name as Name``, its names in parentheses when long.
_DOCSTRING = re.compile(r'\A(?:[ \t]*(?:#[^\n]*)?\n)*(?:"""[^\\]*?"""|\'\'\'[^\\]*?\'\'\')')
_COMMENT = re.compile(r"#[^\n]*")
_FUTURE = re.compile(r"\s*from[ \t]+__future__[ \t]+import[ \t]+[\w, \t]+\s*")
_REEXPORT = re.compile(
    r"^from[ \t]+\.(\w+)[ \t]+import[ \t]+(?:\(([^)]*)\)|([^\n(]*))", re.MULTILINE
)


def _reexports(init: str) -> dict[str, tuple[str, str]] | None:
    """What a package's ``__init__`` re-exports: each name with the module (of the package)
    and the name it comes from; None when the ``__init__`` does anything else. Read with
    string methods and regular expressions, not ``ast``: the SDK's types have ``__init__``
    files of 60 and 125 KB, which took ``ast.parse`` 23 ms of the SDK's load (now 7)."""
    try:
        with open(init, encoding="utf-8") as file:
            source = file.read()
    except (OSError, ValueError):
        return None
    source = _COMMENT.sub("", _DOCSTRING.sub("", source, count=1))
    names: dict[str, tuple[str, str]] = {}
    end = 0
    for found in _REEXPORT.finditer(source):
        if not _between_reexports(source[end : found.start()]):
            return None
        module, bracketed = found.group(1), found.group(2) is not None
        items = (found.group(2) if bracketed else found.group(3)).split(",")
        if bracketed and len(items) > 1 and not items[-1].strip():
            items.pop()  # the comma after the last name, in parentheses
        for item in items:
            words = item.split()
            if len(words) == 3 and words[1] == "as":
                name, alias = words[0], words[2]
            elif len(words) == 1:
                name = alias = words[0]
            else:
                return None  # nothing between two commas, or something else
            if not all(_identifier(word) for word in (module, name, alias)):
                return None  # a star, a keyword, or something else
            names[alias] = (module, name)
        end = found.end()
    return names if _between_reexports(source[end:]) else None


def _identifier(word: str) -> bool:
    return word.isidentifier() and word.isascii() and not keyword.iskeyword(word)


def _between_reexports(text: str) -> bool:
    return not text.strip() or _FUTURE.fullmatch(text) is not None


def load(name: str = "anthropic") -> ModuleType:
    """The SDK (``name``: another module, for tests), imported on the first call."""
    with _lock:
        if name in sys.modules:  # loaded, or being loaded by an import of its own
            return importlib.import_module(name)
        finders: list[MetaPathFinder] = [_StandIns(), _Absent()]
        if _LAZY not in sys.meta_path:
            finders.append(_LAZY)
        sys.meta_path[:0] = finders
        try:
            module = importlib.import_module(name)
            if _LAZY in finders:
                finders.remove(_LAZY)  # stays: see _LAZY
            return module
        except Exception as exc:
            if isinstance(exc, ImportError) and not _modules_of(name):
                raise  # not there at all: the caller says so
            log.info(
                "the anthropic SDK did not import in its lighter form (%s); importing it whole", exc
            )
        finally:
            for finder in finders:
                sys.meta_path.remove(finder)
            _remove_stand_ins()
        _forget(name)
        return importlib.import_module(name)


def _modules_of(name: str) -> list[str]:
    """``name`` and its submodules, as far as they are in ``sys.modules``."""
    return [m for m in sys.modules if m == name or m.startswith(name + ".")]


def _remove_stand_ins() -> None:
    """Out of ``sys.modules`` and off their parent package: imported later, a platform's
    client is the real one, and so is the module a stand-in's function imports."""
    kinds = (_StandIn, _OnRefusal)
    for module in (*LEFT_OUT, *ON_REFUSAL):
        if isinstance(sys.modules.get(module), kinds):
            del sys.modules[module]
        parent, _, child = module.rpartition(".")
        if isinstance(getattr(sys.modules.get(parent), child, None), kinds):
            delattr(sys.modules[parent], child)


def _forget(name: str) -> None:
    """Whatever of ``name`` a failed import left, for a clean second one."""
    for module in _modules_of(name):
        del sys.modules[module]
