"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Ollama, llama.cpp...)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np

from agent.memory.embedding.base import EmbeddingError, Vectors, unit_rows

log = logging.getLogger(__name__)

MAX_PAUSE = 30.0  # seconds, whatever Retry-After asks for
_RETRIED = frozenset({408, 409, 429})


class OpenAIEmbedder:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        batch_size: int = 32,
        timeout: float = 60.0,
        retries: int = 4,
        backoff: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.batch_size = max(1, batch_size)
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        self._key = api_key or ""
        # The key goes in this header only, never into an error or a log line.
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
        )
        self._dim = 0
        # Told the tokens of each answered request (the model, its input tokens): the ledger.
        self.on_usage: Callable[[str, int], None] | None = None

    @property
    def model_id(self) -> str:
        return f"openai:{self.model}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        parts = [
            self._batch(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        if not parts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def close(self) -> None:
        self._client.close()

    def _batch(self, texts: list[str]) -> Vectors:
        body = {"model": self.model, "input": texts}
        attempt = 0
        while True:
            try:
                response = self._client.post("embeddings", json=body)
            except httpx.TransportError as exc:  # refused, reset, timed out
                if attempt >= self.retries:
                    raise EmbeddingError(
                        f"the embedding service at {self._client.base_url} cannot be reached "
                        f"({type(exc).__name__})"
                    ) from None
                pause = self._pause(attempt, None)
                log.warning(
                    "embedding request failed (%s); again in %.1f s", type(exc).__name__, pause
                )
            else:
                status = response.status_code
                if status == 200:
                    vectors = self._vectors(response, len(texts))
                    self._count(response)
                    return vectors
                if not (status in _RETRIED or status >= 500) or attempt >= self.retries:
                    raise EmbeddingError(self._refusal(response))
                pause = self._pause(attempt, response.headers.get("Retry-After"))
                log.warning("embedding service answered %d; again in %.1f s", status, pause)
            self._sleep(pause)
            attempt += 1

    def _count(self, response: httpx.Response) -> None:
        if self.on_usage is None:
            return
        try:
            tokens = int(response.json().get("usage", {}).get("prompt_tokens", 0))
        except (ValueError, AttributeError, TypeError):
            tokens = 0  # a service that does not say still made a call
        self.on_usage(self.model, tokens)

    def _pause(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(MAX_PAUSE, max(0.0, float(retry_after)))
            except ValueError:
                pass  # an HTTP date: the usual backoff will do
        return min(MAX_PAUSE, self.backoff * 2.0**attempt)

    def _refusal(self, response: httpx.Response) -> str:
        """The service's own reason, short, without the key even if it echoed it back."""
        reason = ""
        try:
            error = response.json().get("error")
            reason = error.get("message", "") if isinstance(error, dict) else str(error or "")
        except (ValueError, AttributeError):
            reason = response.text
        reason = " ".join(reason.split())[:300]
        if self._key:
            reason = reason.replace(self._key, "***")
        what = {401: "refused the API key", 403: "refused the API key", 404: "has no such model"}
        said = what.get(response.status_code, "refused the request")
        text = f"the embedding service {said} (HTTP {response.status_code}, model {self.model})"
        return f"{text}: {reason}" if reason else text

    def _vectors(self, response: httpx.Response, count: int) -> Vectors:
        try:
            payload: Any = response.json()
            items = sorted(payload["data"], key=lambda item: item.get("index", 0))
            rows = [item["embedding"] for item in items]
            if len(rows) != count:
                raise EmbeddingError(
                    f"the embedding service returned {len(rows)} vectors for {count} texts"
                )
            matrix = unit_rows(rows)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbeddingError(
                f"the embedding service's answer is not a list of embeddings ({exc})"
            ) from None
        if matrix.shape[1] == 0:
            raise EmbeddingError("the embedding service returned empty vectors")
        if self._dim and matrix.shape[1] != self._dim:
            raise EmbeddingError(
                f"the embedding service changed its vectors' size ({self._dim} to "
                f"{matrix.shape[1]}); set memory.embeddings.model to one model"
            )
        self._dim = matrix.shape[1]
        return matrix
