"""``corvid doctor``: checks an installation and says, for each problem, how to fix it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from gateway.config.build import ENV_REF, secret_keys
from gateway.config.loader import Config
from gateway.contract.ports import Check, Status
from gateway.ops.doctor.memory_search import check_memory_search
from gateway.ops.doctor.offline import channel_setup, local_checks, lookup, read_raw
from gateway.ops.doctor.probes import (
    check_channel,
    check_mcp,
    check_model,
    check_search,
    key_source,
    preload,
)
from gateway.ops.doctor.safety import check_exec, check_links, check_skills
from gateway.ops.doctor.schedule import check_jobs
from gateway.ops.doctor.services import check_gateway, check_transcription, check_web
from gateway.services.logs import Masker

OK, WARN, FAIL = Status.OK, Status.WARN, Status.FAIL

__all__ = ["FAIL", "OK", "WARN", "Check", "doctor", "exit_status", "render", "run_checks"]

DEFAULT_TIMEOUT = 10.0


def doctor(
    home: Path,
    environ: Mapping[str, str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    alive_only: bool = False,
    out: TextIO | None = None,
) -> int:
    """Run the checks, print one line each, and return the exit status (1 if any FAIL)."""
    from gateway.services.logs import setup_logging

    out = out or sys.stdout
    secrets = secret_values(home, environ)
    # Library warnings would interleave with the report; errors still show, masked.
    setup_logging("ERROR", secrets)
    if alive_only:
        checks = [asyncio.run(check_gateway(home, timeout, required=True))]
    else:
        print(f"Checking Corvid in {home}", file=out)
        checks = asyncio.run(run_checks(home, environ, limit=timeout))
    print(render(checks, secrets), file=out)
    return exit_status(checks)


def exit_status(checks: Sequence[Check]) -> int:
    return 1 if any(c.status == FAIL for c in checks) else 0


async def run_checks(
    home: Path, environ: Mapping[str, str], *, limit: float = DEFAULT_TIMEOUT
) -> list[Check]:
    """Every check, in the order they are printed; ``limit`` bounds each network check."""
    checks, config, raw = local_checks(home, environ)
    if config is None:
        if checks[0].name == "home" and checks[0].status == FAIL:
            return checks
        checks.append(await check_gateway(home, limit))
        return checks
    preload(config)  # slow imports, before any network check starts its clock
    network: list[Awaitable[Check]] = [_guarded("anthropic", check_model(config, raw, limit))]
    for name in config.channels.enabled():
        network.append(_guarded(name, check_channel(config, raw, name, limit)))
    if config.tools.web.search.provider:
        network.append(_guarded("web search", check_search(config, limit)))
    servers = list(config.mcp.servers)
    network += [_guarded(f"mcp {name}", check_mcp(config, name, limit)) for name in servers]
    if config.transcription.enabled:
        source = key_source(raw, "transcription.api_key")
        network.append(_guarded("transcription", check_transcription(config, source, limit)))
    network.append(_guarded("gateway", check_gateway(home, limit)))
    *platforms, gateway = await asyncio.gather(*network)
    checks.extend(platforms)
    checks.extend(channel_setup(config))
    checks.extend(check_exec(config, environ))
    checks.extend(check_skills(config))
    checks.extend(check_links(config.workspace))
    checks.append(await _guarded("control page", check_web(config, limit)))
    checks.append(await _guarded("memory search", check_memory_search(config, limit)))
    try:
        checks.append(check_jobs(config))
    except Exception as exc:
        checks.append(_crashed("jobs", exc))
    checks.append(gateway)
    return checks


async def _guarded(name: str, check: Awaitable[Check]) -> Check:
    """One check's unforeseen error is its own FAIL line, not the end of the report."""
    try:
        return await check
    except Exception as exc:
        return _crashed(name, exc)


def _crashed(name: str, exc: Exception) -> Check:
    return Check(
        FAIL,
        name,
        f"the check itself failed: {type(exc).__name__}: {exc}",
        "please report this, with the line above",
    )


def render(checks: Sequence[Check], secrets: Sequence[str] = ()) -> str:
    """The report, with every secret value masked (a last line of defence: no check puts a
    secret in its message on purpose)."""
    lines = [line for check in checks for line in check.lines()]
    fails = sum(c.status == FAIL for c in checks)
    warns = sum(c.status == WARN for c in checks)
    if fails:
        lines.append(f"{fails} problem(s) to fix, {warns} warning(s).")
    elif warns:
        lines.append(f"No problems; {warns} warning(s).")
    else:
        lines.append("All checks passed.")
    return Masker(secrets, min_len=4)("\n".join(lines))


def secret_values(home: Path, environ: Mapping[str, str]) -> list[str]:
    """Every secret the configuration holds or refers to, valid configuration or not."""
    raw = read_raw(home)
    values: list[str] = []
    for key in secret_keys(Config, raw=raw):
        value = lookup(raw, key)
        if value is None or isinstance(value, dict | list):
            continue
        values.append(ENV_REF.sub(lambda m: environ.get(m[1], ""), str(value)))
    return [v for v in values if v]
