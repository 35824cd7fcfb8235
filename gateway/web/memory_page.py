"""The memory page: the workspace's Markdown files, rendered, searchable and editable."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import date
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from aiohttp import web

from agent.loops.store import LOOPS
from agent.tools.context import TurnContext
from agent.tools.files import MAX_WRITE_CHARS, atomic_write
from agent.tools.paths import check_writable, resolve_in_workspace
from agent.workspace.audience import BOOTSTRAP_FILES, forget_written, writable
from agent.workspace.changes import Author, authored
from agent.workspace.writers import held
from gateway.chat_names import read_titles
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER, WEB_OWNER
from gateway.services.index_status import index_line
from gateway.web import loops_page, memory_lists, proposals_page
from gateway.web.backend import Backend
from gateway.web.html import esc, markdown, notice, page
from gateway.web.memory_search import found as search_results
from gateway.web.people import guests
from gateway.web.respond import BACKEND, GUARD, flash, html_response, see_other

# The page acts as a private session of the owner, with the file tools' rules.
EDITOR = Author("the owner", "the control page's editor")
FIRST = ("MEMORY.md", "USER.md", "SOUL.md")


def routes(app: web.Application) -> None:
    app.router.add_get("/memory", memory_index)
    app.router.add_get("/memory/file", view_file)
    app.router.add_get("/memory/edit", edit_form)
    app.router.add_post("/memory/edit", save)


def _ctx(backend: Backend) -> TurnContext:
    cfg = backend.config
    return TurnContext(WEB_OWNER, backend.workspace, backend.clock.now(), cfg.tz)


# An edit names the version it started from: if the file changed meanwhile, nothing is written
# and the page comes back with the person's text beside the current file.
def version(data: bytes | None) -> str:
    """What the editor started from: a digest of the file, or "new" for a missing one."""
    return "new" if data is None else hashlib.sha256(data).hexdigest()


def _link(rel: str, action: str = "file") -> str:
    return f"/memory/{action}?path={quote(rel)}"


def listed(workspace: Path) -> tuple[list[str], list[str], list[str]]:
    """The Markdown files (the important top-level ones first, then the notes kept beside
    the logs), the owner's daily logs and the shared chats' (newest first). Only a dated file
    is a day's log; LOOPS.md, with a section of its own, is not listed."""
    top = sorted(p.name for p in workspace.glob("*.md") if p.is_file() and p.name[0] != ".")
    for name in (*FIRST, *BOOTSTRAP_FILES):
        if name not in top:
            top.append(name)  # listed even before it exists: the editor can create it
    order = {name: i for i, name in enumerate((*FIRST, *BOOTSTRAP_FILES))}
    top.sort(key=lambda n: (order.get(n, len(order)), n))
    memory = workspace / "memory"
    found = [*memory.glob("*.md"), *(memory / "chats").glob("*/*.md")]
    rels = [p.relative_to(workspace).as_posix() for p in found if p.name[0] != "."]
    days = [r for r in rels if _dated(r)]
    logs = sorted((r for r in days if r.count("/") == 1), reverse=True)
    chats = sorted(
        (r for r in days if r.count("/") > 1),
        key=lambda rel: (PurePosixPath(rel).name, rel),
        reverse=True,
    )
    notes = sorted(r for r in rels if not _dated(r) and PurePosixPath(r).name != LOOPS)
    return top + notes, logs, chats


def _dated(rel: str) -> bool:
    """Whether ``rel`` is a day's log: named for its date, as the memory tools write them."""
    try:
        date.fromisoformat(PurePosixPath(rel).stem)
    except ValueError:
        return False
    return len(PurePosixPath(rel).stem) == len("2026-01-31")


async def memory_index(request: web.Request) -> web.StreamResponse:
    backend = request.app[BACKEND]
    query = request.query.get("q", "").strip()
    found = await search_results(backend, query) if query else ""
    top, logs, chats = listed(backend.workspace)
    ws, tz = backend.workspace, backend.config.tz
    known, titles = guests(backend.pairing), read_titles(backend.config.layout.chat_names)
    body = (
        '<form method="get" action="/memory" role="search"><input name="q" type="search" '
        f'value="{esc(query)}" placeholder="Search memory and logs" aria-label="Search">'
        f"<button>Search</button></form>{flash(request)}{found}"
        f"<p>{esc(index_line(backend.memory_search()))}</p>"
        f"{proposals_page.section(backend.curator, request.app[GUARD].csrf)}"
        f"{loops_page.section(backend, request.app[GUARD].csrf)}"
        f"<h2>Files</h2>{memory_lists.files_table(ws, top, tz)}"
        f"<h2>Your daily logs</h2>{memory_lists.logs_table(ws, logs, tz)}"
        "<h2>Shared chats' logs</h2>"
        f"{memory_lists.chats_table(ws, chats, tz, known, titles)}"
        '<p><a href="/memory/history">Every change to the workspace</a>, newest first, with '
        "who made it; undo one with its Restore button.</p>"
    )
    return html_response(page("Memory", body, active="/memory", csrf=request.app[GUARD].csrf))


def _resolve(backend: Backend, raw: str) -> tuple[TurnContext, Path, str]:
    """The file at ``raw`` as the file tools see it; a 404 page for anything they refuse."""
    ctx = _ctx(backend)
    try:
        path = resolve_in_workspace(ctx, raw)
    except ToolError as exc:
        raise web.HTTPNotFound(text=f"{exc}\n") from None
    if path.suffix.lower() != ".md" or path.is_dir():
        raise web.HTTPNotFound(text="Only Markdown files (.md) are shown here.\n")
    if path.exists() and not path.is_file():  # a FIFO or a device would block on open
        raise web.HTTPNotFound(text="That is not a regular file.\n")
    return ctx, path, path.relative_to(ctx.workspace).as_posix()


def content(path: Path) -> tuple[str, str]:
    """The file's text ("" when it does not exist yet) and its version, from one read; a 415
    page for what the editor cannot show as it is (too large, or not UTF-8: saving it would
    change bytes nobody edited)."""
    try:
        if path.stat().st_size > MAX_WRITE_CHARS:
            raise web.HTTPUnsupportedMediaType(text="That file is too large to show here.\n")
        data = path.read_bytes()
    except FileNotFoundError:
        return "", version(None)
    try:
        return data.decode("utf-8"), version(data)
    except UnicodeDecodeError:
        raise web.HTTPUnsupportedMediaType(
            text="That file is not UTF-8 text; open it in a text editor instead.\n"
        ) from None


async def rendered(text: str) -> str:
    """Markdown as HTML, off the event loop when it is long."""
    return markdown(text) if len(text) < 20_000 else await asyncio.to_thread(markdown, text)


async def view_file(request: web.Request) -> web.StreamResponse:
    backend = request.app[BACKEND]
    _, path, rel = _resolve(backend, request.query.get("path", ""))
    text, _ = content(path)
    saved = flash(request)
    can_edit = writable(OWNER, PurePosixPath(rel))
    edit = f'<a class="button" href="{_link(rel, "edit")}">Edit</a> ' if can_edit else ""
    actions = f'<p>{edit}<a href="{_link(rel, "history")}">History</a></p>'
    shown = await rendered(text) if text.strip() else '<p class="empty">This file is empty.</p>'
    body = f'{saved}{actions}<article class="markdown">{shown}</article>'
    return html_response(page(rel, body, active="/memory", csrf=request.app[GUARD].csrf))


def _editor(rel: str, text: str, ver: str, csrf: str) -> str:
    return (
        f'<form method="post" action="/memory/edit" class="editor">'
        f'<input type="hidden" name="path" value="{esc(rel)}">'
        f'<input type="hidden" name="version" value="{esc(ver)}">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<textarea name="text" rows="24" spellcheck="true" aria-label="{esc(rel)}">'
        f"{esc(text)}</textarea>"
        f'<p><button>Save</button> <a href="{_link(rel)}">Cancel</a></p></form>'
    )


async def edit_form(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    ctx, path, rel = _resolve(backend, request.query.get("path", ""))
    try:
        check_writable(ctx, path)
    except ToolError as exc:
        return html_response(page(rel, notice(str(exc), "error"), csrf=csrf), 403)
    text, ver = content(path)
    body = _editor(rel, text, ver, csrf)
    return html_response(page(f"Edit {rel}", body, active="/memory", csrf=csrf))


async def save(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    form = await request.post()
    raw, text, started = (str(form.get(k, "")) for k in ("path", "text", "version"))
    ctx, path, rel = _resolve(backend, raw)
    text = text.replace("\r\n", "\n")
    try:
        check_writable(ctx, path)
        if len(text) > MAX_WRITE_CHARS:
            raise ToolError(f"That is over {MAX_WRITE_CHARS:,} characters; nothing was saved.")
    except ToolError as exc:
        body = notice(str(exc), "error") + _editor(rel, text, started, csrf)
        return html_response(page(f"Edit {rel}", body, csrf=csrf), 403)
    # Checked and written with no await between, and holding the workspace's files as every
    # writer does: nothing else writes meanwhile, here or in another thread or process. What
    # the editor could not have shown (415), it does not overwrite either.
    try:
        with held(ctx.workspace):
            now, current = content(path)
            if current == started:
                with authored(EDITOR):
                    atomic_write(path, text, history=backend.history)
    except ToolError as exc:  # another writer kept the files too long: the text stays here
        body = notice(str(exc), "error") + _editor(rel, text, started, csrf)
        return html_response(page(f"Edit {rel}", body, csrf=csrf), 503)
    if current != started:
        return await _stale(rel, now, text, current, csrf)
    # The owner saved it whole, as read: no longer text written after reading from outside.
    forget_written(ctx.workspace, rel)
    backend.edited(ctx.now)
    return see_other(_link(rel), ok="Saved.")


async def _stale(rel: str, now: str, text: str, current: str, csrf: str) -> web.Response:
    body = (
        notice(
            f"{rel} changed after you opened it (the assistant or someone else wrote to it), so "
            "nothing was saved. Your text is still in the editor; the file as it is now is "
            "below. Bring over what you need, then save again.",
            "error",
        )
        + _editor(rel, text, current, csrf)
        + f'<h2>{esc(rel)} now</h2><article class="markdown">{await rendered(now)}</article>'
    )
    return html_response(page(f"Edit {rel}", body, active="/memory", csrf=csrf), 409)
