"""``check`` and ``acheck``: one response against its source, answered in memory (nothing is stored).

Repeated calls are cheap: the extractor and judge of each (judge, extractor, settings) are built once
and kept, so a keyless judge loads its model once and an LLM judge keeps its connection pool and its
request cache. They are kept together with the provider environment they were built under (endpoint
and key variables, hashed), and built again when it changes.

Kept stages all run on the package's kept event loop on a daemon thread (``pipeline.run.kept_loop``),
because an LLM client belongs to the loop it was opened on: ``check`` hands the coroutine to that loop
and waits, ``acheck`` awaits it from the caller's loop. Neither runs or patches the caller's loop, so
both work from a script, a notebook and an async app alike.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup
from pydantic import BaseModel, Field

from hallumeasure.core.certainty import CONFIDENT, claim_certainty, undecided_reason
from hallumeasure.core.errors import InputError
from hallumeasure.core.labels import Label, Policy, Subtype
from hallumeasure.core.spans import UnsupportedSpan, unsupported_spans
from hallumeasure.core.types import ErrorKind, Evidence, Passage, ResponseResult, Sample, Usage
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge
from hallumeasure.pipeline.limits import WorkLimits
from hallumeasure.pipeline.measurement import Measurement, measure_settings
from hallumeasure.pipeline.run import close_stage_models, on_kept_loop
from hallumeasure.pipeline.settings import MeasureSettings
from hallumeasure.runs.messages import MessagesError, read_conversation
from hallumeasure.sources.rag import SourceOptions

#: Environment variables that change what a built stage talks to; the stages are rebuilt when one changes.
PROVIDER_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "HALLUMEASURE_BEDROCK_ENDPOINT",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "HALLUMEASURE_CACHE_DIR",
)


class CheckedClaim(BaseModel):
    """One claim of a checked response with its verdict."""

    index: int
    text: str
    label: Label | None
    subtype: Subtype | None = None
    label_reason: str | None = None
    subtype_reason: str | None = None
    #: Quotes of the source that the verdict rests on.
    evidence: tuple[Evidence, ...] = ()
    #: Probability that the claim is unsupported, when the judge gives one.
    probability: float | None = None
    #: False when a keyless judge cannot tell: ``label`` is then its best guess (docs/concepts.md).
    confident: bool = True
    #: ``confident`` or ``unsure``, the word every view uses for ``confident`` (``core/certainty.py``).
    certainty: str = CONFIDENT
    #: Whether the claim counts as unsupported under the policy; None for an error row.
    unsupported: bool | None = None
    #: Why the claim has no verdict (an error row).
    error: str | None = None
    #: Character ranges of the claim in the response.
    spans: tuple[tuple[int, int], ...] = ()
    #: False when the claim's place in the response could not be found (``spans`` is then empty).
    located: bool = True


class Result(BaseModel):
    """What ``check`` found in one response: its claims and verdicts, and the response's numbers."""

    response: str
    claims: list[CheckedClaim] = Field(default_factory=list)
    n_claims: int = 0
    n_evaluated: int = 0
    n_unsupported: int = 0
    n_errors: int = 0
    #: Unsupported claims among those evaluated; None when none was.
    unsupported_rate: float | None = None
    hallucinated: bool | None = None
    #: Whether ``hallucinated`` holds whatever the unsure claims turn out to be and, for a keyless judge, its
    #: response score agrees with it (docs/concepts.md).
    decided: bool | None = None
    #: Why the response is not decided, in the concepts page's words; None when it is.
    undecided_reason: str | None = None
    #: The characters of the response behind its unsupported claims, merged where claims overlap
    #: (LettuceDetect's ``{start, end, text, confidence}`` with the claims' ``label`` and ``subtype``).
    unsupported_spans: list[UnsupportedSpan] = Field(default_factory=list)
    judge: str
    extractor: str
    #: Set when the whole response could not be checked (the extraction failed, for example), with its kind.
    error: str | None = None
    error_kind: ErrorKind | None = None
    usage: Usage = Field(default_factory=Usage)

    @property
    def unsupported(self) -> list[CheckedClaim]:
        """The claims counted as unsupported."""
        return [c for c in self.claims if c.unsupported]

    @property
    def grounded(self) -> bool:
        """True when the response was checked and no claim is unsupported."""
        return self.error is None and self.n_errors == 0 and self.n_unsupported == 0

    def __repr__(self) -> str:
        rate = "-" if self.unsupported_rate is None else f"{self.unsupported_rate:.3f}"
        return (
            f"<Result: {self.n_claims} claims, {self.n_unsupported} unsupported (rate {rate}), "
            f"{self.n_errors} error rows; judge {self.judge}>"
        )

    def _repr_html_(self) -> str:
        rows = Markup("").join(
            Markup("<tr><td>{}</td><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td></tr>").format(
                c.index + 1,
                c.text,
                c.label.value if c.label else "error",
                c.subtype.value if c.subtype else "",
                c.label_reason or c.error or "",
            )
            for c in self.claims
        )
        return str(
            Markup(
                "<div><p>{}</p><table><tr><th>#</th><th>claim</th><th>label</th><th>subtype</th>"
                "<th>reason</th></tr>{}</table></div>"
            ).format(repr(self), rows)
        )


def result_of(response: str, result: ResponseResult, policy: Policy, *, judge: str, extractor: str) -> Result:
    """The ``Result`` of one measured response (claims joined with their verdicts)."""
    verdicts = {v.claim_id: v for v in result.verdicts}
    claims = []
    for claim in result.claims:
        v = verdicts.get(claim.id)
        ok = v is not None and v.ok
        claims.append(
            CheckedClaim(
                index=claim.index,
                text=claim.text,
                label=v.label if v is not None else None,
                subtype=v.subtype if v is not None else None,
                label_reason=v.label_reason if v is not None else None,
                subtype_reason=v.subtype_reason if v is not None else None,
                evidence=v.evidence if v is not None else (),
                probability=v.probability if v is not None else None,
                confident=v.confident if v is not None else True,
                certainty=claim_certainty(v.confident if v is not None else None),
                unsupported=policy.is_unsupported(v.label) if ok and v is not None and v.label else None,
                error=(v.error if v is not None else "the judge returned no verdict") if not ok else None,
                spans=tuple((s.start, s.end) for s in claim.spans),
                located=claim.located,
            )
        )
    return Result(
        response=response,
        claims=claims,
        n_claims=result.n_claims,
        n_evaluated=result.n_evaluated,
        n_unsupported=result.n_unsupported,
        n_errors=result.n_errors,
        unsupported_rate=result.unsupported_rate,
        hallucinated=result.hallucinated,
        decided=result.decided,
        undecided_reason=undecided_reason(
            result.decided,
            (v.confident for v in result.verdicts if v.ok),
            has_flag=result.hallucinated is not None,
        ),
        unsupported_spans=unsupported_spans(response, result.claims, result.verdicts, policy),
        judge=judge,
        extractor=extractor,
        error=result.error,
        error_kind=result.error_kind,
        usage=result.usage,
    )


# --- the kept stages, and the loop they run on ----------------------------------------------------


class _Checker:
    """Built stages for one (judge, extractor, settings), used only on the private loop."""

    def __init__(
        self, extractor: ClaimExtractor, judge: ClaimJudge, policy: Policy, sources: SourceOptions, limits: WorkLimits
    ) -> None:
        self.extractor, self.judge, self.policy, self.sources, self.limits = extractor, judge, policy, sources, limits

    async def check(self, sample: Sample) -> Result:
        from hallumeasure.pipeline.judging import measure_sample

        result = await measure_sample(
            sample, self.extractor, self.judge, self.policy, sources=self.sources, limits=self.limits
        )
        return result_of(sample.response, result, self.policy, judge=self.judge.name, extractor=self.extractor.name)


_lock = threading.Lock()
_building = threading.Lock()
_checkers: dict[str, _Checker] = {}


def _environment() -> str:
    values = [os.environ.get(name, "") for name in PROVIDER_ENV]
    return hashlib.sha256("\x00".join(values).encode("utf-8")).hexdigest()


def _checker(values: dict[str, Any], base: MeasureSettings | None = None) -> _Checker:
    settings = measure_settings(values, base=base)
    key = json.dumps([settings.model_dump(mode="json"), _environment()], sort_keys=True)
    # One build at a time: callers on several threads (mlflow.genai.evaluate runs scorers in a pool) would
    # otherwise build the same stages twice and open the same request-cache database at once.
    with _building:
        with _lock:
            found = _checkers.get(key)
        if found is not None:
            return found
        measurement = Measurement(settings)
        stages = measurement.stages()
        checker = _Checker(stages.extractor, stages.judge, stages.policy, measurement.sources, measurement.limits)
        with _lock:
            return _checkers.setdefault(key, checker)


def forget_stages() -> None:
    """Close and drop every kept stage (they are built again on the next call).

    It runs at interpreter exit too, so it imports nothing: an import then can fail ("can't register atexit
    after shutdown") and print a traceback after a program that ended cleanly.
    """
    with _lock:
        kept = list(_checkers.values())
        _checkers.clear()
    if kept:  # they were built, so the kept loop runs
        stages = [stage for c in kept for stage in (c.extractor, c.judge)]
        on_kept_loop(close_stage_models(*stages)).result(timeout=30)


atexit.register(forget_stages)


def sample_of(
    response: str | Sample | None,
    context: str | None,
    passages: Sequence[str | Passage | dict[str, Any]] | None,
    question: str | None,
    messages: Sequence[Mapping[str, Any]] | None = None,
) -> Sample:
    """The sample that ``check`` (and the guard's ``/v1/check``) reads from its arguments; ``InputError`` when
    they give no response or no source."""
    if isinstance(response, Sample):
        if context is not None or passages is not None or question is not None or messages is not None:
            raise InputError(
                "a Sample carries its own source: pass context, passages, messages and question only with a string"
            )
        return response
    if response is not None and not isinstance(response, str):
        raise InputError(f"response must be text or a Sample, not {type(response).__name__}")
    if context is None and not passages and messages is None:
        raise InputError(
            "check needs the source the response should be grounded in: pass context=, passages= or messages="
        )
    items = tuple(
        p if isinstance(p, Passage) else Passage(id=str(i), text=p) if isinstance(p, str) else Passage(**p)
        for i, p in enumerate(passages or (), start=1)
    )
    if messages is None:
        if response is None:
            raise InputError("check needs the response to check (or messages= ending with the assistant's answer)")
        return Sample(id="checked", context=context or "", passages=items, response=response, question=question)
    # A conversation: its system prompt, tool results and user turns are sources beside the passages.
    if context is not None and context.strip() and not items:
        items = (Passage(id="context", text=context),)
    try:
        conversation = read_conversation(messages, taken_ids=[p.id for p in items])
    except MessagesError as exc:
        raise InputError(f"messages: {exc}") from None
    answer = response if response is not None else conversation.response
    if answer is None:
        raise InputError("messages end with no assistant answer: pass the response to check, or end with it")
    return Sample(
        id="checked",
        passages=(*items, *conversation.sources),
        response=answer,
        question=question or conversation.question,
    )


def check(
    response: str | Sample | None = None,
    *,
    context: str | None = None,
    passages: Sequence[str | Passage | dict[str, Any]] | None = None,
    messages: Sequence[Mapping[str, Any]] | None = None,
    question: str | None = None,
    judge: str | list[str] | None = None,
    extractor: str | None = None,
    mode: str | None = None,
    settings: MeasureSettings | None = None,
    **options: Any,
) -> Result:
    """Check one response against ``context`` (or ``passages``, a list of texts or ``Passage``s), or a
    conversation: ``messages`` (OpenAI-style roles, ``tool_calls``, tool messages; ``runs/messages.py``) whose
    last assistant message is the response unless ``response`` is given. Its system prompt and tool results
    are sources with ids and kinds (earlier user turns too with ``user_turns=True``); each verdict's
    ``evidence`` names the source it came from. A response with no source at all is unevaluatable.

    ``settings`` is a ``MeasureSettings``, and ``options`` are its fields as keywords (``unsupported_labels``,
    ``timeout``, ``no_cache`` ...), which win over ``settings``; the judge, extractor and mode default to
    ``offline``, ``offline`` and ``cot-one``. An unknown keyword is a ``ConfigError`` that lists the valid ones.
    A response whose claims could not all be judged comes back with error rows (``n_errors``), not an
    exception; one over a work limit (``max_response_chars``, ``max_claims``) comes back unjudged, with
    ``error`` saying which limit and how to raise it. Works inside a running event loop too.
    """
    sample = sample_of(response, context, passages, question, messages)
    checker = _checker(dict(options, judge=judge, extractor=extractor, mode=mode), settings)
    return on_kept_loop(checker.check(sample)).result()


async def acheck(
    response: str | Sample | None = None,
    *,
    context: str | None = None,
    passages: Sequence[str | Passage | dict[str, Any]] | None = None,
    messages: Sequence[Mapping[str, Any]] | None = None,
    question: str | None = None,
    judge: str | list[str] | None = None,
    extractor: str | None = None,
    mode: str | None = None,
    settings: MeasureSettings | None = None,
    **options: Any,
) -> Result:
    """``check`` for async code: awaits the check without blocking the caller's loop."""
    sample = sample_of(response, context, passages, question, messages)
    checker = await asyncio.to_thread(_checker, dict(options, judge=judge, extractor=extractor, mode=mode), settings)
    return await asyncio.wrap_future(on_kept_loop(checker.check(sample)))
