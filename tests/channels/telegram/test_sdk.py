"""python-telegram-bot is imported without the cryptography package it would load for Telegram
Passport, which Corvid never receives (about 8 MiB of every gateway's memory)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import importlib.util, sys
from channels.telegram.sdk import load_ptb
load_ptb()
import telegram, telegram.ext
print(importlib.util.find_spec("cryptography") is not None, "cryptography" in sys.modules,
      telegram.Bot.__name__, telegram.ext.Application.__name__)
import cryptography  # still there for whoever needs it afterwards
print("cryptography" in sys.modules)
"""


def test_ptb_is_loaded_without_cryptography_which_stays_importable():
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    installed, loaded, bot, app, later = done.stdout.split()
    assert installed == "True"  # the MCP SDK's PyJWT brings it: the case this is about
    assert (loaded, bot, app, later) == ("False", "Bot", "Application", "True")
