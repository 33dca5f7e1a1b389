"""Turn a model answer into a validated contract: validate, repair the obvious, re-ask a bounded number of times."""

from __future__ import annotations

import json
import logging
import re
from typing import Generic, TypeVar

from pydantic import BaseModel, Field, ValidationError

from hallumeasure.config import redact
from hallumeasure.errors import OutputError, ProviderError
from hallumeasure.models.base import GenerateRequest, GenerateResponse, Message
from hallumeasure.models.model import Model
from hallumeasure.text import encodable
from hallumeasure.types import Usage

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger(__name__)

_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _first_json_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text``, ignoring braces inside strings."""
    start = text.find("{")
    while start >= 0:
        depth, in_string, escaped = 0, False, False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : index + 1]
        start = text.find("{", start + 1)
    return None


def _candidates_from_text(text: str) -> list[object]:
    """JSON values a prose answer may hold: fenced blocks first, then the first bare object."""
    found: list[object] = []
    for chunk in [*_FENCE_RE.findall(text), text]:
        obj = _first_json_object(chunk)
        if obj is None:
            continue
        try:
            found.append(json.loads(obj))
        except json.JSONDecodeError:
            continue
    return found


def _unwrap(value: object) -> object:
    # Some models stringify the tool input, or wrap it in {"input": ...} / {"parameters": ...}.
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, dict) and len(value) == 1:
        (inner,) = value.values()
        if isinstance(inner, (dict, str)):
            return _unwrap(inner)
    return value


def _encodable(value: object) -> object:
    """``value`` with lone surrogates in its strings replaced: pydantic and UTF-8 reject them."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    return value


def parse_output(contract: type[T], response: GenerateResponse) -> T:
    """Validate ``response`` against ``contract``; raise ``OutputError`` with the reason and raw text."""
    raw = raw_text(response)
    if response.stop_reason == "max_tokens":
        raise OutputError("the answer was cut off at max_tokens", raw=raw)
    if response.stop_reason == "refusal":
        raise OutputError("the model refused to answer", raw=raw)
    candidates: list[object] = []
    if response.tool_input is not None:
        # When the model called the tool, only the tool input counts. Prose beside it may quote the
        # context, and a context can hold a fake verdict: it must never be read as the answer.
        candidates += [response.tool_input, _unwrap(response.tool_input)]
    elif response.text.strip():
        candidates += _candidates_from_text(response.text)
    if not candidates:
        raise OutputError("the answer was empty: no tool input and no JSON in the text", raw=raw)
    first_error: ValidationError | None = None
    for candidate in map(_encodable, candidates):
        try:
            return contract.model_validate(candidate)
        except ValidationError as exc:
            first_error = first_error or exc
    assert first_error is not None
    raise OutputError(_short_validation_message(first_error), raw=raw)


def _short_validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{where}: {err['msg']}")
    return "the answer does not match the schema: " + "; ".join(parts)


def raw_text(response: GenerateResponse) -> str:
    """The answer as text, for error rows and re-asks (always encodable as UTF-8)."""
    if response.tool_input is not None:
        return encodable(json.dumps(response.tool_input, ensure_ascii=False))
    return encodable(response.text)


class Structured(BaseModel, Generic[T]):
    """A validated value, or the error that remained after the allowed re-asks (with the raw answer)."""

    value: T | None = None
    error: str | None = None
    raw_output: str | None = None
    stop_reason: str | None = None
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)


async def ask_structured(
    model: Model, request: GenerateRequest, contract: type[T], *, max_reasks: int = 2
) -> Structured[T]:
    """Ask, validate, and re-ask with the validation error up to ``max_reasks`` times.

    Never raises for a bad answer or a failed call: the last problem comes back as ``error``.
    An answer that could not even be read (a provider raising something other than
    ``ProviderError``, such as a JSON error on a truncated body) counts as a bad answer: the same
    request is sent again, within the same bound.
    """
    usage = Usage()
    current = request
    last_error, last_raw, last_stop = "no attempt made", None, None
    for attempt in range(1, max_reasks + 2):
        try:
            response = await model.generate(current)
        except ProviderError as exc:
            return Structured(error=f"provider error ({exc.cause}): {exc}", usage=usage, attempts=attempt)
        except Exception as exc:  # noqa: BLE001 - one unreadable answer must not fail the other claims
            reason = f"{type(exc).__name__}: {redact(str(exc))[:300]}"
            log.warning("%s: unreadable answer (%s); asking again", model.spec, reason)
            last_error, last_raw, last_stop = f"unreadable answer ({reason})", None, None
            continue  # nothing was read, so there is nothing to show back: send the same request again
        usage = usage + response.usage
        try:
            value = parse_output(contract, response)
        except OutputError as exc:
            last_error, last_raw, last_stop = str(exc), exc.raw, response.stop_reason
            if response.stop_reason == "max_tokens":
                break  # asking again for the same long answer would be cut off again
            current = _reask(request, exc)
            continue
        return Structured(value=value, usage=usage, attempts=attempt, stop_reason=response.stop_reason)
    return Structured(
        error=last_error, raw_output=last_raw, usage=usage, attempts=attempt, stop_reason=last_stop
    )


def _reask(request: GenerateRequest, exc: OutputError) -> GenerateRequest:
    feedback = (
        f"Your previous answer could not be used: {exc}. "
        "Answer again by calling the tool once, with input that matches its schema exactly."
    )
    previous = (exc.raw or "(empty answer)")[:4000]
    messages = (*request.messages, Message.assistant(previous), Message.user(feedback))
    return request.model_copy(update={"messages": messages})
