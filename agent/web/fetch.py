"""``web_fetch``: a web page as readable text the model can use, never from a private address."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import re
import socket
from collections.abc import Collection
from typing import Any, TypedDict
from urllib.parse import urljoin

import aiohttp
import yarl
from aiohttp.abc import AbstractResolver, ResolveResult

from gateway.contract.errors import ToolError

log = logging.getLogger(__name__)

USER_AGENT = "Corvid/0.1 (self-hosted personal assistant; fetches a page when asked to)"
ACCEPT = "text/html, text/plain, application/json;q=0.9, */*;q=0.5"
MAX_EXTRACT_CHARS = 1_500_000  # of a page's HTML given to the text finder
MAX_REDIRECTS = 5
MAX_BYTES = 5_000_000
TIMEOUT = 30.0
TEXT_TYPES = (
    "text/plain",
    "text/markdown",
    "text/csv",
    "application/json",
    "text/xml",
    "application/xml",
)
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


# IPv6 ranges that carry an IPv4 address inside (NAT64) or are obsolete (site-local).
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")


def _literal_address(host: str) -> str | None:
    """The address a host names by itself, or None for a name. Besides the usual forms, the
    old numeric IPv4 spellings that resolvers still accept are read as the address they mean:
    ``2130706433``, ``127.1``, ``0x7f.1`` and ``0177.0.0.1`` are all 127.0.0.1."""
    bare = host.split("%")[0]
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    if _NUMERIC_HOST.match(bare):
        try:
            return socket.inet_ntoa(socket.inet_aton(bare))
        except OSError:
            return "0.0.0.0"  # numeric but no address at all: refused as reserved
    return None


# Dotted parts of digits (decimal, octal or hex), as inet_aton reads them; a name always has a
# letter beyond a hex prefix.
_NUMERIC_HOST = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)(\.(0[xX][0-9a-fA-F]*|[0-9]+)){0,3}\.?$")


def shown(url: str) -> str:
    """A URL as it may be shown or logged: without a ``user:password@`` part."""
    try:
        parsed = yarl.URL(url)
    except ValueError:
        return url
    if parsed.user is None and parsed.password is None:
        return url
    return str(parsed.with_user(None))


def refusal(address: str, allow: Collection[Network] = ()) -> str | None:
    """Why Corvid will not connect to ``address``, or None when it is on the public
    internet (or in ``allow``)."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _SITE_LOCAL:
            return "it is a private or reserved address, not on the public internet"
        # An IPv4 address inside an IPv6 one (mapped, 6to4, NAT64) is judged as itself.
        inner = ip.ipv4_mapped or ip.sixtofour
        if inner is None and ip in _NAT64:
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            ip = inner
    if any(ip in net for net in allow):
        return None
    if ip.is_loopback:
        return "it is this machine (loopback)"
    if ip.is_link_local:
        return "it is a link-local address (where cloud metadata services live)"
    if ip.is_multicast:
        return "it is a multicast address"
    if ip.is_private or not ip.is_global:
        return "it is a private or reserved address, not on the public internet"
    return None


class GuardedResolver(AbstractResolver):
    """An aiohttp resolver that keeps only public addresses: a page or a prompt must not make
    Corvid reach what only the machine can (its services, the home network, a cloud's metadata
    endpoint). ``allow`` is for tests on loopback: an argument, never a setting."""

    def __init__(self, allow: Collection[Network] = (), inner: AbstractResolver | None = None):
        self.allow = tuple(allow)
        self._inner = inner or aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        kept = [f for f in found if refusal(f["host"], self.allow) is None]
        if not kept:
            why = refusal(found[0]["host"], self.allow) if found else "it has no address"
            raise ToolError(f"Refused to fetch from {host}: {why}.")
        return kept

    async def close(self) -> None:
        await self._inner.close()


class Fetched(TypedDict):
    url: str
    status: int
    content_type: str
    text: str
    truncated: bool


class WebFetcher:
    def __init__(
        self,
        *,
        allow: Collection[Network] = (),
        resolver: AbstractResolver | None = None,
        max_bytes: int = MAX_BYTES,
        timeout: float = TIMEOUT,
    ) -> None:
        self.allow = tuple(allow)
        self._resolver = resolver
        self.max_bytes = max_bytes
        self.timeout = timeout

    def _check(self, url: str) -> None:
        """Refuse what is not http(s), and an address in the URL that is not public. The host
        is read as aiohttp will connect to it (IDNA and Unicode digits normalised: full-width
        "１２７.0.0.1" is 127.0.0.1)."""
        try:
            parsed = yarl.URL(url)
            host = parsed.host
        except ValueError:
            raise ToolError(f"{shown(url)!r} is not a web address.") from None
        if parsed.scheme not in ("http", "https") or not host:
            raise ToolError(
                f"Only http:// and https:// addresses can be fetched, not {shown(url)!r}."
            )
        address = _literal_address(host)
        if address is None:
            return  # a name: the resolver checks what it resolves to
        why = refusal(address, self.allow)
        if why is not None:
            raise ToolError(f"Refused to fetch {shown(url)}: {why}.")

    async def fetch(self, url: str) -> Fetched:
        resolver = GuardedResolver(self.allow, self._resolver)
        # Connections go to the address checked, so a name cannot change its answer between.
        connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)
        timeout = aiohttp.ClientTimeout(total=self.timeout, sock_connect=10)
        try:
            async with asyncio.timeout(self.timeout):  # the whole fetch, every hop together
                return await self._follow(url, connector, timeout)
        except TimeoutError:
            raise ToolError(f"{shown(url)} did not answer within {self.timeout:g} s.") from None

    async def _follow(
        self, url: str, connector: aiohttp.TCPConnector, limits: aiohttp.ClientTimeout
    ) -> Fetched:
        headers = {"User-Agent": USER_AGENT, "Accept": ACCEPT}
        async with aiohttp.ClientSession(connector=connector, timeout=limits) as http:
            for _ in range(MAX_REDIRECTS + 1):
                self._check(url)
                try:
                    async with http.get(url, allow_redirects=False, headers=headers) as r:
                        location = r.headers.get("Location")
                        if r.status in (301, 302, 303, 307, 308) and location:
                            url = urljoin(url, location)
                            continue
                        body, truncated = await _read(r, self.max_bytes)
                        # Finding a page's text takes seconds on a big page: not on the loop.
                        text = await asyncio.to_thread(_text, body, r.content_type, r.charset)
                        return Fetched(
                            url=str(r.url),
                            status=r.status,
                            content_type=r.content_type,
                            text=text,
                            truncated=truncated,
                        )
                except aiohttp.ClientError as exc:
                    if isinstance(exc.__cause__, ToolError):
                        raise exc.__cause__ from None
                    raise ToolError(
                        f"Could not fetch {shown(url)}: {type(exc).__name__}."
                    ) from None
        raise ToolError(f"{shown(url)}: more than {MAX_REDIRECTS} redirects; not followed further.")


async def _read(response: Any, limit: int) -> tuple[bytes, bool]:
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


def _text(body: bytes, content_type: str, charset: str | None) -> str:
    text = "" if content_type == "application/pdf" else body.decode(charset or "utf-8", "replace")
    if content_type in ("text/html", "application/xhtml+xml"):
        return _readable(text)
    if content_type == "application/json":
        try:
            return json.dumps(json.loads(text), indent=1, ensure_ascii=False)
        except ValueError:
            return text
    if content_type in TEXT_TYPES or content_type.startswith("text/"):
        return text
    if content_type == "application/pdf":
        return _pdf_text(body)
    raise ToolError(
        f"That address gives {content_type or 'something unnamed'}, not a page or text."
    )


def _pdf_text(body: bytes) -> str:
    """A PDF's text, page by page (pypdf: pure Python, no other dependency)."""
    import io

    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(body))
        pages = [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # pypdf raises many kinds for a broken or cut file
        raise ToolError(f"That PDF could not be read ({type(exc).__name__}).") from None
    text = "\n\n".join(f"[page {n}]\n{t.strip()}" for n, t in enumerate(pages, 1) if t.strip())
    return text or "(the PDF has no text layer: it may be scanned images)"


def _readable(page: str) -> str:
    """The page's text as Markdown. The extractor's time and memory grow with the HTML, so it
    reads at most ``MAX_EXTRACT_CHARS`` of it, scripts, styles and comments left out first."""
    import trafilatura

    page = _without_code(page)
    cut = len(page) > MAX_EXTRACT_CHARS
    found = trafilatura.extract(
        page[:MAX_EXTRACT_CHARS],
        output_format="markdown",
        include_links=True,
        include_tables=True,
        favor_recall=True,
    )
    text = found or "(no readable text found on that page)"
    return text + (
        f"\n\n[only the first {MAX_EXTRACT_CHARS:,} characters of the page were read]"
        if cut
        else ""
    )


def _without_code(page: str) -> str:
    """The page without its scripts, styles and comments, which never hold its text; in one
    pass (a regular expression would go back over the rest of the page for every opening
    without its end)."""
    kept: list[str] = []
    at = 0
    for start in _CODE_START.finditer(page):
        if start.start() < at:
            continue  # inside a part already left out
        kept.append(page[at : start.start()])
        end = _CODE_END[start.group().lower()].search(page, start.end())
        if end is None:
            return "".join(kept)  # never closed: the rest of the page is code
        at = end.end()
    kept.append(page[at:])
    return "".join(kept)


_CODE_START = re.compile(r"<!--|<script\b|<style\b", re.I)
_CODE_END = {
    "<!--": re.compile(r"-->"),
    "<script": re.compile(r"</script\s*>", re.I),
    "<style": re.compile(r"</style\s*>", re.I),
}
