"""Voice notes and audio files, heard: through the real Telegram and Discord clients, their
fakes, and a fake transcription service, with a real few-second Ogg/Opus recording
(``tests/fixtures/voice-note.ogg``, spoken by espeak-ng and encoded by opusenc)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.app import build_app
from gateway.channel_setup import build_channels
from tests.conftest import OWNER, make_config
from tests.fakes.anthropic_api import last_user_text
from tests.fakes.transcription_api import FakeTranscription

RECORDING = (Path(__file__).parent.parent / "fixtures" / "voice-note.ogg").read_bytes()
WORDS = "Remind me to buy milk tomorrow morning."


@pytest.fixture
async def ears() -> AsyncIterator[FakeTranscription]:
    service = FakeTranscription(WORDS)
    await service.start()
    yield service
    await service.close()


@contextlib.asynccontextmanager
async def _corvid(home, fake_api, name: str, section: dict[str, Any], **transcription: Any):
    sections: dict[str, Any] = {"channels": {name: section}}
    if transcription:
        sections["transcription"] = transcription
    config = make_config(home, fake_api.base_url, **sections)
    channels = build_channels(config)
    for channel in channels:
        if name == "discord":
            channel.guild_ready_timeout = 0.1
    app = build_app(config, channels)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


def _voice(fake_telegram, seconds: int = 3, data: bytes = RECORDING) -> None:
    file_id, uid = fake_telegram.add_file(data)
    fake_telegram.text("", voice={"file_id": file_id, "file_unique_id": uid, "duration": seconds,
                                  "mime_type": "audio/ogg", "file_size": len(data)})  # fmt: skip


async def test_a_telegram_voice_note_is_answered_by_its_words(home, fake_api, fake_telegram, ears):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg, **ears.config()):
        _voice(fake_telegram)
        await fake_telegram.wait_sent(1)
    (heard,) = ears.heard
    assert heard.data == RECORDING and heard.model == "whisper-test"
    assert heard.authorization == "Bearer tr-test-key" and heard.filename.endswith(".ogg")
    told = last_user_text(fake_api.message_requests[0].body)
    assert f"[voice note, 0:03] {WORDS}" in told
    # Kept in the owner's private inbox, like any file.
    (saved,) = [p for p in (home / "workspace" / "inbox" / "private").rglob("*") if p.is_file()]
    assert saved.read_bytes() == RECORDING and "inbox/private/" in told


async def test_a_failed_transcription_is_said_and_the_turn_goes_on(
    home, fake_api, fake_telegram, ears
):
    ears.status = 503
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg, **ears.config()):
        _voice(fake_telegram)
        sent = await fake_telegram.wait_sent(1)
    told = last_user_text(fake_api.message_requests[0].body)
    assert "[voice note, 0:03] (could not be transcribed: the transcription service said " \
           "HTTP 503; the recording is saved at inbox/private/" in told  # fmt: skip
    assert sent[0]["shown"].startswith("echo: ")  # the model answered all the same


async def test_recordings_over_the_caps_are_kept_but_not_sent_out(
    home, fake_api, fake_telegram, ears
):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg, **ears.config(max_seconds=60)):
        _voice(fake_telegram, seconds=61)
        await fake_telegram.wait_sent(1)
    assert ears.heard == []
    told = last_user_text(fake_api.message_requests[0].body)
    assert "[voice note, 1:01] (not transcribed: longer than 1:00; the recording is saved at " \
           "inbox/private/" in told  # fmt: skip
    (saved,) = [p for p in (home / "workspace" / "inbox" / "private").rglob("*") if p.is_file()]
    assert saved.read_bytes() == RECORDING


async def test_a_recording_over_the_size_cap_is_kept_but_not_sent_out(
    home, fake_api, fake_telegram, ears
):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    cap = len(RECORDING) - 1
    async with _corvid(home, fake_api, "telegram", tg, **ears.config(max_bytes=cap)):
        _voice(fake_telegram)
        await fake_telegram.wait_sent(1)
    assert ears.heard == []  # not a byte of it went to the transcription service
    told = last_user_text(fake_api.message_requests[0].body)
    assert "(not transcribed: larger than " in told and "inbox/private/" in told
    (saved,) = [p for p in (home / "workspace" / "inbox" / "private").rglob("*") if p.is_file()]
    assert saved.read_bytes() == RECORDING


async def test_a_key_read_from_a_file_with_its_newline_still_works(
    home, fake_api, fake_telegram, ears
):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    section = ears.config(api_key=ears.api_key + "\n")
    async with _corvid(home, fake_api, "telegram", tg, **section):
        _voice(fake_telegram)
        await fake_telegram.wait_sent(1)
    assert ears.heard[0].authorization == "Bearer tr-test-key"
    assert WORDS in last_user_text(fake_api.message_requests[0].body)


async def test_without_transcription_a_voice_note_gets_the_old_answer(
    home, fake_api, fake_telegram
):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg):
        _voice(fake_telegram)
        sent = await fake_telegram.wait_sent(1)
    assert "can't read voice messages" in sent[0]["shown"]
    assert fake_api.message_requests == []


async def test_a_discord_voice_message_is_answered_by_its_words(home, fake_api, fake_discord, ears):
    section = fake_discord.channel_config()
    async with _corvid(home, fake_api, "discord", section, **ears.config()):
        att = fake_discord.attachment("voice-message.ogg", RECORDING, "audio/ogg")
        att["duration_secs"] = 2.78
        fake_discord.message("", guild=False, attachments=[att], flags=8192)
        await fake_discord.wait_sent(1)
    assert [h.data for h in ears.heard] == [RECORDING]
    assert f"[voice note, 0:03] {WORDS}" in last_user_text(fake_api.message_requests[0].body)
