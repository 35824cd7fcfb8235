"""The shape of the code, as the manual's Architecture page draws it: who may import whom, no
import circles, and modules and functions small enough to read."""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gateway", "channels", "agent")
# The contract: leaf modules every package may import.
CONTRACT = frozenset(
    {
        "gateway.contract.events",
        "gateway.contract.errors",
        "gateway.infra.times",
        "gateway.contract.ports",
        "gateway.infra.atomic",
        "gateway.contract.commands",
        "gateway.infra.tls",
        "gateway.infra.tasks",
        "gateway.infra.wal",
    }
)
# Below the contract: how Corvid's frozen dataclasses are made. Every module, the contract's
# too, may use it; it imports nothing of ours.
BASE = frozenset({"gateway.contract.records"})
# Small helpers every layer of the gateway uses: they import only the contract.
HELPERS = frozenset({"gateway.statefiles", "gateway.logcontext", "gateway.chat_names"})
# The composition root and what it builds from the configuration.
WIRING = frozenset(
    {
        "gateway.app",
        "gateway.running",
        "gateway.job_setup",
        "gateway.channel_setup",
        "gateway.tool_setup",
        "gateway.web_setup",
    }
)
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# A longer function says why in a comment on the line above its ``def``.
LONG_MARKER = "# long:"
# A module says what it is for in one line; a port (it defines a Protocol or an ABC that other
# parts implement) may say a little more.
PORT_DOCSTRING_LINES = 8
# A measured time or size in a comment goes stale; the bench and its history keep them.
TIMING_FIGURE = re.compile(r"\d(?:[\d.,]*\d)?\s?(?:ms|µs|us|ns|MiB|KiB|GiB)\b")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()
# Infrastructure (files written whole, tasks settled, SQLite checkpoints, TLS): leaves too.
INFRA = frozenset(name for name in MODULES if name.startswith("gateway.infra"))


def _ours(name: str) -> str | None:
    """The module of ours that an import names (``gateway.contract.events.SessionKey`` → its
    module)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


# Each module read and parsed once for all the checks below.
@functools.cache
def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(_source(path))


def _imports(path: Path, *, top_level_only: bool) -> Iterator[str]:
    tree = _tree(path)
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if top_level_only and isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks count
            stack.extend(node.body)
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            ours = _ours(name)
            if ours is not None:
                yield ours


@functools.cache
def _graph(top_level_only: bool) -> dict[str, set[str]]:
    return {
        name: set(_imports(path, top_level_only=top_level_only)) - {name}
        for name, path in MODULES.items()
    }


def test_the_tree_was_found():
    assert {"gateway.contract.events", "gateway.app", "agent.loop", "channels.base"} <= set(MODULES)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return circles


def test_no_import_circles_at_module_level():
    assert _circles(_graph(top_level_only=True)) == []


def test_no_import_circles_closed_by_imports_inside_functions():
    # A lazy import hides a circle from Python, not from the reader.
    assert _circles(_graph(top_level_only=False)) == []


def test_the_circle_finder_finds_circles():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _allowed(module: str, target: str) -> bool:
    if module in CONTRACT or module in INFRA:
        return False  # leaves import nothing of ours
    if target in INFRA:
        return True
    if module in HELPERS:
        return target in CONTRACT  # small helpers every layer uses know no layer
    if _within(target, "gateway.ops"):
        return _within(module, "gateway.ops")  # the CLI front: nothing below it imports it
    if _within(module, "gateway.web") and target in WIRING:
        return False  # the pages get what they need through their Backend
    if _within(module, "gateway.scheduling") and _within(target, "gateway.runtime"):
        return False  # jobs run against the small JobHost protocol, not the gateway
    top, target_top = module.split(".")[0], target.split(".")[0]
    if top in ("agent", "channels"):
        return target_top == top or target in CONTRACT
    if module.startswith(("gateway.runtime", "gateway.scheduling")):
        # The runtime and the schedule never reach into operations, the services the app
        # starts, or the composition root.
        return target not in WIRING and not target.startswith(
            ("gateway.ops", "gateway.services", "gateway.app")
        )
    return True


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_import_only_what_the_layering_allows(package):
    # Imports inside functions count too: a lazy import is still a dependency.
    graph = _graph(top_level_only=False)
    wrong = sorted(
        f"{module} → {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == package
        for target in targets
        if not _allowed(module, target)
    )
    assert wrong == []


def test_the_layering_rule_itself_refuses_the_edges_it_must():
    assert not _allowed("agent.loop", "channels.base")
    assert not _allowed("channels.telegram.channel", "agent.loop")
    assert not _allowed("agent.sessions.compaction", "gateway.config.loader")
    assert not _allowed("gateway.contract.events", "gateway.contract.errors")
    assert not _allowed("gateway.infra.atomic", "gateway.contract.events")
    assert _allowed("agent.memory.index", "gateway.infra.atomic")
    assert not _allowed("gateway.runtime.gateway", "gateway.services.logs")
    assert not _allowed("gateway.runtime.gateway", "gateway.ops.cli")
    assert not _allowed("gateway.web.admin", "gateway.ops.commands")
    assert not _allowed("gateway.app", "gateway.ops")
    assert _allowed("gateway.ops.cli", "gateway.ops.commands")
    assert not _allowed("gateway.web.chat", "gateway.channel_setup")
    assert not _allowed("gateway.web.server", "gateway.app")
    assert not _allowed("gateway.web.server", "gateway.running")
    assert not _allowed("gateway.runtime.gateway", "gateway.running")
    assert not _allowed("gateway.scheduling.runner", "gateway.job_setup")
    assert not _allowed("gateway.scheduling.heartbeat", "gateway.runtime.gateway")
    assert not _allowed("gateway.statefiles", "channels.pairing")
    assert not _allowed("gateway.logcontext", "channels.base")
    assert _allowed("gateway.web_setup", "gateway.web.backend")
    assert _allowed("gateway.ops.commands", "gateway.services.reload")
    assert _allowed("agent.loop", "gateway.contract.events") and _allowed(
        "gateway.app", "agent.loop"
    )


def test_modules_stay_readable():
    long = {
        name: n
        for name, path in MODULES.items()
        if (n := _source(path).count("\n")) > MAX_MODULE_LINES
    }
    assert long == {}


def test_functions_stay_short_or_say_why():
    long = []
    for name, path in MODULES.items():
        lines = _source(path).splitlines()
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            above = lines[first - 2].strip() if first >= 2 else ""
            if length > MAX_FUNCTION_LINES and not above.startswith(LONG_MARKER):
                long.append(f"{name}.{node.name}: {length} lines")
    assert long == []


def test_every_package_is_in_the_wheel():
    """pyproject.toml names the packages a wheel (Docker, `pip install .`) carries; an editable
    install finds any folder, so a package missing from the list only fails once installed."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("agent", "channels", "gateway")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found - listed == set()


def test_every_file_a_package_reads_is_in_the_wheel():
    """A file beside the code (a page's stylesheet, its icon, the config template) is carried
    by a wheel only when pyproject.toml's package-data names it; an editable install reads it
    from the checkout, so one left out is missing only once installed (the control page's icon
    answered 404)."""
    import fnmatch
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {ROOT.joinpath(*name.split(".")): name for name in setuptools["packages"]}
    left_out = []
    for top in ("agent", "channels", "gateway", "workspace_template"):
        for path in (ROOT / top).rglob("*"):
            if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            # The package it belongs to: the nearest listed folder above it.
            owner = next(f for f in path.parents if f in folders)
            rel = path.relative_to(owner).as_posix()
            globs = setuptools["package-data"].get(folders[owner], [])
            if not any(fnmatch.fnmatch(rel, g) for g in globs):
                left_out.append(f"{folders[owner]}: {rel}")
    assert left_out == []


def _is_port(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                base = base.value if isinstance(base, ast.Subscript) else base  # Protocol[T]
                name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                if name in ("Protocol", "ABC"):
                    return True
    return False


def _docstring_problem(source: str, tree: ast.Module | None = None) -> str | None:
    tree = tree or ast.parse(source)
    first = tree.body[0] if tree.body else None
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return "no docstring"
    lines = (first.end_lineno or first.lineno) - first.lineno + 1
    most = PORT_DOCSTRING_LINES if _is_port(tree) else 1
    return f"a docstring of {lines} lines (at most {most})" if lines > most else None


def test_module_docstrings_are_one_line_except_ports():
    wrong = [
        f"{name}: {problem}"
        for name, path in MODULES.items()
        if (problem := _docstring_problem(_source(path), _tree(path)))
    ]
    assert wrong == []


def test_the_docstring_rule_itself():
    assert _docstring_problem('"""One line."""\nx = 1\n') is None
    assert _docstring_problem('"""Two\nlines."""\n') == "a docstring of 2 lines (at most 1)"
    assert _docstring_problem("x = 1\n") == "no docstring"
    port = '"""A port,\nsaid in\nthree lines."""\nclass P(Protocol):\n    pass\n'
    assert _docstring_problem(port) is None
    generic = '"""A port,\nin two."""\nclass P(abc.ABC, Generic[T]):\n    pass\n'
    assert _docstring_problem(generic) is None
    assert _docstring_problem('"""A port,\nin two."""\nclass P(Protocol[T]): ...\n') is None
    long_port = '"""' + "line\n" * PORT_DOCSTRING_LINES + '"""\nclass P(Protocol): ...\n'
    assert _docstring_problem(long_port) is not None


def _timing_figures(source: str, tree: ast.Module | None = None) -> list[str]:
    """Measured times and sizes in the comments and docstrings of ``source``."""
    if not TIMING_FIGURE.search(source):  # nowhere in the text: no tokenizing needed
        return []
    found = [
        tok.string
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT and TIMING_FIGURE.search(tok.string)
    ]
    for node in ast.walk(tree or ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc and TIMING_FIGURE.search(doc):
                found.append(doc)
    return found


def test_no_timing_figures_in_comments():
    found = {
        name: figures
        for name, path in MODULES.items()
        if (figures := _timing_figures(_source(path), _tree(path)))
    }
    assert found == {}


def test_the_timing_figure_finder_finds_them():
    assert _timing_figures("x = 1  # about 50 µs each\n") == ["# about 50 µs each"]
    assert _timing_figures('def f():\n    """Took 1.4–1.6 ms."""\n') != []
    assert _timing_figures('"""SQLite\'s default cache (2 MiB)."""\n') != []
    assert _timing_figures("LIMIT = 32  # MB: the API's limit on a request\n") == []
    assert _timing_figures('x = "12 ms"  # a string, not a comment\n') == []
