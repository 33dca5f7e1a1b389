"""Claim classification with an LLM in the four prompt configurations.

The configurations share one code path; they differ only in data (prompt, contract, tool):
chain of thought or not, one claim per call or all claims of a response in one call.

Every request puts the instructions and the context (its passages, each fenced with its id) first,
marked as a cacheable prefix, and the claim(s) last. In the one-claim modes every claim of a response
shares that prefix, and a provider can read a cached prefix only once the request that writes it has
answered. So, where the provider caches and the prefix is long enough to be cached
(``Model.api.min_cache_tokens``), the pipeline sends a warm-up request with the prefix alone
(``warm_up``, one output token) together with the extraction call; when extraction returns, every
claim goes out at once and reads the cache. The very first warm-up of a run writes the run-wide part
(tools and system prompt) before the others start, so that part is written once per run. A judge
asked without a warm-up (called directly) judges the first claim alone and fans out when it has
answered. No warm-up where nothing can be cached: a short prefix, a provider without caching, batch
mode, or ``warm_cache=False``.

A model with a small window (a local server started with ``-c 2048``; the window comes from the server,
the spec or the facts table, ``Model.window``) gets requests that fit it: the source is cut to what the
window leaves beside the instructions, one claim and its answer (``source_budget``); the prompt's worked
examples are left out when with them the source would get less than a quarter of the window; every
request's answer budget is what its prompt leaves of the window; the all-claims modes judge a response's
claims in batches, halved until each batch's prompt leaves room for its answers, and where the
all-claims prompt itself leaves (nearly) no room, each claim is asked with the one-claim prompt.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hallumeasure.core.activity import claims_judged
from hallumeasure.core.errors import HalluMeasureError, RunStoppedError
from hallumeasure.core.text import fence
from hallumeasure.core.types import Claim, ClaimVerdict, ErrorKind, Mode, Sample, Usage
from hallumeasure.judges.llm.extract import question_block
from hallumeasure.judges.llm.outputs import CotVerdict, CotVerdicts, PlainVerdict, PlainVerdicts, tool_schema
from hallumeasure.judges.llm.parsing import ask_structured
from hallumeasure.judges.llm.prompts import Prompt, load_prompt
from hallumeasure.judges.protocols import (
    CacheWarmingJudge,
    Judgement,
    ModeJudge,
    ModelStage,
    PromptedStage,
    RepeatableJudge,
    WarmableJudge,
    WarmUp,
    WindowedJudge,
)
from hallumeasure.models.base import GenerateRequest, Message, TextBlock, ToolSpec
from hallumeasure.models.cache import request_key
from hallumeasure.models.limits import text_tokens
from hallumeasure.models.model import Model
from hallumeasure.models.window import answer_room, prompt_tokens
from hallumeasure.sources.evidence import all_verified, verify
from hallumeasure.sources.passages import context_block
from hallumeasure.sources.retrieval import TOKEN_SAFETY

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModeSpec:
    prompt_id: str
    contract: type[BaseModel]
    tool: ToolSpec


def _tool(name: str, contract: type[BaseModel], what: str) -> ToolSpec:
    return ToolSpec(name=name, description=what, input_schema=tool_schema(contract))


_ONE = "Record the verdict for the claim."
_ALL = "Record one verdict per claim id."
MODES: dict[Mode, ModeSpec] = {
    Mode.COT_ONE: ModeSpec("classify_cot_one", CotVerdict, _tool("record_verdict", CotVerdict, _ONE)),
    Mode.NOCOT_ONE: ModeSpec("classify_nocot_one", PlainVerdict, _tool("record_verdict", PlainVerdict, _ONE)),
    Mode.COT_ALL: ModeSpec("classify_cot_all", CotVerdicts, _tool("record_verdicts", CotVerdicts, _ALL)),
    Mode.NOCOT_ALL: ModeSpec("classify_nocot_all", PlainVerdicts, _tool("record_verdicts", PlainVerdicts, _ALL)),
}


#: The claim of a warm-up request, which only writes the prompt cache (its answer is cut at one token).
_WARM_UP_CLAIM = fence("claim", "(none: this request only prepares the prompt cache)", id="warm-up")


#: Seconds a prefix written by a warm-up is taken as still cached (the providers keep one 5 minutes
#: after its last use; a margin for the claims that read it late).
WARM_FOR = 240.0

#: How much larger the output budget of a one-claim call cut off at ``max_tokens`` is on its one retry.
CUT_OFF_GROWTH = 4

#: Answer tokens one claim's verdict needs in a small window: a reason, quotes and a label (chain of
#: thought), or a label alone. A batch of claims is split until its prompt leaves this much per claim.
VERDICT_TOKENS = {True: 200, False: 40}
#: Tokens one claim's block takes in a request, reserved beside the source when the source is cut.
CLAIM_TOKENS = 60
#: The share of a window the source should get: below it, the prompt's worked examples are left out to make room.
EXAMPLES_ROOM = 0.25
#: Below this share of the window left for the source by the all-claims prompt (without examples), an all-claims
#: mode asks each claim with its one-claim prompt instead.
ALL_CLAIMS_ROOM = 0.1


def _with_claim_ids(tool: ToolSpec, ids: list[str]) -> ToolSpec:
    """``tool`` with its verdicts' ``claim_id`` limited to ``ids``, the ids of the request's claims.

    The enum depends on the claims' indexes only, so responses with as many claims share one tool
    (and the cached prefix it starts)."""
    schema = copy.deepcopy(tool.input_schema)
    for definition in schema.get("$defs", {}).values():
        if "claim_id" in definition.get("properties", {}):
            definition["properties"]["claim_id"] = {"enum": ids, "type": "string"}
    return tool.model_copy(update={"input_schema": schema})


def claim_block(claim: Claim) -> str:
    return fence("claim", claim.text, id=_short_id(claim))


def claims_block(claims: Sequence[Claim]) -> str:
    return "<claims>\n" + "\n".join(claim_block(c) for c in claims) + "\n</claims>"


def _short_id(claim: Claim) -> str:
    # Models echo short ids more reliably than long sample-prefixed ones.
    return f"c{claim.index}"


class LLMJudge(PromptedStage, ModelStage, ModeJudge, RepeatableJudge, WarmableJudge, CacheWarmingJudge, WindowedJudge):
    """Judges claims against the context with an LLM in one of the four modes."""

    def __init__(
        self,
        model: Model,
        mode: Mode = Mode.COT_ONE,
        *,
        max_reasks: int = 2,
        max_tokens: int = 1024,
        max_tokens_all: int = 4096,
        min_batch: int = 1,
        warm_cache: bool = True,
        warm_up_retries: int | None = None,
    ) -> None:
        self.model: Model = model
        self.mode = Mode(mode)
        #: The mode requests are shaped by: ``mode``, or its one-claim form in a window too small for all claims.
        self.asked = self.mode
        self.spec = MODES[self.mode]
        self.prompt: Prompt = load_prompt(self.spec.prompt_id)
        self.max_reasks = max_reasks
        self.max_tokens = max_tokens_all if not self.mode.one_claim else max_tokens
        self.min_batch = min_batch
        self.warm_cache = warm_cache
        #: Retries of a failed warm-up (None: the model's ``max_retries``), all within one ``timeout`` of the
        #: model: a warm-up that has not answered by then is given up, and the first claim writes the cache.
        self.warm_up_retries = warm_up_retries
        self.name = model.spec
        #: Which repeat this judge asks (``measure --repeats``): part of each request's cache identity.
        self.repeat = 0
        self.extra_verdicts = 0  # verdicts for ids we did not ask about, ignored and counted
        # Warm-up state, for one event loop at a time: the run's first warm-up, and warm-ups in flight.
        self._warm_up_loop: asyncio.AbstractEventLoop | None = None
        self._first_warm_up: asyncio.Event | None = None
        self._in_flight: dict[str, asyncio.Future[WarmUp]] = {}
        #: When each prefix was last written by a warm-up of this judge (monotonic seconds): a later
        #: response over the same context needs no warm-up of its own while the provider keeps it.
        self._written: dict[str, float] = {}
        #: The model's window once asked (``_fit_window``), and whether the prompt keeps its worked examples.
        self.window: int | None = None
        self.examples = True
        self._window_fitted = False
        self._source_budget: int | None = None

    def settings(self) -> dict[str, Any]:
        settings = {
            "model": self.model.spec,
            **self.model.settings(),
            "mode": self.mode.value,
            "max_reasks": self.max_reasks,
            "max_tokens": self.max_tokens,
            "prompt": self.prompt.key,
            "warm_cache": self.warms_cache,
        }
        if self.window is not None:  # known once the run has asked (see source_budget)
            settings |= {"context_window": self.window, "prompt_examples": self.examples}
        if self.asked is not self.mode:
            settings["asked_as"] = self.asked.value
        return settings

    @property
    def verdict_tokens(self) -> int:
        """Answer tokens one claim's verdict needs (``VERDICT_TOKENS``)."""
        return VERDICT_TOKENS[self.mode.cot]

    async def _fit_window(self) -> int | None:
        """Ask the model's window once; leave the worked examples out when, with them, the source would get less
        than ``EXAMPLES_ROOM`` of the window, and work out the source budget (``source_budget``)."""
        window = await self.model.window()
        if self._window_fitted:
            return self.window
        self.window, self._window_fitted = window, True  # nothing below waits: the first caller fits it alone
        if window is None:
            return None
        if not self.mode.one_claim and self._bare_room(examples=False) - self.verdict_tokens < ALL_CLAIMS_ROOM * window:
            # The all-claims prompt leaves (nearly) no room for a source: each claim is asked with the shorter
            # one-claim prompt of the same mode, the closest to it that fits.
            self.asked = Mode.COT_ONE if self.mode.cot else Mode.NOCOT_ONE
            self.spec = MODES[self.asked]
            self.prompt = load_prompt(self.spec.prompt_id)
            log.warning(
                "%s: a window of %d tokens is too small for the %s prompt: each claim is asked with the %s prompt",
                self.name,
                window,
                self.mode.value,
                self.asked.value,
            )
        if self._bare_room() - self.verdict_tokens < EXAMPLES_ROOM * window:
            self.examples = False
            log.warning(
                "%s: a window of %d tokens is too small for the prompt's worked examples: they are left out",
                self.name,
                window,
            )
        room = self._bare_room() - self.verdict_tokens
        if room < EXAMPLES_ROOM * window:
            log.warning(
                "%s: a window of %d tokens leaves about %d tokens of source per call: longer sources are cut to "
                "that; a model with a larger window judges them whole",
                self.name,
                window,
                max(0, room),
            )
        self._source_budget = max(0, int(room / TOKEN_SAFETY))
        return window

    def _bare_room(self, *, examples: bool | None = None) -> int:
        """What the window leaves beside the prompt with no source and one claim (needs ``self.window``);
        ``examples``: with or without the worked examples (default: as the judge asks now)."""
        assert self.window is not None
        kept, self.examples = self.examples, self.examples if examples is None else examples
        try:
            bare = Sample(id="window", response=".", context="")
            request = self.request(bare, [Claim(id="window-c0", sample_id="window", index=0, text="")])
        finally:
            self.examples = kept
        return answer_room(request, self.window) - CLAIM_TOKENS

    async def source_budget(self) -> int | None:
        """Source tokens one call may be shown: what the model's window leaves beside the prompt, one claim and its
        verdict (None when the window is not known)."""
        await self._fit_window()
        return self._source_budget

    @property
    def warms_cache(self) -> bool:
        """Whether the cache is warmed (batch mode skips it: it would cost a whole extra batch round trip)."""
        return self.warm_cache and not self.model.batched

    def _cacheable_prefix(self, sample: Sample) -> GenerateRequest | None:
        """The warm-up request for ``sample``'s claims, or None when their shared prefix cannot be cached."""
        minimum = self.model.api.min_cache_tokens
        if not (self.asked.one_claim and self.warms_cache) or minimum is None:
            return None
        system, message = self._render(sample, claim_block=_WARM_UP_CLAIM)
        first = message.content[0]
        if not isinstance(first, TextBlock) or not first.cache_after:
            return None  # the prompt has no cacheable part
        tool_tokens = text_tokens(str(self.spec.tool.input_schema))
        if tool_tokens + text_tokens(system) + text_tokens(first.text) < minimum:
            return None
        # The same tools, system prompt and context as the claims' requests (so the same cached prefix),
        # a placeholder claim, and one output token: the answer is not read.
        return GenerateRequest(system=system, messages=(message,), tool=self.spec.tool, max_tokens=1)

    def warm_up(self, sample: Sample) -> Coroutine[Any, Any, WarmUp] | None:
        """A request that writes the prompt-cache prefix of ``sample``'s claims (to run during extraction),
        or None when nothing can be cached.

        The run's first warm-up goes alone: the run-wide part of the prefix (tools, system prompt) is
        then written once, and the other warm-ups read it. Samples that share a context share one
        warm-up in flight. A warm-up goes through the request cache, so a resumed run does not pay
        for it twice; one answered from that cache says nothing about the provider's cache now, so
        the claims then fall back to the first one alone.
        """
        request = self._cacheable_prefix(sample)
        return None if request is None else self._warm_up_once(request)

    async def _warm_up_once(self, request: GenerateRequest) -> WarmUp:
        loop = asyncio.get_running_loop()
        if self._warm_up_loop is not loop:  # state of another event loop (a sync wrapper's earlier run)
            self._warm_up_loop, self._in_flight, self._first_warm_up = loop, {}, None
        key = request_key(self.model.spec, request, {})
        shared = self._in_flight.get(key)
        if shared is not None:
            return (await asyncio.shield(shared)).model_copy(update={"usage": Usage()})  # paid by the first
        if time.monotonic() - self._written.get(key, -math.inf) < WARM_FOR:
            return WarmUp(ok=True)  # written a moment ago (the claims reading it keep it alive)
        task = asyncio.ensure_future(self._send_warm_up(request))
        self._in_flight[key] = task
        try:
            warm = await asyncio.shield(task)
        finally:
            self._in_flight.pop(key, None)
        if warm.ok:
            self._written[key] = time.monotonic()
        return warm

    async def _send_warm_up(self, request: GenerateRequest) -> WarmUp:
        written = self._first_warm_up
        first = written is None
        if written is None:
            written = self._first_warm_up = asyncio.Event()
        else:
            await written.wait()
        try:
            # Retried like any call (a failed warm-up leaves every claim of the response paying full input
            # price), but never longer than one deadline: the claims should not wait for it.
            async with asyncio.timeout(self.model.timeout):
                response = await self.model.generate(request, max_retries=self.warm_up_retries)
        except RunStoppedError:
            raise  # the run stops (its budget is spent): the claims would not go out either
        except (HalluMeasureError, TimeoutError) as exc:  # a warm-up is an optimisation: the claims still go out
            log.info("cache warm-up failed (%s): the first claim warms the cache instead", exc)
            return WarmUp(ok=False)
        finally:
            if first:
                written.set()
        return WarmUp(ok=not response.cached, usage=response.usage)

    def _render(self, sample: Sample, **values: str) -> tuple[str, Message]:
        return self.prompt.render(
            examples=self.examples, question_block=question_block(sample), context_block=context_block(sample), **values
        )

    def request(self, sample: Sample, claims: Sequence[Claim]) -> GenerateRequest:
        """The request for ``claims``: context first (shared, cacheable), the claim(s) last."""
        tool = self.spec.tool
        if self.asked.one_claim:
            (claim,) = claims
            system, message = self._render(sample, claim_block=claim_block(claim))
        else:
            system, message = self._render(sample, claims_block=claims_block(claims))
            tool = _with_claim_ids(tool, [_short_id(c) for c in claims])
        return GenerateRequest(
            system=system, messages=(message,), tool=tool, max_tokens=self.max_tokens, repeat=self.repeat
        )

    async def judge(self, sample: Sample, claims: Sequence[Claim], *, warmed: bool = False) -> Judgement:
        """Verdicts for ``claims``; ``warmed``: a warm-up has written their shared prefix, so all go out at once."""
        if not claims:
            return Judgement()
        await self._fit_window()
        groups = [[c] for c in claims] if self.asked.one_claim else self._batches(sample, list(claims))
        parts = await self._fan_out(sample, groups, warmed=warmed)
        verdicts = {v.claim_id: v for part, _ in parts for v in part}
        usage = sum((u for _, u in parts), Usage())
        return Judgement(verdicts=[verdicts[c.id] for c in claims], usage=usage)

    def _batches(self, sample: Sample, claims: list[Claim]) -> list[list[Claim]]:
        """``claims`` in one batch, or, in a window too small for all their verdicts, in halves until each fits."""
        if self.window is None or len(claims) == 1:
            return [claims]
        needed = min(self.max_tokens, self.verdict_tokens * len(claims))
        if answer_room(self.request(sample, claims), self.window) >= needed:
            return [claims]
        half = len(claims) // 2
        return self._batches(sample, claims[:half]) + self._batches(sample, claims[half:])

    def _sized(self, request: GenerateRequest, claims: int) -> GenerateRequest | None:
        """``request`` with its answer budget cut to what its prompt leaves of the window; None when that is less
        than its claims' verdicts need (the request would be refused, or cut off)."""
        if self.window is None:
            return request
        room = answer_room(request, self.window)
        if room < min(request.max_tokens, self.verdict_tokens * claims):
            return None
        return request.model_copy(update={"max_tokens": min(request.max_tokens, room)})

    async def _fan_out(
        self,
        sample: Sample,
        groups: list[list[Claim]],
        *,
        warmed: bool,
    ) -> list[tuple[list[ClaimVerdict], Usage]]:
        """Judge the groups concurrently; unless warmed up, a cacheable prefix is written by the first group alone."""
        if not warmed and len(groups) > 1 and self._cacheable_prefix(sample) is not None:
            first = await self._judged(sample, groups[0])
            rest = await asyncio.gather(*(self._judged(sample, g) for g in groups[1:]))
            return [first, *rest]
        return list(await asyncio.gather(*(self._judged(sample, g) for g in groups)))

    async def _judged(self, sample: Sample, claims: list[Claim]) -> tuple[list[ClaimVerdict], Usage]:
        """``_judge_batch``, then the run's progress is told which claims have verdicts (core/activity.py)."""
        found = await self._judge_batch(sample, claims)
        claims_judged(v.claim_id for v in found[0])
        return found

    async def _judge_batch(
        self, sample: Sample, claims: list[Claim], *, max_tokens: int | None = None
    ) -> tuple[list[ClaimVerdict], Usage]:
        request = self.request(sample, claims)
        if max_tokens is not None:
            request = request.model_copy(update={"max_tokens": max_tokens})
        sized = self._sized(request, len(claims))
        if sized is None:
            if len(claims) > 1:
                return await self._halves(sample, claims)
            reason = (
                f"not asked: the prompt ({prompt_tokens(request):,} tokens with the source as cut) leaves too little "
                f"of the model's window of {self.window:,} tokens for the answer; give a smaller source budget "
                "(--max-context-tokens) or a model with a larger window"
            )
            return [self._error(claims[0], reason, None, kind=ErrorKind.WINDOW)], Usage()
        request = sized
        result = await ask_structured(self.model, request, self.spec.contract, max_reasks=self.max_reasks)
        usage = result.usage
        if result.value is None:
            if (
                result.stop_reason == "max_tokens"
                and len(claims) <= self.min_batch
                and request.max_tokens < (bigger := self._grown(request))
            ):
                # One claim's answer did not fit (a long reason, a rambling local model): once more with room.
                again, more = await self._judge_batch(sample, claims, max_tokens=bigger)
                return again, usage + more
            if result.stop_reason == "max_tokens" and len(claims) > self.min_batch:
                # The answer for many claims did not fit: judge the halves separately.
                verdicts, more = await self._halves(sample, claims)
                return verdicts, usage + more
            return [self._error(c, result.error, result.raw_output, kind=result.error_kind) for c in claims], usage
        if self.asked.one_claim:
            return [self._verdict(sample, claims[0], result.value, raw=result.raw_output)], usage
        by_id = {_short_id(c): c for c in claims}
        items = list(result.value.verdicts)  # type: ignore[attr-defined]
        found: dict[str, ClaimVerdict] = {}
        if len(items) == len(claims) and not any(item.claim_id.strip() in by_id for item in items):
            # Not one id is ours (a model that ignored the schema's enum): one verdict per claim, in order,
            # is read by position, and each verdict says so.
            note = "claim ids did not match the request's; verdicts were matched to claims by position"
            for in_order, answer in zip(claims, items, strict=True):
                found[in_order.id] = self._verdict(sample, in_order, answer, note=note, raw=result.raw_output)
            return [found[c.id] for c in claims], usage
        for item in items:
            claim = by_id.get(item.claim_id.strip())
            if claim is None or claim.id in found:
                self.extra_verdicts += 1
                continue
            found[claim.id] = self._verdict(sample, claim, item, raw=result.raw_output)
        missing = [c for c in claims if c.id not in found]
        if missing and len(claims) > 1:
            # Ask again for each forgotten claim on its own, with the same prompt and contract.
            retried = await asyncio.gather(*(self._judge_batch(sample, [c]) for c in missing))
            for verdicts, extra in retried:
                usage = usage + extra
                found.update({v.claim_id: v for v in verdicts})
        elif missing:
            found[missing[0].id] = self._error(
                missing[0], "the answer had no verdict for this claim id", result.raw_output, kind=ErrorKind.NO_VERDICT
            )
        return [found[c.id] for c in claims], usage

    async def _halves(self, sample: Sample, claims: list[Claim]) -> tuple[list[ClaimVerdict], Usage]:
        """``claims`` judged in two halves at once, their verdicts in claim order."""
        half = len(claims) // 2
        left, right = await asyncio.gather(
            self._judge_batch(sample, claims[:half]), self._judge_batch(sample, claims[half:])
        )
        return left[0] + right[0], left[1] + right[1]

    def _grown(self, request: GenerateRequest) -> int:
        """The answer budget of a cut-off one-claim call's retry: ``CUT_OFF_GROWTH`` times more, within the window."""
        bigger = self.max_tokens * CUT_OFF_GROWTH
        return bigger if self.window is None else min(bigger, answer_room(request, self.window))

    def _verdict(
        self, sample: Sample, claim: Claim, value: BaseModel, *, note: str | None = None, raw: str | None = None
    ) -> ClaimVerdict:
        """The verdict ``value`` gave ``claim``. What the parser repaired to keep it (a subtype set to
        ``other``, ids matched by position) is recorded in ``raw_output`` with the answer as given."""
        evidence = [verify(sample, e.passage_id, e.quote) for e in getattr(value, "evidence", ())]
        notes = [*([note] if note else []), *getattr(value, "repairs", [])]
        record = None
        if notes:
            answer = raw if raw is not None else value.model_dump_json()
            record = "".join(f"repaired: {n}\n" for n in notes) + f"answer as given: {answer}"
        return ClaimVerdict(
            raw_output=record,
            evidence=tuple(evidence),
            evidence_verified=all_verified(evidence),
            claim_id=claim.id,
            label_reason=getattr(value, "label_reason", None),
            label=value.label,  # type: ignore[attr-defined]
            subtype_reason=getattr(value, "subtype_reason", None) or None,
            subtype=value.subtype,  # type: ignore[attr-defined]
            judge=self.name,
        )

    def _error(self, claim: Claim, error: str | None, raw: str | None, *, kind: ErrorKind | None) -> ClaimVerdict:
        return ClaimVerdict(
            claim_id=claim.id, judge=self.name, error=error or "unknown error", error_kind=kind, raw_output=raw
        )
