"""python-telegram-bot is imported without what it would load for features Corvid never uses:
the cryptography package, for Telegram Passport (about 8 MiB of every gateway's memory), and
httpx's command-line client (click, pygments)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import importlib.util, json, sys
from channels.telegram.sdk import load_ptb
load_ptb()
import httpx, telegram, telegram.ext
packages = ("cryptography", "click", "pygments")
found = {name: importlib.util.find_spec(name) is not None for name in packages}
loaded = {name: name in sys.modules for name in found}
names = [telegram.Bot.__name__, telegram.ext.Application.__name__, httpx.AsyncClient.__name__]
import click, cryptography, pygments  # still there for whoever needs them afterwards
later = {name: name in sys.modules for name in found}
print(json.dumps([found, loaded, names, later]))
"""


def test_ptb_is_loaded_without_what_corvid_does_not_use_which_stays_importable():
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    found, loaded, names, later = json.loads(done.stdout)
    # Installed here (PyJWT of the MCP SDK, uvicorn, pytest): the case this is about.
    assert found == {"cryptography": True, "click": True, "pygments": True}
    assert loaded == {"cryptography": False, "click": False, "pygments": False}
    assert names == ["Bot", "Application", "AsyncClient"]
    assert later == {"cryptography": True, "click": True, "pygments": True}
