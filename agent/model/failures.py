"""What the Anthropic SDK's errors mean: the ``LLMError`` of a failed call, a failed probe's fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.contract.errors import LLMError, LLMErrorKind
from gateway.contract.ports import Check, Status

if TYPE_CHECKING:
    from anthropic import APIStatusError

# The API's error types (``error.type``) and the SDK's public classes that name them.
CLASS_OF_TYPE = {
    "invalid_request_error": "BadRequestError",
    "authentication_error": "AuthenticationError",
    "billing_error": "PaymentRequiredError",
    "permission_error": "PermissionDeniedError",
    "not_found_error": "NotFoundError",
    "timeout_error": "RequestTimeoutError",
    "conflict_error": "ConflictError",
    "request_too_large": "ContentTooLargeError",
    "rate_limit_error": "RateLimitError",
    "api_error": "InternalServerError",
    "overloaded_error": "OverloadedError",
}


def mid_stream_error(sdk: Any, message: str, body: object, response: Any) -> APIStatusError:
    """The SDK's public class for an ``event: error`` in a stream whose status was 200: the
    one the body's ``error.type`` names, else ``APIStatusError``."""
    err = body.get("error") if isinstance(body, dict) else None
    err_type = err.get("type") if isinstance(err, dict) else None
    kind: type[APIStatusError] = getattr(sdk, CLASS_OF_TYPE.get(str(err_type), "APIStatusError"))
    return kind(message, response=response, body=body)


def probe_failure(
    sdk: Any, exc: Exception, where: str, model: str, key_source: str, timeout: float
) -> Check:
    """What a failed probe call says, and how to fix it."""
    name = "anthropic"
    if isinstance(exc, sdk.AuthenticationError):
        return Check(
            Status.FAIL,
            name,
            f"API key rejected by {where} (401)",
            f"check {key_source}; keys are made at https://console.anthropic.com/settings/keys",
        )
    if isinstance(exc, sdk.PermissionDeniedError):
        return Check(
            Status.FAIL,
            name,
            f"API key not allowed to use {where} (403)",
            f"check the key's workspace and permissions, or {key_source}",
        )
    if isinstance(exc, sdk.NotFoundError):
        return Check(
            Status.FAIL,
            name,
            f"{where} does not know the model {model!r} (404)",
            "check llm.model (and llm.base_url, if it is not Anthropic's API)",
        )
    if isinstance(exc, sdk.RateLimitError | sdk.InternalServerError):
        return Check(
            Status.WARN,
            name,
            f"{where} is busy right now (HTTP {exc.status_code}); the key could not be checked",
            "run corvid doctor again in a minute",
        )
    if isinstance(exc, sdk.APITimeoutError):
        return Check.no_answer(name, where, timeout)
    if isinstance(exc, sdk.APIConnectionError):
        return Check.unreachable(name, where, exc, "llm.base_url (or ANTHROPIC_BASE_URL)")
    status = getattr(exc, "status_code", "?")
    return Check(
        Status.FAIL,
        name,
        f"{where} answered HTTP {status} to an authenticated request",
        "check llm.base_url and llm.api_key",
    )


def llm_error(sdk: Any, exc: Exception) -> LLMError:
    """The error a failed request raises, by its HTTP status or the API's error type."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    err_type = ""
    message = ""
    if isinstance(body, dict):
        err: dict[str, Any] = body["error"] if isinstance(body.get("error"), dict) else body
        err_type = str(err.get("type", ""))
        message = str(err.get("message", ""))
    detail = f"{type(exc).__name__} status={status} type={err_type}"
    if isinstance(exc, sdk.APITimeoutError):
        return LLMError(LLMErrorKind.TIMEOUT, detail)
    if isinstance(exc, sdk.APIConnectionError):
        return LLMError(LLMErrorKind.CONNECTION, detail)
    if status == 429 or err_type == "rate_limit_error":
        return LLMError(LLMErrorKind.RATE_LIMITED, detail, status)
    if status == 529 or err_type == "overloaded_error":
        return LLMError(LLMErrorKind.OVERLOADED, detail, status)
    if status in (401, 403) or err_type in ("authentication_error", "permission_error"):
        return LLMError(LLMErrorKind.AUTH, detail, status)
    if status == 413 or err_type == "request_too_large":
        return LLMError(LLMErrorKind.TOO_LARGE, detail, status)
    if status == 400 or err_type == "invalid_request_error":
        lowered = message.lower()
        if "prompt is too long" in lowered or ("context" in lowered and "exceed" in lowered):
            return LLMError(LLMErrorKind.CONTEXT_OVERFLOW, detail, status)
        return LLMError(LLMErrorKind.BAD_REQUEST, detail, status)
    if (status and status >= 500) or err_type == "api_error":
        return LLMError(LLMErrorKind.SERVER, detail, status)
    return LLMError(LLMErrorKind.OTHER, detail, status)
