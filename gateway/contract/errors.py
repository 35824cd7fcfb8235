"""Corvid's exception hierarchy; errors are caught only at boundaries (CLI, turn, channel, job)."""

from __future__ import annotations

from enum import StrEnum


class CorvidError(Exception):
    """Base class for errors Corvid raises on purpose::

    CorvidError
    ├── ConfigError          bad or missing configuration; names the dotted key
    ├── ToolError            a tool refused or failed; its message goes back to the model
    │   └── PathRefused      a path outside the workspace (or hidden from this session)
    ├── LLMError             the model API failed after the SDK's own retries; see ``kind``
    └── DeliveryError        a platform did not take a message
    """


class ConfigError(CorvidError):
    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}" if key else problem)
        self.key = key
        self.problem = problem


class ToolError(CorvidError):
    """Raised by a tool; the message is returned to the model as an error result."""


class PathRefused(ToolError):
    pass


class DeliveryError(CorvidError):
    """The platform did not take a message; the text says why (no secrets in it)."""


class LLMErrorKind(StrEnum):
    """How a model call failed; picks the message the user sees."""

    RATE_LIMITED = "rate_limited"
    OVERLOADED = "overloaded"
    SERVER = "server"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    AUTH = "auth"
    BAD_REQUEST = "bad_request"
    TOO_LARGE = "too_large"
    CONTEXT_OVERFLOW = "context_overflow"
    MALFORMED = "malformed"  # the model's answer could not be read (a tool call's bad JSON)
    BUDGET = "budget"  # a spending cap is reached: no call was made
    OTHER = "other"

    @property
    def fits_after_compaction(self) -> bool:
        """Too much for one request: compacting older messages (and their images) may help."""
        return self in (LLMErrorKind.CONTEXT_OVERFLOW, LLMErrorKind.TOO_LARGE)

    @property
    def refuses_the_turn(self) -> bool:
        """The API refused what the request holds (an attachment it cannot read, more than it
        takes), not the moment: asked again, the same messages fail again. The turn's
        messages are set aside, so the next message is not refused with them."""
        return self in (
            LLMErrorKind.BAD_REQUEST,
            LLMErrorKind.TOO_LARGE,
            LLMErrorKind.CONTEXT_OVERFLOW,
        )


class LLMError(CorvidError):
    """The model API failed. No raw text from the API reaches a chat: ``user_message`` does."""

    def __init__(self, kind: LLMErrorKind, detail: str, status: int | None = None) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.status = status

    def user_message(self) -> str:
        return _USER_MESSAGES[self.kind]


_SAVED = "Your message is saved; please try again"
_USER_MESSAGES = {
    LLMErrorKind.RATE_LIMITED: "I'm being rate-limited by the AI service right now. "
    f"{_SAVED} in a minute.",
    LLMErrorKind.OVERLOADED: f"The AI service is overloaded at the moment. {_SAVED} shortly.",
    LLMErrorKind.SERVER: f"The AI service had an internal error. {_SAVED}.",
    LLMErrorKind.TIMEOUT: f"The AI service took too long to answer. {_SAVED}.",
    LLMErrorKind.CONNECTION: f"I couldn't reach the AI service. {_SAVED}.",
    LLMErrorKind.AUTH: "The AI service rejected my API key. The owner needs to check llm.api_key.",
    LLMErrorKind.BAD_REQUEST: "The AI service refused to read that, so I have set it aside: it "
    "will not be sent again with your next message. Try it another way (a file or image in "
    "another format, say); if every message is refused, /new starts a fresh session.",
    LLMErrorKind.TOO_LARGE: "That was more than the AI service takes in one request (too many "
    "or too large images or files at once), so I have set it aside. Send them in smaller "
    "groups.",
    LLMErrorKind.CONTEXT_OVERFLOW: "That does not fit in what the model can read, even with the "
    "older conversation summarised, so I have set it aside. Send it in smaller parts, or /new "
    "to start afresh.",
    LLMErrorKind.MALFORMED: f"My answer came back garbled. {_SAVED}.",
    LLMErrorKind.BUDGET: "The spending cap for model calls is reached.",
    LLMErrorKind.OTHER: f"Something went wrong while I was answering. {_SAVED}.",
}
