"""python-telegram-bot is imported without what it would load for features Corvid does not use:
the cryptography package, for Telegram Passport (about 8 MiB of every gateway's memory),
httpx's command-line client (click, pygments), the webhook server (tornado) until a webhook
is configured, the scheduler of PTB's job queue (APScheduler's), which Corvid never gives a
job, and httpx, which only PTB's own request class uses, until something uses it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.process import corvid_process, probe
from tests.fakes.telegram_api import FakeTelegram

PROBE = """
import importlib.util, json, sys
from channels.telegram.sdk import add_webhooks, load_application, load_ptb
load_ptb()
httpx_loaded = "httpx" in sys.modules
application_loaded = "telegram.ext" in sys.modules  # a long-polling gateway needs only the bot
load_application()
import telegram, telegram.ext
from telegram.ext import _updater
built = telegram.ext.ApplicationBuilder().token("123:abc").build()  # PTB's HTTPXRequest
import httpx  # the one PTB's request class imported as it was made
packages = ("cryptography", "click", "pygments", "tornado", "apscheduler.schedulers")
found = {name: importlib.util.find_spec(name) is not None for name in packages}
loaded = {name: name in sys.modules for name in found}
names = [telegram.Bot.__name__, telegram.ext.Application.__name__, httpx.AsyncClient.__name__]
names.append(built.job_queue)
client = type(built.bot.request._client)
names.append(client.__module__ + "." + client.__name__)
from telegram.request import _httpxrequest
names.append(_httpxrequest.httpx.AsyncClient is httpx.AsyncClient)
webhooks = [_updater.WEBHOOKS_AVAILABLE]
add_webhooks()
webhooks += [_updater.WEBHOOKS_AVAILABLE, _updater.WebhookServer.__name__]
import click, cryptography, pygments  # still there for whoever needs them afterwards
import apscheduler.schedulers.asyncio
later = {name: name in sys.modules for name in found}
print(json.dumps([found, loaded, names, webhooks, later, httpx_loaded, application_loaded]))
"""


def test_ptb_is_loaded_without_what_corvid_does_not_use_which_stays_importable():
    found, loaded, names, webhooks, later, httpx_loaded, application_loaded = probe(PROBE)
    # Installed here (PyJWT of the MCP SDK, uvicorn, pytest, PTB's webhooks extra): the case
    # this is about.
    assert set(found.values()) == {True}
    assert set(loaded.values()) == {False}
    assert names[:4] == ["Bot", "Application", "AsyncClient", None]  # no job queue or scheduler
    # httpx was not imported with PTB; PTB's own request class, made, has the real one.
    assert httpx_loaded is False
    assert application_loaded is False
    assert names[4:] == ["httpx.AsyncClient", True]
    # A webhook configured: its server is added as PTB's own import would have.
    assert webhooks == [False, True, "WebhookServer"]
    assert set(later.values()) == {True}


# Packages shaped like PTB's use of httpx, imported by ``import_with_httpx_later``.
PACKAGES = {
    # names in annotations only, as PTB 22 has them
    "annotates": "import httpx\n"
    "def client(proxy: str | httpx.Proxy | None = None) -> httpx.AsyncClient:\n"
    "    return httpx.AsyncClient()\n",
    # httpx called at import
    "calls": "import httpx\nTIMEOUT = httpx.Timeout(5.0)\n",
    # another thread asks httpx for a name while the package is imported
    "waits": "import httpx, threading\nimport sync\nsync.ready.set()\nsync.go.wait(30)\n",
    # a stand-in kept other than in an annotation: bound, subclassed, or made
    "binds": "from httpx import AsyncClient\n",
    "subclasses": "import httpx\nclass Transport(httpx.AsyncBaseTransport):\n    pass\n",
    "makes": "import httpx\nclass Client:\n    LIMITS = httpx.Limits()\n",
    # stopped by Ctrl-C in the middle of its import
    "interrupted": "import httpx\nraise KeyboardInterrupt\n",
}

LATER = """
import json, sys, threading
sys.path.insert(0, sys.argv[1])
import sync
from channels.telegram.sdk import import_with_httpx_later
seen = {}
def forget_httpx():  # each case below starts with httpx not imported
    for name in [m for m in sys.modules if m == "httpx" or m.startswith("httpx.")]:
        del sys.modules[name]
import_with_httpx_later("annotates")
seen["annotates"] = "httpx" in sys.modules
import annotates
seen["client"] = type(annotates.client()).__module__
seen["real"] = type(sys.modules["httpx"]).__name__
forget_httpx()
import_with_httpx_later("calls")
import calls, httpx
seen["calls"] = type(calls.TIMEOUT) is httpx.Timeout and calls.httpx is httpx
forget_httpx()
def other():
    sync.ready.wait(30)
    import httpx
    seen["other"] = str(httpx.URL("http://example.test/a"))
    sync.go.set()
asker = threading.Thread(target=other)
asker.start()
import_with_httpx_later("waits")
asker.join(30)
seen["after"] = type(sys.modules["httpx"]).__name__
forget_httpx()
import_with_httpx_later("binds")
import binds
seen["binds"] = binds.AsyncClient is sys.modules["httpx"].AsyncClient
forget_httpx()
import_with_httpx_later("subclasses")
import subclasses
seen["subclasses"] = issubclass(subclasses.Transport, sys.modules["httpx"].AsyncBaseTransport)
forget_httpx()
import_with_httpx_later("makes")
import makes
seen["makes"] = type(makes.Client.LIMITS) is sys.modules["httpx"].Limits
forget_httpx()
try:
    import_with_httpx_later("interrupted")
except KeyboardInterrupt:
    seen["interrupted"] = "httpx" in sys.modules
print(json.dumps(seen))
"""


def test_httpx_is_imported_when_first_used_and_at_once_when_needed_at_import(tmp_path: Path):
    for name, source in PACKAGES.items():
        (tmp_path / f"{name}.py").write_text(source)
    (tmp_path / "sync.py").write_text(
        "import threading\nready, go = threading.Event(), threading.Event()\n"
    )
    seen = probe(LATER, str(tmp_path))
    # Annotations only: no httpx until a client is made, and that client is httpx's own.
    assert seen["annotates"] is False
    assert seen["client"] == "httpx" and seen["real"] == "module"
    # A call at import cannot run on a stand-in: the package is imported again with httpx.
    assert seen["calls"] is True
    # Another thread asking during the import gets the real httpx, which stays.
    assert seen["other"] == "http://example.test/a"
    assert seen["after"] == "module"
    # A stand-in bound or subclassed at import would stay one: imported again with httpx.
    assert seen["binds"] is True and seen["subclasses"] is True and seen["makes"] is True
    # Interrupted, it leaves no stand-in behind as httpx.
    assert seen["interrupted"] is False


async def test_a_telegram_gateway_answers_without_importing_httpx(tmp_path: Path):
    api, tg = FakeAnthropic(), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp_path / "h"
    tg.write_corvid_config(home, api.base_url)
    report = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.partition('.')[0] in ('httpx', 'httpcore', 'telegram') and m.count('.') < 2))))"
    )
    try:
        async with corvid_process(home, {"TELEGRAM_BOT_TOKEN": tg.token}, prelude=report) as run:
            tg.text("hello")
            assert (await tg.wait_sent(1, timeout=30))[0]["shown"] == "echo: hello"
            assert await run.stop() == 0
            assert run.proc.stdout is not None
            out = await asyncio.wait_for(run.proc.stdout.read(), 30)
    finally:
        await tg.close()
        await api.close()
    loaded = json.loads(out.decode().strip().splitlines()[-1])
    # A long-polling gateway runs on PTB's bot alone: its application framework stays out.
    assert "telegram.request" in loaded and "telegram.ext" not in loaded
    assert not [m for m in loaded if m.startswith(("httpx", "httpcore"))]
