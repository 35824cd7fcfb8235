"""The tools a configuration gives the agent beyond its own, and the memory with its search."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agent.memory.hits import Searcher
from agent.memory.migrate import migrate_shared_entries
from agent.memory.proposal_store import Store
from agent.memory.store import Memory
from agent.model.port import LLM
from agent.tools.registry import Tool, ToolSource
from agent.workspace.history import History
from gateway.config.home import mend_workspace
from gateway.config.layout import Layout
from gateway.config.loader import Config
from gateway.contract.ports import Clock
from gateway.statefiles import opened

if TYPE_CHECKING:
    from agent.approvals.audit import AuditLog
    from agent.mcp.hub import McpHub
    from agent.memory.index import MemoryIndex
    from agent.memory.semantic import SemanticIndex

log = logging.getLogger(__name__)


def open_memory(
    config: Config,
    resources: contextlib.AsyncExitStack,
    clock: Clock,
    embedded: Callable[[str, int], None] | None = None,
) -> Memory:
    """The workspace's memory, its index, and its vectors embedding in the background when
    ``memory.embeddings`` has a provider; closed with ``resources``."""
    workspace = config.workspace.resolve()
    index = memory_index(config)
    resources.callback(index.close)
    migrate_shared_entries(workspace)
    for name in mend_workspace(workspace):
        log.info("corrected a sentence of an earlier template in %s", name)

    def today() -> date:
        return clock.now().astimezone(config.tz).date()

    lost = "the earlier versions of the workspace's files are in the old copy: no change made "
    lost += "before now can be undone"
    path = config.layout.history
    history = opened(path, lambda: History(workspace, path, config.tz), lost)
    resources.callback(history.close)
    if found := history.look():
        log.info("%d workspace file(s) changed by hand since last recorded", found)
    # Only now the embedding thread: its catch-up reads the history to date lines, and two
    # threads making a new history at once find it locked.
    search, vectors = memory_search(config, index, today, embedded)
    if vectors is not None:
        resources.callback(vectors.close)
        vectors.start(prepare=index.sync)
    return Memory(
        workspace,
        index,
        config.memory,
        search=search,
        vectors=vectors,
        history=history,
        proposals=Store(config.layout.proposals),
    )


def memory_index(config: Config) -> MemoryIndex:
    """The memory's search index over the workspace, cut as configured."""
    from agent.memory.dates import HistoryDates
    from agent.memory.index import MemoryIndex

    m = config.memory
    workspace = config.workspace.resolve()
    return MemoryIndex(
        config.layout.index,
        workspace,
        chunk_size=m.chunk_lines,
        overlap=m.chunk_overlap_lines,
        dates=HistoryDates(workspace, config.layout.history, config.tz),
    )


def memory_search(
    config: Config,
    index: MemoryIndex,
    today: Callable[[], date] | None = None,
    embedded: Callable[[str, int], None] | None = None,
) -> tuple[Searcher, SemanticIndex | None]:
    """How memory is searched: by keywords alone (provider ``none``), or hybrid, with the
    vectors (not started: ``corvid run`` embeds in the background, the command line in the
    foreground) listening to the index. Either way through the same ranking (dates in the
    query, newer notes above the ones they replace)."""
    from agent.memory.hybrid import HybridSearch

    tz = config.tz
    when = today or (lambda: datetime.now(tz).date())
    if config.memory.embeddings.provider == "none":
        # Nothing of the vectors is imported: not even NumPy.
        return HybridSearch(index, None, config.memory.search, when), None
    from agent.memory.embedding.threads import load_numpy_on_one_thread

    load_numpy_on_one_thread()
    from agent.memory.embedding.factory import build_embedder

    embedder = build_embedder(config.memory.embeddings, Layout(config.home).models)
    if embedder is None:
        return HybridSearch(index, None, config.memory.search, when), None
    if embedded is not None and hasattr(embedder, "on_usage"):  # a paid service's
        embedder.on_usage = embedded
    from agent.memory.semantic import SemanticIndex

    vectors = SemanticIndex(embedder, config.layout.embeddings, config.memory.embeddings.batch_size)
    index.listen(vectors)
    return HybridSearch(index, vectors, config.memory.search, when), vectors


def mcp_hub(config: Config, resources: contextlib.AsyncExitStack) -> McpHub | None:
    """The configured MCP servers (started by ``App.start``), or None when there are none."""
    if not config.mcp.servers:
        return None
    from agent.mcp.hub import McpHub

    hub = McpHub(config.mcp.servers, config.layout.mcp)
    resources.push_async_callback(hub.close)
    return hub


def web_tools(config: Config) -> tuple[Tool, ...]:
    """web_fetch and web_search, as configured; private chats only unless tools.web.shared."""
    web = config.tools.web
    tools: list[Tool] = []
    if web.enabled:
        from agent.web.tool import web_tools

        tools += web_tools()
    if web.search.provider not in ("", "anthropic"):  # the API's own: _server_search
        from agent.web.search import provider_from, search_tools

        provider = provider_from(web.search)
        assert provider is not None
        tools += search_tools(provider, web.search.max_results)
    return tuple(replace(t, private_only=not web.shared) for t in tools)


def server_search(config: Config, model: LLM) -> ToolSource | None:
    """The API's own web search, offered once the API says it takes it."""
    search = config.tools.web.search
    if search.provider != "anthropic":
        return None
    from agent.web.search import OfferedOnceAccepted, server_search_tool

    tool = replace(server_search_tool(search.max_uses), private_only=not config.tools.web.shared)
    return OfferedOnceAccepted([tool], model.accepts_tools)


def open_audit(path: Path) -> AuditLog:
    """The audit trail; a damaged one is moved aside and a new one begun."""
    from agent.approvals.audit import AuditLog

    lost = "the trail of approvals and commands so far, and the tools allowed always, are in "
    lost += "the old copy: each of those tools asks again"
    return opened(path, lambda: AuditLog(path), lost)


def exec_tools(config: Config, audit: AuditLog) -> tuple[Tool, ...]:
    """``exec`` when ``tools.exec`` is on and bubblewrap can box it; never unboxed."""
    if not config.tools.exec.enabled:
        return ()
    from agent.sandbox.bwrap import Sandbox
    from agent.sandbox.tool import exec_tool

    sandbox = Sandbox(config.tools.exec, config.workspace)
    problem = sandbox.problem()
    if problem is not None:
        fix = exec_fix(sandbox.problem_kind())
        log.warning("exec is on in config.yaml but not offered: %s; %s", problem, fix)
        return ()
    return (exec_tool(sandbox, audit),)


def exec_fix(kind: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """What to do when the exec box cannot start, for where Corvid runs (``INVOCATION_ID``:
    systemd started it)."""
    from agent.sandbox.bwrap import AS_ROOT, MISSING

    off = "or set tools.exec.enabled: false"
    if kind == MISSING:
        return f"install bubblewrap, {off}"
    if kind == AS_ROOT:
        return f"run Corvid as an ordinary user, {off}"
    kernel = (
        "the kernel may refuse an ordinary user the namespaces bubblewrap makes "
        "(kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns)"
    )
    if environ.get("INVOCATION_ID"):
        return (
            "Corvid runs under systemd: the service's sandbox refuses bubblewrap the namespaces "
            "and mounts it needs unless deploy/corvid.service.d/exec.conf is installed as "
            "/etc/systemd/system/corvid.service.d/exec.conf (then `systemctl daemon-reload` and "
            f"`systemctl restart corvid`); with it installed, {kernel}; {off}"
        )
    return (
        f"{kernel}, and so may a container's seccomp profile; "
        f"`bwrap --unshare-all --ro-bind / / true` as Corvid's user shows it; {off}"
    )
