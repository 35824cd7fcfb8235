"""How many small, plausible bugs the test suite catches, in the modules that keep Corvid's
promises: ``python bench/mutation.py --module agent/web/fetch.py``.

Each mutant is one change to one module (a comparison turned around, ``and`` for ``or``, a
``not`` dropped, a constant changed, a ``raise`` or a call left out, a value returned as
None). Each module in ``TARGETS`` names the test files that reach it; they run once under
``bench/linetrace.py``, a line tracer limited to that module, to learn which tests run which
lines; then, for each mutant, the tests that run the changed lines run against a copy of the
project with the change in it. A failing or hanging run kills the mutant, a green one lets it
survive. Prints, per module, the share killed and every survivor with its line; a survivor
listed in ``EXPLAINED`` is shown with the reason it stays, and an equivalent one (it changes
no behaviour) is left out of the share.

Run on demand, not in CI, and one module at a time on a busy machine: ``--module`` (repeatable;
every module when none is given), ``--limit N`` for a sample of N mutants per module, ``--jobs``
for the parallel runs. ``--save FILE`` keeps each module's result in a JSON file as it ends and
``--summary FILE`` prints the table of what the file holds. ``--map`` traces the whole suite
once and prints, per module, the test files that run it: how to update ``TARGETS`` when code
moves. ``--again`` (with ``--save FILE``) runs only the mutants that survived the module's saved
run, against the tests written since, and counts what they catch in: tests are only ever added,
so a mutant caught stays caught (the module itself must not have changed).
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    """A module that keeps a promise, the test files (or folders) that reach it, and, for a
    module that does much else, the functions and classes that keep the promise (``only``)."""

    module: str
    tests: tuple[str, ...]
    only: tuple[str, ...] = ()


def _t(module: str, *tests: str, only: tuple[str, ...] = ()) -> Target:
    return Target(module, tests, only)


# When code moves, change the paths here. Each module's tests are listed likeliest to catch a
# bug first; ``--map`` prints every test file that runs a module's code, to add what is missing.
PRIVACY = ("tests/test_privacy.py", "tests/test_memory_e2e.py")
TELEGRAM = ("tests/channels/telegram/test_channel.py", "tests/channels/test_contract.py")
DISCORD = ("tests/channels/discord/test_channel.py", "tests/channels/test_contract.py")
TARGETS = (
    # Who may read what, and the memory and file tools that ask.
    _t(
        "agent/workspace/audience.py",
        "tests/agent/workspace/test_audience.py",
        "tests/agent/tools/test_files.py",
        "tests/agent/memory/test_memory.py",
        "tests/agent/memory/test_memory_index.py",
        "tests/agent/sessions/test_prompt.py",
        *PRIVACY,
        "tests/gateway/scheduling/test_daily_summary.py",
    ),
    _t(
        "agent/memory/store.py",
        "tests/agent/memory/test_memory.py",
        "tests/agent/memory/test_memory_index.py",
        "tests/agent/workspace/test_quota.py",
        *PRIVACY,
        "tests/test_guest_memory.py",
        "tests/test_group_memory.py",
        "tests/test_abuse.py",
        "tests/test_consolidation_e2e.py",
        "tests/gateway/scheduling/test_daily_summary.py",
    ),
    _t(
        "agent/memory/index.py",
        "tests/agent/memory/test_memory_index.py",
        "tests/agent/memory/test_index_upkeep.py",
        "tests/agent/memory/test_memory.py",
        *PRIVACY,
        "tests/test_abuse.py",
        "tests/test_corrupt_state.py",
        "tests/agent/memory/test_chunks.py",
        "tests/agent/memory/test_hybrid.py",
        "tests/agent/memory/test_memory_tools.py",
    ),
    _t(
        "agent/memory/catchup.py",
        "tests/agent/memory/test_memory_index.py",
        "tests/agent/memory/test_index_upkeep.py",
        "tests/agent/memory/test_index_files.py",
        "tests/agent/memory/test_memory.py",
        *PRIVACY,
        "tests/test_abuse.py",
    ),
    _t(
        "agent/memory/hybrid.py",
        "tests/agent/memory/test_hybrid.py",
        "tests/agent/memory/test_memory.py",
        *PRIVACY,
    ),
    _t(
        "agent/memory/vectors.py",
        "tests/agent/memory/test_vectors.py",
        "tests/agent/memory/test_hybrid.py",
        *PRIVACY,
        only=("VectorTable",),
    ),
    _t(
        "agent/memory/tools.py",
        "tests/agent/memory/test_memory_tools.py",
        "tests/agent/memory/test_memory.py",
        "tests/agent/workspace/test_quota.py",
        *PRIVACY,
        "tests/test_guest_memory.py",
        "tests/test_group_memory.py",
        "tests/test_abuse.py",
    ),
    _t(
        "agent/tools/paths.py",
        "tests/agent/tools/test_files.py",
        "tests/agent/workspace/test_quota.py",
        "tests/agent/memory/test_memory.py",
        *PRIVACY,
        "tests/test_abuse.py",
    ),
    _t(
        "agent/tools/listing.py",
        "tests/agent/tools/test_files.py",
        *PRIVACY,
        "tests/test_abuse.py",
    ),
    _t(
        "agent/tools/files.py",
        "tests/agent/tools/test_files.py",
        "tests/agent/workspace/test_quota.py",
        "tests/agent/memory/test_memory.py",
        *PRIVACY,
        "tests/test_abuse.py",
    ),
    # Who is let in, and which group messages are for the bot.
    _t(
        "channels/access.py",
        "tests/channels/test_access.py",
        *TELEGRAM,
        "tests/channels/discord/test_channel.py",
        "tests/channels/telegram/test_pairing_in_chat.py",
    ),
    _t(
        "channels/pairing.py",
        "tests/channels/test_access.py",
        "tests/channels/telegram/test_pairing_in_chat.py",
        "tests/gateway/ops/test_commands.py",
        "tests/gateway/ops/test_cli.py",
    ),
    _t(
        "channels/telegram/inbound.py",
        *TELEGRAM,
        "tests/channels/telegram/test_pairing_in_chat.py",
        "tests/channels/test_voice.py",
    ),
    _t("channels/discord/inbound.py", *DISCORD, only=("addressed",)),
    _t("channels/discord/channel.py", *DISCORD, only=("DiscordChannel._on_message",)),
    _t(
        "gateway/runtime/gateway.py",
        "tests/gateway/runtime/test_gateway.py",
        *TELEGRAM,
        "tests/channels/discord/test_channel.py",
        "tests/gateway/runtime/test_journal.py",
        "tests/gateway/runtime/test_commands.py",
        only=("Gateway.handle",),
    ),
    # What the fetch tool may reach, and how much.
    _t("agent/web/fetch.py", "tests/agent/web/test_web.py"),
    # What survives a crash: the journal, the outbox, delivery after a restart.
    _t(
        "gateway/runtime/journal.py",
        "tests/gateway/runtime/test_journal.py",
        "tests/gateway/runtime/test_delivery.py",
        "tests/test_corrupt_state.py",
        "tests/test_outage.py",
        "tests/test_faults.py",
    ),
    _t(
        "gateway/runtime/delivery.py",
        "tests/gateway/runtime/",
        "tests/channels/telegram/test_streaming.py",
        *TELEGRAM[:1],
        *DISCORD[:1],
        "tests/gateway/scheduling/test_discord_digest.py",
        "tests/channels/test_terminal.py",
        "tests/test_end_to_end.py",
        "tests/test_outage.py",
        "tests/test_faults.py",
        "tests/gateway/scheduling/test_daily_summary.py",
        "tests/test_corrupt_state.py",
    ),
    _t(
        "gateway/runtime/retries.py",
        "tests/gateway/runtime/test_delivery.py",
        "tests/test_outage.py",
        "tests/test_faults.py",
        "tests/gateway/runtime/test_journal.py",
    ),
    # Exactly-once scheduling, and the caps on jobs made in chat.
    _t(
        "gateway/scheduling/ledger.py",
        "tests/gateway/scheduling/test_ledger.py",
        "tests/gateway/scheduling/test_scheduler.py",
        "tests/gateway/scheduling/test_daily_summary.py",
        "tests/gateway/scheduling/test_plan.py",
        "tests/gateway/ops/test_doctor.py",
        "tests/test_corrupt_state.py",
    ),
    _t(
        "gateway/scheduling/scheduler.py",
        "tests/gateway/scheduling/test_scheduler.py",
        "tests/gateway/scheduling/test_daily_summary.py",
        "tests/gateway/scheduling/test_reminders.py",
        "tests/gateway/scheduling/test_plan.py",
        "tests/gateway/scheduling/test_heartbeat.py",
        "tests/gateway/services/test_reload.py",
    ),
    _t(
        "gateway/scheduling/reminder_tools.py",
        "tests/gateway/scheduling/test_reminders.py",
        "tests/gateway/scheduling/test_jobs_on_a_host.py",
        "tests/gateway/scheduling/test_plan.py",
        "tests/gateway/ops/test_doctor.py",
        "tests/gateway/ops/test_cli.py",
        "tests/test_corrupt_state.py",
    ),
    # The caps on what is sent out to be transcribed.
    _t(
        "channels/voice.py",
        "tests/channels/test_voice.py",
        "tests/channels/test_voice_local.py",
        "tests/gateway/ops/test_doctor.py",
        "tests/test_usage_other_services.py",
    ),
    # Secrets masked in logs, stored errors and doctor's report.
    _t(
        "gateway/services/logs.py",
        "tests/gateway/services/test_logs.py",
        "tests/gateway/ops/test_doctor.py",
        "tests/gateway/ops/test_cli.py",
    ),
    _t(
        "gateway/config/build.py",
        "tests/gateway/services/test_logs.py",
        "tests/gateway/config/test_config.py",
        "tests/gateway/ops/test_doctor.py",
        only=("secrets_in",),
    ),
    _t(
        "gateway/ops/doctor/report.py",
        "tests/gateway/ops/test_doctor.py",
        "tests/gateway/ops/test_cli.py",
        only=("secret_values", "render"),
    ),
    # Replies split under each platform's limit without breaking their Markdown.
    _t("channels/markdown/split.py", "tests/channels/test_markdown.py", *TELEGRAM, *DISCORD[:1]),
    _t("channels/markdown/cut.py", "tests/channels/test_markdown.py", *TELEGRAM, *DISCORD[:1]),
    _t(
        "channels/telegram/replies.py",
        *TELEGRAM,
        "tests/channels/telegram/test_pairing_in_chat.py",
        "tests/channels/telegram/test_streaming.py",
    ),
    _t("channels/discord/replies.py", *DISCORD),
    # Nothing consequential runs without the owner's yes: who is asked, what no answer means.
    _t(
        "agent/approvals/gate.py",
        "tests/test_approval_answers.py",
        "tests/agent/approvals/test_policy.py",
        "tests/test_approvals.py",
        "tests/test_taint_routes.py",
        "tests/agent/tools/test_exposure.py",
        "tests/test_privacy.py",
    ),
    _t(
        "gateway/runtime/approvals.py",
        "tests/gateway/runtime/test_approvals.py",
        "tests/test_approval_answers.py",
        "tests/test_approvals.py",
    ),
    # What model calls cost: the ledger keeps each once, the caps stop what passes them.
    _t(
        "agent/usage/budget.py",
        "tests/agent/usage/test_budget.py",
        "tests/test_usage.py",
        "tests/test_usage_other_services.py",
    ),
    _t(
        "agent/usage/ledger.py",
        "tests/agent/usage/test_ledger.py",
        "tests/agent/usage/test_budget.py",
        "tests/test_usage.py",
        "tests/test_usage_other_services.py",
        "tests/gateway/infra/test_wal.py",  # its checkpoints in a thread
    ),
    _t(
        "agent/usage/meter.py",
        "tests/agent/usage/test_budget.py",
        "tests/test_usage.py",
        "tests/test_usage_other_services.py",
    ),
    # How much conversation the calls in flight may carry.
    _t(
        "agent/model/in_flight.py",
        "tests/agent/model/test_in_flight.py",
        "tests/test_end_to_end.py",
    ),
    # A backup restores the home it was made of, checked whole, or nothing.
    _t("gateway/backups/restore.py", "tests/gateway/backups/", "tests/test_backup_restore.py"),
    _t("gateway/backups/archive.py", "tests/gateway/backups/", "tests/test_backup_restore.py"),
    # Every change to the workspace kept, and undone on the owner's word.
    _t(
        "agent/workspace/history.py",
        "tests/agent/workspace/test_history.py",
        "tests/test_history_e2e.py",
        "tests/gateway/ops/test_memory.py",
    ),
    # Recall before a turn, and consolidation's proposals, by audience.
    _t(
        "agent/memory/recall.py",
        "tests/agent/memory/test_recall.py",
        "tests/agent/memory/test_hybrid.py",
        "tests/gateway/scheduling/test_reminders.py",
        *PRIVACY,
    ),
    _t(
        "agent/memory/proposals.py",
        "tests/agent/memory/test_proposals.py",
        "tests/agent/memory/test_replaces.py",
        "tests/test_consolidation_e2e.py",
        "tests/agent/memory/test_sections.py",
        "tests/test_memory_sections_e2e.py",
        "tests/channels/telegram/test_proposals_in_chat.py",
        "tests/gateway/web/test_proposals_page.py",
    ),
    # Where each log was read up to: a run reads on from there, never twice, never a line cut.
    _t(
        "agent/memory/proposal_store.py",
        "tests/agent/memory/test_proposals.py",
        "tests/agent/memory/test_curator.py",
        "tests/test_consolidation_e2e.py",
        "tests/gateway/web/test_proposals_page.py",
    ),
    # One writer of a file at a time: an entry appended while a mark or a file tool rewrites
    # the log is kept.
    _t(
        "agent/workspace/writers.py",
        "tests/agent/workspace/test_writers.py",
        "tests/agent/memory/test_curator.py",
        "tests/agent/memory/test_memory.py",
        "tests/agent/memory/test_replaces.py",
        "tests/agent/tools/test_files.py",
    ),
    _t(
        "agent/memory/consolidation.py",
        "tests/test_consolidation_e2e.py",
        "tests/agent/memory/test_curator.py",
        "tests/test_memory_sections_e2e.py",
        "tests/channels/telegram/test_proposals_in_chat.py",
        "tests/gateway/web/test_proposals_page.py",
        "tests/gateway/scheduling/test_consolidation_target.py",
        "tests/gateway/ops/test_memory.py",
        "tests/test_consolidation_search_e2e.py",
    ),
    # What consolidation offers to mark out of date, and finds when its model searches:
    # never from text written outside.
    _t(
        "agent/memory/replacing.py",
        "tests/agent/memory/test_replaces.py",
        "tests/test_consolidation_e2e.py",
        "tests/test_consolidation_search_e2e.py",
    ),
)

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
    where: str = ""  # the function or class it is in (``Class.method``), "" at module level
    text: str = ""  # the source line, stripped

    def __str__(self) -> str:
        return f"{self.module}:{self.line} ({self.where or 'module'}) `{self.text}`: {self.what}"


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


def _scopes(tree: ast.Module) -> dict[int, str]:
    """Each node's innermost enclosing function or class, as ``Outer.inner``."""
    out: dict[int, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{name}.{node.name}" if name else node.name
        out[id(node)] = name
        for child in ast.iter_child_nodes(node):
            visit(child, name)

    visit(tree, "")
    return out


def in_scope(where: str, only: tuple[str, ...]) -> bool:
    return not only or any(where == name or where.startswith(name + ".") for name in only)


def mutants(target: Target | str) -> list[Mutant]:
    """The module's mutants (within ``target.only``, when given)."""
    if isinstance(target, str):
        target = Target(target, ())
    source = (ROOT / target.module).read_text()
    tree = ast.parse(source)
    lines = source.splitlines()
    owner, on_import = _statements(tree)
    scopes = _scopes(tree)
    out = []
    for index, (node, kind, variant) in enumerate(_points(tree)):
        where = scopes.get(id(node), "")
        if not in_scope(where, target.only):
            continue
        what = _apply(copy.deepcopy(node), kind, variant)
        line = getattr(node, "lineno", 0)
        stmt = owner.get(id(node))
        first = min(line, stmt.lineno) if stmt is not None else line
        last = getattr(node, "end_lineno", None) or line
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        out.append(
            Mutant(
                target.module, index, line, what, (first, last), id(node) in on_import, where, text
            )
        )
    return out


Step = tuple[str, int | None]  # a field of a node, and the place in it when it is a list


@functools.lru_cache(maxsize=8)
def _plan(source: str) -> tuple[tuple[tuple[tuple[Step, ...], str, int], ...], bool]:
    """Where each mutation point of ``source`` is (the steps from the module to its node), and
    whether the module has a unary plus of its own: found once per text, since finding the
    points walks the whole tree, and every mutant of a module is made from the same text."""
    tree = ast.parse(source)
    points = list(_points(tree))
    wanted = {id(node) for node, _, _ in points}
    steps: dict[int, tuple[Step, ...]] = {}
    todo: list[tuple[ast.AST, tuple[Step, ...]]] = [(tree, ())]
    while todo:
        node, way = todo.pop()
        if id(node) in wanted:
            steps[id(node)] = way
        for field, value in ast.iter_fields(node):
            items = enumerate(value) if isinstance(value, list) else [(None, value)]
            todo += [(item, (*way, (field, i))) for i, item in items if isinstance(item, ast.AST)]
    plus = any(isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.UAdd) for n in ast.walk(tree))
    return tuple((steps[id(node)], kind, variant) for node, kind, variant in points), plus


def mutated_source(mutant: Mutant, source: str | None = None) -> str:
    """The module's source with the change made (``source``: the text the mutants were found
    in, when the working copy may have changed since)."""
    text = source if source is not None else (ROOT / mutant.module).read_text()
    points, plus = _plan(text)
    way, kind, variant = points[mutant.index]
    tree = ast.parse(text)
    holder: Any = tree
    for field, i in way[:-1]:
        holder = getattr(holder, field) if i is None else getattr(holder, field)[i]
    field, i = way[-1]
    node = getattr(holder, field) if i is None else getattr(holder, field)[i]
    _apply(node, kind, variant)
    if kind == "remove":  # a statement, so one of a list's
        getattr(holder, field)[i] = ast.Pass()
    if kind == "drop-not" or plus:
        tree = _Unplus().visit(tree)
    return ast.unparse(tree)


# -- why a survivor stays ----------------------------------------------------------------------

EQUIVALENT = "equivalent"  # changes no behaviour: left out of the share
UNSEEN = "unseen"  # a change no test can observe, or not worth a test: counted as a survivor


@dataclass(frozen=True)
class Why:
    """A survivor explained: the mutants of ``module`` in ``where`` whose source line contains
    ``fragment`` and whose change is ``what`` (as printed)."""

    module: str
    where: str
    fragment: str
    what: str
    kind: str
    reason: str
    nth: int = 0  # when several mutants match, only the nth of them (from 1) in the module

    def matches(self, m: Mutant) -> bool:
        return (
            m.module == self.module
            and m.where == self.where
            and self.fragment in m.text
            and m.what == self.what
        )

    def explains(self, m: Mutant) -> bool:
        if not self.matches(m):
            return False
        if not self.nth:
            return True
        found = [x.index for x in mutants(self.module) if self.matches(x)]
        return len(found) >= self.nth and found[self.nth - 1] == m.index


EXPLAINED: tuple[Why, ...] = (
    Why(
        "gateway/services/logs.py",
        "JsonFormatter.format",
        "ensure_ascii=False",
        "`False` → `True`",
        EQUIVALENT,
        "a JSON reader reads `\\u00e9` and `é` alike, and secrets are masked value by value "
        "before the line is encoded",
    ),
    # The journal: what a crash leaves owed.
    Why(
        "gateway/runtime/journal.py",
        "_open",
        'db.execute("PRAGMA synchronous=NORMAL")',
        "`db.execute('PRAGMA synchronous=NORMAL')` removed",
        UNSEEN,
        "in WAL mode it decides what a power cut may lose, which no test can cause",
    ),
    Why(
        "gateway/runtime/journal.py",
        "_open",
        "db.close()",
        "`db.close()` removed",
        UNSEEN,
        "closing a connection whose opening failed leaves no trace; the file is set aside "
        "either way",
    ),
    Why(
        "gateway/runtime/journal.py",
        "_open",
        "timeout=10",
        "`10` → `11`",
        UNSEEN,
        "how long a write waits for a lock only the same process takes",
    ),
    *(
        Why(
            "gateway/runtime/journal.py",
            "Journal.__init__",
            "secrets.randbits(40) << 16",
            what,
            EQUIVALENT,
            "where a new journal's numbers start is random by design; another random range "
            "serves as well",
        )
        for what in ("`16` → `17`", "`40` → `41`")
    ),
    Why(
        "gateway/runtime/journal.py",
        "Journal.take",
        "ensure_ascii=False",
        "`False` → `True`",
        EQUIVALENT,
        "a JSON reader reads `\\u00e9` and `é` alike",
    ),
    # The scheduler's ledger and its runs.
    Why(
        "gateway/scheduling/ledger.py",
        "_open",
        "db.close()",
        "`db.close()` removed",
        UNSEEN,
        "closing a connection whose opening failed leaves no trace; the file is set aside "
        "either way",
    ),
    Why(
        "gateway/scheduling/ledger.py",
        "Ledger.__init__",
        "raise",
        "`raise` removed",
        UNSEEN,
        "only when a ledger open for writing cannot make its tables, which SQLite refuses "
        "earlier (a damaged file is set aside first)",
    ),
    Why(
        "gateway/scheduling/ledger.py",
        "Ledger.claim",
        "return False",
        "`return False` → `return None`",
        EQUIVALENT,
        "its callers read it as true or false",
    ),
    Why(
        "gateway/scheduling/ledger.py",
        "Ledger.__init__",
        "uri=True",
        "`True` → `False`",
        EQUIVALENT,
        "Debian's SQLite reads a file: name as a URI either way",
    ),
    Why(
        "gateway/scheduling/ledger.py",
        "Ledger.history",
        "strict=True",
        "`True` → `False`",
        EQUIVALENT,
        "the names and the row come from the same cursor",
    ),
    Why(
        "gateway/scheduling/scheduler.py",
        "Scheduler.stop",
        "self._tasks.clear()",
        "`self._tasks.clear()` removed",
        EQUIVALENT,
        "the tasks are cancelled and awaited; the next start replaces each entry",
    ),
    Why(
        "gateway/scheduling/scheduler.py",
        "Scheduler._drive",
        "self._tasks.pop(job.id, None)",
        "`self._tasks.pop(job.id, None)` removed",
        UNSEEN,
        "a finished one-off job's task would stay in a dict until stop; nothing reads it",
    ),
    Why(
        "gateway/scheduling/scheduler.py",
        "Scheduler._resume_after",
        "timedelta(seconds=1)",
        "`1` → `2`",
        UNSEEN,
        "a slot one second before the job was first planned; slots are minutes apart",
    ),
    Why(
        "gateway/scheduling/scheduler.py",
        "Scheduler.stop",
        "timeout=10",
        "`10` → `11`",
        UNSEEN,
        "how long stop waits for cancelled runs, which end at once",
    ),
    Why(
        "gateway/scheduling/reminder_tools.py",
        "",
        "GAPS_CHECKED = 1000",
        "`1000` → `1001`",
        UNSEEN,
        "how many runs the check of gaps looks at: two days of a schedule the interval "
        "allows show a too-short gap long before",
    ),
    *(
        Why(
            "gateway/scheduling/reminder_tools.py",
            "ReminderTools._check_often",
            fragment,
            what,
            EQUIVALENT,
            "a cron's hours and minutes repeat every day it runs: a run "
            "exactly two days on, or a third day, shows no gap the first two did not",
        )
        for fragment, what in (
            ("following > end", "`>` → `>=`"),
            ("timedelta(days=2)", "`2` → `3`"),
        )
    ),
    Why(
        "gateway/scheduling/reminder_tools.py",
        "_when",
        'replace(" ", "T", 1)',
        "`1` → `2`",
        EQUIVALENT,
        "a local time has one space, between its date and its time",
    ),
    Why(
        "gateway/scheduling/reminder_tools.py",
        "ReminderTools.schedule",
        "token_hex(3)",
        "`3` → `4`",
        EQUIVALENT,
        "a job's id is two random characters longer",
    ),
    # Delivery after an outage.
    Why(
        "gateway/runtime/retries.py",
        "Retries.stop",
        "self._lanes.clear()",
        "`self._lanes.clear()` removed",
        EQUIVALENT,
        "the workers are cancelled and awaited; the rows wait in the outbox for the next start",
    ),
    Why(
        "gateway/runtime/retries.py",
        "Retries._work",
        "> self.window",
        "`>` → `>=`",
        UNSEEN,
        "only a message exactly at the end of its retry window, to the microsecond",
    ),
    # Replies: where a long reply is split (a thread or the loop), not how.
    *(
        Why(
            module,
            where,
            "LONG",
            what,
            EQUIVALENT,
            "where a long reply is split (a thread or the event loop), not how: the pieces "
            "are the same",
        )
        for module in ("channels/telegram/replies.py", "channels/discord/replies.py")
        for where, what in (("", "`20000` → `20001`"), ("send", "`>` → `>=`"))
    ),
    Why(
        "channels/telegram/replies.py",
        "send_piece",
        "unreachable",
        "`raise AssertionError('unreachable: the last attempt returns ` removed",
        EQUIVALENT,
        "after the loop, which always returns or raises",
    ),
    *(
        Why(
            "channels/telegram/replies.py",
            "_fit",
            "limit >= 400",
            what,
            EQUIVALENT,
            "the limits are 4,000 halved (2,000, 1,000, 500, 250): never 400 or 401",
        )
        for what in ("`>=` → `>`", "`400` → `401`")
    ),
    Why(
        "channels/telegram/replies.py",
        "_fit",
        "out.append((piece, None))",
        "`out.append((piece, None))` removed",
        UNSEEN,
        "a piece of under 400 characters that renders to over 4,096 UTF-16 units; nothing "
        "renders that much longer",
        nth=2,  # the last branch, not the piece that renders to nothing
    ),
    *(
        Why(
            "channels/telegram/replies.py",
            "_fit",
            fragment,
            "`2` → `3`",
            UNSEEN,
            "cut in thirds instead of halves, every piece still fits; only the number of "
            "messages differs",
        )
        for fragment in ("split_markdown(piece, limit // 2", "_fit(sub, limit // 2, out)")
    ),
    Why(
        "agent/web/fetch.py",
        "GuardedResolver.resolve",
        "port: int = 0",
        "`0` → `1`",
        EQUIVALENT,
        "aiohttp always passes the port",
    ),
    Why(
        "agent/web/fetch.py",
        "GuardedResolver.close",
        "await self._inner.close()",
        "`await self._inner.close()` removed",
        EQUIVALENT,
        "aiohttp closes only a resolver it made itself, and the threaded resolver inside "
        "holds nothing to close",
    ),
    Why(
        "agent/web/fetch.py",
        "WebFetcher.fetch",
        "use_dns_cache=False",
        "`False` → `True`",
        EQUIVALENT,
        "one connector per fetch, and what it would cache is what the guard already kept",
    ),
    Why(
        "agent/web/fetch.py",
        "_read",
        "iter_chunked(65536)",
        "`65536` → `65537`",
        EQUIVALENT,
        "the size of the pieces the body is read in; the cap applies to the bytes joined",
    ),
    Why(
        "agent/web/fetch.py",
        "WebFetcher.fetch",
        "sock_connect=10",
        "`10` → `11`",
        UNSEEN,
        "only a connection that hangs between 10 and 11 s differs; the limit on the whole "
        "fetch is tested",
    ),
    Why(
        "agent/web/fetch.py",
        "_readable",
        "favor_recall=True",
        "`True` → `False`",
        UNSEEN,
        "it leans trafilatura toward keeping a borderline part of a page; which parts those "
        "are is its own judgement, not a promise",
    ),
    Why(
        "agent/web/fetch.py",
        "WebFetcher._follow",
        "raise exc.__cause__ from None",
        "`raise exc.__cause__ from None` removed",
        UNSEEN,
        "aiohttp 3.14 lets the guard's refusal out of the resolver unwrapped; this keeps its "
        "words should a version wrap it",
    ),
    # The file tools.
    Why(
        "agent/tools/files.py",
        "",
        "blocking=True,",
        "`True` → `False`",
        UNSEEN,
        "a tool run on the event loop rather than in a worker thread is slower for the other "
        "chats only on a slow disk, which no test makes",
    ),
    Why(
        "agent/tools/listing.py",
        "list_files",
        "if time.monotonic() > deadline:",
        "`>` → `>=`",
        EQUIVALENT,
        "the clock landing on the deadline to the nanosecond stops the walk one check earlier",
    ),
    # The memory store.
    Why(
        "agent/memory/store.py",
        "cap_log",
        "if total - offsets[i] <= limit:",
        "`<=` → `<`",
        EQUIVALENT,
        "an entry that fits exactly is then found by the line-by-line fallback, which stops at "
        "the same line",
    ),
    Why(
        "agent/memory/store.py",
        "cap_log",
        "while keep_from > 0 and total - offsets[keep_from - 1] <= limit:",
        "`>` → `>=`",
        EQUIVALENT,
        "the walk back cannot reach the first line: the whole log fitting returned earlier",
    ),
    Why(
        "agent/memory/store.py",
        "cap_log",
        "while keep_from > 0 and total - offsets[keep_from - 1] <= limit:",
        "`0` → `1`",
        EQUIVALENT,
        "as above: the walk back stops before the first line either way",
    ),
    Why(
        "agent/memory/store.py",
        "cap_head",
        'cut = text.rfind("\\n", 0, limit)',
        "`0` → `1`",
        EQUIVALENT,
        "a line break at the very start alone is not cut at either way",
    ),
    Why(
        "agent/memory/store.py",
        "Memory._clear_way",
        "token_hex(3)",
        "`3` → `4`",
        EQUIVALENT,
        "the moved-aside name's random part is unique at either length",
    ),
    Why(
        "agent/memory/store.py",
        "Memory.append",
        "os.fsync(fd)",
        "`os.fsync(fd)` removed",
        UNSEEN,
        "it decides what a power cut may lose, which no test can cause",
    ),
    Why(
        "agent/memory/store.py",
        "Memory.shown",
        "if audience.private and not self.cfg.owner_reads_guest_notes:",
        "`and` → `or`",
        EQUIVALENT,
        "a shared chat's own search never returns a guest's notes, so filtering them changes "
        "nothing there",
    ),
    Why(
        "agent/memory/store.py",
        "Memory.chats_notes",
        "return []",
        "`return []` → `return None`",
        EQUIVALENT,
        "its one caller only asks whether there are any",
    ),
    Why(
        "agent/memory/store.py",
        "Memory.read_visible",
        "hidden = not self.cfg.owner_reads_guest_notes",
        "`not self.cfg.owner_reads_guest_notes` → without `not`",
        UNSEEN,
        "no caller reads a guest's notes through it in the owner's chats today (the tools and "
        "the snapshot check the setting themselves); it guards the next one",
    ),
    Why(
        "agent/memory/store.py",
        "Memory.read_visible",
        'return ""',
        "`return ''` → `return None`",
        UNSEEN,
        "the guest-notes branch above: no caller reaches it",
        nth=1,
    ),
    # The memory tools.
    *(
        Why(
            "agent/memory/tools.py",
            "MemoryTools.append",
            "ctx.check_room(len(text.encode()) + 40 + (80 if old else 0))",
            what,
            UNSEEN,
            "the 40 bytes stand for the entry's heading and the 80 for a mark, estimates: the "
            "quota's tests hold a chat to its cap, not to the byte of a heading",
        )
        for what in ("`+` → `-`", "`40` → `41`", "`80` → `81`", "`0` → `1`")
    ),
    # The audience rules.
    Why(
        "agent/workspace/audience.py",
        "reopened",
        "opening.start() < closing.start()",
        "`<` → `<=`",
        EQUIVALENT,
        "an opening and a closing tag cannot start at the same place, so they are never equal",
    ),
    Why(
        "agent/workspace/audience.py",
        "outside_source",
        'rel.parts[:1] and rel.parts[0].casefold() == "inbox"',
        "`1` → `2`",
        EQUIVALENT,
        "the first two parts are there exactly when the first is: the guard is the same",
    ),
    Why(
        "agent/workspace/audience.py",
        "note_written",
        "json.dumps(record, indent=1, ensure_ascii=False)",
        "`1` → `2`",
        EQUIVALENT,
        "the indent of the record's JSON changes nothing its reader sees",
    ),
    Why(
        "agent/workspace/audience.py",
        "note_written",
        "json.dumps(record, indent=1, ensure_ascii=False)",
        "`False` → `True`",
        EQUIVALENT,
        "JSON reads `\\u00e9` and `é` as the same text",
    ),
    # The paragraph cutter (the splitters reject a limit under 100, and each piece it cuts
    # is measured, so one character never measures more than a piece holds).
    *(
        Why(
            "channels/markdown/cut.py",
            "_joined",
            fragment,
            what,
            EQUIVALENT,
            "variation selectors (U+FE00–FE0F, U+E0100–E01EF) are nonspacing marks, already "
            "joined by their category",
        )
        for fragment, what in (
            ("0xFE00 <= code <= 0xFE0F", "`<=` → `<`"),
            ("0xFE00 <= code <= 0xFE0F", "`65024` → `65025`"),
            ("0xE0100 <= code <= 0xE01EF", "`<=` → `<`"),
            ("0xE0100 <= code <= 0xE01EF", "`917760` → `917761`"),
        )
    ),
    Why(
        "channels/markdown/cut.py",
        "_joined",
        "return False",
        "`return False` → `return None`",
        EQUIVALENT,
        "read only as true or false",
    ),
    Why(
        "channels/markdown/cut.py",
        "_joined",
        "run = 0",
        "`0` → `1`",
        EQUIVALENT,
        "the character before is known to be a regional indicator: starting the count at one "
        "skips exactly the one the loop would count first",
    ),
    Why(
        "channels/markdown/cut.py",
        "boundary",
        "while 0 < j < len(text) and _joined(text, j):",
        "`<` → `<=`",
        EQUIVALENT,
        "at 0 the place given is returned either way; and the place asked about is inside the "
        "text, since the window of a text over the limit is shorter than the text",
    ),
    Why(
        "channels/markdown/cut.py",
        "hard_cut",
        "while measure(rest) > limit:",
        "`>` → `>=`",
        EQUIVALENT,
        "a rest exactly at the limit is then cut once more at its own end: the same pieces",
    ),
    Why(
        "channels/markdown/cut.py",
        "window",
        "lo, hi = 0, min(len(text), limit)",
        "`0` → `1`",
        EQUIVALENT,
        "differs only where one character measures more than the limit (at least 100)",
    ),
    Why(
        "channels/markdown/cut.py",
        "window",
        "mid = (lo + hi + 1) // 2",
        "`1` → `2`",
        EQUIVALENT,
        "any midpoint above `lo` and at most `hi` finds the same longest prefix",
    ),
    Why(
        "channels/markdown/cut.py",
        "_cut_once",
        "taken = _clean(head, tail, whole, env) if head and tail else None",
        "`and` → `or`",
        EQUIVALENT,
        "the piece is never empty (a paragraph starts with no space) and an empty rest opens "
        "no paragraph, so is never a clean cut",
    ),
    Why(
        "channels/markdown/cut.py",
        "_cut_once",
        "space = next((i for i in range(end, 0, -1)",
        "`0` → `1`",
        EQUIVALENT,
        "a space at 1 counts only when the window is 2 characters or less",
    ),
    Why(
        "channels/markdown/cut.py",
        "_odd_backslashes",
        'return (len(text) - len(text.rstrip("\\\\"))) % 2 == 1',
        "`-` → `+`",
        EQUIVALENT,
        "a − b and a + b are both odd or both even",
    ),
    Why(
        "channels/markdown/cut.py",
        "_opens_paragraph",
        'tail.split("\\n", 2)[:2]',
        "`2` → `3`",
        EQUIVALENT,
        "with one more split the first two lines are the same",
        nth=1,
    ),
    Why(
        "channels/markdown/cut.py",
        "_opens_paragraph",
        'tail.split("\\n", 2)[:2]',
        "`2` → `3`",
        UNSEEN,
        "a third line changes the first block only for a link definition whose title spans lines",
        nth=2,
    ),
    Why(
        "channels/markdown/cut.py",
        "_candidates",
        "spaces = [i for i in range(min(end, len(text) - 1), 0, -1) if text[i].isspace()]",
        "`-` → `+`",
        EQUIVALENT,
        "the window of a text over the limit ends before its last character anyway",
    ),
    Why(
        "channels/markdown/cut.py",
        "_candidates",
        "spaces = [i for i in range(min(end, len(text) - 1), 0, -1) if text[i].isspace()]",
        "`1` → `2`",
        EQUIVALENT,
        "a paragraph does not end in whitespace, so its last character is never a candidate",
        nth=2,
    ),
    Why(
        "channels/markdown/cut.py",
        "_candidates",
        "_SENTENCE_END.search(text[max(0, i - 4) : i])",
        "`0` → `1`",
        EQUIVALENT,
        "a candidate is at 40 % of a window of dozens of characters at least, never within 4 "
        "of the start",
    ),
    Why(
        "channels/markdown/cut.py",
        "_candidates",
        "_SENTENCE_END.search(text[max(0, i - 4) : i])",
        "`4` → `5`",
        UNSEEN,
        "a sentence end followed by four closing quotes or brackets is taken for one",
    ),
    Why(
        "channels/markdown/cut.py",
        "_candidates",
        "seen.add(i)",
        "`seen.add(i)` removed",
        EQUIVALENT,
        "a place tried again is judged the same and refused again",
    ),
    Why(
        "channels/markdown/cut.py",
        "",
        "_TRIES = 32",
        "`32` → `33`",
        UNSEEN,
        "one more candidate of each kind matters only where the 33rd is the first clean one",
    ),
    Why(
        "channels/markdown/cut.py",
        "",
        "_OPENING = 400",
        "`400` → `401`",
        UNSEEN,
        "a line's start decides its block, bar a link definition over 400 characters",
    ),
    Why(
        "channels/markdown/cut.py",
        "_clean",
        "return 0",
        "`0` → `1`",
        EQUIVALENT,
        "how much a piece shows is read only when the whole paragraph's characters are known, "
        "and here they are not",
    ),
    Why(
        "channels/markdown/cut.py",
        "_clean",
        "return 0",
        "`return 0` → `return None`",
        UNSEEN,
        "a paragraph that does not parse as one on its own: 20,000 random documents split at "
        "100 never reached it",
    ),
    # Delivery: only the local terminal is not journaled, and it never shares a process with
    # the scheduler; callers of `send` and `answer` look only for False (not sent now).
    Why(
        "gateway/runtime/delivery.py",
        "Delivery._push",
        "return True",
        "`return True` → `return None`",
        EQUIVALENT,
        "callers look only for False, a reply that did not go out now",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.answer",
        "if out is None or oid is None:",
        "`or` → `and`",
        EQUIVALENT,
        "the journal gives no row exactly when there is no reply",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.deliver",
        "if self.journal is not None and self.durable(out.key):",
        "`and` → `or`",
        EQUIVALENT,
        "scheduled messages never go to the terminal, the one chat not journaled",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.finish",
        "return False",
        "`return False` → `return None`",
        EQUIVALENT,
        "read only as true or false",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.placed",
        "return lambda ref: None",
        "`return lambda ref: None` → `return None`",
        EQUIVALENT,
        "the terminal, the one chat not journaled, has no messages to record and never calls it",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.recover",
        "if channel is None or not self.durable(row.out.key):",
        "`or` → `and`",
        EQUIVALENT,
        "a platform not running is never durable, and the terminal has no rows in the outbox",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.recover",
        "outgoing.append(Outgoing(oid, note, SendStatus.PENDING, 0,",
        "`0` → `1`",
        EQUIVALENT,
        "sending it again reads the row's id, message and time, not its attempts",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery._push",
        "self.retries.hold(held, tried=False)",
        "`False` → `True`",
        EQUIVALENT,
        "a reply held behind another joins that chat's running retry worker, which has its "
        "own pace",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.__init__",
        "retry_window: timedelta = timedelta(hours=24),",
        "`24` → `25`",
        EQUIVALENT,
        "a constructor default that `gateway.retry_window_hours` always overrides",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery._push",
        "if self.journal is not None and oid is not None:",
        "`and` → `or`",
        EQUIVALENT,
        "a row number comes only with a journal, and settling no row (None) changes nothing",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.recover",
        "return []",
        "`return []` → `return None`",
        UNSEEN,
        "no Delivery is made without a journal",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery._attempt",
        'raise Unreachable(f"no channel {held.out.key.channel!r}")',
        "`raise Unreachable(f'no channel {held.out.key.channel!r}')` removed",
        UNSEEN,
        "defensive: every caller has found the channel, and channels do not leave a running "
        "gateway",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery._push",
        "if self.journal is None or oid is None:",
        "`or` → `and`",
        UNSEEN,
        "only the terminal sends without a row, and writing to a terminal has no outage to "
        "wait out",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery._try",
        "if late > LATE:",
        "`>` → `>=`",
        UNSEEN,
        "only a reply exactly as late as the limit, to the microsecond",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.take_back",
        "if channel is None or key.channel != channel_name:",
        "`or` → `and`",
        UNSEEN,
        "half-written replies of two platforms at one crash, taken back as the first comes up",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery.undelivered",
        "def undelivered(self, limit: int = 20)",
        "`20` → `21`",
        UNSEEN,
        "how many of the recent failures `corvid status` lists",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery._give_up",
        "self.journal.settle(held.oid, SendStatus.FAILED, error[:500])",
        "`500` → `501`",
        UNSEEN,
        "one more character of a stored error (the cap itself is tested where a refusal is kept)",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery._push",
        'raise DeliveryError(self._mask(f"{type(exc).__name__}: {exc}")[:500]) from exc',
        "`500` → `501`",
        UNSEEN,
        "one more character of a terminal's error",
    ),
    Why(
        "gateway/runtime/delivery.py",
        "Delivery._try",
        "self._failing[channel.name] = (count + 1, since, error[:200])",
        "`200` → `201`",
        UNSEEN,
        "one more character of the error `corvid status` shows",
    ),
    # The Telegram reader.
    Why(
        "channels/telegram/inbound.py",
        "Reader",
        "bot_id: int = 0",
        "`0` → `1`",
        EQUIVALENT,
        "set from getMe before the first update is read",
    ),
    *(
        Why(
            "channels/telegram/inbound.py",
            where,
            fragment,
            "`0` → `1`",
            EQUIVALENT,
            "a size Telegram leaves out counts as 0 or 1 byte, both under every cap; the bytes "
            "are measured once downloaded",
        )
        for where, fragment in (
            ("Reader._fetch_recording", "media.file_size or 0,"),
            ("Reader._fetch_document", "doc.file_size or 0,"),
            ("Reader._fetch_photo", "(p.file_size or 0) <= self.intake.max_image_bytes"),
        )
    ),
    Why(
        "channels/telegram/inbound.py",
        "Reader.button",
        'if access is None or message is None or message.chat.type != "private":',
        "`or` → `and`",
        UNSEEN,
        "a press under a message outside the owner's private chat, or under none (inline "
        "mode): Corvid puts buttons in the owner's private chat only",
        nth=1,
    ),
    Why(
        "channels/telegram/inbound.py",
        "Reader.fetch",
        "raise",
        "`raise` removed",
        UNSEEN,
        "only a bug in Corvid's own code gets there: it would be told as a failed download",
    ),
    # The Markdown splitter.
    Why(
        "channels/markdown/split.py",
        "_item",
        "return _plain(lines, limit, measure)",
        "`return _plain(lines, limit, measure)` → `return None`",
        UNSEEN,
        "a list item whose first line is not a marker, which markdown-it does not make: "
        "the lines are then cut as text rather than lost",
    ),
    *(
        Why(
            "channels/markdown/split.py",
            "_renumber",
            fragment,
            what,
            UNSEEN,
            "numbers are given to an ordered list's items only, whose first line always "
            "starts with a number: the check keeps any other line as it is",
        )
        for fragment, what in (
            ("if m is None or not", "`or` → `and`"),
            ("return body", "`return body` → `return None`"),
        )
    ),
    Why(
        "channels/markdown/split.py",
        "_Splitter.oversized",
        "if tok is None or kind not in _STRUCTURED",
        "`or` → `and`",
        UNSEEN,
        "an HTML block or rule too long for a piece would go to the table splitter, which "
        "cut the ones tried (a test's included) line by line all the same",
    ),
    Why(
        "channels/markdown/split.py",
        "_units",
        "if covered < len(lines) and",
        "`<` → `<=`",
        EQUIVALENT,
        "at the end the slice of lines left is empty, and `any` of it is False",
    ),
    Why(
        "channels/markdown/split.py",
        "_units",
        "tok.nesting == -1",
        "`1` → `2`",
        EQUIVALENT,
        "closing tokens carry no line map, which the same test skips",
    ),
    Why(
        "channels/markdown/split.py",
        "_Splitter.pack",
        "last_end = 0",
        "`0` → `1`",
        EQUIVALENT,
        "read only once a unit is in the piece, which sets it",
    ),
    *(
        Why(
            "channels/markdown/split.py",
            "_renumber",
            fragment,
            what,
            EQUIVALENT,
            "the shift is a whole number and never 0 there (a shift of 0 returned before)",
        )
        for fragment, what in (
            ("if shift > 0 and", "`>` → `>=`"),
            ("elif shift < 0 and", "`<` → `<=`"),
            ("elif shift < 0 and", "`0` → `1`"),
        )
    ),
    *(
        Why(
            "channels/markdown/split.py",
            where,
            "tok.markup[0]",
            "`0` → `1`",
            EQUIVALENT,
            "a fence's markup is three or more of one character",
        )
        for where in ("_code", "_Splitter.body")
    ),
    Why(
        "channels/markdown/split.py",
        "_code",
        'if tok.type == "fence" else 0',
        "`0` → `1`",
        EQUIVALENT,
        "the fence is at least three characters long either way",
    ),
    Why(
        "channels/markdown/split.py",
        "_quote",
        "count=1",
        "`1` → `2`",
        EQUIVALENT,
        "the pattern is anchored at the line's start, so it can match only once",
    ),
    Why(
        "channels/markdown/split.py",
        "_code",
        "info.split(maxsplit=1)[0]",
        "`1` → `2`",
        EQUIVALENT,
        "only the first word is kept, however many splits come after it",
    ),
    # The search index and hybrid search.
    Why(
        "agent/memory/index.py",
        "",
        "SCHEMA_VERSION = 7",
        "`7` → `8`",
        EQUIVALENT,
        "an index made under another number is dropped and made again from the files once; "
        "the hits are the same",
    ),
    *(
        Why(
            "agent/memory/index.py",
            "MemoryIndex.__init__",
            fragment,
            what,
            EQUIVALENT,
            "Corvid always passes the configured sizes (gateway/tool_setup.py); the defaults, "
            "the settings' own, serve the benches",
        )
        for fragment, what in (
            ("chunk_size: int = 30", "`30` → `31`"),
            ("overlap: int = 6", "`6` → `7`"),
        )
    ),
    Why(
        "agent/memory/index.py",
        "MemoryIndex._connect",
        'db.execute("PRAGMA synchronous=NORMAL")',
        "`db.execute('PRAGMA synchronous=NORMAL')` removed",
        UNSEEN,
        "in WAL mode it decides what a power cut may lose, which no test can cause; the "
        "index is made again from the files anyway",
    ),
    *(
        Why(
            "agent/memory/index.py",
            where,
            "close()",
            what,
            UNSEEN,
            "a connection whose file is being replaced: CPython closes it a moment later, "
            "when the last reference to it goes",
        )
        for where, what in (
            ("MemoryIndex._connect", "`db.close()` removed"),
            ("MemoryIndex._repaired", "`self._db.close()` removed"),
        )
    ),
    *(
        Why(
            "agent/memory/" + module,
            where,
            "max_results: int = 8",
            "`8` → `9`",
            EQUIVALENT,
            "every caller passes its own count (the tools, recall, the control page, the CLI)",
        )
        for module, where in (
            ("index.py", "MemoryIndex.search"),
            ("hybrid.py", "HybridSearch.search"),
        )
    ),
    Why(
        "agent/memory/index.py",
        "MemoryIndex.search",
        "max_results * 3",
        "`3` → `4`",
        UNSEEN,
        "how many candidates are read before the ties are broken: it differs only when more "
        "than three times the asked number of chunks score alike",
    ),
    Why(
        "agent/memory/index.py",
        "_ranked",
        "round(r.bm25, 6)",
        "`6` → `7`",
        UNSEEN,
        "scores alike to six places count as a tie: only scores apart in the seventh place "
        "would order otherwise",
    ),
    Why(
        "agent/memory/index.py",
        "MemoryIndex._rows",
        "500",
        "`500` → `501`",
        EQUIVALENT,
        "a batch only keeps the query under SQLite's limit of bound values (32,766 since "
        "3.32); batches of 501 read the same rows",
    ),
    Why(
        "agent/memory/index.py",
        "MemoryIndex.text_matches",
        "full=False",
        "`False` → `True`",
        EQUIVALENT,
        "a full scan at every search finds the same files as the quick one, only slower",
    ),
    Why(
        "agent/memory/catchup.py",
        "CatchUp.__init__",
        "self._listening = False",
        "`False` → `True`",
        EQUIVALENT,
        "run() sets it before every catch-up",
    ),
    Why(
        "agent/memory/catchup.py",
        "CatchUp.__init__",
        "self._folder_mtime = -2",
        "`2` → `3`",
        EQUIVALENT,
        "any value no folder's mtime takes (-1 stands for a missing folder): the first "
        "catch-up is a full scan either way",
    ),
    *(
        Why(
            "agent/memory/catchup.py",
            where,
            fragment,
            what,
            EQUIVALENT,
            "a missing folder, or a catch-up that failed, needs only a value no mtime takes; "
            "the first catch-up is a full scan anyway, none having run yet",
        )
        for where, fragment, what in (
            ("CatchUp._folder_mtime_now", "return -1", "`1` → `2`"),
            ("CatchUp._folder_mtime_now", "return -1", "`return -1` → `return None`"),
            ("CatchUp._sync", "self._folder_mtime = -2", "`2` → `3`"),
        )
    ),
    Why(
        "agent/memory/catchup.py",
        "CatchUp._catch_up",
        "changed += 1",
        "`1` → `2`",
        EQUIVALENT,
        "a file found no longer in its place drops out in a quick catch-up, whose count is "
        "read only as zero or not (a full scan does not list such a file)",
        nth=3,
    ),
    Why(
        "agent/memory/catchup.py",
        "CatchUp._index_file",
        "if self._listening and",
        "`and` → `or`",
        EQUIVALENT,
        "with nobody listening the index takes the list and drops it at the same catch-up",
    ),
    Why(
        "agent/memory/catchup.py",
        "CatchUp._hot_files",
        "stat(follow_symlinks=False)",
        "`False` → `True`",
        EQUIVALENT,
        "a file now a link has changed by either stat, and the read refuses the link "
        "(O_NOFOLLOW); a link to nothing is skipped both ways",
    ),
    Why(
        "agent/memory/catchup.py",
        "CatchUp.memory_files",
        "st = entry.stat(follow_symlinks=False)",
        "`False` → `True`",
        EQUIVALENT,
        "links never get there: is_file(follow_symlinks=False) keeps them out",
    ),
    *(
        Why(
            "agent/memory/vectors.py",
            "VectorTable.__init__",
            fragment,
            "`0` → `1`",
            EQUIVALENT,
            "reset sets the counts before any row, the first row makes every array anew "
            "(_grow), and nothing reads past the rows in use",
        )
        for fragment in (
            "self._n = 0",
            "self._dead = 0",
            "np.zeros(0, dtype=np.int32)",
            "np.zeros(0, dtype=bool)",
        )
    ),
    *(
        Why(
            "agent/memory/vectors.py",
            where,
            fragment,
            "`0` → `1`",
            EQUIVALENT,
            "a matrix of no vectors yet: the first fill makes it anew at their length",
        )
        for where, fragment in (
            ("VectorTable.__init__", "np.zeros((0, 0)"),
            ("VectorTable.forget_vectors", "np.zeros((len(self._ids), 0)"),
        )
    ),
    *(
        Why(
            "agent/memory/vectors.py",
            "VectorTable._grow",
            fragment,
            what,
            UNSEEN,
            "how much room the arrays get ahead: memory and copies, never what they hold",
        )
        for fragment, what in (
            ("if need <= size", "`<=` → `<`"),
            ("max(need, 2 * size, 1024)", "`1024` → `1025`"),
            ("max(need, 2 * size, 1024)", "`2` → `3`"),
        )
    ),
    Why(
        "agent/memory/vectors.py",
        "VectorTable.nearest",
        "if k < len(rows)",
        "`<` → `<=`",
        EQUIVALENT,
        "asked for as many as there are, the partition keeps them all and the sort after "
        "orders them the same",
    ),
    Why(
        "agent/memory/index.py",
        "MemoryIndex._weighted_plan",
        "zip(terms, parts, strict=True)",
        "`True` → `False`",
        EQUIVALENT,
        "one part is made for each term, so the two lists are always of one length",
    ),
    Why(
        "agent/memory/index.py",
        "MemoryIndex._weighted_plan",
        "# phrase: frequency unknown",
        "`1` → `2`",
        EQUIVALENT,
        "any negative count means unknown: idf reads it as 1, and the plan keeps the phrase "
        "as a rare term either way",
    ),
    # The calls in flight.
    Why(
        "agent/model/in_flight.py",
        "InFlight._wake",
        "self._waiters.popleft()",
        "`self._waiters.popleft()` removed",
        EQUIVALENT,
        "the call admitted stays first in the queue only until the same loop's next round, "
        "which takes out a granted call as it takes out a cancelled one",
        nth=1,
    ),
    Why(
        "agent/model/in_flight.py",
        "InFlight.weight",
        "max(self.budget // 4, 1)",
        "`1` → `2`",
        EQUIVALENT,
        "a quarter of the budget is 2 or more for any budget of 8 bytes and up; Corvid's is "
        "256 KiB, and not configurable",
    ),
    # The meter on the model port.
    *(
        Why(
            "agent/usage/meter.py",
            "Meter.count",
            "return call",
            "`return call` → `return None`",
            EQUIVALENT,
            "no caller reads what count returns",
            nth=n,
        )
        for n in (1, 2)
    ),
    Why(
        "agent/usage/meter.py",
        "Meter.most",
        "price.input >= price.cache_write",
        "`>=` → `>`",
        EQUIVALENT,
        "with the two input rates equal, either reading of the request costs the same",
    ),
    Why(
        "agent/usage/meter.py",
        "Metered.__getattr__",
        "raise AttributeError(name)",
        "`raise AttributeError(name)` removed",
        UNSEEN,
        "asked only before __init__ has set the wrapper's own three attributes",
    ),
    Why(
        "agent/usage/meter.py",
        "Metered.complete",
        "len(json.dumps(tools)) if tools else 0",
        "`0` → `1`",
        UNSEEN,
        "one byte more in the estimate of what a call offered no tools may cost",
    ),
    # Asking the owner.
    *(
        Why(
            "gateway/runtime/approvals.py",
            "fenced",
            "run, longest = 0, 0",
            "`0` → `1`",
            EQUIVALENT,
            "the fence comes out three backticks long, or one longer than the longest run "
            "inside: longer than needed, it closes the same block",
            nth=n,
        )
        for n in (1, 2)
    ),
    # Consolidation's proposals.
    Why(
        "agent/memory/proposals.py",
        "applied",
        "text = text.replace(first, new, 1)",
        "`1` → `2`",
        EQUIVALENT,
        "the passage was just checked to be there exactly once",
    ),
    Why(
        "agent/memory/proposal_store.py",
        "Store._save",
        "json.dumps(data, indent=1, ensure_ascii=False)",
        "`1` → `2`",
        EQUIVALENT,
        "the file's indentation: it is read back the same",
    ),
    Why(
        "agent/memory/proposal_store.py",
        "Store._save",
        "json.dumps(data, indent=1, ensure_ascii=False)",
        "`False` → `True`",
        EQUIVALENT,
        "a JSON reader reads `\\u00e9` and `é` alike",
    ),
    Why(
        "agent/memory/proposals.py",
        "_origin",
        "first_lines.get(rel, 1)",
        "`1` → `2`",
        EQUIVALENT,
        "every log read has its first line given with it: the default is never taken",
    ),
    Why(
        "agent/memory/consolidation.py",
        "Curator.read",
        "if rel not in marks and name < oldest:",
        "`<` → `<=`",
        EQUIVALENT,
        "a log's name ends in `.md`, so it never equals the day it is compared with",
    ),
    # The budget's caps: "reached" is a total within EPSILON of the cap, a float's slack.
    *(
        Why("agent/usage/budget.py", where, code, "`>=` → `>`", EQUIVALENT, why)
        for where, code, why in (
            (
                "Budget.recorded",
                "if spent >= cap.limit - EPSILON:",
                "only a total exactly EPSILON below the cap tells `>=` from `>`",
            ),
            (
                "Budget.admit",
                "if spent >= cap.limit - EPSILON:",
                "only a total exactly EPSILON below the cap tells `>=` from `>`",
            ),
            (
                "Budget.recorded",
                "elif self.cfg.warn_at and spent >= cap.limit * self.cfg.warn_at - EPSILON:",
                "only a total exactly EPSILON below the warning's level tells `>=` from `>`",
            ),
        )
    ),
    Why(
        "agent/usage/budget.py",
        "Budget._warn",
        "level = round(self.cfg.warn_at * 100)",
        "`100` → `101`",
        EQUIVALENT,
        "the level only names the warning in the ledger's record of what was told, which the "
        "same code reads back: another number tells once as well",
    ),
    Why(
        "agent/usage/budget.py",
        "Budget._reached",
        "first_telling(cap.name, cap.period, 100)",
        "`100` → `101`",
        EQUIVALENT,
        "the level only names the telling in the ledger's record, read back by the same code; "
        "a warning never shares it (a cap reached is not also warned of)",
    ),
    # Restoring a backup: folders made 0700 and then given their mode, copies in a folder of
    # their own.
    *(
        Why("gateway/backups/restore.py", where, code, what, kind, why)
        for where, code, what, kind, why in (
            (
                "_extract",
                "out.flush()",
                "`out.flush()` removed",
                EQUIVALENT,
                "closing the file flushes it",
            ),
            (
                "_extract",
                "os.fsync(out.fileno())",
                "`os.fsync(out.fileno())` removed",
                UNSEEN,
                "a restored file is on disk after a power cut only with it",
            ),
            (
                "_extract",
                "0o600)",
                "`384` → `385`",
                EQUIVALENT,
                "each file is given its manifest's mode once checked",
            ),
            (
                "_check_database",
                "db.close()",
                "`db.close()` removed",
                EQUIVALENT,
                "CPython closes the connection when the function ends",
            ),
            (
                "_read",
                "member.size > 64 << 20",
                "`>` → `>=`",
                UNSEEN,
                "a manifest of exactly 64 MiB",
            ),
            (
                "_read",
                "member.size > 64 << 20",
                "`64` → `65`",
                UNSEEN,
                "the size past which a manifest is refused unread: no real one comes near",
            ),
            (
                "_read",
                "member.size > 64 << 20",
                "`20` → `21`",
                UNSEEN,
                "the size past which a manifest is refused unread: no real one comes near",
            ),
            (
                "_check",
                'int(manifest.get("format_version", 0))',
                "`0` → `1`",
                EQUIVALENT,
                "every manifest made has its version: the default is never taken",
            ),
            (
                "_check",
                "missing[:5]",
                "`5` → `6`",
                UNSEEN,
                "how many missing files the refusal names, past five",
            ),
            (
                "_check",
                "extra[:5]",
                "`5` → `6`",
                UNSEEN,
                "how many unlisted files the refusal names, past five",
            ),
            (
                "holding_home",
                "os.pread(fd, 32, 0)",
                "`32` → `33`",
                UNSEEN,
                "how much of the lock file is read for the holder's pid, which is shorter",
            ),
            (
                "holding_home",
                "fd = os.open(path, flags, 0o600)",
                "`384` → `385`",
                UNSEEN,
                "the mode of a lock file made in the private state/ folder",
            ),
            (
                "restore",
                "shutil.rmtree(staging, ignore_errors=True)",
                "`True` → `False`",
                EQUIVALENT,
                "the staging folder is there to remove",
            ),
            (
                "_swap_in",
                "shutil.rmtree(undo, ignore_errors=True)",
                "`True` → `False`",
                EQUIVALENT,
                "the folder kept aside is there to remove",
            ),
            (
                "unpack",
                "target.mkdir(parents=True, exist_ok=True, mode=0o700)",
                "`448` → `449`",
                EQUIVALENT,
                "the chmod after it gives the folder its mode",
            ),
            (
                "unpack",
                "target.mkdir(parents=True, exist_ok=True, mode=0o700)",
                "`True` → `False`",
                EQUIVALENT,
                "a folder is unpacked into an empty staging folder, before anything inside it",
            ),
            (
                "unpack",
                "target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)",
                "`True` → `False`",
                EQUIVALENT,
                "an archive lists each folder before its files, so the folder is there",
            ),
            (
                "unpack",
                "target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)",
                "`448` → `449`",
                EQUIVALENT,
                "an archive lists each folder before its files: its own mode is given",
            ),
            (
                "_move_in",
                "aside.mkdir(parents=True, exist_ok=True, mode=0o700)",
                "`True` → `False`",
                EQUIVALENT,
                "the folder for what is set aside is made once, before anything goes in",
            ),
        )
    ),
    # The backup archive.
    *(
        Why("gateway/backups/archive.py", where, code, what, kind, why)
        for where, code, what, kind, why in (
            (
                "",
                "FORMAT_VERSION = 1",
                "`1` → `2`",
                EQUIVALENT,
                "the number an archive is stamped with and the one restore accepts up to are "
                "the same constant",
            ),
            (
                "",
                "CHUNK = 1 << 20",
                "`1` → `2`",
                EQUIVALENT,
                "the size of the pieces a restore copies a file in",
            ),
            (
                "",
                "CHUNK = 1 << 20",
                "`20` → `21`",
                EQUIVALENT,
                "the size of the pieces a restore copies a file in",
            ),
            (
                "make_backup",
                "os.chmod(tmp, 0o600)",
                "`os.chmod(tmp, 384)` removed",
                EQUIVALENT,
                "mkstemp made the file 0600 already",
            ),
            (
                "make_backup",
                "os.fsync(f.fileno())",
                "`os.fsync(f.fileno())` removed",
                UNSEEN,
                "the archive is on disk after a power cut only with it",
            ),
            (
                "make_backup",
                "Path(tmp).unlink(missing_ok=True)",
                "`True` → `False`",
                EQUIVALENT,
                "the temporary archive exists from mkstemp on",
            ),
            (
                "make_backup",
                "compresslevel=6",
                "`6` → `7`",
                EQUIVALENT,
                "another gzip level unpacks to the same files",
            ),
            (
                "_manifest_bytes",
                "indent=1",
                "`1` → `2`",
                EQUIVALENT,
                "the manifest's layout: read back as JSON the same",
            ),
            (
                "_manifest_bytes",
                "sort_keys=True",
                "`True` → `False`",
                EQUIVALENT,
                "the manifest's key order: read back as JSON the same",
            ),
            (
                "_walk",
                "sorted(folder.iterdir(), reverse=True)",
                "`True` → `False`",
                EQUIVALENT,
                "only the order of the archive's members; a restore takes them by name",
            ),
            (
                "_add_database",
                "uri=True",
                "`True` → `False`",
                EQUIVALENT,
                "Debian's SQLite reads `file:` names as URIs anyway",
            ),
            (
                "_add_database",
                "timeout=30",
                "`30` → `31`",
                UNSEEN,
                "how long the copy waits for a writer's lock",
            ),
            (
                "_add_database",
                "target.close()",
                "`target.close()` removed",
                EQUIVALENT,
                "the copy is whole once backup() returns, and CPython closes the connection "
                "when the function ends",
            ),
            (
                "_add_database",
                "source.close()",
                "`source.close()` removed",
                EQUIVALENT,
                "CPython closes the connection when the function ends (the test counts the "
                "open files)",
            ),
            (
                "_add_database",
                "Path(tmp).unlink(missing_ok=True)",
                "`True` → `False`",
                EQUIVALENT,
                "the copy exists from mkstemp on",
            ),
            (
                "_add_file",
                'changed while it was copied ({exc}); try again") from None',
                "`raise BackupError(f'{rel} changed while it was copied ({exc}` removed",
                UNSEEN,
                "a file cut short between its size being read and its copy: a race",
            ),
            (
                "_add_file",
                'raise BackupError(f"{rel} shrank while it was copied; try again")',
                "`raise BackupError(f'{rel} shrank while it was copied; try ag` removed",
                UNSEEN,
                "a file cut short between its size being read and its copy: a race",
            ),
            (
                "_Hashing.readable",
                "return True",
                "`return True` → `return None`",
                EQUIVALENT,
                "tarfile reads with read() alone and never asks",
            ),
            (
                "_Hashing.readable",
                "return True",
                "`True` → `False`",
                EQUIVALENT,
                "tarfile reads with read() alone and never asks",
            ),
            (
                "_Hashing.read",
                "size: int = -1",
                "`1` → `2`",
                EQUIVALENT,
                "tarfile always asks for a size",
            ),
            (
                "_Hashing.read",
                "if size < 0 else",
                "`<` → `<=`",
                EQUIVALENT,
                "tarfile always asks for a positive size",
            ),
            (
                "_Hashing.read",
                "if size < 0 else",
                "`0` → `1`",
                EQUIVALENT,
                "tarfile always asks for a positive size",
            ),
            (
                "_version",
                'return "unknown"',
                "`return 'unknown'` → `return None`",
                UNSEEN,
                "only a Corvid run from a source tree that was never installed",
            ),
        )
    ),
    # The workspace's history.
    *(
        Why("agent/workspace/history.py", where, code, what, kind, why)
        for where, code, what, kind, why in (
            (
                "History.__init__",
                'self._db.execute("PRAGMA synchronous=NORMAL")',
                "`self._db.execute('PRAGMA synchronous=NORMAL')` removed",
                UNSEEN,
                "in WAL mode it decides what a power cut may lose, which no test can cause",
            ),
            (
                "History.__init__",
                "timeout=10",
                "`10` → `11`",
                UNSEEN,
                "how long a write waits for `corvid memory undo` in another process",
            ),
            (
                "",
                "SCHEMA_VERSION = 1",
                "`1` → `2`",
                EQUIVALENT,
                "a new history's stamp and the upgrade check's are the same constant",
            ),
            (
                "",
                "MAX_DEPTH = 64",
                "`64` → `65`",
                EQUIVALENT,
                "a chain of added parts cut one version later reads back the same (the test of "
                "the cut follows the constant)",
            ),
            (
                "History._keep",
                "zlib.compress(stored, 6)",
                "`6` → `7`",
                EQUIVALENT,
                "another compression level decompresses to the same bytes",
            ),
            (
                "History.changes",
                "(limit * 4,)",
                "`4` → `5`",
                UNSEEN,
                "more rows read before a shared chat's own are kept: a longer list only for a "
                "chat whose changes are further back than four times the limit",
            ),
            (
                "History.undoable",
                "limit=1_000",
                "`1000` → `1001`",
                UNSEEN,
                "how far back undo looks for a change not yet taken back: past a thousand undos",
            ),
            (
                "History._at",
                "limit=100_000",
                "`100000` → `100001`",
                UNSEEN,
                "how far back a restore by time looks: a file's hundred-thousandth version",
            ),
            (
                "History._put",
                "raise ToolError(",
                "`raise ToolError(f'{change.path} changed after #{change.id}; ` removed",
                UNSEEN,
                "reached only when the hand edit found just before could not be recorded (a "
                "database error): the edit is then the newest change and undo takes it back",
            ),
            (
                "_make_folders",
                "fsync_folder(made.parent)",
                "`fsync_folder(made.parent)` removed",
                UNSEEN,
                "a folder's entry is on disk after a power cut only with it",
            ),
            (
                "_make_folders",
                "os.chmod(made, 0o700)",
                "`os.chmod(made, 448)` removed",
                EQUIVALENT,
                "mkdir has made it 0700 already under any umask that leaves the owner's bits",
            ),
            (
                "_make_folders",
                "made.mkdir(mode=0o700, exist_ok=True)",
                "`448` → `449`",
                EQUIVALENT,
                "the chmod after it sets the mode",
            ),
            (
                "_make_folders",
                "made.mkdir(mode=0o700, exist_ok=True)",
                "`True` → `False`",
                EQUIVALENT,
                "only folders found missing a moment before are made, under the history's lock",
            ),
        )
    ),
    # The usage ledger.
    Why(
        "agent/usage/ledger.py",
        "UsageLedger.__init__",
        'self._db.execute("PRAGMA synchronous=NORMAL")',
        "`self._db.execute('PRAGMA synchronous=NORMAL')` removed",
        UNSEEN,
        "in WAL mode it decides what a power cut may lose, which no test can cause",
    ),
    Why(
        "agent/usage/ledger.py",
        "UsageLedger.__init__",
        "timeout=10",
        "`10` → `11`",
        UNSEEN,
        "how long a write waits for a lock only the checkpoint thread takes, and never long",
    ),
    Why(
        "agent/usage/ledger.py",
        "UsageLedger.close",
        "self._checkpoints.close()",
        "`self._checkpoints.close()` removed",
        UNSEEN,
        "it waits for a checkpoint still running; left alone, that thread ends on its own "
        "connection, and nothing a test can see differs",
    ),
    Why(
        "agent/usage/ledger.py",
        "",  # the module itself
        "SCHEMA_VERSION = 1",
        "`1` → `2`",
        EQUIVALENT,
        "the number a new ledger is stamped with and the upgrade check expects are the same "
        "constant: any number is as consistent",
    ),
    Why(
        "agent/usage/ledger.py",
        "_within",
        "if len(period) > 7:",
        "`7` → `8`",
        EQUIVALENT,
        "a month is seven characters and a day ten: any bar from seven to nine tells them apart",
    ),
    Why(
        "agent/approvals/gate.py",
        "Gate._request",
        "secrets.token_hex(4)",
        "`4` → `5`",
        EQUIVALENT,
        "a request's random id two characters longer is as unique, and its answer command "
        "still fits a Telegram button",
    ),
    Why(
        "agent/memory/consolidation.py",
        "Curator._asked",
        "id=token_hex(3),",
        "`3` → `4`",
        EQUIVALENT,
        "a proposal's random name two characters longer serves as well",
    ),
    Why(
        "agent/memory/consolidation.py",
        "Curator.chats",
        "if e.is_dir(follow_symlinks=False)",
        "`False` → `True`",
        EQUIVALENT,
        "a chat folder that is a link is then listed, but its logs are read through "
        "`read_visible`, which reads nothing through a link into another chat's place or out "
        "of the workspace: no call is made either way (the test of a linked folder checks it)",
    ),
    Why(
        "agent/workspace/writers.py",
        "waiting",
        "time.sleep(pause)",
        "`time.sleep(pause)` removed",
        UNSEEN,
        "a writer then asks for the lock again at once, at a core's cost, and gets it as soon",
    ),
    Why(
        "agent/workspace/writers.py",
        "_waited",
        "if time.monotonic() >= deadline:",
        "`>=` → `>`",
        EQUIVALENT,
        "a clock read exactly at the deadline, to the nanosecond, is the only difference",
    ),
    Why(
        "agent/workspace/writers.py",
        "_waited",
        "pause = min(pause * 2, 0.05)",
        "`2` → `3`",
        EQUIVALENT,
        "how fast the pauses between asking grow: the wait's bound is the deadline's",
    ),
    Why(
        "agent/memory/proposal_store.py",
        "",
        "JOURNAL = 200",
        "`200` → `201`",
        EQUIVALENT,
        "how many marks are kept is a choice; the test of the bound reads it from the module",
    ),
    Why(
        "agent/memory/replacing.py",
        "Finder.find",
        "not {str(entry)[:80]!r}",
        "`80` → `81`",
        EQUIVALENT,
        "how much of a wrongly named entry the refusal repeats: one character more says as much",
    ),
    Why(
        "agent/memory/replacing.py",
        "answered",
        "for call in range(1, ROUNDS + 1):",
        "`1` → `2`",
        EQUIVALENT,
        "the bound, `ROUNDS + 2`: the call numbered ROUNDS has no tool, so the loop ends there",
        nth=2,
    ),
)


def explained(mutant: Mutant) -> Why | None:
    return next((why for why in EXPLAINED if why.explains(mutant)), None)


# -- running -----------------------------------------------------------------------------------


def _copy_project(into: Path) -> Path:
    ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".hypothesis", "*.egg-info")
    target = into / "project"
    shutil.copytree(ROOT, target, ignore=ignore)
    return target


def _pytest(project: Path, args: list[str], timeout: float, **env: str) -> tuple[str, str]:
    """Run pytest in ``project``: "survived" (green), "killed" or "timeout", and its output."""
    # The model SDK is loaded before the first test: on a busy machine its import alone can
    # outlast the bounded wait of the test that first needs it, which a mutant did not cause.
    # One process: the line tracer sees only its own, and the bench runs mutants side by side.
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        "-p",
        "anthropic",
    ]
    cmd += args
    path = os.pathsep.join([str(project), str(project / "bench")])
    environ = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1", **env}
    try:
        done = subprocess.run(
            cmd, cwd=project, env=environ, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout", ""
    return ("survived" if done.returncode == 0 else "killed"), done.stdout


def trace(
    project: Path, modules: list[str], tests: list[str], strict: bool = True
) -> dict[str, set[str]]:
    """Run ``tests`` once, recording which tests run which lines of ``modules``. A failing
    test stops the run when ``strict`` (every mutant would seem killed)."""
    out = project / "trace.json"
    result, output = _pytest(
        project,
        ["-p", "linetrace", *tests],
        3600,
        CORVID_TRACE_FILES=os.pathsep.join(modules),
        CORVID_TRACE_OUT=str(out),
    )
    if result != "survived":
        failed = [line for line in output.splitlines() if line.startswith(("FAILED", "ERROR"))]
        said = "\n  ".join(failed or output.splitlines()[-5:] or [result])
        if strict or not out.exists():
            raise SystemExit(f"the tests fail without any mutation; fix that first:\n  {said}")
        print(f"(failing without any mutation, left as they are:\n  {said})")
    return {test: set(lines) for test, lines in json.loads(out.read_text()).items()}


def covering(mutant: Mutant, traced: dict[str, set[str]], first: tuple[str, ...] = ()) -> list[str]:
    """The tests that run the mutated lines; for a change that runs on import (a constant, a
    default), every test that runs any of the module. Those under the paths of ``first`` come
    first, in that order (the module's own tests, likeliest to fail first), then the rest in
    suite order."""
    if mutant.on_import:
        prefix = mutant.module + ":"
        found = [t for t, lines in traced.items() if any(x.startswith(prefix) for x in lines)]
    else:
        a, b = mutant.lines
        wanted = {f"{mutant.module}:{n}" for n in range(a, b + 1)}
        found = [test for test, lines in traced.items() if lines & wanted]

    def rank(test: str) -> int:
        path = test.split("::")[0]
        hits = (i for i, p in enumerate(first) if _under(path, p))
        return next(hits, len(first))

    return sorted(found, key=rank)  # stable: suite order within each path


def check(targets: tuple[Target, ...]) -> list[str]:
    """What in ``targets`` no longer matches the tree (code moved): an empty list when all do."""
    problems = []
    for target in targets:
        path = ROOT / target.module
        if not path.is_file():
            problems.append(f"{target.module}: no such module")
            continue
        scopes = set(_scopes(ast.parse(path.read_text())).values())
        problems += [f"{target.module}: no {name}" for name in target.only if name not in scopes]
        problems += [
            f"{target.module}: no test {t}" for t in target.tests if not (ROOT / t).exists()
        ]
        if not target.tests:
            problems.append(f"{target.module}: no tests named")
    return problems


@dataclass
class Outcome:
    target: Target
    results: list[tuple[Mutant, str]]
    seconds: float
    commit: str = ""  # what the tree the mutants were made in was (``_commit``)

    def counts(self) -> tuple[int, int, int]:
        """Mutants, killed, equivalent (survivors explained as such)."""
        killed = sum(r in ("killed", "timeout") for _, r in self.results)
        equivalent = sum(
            r not in ("killed", "timeout")
            and (w := explained(m)) is not None
            and w.kind == EQUIVALENT
            for m, r in self.results
        )
        return len(self.results), killed, equivalent

    def to_json(self) -> dict[str, object]:
        total, killed, equivalent = self.counts()
        survivors = [
            {
                "index": m.index,
                "line": m.line,
                "where": m.where,
                "text": m.text,
                "what": m.what,
                "result": r,
                "why": (w.kind + ": " + w.reason) if (w := explained(m)) else None,
            }
            for m, r in self.results
            if r not in ("killed", "timeout")
        ]
        return {
            "mutants": total,
            "killed": killed,
            "equivalent": equivalent,
            "seconds": round(self.seconds),
            "date": datetime.now(UTC).date().isoformat(),
            "commit": self.commit,
            "survivors": survivors,
        }


def run_target(target: Target, found: list[Mutant], projects: list[Path], jobs: int) -> Outcome:
    began = time.monotonic()
    traced = trace(projects[0], [target.module], list(target.tests))
    took = time.monotonic() - began
    print(
        f"{target.module}: traced {len(target.tests)} test path(s) in {took:.0f} s;"
        f" {len(found)} mutants, {jobs} at a time",
        flush=True,
    )
    free = list(projects)

    def run(mutant: Mutant) -> tuple[Mutant, str]:
        tests = covering(mutant, traced, target.tests)
        if not tests:
            return mutant, "not run by any test"
        project = free.pop()
        path = project / mutant.module
        original = path.read_text()
        try:
            path.write_text(mutated_source(mutant, original))
            return mutant, _pytest(project, ["-x", *tests], 3 * took + 60)[0]
        finally:
            path.write_text(original)
            free.append(project)

    results = []
    with ThreadPoolExecutor(jobs) as pool:
        for n, (mutant, result) in enumerate(pool.map(run, found), 1):
            results.append((mutant, result))
            if result not in ("killed", "timeout"):
                why = explained(mutant)
                note = f" [{why.kind}]" if why else ""
                print(f"  [{n}/{len(found)}] {result}{note}: {mutant}", flush=True)
    return Outcome(target, results, time.monotonic() - began)


def report(outcomes: list[Outcome]) -> None:
    print("\n| module | mutants | killed | equivalent | share of the rest |\n|---|---|---|---|---|")
    for o in outcomes:
        total, killed, equivalent = o.counts()
        print(
            f"| `{o.target.module}` | {total} | {killed} | {equivalent} |"
            f" {_share(killed, total - equivalent)} |"
        )
    for o in outcomes:
        survivors = [(m, r) for m, r in o.results if r not in ("killed", "timeout")]
        if survivors:
            print(f"\n{o.target.module}, survivors:")
        for m, r in survivors:
            why = explained(m)
            note = "" if r == "survived" else f" ({r})"
            said = f"\n    {why.kind}: {why.reason}" if why else "\n    NOT EXPLAINED"
            print(f"- {m}{note}{said}")
    stale = [
        w
        for w in EXPLAINED
        if any(o.target.module == w.module for o in outcomes)
        and not any(w.explains(m) for o in outcomes for m, _ in o.results)
    ]
    for why in stale:
        print(f"\nEXPLAINED matches no mutant any more: {why.module} {why.where} {why.fragment!r}")


def _share(killed: int, of: int) -> str:
    return f"{killed / of:.1%}" if of else "—"


def save(path: Path, outcomes: list[Outcome], previous: dict[str, Any] | None = None) -> None:
    """Keep each outcome in ``path``; with ``previous`` (the module's saved result, whose
    survivors alone ran again), merged into it."""
    saved = json.loads(path.read_text()) if path.exists() else {}
    for o in outcomes:
        saved[o.target.module] = o.to_json() if previous is None else merged(previous, o)
    path.write_text(json.dumps(saved, indent=1, ensure_ascii=False) + "\n")


def survivors_of(previous: dict[str, Any], found: list[Mutant]) -> list[Mutant]:
    """The mutants that survived a saved run, to run them again against the tests written
    since (killed ones stay killed: tests are only added). The module must be as it was. A
    survivor is found by its index; a file saved without indices, by line and change (two
    mutants alike on one line, of which only one survived, then make it run whole)."""
    by_index = all("index" in s for s in previous["survivors"])
    left = {
        (s.get("index", -1) if by_index else -1, s["line"], s["where"], s["text"], s["what"])
        for s in previous["survivors"]
    }
    again = [
        m for m in found if (m.index if by_index else -1, m.line, m.where, m.text, m.what) in left
    ]
    if len(again) != len(previous["survivors"]) or len(found) != previous["mutants"]:
        raise SystemExit("the module changed since its saved run: run it whole")
    return again


def merged(previous: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """A saved result whose survivors ran again: what they let through now, and the first
    run's numbers kept beside."""
    now = outcome.to_json()
    first = {k: previous.get(k) for k in ("date", "commit", "killed", "seconds")}
    return {
        **now,
        "mutants": previous["mutants"],
        "killed": previous["killed"] + now["killed"],
        "seconds": previous["seconds"] + now["seconds"],
        "first_run": previous.get("first_run", first),
    }


def summary(path: Path) -> None:
    """The table of ``bench/MUTATION.md`` (which the manual's mutation page shows), from the
    results ``--save`` kept: each module with the commit and the day it was measured on."""
    saved = json.loads(path.read_text())
    order = [t.module for t in TARGETS] + sorted(set(saved) - {t.module for t in TARGETS})
    print(
        "| module | mutants | caught | equivalent | share | run | measured on |\n"
        "|---|---|---|---|---|---|---|"
    )
    sums = [0, 0, 0, 0]
    for module in (m for m in order if m in saved):
        r = saved[module]
        total, killed, eq = r["mutants"], r["killed"], r["equivalent"]
        minutes = f"{r['seconds'] / 60:.0f} min"
        when = f"{r.get('commit', '?')}, {r['date']}"
        share = _share(killed, total - eq)
        print(f"| `{module}` | {total} | {killed} | {eq} | {share} | {minutes} | {when} |")
        for i, n in enumerate((total, killed, eq, r["seconds"])):
            sums[i] += n
    total, killed, eq, seconds = sums
    print(
        f"| all | {total} | {killed} | {eq} | {_share(killed, total - eq)} |"
        f" {seconds / 3600:.1f} h | |"
    )


def _commit() -> str:
    """The commit the tree is at, marked when the tree differs from it (the copies the
    mutants are made in are of the tree as it is)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "?"
    return (head or "?") + (" with changes" if changed else "")


def map_tests(projects: list[Path]) -> None:
    """Trace the whole suite and print, per target, the test files whose tests run its code
    (beyond importing it), with how many tests each, most first."""
    modules = [t.module for t in TARGETS]
    # The benchmarks' smoke test runs them in processes of their own, which are not traced.
    traced = trace(projects[0], modules, ["tests", "--ignore=tests/test_bench_smoke.py"], False)
    for target in TARGETS:
        inside = {
            f"{m.module}:{n}"
            for m in mutants(target)
            if not m.on_import
            for n in range(m.lines[0], m.lines[1] + 1)
        }
        files: dict[str, int] = {}
        for test, lines in traced.items():
            if lines & inside:
                path = test.split("::")[0]
                files[path] = files.get(path, 0) + 1
        ranked = sorted(files, key=lambda f: -files[f])
        print(f"{target.module}: " + " ".join(f"{f} ({files[f]})" for f in ranked))
        named = [f for f in ranked if not any(_under(f, t) for t in target.tests)]
        if named:
            print(f"  not in TARGETS: {' '.join(named)}")


def _under(path: str, test_path: str) -> bool:
    return path == test_path or path.startswith(test_path.rstrip("/") + "/")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    by_module = {t.module: t for t in TARGETS}
    parser.add_argument("--module", choices=list(by_module), action="append")
    parser.add_argument("--limit", type=int, help="a random sample of N mutants per module")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", type=Path, help="keep each module's result in this JSON file")
    parser.add_argument(
        "--summary", type=Path, help="print the table of a --save file, run nothing"
    )
    parser.add_argument("--map", action="store_true", help="which test files reach each module")
    parser.add_argument(
        "--again",
        action="store_true",
        help="run only what survived in the --save file, and count it in there",
    )
    args = parser.parse_args()
    if args.again and args.save is None:
        parser.error("--again reads and writes the --save file")
    if args.summary is not None:
        summary(args.summary)
        return 0
    targets = [by_module[m] for m in args.module] if args.module else list(TARGETS)
    problems = check(tuple(targets))
    if problems:
        raise SystemExit("TARGETS no longer matches the tree:\n  " + "\n  ".join(problems))
    commit = _commit()  # of the tree as it is copied
    with tempfile.TemporaryDirectory(prefix="corvid-mutation-") as tmp:
        projects = [_copy_project(Path(tmp) / f"w{i}") for i in range(max(1, args.jobs))]
        if args.map:
            map_tests(projects)
            return 0
        saved = json.loads(args.save.read_text()) if args.again and args.save.exists() else {}
        outcomes = []
        for target in targets:
            found = mutants(target)
            previous = saved.get(target.module)
            if previous is not None:
                found = survivors_of(previous, found)
            if args.limit is not None and len(found) > args.limit:
                sample = random.Random(args.seed).sample(found, args.limit)
                found = sorted(sample, key=lambda m: m.index)
            outcome = run_target(target, found, projects, max(1, args.jobs))
            outcome.commit = commit
            outcomes.append(outcome)
            if args.save is not None and args.limit is None:
                save(args.save, [outcome], previous)
    report(outcomes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
