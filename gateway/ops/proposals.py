"""``corvid memory proposals|apply|reject``: consolidation's proposals, from the terminal."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from agent.memory.consolidation import Curator
from agent.memory.proposal_store import Store
from agent.memory.store import Memory
from agent.workspace.history import History
from gateway.contract.errors import ToolError
from gateway.contract.events import printable
from gateway.ops.home import prepare
from gateway.runtime.proposal_answers import rejected_text

TERMINAL = "the owner, in the terminal"


@contextmanager
def _curator(home: Path, environ: Mapping[str, str]) -> Iterator[Curator]:
    from gateway.tool_setup import memory_index

    config = prepare(home, environ)
    index = memory_index(config)
    history = History(config.workspace, config.layout.history, config.tz)
    store = Store(config.layout.proposals)
    memory = Memory(
        config.workspace.resolve(), index, config.memory, history=history, proposals=store
    )
    try:
        yield Curator(memory, store)
    finally:
        history.close()
        index.close()


def memory_proposals(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    with _curator(home, environ) as curator:
        pending = curator.pending()
        if not pending:
            print("No memory proposal is waiting.")
            return 0
        for proposal in pending:
            print(printable(proposal.summary()))
            print()
            print(printable(curator.preview(proposal)), end="")
            print(f"\nApply: corvid memory apply {proposal.id} [N ...]; "
                  f"reject: corvid memory reject {proposal.id}\n")  # fmt: skip
    return 0


def memory_apply(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    with _curator(home, environ) as curator:
        try:
            done = curator.apply(args.id, TERMINAL, args.numbers or None)
        except ToolError as exc:
            print(f"corvid: {exc}")
            return 1
    left = done.proposal.pending()
    if left:
        print(f"{done.said()} Still waiting: {', '.join(map(str, left))}.")
    else:
        print(done.closing())
    return 0 if done.done else 1


def memory_reject(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    with _curator(home, environ) as curator:
        try:
            rejected = curator.reject(args.id, TERMINAL)
        except ToolError as exc:
            print(f"corvid: {exc}")
            return 1
    print(rejected_text(rejected))
    return 0
