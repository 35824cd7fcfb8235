"""Corvid's exception hierarchy. Errors are caught only at boundaries: CLI, agent turn, channel.

CorvidError
├── ConfigError          bad or missing configuration; names the dotted key
├── ToolError            a tool refused or failed; its message goes back to the model
│   └── PathRefused      a path outside the workspace (or hidden from this session)
└── LLMError             the model API failed after the SDK's own retries
"""

from __future__ import annotations


class CorvidError(Exception):
    """Base class for errors Corvid raises on purpose."""


class ConfigError(CorvidError):
    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}" if key else problem)
        self.key = key
        self.problem = problem


class ToolError(CorvidError):
    """Raised by a tool; the message is returned to the model as an error result."""


class PathRefused(ToolError):
    pass


class LLMError(CorvidError):
    """The model API failed. ``kind`` picks the message the user sees; no raw text reaches chats.

    kinds: rate_limited, overloaded, server, timeout, connection, auth, bad_request,
    context_overflow, other.
    """

    def __init__(self, kind: str, detail: str, status: int | None = None) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.status = status

    def user_message(self) -> str:
        return _USER_MESSAGES.get(self.kind, _USER_MESSAGES["other"])


_USER_MESSAGES = {
    "rate_limited": "I'm being rate-limited by the AI service right now. "
    "Your message is saved; please try again in a minute.",
    "overloaded": "The AI service is overloaded at the moment. "
    "Your message is saved; please try again shortly.",
    "server": "The AI service had an internal error. Your message is saved; please try again.",
    "timeout": "The AI service took too long to answer. Your message is saved; please try again.",
    "connection": "I couldn't reach the AI service. Your message is saved; please try again.",
    "auth": "The AI service rejected my API key. The owner needs to check llm.api_key.",
    "bad_request": "The AI service refused this request. Try /new to start a fresh session.",
    "too_large": "That was more than the AI service takes in one request (too many or too large "
    "images or files at once). Send them in smaller groups, or /new to start afresh.",
    "context_overflow": "This conversation has grown too long for the model. "
    "Send /new to start a fresh session.",
    "other": "Something went wrong while I was answering. Your message is saved; please try again.",
}
