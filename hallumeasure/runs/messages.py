"""A conversation (OpenAI-style ``messages``) as a sample: its answer, its question and its sources.

The last assistant message is the response (unless the row gives one). Every message before it that
can ground an answer becomes a source with an id and a kind:

- ``system`` (or ``developer``) messages: the system prompt, ids ``system``, ``system-2`` ...;
- ``tool`` messages: tool results, id = the ``tool_call_id``, with the tool's name (from the assistant's
  ``tool_calls`` or the message's ``name``) and ``failed`` when the message says the call errored
  (``"is_error": true``, ``"error": ...`` or ``"status": "error"``). A result in JSON is read as facts
  (``runs/json_facts.py``: keys and values, numbers and dates in plain forms), the JSON kept as ``raw``;
- the assistant's ``tool_calls``: each call's arguments read as facts lead its result's text
  (``get_ticket (ticket id: INC-2291): Error: timeout``), so that what the assistant asked for (the ticket
  it tried to fetch, the venue whose seats a result counts) is known, also when the call failed; a call
  with no result is a source of its own, id ``<call id>:args`` (kind ``tool_call``);
- ``user`` messages: context pasted into them ("Context: ...", documents, fenced blocks above the question;
  ``runs/user_context.py``) is a source of kind ``user_context``, ids ``user-context-1`` ...; the rest of an
  earlier user message is an earlier user turn, ids ``user-1`` ... (a source only when the run's settings
  say so: ``user_turns``; see ``sources/rag.py``). The last user message is the question, and never a
  source: a question does not support its answer.

Earlier assistant messages are not sources: what the model said before is no evidence for what it says now.
A message's content is a string or a list of parts (``{"type": "text", "text": ...}``); other parts are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hallumeasure.core.text import clean_text
from hallumeasure.core.types import Passage, SourceKind
from hallumeasure.runs.json_facts import json_facts
from hallumeasure.runs.user_context import split_user_message

ROLES = ("system", "developer", "user", "assistant", "tool", "function")


class MessagesError(ValueError):
    """Messages that cannot be read; the message says which one and why."""


@dataclass
class Conversation:
    """What a list of messages gives a sample."""

    response: str | None
    question: str | None
    sources: list[Passage] = field(default_factory=list)


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (logged JSON is read without trusting its shape)."""
    return value if isinstance(value, Mapping) else {}


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if isinstance(content, Sequence):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                text = part.get("text", part.get("content"))
                if isinstance(text, str) and part.get("type", "text") in ("text", "input_text", "output_text"):
                    texts.append(text)
        return "\n".join(texts)
    return str(content)


def is_failed(message: Mapping[str, Any]) -> bool:
    """Whether a tool message reports a failed call."""
    if message.get("is_error") is True:
        return True
    error = message.get("error")
    if error not in (None, False, "", {}):
        return True
    return str(message.get("status", "")).lower() in ("error", "failed", "failure")


def last_answer(messages: Any) -> str | None:
    """The response of ``messages``: their last assistant message, when it holds text (``MessagesError`` when
    unreadable). It reads no source, so it is cheap where only the answer is needed."""
    checked = _checked(messages)
    at = _answer_at(checked)
    return None if at is None else clean_text(content_text(checked[at].get("content")))


def read_conversation(messages: Any, *, taken_ids: Sequence[str] = ()) -> Conversation:
    """The response, question and sources of ``messages`` (see the module); ``MessagesError`` when unreadable.

    ``taken_ids`` are ids already used by the sample's other sources (its passages): no source here takes one.
    """
    messages = _checked(messages)
    last_assistant = _answer_at(messages)
    response = None
    history = list(messages)
    if last_assistant is not None:
        response = clean_text(content_text(messages[last_assistant].get("content")))
        history = list(messages[:last_assistant])
    last_user = max((i for i, m in enumerate(history) if m["role"] == "user"), default=None)
    calls: dict[str, _Call] = {}
    sources: list[Passage] = []
    taken: set[str] = set(taken_ids)
    counts = {"system": 0, "user": 0, "user-context": 0, "tool": 0}
    question = None
    for position, message in enumerate(history):
        role = message["role"]
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and call.get("id"):
                calls[str(call["id"])] = _Call.of(call)
        text = clean_text(content_text(message.get("content"))).strip()
        if not text or role == "assistant":
            continue
        if role in ("system", "developer"):
            counts["system"] += 1
            pid = "system" if counts["system"] == 1 else f"system-{counts['system']}"
            sources.append(Passage(id=_unique(pid, taken), text=text, kind=SourceKind.SYSTEM_PROMPT))
        elif role == "user":
            counts["user"] += 1
            said = split_user_message(text)
            for title, context in said.context:
                counts["user-context"] += 1
                pid = _unique(f"user-context-{counts['user-context']}", taken)
                sources.append(Passage(id=pid, text=context, title=title, kind=SourceKind.USER_CONTEXT))
            if position == last_user:
                question = said.request or text  # the question asked now: never a source of its answer
            elif said.request:
                pid = _unique(f"user-{counts['user']}", taken)
                sources.append(Passage(id=pid, text=said.request, kind=SourceKind.USER_TURN))
        else:  # tool, or the older function role
            counts["tool"] += 1
            call_id = message.get("tool_call_id") or message.get("id")
            call_id = str(call_id) if call_id else None
            made = calls.pop(call_id, None) if call_id else None
            name = (made.name if made else None) or message.get("name")
            facts = json_facts(text)
            sources.append(
                Passage(
                    id=_unique(call_id or f"tool-{counts['tool']}", taken),
                    text=(made.lead() if made else "") + (facts or text),
                    kind=SourceKind.TOOL_RESULT,
                    tool_name=str(name) if name else None,
                    call_id=call_id,
                    failed=is_failed(message),
                    raw=text if facts or (made and made.arguments) else None,
                )
            )
    for call_id, call in calls.items():  # calls whose result never came: what was asked is still known
        if call.arguments:
            sources.append(
                Passage(
                    id=_unique(f"{call_id}:args", taken),
                    text=f"{call.name or 'tool'} call: {call.arguments}",
                    kind=SourceKind.TOOL_CALL,
                    tool_name=call.name,
                    call_id=call_id,
                    raw=call.raw,
                )
            )
    return Conversation(response=response, question=question, sources=sources)


def _checked(messages: Any) -> Sequence[Mapping[str, Any]]:
    """``messages`` when they are a list of messages with known roles; else ``MessagesError`` naming the first not."""
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise MessagesError(f"messages must be a list of messages, not {type(messages).__name__}")
    for position, message in enumerate(messages, start=1):
        if not isinstance(message, Mapping):
            raise MessagesError(f"message {position} must be an object with a role")
        if message.get("role") not in ROLES:
            raise MessagesError(f"message {position} has role {message.get('role')!r}; roles are {', '.join(ROLES)}")
    return messages


def _answer_at(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """Where the response is: the last assistant message, when it holds text; None when there is none."""
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    if last is None or not content_text(messages[last].get("content")).strip():
        return None
    return last


@dataclass(frozen=True)
class _Call:
    """One tool call of an assistant message: the tool's name and its arguments read as facts."""

    name: str | None
    arguments: str
    raw: str | None

    @classmethod
    def of(cls, call: Mapping[str, Any]) -> _Call:
        function = mapping(call.get("function"))
        name = function.get("name") or call.get("name")
        value = function.get("arguments", call.get("arguments"))
        raw = value if isinstance(value, str) else json.dumps(value) if value else ""
        facts = json_facts(raw)
        arguments = (facts or raw).strip().rstrip(".") if raw.strip() not in ("", "{}", "[]") else ""
        return cls(name=str(name) if name else None, arguments=arguments, raw=raw or None)

    def lead(self) -> str:
        """What a result's text opens with: the call that asked for it (``get_ticket (ticket id: INC-2291): ``)."""
        if not self.arguments:
            return ""
        return f"{self.name or 'tool'} ({' '.join(self.arguments.split())}): "


def _unique(wanted: str, taken: set[str]) -> str:
    pid, n = wanted.strip() or "source", 2
    while pid in taken:
        pid, n = f"{wanted}-{n}", n + 1
    taken.add(pid)
    return pid
