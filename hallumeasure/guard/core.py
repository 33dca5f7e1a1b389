"""The guard's pipeline, in process: extract, judge, decide, and rewrite when the policy says so.

``Guard`` builds its extractor, judge and rewriter once and reuses them for every check, so a
check costs only the work on its own text. The server (``guard/app.py``) is a thin shell over it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from hallumeasure.api.check import Result, result_of, sample_of
from hallumeasure.core.errors import InputError
from hallumeasure.core.text import split_sentences
from hallumeasure.core.types import Claim, ClaimVerdict, Passage, ResponseResult, Sample
from hallumeasure.detectors.rewrite import Issue, build_rewriter
from hallumeasure.guard.settings import (
    Decision,
    FailMode,
    GuardPolicy,
    GuardSettings,
    PolicyOverride,
    ResolvedPolicy,
    WorkLimitError,
)
from hallumeasure.guard.telemetry import GuardTelemetry
from hallumeasure.judges.protocols import Judgement, model_to_close
from hallumeasure.models.factory import ModelFactory, ModelOptions
from hallumeasure.models.model import failed_attempts
from hallumeasure.pipeline.judging import Judged, judge_sample, ms_since
from hallumeasure.pipeline.limits import WorkLimits, response_units, source_units
from hallumeasure.pipeline.measurement import Measurement, measure_settings
from hallumeasure.pipeline.run import on_kept_loop
from hallumeasure.runs.messages import MessagesError, last_answer


class PassageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    title: str | None = None


class CheckRequest(BaseModel):
    """One response to check against its source: a ``context`` string, a list of ``passages``, or a conversation
    (``messages``, read as ``check(messages=...)`` reads them; its last assistant message is the response unless
    ``response`` is given)."""

    model_config = ConfigDict(extra="forbid")

    response: str = Field(min_length=1)
    context: str | None = None
    passages: list[PassageIn] | None = None
    messages: list[dict[str, Any]] | None = None
    question: str | None = None
    policy: PolicyOverride | None = None
    #: The sample built when the request was validated, and the source fields it was built from: a request's
    #: source (a conversation, above all) is read once, however many steps ask for its sample.
    _built: tuple[tuple[object, ...], Sample] | None = PrivateAttr(default=None)

    def sample(self, *, id: str = "guard", model: str | None = None, response: str | None = None) -> Sample:  # noqa: A002
        """The request as a ``Sample`` (``response`` replaces the request's own, e.g. a rewrite)."""
        answer = self.response if response is None else response
        if id != "guard" or model is not None:
            return self._build(id, model, answer)
        source = (self.context, self.passages, self.messages, self.question)
        if self._built is None or any(a is not b for a, b in zip(self._built[0], source, strict=True)):
            self._built = (source, self._build(id, model, answer))
        built = self._built[1]
        # Only the response differs (a stream's window, a copy with its text): the source read stays good.
        return built if built.response == answer else built.model_copy(update={"response": answer})

    def _build(self, id: str, model: str | None, answer: str) -> Sample:  # noqa: A002
        if self.messages is not None:
            passages = [p.model_dump() for p in self.passages or ()]
            found = sample_of(answer, self.context, passages, self.question, self.messages)
            return found.model_copy(update={"id": id, "model": model})
        return Sample(
            id=id,
            model=model,
            context=self.context or "",
            passages=tuple(Passage(id=p.id, text=p.text, title=p.title) for p in self.passages or ()),
            response=answer,
            question=self.question,
        )

    @model_validator(mode="before")
    @classmethod
    def _answer_from_messages(cls, data: Any) -> Any:
        """A conversation's last assistant message is the response when the request gives none."""
        if not isinstance(data, dict) or data.get("response") or not isinstance(data.get("messages"), list):
            return data
        try:
            answer = last_answer(data["messages"])
        except MessagesError as exc:
            raise ValueError(f"messages: {exc}") from None
        if answer is None:
            raise ValueError("messages end with no assistant answer: give 'response', or end with the answer")
        return {**data, "response": answer}

    @model_validator(mode="after")
    def _one_source(self) -> CheckRequest:
        if self.messages is None and bool(self.context and self.context.strip()) == bool(self.passages):
            raise ValueError(
                "give the source as exactly one of 'context' (a string), 'passages' (a list) or 'messages'"
            )
        if self.messages is not None and self.context and self.context.strip() and self.passages:
            raise ValueError("with 'messages', give at most one of 'context' or 'passages'")
        ids = [p.id for p in self.passages or ()]
        if len(set(ids)) != len(ids):
            raise ValueError("each passage needs an id of its own (two passages share one)")
        try:
            self.sample()
        except ValidationError as exc:  # a source that the pipeline's Sample refuses: say which field
            fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
            raise ValueError(f"the source is not usable ({', '.join(fields)})") from None
        except InputError as exc:
            raise ValueError(str(exc)) from None
        return self


class CheckResult(Result):
    """What ``POST /v1/check`` and ``Guard.check`` return: ``check``'s ``Result`` and the guard's decision."""

    request_id: str
    decision: Decision
    #: The judge's response-level P(hallucinated), when it gives one.
    score: float | None = None
    #: The rewritten response, when the decision is ``rewrite``.
    rewritten: str | None = None
    policy: ResolvedPolicy
    #: Milliseconds per stage: extract, judge, explain and rewrite (when run) and total.
    latency_ms: dict[str, float]
    #: Whether an LLM explained the flagged claims (the verdicts then carry its categories and reasons).
    explained: bool = False
    #: Why the LLM step's answer is not used (it failed, or passed its deadline): the fast verdict stands,
    #: and the decision follows ``on_llm_failure``. None when it answered, or when there is no LLM step.
    fallback: str | None = None


#: The most characters (response and source together) of a check judged in the server process.
INLINE_CHARS = 10_000


@dataclass(frozen=True)
class CheckSize:
    """What a check's sample costs, measured once per request and passed to every step that weighs it (the
    limits, the choice of where to judge it, the judging path's work limit)."""

    response_chars: int
    source_chars: int
    #: ``response_units`` and ``source_units`` (``pipeline/limits.py``).
    response_units: int
    source_units: int

    @classmethod
    def of(cls, sample: Sample) -> CheckSize:
        return cls(
            response_chars=len(sample.response),
            source_chars=len(sample.context) + sum(len(p.text) for p in sample.passages),
            response_units=response_units(sample.response),
            source_units=source_units(sample),
        )


class JudgeCall(Protocol):
    """How a check gets its fast path: ``Guard.judged`` in process, or a judge worker process in the server;
    ``size`` is the sample's, when the caller has measured it."""

    def __call__(self, sample: Sample, claims_from: int = 0, size: CheckSize | None = None, /) -> Awaitable[Judged]: ...


class Guard:
    """Check responses against their sources and decide: pass, flag, block or rewrite.

    >>> guard = Guard()                                          # the keyless offline judge
    >>> guard.check(response="...", context="...").decision      # doctest: +SKIP
    """

    def __init__(
        self, settings: GuardSettings | None = None, *, telemetry: GuardTelemetry | None = None, **options: Any
    ) -> None:
        self.settings = settings or GuardSettings(**options)
        #: Records each check as an OpenTelemetry span and metrics (``guard/telemetry.py``, the otel extra).
        self.telemetry = telemetry
        # The same settings model, validation and stage building as hallumeasure.measure and check.
        measurement = Measurement(
            measure_settings({"judge": [self.settings.judge], "extractor": self.settings.extractor})
        )
        stages = measurement.stages()
        self.extractor, self.judge, self.policy = stages.extractor, stages.judge, stages.policy
        #: How sources and citation markers are read: as ``measure`` and ``check`` read them.
        self.sources = measurement.sources
        #: The claim limit is checked by the judging path (a 413 here); the rest before the work is queued.
        self.limits = WorkLimits(max_claims=self.settings.max_claims, max_work_units=self.settings.max_work_units)
        # The LLM steps answer live traffic under a deadline: their models read and write no request cache.
        live = ModelFactory(ModelOptions(no_cache=True))
        self.rewriter = build_rewriter(self.settings.rewriter, model_for=live)
        #: The explainer's LLM; each check gets its own constrained reasoner over it (they share no state).
        self.explainer = live(self.settings.explainer) if self.settings.explainer is not None else None

    async def aclose(self) -> None:
        """Close the LLM clients of the explainer and an LLM rewriter (a keyless guard holds none)."""
        for model in (self.explainer, model_to_close(self.rewriter)):
            if model is not None:
                await model.aclose()

    def check(self, response: str | None = None, **source: Any) -> CheckResult:
        """``acheck`` from synchronous code (the same arguments); it works inside a running event loop too.

        It runs on the package's kept loop, as ``check`` does: the explainer's and rewriter's LLM clients belong
        to the loop they were opened on, so every call of one guard uses the same one."""
        return on_kept_loop(self.acheck(response, **source)).result()

    async def acheck(
        self,
        response: str | None = None,
        *,
        context: str | None = None,
        passages: Sequence[PassageIn | dict[str, Any]] | None = None,
        messages: Sequence[dict[str, Any]] | None = None,
        question: str | None = None,
        policy: PolicyOverride | dict[str, Any] | None = None,
    ) -> CheckResult:
        """Check ``response`` against ``context`` (a string), ``passages`` (dicts or ``PassageIn``) or a
        conversation (``messages``, as ``POST /v1/check`` and ``check(messages=...)`` read them; its last
        assistant message is the response when ``response`` is not given)."""
        request = CheckRequest.model_validate(
            {
                "response": response,
                "context": context,
                "passages": [p.model_dump() if isinstance(p, PassageIn) else p for p in passages]
                if passages is not None
                else None,
                "messages": list(messages) if messages is not None else None,
                "question": question,
                "policy": policy.model_dump() if isinstance(policy, PolicyOverride) else policy,
            }
        )
        return await self.run(request)

    def check_size(self, sample: Sample, size: CheckSize | None = None) -> CheckSize:
        """Refuse a response over ``max_response_chars`` or a source over ``max_context_chars`` (cheap: the server
        calls it before queueing the work); return the sample's size (``size`` when the caller measured it)."""
        size = size or CheckSize.of(sample)
        self.check_response_chars(size.response_chars)
        if size.source_chars > self.settings.max_context_chars:
            limit = self.settings.max_context_chars
            raise WorkLimitError("source characters", size.source_chars, limit, "max_context_chars")
        # Before the extraction the response stands for its claims (the judging path checks the claims).
        hit = self.limits.work_hit(size.response_units, sample, of="the response", source=size.source_units)
        if hit is not None:
            raise WorkLimitError(hit.what, hit.size, hit.limit, hit.setting)
        return size

    def is_small(self, size: CheckSize) -> bool:
        """Whether a check of ``size`` is one the server may judge on its own event loop (``inline_work_units``):
        its cost is bounded by its work units and its characters, so it takes a few milliseconds at most."""
        if not self.settings.inline_work_units:
            return False
        if size.response_chars + size.source_chars > INLINE_CHARS:
            return False
        return size.response_units * size.source_units <= self.settings.inline_work_units

    def check_response_chars(self, size: int) -> None:
        """Refuse a response of ``size`` characters over ``max_response_chars`` (a stream checks it as it grows)."""
        if size > self.settings.max_response_chars:
            raise WorkLimitError("response characters", size, self.settings.max_response_chars, "max_response_chars")

    async def judged(self, sample: Sample, claims_from: int = 0, size: CheckSize | None = None) -> Judged:
        """``sample`` through the one judging path (``pipeline.judging``), within the guard's work limits; only
        the claims starting at or after character ``claims_from`` are judged (``size``: the sample's, when the
        caller measured it). This is the CPU-bound part that the server runs in a worker process."""
        size = self.check_size(sample, size)
        sentences = len(split_sentences(sample.response))
        if sentences > self.settings.max_sentences:
            raise WorkLimitError("response sentences", sentences, self.settings.max_sentences, "max_sentences")
        judged = await judge_sample(
            sample,
            self.extractor,
            self.judge,
            sources=self.sources,
            limits=self.limits,
            claims_from=claims_from,
            source_units=size.source_units,
        )
        if judged.over_limit is not None:
            hit = judged.over_limit
            raise WorkLimitError(hit.what, hit.size, hit.limit, hit.setting)
        return judged

    async def run(
        self,
        request: CheckRequest,
        request_id: str | None = None,
        *,
        judge_with: JudgeCall | None = None,
        size: CheckSize | None = None,
    ) -> CheckResult:
        """The pipeline on a validated request; ``judge_with`` runs the fast path elsewhere (the server's
        judge worker processes), else it runs here; ``size``: the request's sample's, when the caller measured it."""
        resolved = self.settings.resolve(request.policy)
        started, started_ns = time.perf_counter(), time.time_ns()
        sample = request.sample()
        fast = await (judge_with or self.judged)(sample, 0, size)
        latency = dict(fast.latency_ms)
        claims, verdicts = list(fast.claims), list(fast.verdicts)
        explained, fallback = False, None
        if self.explainer is not None and fast.judgement is not None and claims:
            at = time.perf_counter()
            explained_verdicts, fallback, asked = await self._explain(fast.shown_sample, claims, fast.judgement)
            if asked and fallback is None:
                verdicts = fast.finished(explained_verdicts)
            explained = asked and fallback is None
            latency["explain"] = ms_since(at)
        result = fast.result(self.policy, verdicts)
        decision, rewritten, rewrite_fallback = await self._decide(sample, claims, verdicts, result, resolved, latency)
        fallback = fallback or rewrite_fallback
        if fallback is not None and self.settings.on_llm_failure is FailMode.CLOSED and result.hallucinated:
            decision, rewritten = Decision.BLOCK, None
        latency["total"] = ms_since(started)
        found = result_of(request.response, result, self.policy, judge=self.judge.name, extractor=self.extractor.name)
        checked = CheckResult(
            **dict(found),
            request_id=request_id or uuid.uuid4().hex,
            decision=decision,
            score=result.score,
            rewritten=rewritten,
            policy=resolved,
            latency_ms=latency,
            explained=explained,
            fallback=fallback,
        )
        if self.telemetry is not None:
            self.telemetry.record(
                checked,
                decision=checked.decision.value,
                request_id=checked.request_id,
                start_ns=started_ns,
                end_ns=time.time_ns(),
            )
        return checked

    async def _explain(
        self, sample: Sample, claims: Sequence[Claim], judgement: Judgement
    ) -> tuple[list[ClaimVerdict], str | None, bool]:
        """The flagged claims explained by the LLM within the deadline, else the fast verdicts and why; and
        whether the LLM was asked at all (it is not when nothing was flagged).

        The contract: the LLM sees only the claims the fast judge labelled unsupported (confident or not),
        never the supported ones, however unsure; for each it may withdraw the flag ("no problem found")
        or explain it (a category and a reason). It never adds a flag nor makes an unsure flag confident,
        so it can turn a flag into a pass but never a pass into a flag, nor a flag into a block.
        """
        from hallumeasure.detectors.cascade import CascadeJudge

        assert self.explainer is not None
        fast = {v.claim_id: v for v in judgement.verdicts}
        flagged = [
            c
            for c in claims
            if c.id in fast
            and fast[c.id].ok
            and fast[c.id].label is not None
            and self.policy.is_unsupported(fast[c.id].label)  # type: ignore[arg-type]
        ]
        if not flagged:
            return list(judgement.verdicts), None, False
        reasoner = CascadeJudge(_Replay(self.judge.name, judgement), self.explainer, policy=self.policy)
        failures: list[str] = []
        token = failed_attempts.set(failures)
        try:
            explained = await asyncio.wait_for(reasoner.judge(sample, flagged), timeout=self.settings.llm_deadline_s)
        except TimeoutError:
            why = f"the LLM did not answer within {self.settings.llm_deadline_s:g} s"
            if failures:
                why += f" ({len(failures)} failed attempt(s) before it; the last: {failures[-1]})"
            return list(judgement.verdicts), why, True
        except Exception as exc:  # noqa: BLE001 - any provider failure falls back to the fast verdict
            return list(judgement.verdicts), f"the LLM step failed: {_short(exc)}", True
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                raise  # this check itself was cancelled (its deadline, its client gone)
            # a cancellation that is not this check's (a call shared with another one): the fast verdict stands
            return list(judgement.verdicts), "the LLM call was cancelled", True
        finally:
            failed_attempts.reset(token)
        if reasoner.counts["explain_errors"]:
            n = reasoner.counts["explain_errors"]
            return list(judgement.verdicts), f"the LLM gave no usable answer for {n} flagged claim(s)", True
        answered = {v.claim_id: v for v in explained.verdicts}
        merged = []
        for verdict in judgement.verdicts:
            new = answered.get(verdict.claim_id)
            if new is not None and self.policy.is_unsupported(new.label):  # type: ignore[arg-type]
                new = new.model_copy(update={"confident": verdict.confident})  # explained, not strengthened
            merged.append(new if new is not None else verdict)
        return merged, None, True

    async def _decide(
        self,
        sample: Sample,
        claims: Sequence[Claim],
        verdicts: Sequence[ClaimVerdict],
        result: ResponseResult,
        policy: ResolvedPolicy,
        latency: dict[str, float],
    ) -> tuple[Decision, str | None, str | None]:
        """The decision, the rewritten text (for ``rewrite``) and why an LLM rewriter's answer is not used."""
        if result.hallucinated is False:
            return Decision.PASS, None, None
        if result.hallucinated is None:  # a stage failed or nothing was checkable: say so rather than pass it
            return Decision.FLAG, None, None
        level = result.score if result.score is not None else (result.unsupported_rate or 0.0)
        # Act (block or rewrite) only on a decided response above the threshold; else flag it for a look.
        if not result.decided or level < policy.threshold:
            return Decision.FLAG, None, None
        if policy.policy is GuardPolicy.DETECT:
            return Decision(policy.action.value), None, None
        by_id = {c.id: c for c in claims}
        issues = [
            Issue(by_id[v.claim_id], v)
            for v in verdicts
            if v.ok and v.confident and v.label is not None and self.policy.is_unsupported(v.label)
        ]
        at = time.perf_counter()
        try:
            outcome = await asyncio.wait_for(self.rewriter.rewrite(sample, issues), self.settings.llm_deadline_s)
        except TimeoutError:
            latency["rewrite"] = ms_since(at)
            return Decision.FLAG, None, f"the rewriter did not answer within {self.settings.llm_deadline_s:g} s"
        latency["rewrite"] = ms_since(at)
        if outcome.text is None:
            return Decision.FLAG, None, f"the rewriter failed: {outcome.error or 'no text'}"
        if outcome.text.strip() == sample.response.strip():
            return Decision(policy.action.value), None, None  # no edit could be made: detection decides
        return Decision.REWRITE, outcome.text, None


class _Replay:
    """The explainer's "first pass": the verdicts the guard's fast judge already gave, returned again."""

    def __init__(self, name: str, known: Judgement) -> None:
        self.name = name
        self.known = known

    def settings(self) -> dict[str, Any]:
        return {"replays": self.name}

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        return self.known


def _short(exc: BaseException) -> str:
    """An exception as one short line (a provider's message can be long)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__
