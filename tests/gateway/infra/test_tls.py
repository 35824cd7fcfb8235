"""One TLS context for every HTTPS client: made once, shared, and still chosen by the
environment's SSL_CERT_FILE."""

from __future__ import annotations

import ssl
from typing import Any

import pytest

from agent.model.llm import AnthropicLLM
from agent.settings import LLMSettings
from channels.telegram.transport import Transport
from gateway.contract.ports import Secret
from gateway.infra.tls import tls_context


def _context_of(client: Any) -> ssl.SSLContext:
    return client._transport._pool._ssl_context  # httpx2's, only read


async def test_telegram_and_the_model_share_one_context():
    transport = Transport()
    llm = AnthropicLLM(LLMSettings(api_key=Secret("sk-test")))
    await llm.warm_up()
    try:
        model = llm._get_client()._client
        assert _context_of(transport._client) is tls_context()
        assert _context_of(model) is tls_context()
        assert tls_context().verify_mode == ssl.CERT_REQUIRED and tls_context().check_hostname
    finally:
        await transport.shutdown()
        await llm.close()


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
