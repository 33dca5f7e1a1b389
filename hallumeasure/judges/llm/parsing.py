"""Turn a model answer into a validated contract: validate, repair the obvious, re-ask a bounded number of times."""

from __future__ import annotations

import json
import logging
import re
from typing import Generic, TypeVar

from pydantic import BaseModel, Field, ValidationError

from hallumeasure.core.config import redact
from hallumeasure.core.errors import CONTEXT_TOO_LONG, OutputError, ProviderError, RunStoppedError
from hallumeasure.core.text import encodable
from hallumeasure.core.types import ErrorKind, Usage
from hallumeasure.models.base import (
    GenerateRequest,
    GenerateResponse,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from hallumeasure.models.model import Model

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


#: Text tool-call markers of open-weight chat templates (each documented by its model family):
#: Hermes and Qwen wrap {"name", "arguments"} in <tool_call> tags, Llama 3.1 starts with
#: <|python_tag|> and writes {"name", "parameters"}, Mistral starts with [TOOL_CALLS] and a list.
_TOOL_CALL_TAG_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL | re.IGNORECASE)
_TOOL_CALL_PREFIX_RE = re.compile(r"(?:<\|python_tag\|>|\[TOOL_CALLS\])\s*(.*)", re.DOTALL)


def _candidates_from_text(text: str) -> list[object]:
    """JSON values a prose answer may hold: text tool calls first (their arguments, unwrapped),
    then fenced blocks, then the first bare object. A chat template's end marker after the object
    (``<|im_end|>``, ``<|eot_id|>``) is ignored, as is prose around it."""
    chunks = [*_TOOL_CALL_TAG_RE.findall(text), *_TOOL_CALL_PREFIX_RE.findall(text), *_FENCE_RE.findall(text), text]
    found: list[object] = []
    for chunk in chunks:
        obj = _first_json_object(chunk)
        if obj is None:
            continue
        try:
            value = json.loads(obj)
        except json.JSONDecodeError:
            continue
        arguments = _tool_call_arguments(value)
        if arguments is not None:
            found.append(arguments)
        found.append(value)
    return found


def _tool_call_arguments(value: object) -> object | None:
    """The arguments of a tool call written as JSON text: ``{"name": ..., "arguments": {...}}`` (or
    ``"parameters"``, or OpenAI's ``{"type": "function", "function": {...}}``); None for anything else."""
    if not isinstance(value, dict):
        return None
    call = value["function"] if isinstance(value.get("function"), dict) else value
    if not isinstance(call.get("name"), str):
        return None
    for key in ("arguments", "parameters", "input"):
        if key in call:
            return _unwrap(call[key]) if isinstance(call[key], str) else call[key]
    return None


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
    elif response.tool_raw is not None:
        # A tool call whose arguments did not parse as JSON: the same repair as for a text answer
        # (code fence, trailing template marker), still ignoring any prose beside the call.
        candidates += _candidates_from_text(response.tool_raw)
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
    if response.tool_raw is not None:
        return encodable(response.tool_raw)
    return encodable(response.text)


class Structured(BaseModel, Generic[T]):
    """A validated value, or the error that remained after the allowed re-asks; ``raw_output`` is the
    answer the value was read from, or the last unusable one."""

    value: T | None = None
    error: str | None = None
    #: What kind of failure ``error`` is: the window, another provider failure, or an unreadable answer.
    error_kind: ErrorKind | None = None
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
    seen: set[str] = set()
    for attempt in range(1, max_reasks + 2):
        try:
            response = await model.generate(current)
        except RunStoppedError:
            raise  # nothing can be answered (no endpoint, no budget): the run stops, not one error row per claim
        except ProviderError as exc:
            kind = ErrorKind.WINDOW if exc.cause == CONTEXT_TOO_LONG else ErrorKind.PROVIDER
            return Structured(
                error=f"provider error ({exc.cause}): {exc}", error_kind=kind, usage=usage, attempts=attempt
            )
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
                break  # asking again for the same long answer would be cut off again: the caller decides
            answer = raw_text(response)
            if answer in seen:
                # The model gave this very answer before, re-ask and all (greedy decoding does): asking
                # once more would only pay for it again.
                last_error = f"{last_error} (the same answer came back after a re-ask; re-asking stopped)"
                break
            seen.add(answer)
            current = reask(request, response, exc, attempt=attempt)
            continue
        return Structured(
            value=value, raw_output=raw_text(response), usage=usage, attempts=attempt, stop_reason=response.stop_reason
        )
    return Structured(
        error=last_error,
        error_kind=ErrorKind.UNREADABLE_ANSWER,
        raw_output=last_raw,
        usage=usage,
        attempts=attempt,
        stop_reason=last_stop,
    )


def reask(request: GenerateRequest, response: GenerateResponse, exc: OutputError, *, attempt: int) -> GenerateRequest:
    """``request`` continued with the model's unusable answer and what was wrong with it.

    A tool call is answered the way the providers document for a failed call: the assistant's own
    call (its parsed input, or its arguments as written) followed by a tool result marked as an
    error that carries the reason. An answer without a tool call goes back as the assistant's text,
    followed by the reason as a user turn. Each re-ask builds on the first request, not on the
    previous re-ask, so the prompt does not grow; ``attempt`` keeps two identical re-asks apart.

    The reason is also said in a plain text turn: chat templates of open-weight models may drop
    tool results' ids, or the results themselves, and a re-ask must still differ from the ask it
    follows, and from the re-ask before it (it names its number), or greedy decoding repeats itself.
    """
    reason = f"Your previous answer could not be used: {exc}."
    again = f"This is re-ask {attempt}. {reason}"
    call_made = response.tool_input is not None or response.tool_raw is not None
    if request.tool is not None and response.tool_call_id and call_made:
        said = (TextBlock(text=response.text[:4000]),) if response.text.strip() else ()
        call = ToolCallBlock(
            call_id=response.tool_call_id,
            name=request.tool.name,
            input=response.tool_input,
            raw=None if response.tool_input is not None else (response.tool_raw or "")[:4000],
        )
        result = ToolResultBlock(
            call_id=response.tool_call_id,
            is_error=True,
            result=f"{reason} Call the tool again, with input that matches its schema exactly.",
        )
        note = TextBlock(text=f"{again} Call {request.tool.name} once more, with input that matches its schema.")
        turns = (Message(role="assistant", content=(*said, call)), Message(role="user", content=(result, note)))
    else:
        previous = (exc.raw or "(empty answer)")[:4000]
        feedback = f"{again} Answer again by calling the tool once, with input that matches its schema exactly."
        turns = (Message.assistant(previous), Message.user(feedback))
    return request.model_copy(update={"messages": (*request.messages, *turns), "attempt": attempt})
