"""Files that come with a Discord message: images for the model, the rest to the inbox or heard."""

from __future__ import annotations

import logging
from typing import Any

from channels import inbox
from channels.access import Fetched
from channels.inbox import Intake
from channels.voice import Hearing, Recording, hear
from gateway.contract.events import Attachment, SessionKey

log = logging.getLogger(__name__)


def heard(attachment: Any, hearing: Hearing | None, voice_message: bool) -> bool:
    """Is this attachment a recording to transcribe?"""
    audio = (attachment.content_type or "").startswith("audio/")
    return hearing is not None and (voice_message or audio)


async def fetch(
    files: list[Any],
    key: SessionKey,
    intake: Intake,
    hearing: Hearing | None,
    voice_message: bool,
) -> Fetched:
    import aiohttp
    import discord

    attachments: list[Attachment] = []
    notes: list[str] = []
    for f in files:
        try:
            if hearing is not None and heard(f, hearing, voice_message):
                rec = Recording(
                    "voice note" if voice_message else "audio file",
                    "" if voice_message else f.filename,
                    (f.content_type or "audio/ogg").split(";")[0],
                    f.size,
                    f.duration,
                    f.read,
                )
                kept, words = await hear(hearing, intake, key, rec)
                got: Attachment | str | None = kept
                notes.append(words)
            else:
                got = await intake.take(key, f.filename, f.content_type or "", f.size, f.read)
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            log.warning("%s: could not download %s: %s", key, f.filename, exc)
            got = f"[The file {inbox.safe_name(f.filename)} could not be downloaded.]"
        if isinstance(got, Attachment):
            attachments.append(got)
        elif isinstance(got, str):
            notes.append(got)
    return tuple(attachments), tuple(notes)
