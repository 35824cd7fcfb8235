"""Replies on Telegram shown while they are written, through the real client against the fake Bot
API and the fake Messages API: drafts in private chats, a message edited in place in groups, tool
progress, pieces before tool calls, silent answers never shown, /stop mid-stream, flood limits."""

from __future__ import annotations

import asyncio

from tests.conftest import OWNER, TG_GROUP, outbox_rows
from tests.fakes.anthropic_api import Reply, last_user_text
from tests.fakes.telegram_api import BOT_USERNAME, Fault

LONG_ANSWER = "Here is a longer answer, written one piece at a time. " * 6


def _ask_group(fake_telegram, text: str) -> None:
    fake_telegram.text(f"@{BOT_USERNAME} {text}", user=OWNER, chat=TG_GROUP,
                       chat_type="supergroup")  # fmt: skip


async def test_group_reply_is_sent_early_then_edited_into_the_final_text(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway(streaming=True)
    release = asyncio.Event()
    fake_api.enqueue(Reply(LONG_ANSWER.strip(), hold=release, hold_after=80, chunk=20))
    _ask_group(fake_telegram, "tell me something long")
    # The model is still writing: the chat already shows the start of the answer.
    [first] = await fake_telegram.wait_sent(1)
    assert first["shown"] and LONG_ANSWER.startswith(first["shown"])
    assert len(first["shown"]) < len(LONG_ANSWER.strip())
    assert first["reply_parameters"]["message_id"]  # it answers the question, quoted
    release.set()
    await fake_telegram.wait_for(lambda: fake_telegram.shows(TG_GROUP) == [LONG_ANSWER.strip()])
    # One message, edited in place: nothing posted twice.
    assert len(fake_telegram.sent) == 1
    assert fake_telegram.edits and all(int(e["message_id"]) == first["message_id"]
                                       for e in fake_telegram.edits)  # fmt: skip


async def test_private_reply_is_a_draft_until_the_final_message(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway(streaming=True)
    release = asyncio.Event()
    fake_api.enqueue(Reply("**Bold** start, then " + LONG_ANSWER, hold=release, hold_after=60))
    fake_telegram.text("tell me something long")
    await fake_telegram.wait_for(lambda: bool(fake_telegram.drafts))
    draft = fake_telegram.drafts[0]
    assert draft["parse_mode"] == "HTML" and draft["text"].startswith("<b>Bold</b> start")
    assert int(draft["draft_id"]) != 0
    assert not fake_telegram.sent  # a draft is a preview, not a message
    release.set()
    [sent] = await fake_telegram.wait_sent(1)
    assert sent["shown"] == "Bold start, then " + LONG_ANSWER.strip()
    assert {d["draft_id"] for d in fake_telegram.drafts} == {draft["draft_id"]}


TRICKY = (
    "Start **bold run** and [a link](https://example.org/x) then `code` and\n\n"
    "> a quote with _emphasis_\n\n- item one\n- item **two**\n\n"
    "```python\nx = 1 < 2 and 3 > 2\n```\nend & done"
)


def test_every_prefix_of_an_answer_renders_as_telegram_html():
    """A frame cuts the answer off anywhere: inside a fence, a bold run, a link. Every prefix
    renders to HTML Telegram accepts (the fake's checker is Telegram's rules)."""
    from channels.telegram.replies import pieces
    from tests.fakes.telegram_api import check_telegram_html

    for end in range(1, len(TRICKY) + 1):
        for _md, html in pieces(TRICKY[:end]):
            if html is not None:
                assert check_telegram_html(html) is None, (end, html)


async def test_a_frame_cut_inside_a_code_fence_renders(telegram_gateway, fake_telegram, fake_api):
    await telegram_gateway(streaming=True)
    release = asyncio.Event()
    inside_fence = TRICKY.index("x = 1") + 3
    fake_api.enqueue(Reply(TRICKY, hold=release, hold_after=inside_fence, chunk=inside_fence))
    fake_telegram.text("format something")
    await fake_telegram.wait_for(lambda: bool(fake_telegram.drafts))
    [frame] = fake_telegram.drafts
    assert frame["parse_mode"] == "HTML" and "<pre>" in frame["text"]
    release.set()
    [sent] = await fake_telegram.wait_sent(1)
    assert sent["parse_mode"] == "HTML" and sent["shown"].endswith("end & done")


async def test_no_reply_is_never_shown_even_in_part(telegram_gateway, fake_telegram, fake_api):
    await telegram_gateway(streaming=True)
    release = asyncio.Event()
    fake_api.enqueue(Reply("NO_REPLY", hold=release, hold_after=3, chunk=3), Reply("Fine."))
    _ask_group(fake_telegram, "nothing to say to this")
    await fake_api.wait_for_requests(1)
    release.set()
    _ask_group(fake_telegram, "and to this?")  # answered after the first turn has ended
    [sent] = await fake_telegram.wait_sent(1)
    assert sent["shown"] == "Fine."
    assert fake_telegram.shows(TG_GROUP) == ["Fine."]
    assert not fake_telegram.edits and not fake_telegram.calls_to("deleteMessage")


async def test_tool_progress_then_text_and_pieces_before_tools(
    telegram_gateway, fake_telegram, fake_api, home
):
    app = await telegram_gateway(streaming=True)
    release = asyncio.Event()
    fake_api.enqueue(
        Reply("Let me look that up.", tool_calls=[("memory_search", {"query": "dentist"})]),
        Reply("Your dentist is on Friday.", hold=release, hold_after=0),
    )
    _ask_group(fake_telegram, "when is my dentist?")
    # The piece before the tool call is a message of its own; then the progress note shows.
    await fake_telegram.wait_for(lambda: any(
        "searching memory" in t for t in fake_telegram.shows(TG_GROUP)))  # fmt: skip
    assert fake_telegram.shows(TG_GROUP)[0] == "Let me look that up."
    assert "“dentist”" in fake_telegram.shows(TG_GROUP)[1]
    release.set()
    await fake_telegram.wait_for(
        lambda: (
            fake_telegram.shows(TG_GROUP) == ["Let me look that up.", "Your dentist is on Friday."]
        )
    )
    # Each piece went through the outbox, as any reply does (a crash is recovered from it).
    await asyncio.wait_for(app.idle(), 10)
    assert outbox_rows(home) == [
        ("Let me look that up.", "sent"),
        ("Your dentist is on Friday.", "sent"),
    ]


async def test_tool_progress_can_be_switched_off(telegram_gateway, fake_telegram, fake_api):
    await telegram_gateway(streaming=True, show_tool_progress=False)
    fake_api.enqueue(
        Reply(tool_calls=[("memory_search", {"query": "dentist"})]),
        Reply("Friday."),
    )
    _ask_group(fake_telegram, "when is my dentist?")
    await fake_telegram.wait_sent(1)
    assert fake_telegram.shows(TG_GROUP) == ["Friday."]
    assert not fake_telegram.edits


async def test_a_reply_longer_than_a_message_continues_in_the_next(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway(streaming=True)
    paragraphs = [f"Paragraph {n}: " + ("words and more words " * 20).strip() for n in range(14)]
    answer = "\n\n".join(paragraphs)  # about 6000 characters
    release = asyncio.Event()
    fake_api.enqueue(Reply(answer, hold=release, hold_after=4500, chunk=500))
    _ask_group(fake_telegram, "write a lot")
    await fake_telegram.wait_sent(2)  # the first message is full: the rest goes on in a second
    release.set()
    flat = answer.replace("\n\n", "")
    await fake_telegram.wait_for(
        lambda: "".join(fake_telegram.shows(TG_GROUP)).replace("\n\n", "") == flat
    )
    shown = fake_telegram.shows(TG_GROUP)
    assert len(shown) == 2 and all(len(t) <= 4096 for t in shown)


async def test_flood_limit_on_an_edit_is_waited_out(telegram_gateway, fake_telegram, fake_api):
    await telegram_gateway(streaming=True)
    fake_telegram.fail("editMessageText", Fault(429, "Too Many Requests: retry after 1", 1))
    release = asyncio.Event()
    fake_api.enqueue(Reply(LONG_ANSWER.strip(), hold=release, hold_after=80, chunk=40))
    _ask_group(fake_telegram, "tell me something long")
    await fake_telegram.wait_sent(1)
    release.set()
    await fake_telegram.wait_for(
        lambda: fake_telegram.shows(TG_GROUP) == [LONG_ANSWER.strip()], timeout=15
    )
    edits = fake_telegram.calls_to("editMessageText")
    assert len(edits) >= 2  # the refused edit, then the ones after the wait
    assert len(fake_telegram.sent) == 1


async def test_stop_mid_stream_keeps_what_was_shown_marked_stopped(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway(streaming=True)
    never = asyncio.Event()
    fake_api.enqueue(Reply(LONG_ANSWER.strip(), hold=never, hold_after=80, chunk=20))
    _ask_group(fake_telegram, "long task please")
    [first] = await fake_telegram.wait_sent(1)
    shown = first["shown"]
    fake_telegram.text(f"/stop@{BOT_USERNAME}", user=OWNER, chat=TG_GROUP,
                       chat_type="supergroup")  # fmt: skip
    await fake_telegram.wait_for(
        lambda: any("(stopped)" in t for t in fake_telegram.shows(TG_GROUP))
    )
    [stopped, *_rest] = fake_telegram.shows(TG_GROUP)
    assert stopped.startswith(shown) and stopped.endswith("(stopped)")
    # The stopped request is not asked again with the next message.
    fake_api.enqueue(Reply("Sure."))
    _ask_group(fake_telegram, "first")
    await fake_telegram.wait_for(lambda: "Sure." in fake_telegram.shows(TG_GROUP))
    last = fake_api.message_requests[-1].body
    assert "long task please" not in str(last["messages"])
    assert "first" in last_user_text(last)
    never.set()


async def test_a_restart_mid_stream_replaces_the_half_written_reply(
    telegram_gateway, fake_telegram, fake_api
):
    first_run = await telegram_gateway(streaming=True)
    never = asyncio.Event()
    fake_api.enqueue(Reply(LONG_ANSWER.strip(), hold=never, hold_after=80, chunk=20))
    _ask_group(fake_telegram, "tell me something long")
    [half] = await fake_telegram.wait_sent(1)
    await first_run.stop(grace=0)  # cut off mid-stream; the question is still owed an answer
    never.set()
    fake_api.enqueue(Reply("The whole answer."))
    second_run = await telegram_gateway(streaming=True)
    await fake_telegram.wait_for(lambda: fake_telegram.shows(TG_GROUP) == ["The whole answer."])
    deleted = fake_telegram.calls_to("deleteMessage")
    assert [int(c.params["message_id"]) for c in deleted] == [half["message_id"]]
    assert len(fake_telegram.sent) == 2  # the half-written one (taken back), then the answer
    # Taken back once: the next start has nothing left to take back.
    await second_run.stop()
    await telegram_gateway(streaming=True)
    assert len(fake_telegram.calls_to("deleteMessage")) == 1


async def test_new_shows_typing_while_the_session_is_summarised(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway(streaming=True)
    fake_api.enqueue(Reply("Hello."))
    fake_telegram.text("hi")
    await fake_telegram.wait_sent(1)
    release = asyncio.Event()
    fake_api.enqueue(Reply("- said hello", hold=release, hold_after=0))  # the /new summary
    before = len(fake_telegram.calls_to("sendChatAction"))
    fake_telegram.text("/new")
    await fake_api.wait_for_requests(2)
    # The summary is being written: "typing…" shows meanwhile.
    await fake_telegram.wait_for(lambda: len(fake_telegram.calls_to("sendChatAction")) > before)
    release.set()
    await fake_telegram.wait_sent(2)


LINKED = "Your report is at https://example.org/report?d=anything, as you asked. " * 3


def _no_preview(params: dict) -> bool:
    options = params.get("link_preview_options")
    return isinstance(options, dict) and options.get("is_disabled") is True


async def test_no_reply_carries_a_link_preview_sent_or_edited(
    telegram_gateway, fake_telegram, fake_api
):
    """Telegram's servers fetch an address in a message to preview it; an address a model was
    told to compose must not leave that way, in a message sent whole or edited while written."""
    await telegram_gateway(streaming=True)
    release = asyncio.Event()
    fake_api.enqueue(Reply(LINKED.strip(), hold=release, hold_after=80, chunk=20))
    _ask_group(fake_telegram, "where is the report?")
    await fake_telegram.wait_sent(1)
    release.set()
    await fake_telegram.wait_for(lambda: fake_telegram.shows(TG_GROUP) == [LINKED.strip()])
    assert fake_telegram.edits
    assert all(_no_preview(p) for p in [*fake_telegram.sent, *fake_telegram.edits])
    fake_api.enqueue(Reply(LINKED.strip()))
    fake_telegram.text("and in private?")
    await fake_telegram.wait_sent(2)
    assert _no_preview(fake_telegram.sent[-1]), fake_telegram.sent[-1]
