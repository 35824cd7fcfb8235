"""The jobs, pairing and config pages."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml
from aiohttp import web

from channels.pairing import PairingError
from gateway.config.build import secret_keys
from gateway.config.envfile import with_env_file
from gateway.config.loader import load_config
from gateway.contract.errors import ConfigError
from gateway.contract.events import shown
from gateway.contract.ports import Secret
from gateway.infra.times import local_time
from gateway.scheduling.plan import unplanned
from gateway.web.html import esc, form, notice, page, table
from gateway.web.respond import BACKEND, GUARD, flash, html_response, see_other

CANCELLABLE = "cancellable"


def routes(app: web.Application) -> None:
    app.router.add_get("/jobs", jobs_page)
    app.router.add_post("/jobs/run", run_job)
    app.router.add_post("/jobs/cancel", cancel_job)
    app.router.add_get("/pairing", pairing_page)
    app.router.add_post("/pairing/{action:approve|deny|revoke}", pairing_action)
    app.router.add_get("/config", config_page)
    app.router.add_post("/config/reload", reload_config)


def _back(path: str, ok: str = "", problem: str = "") -> web.Response:
    return see_other(path, ok=ok, problem=problem)


# -- jobs ---------------------------------------------------------------------------------------


async def jobs_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    rows = []
    for state in backend.job_states():
        job, nxt, last = state.job, state.next_run, state.last
        tz = backend.config.tz
        when = local_time(nxt, tz) if nxt and state.problem is None else "—"
        if state.problem:
            when = f"cannot be scheduled: {state.problem}"
        elif state.finished is not None:
            when = f"none: finished {local_time(state.finished, tz)}"
        ran, error = "never", (last or {}).get("error") or ""
        if last is not None:
            ran = (
                f"{last['slot'].replace('T', ' ')}: {last['status']} (attempts {last['attempts']})"
            )
            if last["status"] == "skipped" and error:
                # Why a run was skipped is no error (nothing to check, outside active hours).
                ran, error = f"{ran}: {error}", ""
        actions = ""
        if state.finished is None:
            actions = form("/jobs/run", csrf, "Run now", {"id": job.id})
        if job.instruction and state.finished is None:  # made in chat: a reminder, a task
            actions += " " + form("/jobs/cancel", csrf, "Cancel", {"id": job.id})
        what = esc(job.describe()) + (
            f"<br><small>{esc(job.instruction)}</small>" if job.instruction else ""
        )
        rows.append(
            (
                f"<code>{esc(job.id)}</code>",
                f"<code>{esc(job.target)}</code>",
                what,
                esc(when),
                esc(ran),
                esc(error),
                actions,
            )
        )
    for job_id, why in unplanned(backend.config):
        rows.append(
            (f"<code>{esc(job_id)}</code>", "—", "—", esc(f"cannot run: {why}"), "", "", "")
        )
    body = flash(request) + table(
        ("Job", "Sends to", "Schedule", "Next run", "Last run", "Last error", ""),
        rows,
        "No scheduled jobs. The daily summary and heartbeat are set up under schedule: in "
        "config.yaml; reminders are made by asking the assistant.",
    )
    return html_response(page("Jobs", body, active="/jobs", csrf=csrf))


async def run_job(request: web.Request) -> web.StreamResponse:
    job_id = str((await request.post()).get("id", ""))
    status, error = await request.app[BACKEND].run_job(job_id)
    if status is None:
        return _back("/jobs", problem=f"There is no job {job_id!r}.")
    if status == "skipped":
        return _back("/jobs", ok=f"{job_id} had nothing to do: {error or 'skipped'}.")
    if status != "sent":
        return _back("/jobs", problem=f"{job_id}: {status}" + (f" ({error})" if error else ""))
    return _back("/jobs", ok=f"{job_id} ran and its message was sent.")


async def cancel_job(request: web.Request) -> web.StreamResponse:
    job_id = str((await request.post()).get("id", ""))
    problem = request.app[BACKEND].cancel_job(job_id)
    if problem:
        return _back("/jobs", problem=problem)
    return _back("/jobs", ok=f"Cancelled {job_id}.")


# -- pairing ------------------------------------------------------------------------------------


async def pairing_page(request: web.Request) -> web.StreamResponse:
    store, csrf = request.app[BACKEND].pairing, request.app[GUARD].csrf
    try:
        pending, approved = store.pending(), store.approved()
    except PairingError as exc:
        body = notice(f"{exc} (corvid run moves it aside when it starts)", "error")
        return html_response(page("Pairing", body, active="/pairing", csrf=csrf), 500)
    now = store.now()
    waiting = table(
        ("Code", "Channel", "Who", "Expires in", ""),
        (
            (
                f"<code>{esc(r.code)}</code>",
                esc(r.channel),
                _who(r.name, r.user_id),
                f"{max(1, round((r.expires - now) / 60))} min",
                form("/pairing/approve", csrf, "Approve", {"code": r.code})
                + " "
                + form("/pairing/deny", csrf, "Deny", {"code": r.code}),
            )
            for r in pending
        ),
        "Nobody is waiting. Someone new who writes to the bot gets a code that shows up here.",
    )
    let_in = table(
        ("Channel", "Who", ""),
        (
            (
                esc(channel),
                _who(str(info.get("name") or ""), uid),
                form("/pairing/revoke", csrf, "Revoke", {"channel": channel, "user_id": uid}),
            )
            for channel, users in sorted(approved.items())
            for uid, info in sorted(users.items())
        ),
        "Nobody has been approved by pairing (owners are in allow_from in config.yaml).",
    )
    body = f"{flash(request)}<h2>Waiting</h2>{waiting}<h2>Approved</h2>{let_in}"
    return html_response(page("Pairing", body, active="/pairing", csrf=csrf))


def _who(name: str, user_id: str) -> str:
    return (f"{esc(shown(name))} " if name else "") + f"<small>(id {esc(user_id)})</small>"


async def pairing_action(request: web.Request) -> web.StreamResponse:
    store, action = request.app[BACKEND].pairing, request.match_info["action"]
    data = await request.post()
    try:
        if action == "revoke":
            channel, uid = str(data.get("channel", "")), str(data.get("user_id", ""))
            if not store.revoke(channel, uid):
                return _back("/pairing", problem=f"{channel} user {uid} was not approved.")
            return _back("/pairing", ok=f"Revoked {channel} user {uid}.")
        code = str(data.get("code", ""))
        req = store.approve(code) if action == "approve" else store.deny(code)
    except PairingError as exc:
        return _back("/pairing", problem=str(exc))
    who = f"{shown(req.name)} (id {req.user_id})" if req.name else f"id {req.user_id}"
    if action == "deny":
        return _back("/pairing", ok=f"Denied {req.channel} user {who}.")
    return _back(
        "/pairing",
        ok=f"Approved {req.channel} user {who}: their next message will be answered, in a chat "
        "of their own that does not see your long-term memory.",
    )


# -- config -------------------------------------------------------------------------------------


def masked(value: Any) -> Any:
    """The configuration as plain data, every secret replaced by whether it is set."""
    if isinstance(value, Secret):
        return "(set, hidden)"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: masked(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): masked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return _url_masked(value)
    return value


def _url_masked(url: str) -> str:
    """An address with what may be a key in it hidden: a password, and every query value
    (``?api_key=…``; a server's address often carries its key there)."""
    parts = urlsplit(url)
    if not parts.query and parts.password is None:
        return url
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rpartition('@')[2]}"
    query = "&".join(f"{pair.partition('=')[0]}=***" for pair in parts.query.split("&") if pair)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


async def config_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    config = backend.config
    data = masked(config)
    data.pop("missing_env", None)
    for key in secret_keys(type(config)):
        node = data
        *parents, last = key.split(".")
        for part in parents:
            node = node[part]
        if node[last] is None:
            node[last] = "(not set)"
    waiting = backend.pending_restart()
    if waiting:
        check = notice("Changed in config.yaml, in effect after a restart: " + ", ".join(waiting))
    else:
        check = ""
    try:
        load_config(config.home, with_env_file(config.layout.env_file, os.environ))
        check += notice("config.yaml on disk is valid.")
    except ConfigError as exc:
        check += notice(
            f"config.yaml on disk has an error (the running process keeps the configuration "
            f"it started with): {exc}",
            "error",
        )
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    reread = form("/config/reload", csrf, "Read config.yaml again")
    body = (
        f"{flash(request)}{check}<p>{reread} applies a changed file without a restart.</p>"
        f"<p>What this process runs with (secrets are never shown). Change it in "
        f"<code>{esc(config.home / 'config.yaml')}</code>, then read it again.</p>"
        f"<pre>{esc(text)}</pre>"
        "<h2>Browsers</h2><p>Every browser signed in to this page stays signed in for "
        "two weeks. If this page was opened somewhere it should not have been, sign every "
        "browser out; if the address with the token got out, make a new token (also "
        "<code>corvid web --rotate-token</code>).</p><p>"
        '<a class="button" href="/logout/everywhere">Sign out every browser</a> '
        '<a class="button" href="/token/new">Make a new access token</a></p>'
    )
    return html_response(page("Config", body, active="/config", csrf=csrf))


async def reload_config(request: web.Request) -> web.StreamResponse:
    from gateway.services.reload import reloaded_text

    answer = request.app[BACKEND].reload()
    if not answer["ok"]:
        return _back("/config", problem=f"Not reloaded, nothing changed: {answer['error']}")
    return _back("/config", ok=reloaded_text(answer["applied"], answer["restart"]))
