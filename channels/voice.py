"""Voice notes and audio files, kept in the inbox and heard through a transcription API."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from channels.inbox import Intake, mb, safe_name
from gateway.contract.events import Attachment, SessionKey
from gateway.contract.ports import Check, Status

log = logging.getLogger(__name__)

# The file extensions transcription APIs go by when the type is vague.
_SUFFIX = {
    "audio/ogg": ".ogg",
    "audio/mpeg": ".mp3",
    "audio/mp4": ".m4a",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/webm": ".webm",
    "audio/flac": ".flac",
}


class TranscriptionError(Exception):
    """The recording could not be turned into words; the message says why, for the model."""


class Transcriber(Protocol):
    async def transcribe(self, data: bytes, name: str, mime: str) -> str: ...


class OpenAITranscriber:
    """``POST {base_url}/audio/transcriptions`` with the file and the model; the answer's
    ``text`` is the words."""

    def __init__(self, base_url: str, api_key: str | None, model: str, timeout: float) -> None:
        self.url = base_url.rstrip("/") + "/audio/transcriptions"
        self.api_key = api_key
        self.model = model
        self.timeout = timeout

    async def transcribe(self, data: bytes, name: str, mime: str) -> str:
        import httpx

        key = (self.api_key or "").strip()  # a key read from a file often ends in a newline
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        files = {"file": (name, data, mime or "application/octet-stream")}
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                answer = await client.post(
                    self.url, headers=headers, files=files, data={"model": self.model}
                )
        except Exception as exc:
            # Only the kind of failure: an error's text can quote the request's headers.
            log.warning("transcription request failed: %s", type(exc).__name__)
            raise TranscriptionError(
                f"the transcription service did not answer ({type(exc).__name__})"
            ) from None
        if answer.status_code != 200:
            raise TranscriptionError(f"the transcription service said HTTP {answer.status_code}")
        try:
            text = answer.json()["text"]
        except (ValueError, KeyError, TypeError):
            raise TranscriptionError("the transcription service's answer had no text") from None
        return str(text).strip()

    async def probe(self, limit: float, key_source: str) -> Check:
        """Whether the service is there and takes the key (for ``corvid doctor``): it is sent
        a few bytes that are not audio, which a service that takes the key refuses as such
        (400, 415, 422) without hearing, or billing, anything."""
        import httpx

        name, where = "transcription", _shown_url(self.url)
        key = (self.api_key or "").strip()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        files = {"file": ("corvid-doctor.txt", b"not audio", "text/plain")}
        try:
            async with asyncio.timeout(limit), httpx.AsyncClient(timeout=limit) as client:
                answer = await client.post(
                    self.url, headers=headers, files=files, data={"model": self.model}
                )
        except TimeoutError:
            return Check(Status.FAIL, name, f"{where} did not answer within {limit:g} s")
        except httpx.HTTPError as exc:
            unreachable = f"cannot reach {where} ({type(exc).__name__})"
            return Check(Status.FAIL, name, unreachable, "check the network and its base_url")
        status = answer.status_code
        if status in (401, 403):
            refused = f"{where} refused the key in {key_source} (HTTP {status})"
            if not key:
                refused = f"{where} wants a key (HTTP {status}) and {key_source} is empty"
            return Check(Status.FAIL, name, refused, f"check {key_source}")
        if status in (404, 405):
            missing = f"no transcription service at {where} (HTTP {status})"
            fix = "transcription.base_url ends before /audio/transcriptions, as in "
            return Check(Status.FAIL, name, missing, fix + "https://api.openai.com/v1")
        if status >= 500:
            return Check(Status.WARN, name, f"{where} answered HTTP {status}", "try again later")
        return Check(Status.OK, name, f"{where} answers and takes the key; model {self.model}")


def _shown_url(url: str) -> str:
    """An address without what may hold a secret (user, password, query)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class Hearing:
    transcriber: Transcriber
    max_bytes: int
    max_seconds: int
    # Told of each recording a paid service transcribed (the chat, its seconds): the ledger.
    heard: Callable[[SessionKey, float | None], None] | None = None


def duration(seconds: int | float | None) -> str:
    """``0:42``, ``1:05:09``; ``?`` when the platform did not say."""
    if seconds is None:
        return "?"
    total = round(seconds)
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


@dataclass(frozen=True)
class Recording:
    """A voice note or audio file as a platform announces it."""

    kind: str  # "voice note" or "audio file"
    name: str
    mime: str
    size: int
    seconds: float | None
    read: Callable[[], Awaitable[bytes]]


async def hear(
    hearing: Hearing, intake: Intake, key: SessionKey, rec: Recording
) -> tuple[Attachment | None, str]:
    """The recording kept in the chat's inbox (when it fits the file limit), and what the model
    reads of it: its words, or why there are none."""
    head = f"[{rec.kind}, {duration(rec.seconds)}]"
    name = rec.name or "recording" + _SUFFIX.get(rec.mime.split(";")[0], ".ogg")
    too_long = rec.seconds is not None and rec.seconds > hearing.max_seconds
    data = None if rec.size > hearing.max_bytes or too_long else await rec.read()

    async def read() -> bytes:
        return data if data is not None else await rec.read()

    # The platform's size may be missing (Telegram's is optional) or wrong: once downloaded,
    # the bytes themselves are held to the cap.
    if data is None or len(data) > hearing.max_bytes:
        # Kept like any file (within the inbox's own limits), just not sent out.
        size = rec.size if data is None else len(data)
        kept = await intake.take(key, name, rec.mime, size, read)
        cap = (
            f"longer than {duration(hearing.max_seconds)}"
            if too_long
            else (f"larger than {mb(hearing.max_bytes)}")
        )
        return _kept(kept), f"{head} (not transcribed: {cap}{_where(kept)})"
    kept = await intake.take(key, name, rec.mime, len(data), read)
    saved = _kept(kept)
    try:
        words = await hearing.transcriber.transcribe(data, safe_name(name), rec.mime)
    except TranscriptionError as exc:
        log.warning("%s: a %s could not be transcribed: %s", key, rec.kind, exc)
        return saved, f"{head} (could not be transcribed: {exc}{_where(kept)}; tell them)"
    if hearing.heard is not None:
        hearing.heard(key, rec.seconds)
    if not words:
        return saved, f"{head} (no words could be made out)"
    return saved, f"{head} {words}"


def _kept(taken: Attachment | str) -> Attachment | None:
    return taken if isinstance(taken, Attachment) else None


def _where(taken: Attachment | str) -> str:
    """Where the recording is, or why it was not kept (the inbox's size limit, a full quota)."""
    if isinstance(taken, Attachment):
        return f"; the recording is saved at {taken.path}"
    return f"; {taken.strip('[]')}"
