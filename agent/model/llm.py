"""The model port's Anthropic implementation: the official SDK, streaming, prompt caching."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Self

from agent.model.answer import Answer, BadToolInput, BrokenStream, decoded, server_events
from agent.model.charge import Charge, Purpose
from agent.model.failover import Failover, Route
from agent.model.failures import llm_error, mid_stream_error, probe_failure
from agent.model.in_flight import InFlight
from agent.model.port import LLMResponse
from agent.model.request import request_body
from agent.model.wire import content_to_dicts
from agent.sessions.history import History
from agent.sessions.state import Usage
from agent.settings import LLMSettings
from agent.stream import Deltas
from gateway.contract.errors import LLMError, LLMErrorKind
from gateway.contract.ports import Check, Status
from gateway.infra.tls import tls_context

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

log = logging.getLogger(__name__)


def load_sdk() -> ModuleType:
    """The anthropic SDK, imported on first use: channels poll before the first call needs it."""
    return importlib.import_module("anthropic")


class AnthropicLLM:
    def __init__(self, cfg: LLMSettings) -> None:
        self.cfg = cfg
        self.model = cfg.model
        self.context_window = cfg.context_window
        self._client: AsyncAnthropic | None = None
        self._sdk: Any = None  # the anthropic module, once imported
        # A call's request is built only once it is admitted, so calls waiting hold nothing
        # but their turn's own (compact) history.
        self.in_flight = InFlight()
        self.failover = Failover(cfg.fallbacks, cfg.fallback_minutes)
        self._others: dict[tuple[str | None, str | None], AsyncAnthropic] = {}

    async def warm_up(self) -> None:
        """Import the SDK off the event loop so the first message does not pay for it."""
        if self._sdk is None:
            self._sdk = await asyncio.to_thread(load_sdk)

    def _get_client(self) -> AsyncAnthropic:
        if self._client is None:
            if self._sdk is None:
                self._sdk = load_sdk()
            api_key = self.cfg.api_key.value if self.cfg.api_key else None
            self._client = self._new_client(api_key, self.cfg.base_url)
        return self._client

    def _client_for(self, route: Route) -> AsyncAnthropic:
        """The primary's client, or one of a fallback's own endpoint or key."""
        if route.base_url is None and route.api_key is None:
            return self._get_client()
        key = (route.base_url, route.api_key)
        if key not in self._others:
            primary = self._get_client()  # imports the SDK too
            self._others[key] = self._new_client(
                route.api_key or primary.api_key, route.base_url or self.cfg.base_url
            )
        return self._others[key]

    def _new_client(self, api_key: str | None, base_url: str | None) -> AsyncAnthropic:
        sdk = self._sdk
        client: AsyncAnthropic = sdk.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url or None,
            timeout=self.cfg.timeout,
            max_retries=self.cfg.retries,
            # The SDK's own client on aiohttp (its documented alternative, which the SDK loads
            # anyway): a model call costs less CPU than on httpx2's anyio streams.
            http_client=sdk.DefaultAioHttpClient(verify=tls_context()),
        )
        return client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        others, self._others = list(self._others.values()), {}
        for client in others:
            await client.close()

    def apply(self, cfg: LLMSettings) -> None:
        """Take the options that change while running (the model, the answer's and the
        context's size); the key, the address and the retries wait for a restart."""
        self.cfg = replace(
            self.cfg,
            model=cfg.model,
            max_tokens=cfg.max_tokens,
            context_window=cfg.context_window,
            models=cfg.models,
        )
        self.model, self.context_window = cfg.model, cfg.context_window

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def probe(self, limit: float, key_source: str) -> Check:
        """A free, authenticated call (``corvid doctor``): counting the tokens of one word for
        the configured model proves the key, the base URL and the model id at once.
        ``key_source`` says where the key comes from, for the fix."""
        anthropic = load_sdk()
        client = self._probe_client(limit)
        where = str(client.base_url).rstrip("/")
        try:
            await self._count_tokens(client, limit)
        except anthropic.APIError as exc:
            return probe_failure(anthropic, exc, where, self.model, key_source, limit)
        except TimeoutError:
            return Check.no_answer("anthropic", where, limit)
        finally:
            await client.close()
        return Check(Status.OK, "anthropic", f"API key accepted by {where}; model {self.model}")

    async def refused(self, limit: float, key_source: Callable[[], str]) -> Check | None:
        """The same call at start-up (``corvid run``): what the API refused (the key, its
        permissions, the model), or None when it accepted or could not be asked (busy or
        unreachable: turns retry, and say so if they must). ``key_source`` is asked only for
        a refusal: finding where the key comes from reads ``config.yaml`` again."""
        await self.warm_up()  # the import takes a second: never on the loop the channels use
        anthropic = self._sdk
        client = self._asking_client(limit)
        where = str(client.base_url).rstrip("/")
        try:
            await self._count_tokens(client, limit)
        except (
            anthropic.AuthenticationError,
            anthropic.PermissionDeniedError,
            anthropic.NotFoundError,
        ) as exc:
            return probe_failure(anthropic, exc, where, self.model, key_source(), limit)
        except (anthropic.APIError, TimeoutError) as exc:
            log.warning("could not check the API key at start (%s); going on", type(exc).__name__)
        return None

    async def accepts_tools(self, tools: list[dict[str, Any]], limit: float = 10.0) -> bool | None:
        """Whether the API takes these tool definitions (a server tool such as its web search)
        with the configured model: a free count_tokens call. None when it could not be asked."""
        await self.warm_up()
        sdk = self._sdk
        client = self._asking_client(limit)
        try:
            await self._count_tokens(client, limit, tools)
        except sdk.BadRequestError as exc:
            log.info("the API refused the tools %s: %s", [t.get("name") for t in tools], exc)
            return False
        except (sdk.APIError, TimeoutError) as exc:
            log.info("could not ask the API about tools: %s", type(exc).__name__)
            return None
        return True

    def _asking_client(self, limit: float) -> AsyncAnthropic:
        """The chat's client for one question asked while running, within ``limit`` and
        without retries. It shares the chat's connections (so the first turn after a start
        finds the one this question opened) and is not closed after: they stay the chat's."""
        return self._get_client().with_options(timeout=limit, max_retries=0)

    def _probe_client(self, limit: float) -> Any:
        cfg = self.cfg
        return load_sdk().AsyncAnthropic(
            api_key=cfg.api_key.value if cfg.api_key else None,
            base_url=cfg.base_url or None,
            timeout=limit,
            max_retries=0,
        )

    async def _count_tokens(
        self, client: Any, limit: float, tools: list[dict[str, Any]] | None = None
    ) -> None:
        """Count the tokens of one word for the model (with ``tools``), within ``limit``: a
        free call that the API refuses for a bad key, model or tool. Sent with the client's
        ``post``, as the turns' calls are."""
        import httpx2

        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": "ping"}],
        }
        if tools is not None:
            body["tools"] = tools
        async with asyncio.timeout(limit):
            response = await client.post(
                "/v1/messages/count_tokens", body=body, cast_to=httpx2.Response
            )
            await response.aclose()

    async def complete(
        self,
        system: str,
        messages: Sequence[dict[str, Any]],
        tools: list[dict[str, Any]],
        system_note: str | None = None,
        deltas: Deltas | None = None,
        *,
        charge: Charge,
    ) -> LLMResponse:
        size = messages.nbytes if isinstance(messages, History) else len(json.dumps(messages))
        request = (system, messages, tools, system_note, deltas, charge.purpose.caches(bool(tools)))
        tried: list[Route] = []

        async def attempt(route: Route) -> LLMResponse:
            if tried and deltas is not None:
                deltas.restart()  # what the route before wrote is not the answer
            tried.append(route)
            return await self._attempt(route, *request)

        async with self.in_flight.hold(size):
            return await self.failover.run(self.model_for(charge.purpose), attempt)

    async def _attempt(
        self,
        route: Route,
        system: str,
        messages: Sequence[dict[str, Any]],
        tools: list[dict[str, Any]],
        system_note: str | None,
        deltas: Deltas | None,
        cache: bool,
    ) -> LLMResponse:
        request = (messages, tools)
        try:
            return await self._complete(route, system, request, system_note, deltas, cache)
        except _BadToolJSON as exc:
            # The model wrote a tool call whose input is not JSON: say so, and ask again.
            log.warning("the model wrote a tool call that is not valid JSON; asking again")
            note = "\n\n".join(filter(None, (system_note, BAD_TOOL_JSON_NOTE)))
            if deltas is not None:
                deltas.restart()
            try:
                return await self._complete(route, system, request, note, deltas, cache)
            except _BadToolJSON:
                raise LLMError(LLMErrorKind.MALFORMED, str(exc)[:200]) from None

    def model_for(self, purpose: Purpose) -> str:
        """``llm.models``: the purpose's own model, else the background one for silent work,
        else the chat one, else ``llm.model``."""
        models = self.cfg.models
        if purpose in models:
            return models[purpose]
        if purpose.background and "background" in models:
            return models["background"]
        return models.get("chat", self.model)

    async def _complete(
        self,
        route: Route,
        system: str,
        request: tuple[Sequence[dict[str, Any]], list[dict[str, Any]]],
        system_note: str | None,
        deltas: Deltas | None,
        cache: bool,
    ) -> LLMResponse:
        await self.warm_up()  # at a start, the SDK may still be loading: wait off the loop
        client, model = self._client_for(route), route.model
        messages, tools = request
        # While the answer comes, the call holds its request only as the body's bytes: the
        # messages as dicts take several times their JSON's memory.
        body = request_body(
            model, self.cfg.max_tokens, (system, messages, tools), system_note, cache
        )
        sizes = (len(messages), len(tools), len(system) + len(system_note or ""))
        try:
            msg = await self._stream(client, body, deltas)
        except self._sdk.APIError as exc:
            raise llm_error(self._sdk, exc) from None
        except (OSError, EOFError) as exc:
            raise LLMError(LLMErrorKind.CONNECTION, type(exc).__name__) from None
        except BadToolInput as exc:
            raise _BadToolJSON(str(exc)) from None
        except BrokenStream as exc:
            raise LLMError(LLMErrorKind.MALFORMED, str(exc)[:200]) from None
        except Exception as exc:
            # httpx transport errors (a stream cut mid-reply) are not APIError subclasses.
            if type(exc).__module__.startswith(("httpx", "httpcore")):
                raise LLMError(LLMErrorKind.CONNECTION, type(exc).__name__) from None
            raise
        log.debug(
            "model call %s: %d message(s), %d tool(s), %d characters of system prompt; stop %s",
            msg.get("id"),
            *sizes,
            msg.get("stop_reason"),
        )
        return _response(msg, model)

    async def _stream(
        self, client: AsyncAnthropic, body: bytes, deltas: Deltas | None
    ) -> dict[str, Any]:
        """What ``client.messages.stream`` does, for a body already made: the SDK sends it
        (key, retries, timeouts, its errors for a refused request) and returns the response
        as it comes; its events are read as JSON (``agent/model/answer.py``). The SDK's typed
        method would first copy the request into new dicts and lists, every message of the
        conversation on every call; the body is plain JSON already."""
        import httpx2

        response = await client.post(
            "/v1/messages", content=body, cast_to=httpx2.Response, stream=True
        )
        answer = Answer()
        try:
            async for name, data in server_events(response.aiter_bytes()):
                if name == "ping" or name is None:
                    continue
                if name == "error":
                    # As the SDK's stream says it: the error the API's body names.
                    try:
                        said: Any = json.loads(data)
                        message = f"{said}"
                    except ValueError:
                        said, message = data, data or f"Error code: {response.status_code}"
                    raise mid_stream_error(self._sdk, message, said, response)
                shown = answer.feed(decoded(data))
                if shown and deltas is not None:
                    deltas.text(shown)
        finally:
            await response.aclose()
        return answer.final()


def _response(msg: dict[str, Any], model: str) -> LLMResponse:
    """The answer, with what it used as the bill counts it and the model that wrote it."""
    u = msg.get("usage") or {}
    usage = Usage(
        input=u.get("input_tokens") or 0,
        cache_read=u.get("cache_read_input_tokens") or 0,
        cache_write=u.get("cache_creation_input_tokens") or 0,
        output=u.get("output_tokens") or 0,
    )
    server = u.get("server_tool_use") or {}
    return LLMResponse(
        content_to_dicts(msg.get("content") or []),
        msg.get("stop_reason") or "end_turn",
        usage,
        model=msg.get("model") or model,
        web_searches=server.get("web_search_requests") or 0,
        id=msg.get("id") or "",
    )


class _BadToolJSON(Exception):
    pass


BAD_TOOL_JSON_NOTE = (
    "Your previous answer to this request contained a tool call whose input was not valid "
    "JSON, so it could not run. Answer again; write tool inputs as valid JSON objects."
)
