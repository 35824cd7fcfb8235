"""python-telegram-bot, imported without its optional Telegram Passport support.

PTB imports ``cryptography`` when it is installed (only to decrypt Passport data, which Corvid
never receives), and other packages install it (the MCP SDK, through PyJWT). That import alone
costs every Telegram gateway about 8 MiB of memory, so PTB is imported here as if it were
absent: PTB then behaves exactly as its default install does. Anything that imports
``cryptography`` afterwards gets it as usual.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType


class _NotForPassport(MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == "cryptography" or fullname.startswith("cryptography."):
            raise ImportError("not imported for python-telegram-bot (Passport is not used)")
        return None


def load_ptb() -> None:
    """Import python-telegram-bot once, before any other use of it."""
    if "telegram.ext" in sys.modules:
        return
    if "cryptography" in sys.modules:  # already paid for by something else
        importlib.import_module("telegram.ext")
        return
    finder = _NotForPassport()
    sys.meta_path.insert(0, finder)
    try:
        importlib.import_module("telegram.ext")
    finally:
        sys.meta_path.remove(finder)
