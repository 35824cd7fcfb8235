"""The one TLS context Corvid's HTTPS clients share.

An HTTP client made with the default ``verify=True`` makes a context of its own, reading and
parsing the system's certificate authorities: about 17 ms of CPU each time. Corvid makes
several (Telegram's two, the model's, those of MCP servers), two of them before the first
poll and two before the first reply, so they share this one, made when it is first asked for.
A context may be shared by clients and threads. It is the one httpx2 makes by default, so
``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` still choose the authorities.

A leaf: it imports nothing from Corvid.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def tls_context() -> ssl.SSLContext:
    import httpx2

    return httpx2.create_ssl_context()
