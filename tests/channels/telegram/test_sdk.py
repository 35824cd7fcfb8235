"""python-telegram-bot is imported without what it would load for features Corvid does not use:
the cryptography package, for Telegram Passport (about 8 MiB of every gateway's memory),
httpx's command-line client (click, pygments), the webhook server (tornado) until a webhook
is configured, and the scheduler of PTB's job queue (APScheduler's), which Corvid never gives a
job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import importlib.util, json, sys
from channels.telegram.sdk import add_webhooks, load_ptb
load_ptb()
import httpx, telegram, telegram.ext
from telegram.ext import _updater
packages = ("cryptography", "click", "pygments", "tornado", "apscheduler.schedulers")
found = {name: importlib.util.find_spec(name) is not None for name in packages}
loaded = {name: name in sys.modules for name in found}
names = [telegram.Bot.__name__, telegram.ext.Application.__name__, httpx.AsyncClient.__name__]
built = telegram.ext.ApplicationBuilder().token("123:abc").build()
names.append(built.job_queue)
webhooks = [_updater.WEBHOOKS_AVAILABLE]
add_webhooks()
webhooks += [_updater.WEBHOOKS_AVAILABLE, _updater.WebhookServer.__name__]
import click, cryptography, pygments  # still there for whoever needs them afterwards
import apscheduler.schedulers.asyncio
later = {name: name in sys.modules for name in found}
print(json.dumps([found, loaded, names, webhooks, later]))
"""


def test_ptb_is_loaded_without_what_corvid_does_not_use_which_stays_importable():
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    found, loaded, names, webhooks, later = json.loads(done.stdout)
    # Installed here (PyJWT of the MCP SDK, uvicorn, pytest, PTB's webhooks extra): the case
    # this is about.
    assert set(found.values()) == {True}
    assert set(loaded.values()) == {False}
    assert names == ["Bot", "Application", "AsyncClient", None]  # no job queue, no scheduler
    # A webhook configured: its server is added as PTB's own import would have.
    assert webhooks == [False, True, "WebhookServer"]
    assert set(later.values()) == {True}
