"""Libraries through their public doors: no module of gateway/, channels/ or agent/ changes the
import system, looks at frames, imports another package's private module or name, uses a
private name of an object that is not ours, or changes a library's module or class."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gateway", "channels", "agent")
# What of ``sys`` changes how everything imports, or looks at frames. ``sys.modules`` may be
# asked whether a module is loaded (``in``, ``.get``), nothing more.
SYS_FORBIDDEN = frozenset(
    {"modules", "meta_path", "path_hooks", "path_importer_cache", "settrace", "setprofile"}
)
# Builtins that read or set an attribute named by a string.
BY_NAME = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _private(name: str) -> bool:
    """A leading underscore, not a dunder (``__init__``, ``__future__``) nor ``_`` alone."""
    return name.startswith("_") and not name.startswith("__") and name != "_"


def _sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def defined_by_us(sources: dict[str, str]) -> frozenset[str]:
    """The private attribute names our own classes define: in a class body (methods, class
    attributes, fields) or set on ``self``/``cls``. Reading one of those elsewhere (another
    instance's ``_items`` in ``__eq__``) is reading our own."""
    names: set[str] = set()
    for source in sources.values():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        names.add(item.name)
                    elif isinstance(item, ast.Assign):
                        names.update(t.id for t in item.targets if isinstance(t, ast.Name))
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        names.add(item.target.id)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
    return frozenset(n for n in names if _private(n))


def _ours(module: str) -> bool:
    return module.split(".")[0] in PACKAGES


def _our_modules(tree: ast.Module) -> set[str]:
    """Names bound in the module to a module (or name) of ours by an import."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names if _ours(a.name))
        elif isinstance(node, ast.ImportFrom) and (node.level or _ours(node.module or "")):
            bound.update(a.asname or a.name for a in node.names)
    return bound


def _libraries(tree: ast.Module) -> set[str]:
    """Names bound in the module (at any depth) by an import of a module or name not ours."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update(
                (a.asname or a.name).split(".")[0] for a in node.names if not _ours(a.name)
            )
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            library = not _ours(node.module) and node.module != "__future__"
            bound.update(a.asname or a.name for a in node.names if library)
    return bound


def _root(node: ast.expr) -> str | None:
    """The name an attribute chain starts from (``discord`` of ``discord.http.Route.BASE``)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def patches(tree: ast.Module) -> Iterator[ast.AST]:
    """Each change to an attribute of a library's module or class: assigned, augmented,
    deleted, or set by name (``setattr``/``delattr``)."""
    libraries = _libraries(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
        ):
            if _root(node.args[0]) in libraries:
                yield node
            continue
        else:
            continue
        stack = list(targets)
        while stack:
            target = stack.pop()
            if isinstance(target, ast.Tuple | ast.List):  # unpacking: ``a, lib.X = ...``
                stack.extend(target.elts)
            elif isinstance(target, ast.Starred):
                stack.append(target.value)
            elif isinstance(target, ast.Attribute) and _root(target) in libraries:
                yield target


def violations(source: str, ours: frozenset[str]) -> Iterator[str]:
    """Each use of another package's insides in ``source``, as ``line: what``."""
    tree = ast.parse(source)
    our_modules = _our_modules(tree)
    asked = set(_loaded_asked(tree))
    for patch in patches(tree):
        yield f"{getattr(patch, 'lineno', '?')}: changes {ast.unparse(patch)}"

    def foreign(base: ast.expr, attr: str) -> bool:
        if not _private(attr) or attr in ours:
            return False
        return not (isinstance(base, ast.Name) and base.id in {"self", "cls", *our_modules})

    for node in ast.walk(tree):
        where = f"{getattr(node, 'lineno', '?')}: "
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _ours(alias.name) and any(map(_private, alias.name.split("."))):
                    yield where + f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if _ours(node.module):
                continue
            parts = node.module.split(".")
            names = [a.name for a in node.names]
            if any(map(_private, parts)) or any(map(_private, names)):
                yield where + f"from {node.module} import {', '.join(names)}"
            elif node.module == "sys" and SYS_FORBIDDEN & set(names):
                yield where + f"from sys import {', '.join(names)}"
        elif isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id == "sys" and node.attr in SYS_FORBIDDEN:
                if id(node) not in asked:
                    yield where + ast.unparse(node)
            elif foreign(base, node.attr):
                yield where + ast.unparse(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in BY_NAME
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and foreign(node.args[0], node.args[1].value)
        ):
            yield where + ast.unparse(node)


def _loaded_asked(tree: ast.Module) -> Iterator[int]:
    """The ``sys.modules`` nodes only asked whether a module is loaded: ``name in
    sys.modules`` or ``sys.modules.get(name)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and all(
            isinstance(op, ast.In | ast.NotIn) for op in node.ops
        ):
            yield from (id(c) for c in node.comparators)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
        ):
            yield id(node.func.value)


SOURCES = _sources()
OURS = defined_by_us(SOURCES)


def test_the_packages_were_read():
    assert {"gateway/app.py", "channels/telegram/transport.py", "agent/model/llm.py"} <= set(
        SOURCES
    )
    assert {"_client", "_items"} <= OURS  # attributes our classes set, read by our code


@pytest.mark.parametrize("package", PACKAGES)
def test_libraries_are_used_through_their_public_names_only(package):
    found = [
        f"{path}:{line}"
        for path, source in SOURCES.items()
        if path.startswith(package + "/")
        for line in violations(source, OURS)
    ]
    assert found == []


# What the rule must refuse: each one a way these packages once reached into a library.
PLANTED = [
    ("sys.modules['httpx'] = stand_in", "sys.modules"),
    ("del sys.modules['httpx']", "sys.modules"),
    ("sys.modules.setdefault('aiohttp', package)", "sys.modules"),
    ("loaded = list(sys.modules)", "sys.modules"),
    ("sys.meta_path.insert(0, finder)", "sys.meta_path"),
    ("from sys import modules", "from sys import modules"),
    ("caller = sys._getframe(1).f_globals", "sys._getframe"),
    ("from telegram._utils.defaultvalue import DefaultValue", "from telegram._utils"),
    ("from telegram.ext import _updater", "from telegram.ext import _updater"),
    ("import anthropic._error_classes", "import anthropic._error_classes"),
    ("error = client._make_status_error(message, body=body, response=response)", "_make_status"),
    ("sent = await bot._post('sendMessage', params)", "bot._post"),
    ("pool = client._transport._pool", "client._transport"),
    ("pool = getattr(client._transport, '_pool', None)", "'_pool'"),
    ("pool._network_backend = backend", "pool._network_backend"),
    ("waiting = getattr(self._reader, '_buffer', None)", "'_buffer'"),
    ("kind = argparse._SubParsersAction", "argparse._SubParsersAction"),
    # Library classes and modules changed in place (how Discord was once pointed elsewhere).
    ("import discord; discord.http.Route.BASE = base", "changes discord.http.Route.BASE"),
    (
        "import discord, yarl; discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(u)",
        "changes discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY",
    ),
    ("from discord import VoiceClient; VoiceClient.warn_nacl = False", "VoiceClient.warn_nacl"),
    ("httpx2.AsyncClient.send = send", "changes httpx2.AsyncClient.send"),
    ("NetworkError.__str__ = str", "changes NetworkError.__str__"),
    ("logging.raiseExceptions, n = False, 1", "changes logging.raiseExceptions"),
    ("time.monotonic: Any = clock", "changes time.monotonic"),
    ("httpx2.Limits.count += 1", "changes httpx2.Limits.count"),
    ("del httpx2.AsyncClient.send", "changes httpx2.AsyncClient.send"),
    ("setattr(httpx2.AsyncClient, 'send', send)", "setattr(httpx2.AsyncClient"),
]


@pytest.mark.parametrize(("line", "said"), PLANTED, ids=[p[1] for p in PLANTED])
def test_each_way_into_a_library_s_insides_is_refused_when_planted_back(line, said):
    """Planted in a real module (in a method), each line is found, and nothing else: the
    module as it is passes."""
    path = "channels/telegram/transport.py"
    source = SOURCES[path]
    assert list(violations(source, OURS)) == []
    anchor = "    async def initialize(self) -> None:\n"
    assert anchor in source
    planted = source.replace(anchor, f"    def planted(self) -> None:\n        {line}\n\n{anchor}")
    found = list(violations(planted, OURS))
    line_no = source[: source.index(anchor)].count("\n") + 2
    assert found and any(said in f for f in found), found
    assert all(f.startswith(f"{line_no}: ") for f in found), found


def test_our_objects_and_the_libraries_objects_may_be_given_attributes():
    """The rule is about a library's modules and classes: an object it made (a client, a
    logger) and our own modules are set through their public attributes."""
    source = (
        "import discord\n"
        "import logging\n"
        "from gateway import settings\n"
        "def make(hook):\n"
        "    client = discord.Client(intents=discord.Intents.none())\n"
        "    client.on_message = hook\n"
        "    logging.getLogger('discord').propagate = False\n"
        "    settings.LIMIT = 3\n"
    )
    assert list(violations(source, frozenset())) == []


def test_asking_whether_a_module_is_loaded_is_not_a_change():
    source = "import sys\nif 'numpy' in sys.modules or sys.modules.get('numpy'):\n    pass\n"
    assert list(violations(source, frozenset())) == []


def test_our_own_private_names_are_ours():
    source = (
        "from gateway.web import listener\n"
        "class History:\n"
        "    def __init__(self):\n"
        "        self._items = []\n"
        "    def __eq__(self, other):\n"
        "        return self._items == other._items\n"
        "listener._private_helper()\n"
    )
    assert list(violations(source, defined_by_us({"m.py": source}))) == []
