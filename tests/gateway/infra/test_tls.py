"""One TLS context for every HTTPS client: made once, shared, and still chosen by the
environment's SSL_CERT_FILE."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from agent.model.llm import AnthropicLLM
from agent.settings import LLMSettings
from channels.telegram.transport import Transport
from gateway.contract.ports import Secret
from gateway.infra.tls import tls_context


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made by openssl."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed for the TLS tests (apt-get install openssl)"
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", str(key), "-out",
         str(cert), "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def trusting(certificate, monkeypatch) -> Iterator[ssl.SSLContext]:
    """The shared context, made anew with the test's certificate as its only authority."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    tls_context.cache_clear()
    yield tls_context()
    tls_context.cache_clear()


@pytest.fixture
async def https(certificate) -> AsyncIterator[str]:
    """An HTTPS server on loopback that answers every request with a small JSON object."""

    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "result": True, "input_tokens": 1})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(*certificate)
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=served).start()
    host, port = runner.addresses[0][:2]
    yield f"https://{host}:{port}"
    await runner.cleanup()


async def test_telegram_and_the_model_connect_with_the_one_context(trusting, https):
    """Each client's handshake is made with the shared context (its own count of handshakes
    goes up by one for each), which trusts what SSL_CERT_FILE names."""
    transport = Transport()
    llm = AnthropicLLM(LLMSettings(api_key=Secret("sk-test"), base_url=https))
    before = trusting.session_stats()["connect"]
    try:
        status, _ = await transport.do_request(f"{https}/bot1:a/getMe", "POST")
        assert status == 200
        assert trusting.session_stats()["connect"] == before + 1
        assert await llm.refused(10, lambda: "ANTHROPIC_API_KEY") is None
        assert trusting.session_stats()["connect"] == before + 2
    finally:
        await transport.shutdown()
        await llm.close()
    assert trusting.verify_mode == ssl.CERT_REQUIRED and trusting.check_hostname


def test_the_environment_still_chooses_the_authorities(monkeypatch, tmp_path):
    """SSL_CERT_FILE is read as httpx2's own default reads it."""
    missing = tmp_path / "none.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    tls_context.cache_clear()
    try:
        with pytest.raises(FileNotFoundError):
            tls_context()
    finally:
        monkeypatch.delenv("SSL_CERT_FILE")
        tls_context.cache_clear()
    assert tls_context() is tls_context()
