"""python-telegram-bot, imported without what it would load for features Corvid does not use.

PTB imports ``cryptography`` when it is installed, only to decrypt Telegram Passport data, which
Corvid never receives (other packages install it: the MCP SDK, through PyJWT); that import alone
costs every Telegram gateway about 8 MiB of memory. PTB imports httpx, which loads its own
command-line client whenever ``click``, ``pygments`` and ``rich`` are installed (other packages
bring them: uvicorn, pytest): 1.5 MiB and 9 ms of a start. And PTB's updater imports its webhook
server (tornado) whether or not a webhook is used: 3.4 MiB and 12 ms of every start that
long-polls. PTB's job queue imports APScheduler's asyncio scheduler and executor when
APScheduler is installed (Corvid installs it for its own scheduler, which only uses its
triggers), and every application built then makes and starts a scheduler of its own: Corvid
never gives PTB a job, and the import was 60 ms of a start on the way to the first poll. So PTB
is imported here as if those were absent, and PTB and httpx behave exactly as their default
installs do; a webhook, when configured, gets its server then (``add_webhooks``). Anything that
imports these packages afterwards gets them as usual.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

# The packages (or the parts of one) PTB's import would load for what Corvid does not use (or
# not yet), and what for.
UNUSED = {
    "cryptography": "Telegram Passport",
    "click": "httpx's command-line client",
    "pygments": "httpx's command-line client",
    "rich": "httpx's command-line client",
    "tornado": "webhooks, added when one is configured",
    "apscheduler.schedulers": "PTB's job queue",
    "apscheduler.executors": "PTB's job queue",
}


class _NotUsed(MetaPathFinder):
    def __init__(self, packages: frozenset[str]) -> None:
        self.packages = packages

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        for package in self.packages:
            if fullname == package or fullname.startswith(package + "."):
                raise ImportError(f"not imported for python-telegram-bot ({UNUSED[package]})")
        return None


def load_ptb(*, webhooks: bool = False) -> None:
    """Import python-telegram-bot once, before any other use of it; ``webhooks``: with the
    webhook server (``add_webhooks`` adds it later to a PTB loaded without)."""
    if "telegram.ext" not in sys.modules:
        # One already loaded by something else is paid for: PTB gets it as usual.
        finder = _NotUsed(frozenset(p for p in UNUSED if p not in sys.modules))
        sys.meta_path.insert(0, finder)
        try:
            importlib.import_module("telegram.ext")
        finally:
            sys.meta_path.remove(finder)
    if webhooks:
        add_webhooks()


def add_webhooks() -> None:
    """What PTB's updater does at import when its webhook server can be imported, for a PTB
    loaded without it: import the server and say it is there."""
    from telegram.ext import _updater

    if not _updater.WEBHOOKS_AVAILABLE:
        from telegram.ext._utils.webhookhandler import WebhookAppClass, WebhookServer

        _updater.WebhookAppClass = WebhookAppClass  # type: ignore[attr-defined]
        _updater.WebhookServer = WebhookServer  # type: ignore[attr-defined]
        _updater.WEBHOOKS_AVAILABLE = True
