"""A start loads only what the configured features need before the chat platforms connect:
building the app imports no library of a feature that is off, nor of one not used yet."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.process import probe

PROBE = """
import json, sys
from pathlib import Path
import yaml
from gateway.config.home import init_home
from gateway.config.loader import parse_config

home = Path(sys.argv[1])
init_home(home, {})
raw = yaml.safe_load((home / "config.yaml").read_text())
raw["llm"]["api_key"] = "sk-test-0123456789"
raw["channels"]["telegram"].update(enabled=True, token="123:abc", allow_from=[42])
raw["web"].update(enabled=True, port=0)
raw["tools"]["web"]["enabled"] = True
raw["memory"]["embeddings"]["provider"] = sys.argv[2]
config = parse_config(raw, home=home, environ={})
from gateway.app import build_app
from gateway.channel_setup import build_channels
build_app(config, build_channels(config))
print(json.dumps(sorted(m for m in sys.modules if "." not in m)))
"""

# What the features that are off, or not used before the first message, would bring.
NOT_BEFORE_NEEDED = {
    # web_fetch's client, and the control page's server, loaded by the page's first visitor
    # (gateway/web/listener.py)
    "aiohttp",
    "anthropic",  # imported in a thread by `corvid run`, not on the way to the first poll
    "discord",  # Discord is off
    "mcp",  # no MCP server configured
    "trafilatura",  # a page's text, on web_fetch's first call
    "pypdf",
    "pywhispercpp",  # transcription is off
    "tarfile",  # the archive of a scheduled backup, made when the backup runs
}


def loaded_by_build(tmp_path: Path, provider: str) -> set[str]:
    return set(probe(PROBE, str(tmp_path / provider), provider, timeout=120))


def test_building_a_telegram_gateway_loads_no_library_it_does_not_need_yet(tmp_path):
    loaded = loaded_by_build(tmp_path, "local")
    assert loaded & NOT_BEFORE_NEEDED == set()
    assert "gateway" in loaded and "yaml" in loaded  # the probe saw the modules it loaded


def test_with_embeddings_off_numpy_is_not_loaded_either(tmp_path):
    loaded = loaded_by_build(tmp_path, "none")
    assert loaded & (NOT_BEFORE_NEEDED | {"numpy"}) == set()
