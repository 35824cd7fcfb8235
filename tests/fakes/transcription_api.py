"""A fake OpenAI-compatible transcription API on loopback: ``POST /v1/audio/transcriptions``
with a multipart file and model, answered with ``{"text": ...}``. Like the real services it
refuses what is not audio it knows (here: anything but an Ogg file), and a test can make it
fail or say anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.observed import Observed


@dataclass
class Heard:
    data: bytes
    filename: str
    content_type: str
    model: str
    authorization: str


class FakeTranscription(Observed):
    def __init__(self, text: str = "", api_key: str | None = "tr-test-key") -> None:
        super().__init__()
        self.text = text  # what every recording "says"
        self.api_key = api_key
        self.status = 200  # set to make the service fail
        self.answer: Any = None  # set to answer this JSON instead of {"text": ...}
        self.heard: list[Heard] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"
        return self.base_url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def config(self, **extra: Any) -> dict[str, Any]:
        """The ``transcription`` section of config.yaml that points Corvid here."""
        return {"enabled": True, "base_url": self.base_url, "api_key": self.api_key,
                "model": "whisper-test", **extra}  # fmt: skip

    async def _transcribe(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        form = await request.post()
        file, model = form.get("file"), form.get("model")
        if not isinstance(file, web.FileField) or not isinstance(model, str):
            return web.json_response({"error": {"message": "file and model needed"}}, status=400)
        data = file.file.read()
        self.heard.append(Heard(data, file.filename, file.content_type, model, auth))
        self._notify()
        if self.status != 200:
            return web.json_response({"error": {"message": "injected"}}, status=self.status)
        if not data.startswith(b"OggS"):
            return web.json_response({"error": {"message": "not audio"}}, status=400)
        return web.json_response({"text": self.text} if self.answer is None else self.answer)
