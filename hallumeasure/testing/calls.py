"""The protocol-neutral records of the simulators: a request as the server saw it, one model call read
from it, the tokens it counts, and the answer or raw reply it gets."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hallumeasure.core.text import count_tokens
from hallumeasure.models.base import GenerateRequest, Message, TextBlock, ToolSpec
from hallumeasure.testing.accounting import Piece


@dataclass
class Reply:
    """An HTTP answer: status, JSON body and extra headers; ``delay`` seconds are waited before sending.

    ``raw`` sends bytes instead of JSON (with ``content_type``). Transport faults: ``cut_body`` sends
    only that many bytes of the body and says so in content-length (a truncated body);
    ``reset_after`` announces the whole body, sends that many bytes and resets the connection.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None
    content_type: str = "application/json"
    cut_body: int | None = None
    reset_after: int | None = None
    on_sent: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    #: The neutral answer behind a 200, when there was one (batch results are rendered from it).
    answer: Answer | None = field(default=None, repr=False, compare=False)

    def payload(self) -> bytes:
        if self.raw is not None:
            return self.raw
        return b"" if self.body is None else json.dumps(self.body).encode("utf-8")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it (header names lower-cased, body parsed from JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Segment:
    """A piece of prompt text; ``cache_after`` marks a cache breakpoint right after it."""

    role: str  # "system", "user" or "assistant"
    text: str
    cache_after: bool = False


@dataclass(frozen=True)
class Call:
    """A request in protocol-neutral terms, as the default handler and any accounting read it."""

    model: str
    segments: tuple[Segment, ...]
    tool: dict[str, Any] | None = None  # {"name", "description", "input_schema"} of the tool to answer with
    forced: bool = False
    max_tokens: int | None = None
    #: Every tool definition sent, in the neutral shape of ``tool``; they open the prompt's cacheable prefix.
    tools: tuple[dict[str, Any], ...] = ()
    #: A cache breakpoint right after the tool definitions.
    tools_cache: bool = False

    @property
    def system(self) -> str:
        return "".join(s.text for s in self.segments if s.role == "system")

    @property
    def prompt_text(self) -> str:
        return "".join(s.text for s in self.segments)

    def pieces(self) -> list[Piece]:
        """The prompt in the order the providers cache it: tool definitions, system, messages."""
        tools = self.tools or ((self.tool,) if self.tool is not None else ())
        out = []
        if tools:
            text = json.dumps(list(tools), sort_keys=True)
            out.append(Piece(text, count_tokens(text), self.tools_cache))
        out += [Piece(f"{s.role}\x00{s.text}", count_tokens(s.text), s.cache_after) for s in self.segments]
        return out

    def to_request(self) -> GenerateRequest:
        """The request as hallumeasure would have built it (consecutive same-role segments form one message)."""
        messages: list[Message] = []
        for segment in (s for s in self.segments if s.role != "system"):
            block = TextBlock(text=segment.text, cache_after=segment.cache_after)
            if messages and messages[-1].role == segment.role:
                messages[-1] = Message(role=segment.role, content=(*messages[-1].content, block))
            else:
                messages.append(Message(role=segment.role, content=(block,)))
        return GenerateRequest(
            system=self.system,
            messages=tuple(messages),
            tool=ToolSpec(**self.tool) if self.tool is not None else None,
            max_tokens=self.max_tokens or 1,
            cache_system=any(s.cache_after for s in self.segments if s.role == "system"),
        )


@dataclass(frozen=True)
class Tokens:
    """Usage in neutral names (those of ``hallumeasure.core.types.Usage``); input excludes cache reads and writes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @classmethod
    def of(cls, value: Tokens | Mapping[str, int] | None) -> Tokens:
        if value is None:
            return cls()
        return value if isinstance(value, Tokens) else cls(**value)

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True)
class Answer:
    """A successful reply in neutral terms; the front-end renders it as its wire JSON."""

    text: str = ""
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    #: Neutral names: end_turn, tool_use, max_tokens, refusal, stop_sequence (others pass through as is).
    stop_reason: str = "end_turn"
    usage: Tokens = Tokens()
    model: str | None = None

    @property
    def digest(self) -> str:
        """A stable id suffix, so that rendered ids are deterministic."""
        payload = json.dumps([self.text, self.tool_name, self.tool_input], sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:20]


Result = Reply | Answer | Mapping[str, Any]
Handler = Callable[[Any], Result]
