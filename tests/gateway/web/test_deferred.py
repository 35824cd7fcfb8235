"""aiohttp's web server without its HTTP client (``gateway/web/deferred.py``): a package whose
``__init__`` runs when a name it binds is first asked for."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import yaml

from gateway.web.deferred import defer_init
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.process import API_KEY
from tests.fakes.telegram_api import FakeTelegram

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def package(tmp_path: Path) -> Iterator[str]:
    """A package like aiohttp: its ``__init__`` imports a heavy module and binds its names, a
    ``server`` module imports a shared one and the version. Each run of the ``__init__`` adds
    a line to ``runs``."""
    name = f"deferred_pkg_{os.getpid()}_{id(tmp_path)}"
    root = tmp_path / name
    root.mkdir()
    runs = tmp_path / "runs"
    (root / "__init__.py").write_text(
        textwrap.dedent(f"""\
            __version__ = "1.2.3"
            with open({str(runs)!r}, "a") as f:
                f.write("ran\\n")
            from . import shared
            from .heavy import Client
            BOUND = "by the __init__"
            def __getattr__(name):
                if name == "late":
                    return "from the __init__'s own __getattr__"
                raise AttributeError(name)
            """)
    )
    (root / "heavy.py").write_text("class Client:\n    pass\n")
    (root / "shared.py").write_text("HEADER = 'x'\n")
    (root / "server.py").write_text(
        "from . import __version__, shared\nSOFTWARE = 'pkg/' + __version__ + shared.HEADER\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        yield name
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def _runs(package: str) -> int:
    pkg = sys.modules[package]
    runs = Path(pkg.__path__[0]).parent / "runs"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def test_a_submodule_imports_without_the_init_which_runs_at_the_first_name_it_binds(package):
    assert defer_init(package) is not None
    server = __import__(f"{package}.server", fromlist=["SOFTWARE"])
    assert server.SOFTWARE == "pkg/1.2.3x"  # the version read from the __init__'s source
    assert f"{package}.heavy" not in sys.modules
    assert _runs(package) == 0

    pkg = sys.modules[package]
    assert pkg.Client is sys.modules[f"{package}.heavy"].Client  # the real one, now imported
    assert _runs(package) == 1
    assert pkg.BOUND == "by the __init__" and pkg.server is server
    assert pkg.late == "from the __init__'s own __getattr__"
    with pytest.raises(AttributeError):
        _ = pkg.missing
    assert _runs(package) == 1


def test_from_import_of_a_name_runs_the_init_once_across_threads(package):
    defer_init(package)
    got: list[object] = []
    barrier = threading.Barrier(4)

    def ask() -> None:
        barrier.wait(timeout=10)
        module = __import__(package, fromlist=["Client"])
        got.append(module.Client)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert len(got) == 4 and len(set(got)) == 1
    assert _runs(package) == 1


def test_a_package_already_loaded_is_left_as_it_is(package):
    module = __import__(package)
    assert _runs(package) == 1
    assert defer_init(package) is None
    assert sys.modules[package] is module
    assert defer_init("json") is None  # loaded too
    assert defer_init("no_such_package_here") is None


def test_an_init_that_fails_fails_the_name_asked_and_the_next_import_starts_over(package):
    pkg = defer_init(package)
    assert pkg is not None
    init = Path(pkg.__path__[0]) / "__init__.py"
    good = init.read_text()
    init.write_text(good + "raise RuntimeError('broken install')\n")
    with pytest.raises(RuntimeError, match="broken install"):
        _ = pkg.Client
    assert package not in sys.modules
    init.write_text(good)
    sys.modules.pop(f"{package}.heavy", None)
    assert __import__(package).BOUND == "by the __init__"


# Run in a fresh interpreter: this one has aiohttp whole (the fakes use it).
_AIOHTTP = """
import asyncio, json, sys
from gateway.web.deferred import import_server
server = import_server()
before = sorted(m for m in sys.modules if m.startswith("aiohttp"))

async def main():
    from aiohttp import web
    app = web.Application()
    app.router.add_get("/", lambda request: web.Response(text="served"))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    import aiohttp
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}/") as response:
            text = await response.text()
    await runner.cleanup()
    from aiohttp import TCPConnector
    return {"before": before, "server": server.__name__, "text": text,
            "session": aiohttp.ClientSession.__module__,
            "connector": TCPConnector is sys.modules["aiohttp.connector"].TCPConnector}

print(json.dumps(asyncio.run(main())))
"""


async def test_aiohttp_serves_without_its_client_and_the_client_works_when_asked_for():
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _AIOHTTP, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    got = json.loads(out)
    assert got["server"] == "gateway.web.server"
    assert "aiohttp.web" in got["before"]
    for client in ("aiohttp.client", "aiohttp.connector", "aiohttp.cookiejar", "aiohttp.tracing"):
        assert client not in got["before"]
    assert got["text"] == "served"
    assert got["session"] == "aiohttp.client" and got["connector"] is True


# ``corvid run`` as a process, saying on its way out which of aiohttp it had loaded.
_RUN = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(
    m for m in sys.modules if "aiohttp" in m or m.startswith("frozenlist")))))
from gateway.ops.cli import main
sys.exit(main(["run"]))
"""


@pytest.mark.parametrize("visit", [False, True])
async def test_corvid_run_loads_its_page_when_visited_and_never_aiohttps_client(
    tmp_path: Path, visit: bool
):
    """Unvisited, the page costs no import of aiohttp at all (``gateway/web/listener.py``);
    visited, the page is served without aiohttp's HTTP client or frozenlist's compiled list."""
    api, tg = FakeAnthropic(), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp_path / "h"
    tg.write_corvid_config(home, api.base_url)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["web"].update(enabled=True, port=0)
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "CORVID_HOME": str(home), "ANTHROPIC_API_KEY": API_KEY,
           "TELEGRAM_BOT_TOKEN": tg.token}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _RUN, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        url = ""
        async with asyncio.timeout(60):
            async for raw in proc.stderr:
                found = re.search(r"control page at (http://\S+)", raw.decode())
                if found:
                    url = found.group(1)
                    break
        if visit:
            async with aiohttp.ClientSession() as session, session.get(url + "login") as page:
                assert page.status == 200
                assert "Sign in" in await page.text()
        tg.text("hello")
        assert (await tg.wait_sent(1, timeout=30))[0]["shown"] == "echo: hello"
        proc.terminate()
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await tg.close()
        await api.close()
    assert proc.returncode == 0, err.decode()
    loaded = json.loads(out.decode().strip().splitlines()[-1])
    if visit:
        assert "aiohttp.web" in loaded
        assert "aiohttp.connector" not in loaded and "aiohttp.client" not in loaded
        # the page's signal lists are frozenlist's pure-Python ones
        assert "frozenlist" in loaded and "frozenlist._frozenlist" not in loaded
    else:
        assert loaded == []
