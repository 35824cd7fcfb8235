"""The one TLS context Corvid's HTTPS clients share: the one httpx2 makes by default, made once."""

from __future__ import annotations

import functools
import ssl


@functools.cache
def tls_context() -> ssl.SSLContext:
    import httpx2

    return httpx2.create_ssl_context()
