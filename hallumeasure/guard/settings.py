"""The guard's settings: one pydantic model for the server, the config file and in-process use.

A deployment fixes the judge, the policy and the limits; a request may only tighten or loosen
the policy within what the deployment allows (``overridable``).
"""

from __future__ import annotations

import os
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from hallumeasure.pipeline.settings import Flag
from hallumeasure.registry import PartKind, is_keyless

#: The environment variable that may hold the server's API keys, comma-separated.
KEYS_ENV = "HALLUMEASURE_API_KEYS"


class GuardPolicy(StrEnum):
    """What the guard does with a response it finds unsupported claims in."""

    #: Detection only: report, and flag or block above the threshold.
    DETECT = "detect"
    #: Detection, then the rewriter removes or fixes the confidently unsupported claims.
    REWRITE = "rewrite"


class Action(StrEnum):
    """What detection-only does above its threshold."""

    FLAG = "flag"
    BLOCK = "block"


class FailMode(StrEnum):
    """What a response gets when the LLM step fails or passes its deadline."""

    #: The fast path's decision stands (the response is served, flagged if it was).
    OPEN = "open"
    #: A response the fast path flagged is blocked.
    CLOSED = "closed"


class Decision(StrEnum):
    PASS = "pass"
    FLAG = "flag"
    BLOCK = "block"
    REWRITE = "rewrite"


class PolicyOverride(BaseModel):
    """The per-request part of the policy (every field optional; unset means the deployment's)."""

    model_config = ConfigDict(extra="forbid")

    policy: GuardPolicy | None = None
    action: Action | None = None
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)


class GuardSettings(BaseModel):
    """How a guard judges, decides and protects itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judge: str = Field(
        default="offline",
        description="The fast-path judge: a keyless one (offline, nli, offline+nli) or any judge spec.",
    )
    extractor: str = Field(default="offline", description="The claim extractor (a spec, as measure's --extractor).")
    policy: GuardPolicy = Field(
        default=GuardPolicy.DETECT, description="detect (flag or block) or rewrite (the rewriter fixes the claims)."
    )
    action: Action = Field(default=Action.FLAG, description="With policy detect: flag or block.")
    threshold: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Response score (the judge's P(hallucinated), else the unsupported-claim rate) at or above "
        "which a response with an unsupported claim is acted on; below it the response is flagged at most. "
        "Choose it for precision on your own traffic (hallumeasure monitor measures it).",
    )
    rewriter: str = Field(
        default="offline", description="The rewriter of policy rewrite: offline (rules) or a model spec."
    )
    explainer: str | None = Field(
        default=None,
        description="An LLM (model spec) that explains each flagged claim, naming an error category, or withdraws "
        "the flag ('no problem found'). None: the fast verdict is final.",
    )
    llm_deadline_s: Annotated[float, Flag(decls=("--llm-deadline",))] = Field(
        default=2.0,
        gt=0.0,
        description="Seconds the LLM step (explaining or an LLM rewrite) may take; past it the fast verdict stands.",
    )
    on_llm_failure: FailMode = Field(
        default=FailMode.OPEN,
        description="When the LLM step fails or passes its deadline: open (the fast decision stands) or closed "
        "(block flagged responses).",
    )
    overridable: frozenset[str] = Field(
        default=frozenset({"policy", "action", "threshold"}),
        description="A policy field a request may override (repeatable): policy, action, threshold.",
    )
    max_request_bytes: int = Field(default=1_000_000, ge=1_000, description="Largest request body; 413 beyond.")
    max_concurrency: int = Field(
        default=8, ge=1, description="Checks at once; more wait in a queue of --max-queue, then get 429."
    )
    max_queue: int = Field(default=32, ge=0, description="Checks waiting for a slot; more get 429.")
    timeout_s: Annotated[float, Flag(decls=("--timeout",))] = Field(
        default=10.0,
        gt=0.0,
        description="Deadline of a check in seconds, from arrival: reading the body, the wait for a slot and a "
        "judge worker, judging and the LLM step; 504 past it (408 while the body is still arriving).",
    )
    # Work limits besides bytes (a request under the byte limit can still cost minutes of CPU). The claims are
    # tighter than measure's 2,000: the guard answers within timeout_s.
    max_context_chars: int = Field(
        default=100_000, ge=1, description="Most characters of source (context or passages together); 413 beyond."
    )
    max_response_chars: int = Field(
        default=100_000, ge=1, description="Most characters a checked response may have; 413 beyond."
    )
    max_sentences: int = Field(default=200, ge=1, description="Most sentences a checked response may have; 413 beyond.")
    max_claims: int = Field(default=400, ge=1, description="Most claims a checked response may hold; 413 beyond.")
    max_work_units: int = Field(
        default=5_000_000,
        ge=1,
        description="Most work a check may cost, in units: the claims' (each claim's words, and 8 a claim) x the "
        "source's (its words, and each pair of numbers within one source sentence); before any work the "
        "response's sentences stand for its claims. About 0.1-0.5 us a unit on the offline judge; 413 beyond.",
    )
    inline_work_units: int = Field(
        default=20_000,
        ge=0,
        description="A check of at most this many work units and 10,000 characters is judged in the server process, "
        "without the hop to a judge worker (a few milliseconds at most; it never waits behind heavy checks); "
        "0: every check goes to a worker.",
    )
    judge_workers: int | None = Field(
        default=None,
        ge=0,
        description="Processes that run the keyless judges off the event loop; a check past its deadline has its "
        "worker replaced (default: one per core, at most --max-concurrency, for keyless judges; none for "
        "others; 0: none).",
    )
    max_worker_checks_per_client: int | None = Field(
        default=None,
        ge=1,
        description="Checks of one client (its API key, else its address) in the judge workers at once; more wait "
        "for its earlier ones, so one client's heavy checks never hold every worker (default: no cap; behind a "
        "proxy without keys every client has the proxy's address).",
    )
    spare_workers: int = Field(
        default=1,
        ge=0,
        description="Judge workers kept started out of rotation: one takes the place of a worker that ends (a "
        "deadline, a crash, a retirement) at once, instead of after the seconds a start takes.",
    )
    worker_max_checks: int = Field(
        default=10_000,
        ge=0,
        description="Checks a judge worker answers before it is retired and replaced by a spare, which bounds its "
        "memory; 0: never.",
    )
    max_streams: int = Field(
        default=64,
        ge=1,
        description="Streams open at once (each holds a check slot only while one of its sentences is judged); "
        "more get 429.",
    )
    stream_idle_s: Annotated[float, Flag(decls=("--stream-idle",))] = Field(
        default=30.0, gt=0.0, description="Seconds a stream may send nothing before it is ended."
    )
    stream_timeout_s: Annotated[float, Flag(decls=("--stream-timeout",))] = Field(
        default=300.0, gt=0.0, description="Deadline of a whole stream, from its first byte to its done event; seconds."
    )
    # Deadlines and caps below the app (guard/connections.py): a request's body has the check's deadline
    # (timeout_s, counted from arrival), a stream's lines stream_idle_s.
    header_timeout_s: Annotated[float, Flag(decls=("--header-timeout",))] = Field(
        default=10.0,
        gt=0.0,
        description="Seconds a connection has to send a request's whole head (request line and headers), from its "
        "opening or, kept alive, from the request's first byte; 408 and closed past it.",
    )
    max_connections: int = Field(
        default=512,
        ge=1,
        description="Connections open at once per server process; one beyond gets 503 and is closed (keep it "
        "under ulimit -n, less a few dozen).",
    )
    max_connections_per_client: int | None = Field(
        default=None,
        ge=1,
        description="Connections open at once from one client address; one beyond gets 503 (default: no such cap; "
        "behind a proxy every client has the proxy's address).",
    )
    drain_s: Annotated[float, Flag(decls=("--drain-seconds",))] = Field(
        default=5.0,
        ge=0.0,
        description="After SIGTERM, seconds to keep answering (readyz 503, Connection: close) before the server "
        "stops accepting and lets in-flight work finish.",
    )
    api_keys: tuple[SecretStr, ...] = ()
    log_sample: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Share of checks logged with their text and decision into --log-dir, for hallumeasure monitor; "
        "0 logs nothing (the ordinary logs never carry request text).",
    )
    log_dir: Path | None = Field(default=None, description="Folder of the sampled traffic log (traffic.jsonl).")

    @field_validator("overridable")
    @classmethod
    def _known_fields(cls, value: frozenset[str]) -> frozenset[str]:
        unknown = value - set(PolicyOverride.model_fields)
        if unknown:
            raise ValueError(f"overridable may name {sorted(PolicyOverride.model_fields)}; got {sorted(unknown)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if not self.judge.strip() or not self.extractor.strip():
            raise ValueError("judge and extractor must name a judge spec, e.g. 'offline'")
        if self.log_sample > 0 and self.log_dir is None:
            raise ValueError("log_sample needs log_dir: the folder the sampled traffic is written to")
        return self

    def resolve(self, override: PolicyOverride | None) -> ResolvedPolicy:
        """The policy of one request: the deployment's, changed where the request may change it."""
        given = override.model_dump(exclude_none=True) if override is not None else {}
        refused = sorted(set(given) - self.overridable)
        if refused:
            raise PolicyError(f"this deployment does not let a request set {', '.join(refused)}")
        return ResolvedPolicy(
            policy=given.get("policy", self.policy),
            action=given.get("action", self.action),
            threshold=given.get("threshold", self.threshold),
        )


class ResolvedPolicy(BaseModel):
    model_config = ConfigDict(frozen=True)

    policy: GuardPolicy
    action: Action
    threshold: float


class PolicyError(ValueError):
    """A request asked for a policy change that the deployment does not allow."""


class WorkLimitError(ValueError):
    """A request asks for more work than a limit allows; the message names the limit and the setting."""

    def __init__(self, what: str, size: int, limit: int, setting: str) -> None:
        self.what, self.size, self.limit, self.setting = what, size, limit, setting
        super().__init__(
            f"{what}: {size:,}, over the limit of {limit:,}; the deployment raises it with the "
            f"'{setting}' setting (serve --{setting.replace('_', '-')})"
        )

    def __reduce__(self) -> tuple[type[WorkLimitError], tuple[str, int, int, str]]:
        # Raised in a judge worker process and re-raised in the server: it must pickle with its fields.
        return (WorkLimitError, (self.what, self.size, self.limit, self.setting))


def judge_worker_count(settings: GuardSettings) -> int:
    """How many judge worker processes the server starts for ``settings`` (0: judge on the event loop)."""
    if settings.judge_workers is not None:
        return settings.judge_workers
    # Judges and extractors that call no provider run on the CPU: the server runs them in worker processes.
    if not is_keyless(settings.judge) or not is_keyless(settings.extractor, PartKind.EXTRACTOR):
        return 0
    return max(1, min(os.cpu_count() or 1, settings.max_concurrency))


def read_keys(key_file: Path | None = None) -> tuple[SecretStr, ...]:
    """API keys from ``key_file`` (one per line) and ``$HALLUMEASURE_API_KEYS`` (comma-separated).

    A comment is a line that starts with ``#``, or a ``#`` after whitespace at the end of a line. A ``#``
    inside a key is part of it: cutting the key there would silently serve a shorter key.
    """
    keys: list[str] = []
    if key_file is not None:
        for line in key_file.read_text(encoding="utf-8").splitlines():
            line = re.split(r"\s#", line.strip(), maxsplit=1)[0].strip()
            if line and not line.startswith("#"):
                keys.append(line)
    keys += [k.strip() for k in os.environ.get(KEYS_ENV, "").split(",") if k.strip()]
    short = [k for k in keys if len(k) < 16]
    if short:
        raise ValueError(f"{len(short)} API key(s) shorter than 16 characters: use long random keys")
    return tuple(SecretStr(k) for k in dict.fromkeys(keys))
