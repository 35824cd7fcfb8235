"""python-telegram-bot, imported without what it would load for features Corvid does not use.

PTB imports ``cryptography`` when it is installed, only to decrypt Telegram Passport data, which
Corvid never receives (other packages install it: the MCP SDK, through PyJWT); that import alone
costs every Telegram gateway about 8 MiB of memory. PTB's updater imports its webhook
server (tornado) whether or not a webhook is used: 3.4 MiB and 12 ms of every start that
long-polls. PTB's job queue imports APScheduler's asyncio scheduler and executor when
APScheduler is installed (Corvid installs it for its own scheduler, which only uses its
triggers), and every application built then makes and starts a scheduler of its own: Corvid
never gives PTB a job, and the import was 60 ms of a start on the way to the first poll. So PTB
is imported here as if those were absent (``gateway/infra/imports.py``), and PTB behaves
exactly as its default install does; a webhook, when configured, gets its server then
(``add_webhooks``). Anything that imports these packages afterwards gets them as usual.

A gateway that long-polls does not import PTB's application framework (``telegram.ext``) at
all: the polling loop is Corvid's own and ``telegram.Bot`` is all it uses (48 modules fewer,
35 ms of a start). A webhook is received by PTB's application, loaded when one is configured.

PTB's own request class (``HTTPXRequest``) sits on httpx; Corvid sends PTB's requests over its
own (``channels/telegram/transport.py``, on httpx2), so a gateway never uses httpx, whose import
(with ``http.cookiejar`` and the ``email`` package under it) is 46 modules, 3 MiB and 55-60 ms
of CPU on the way to the first poll. PTB's modules use httpx at import only in annotations (a
request's ``proxy: str | httpx.Proxy | httpx.URL``), so while PTB loads, ``import httpx`` gets
``_HttpxLater``: for the loading thread a name is a stand-in class, good for an annotation and
nothing else; once PTB is loaded, the first name PTB (or anyone holding that module) asks for
imports the real httpx (``import_httpx``, without its command-line client) and is the real
name. So ``HTTPXRequest`` (``corvid doctor``'s probe uses it) works as it comes, importing
httpx when it is made. A PTB whose import needs more of httpx than names in annotations (a
call at import fails on a stand-in; a stand-in bound by ``from httpx import``, made, or
subclassed is looked for once PTB is loaded) is imported again with the real httpx. The stand-in
classes stay in the annotations of PTB's request class and builder (``get_type_hints`` shows
them), which nothing in Corvid reads.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType
from typing import Any

from gateway.infra.imports import import_httpx, take_out, without

# The packages (or the parts of one) PTB's import would load for what Corvid does not use (or
# not yet), and what for.
UNUSED = {
    "cryptography": "Telegram Passport, in python-telegram-bot",
    "tornado": "python-telegram-bot's webhooks, added when one is configured",
    "apscheduler.schedulers": "python-telegram-bot's job queue",
    "apscheduler.executors": "python-telegram-bot's job queue",
}


class _HttpxLater(ModuleType):
    """``httpx`` for PTB's modules (see the module docstring): stand-in classes for the thread
    importing PTB while it does, the real httpx's names for everyone else and afterwards."""

    def __init__(self) -> None:
        super().__init__("httpx", "httpx, imported when python-telegram-bot first uses it")
        self._loader: int | None = threading.get_ident()
        self._stand_ins: dict[str, type] = {}
        self._askers: set[str] = set()  # the modules that took a stand-in

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system's questions (__path__, __file__, ...)
            raise AttributeError(name)
        if self._loader == threading.get_ident():
            self._askers.add(sys._getframe(1).f_globals.get("__name__", ""))
            if name not in self._stand_ins:
                self._stand_ins[name] = type(name, (), {"__module__": "httpx (not imported)"})
            return self._stand_ins[name]
        return getattr(import_httpx(), name)  # which takes this module out of sys.modules

    def loaded(self) -> None:
        """PTB is imported (or gave up): from now on every name is the real httpx's."""
        self._loader = None
        take_out("httpx", self)

    def escaped(self) -> bool:
        """Whether a module that took a stand-in keeps one other than in an annotation: bound
        by ``from httpx import ...``, made at import, or subclassed (by the module or by a
        class of it)."""
        stand_ins = {id(kind) for kind in self._stand_ins.values()}

        def kept(value: object) -> bool:
            kind = value if isinstance(value, type) else type(value)
            return any(id(base) in stand_ins for base in kind.__mro__)

        for name in self._askers:
            module = sys.modules.get(name)
            for value in list(vars(module).values()) if module is not None else ():
                if kept(value):
                    return True
                own_class = isinstance(value, type) and value.__module__ == name
                if own_class and any(kept(item) for item in list(vars(value).values())):
                    return True
        return False


def load_ptb(*, webhooks: bool = False) -> None:
    """Import python-telegram-bot once, before any other use of it: its bot API (``telegram``),
    all that long polling needs, since the polling loop is Corvid's own; with ``webhooks``, also
    PTB's application framework (``telegram.ext``) and the webhook server its updater runs."""
    if webhooks:
        load_application()
        add_webhooks()
    elif "telegram" not in sys.modules:
        with without(UNUSED):
            import_with_httpx_later("telegram")


def load_application() -> None:
    """PTB's application framework (``telegram.ext``: 48 modules, 35 ms of CPU), without the
    packages of ``UNUSED``; what receives a webhook."""
    if "telegram.ext" not in sys.modules:
        with without(UNUSED):
            import_with_httpx_later("telegram.ext")


def import_with_httpx_later(module: str) -> None:
    """Import ``module`` with ``_HttpxLater`` as its httpx, unless either is loaded already."""
    package = module.partition(".")[0]
    if "httpx" in sys.modules or module in sys.modules:
        importlib.import_module(module)
        return
    before = set(sys.modules)  # say, ``telegram`` before ``telegram.ext``
    later = _HttpxLater()
    sys.modules["httpx"] = later
    try:
        importlib.import_module(module)
        needs_httpx = later.escaped()
    except Exception:
        needs_httpx = True
    finally:
        later.loaded()
    if needs_httpx:
        # It needs more of httpx at import than names in annotations: forget what this
        # import loaded, and load it as it comes, with httpx.
        loaded = [m for m in sys.modules if m not in before]
        for name in [m for m in loaded if m == package or m.startswith(package + ".")]:
            del sys.modules[name]
        import_httpx()
        importlib.import_module(module)


def add_webhooks() -> None:
    """What PTB's updater does at import when its webhook server can be imported, for a PTB
    loaded without it: import the server and say it is there."""
    from telegram.ext import _updater

    if not _updater.WEBHOOKS_AVAILABLE:
        from telegram.ext._utils.webhookhandler import WebhookAppClass, WebhookServer

        _updater.WebhookAppClass = WebhookAppClass  # type: ignore[attr-defined]
        _updater.WebhookServer = WebhookServer  # type: ignore[attr-defined]
        _updater.WEBHOOKS_AVAILABLE = True
