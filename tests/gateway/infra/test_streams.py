"""httpx2's connections on asyncio's streams (gateway/infra/streams.py): requests, kept
connections, a server that closes one while it is idle, timeouts, refusals and TLS, through the
real httpx2 client against a small HTTP/1.1 server on loopback; and Telegram's and the model's
clients opening every connection on them."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import socket
import ssl
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpcore2
import httpx2
import pytest

from gateway.infra.streams import AsyncioBackend, on_asyncio
from tests.fakes.anthropic_api import Reply

Answer = Callable[[bytes], bytes | None]  # the request's head → the response; None: never


def ok(body: bytes, *, close: bool = False) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n"
    return (head + ("Connection: close\r\n" if close else "") + "\r\n").encode() + body


class Server:
    """Answers each request on a connection with ``answer``; ``close_after`` requests on a
    connection, it closes that connection without a word (as a server whose keep-alive ran
    out does)."""

    def __init__(self, answer: Answer, close_after: int | None = None, stray: bytes = b"") -> None:
        self.answer = answer
        self.close_after = close_after
        self.stray = stray  # sent unasked once a response has been read, the connection open
        self.read = asyncio.Event()  # set by the test: the response has been read
        self.strayed = asyncio.Event()
        self.connections = 0
        self.closed = asyncio.Event()  # set whenever the server has closed a connection
        self.tasks: set[asyncio.Task[None]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        served = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                response = self.answer(head)
                if response is None:
                    await asyncio.Event().wait()  # never answers; cancelled at the end
                    return
                writer.write(response)
                await writer.drain()
                if self.stray:
                    await self.read.wait()
                    writer.write(self.stray)
                    await writer.drain()
                    self.strayed.set()
                served += 1
                if self.close_after is not None and served >= self.close_after:
                    return
        finally:
            writer.close()
            self.closed.set()


@contextlib.asynccontextmanager
async def serving(server: Server, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=tls)
    try:
        yield listener.sockets[0].getsockname()[1]
    finally:
        listener.close()
        for task in server.tasks:
            task.cancel()
        await asyncio.gather(*server.tasks, return_exceptions=True)
        await listener.wait_closed()


def client(**options) -> httpx2.AsyncClient:
    return on_asyncio(httpx2.AsyncClient(**options))


async def test_requests_on_one_kept_connection():
    server = Server(lambda head: ok(head.split(b" ")[1]))
    async with serving(server) as port, client() as http:
        first = await http.get(f"http://127.0.0.1:{port}/one")
        second = await http.get(f"http://127.0.0.1:{port}/two")
    assert (first.status_code, first.content) == (200, b"/one")
    assert second.content == b"/two"
    assert server.connections == 1


async def test_a_response_read_as_it_comes():
    body = b"x" * 300_000
    server = Server(lambda head: ok(body))
    async with (
        serving(server) as port,
        client() as http,
        http.stream("GET", f"http://127.0.0.1:{port}/") as response,
    ):
        pieces = [piece async for piece in response.aiter_bytes()]
    assert b"".join(pieces) == body and len(pieces) > 1


async def test_a_connection_the_server_closed_while_idle_is_not_used_again():
    server = Server(lambda head: ok(b"hi"), close_after=1)
    async with serving(server) as port, client() as http:
        assert (await http.get(f"http://127.0.0.1:{port}/")).content == b"hi"
        await asyncio.wait_for(server.closed.wait(), 10)
        # The pool sees the end of the connection it kept, and opens another.
        assert (await http.get(f"http://127.0.0.1:{port}/")).content == b"hi"
    assert server.connections == 2


async def test_a_server_that_does_not_answer_is_a_read_timeout():
    server = Server(lambda head: None)
    async with serving(server) as port, client(timeout=httpx2.Timeout(5, read=0.2)) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.get(f"http://127.0.0.1:{port}/")


async def test_a_refused_connection_is_a_connect_error():
    with socket.socket() as bound:  # held, so no one else takes the port; not listening
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        async with client() as http:
            with pytest.raises(httpx2.ConnectError):
                await http.get(f"http://127.0.0.1:{port}/")


async def test_a_server_that_closes_mid_response_is_a_protocol_error():
    server = Server(lambda head: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", 1)
    async with serving(server) as port, client() as http:
        with pytest.raises(httpx2.RemoteProtocolError):
            await http.get(f"http://127.0.0.1:{port}/")


async def until(condition: Callable[[], bool], timeout: float = 10) -> None:
    """Bounded: polls ``condition`` (nothing to wait on for a socket closed in-process)."""
    async with asyncio.timeout(timeout):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_a_connection_the_server_wrote_to_unasked_is_not_used_again():
    """A server that says 408 on an idle connection before it closes it: the next request
    goes on a new connection, not reading that 408 as its answer."""
    server = Server(lambda head: ok(b"first"), stray=ok(b"stale", close=True))
    async with serving(server) as port, client() as http:
        assert (await http.get(f"http://127.0.0.1:{port}/")).content == b"first"
        server.read.set()
        await asyncio.wait_for(server.strayed.wait(), 10)
        # A round trip of its own to the server: the event loop has read the stray bytes
        # into the idle connection's buffer by the time it is done.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
        await asyncio.wait_for(reader.readuntil(b"first"), 10)
        writer.close()
        again = await http.get(f"http://127.0.0.1:{port}/")
    assert again.content == b"first"
    assert server.connections == 3  # the first, the round trip's, and a new one


async def test_a_tls_handshake_that_does_not_come_is_a_connect_timeout():
    server = Server(lambda head: None)  # takes the connection, never says a word
    timeout = httpx2.Timeout(5, connect=0.3)
    async with serving(server) as port, client(timeout=timeout) as http:
        with pytest.raises(httpx2.ConnectTimeout):
            await http.get(f"https://127.0.0.1:{port}/")


async def test_the_kernels_timed_out_is_a_read_error_not_a_timeout():
    """ETIMEDOUT (keep-alive probes unanswered) is a TimeoutError in Python: it is still a
    broken connection, as httpcore2's own backend says."""
    server = Server(lambda head: None)
    async with serving(server) as port:
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        stream._reader.set_exception(TimeoutError(errno.ETIMEDOUT, "Connection timed out"))
        with pytest.raises(httpcore2.ReadError, match="timed out"):
            await stream.read(100, timeout=30)
        await stream.aclose()


async def test_a_connection_closed_after_a_write_timed_out_lets_its_socket_go():
    """Closed with bytes still unsent (the server stopped reading): the socket is closed at
    once, not kept until the server would read them."""
    server = Server(lambda head: None)  # reads the head only, never the body
    timeout = httpx2.Timeout(5, write=0.3)
    before = len(os.listdir("/proc/self/fd"))
    async with serving(server) as port, client(timeout=timeout) as http:
        with pytest.raises(httpx2.WriteTimeout):
            await http.post(f"http://127.0.0.1:{port}/", content=b"x" * 50_000_000)
        await until(lambda: len(os.listdir("/proc/self/fd")) <= before + 2)  # the listener's


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1, made by openssl."""
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


def _tls_server(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


async def test_https_with_the_servers_certificate_trusted(certificate):
    cert, key = certificate
    server = Server(lambda head: ok(b"secret"))
    trusted = ssl.create_default_context(cafile=str(cert))
    async with serving(server, _tls_server(cert, key)) as port, client(verify=trusted) as http:
        response = await http.get(f"https://localhost:{port}/")
        again = await http.get(f"https://localhost:{port}/")
        assert response.extensions["network_stream"].get_extra_info("ssl_object") is not None
    assert response.content == again.content == b"secret"
    assert server.connections == 1


async def test_https_with_a_certificate_no_authority_signed_is_refused(certificate):
    cert, key = certificate
    server = Server(lambda head: ok(b"secret"))
    async with serving(server, _tls_server(cert, key)) as port, client() as http:
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await http.get(f"https://localhost:{port}/")


@pytest.fixture
def anyio_refuses(monkeypatch):
    """httpcore2's default backend refuses to connect: only connections opened on asyncio's
    streams get anywhere."""

    async def refuse(*args, **kwargs):
        raise httpcore2.ConnectError("opened through httpcore2's default backend")

    from httpcore2._backends.auto import AutoBackend

    monkeypatch.setattr(AutoBackend, "connect_tcp", refuse)


async def test_the_default_backend_is_what_the_fixture_refuses(anyio_refuses):
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        async with httpx2.AsyncClient() as http:
            with pytest.raises(httpx2.ConnectError, match="default backend"):
                await http.get(f"http://127.0.0.1:{bound.getsockname()[1]}/")


async def test_telegram_and_the_model_connect_on_asyncio(
    anyio_refuses, telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    fake_api.enqueue(Reply("on asyncio's streams"))
    fake_telegram.text("hello")
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["shown"] == "on asyncio's streams"
    assert len(fake_api.message_requests) == 1
