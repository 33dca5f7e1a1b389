"""A conversation (OpenAI-style ``messages``) as a sample: its answer, its question and its sources.

The last assistant message is the response (unless the row gives one). Every message before it that
can ground an answer becomes a source with an id and a kind:

- ``system`` (or ``developer``) messages: the system prompt, ids ``system``, ``system-2`` ...;
- ``tool`` messages: tool results, id = the ``tool_call_id``, with the tool's name (from the assistant's
  ``tool_calls`` or the message's ``name``) and ``failed`` when the message says the call errored
  (``"is_error": true``, ``"error": ...`` or ``"status": "error"``);
- ``user`` messages: earlier user turns, ids ``user-1`` ...; the last one is also the question. They are
  sources only when the run's settings say so (``user_turns``; see ``sources/rag.py``).

Earlier assistant messages are not sources: what the model said before is no evidence for what it says now.
A message's content is a string or a list of parts (``{"type": "text", "text": ...}``); other parts are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hallumeasure.core.text import clean_text
from hallumeasure.core.types import Passage, SourceKind

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


def read_conversation(messages: Any, *, taken_ids: Sequence[str] = ()) -> Conversation:
    """The response, question and sources of ``messages`` (see the module); ``MessagesError`` when unreadable.

    ``taken_ids`` are ids already used by the sample's other sources (its passages): no source here takes one.
    """
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise MessagesError(f"messages must be a list of messages, not {type(messages).__name__}")
    for position, message in enumerate(messages, start=1):
        if not isinstance(message, Mapping):
            raise MessagesError(f"message {position} must be an object with a role")
        if message.get("role") not in ROLES:
            raise MessagesError(f"message {position} has role {message.get('role')!r}; roles are {', '.join(ROLES)}")
    last_assistant = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    response = None
    history = list(messages)
    if last_assistant is not None and content_text(messages[last_assistant].get("content")).strip():
        response = clean_text(content_text(messages[last_assistant].get("content")))
        history = list(messages[:last_assistant])
    tool_names: dict[str, str] = {}
    sources: list[Passage] = []
    taken: set[str] = set(taken_ids)
    counts = {"system": 0, "user": 0, "tool": 0}
    question = None
    for message in history:
        role = message["role"]
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and call.get("id"):
                function = mapping(call.get("function"))
                name = function.get("name") or call.get("name")
                if name:
                    tool_names[str(call["id"])] = str(name)
        text = clean_text(content_text(message.get("content"))).strip()
        if not text or role == "assistant":
            continue
        if role in ("system", "developer"):
            counts["system"] += 1
            pid = "system" if counts["system"] == 1 else f"system-{counts['system']}"
            sources.append(Passage(id=_unique(pid, taken), text=text, kind=SourceKind.SYSTEM_PROMPT))
        elif role == "user":
            counts["user"] += 1
            question = text
            sources.append(Passage(id=_unique(f"user-{counts['user']}", taken), text=text, kind=SourceKind.USER_TURN))
        else:  # tool, or the older function role
            counts["tool"] += 1
            call_id = message.get("tool_call_id") or message.get("id")
            call_id = str(call_id) if call_id else None
            name = tool_names.get(call_id or "") or message.get("name")
            sources.append(
                Passage(
                    id=_unique(call_id or f"tool-{counts['tool']}", taken),
                    text=text,
                    kind=SourceKind.TOOL_RESULT,
                    tool_name=str(name) if name else None,
                    call_id=call_id,
                    failed=is_failed(message),
                )
            )
    return Conversation(response=response, question=question, sources=sources)


def _unique(wanted: str, taken: set[str]) -> str:
    pid, n = wanted.strip() or "source", 2
    while pid in taken:
        pid, n = f"{wanted}-{n}", n + 1
    taken.add(pid)
    return pid
