"""Voice notes and audio files, heard: through the real Telegram and Discord clients, their
fakes, and a fake transcription service, with a real few-second Ogg/Opus recording
(``tests/fixtures/voice-note.ogg``, spoken by espeak-ng and encoded by opusenc)."""

from __future__ import annotations

import contextlib
import socket
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
    assert heard.content_type == "audio/ogg"
    assert heard.authorization == "Bearer tr-test-key" and heard.filename.endswith(".ogg")
    told = last_user_text(fake_api.message_requests[0].body)
    assert f"[voice note, 0:03] {WORDS}" in told
    # Kept in the owner's private inbox, like any file.
    (saved,) = [p for p in (home / "workspace" / "inbox" / "private").rglob("*") if p.is_file()]
    assert saved.read_bytes() == RECORDING and "inbox/private/" in told


async def test_a_telegram_audio_file_is_heard_by_its_name_and_type_and_files_still_arrive(
    home, fake_api, fake_telegram, ears
):
    """An audio file (not a voice note) goes to the service under its own name and type; with
    transcription on, a document is still kept and told of as before."""
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg, **ears.config()):
        file_id, uid = fake_telegram.add_file(RECORDING)
        fake_telegram.text("", audio={"file_id": file_id, "file_unique_id": uid, "duration": 3,
                                      "file_name": "crows.mp3", "mime_type": "audio/mpeg",
                                      "file_size": len(RECORDING)})  # fmt: skip
        await fake_telegram.wait_sent(1)
        doc_id, doc_uid = fake_telegram.add_file(b"quarterly numbers")
        fake_telegram.text("", caption="keep this", document={
            "file_id": doc_id, "file_unique_id": doc_uid, "file_name": "report.txt",
            "mime_type": "text/plain", "file_size": 17})  # fmt: skip
        await fake_telegram.wait_sent(2)
    (heard,) = ears.heard
    assert heard.filename == "crows.mp3" and heard.content_type == "audio/mpeg"
    assert f"[audio file, 0:03] {WORDS}" in last_user_text(fake_api.message_requests[0].body)
    told = last_user_text(fake_api.message_requests[1].body)
    assert "inbox/private/" in told and "report.txt" in told
    saved = sorted(p.name for p in (home / "workspace" / "inbox" / "private").rglob("*.*"))
    assert saved == ["crows.mp3", "report.txt"]


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


# Corvid asks python-telegram-bot for lengths as timedeltas; an environment that says
# otherwise (PTB_TIMEDELTA=0) gets whole seconds, measured the same.
@pytest.mark.parametrize("timedeltas", ["1", "0"])
@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")
async def test_recordings_over_the_caps_are_kept_but_not_sent_out(
    home, fake_api, fake_telegram, ears, monkeypatch, timedeltas
):
    monkeypatch.setenv("PTB_TIMEDELTA", timedeltas)
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


async def test_the_default_size_cap_holds_without_a_cap_in_config_yaml(
    home, fake_api, fake_telegram, ears
):
    """No max_bytes in config.yaml: a recording Telegram says is one byte over 20 MB is not
    sent out (nor downloaded for it)."""
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg, **ears.config()):
        file_id, uid = fake_telegram.add_file(RECORDING)
        voice = {"file_id": file_id, "file_unique_id": uid, "duration": 3,
                 "mime_type": "audio/ogg", "file_size": 20_000_001}  # fmt: skip
        fake_telegram.text("", voice=voice)
        await fake_telegram.wait_sent(1)
    assert ears.heard == [] and fake_telegram.calls_to("getFile") == []
    told = last_user_text(fake_api.message_requests[0].body)
    assert "(not transcribed: larger than 20.0 MB" in told, told


async def test_the_size_cap_holds_for_a_recording_telegram_announces_without_a_size(
    home, fake_api, fake_telegram, ears
):
    """Telegram's file_size is optional: the bytes as downloaded are what the cap judges."""
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg, **ears.config(max_bytes=1000)):
        file_id, uid = fake_telegram.add_file(RECORDING)
        fake_telegram.text("", voice={"file_id": file_id, "file_unique_id": uid, "duration": 3,
                                      "mime_type": "audio/ogg"})  # fmt: skip
        await fake_telegram.wait_sent(1)
    assert len(RECORDING) > 1000
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


@pytest.mark.parametrize(
    ("cap", "said"),
    [({"max_seconds": 60}, "longer than 1:00"), ({"max_bytes": 1000}, "larger than")],
)
async def test_a_discord_voice_message_over_a_cap_is_kept_but_not_sent_out(
    home, fake_api, fake_discord, ears, cap, said
):
    """The caps hold on Discord as on Telegram: its own length (``duration_secs``) and size."""
    section = fake_discord.channel_config()
    async with _corvid(home, fake_api, "discord", section, **ears.config(**cap)):
        att = fake_discord.attachment("voice-message.ogg", RECORDING, "audio/ogg")
        att["duration_secs"] = 61.0
        fake_discord.message("", guild=False, attachments=[att], flags=8192)
        await fake_discord.wait_sent(1)
    assert ears.heard == []
    told = last_user_text(fake_api.message_requests[0].body)
    assert f"(not transcribed: {said}" in told and "the recording is saved at inbox/" in told


async def test_a_recording_exactly_at_the_caps_is_heard(home, fake_api, fake_telegram, ears):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    caps = {"max_seconds": 60, "max_bytes": len(RECORDING)}
    async with _corvid(home, fake_api, "telegram", tg, **ears.config(**caps)):
        _voice(fake_telegram, seconds=60)
        await fake_telegram.wait_sent(1)
    assert [h.data for h in ears.heard] == [RECORDING]
    assert f"[voice note, 1:00] {WORDS}" in last_user_text(fake_api.message_requests[0].body)


async def test_a_recording_too_large_for_the_inbox_too_says_so(home, fake_api, fake_telegram, ears):
    """Over the transcription cap and over the chat's file limit: neither heard nor kept,
    and the model is told both."""
    small = len(RECORDING) - 1
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)], max_file_bytes=small)
    async with _corvid(home, fake_api, "telegram", tg, **ears.config(max_bytes=small)):
        _voice(fake_telegram)
        await fake_telegram.wait_sent(1)
    assert ears.heard == []
    told = last_user_text(fake_api.message_requests[0].body)
    assert "(not transcribed: larger than " in told
    assert "was not saved: files larger than " in told and "saved at" not in told
    assert not [p for p in (home / "workspace" / "inbox").rglob("*") if p.is_file()]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({"text": "   "}, "[voice note, 0:03] (no words could be made out)"),
        ({"transcript": WORDS}, "(could not be transcribed: the transcription service's "
                                "answer had no text; the recording is saved at inbox/private/"),
    ],
)  # fmt: skip
async def test_an_answer_without_words_is_said(home, fake_api, fake_telegram, ears, answer, said):
    ears.answer = answer
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg, **ears.config()):
        _voice(fake_telegram)
        await fake_telegram.wait_sent(1)
    assert said in last_user_text(fake_api.message_requests[0].body)


async def test_a_service_that_cannot_be_reached_is_said(home, fake_api, fake_telegram, ears):
    await ears.close()  # nothing listens at its address any more
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    async with _corvid(home, fake_api, "telegram", tg, **ears.config()):
        _voice(fake_telegram)
        await fake_telegram.wait_sent(1)
    told = last_user_text(fake_api.message_requests[0].body)
    assert "(could not be transcribed: the transcription service did not answer (Connect" in told


async def test_a_discord_audio_file_of_unknown_length_is_heard(home, fake_api, fake_discord, ears):
    section = fake_discord.channel_config()
    async with _corvid(home, fake_api, "discord", section, **ears.config()):
        att = fake_discord.attachment("crows.ogg", RECORDING, "audio/ogg")  # no duration given
        fake_discord.message("", guild=False, attachments=[att])
        await fake_discord.wait_sent(1)
    assert [h.filename for h in ears.heard] == ["crows.ogg"]
    assert f"[audio file, ?] {WORDS}" in last_user_text(fake_api.message_requests[0].body)


def test_lengths_are_shown_in_hours_minutes_and_seconds():
    from channels.voice import duration

    assert [duration(s) for s in (None, 0, 59.6, 3599, 3600, 3661)] == [
        "?", "0:00", "1:00", "59:59", "1:00:00", "1:01:01"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("status", "key", "level", "said"),
    [
        (200, "tr-test-key", "ok", "answers and takes the key; model whisper-test"),
        (422, "tr-test-key", "ok", "answers and takes the key"),  # no audio, as expected
        (403, "tr-test-key", "FAIL", "refused the key in transcription.api_key (HTTP 403)"),
        (200, "", "FAIL", "wants a key (HTTP 401) and transcription.api_key is empty"),
        (404, "tr-test-key", "FAIL", "no transcription service at"),
        (405, "tr-test-key", "FAIL", "no transcription service at"),
        (500, "tr-test-key", "warn", "answered HTTP 500"),
        (503, "tr-test-key", "warn", "answered HTTP 503"),
    ],
)
async def test_the_doctor_probe_reads_the_services_answer(ears, status, key, level, said):
    from channels.voice import OpenAITranscriber

    ears.status = status
    check = await OpenAITranscriber(ears.base_url, key, "whisper-test", 5).probe(
        5, "transcription.api_key"
    )
    assert (check.status.value, check.name) == (level, "transcription")
    assert said in check.message
    if status in (404, 405):
        assert check.fix.endswith("as in https://api.openai.com/v1")


async def test_the_doctor_probe_says_when_the_service_is_away_or_slow(ears):
    from channels.voice import OpenAITranscriber

    base = ears.base_url
    await ears.close()
    away = await OpenAITranscriber(base, "k", "m", 5).probe(5, "transcription.api_key")
    assert away.status.value == "FAIL" and "cannot reach http://127.0.0.1:" in away.message
    assert away.fix == "check the network and its base_url"

    # A server that never answers: the system takes the connection into the listening
    # socket's queue, and nothing accepts it, so no socket of it is left for the test to close.
    with socket.create_server(("127.0.0.1", 0)) as listening:
        url = f"http://127.0.0.1:{listening.getsockname()[1]}/v1"
        slow = await OpenAITranscriber(url, "k", "m", 5).probe(0.2, "transcription.api_key")
    assert slow.status.value == "FAIL" and slow.message.endswith("did not answer within 0.2 s")
