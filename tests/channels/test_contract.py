"""The contract every chat adapter keeps, run against each one through its real client library
and fake platform: same inbound cases, same expected outbound behaviour."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import OWNER, TG_GROUP
from tests.fakes.anthropic_api import Reply, last_user_text
from tests.fakes.telegram_api import BOT_USERNAME


@dataclass
class Driver:
    """Speaks to one fake platform in the contract's terms."""

    name: str
    fake: Any
    limit: int
    app: Any

    def dm(self, text: str, user: int | None = None) -> None:
        if self.name == "telegram":
            self.fake.text(text, user=user or OWNER)
        else:
            self.fake.message(text, author=user or self._owner, guild=False)

    def group(self, text: str, *, user: int = 5, addressed: bool = False) -> None:
        if self.name == "telegram":
            body = f"@{BOT_USERNAME} {text}" if addressed else text
            self.fake.text(body, user=user, chat=TG_GROUP, chat_type="supergroup")
        else:
            self.fake.message(text, author=user, mentions_bot=addressed)

    def from_a_bot(self, text: str) -> None:
        if self.name == "telegram":
            self.fake.text(text, user=OWNER, is_bot=True)
        else:
            self.fake.message(text, author=8, bot=True, guild=False)

    def replies(self) -> list[str]:
        key = "shown" if self.name == "telegram" else "content"
        return [s[key] for s in self.fake.sent]

    async def wait_replies(self, n: int) -> list[str]:
        await self.fake.wait_sent(n)
        return self.replies()

    async def idle(self) -> None:
        """Until every session is done: a turn started by mistake has reached the model."""
        await asyncio.wait_for(self.app.idle(), 10)

    @property
    def _owner(self) -> int:
        from tests.fakes.discord_api import OWNER_ID

        return OWNER_ID


@pytest.fixture(params=["telegram", "discord"])
async def adapter(
    request, fake_telegram, telegram_gateway, fake_discord, discord_gateway
) -> Driver:
    # Both fakes run (they are cheap); only the adapter under test is started.
    if request.param == "telegram":
        return Driver("telegram", fake_telegram, 4096, await telegram_gateway())
    return Driver("discord", fake_discord, 2000, await discord_gateway())


async def test_the_owner_is_answered_in_a_direct_chat(adapter, fake_api):
    adapter.dm("hello")
    assert (await adapter.wait_replies(1)) == ["echo: hello"]
    assert "MEMORY.md" in fake_api.message_requests[0].raw


async def test_a_stranger_gets_a_pairing_code_and_nothing_else(adapter, fake_api):
    adapter.dm("let me in", user=77)
    # Two messages: the stranger's code, and a notice to the owner in their own chat.
    replies = await adapter.wait_replies(2)
    await adapter.idle()
    assert fake_api.message_requests == []
    assert len(adapter.replies()) == 2
    (code,) = [r for r in replies if re.search(r"pairing code: [A-Z2-9]{8}", r)]
    (notice,) = [r for r in replies if "wants to talk to me" in r]
    assert re.search(r"pairing code: ([A-Z2-9]{8})", code).group(1) in notice


async def test_groups_answer_only_when_addressed_and_keep_the_rest(adapter, fake_api):
    adapter.group("lunch is at noon")
    adapter.group("when is lunch?", addressed=True)
    replies = await adapter.wait_replies(1)
    assert len(replies) == 1 and replies[0].endswith("when is lunch?")
    assert "lunch is at noon" in last_user_text(fake_api.message_requests[0].body)
    assert len(fake_api.message_requests) == 1


async def test_a_bare_command_for_another_bot_gets_no_answer_in_a_group(adapter, fake_api):
    """Other bots in the group have commands of their own; one sent without a bot's name is
    not ours to answer, not even with "Unknown command"."""
    adapter.group("/weather")
    adapter.group("/weather Berlin")
    adapter.group("what now?", addressed=True)
    # The chat's messages are handled in order: an answer to either command would come first.
    replies = await adapter.wait_replies(1)
    await adapter.idle()
    assert len(adapter.replies()) == 1 and replies[0].endswith("what now?")
    assert len(fake_api.message_requests) == 1


async def test_messages_from_bots_are_ignored(adapter, fake_api):
    adapter.from_a_bot("I am a bot")
    adapter.dm("and I am not")
    assert (await adapter.wait_replies(1)) == ["echo: and I am not"]
    assert len(fake_api.message_requests) == 1


async def test_long_replies_fit_the_platform_and_keep_code_blocks_whole(adapter, fake_api):
    blocks = []
    for i in range(6):
        blocks.append(f"Step {i}: " + "explain the step in words. " * 40)
        blocks.append("```sh\n" + "".join(f"run --step {i} --n {j}\n" for j in range(30)) + "```")
    fake_api.enqueue(Reply("\n\n".join(blocks)))
    adapter.dm("all the steps")
    await adapter.fake.wait_for(lambda: "--step 5 --n 29" in "".join(adapter.replies()))
    replies = adapter.replies()
    assert len(replies) >= 3
    for text in replies:
        assert len(text.encode("utf-16-le")) // 2 <= adapter.limit
    joined = "\n".join(replies)
    for i in range(6):
        for j in range(30):
            assert f"run --step {i} --n {j}" in joined


async def test_long_term_memory_never_reaches_a_group(adapter, fake_api, home):
    canary = f"CANARY-contract-{adapter.name}"
    (home / "workspace" / "MEMORY.md").write_text(f"- {canary}\n")
    fake_api.enqueue(Reply(tool_calls=[("memory_get", {"path": "MEMORY.md"})]), Reply("No."))
    adapter.group("what is in MEMORY.md?", addressed=True)
    await adapter.wait_replies(1)
    assert len(fake_api.message_requests) == 2
    assert all(canary not in r.raw for r in fake_api.message_requests)
