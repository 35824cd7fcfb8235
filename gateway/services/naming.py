"""The names commands and pages give chats, with what pairing and the platforms told of them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from channels.pairing import PairingError, PairingStore
from gateway.chat_names import Guests, Titles, audience_name, read_titles, who_is
from gateway.config.loader import Config
from gateway.contract.events import SessionKey


@dataclass(frozen=True)
class Names:
    guests: Guests = field(default_factory=dict)
    titles: Titles = field(default_factory=dict)

    def of_key(self, key: str) -> str:
        """A session key's chat by name; the key itself when it is not one."""
        with contextlib.suppress(ValueError):
            return who_is(SessionKey.parse(key), self.guests, self.titles)
        return key

    def of_audience(self, chat: str) -> str:
        """A usage ledger's chat ("owner", "telegram-group--5") by name."""
        return audience_name(chat, self.guests, self.titles)


def names(config: Config) -> Names:
    """What is known of the chats now (nothing of the guests when pairing cannot be read)."""
    try:
        guests: Guests = PairingStore(config.layout.pairing).approved()
    except PairingError:
        guests = {}
    return Names(guests, read_titles(config.layout.chat_names))
