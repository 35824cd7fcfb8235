"""How many small, plausible bugs the test suite catches, in the modules that keep Corvid's
promises: ``python bench/mutation.py``.

Each mutant is one change to one module (a comparison turned around, ``and`` for ``or``, a
``not`` dropped, a constant changed, a ``raise`` or a call left out, a value returned as
None). The whole suite runs once under ``bench/linetrace.py``, a line tracer limited to these
modules, to learn which tests run which lines; then, for each mutant, the tests that run the
changed lines run against a copy of the project with the change in it. A failing or hanging run
kills the mutant, a green one lets it survive. Prints, per module, the share killed and every
survivor with its line, so each can be judged: a real gap in the tests, or a change that does
not alter behaviour (an equivalent mutant).

Run on demand, not in CI: a full run takes tens of minutes on two cores. ``--module`` runs one
module, ``--limit N`` a sample of N mutants per module, ``--jobs`` sets the parallel runs.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The modules that keep the promises about privacy, scheduling, the journal and access.
TARGETS = (
    "agent/workspace/audience.py",
    "channels/access.py",
    "channels/pairing.py",
    "gateway/runtime/journal.py",
    "gateway/scheduling/ledger.py",
    "gateway/scheduling/scheduler.py",
)

TARGET_KILL_SHARE = 0.90

_SWAPS: dict[type, type] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt,
    ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.And: ast.Or, ast.Or: ast.And,
    ast.Add: ast.Sub, ast.Sub: ast.Add,
}  # fmt: skip
_SYMBOL = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.And: "and",
    ast.Or: "or", ast.Add: "+", ast.Sub: "-",
}  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    module: str
    index: int  # which mutation point, in the order ``_points`` finds them
    line: int
    what: str
    lines: tuple[int, int] = (0, 0)  # the source lines whose running means the change runs
    on_import: bool = False  # module or class level: it runs when the module is imported


def _quiet(node: ast.AST) -> bool:
    """Calls whose removal or change no test should notice: logging."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        return isinstance(owner, ast.Name) and owner.id in ("log", "logging", "logger")
    return False


def _skipped(tree: ast.Module) -> set[int]:
    """Nodes not to mutate: docstrings, annotations, logging calls, ``TYPE_CHECKING`` blocks."""
    skip: set[int] = set()

    def drop(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            drop(first)  # a docstring
        if isinstance(node, ast.AnnAssign | ast.arg):
            drop(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            drop(node.returns)
            for decorator in node.decorator_list:
                drop(decorator)
        elif isinstance(node, ast.ClassDef):
            for decorator in node.decorator_list:  # @dataclass(frozen=True) and the like
                drop(decorator)
        elif (
            (isinstance(node, ast.Expr) and _quiet(node.value))
            or _quiet(node)
            or (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
        ):
            drop(node)
    return skip


def _points(tree: ast.Module) -> Iterator[tuple[ast.AST, str, int]]:
    """Every (node, mutation, variant) in a fixed order."""
    skip = _skipped(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _SWAPS:
                    yield node, "compare", i
        elif isinstance(node, ast.BoolOp | ast.BinOp) and type(node.op) in _SWAPS:
            yield node, "operator", 0
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "drop-not", 0
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield node, "flip", 0
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield node, "plus-one", 0
        elif isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                yield node, "return-none", 0
        elif isinstance(node, ast.If | ast.While) and not isinstance(
            node.test, ast.Compare | ast.BoolOp | ast.UnaryOp
        ):
            yield node, "negate", 0
        elif isinstance(node, ast.Raise) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Call | ast.Await)
        ):
            yield node, "remove", 0


def _apply(node: ast.AST, kind: str, variant: int) -> str:
    """Change ``node`` in place; describe the change."""
    if kind == "compare":
        assert isinstance(node, ast.Compare)
        old = type(node.ops[variant])
        node.ops[variant] = _SWAPS[old]()
        return f"`{_SYMBOL[old]}` → `{_SYMBOL[_SWAPS[old]]}`"
    if kind == "operator":
        assert isinstance(node, ast.BoolOp | ast.BinOp)
        old = type(node.op)
        node.op = _SWAPS[old]()
        return f"`{_SYMBOL[old]}` → `{_SYMBOL[_SWAPS[old]]}`"
    if kind == "drop-not":
        assert isinstance(node, ast.UnaryOp)
        text = ast.unparse(node)
        node.op = ast.UAdd()  # rewritten to the bare operand below
        return f"`{text}` → without `not`"
    if kind == "flip":
        assert isinstance(node, ast.Constant)
        node.value = not node.value
        return f"`{not node.value}` → `{node.value}`"
    if kind == "plus-one":
        assert isinstance(node, ast.Constant)
        node.value = int(node.value) + 1
        return f"`{node.value - 1}` → `{node.value}`"
    if kind == "return-none":
        assert isinstance(node, ast.Return)
        text = ast.unparse(node)
        node.value = ast.Constant(None)
        return f"`{text[:60]}` → `return None`"
    if kind == "negate":
        assert isinstance(node, ast.If | ast.While)
        text = ast.unparse(node.test)
        node.test = ast.UnaryOp(ast.Not(), node.test)
        return f"`{text[:60]}` → `not ({text[:60]})`"
    assert kind == "remove"
    text = ast.unparse(node)
    return f"`{text[:60]}` removed"


class _Unplus(ast.NodeTransformer):
    """``+x`` stood in for a dropped ``not``; make it ``x`` again."""

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        return node.operand if isinstance(node.op, ast.UAdd) else node


class _Remove(ast.NodeTransformer):
    def __init__(self, target: ast.AST) -> None:
        self.target = target

    def visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return ast.Pass()
        return super().visit(node)


def _statements(tree: ast.Module) -> tuple[dict[int, ast.stmt], set[int]]:
    """Each node's innermost enclosing statement, and the nodes that run on import (outside
    any function)."""
    owner: dict[int, ast.stmt] = {}
    on_import: set[int] = set()

    def visit(node: ast.AST, stmt: ast.stmt | None, in_function: bool) -> None:
        if isinstance(node, ast.stmt):
            stmt = node
        if stmt is not None:
            owner[id(node)] = stmt
        if not in_function:
            on_import.add(id(node))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not in_function:
            # defaults, decorators and annotations run on import; only the body waits
            body = {id(s) for s in node.body}
            for child in ast.iter_child_nodes(node):
                visit(child, stmt, id(child) in body)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, stmt, in_function)

    visit(tree, None, False)
    return owner, on_import


def mutants(module: str) -> list[Mutant]:
    tree = ast.parse((ROOT / module).read_text())
    owner, on_import = _statements(tree)
    out = []
    for index, (node, kind, variant) in enumerate(_points(tree)):
        what = _apply(copy.deepcopy(node), kind, variant)
        line = getattr(node, "lineno", 0)
        stmt = owner.get(id(node))
        first = min(line, stmt.lineno) if stmt is not None else line
        last = getattr(node, "end_lineno", None) or line
        out.append(Mutant(module, index, line, what, (first, last), id(node) in on_import))
    return out


def mutated_source(mutant: Mutant, source: str | None = None) -> str:
    """The module's source with the change made (``source``: the text the mutants were found
    in, when the working copy may have changed since)."""
    tree = ast.parse(source if source is not None else (ROOT / mutant.module).read_text())
    node, kind, variant = list(_points(tree))[mutant.index]
    _apply(node, kind, variant)
    if kind == "remove":
        tree = _Remove(node).visit(tree)
    tree = _Unplus().visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


def _copy_project(into: Path) -> Path:
    ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".hypothesis", "*.egg-info")
    target = into / "project"
    shutil.copytree(ROOT, target, ignore=ignore)
    return target


def _pytest(project: Path, args: list[str], timeout: float, **env: str) -> str:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    path = os.pathsep.join([str(project), str(project / "bench")])
    environ = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1", **env}
    try:
        done = subprocess.run(cmd, cwd=project, env=environ, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if done.returncode == 0 else "killed"


def trace(project: Path, modules: list[str]) -> dict[str, set[str]]:
    """Run the whole suite once, recording which tests run which lines of ``modules``."""
    out = project / "trace.json"
    result = _pytest(
        project,
        ["-p", "linetrace", "tests"],
        3600,
        CORVID_TRACE_FILES=os.pathsep.join(modules),
        CORVID_TRACE_OUT=str(out),
    )
    if result != "survived":
        raise SystemExit("the test suite fails without any mutation; fix that first")
    return {test: set(lines) for test, lines in json.loads(out.read_text()).items()}


def covering(mutant: Mutant, traced: dict[str, set[str]]) -> list[str]:
    """The tests that run the mutated lines (in suite order); for a change that runs on
    import (a constant, a default), every test that runs any of the module."""
    if mutant.on_import:
        prefix = mutant.module + ":"
        return [t for t, lines in traced.items() if any(x.startswith(prefix) for x in lines)]
    first, last = mutant.lines
    wanted = {f"{mutant.module}:{n}" for n in range(first, last + 1)}
    return [test for test, lines in traced.items() if lines & wanted]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", choices=sorted(TARGETS), action="append")
    parser.add_argument("--limit", type=int, help="a random sample of N mutants per module")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    modules = args.module or sorted(TARGETS)
    todo: list[Mutant] = []
    for module in modules:
        found = mutants(module)
        if args.limit is not None and len(found) > args.limit:
            sample = random.Random(args.seed).sample(found, args.limit)
            found = sorted(sample, key=lambda m: m.index)
        todo.extend(found)
    with tempfile.TemporaryDirectory(prefix="corvid-mutation-") as tmp:
        projects = [_copy_project(Path(tmp) / f"w{i}") for i in range(args.jobs)]
        began = time.monotonic()
        traced = trace(projects[0], modules)
        took = time.monotonic() - began
        print(f"traced the suite in {took:.0f} s; {len(todo)} mutants, {args.jobs} at a time")
        free = list(projects)

        def run(mutant: Mutant) -> tuple[Mutant, str]:
            tests = covering(mutant, traced)
            if not tests:
                return mutant, "not run by any test"
            project = free.pop()
            path = project / mutant.module
            original = path.read_text()
            try:
                path.write_text(mutated_source(mutant, original))
                return mutant, _pytest(project, ["-x", *tests], 3 * took + 60)
            finally:
                path.write_text(original)
                free.append(project)

        results = []
        with ThreadPoolExecutor(args.jobs) as pool:
            for n, (mutant, result) in enumerate(pool.map(run, todo), 1):
                results.append((mutant, result))
                if result not in ("killed", "timeout"):
                    where = f"{mutant.module}:{mutant.line}"
                    print(f"  [{n}/{len(todo)}] {result}: {where}", flush=True)
    return _report(modules, results)


def _report(modules: list[str], results: list[tuple[Mutant, str]]) -> int:
    total_killed = total = 0
    print("\n| module | mutants | killed | share |\n|---|---|---|---|")
    for module in modules:
        mine = [r for m, r in results if m.module == module]
        killed = sum(r in ("killed", "timeout") for r in mine)
        total_killed += killed
        total += len(mine)
        share = killed / len(mine) if mine else 1.0
        print(f"| `{module}` | {len(mine)} | {killed} | {share:.0%} |")
    share = total_killed / total if total else 1.0
    print(f"| all | {total} | {total_killed} | {share:.0%} |")
    survivors = [(m, r) for m, r in results if r not in ("killed", "timeout")]
    if survivors:
        print("\nSurvivors:")
        for m, r in survivors:
            note = "" if r == "survived" else f" ({r})"
            print(f"- {m.module}:{m.line}: {m.what}{note}")
    verdict = "met" if share >= TARGET_KILL_SHARE else "NOT met"
    print(f"\ntarget: at least {TARGET_KILL_SHARE:.0%} killed: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
