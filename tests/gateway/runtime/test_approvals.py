"""Asking the owner: where the request goes, what it shows, and a wait that ends."""

from __future__ import annotations

import asyncio
import contextlib

from agent.approvals.gate import Answer, ApprovalRequest
from gateway.contract.events import OutboundMessage, SessionKey
from gateway.runtime.approvals import OwnerApprovals, fenced, message

OWNER_TG = SessionKey("telegram", "private", "42")
OWNER_DC = SessionKey("discord", "dm", "7")
GROUP = SessionKey("telegram", "group", "-100")
JOB = SessionKey("cron", "private", "daily")


def _request(chat: SessionKey, **fields: object) -> ApprovalRequest:
    return ApprovalRequest("ab12", "cal__delete", '{"name": "work"}', chat, **fields)  # type: ignore[arg-type]


async def test_no_answer_in_time_is_a_no_and_the_buttons_go() -> None:
    sent: list[OutboundMessage] = []
    settled: list[tuple[str, str]] = []

    async def send(out: OutboundMessage) -> None:
        sent.append(out)

    async def settle(command: str, text: str) -> bool:
        settled.append((command, text))
        return True

    approvals = OwnerApprovals(send, {"telegram": OWNER_TG}, 0.05, settle)
    assert await approvals.ask(_request(OWNER_TG)) is Answer.UNANSWERED
    assert [m.key for m in sent] == [OWNER_TG]
    assert settled == [("/approval ab12 once", settled[0][1])]
    assert "Not answered in time" in settled[0][1]
    assert approvals.waiting() == []
    assert "no request 'ab12' is waiting" in str(approvals.decide("ab12", "once"))


async def test_an_answer_ends_the_wait_and_a_second_answer_is_refused() -> None:
    sent: list[OutboundMessage] = []
    told = asyncio.Event()

    async def send(out: OutboundMessage) -> None:
        sent.append(out)
        told.set()

    approvals = OwnerApprovals(send, {"telegram": OWNER_TG}, 30)
    waiting = asyncio.create_task(approvals.ask(_request(GROUP)))
    await asyncio.wait_for(told.wait(), 5)
    assert [r.id for r in approvals.waiting()] == ["ab12"]
    assert approvals.decide("ab12", "maybe") is not None
    # The gate's own outcomes are not answers the owner gives.
    for outcome in ("unanswered", "unasked"):
        assert (
            approvals.decide("ab12", outcome)
            == f"unknown answer {outcome!r} (once, always or deny)"
        )
    assert [r.id for r in approvals.waiting()] == ["ab12"]
    assert approvals.decide("ab12", "always") is None
    assert approvals.decide("ab12", "deny") is not None  # answered already
    assert await asyncio.wait_for(waiting, 5) is Answer.ALWAYS
    # A group's request goes to the owner's private chat, never to the group.
    assert [m.key for m in sent] == [OWNER_TG]


def test_the_request_goes_to_a_private_chat_of_the_owner() -> None:
    approvals = OwnerApprovals(_no_send, {"telegram": OWNER_TG, "discord": OWNER_DC}, 30)
    assert approvals.where(OWNER_DC) == OWNER_DC  # asked where the owner is talking
    assert approvals.where(SessionKey("discord", "channel", "9")) == OWNER_DC
    assert approvals.where(GROUP) == OWNER_TG
    assert approvals.where(JOB) == OWNER_TG  # a scheduled job's: the owner's first chat
    assert OwnerApprovals(_no_send, {}, 30).where(GROUP) is None


async def test_nowhere_to_ask_is_a_no() -> None:
    assert await OwnerApprovals(_no_send, {}, 30).ask(_request(GROUP)) is Answer.UNASKED


def test_the_request_shows_the_call_what_was_read_and_the_change() -> None:
    request = _request(
        GROUP, sources=("a web page",), diff="--- a/AGENTS.md\n+++ b/AGENTS.md\n-x\n+y\n"
    )
    out = message(request, OWNER_TG, 300)
    assert out.key == OWNER_TG
    assert "the chat telegram:group:-100 wants to run cal__delete" in out.text
    assert '```json\n{"name": "work"}\n```' in out.text
    assert "(a web page)" in out.text and "```diff\n--- a/AGENTS.md" in out.text
    assert "No answer within 5 minutes means no." in out.text
    for timeout, said in ((30, "1 minute"), (60, "1 minute"), (90, "2 minutes")):
        assert f"No answer within {said} means no." in message(request, OWNER_TG, timeout).text
    assert out.buttons == (
        ("Approve once", "/approval ab12 once"),
        ("Always for this tool", "/approval ab12 always"),
        ("Deny", "/approval ab12 deny"),
    )


def test_the_rule_that_asks_is_said_and_nothing_stands_in_for_it_when_none_does() -> None:
    why = "Asked because sending mail to a new address always asks."
    said = message(_request(OWNER_TG, why=why), OWNER_TG, 300).text
    assert f'```json\n{{"name": "work"}}\n```\n\n{why}\n\n' in said
    plain = message(_request(OWNER_TG), OWNER_TG, 300).text
    assert '```json\n{"name": "work"}\n```\n\nApprove once: /approval ab12 once' in plain


def test_arguments_cannot_close_their_code_block() -> None:
    assert fenced("say ``` then ````", "json").startswith("`````json\n")
    assert fenced("plain", "json") == "```json\nplain\n```"


async def _no_send(out: OutboundMessage) -> None:
    raise AssertionError("nothing is sent")


async def test_a_turn_stopped_while_waiting_leaves_no_request_and_says_so() -> None:
    told = asyncio.Event()
    settled: list[str] = []

    async def send(out: OutboundMessage) -> None:
        told.set()

    async def settle(command: str, text: str) -> bool:
        settled.append(text)
        return True

    approvals = OwnerApprovals(send, {"telegram": OWNER_TG}, 30, settle)
    waiting = asyncio.create_task(approvals.ask(_request(OWNER_TG)))
    await asyncio.wait_for(told.wait(), 5)
    waiting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(waiting, 5)
    assert waiting.cancelled() and approvals.waiting() == []
    assert settled and settled[0].endswith("Stopped before an answer: it was not run.")
