"""Voice notes heard by a whisper.cpp model on this machine (``transcription.model_path``):
the real binding (pywhispercpp) and decoder (PyAV) on the real Ogg/Opus recording, with a
generated model file (``tests/fakes/whisper_model.py``): real format, random weights. Its
words are noise, so the tests check the path, not the words."""

from __future__ import annotations

from pathlib import Path

import pytest

from channels.voice import TranscriptionError
from channels.voice_local import RATE, WhisperCppTranscriber, decode
from gateway.contract.errors import ConfigError
from tests.channels.test_voice import RECORDING, _corvid, _voice
from tests.conftest import OWNER
from tests.fakes.anthropic_api import last_user_text
from tests.fakes.whisper_model import write_model


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return write_model(tmp_path_factory.mktemp("whisper") / "ggml-test.bin")


def test_the_recording_is_decoded_to_16_khz_mono():
    pcm = decode(RECORDING)
    assert pcm.dtype.name == "float32" and pcm.ndim == 1
    # The fixture is a 2.8 s recording (espeak-ng); Opus pads a little at either end.
    assert 2.6 * RATE < len(pcm) < 3.1 * RATE
    assert 0.01 < float(abs(pcm).max()) <= 1.0  # speech, not silence


@pytest.mark.parametrize("data", [b"", b"not audio at all" * 100, RECORDING[: len(RECORDING) // 8]])
def test_what_is_not_audio_is_a_transcription_error(data):
    try:
        pcm = decode(data)
    except TranscriptionError as exc:
        assert "could not be decoded" in str(exc) or "no audio" in str(exc)
    else:  # a cut-off recording decodes as far as it goes
        assert len(pcm) < 2.6 * RATE


async def test_the_local_model_hears_the_recording(model):
    ears = WhisperCppTranscriber(model, language="en", timeout=60)
    first = await ears.transcribe(RECORDING, "voice.ogg", "audio/ogg")
    loaded = ears._model
    again = await ears.transcribe(RECORDING, "voice.ogg", "audio/ogg")
    # Noise from random weights, but words; the model is loaded once.
    assert first.strip() and again.strip() and ears._model is loaded is not None


async def test_a_model_file_removed_after_start_is_said(tmp_path):
    path = write_model(tmp_path / "gone.bin")
    ears = WhisperCppTranscriber(path, timeout=60)
    path.unlink()
    with pytest.raises(TranscriptionError, match=r"the model file gone\.bin is gone"):
        await ears.transcribe(RECORDING, "voice.ogg", "audio/ogg")


async def test_a_telegram_voice_note_is_heard_on_this_machine(home, fake_api, fake_telegram, model):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    local = {"enabled": True, "model_path": str(model), "language": "en"}
    async with _corvid(home, fake_api, "telegram", tg, **local):
        _voice(fake_telegram)
        await fake_telegram.wait_sent(1, timeout=60)
    told = last_user_text(fake_api.message_requests[0].body)
    assert "[voice note, 0:03] " in told
    assert "could not be transcribed" not in told and "no words" not in told


async def test_a_missing_model_file_stops_the_start_naming_the_key(home, fake_api, fake_telegram):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    local = {"enabled": True, "model_path": "models/none.bin"}
    with pytest.raises(ConfigError) as caught:
        async with _corvid(home, fake_api, "telegram", tg, **local):
            pass
    assert caught.value.key == "transcription.model_path"
    assert f"no model file at {home / 'models' / 'none.bin'}" in str(caught.value)


async def test_a_transcription_stopped_midway_does_not_hold_up_the_next(tmp_path):
    import asyncio
    import threading

    inside, release = threading.Event(), threading.Event()

    class Slow(WhisperCppTranscriber):
        def _hear(self, data: bytes) -> str:
            inside.set()
            release.wait(30)
            return "words"

    ears = Slow(tmp_path / "unused.bin", timeout=60)
    first = asyncio.create_task(ears.transcribe(RECORDING, "a.ogg", "audio/ogg"))
    await asyncio.to_thread(inside.wait, 30)  # the model is at work in its thread
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    release.set()  # the stopped one ends; the next is not locked out
    assert await asyncio.wait_for(ears.transcribe(RECORDING, "b.ogg", "audio/ogg"), 30) == "words"
