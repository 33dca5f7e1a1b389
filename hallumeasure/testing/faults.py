"""A fault-injection plan for the provider simulators: which model calls fail, and how.

A plan picks a ``Fault`` (or none) for every model call the server receives, deterministically:

* ``schedule`` — by arrival index of model calls (0-based): ``{0: Fault.RATE_LIMIT, 3: Fault.REFUSAL}``
  or a sequence ``[Fault.OVERLOADED, None, Fault.EMPTY]`` for the first calls;
* ``bursts`` — runs of consecutive calls, once or repeating: ``Burst(start=10, length=5, every=50)``;
* ``rate`` — a seeded share of calls, each drawing one of ``faults`` (weights allowed). With
  ``key="content"`` (the default) the draw depends on the request body and on how many times that
  same body was seen, so it does not depend on the order in which concurrent calls arrive, and a
  retry of a failed call draws again; ``key="order"`` draws by arrival index instead.

``match`` restricts the plan to some calls (for example ``lambda call: call.tool["name"] ==
"record_verdicts"``). Precedence: schedule, then bursts, then rate. The server records what it
injected in ``srv.injected`` as ``(arrival index, fault)`` pairs.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal


class Fault(StrEnum):
    """What can go wrong with one call. The front-end renders each in its provider's own terms."""

    RATE_LIMIT = "rate_limit"  # 429 with retry-after (Bedrock: ThrottlingException)
    RATE_LIMIT_NO_RETRY_AFTER = "rate_limit_no_retry_after"  # 429 without retry-after
    OVERLOADED = "overloaded"  # Anthropic 529 overloaded_error; Bedrock 503 ServiceUnavailableException
    SERVER_ERROR = "server_error"  # 500
    UNAVAILABLE = "unavailable"  # 503
    READ_TIMEOUT = "read_timeout"  # the answer is held back ``hang`` seconds, past the client's deadline
    CONNECTION_RESET = "connection_reset"  # status, headers and half the body, then a TCP reset
    TRUNCATED_BODY = "truncated_body"  # a 200 whose JSON body is cut in half (content-length matches)
    SCHEMA_VIOLATION = "schema_violation"  # a valid reply whose tool input breaks the tool's schema
    REFUSAL = "refusal"  # stop_reason refusal (Bedrock: content_filtered) and no tool call
    MAX_TOKENS = "max_tokens"  # stop_reason max_tokens, the answer's lists (all-claims verdicts) cut short
    EMPTY = "empty"  # a valid reply with no content at all

    @property
    def is_error(self) -> bool:
        """Answered with an HTTP error status instead of a message."""
        return self in _ERRORS

    @property
    def is_transport(self) -> bool:
        """A broken or late HTTP exchange around an otherwise normal answer."""
        return self in (Fault.READ_TIMEOUT, Fault.CONNECTION_RESET, Fault.TRUNCATED_BODY)


_ERRORS = {Fault.RATE_LIMIT, Fault.RATE_LIMIT_NO_RETRY_AFTER, Fault.OVERLOADED, Fault.SERVER_ERROR, Fault.UNAVAILABLE}
#: Faults that a well-behaved client survives by retrying. A truncated body is one: the answer was
#: lost on the way, so the client must ask again rather than read what arrived.
TRANSIENT = (
    Fault.RATE_LIMIT,
    Fault.RATE_LIMIT_NO_RETRY_AFTER,
    Fault.OVERLOADED,
    Fault.SERVER_ERROR,
    Fault.UNAVAILABLE,
    Fault.READ_TIMEOUT,
    Fault.CONNECTION_RESET,
    Fault.TRUNCATED_BODY,
)
#: Faults in the answer itself, which the client must repair, re-ask or record as an error row.
BAD_ANSWERS = (Fault.SCHEMA_VIOLATION, Fault.REFUSAL, Fault.MAX_TOKENS, Fault.EMPTY)


@dataclass(frozen=True)
class Burst:
    """``length`` consecutive model calls from arrival index ``start`` fail with ``fault``; again every
    ``every`` calls when given."""

    start: int
    length: int
    every: int | None = None
    fault: Fault = Fault.OVERLOADED

    def covers(self, index: int) -> bool:
        if index < self.start:
            return False
        offset = index - self.start
        if self.every:
            offset %= self.every
        return offset < self.length


@dataclass
class FaultPlan:
    """Deterministic per-call faults; see the module docstring. Pass it as ``SimServer(faults=...)``."""

    rate: float = 0.0
    faults: Sequence[Fault] | Mapping[Fault, float] = (Fault.OVERLOADED,)
    seed: int = 0
    schedule: Mapping[int, Fault | None] | Sequence[Fault | None] = field(default_factory=dict)
    bursts: Sequence[Burst] = ()
    key: Literal["content", "order"] = "content"
    match: Callable[[Any], bool] | None = None
    #: The retry-after header sent with ``RATE_LIMIT`` (and with overload errors when set).
    retry_after: float = 0.05
    overload_retry_after: float | None = None
    #: How long a ``READ_TIMEOUT`` answer is held back (the server stops waiting when it closes).
    hang: float = 30.0
    #: Whether calls inside a batch job are eligible too (an error fault errors the item).
    in_batches: bool = True
    _seen: Counter = field(default_factory=Counter, init=False, repr=False)
    _eligible: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError("rate must be between 0 and 1")
        self.faults = (
            {Fault(f): float(w) for f, w in self.faults.items()}
            if isinstance(self.faults, Mapping)
            else {Fault(f): 1.0 for f in self.faults}
        )
        if self.rate and not self.faults:
            raise ValueError("a plan with a rate needs at least one fault to draw")
        if not isinstance(self.schedule, Mapping):
            self.schedule = dict(enumerate(self.schedule))

    @classmethod
    def at(cls, schedule: Mapping[int, Fault | None] | Sequence[Fault | None], **options: Any) -> FaultPlan:
        """Faults at given arrival indices: ``FaultPlan.at({0: Fault.RATE_LIMIT})``."""
        return cls(schedule=schedule, **options)

    @classmethod
    def random(
        cls, rate: float, faults: Sequence[Fault] | Mapping[Fault, float], *, seed: int = 0, **options: Any
    ) -> FaultPlan:
        """A seeded share ``rate`` of calls fails with one of ``faults``."""
        return cls(rate=rate, faults=faults, seed=seed, **options)

    def choose(self, index: int, call: Any, body_digest: str, *, batch: bool = False) -> Fault | None:
        """The fault for the model call that arrived ``index``-th (None: answer normally)."""
        if batch and not self.in_batches:
            return None
        if self.match is not None and not self.match(call):
            return None
        occurrence = self._seen[body_digest]
        self._seen[body_digest] += 1
        if index in self.schedule:
            fault = self.schedule[index]
            return Fault(fault) if fault is not None else None
        for burst in self.bursts:
            if burst.covers(index):
                return burst.fault
        if not self.rate:
            return None
        draw_key = f"{body_digest}:{occurrence}" if self.key == "content" else str(index)
        u, v = _uniform(self.seed, draw_key, "rate"), _uniform(self.seed, draw_key, "pick")
        if u >= self.rate:
            return None
        return _weighted_pick(self.faults, v)  # type: ignore[arg-type]


def _uniform(seed: int, key: str, salt: str) -> float:
    digest = hashlib.sha256(f"{seed}:{salt}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _weighted_pick(weights: Mapping[Fault, float], u: float) -> Fault:
    total = sum(weights.values())
    acc = 0.0
    for fault, weight in weights.items():
        acc += weight / total
        if u < acc:
            return fault
    return next(reversed(list(weights)))


def break_schema(tool_input: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool input that no longer validates: the first required field is dropped and any label is
    replaced by a word outside the label set."""
    broken = dict(tool_input)
    required = list(schema.get("required") or broken.keys())
    if required:
        broken.pop(required[0], None)
    if "label" in broken or not broken:
        broken["label"] = "certainly"
    return broken


def cut_short(tool_input: dict[str, Any]) -> dict[str, Any]:
    """A tool input as if generation stopped at max_tokens: the first list keeps its first half (so at
    least one item is lost), the last text of the last kept item is cut mid-way, later fields are gone."""
    out: dict[str, Any] = {}
    for key, value in tool_input.items():
        if isinstance(value, list) and value:
            kept = [dict(v) if isinstance(v, dict) else v for v in value[: len(value) // 2]]
            if kept and isinstance(kept[-1], dict):
                last = kept[-1]
                strings = [k for k, v in last.items() if isinstance(v, str)]
                if strings:
                    last[strings[-1]] = last[strings[-1]][: max(1, len(last[strings[-1]]) // 2)]
            out[key] = kept
            return out  # generation stops inside the first list: later fields never came
        out[key] = value
    if out:
        last_key = list(out)[-1]
        if isinstance(out[last_key], str):
            out[last_key] = out[last_key][: len(out[last_key]) // 2]
        else:
            out.pop(last_key)
    return out
