"""A fake OpenAI-compatible embeddings API on loopback: ``POST /v1/embeddings`` with ``model``
and ``input`` (a string or a list), answered with ``{"data": [{"index", "embedding"}]}`` in
scrambled order, as the real services may. The vectors come from ``WordHashEmbedder``
(unnormalised, as some servers send them), with ``band`` a shared component that puts every
cosine in a narrow band near 1. A test can queue failures (status, Retry-After)
or a broken answer, and sees every request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from aiohttp import web

from tests.fakes.embedding_model import WordHashEmbedder
from tests.fakes.observed import Observed


@dataclass
class Asked:
    model: str
    inputs: list[str]
    authorization: str


class FakeEmbeddings(Observed):
    def __init__(
        self, api_key: str | None = "emb-test-key", dim: int = 32, band: float = 0.0
    ) -> None:
        self.billed = 0  # prompt tokens reported in answers
        super().__init__()
        self.api_key = api_key
        self.model = WordHashEmbedder(dim=dim)
        # A component every vector shares, this long against each text's own of length 1:
        # every cosine is squeezed into a narrow band near 1, as some models' are.
        self.band = band
        self.asked: list[Asked] = []
        # Answers given before the real one: (status, Retry-After or None, body).
        self.failures: list[tuple[int, str | None, dict[str, Any]]] = []
        self.broken: dict[str, Any] | None = None  # answered instead of embeddings when set
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        own = self.model.vector(text)
        if not self.band:
            return own
        return np.append(own, np.float32(self.band)).astype(np.float32)

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"
        return self.base_url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def fail(self, status: int, times: int = 1, retry_after: str | None = None) -> None:
        body = {"error": {"message": f"injected {status}", "type": "test"}}
        self.failures += [(status, retry_after, body)] * times

    async def _embeddings(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        body = await request.json()
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        self.asked.append(Asked(str(body.get("model")), inputs, auth))
        self._notify()
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            error = {"error": {"message": f"Incorrect API key provided: {auth[7:]}"}}
            return web.json_response(error, status=401)
        if self.failures:
            status, retry_after, answer = self.failures.pop(0)
            headers = {"Retry-After": retry_after} if retry_after else None
            return web.json_response(answer, status=status, headers=headers)
        if self.broken is not None:
            return web.json_response(self.broken)
        data = [
            {"object": "embedding", "index": i, "embedding": (3.0 * self._vector(t)).tolist()}
            for i, t in enumerate(inputs)
        ]
        # What OpenAI bills: a token for every four characters, say.
        tokens = sum(max(1, len(t) // 4) for t in inputs)
        self.billed += tokens
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return web.json_response(
            {"object": "list", "data": data[::-1], "model": body["model"], "usage": usage}
        )
