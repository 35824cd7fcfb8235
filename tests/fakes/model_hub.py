"""A model hub on 127.0.0.1 for the download tests: serves a folder's files at
``/<path>`` like the hub's ``resolve/main/<path>``, and can misbehave on request."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType


class FakeHub:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.requests: list[str] = []
        self.short: set[str] = set()  # sent with their full Content-Length, cut off halfway
        self.missing: set[str] = set()  # answered 404
        self.no_length: set[str] = set()  # sent without a Content-Length
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                rel = self.path.lstrip("/")
                hub.requests.append(rel)
                path = hub.folder / rel
                if rel in hub.missing or not path.is_file():
                    self.send_error(404)
                    return
                data = path.read_bytes()
                self.send_response(200)
                if rel not in hub.no_length:
                    self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data[: len(data) // 2] if rel in hub.short else data)
                self.close_connection = True

            def do_HEAD(self) -> None:
                rel = self.path.lstrip("/")
                hub.requests.append(rel)
                path = hub.folder / rel
                if rel in hub.missing or not path.is_file():
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(path.stat().st_size))
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
