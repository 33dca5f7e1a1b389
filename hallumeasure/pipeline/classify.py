"""Claim classification with an LLM in the four prompt configurations.

The configurations share one code path; they differ only in data (prompt, contract, tool):
chain of thought or not, one claim per call or all claims of a response in one call.

Every request puts the instructions and the context (its passages, each fenced with its id) first, marked as a cacheable prefix, and the
claim(s) last. With ``warm_cache`` (the default), the calls for one response's claims start with
one call alone and fan out only when it has answered: the provider can read a cached prefix only
once the request that writes it has answered, so sending all claims at once would pay the prefix
write once per claim instead of once per response.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hallumeasure.evidence import all_verified, verify
from hallumeasure.models.base import GenerateRequest, ToolSpec
from hallumeasure.models.model import Model
from hallumeasure.outputs import CotVerdict, CotVerdicts, PlainVerdict, PlainVerdicts, tool_schema
from hallumeasure.parsing import ask_structured
from hallumeasure.passages import context_block
from hallumeasure.pipeline.extract import question_block
from hallumeasure.pipeline.protocols import Judgement
from hallumeasure.prompts import Prompt, load_prompt
from hallumeasure.text import fence
from hallumeasure.types import Claim, ClaimVerdict, Mode, Sample, Usage


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


def claim_block(claim: Claim) -> str:
    return fence("claim", claim.text, id=_short_id(claim))


def claims_block(claims: Sequence[Claim]) -> str:
    return "<claims>\n" + "\n".join(claim_block(c) for c in claims) + "\n</claims>"


def _short_id(claim: Claim) -> str:
    # Models echo short ids more reliably than long sample-prefixed ones.
    return f"c{claim.index}"


class LLMJudge:
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
    ) -> None:
        self.model = model
        self.mode = Mode(mode)
        self.spec = MODES[self.mode]
        self.prompt: Prompt = load_prompt(self.spec.prompt_id)
        self.max_reasks = max_reasks
        self.max_tokens = max_tokens_all if not self.mode.one_claim else max_tokens
        self.min_batch = min_batch
        self.warm_cache = warm_cache
        self.name = model.spec
        self.extra_verdicts = 0  # verdicts for ids we did not ask about, ignored and counted

    def settings(self) -> dict[str, Any]:
        return {"model": self.model.spec, **self.model.settings(), "mode": self.mode.value,
                "max_reasks": self.max_reasks, "max_tokens": self.max_tokens, "prompt": self.prompt.key,
                "warm_cache": self._warms}

    @property
    def _warms(self) -> bool:
        """Whether the warm-up happens (batch mode skips it: it would cost a whole extra batch round trip)."""
        return self.warm_cache and not getattr(self.model, "batched", False)

    def request(self, sample: Sample, claims: Sequence[Claim]) -> GenerateRequest:
        """The request for ``claims``: context first (shared, cacheable), the claim(s) last."""
        values = {"question_block": question_block(sample), "context_block": context_block(sample)}
        if self.mode.one_claim:
            (claim,) = claims
            values["claim_block"] = claim_block(claim)
        else:
            values["claims_block"] = claims_block(claims)
        system, message = self.prompt.render(**values)
        return GenerateRequest(system=system, messages=(message,), tool=self.spec.tool, max_tokens=self.max_tokens)

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        if not claims:
            return Judgement()
        groups = [[c] for c in claims] if self.mode.one_claim else [list(claims)]
        parts = await self._fan_out(sample, groups)
        verdicts = {v.claim_id: v for part, _ in parts for v in part}
        usage = sum((u for _, u in parts), Usage())
        return Judgement(verdicts=[verdicts[c.id] for c in claims], usage=usage)

    async def _fan_out(self, sample: Sample, groups: list[list[Claim]]) -> list[tuple[list[ClaimVerdict], Usage]]:
        """Judge the groups concurrently; with ``warm_cache``, the first one alone before the rest."""
        if self._warms and len(groups) > 1:
            first = await self._judge_batch(sample, groups[0])
            rest = await asyncio.gather(*(self._judge_batch(sample, g) for g in groups[1:]))
            return [first, *rest]
        return list(await asyncio.gather(*(self._judge_batch(sample, g) for g in groups)))

    async def _judge_batch(self, sample: Sample, claims: list[Claim]) -> tuple[list[ClaimVerdict], Usage]:
        result = await ask_structured(self.model, self.request(sample, claims), self.spec.contract,
                                      max_reasks=self.max_reasks)
        usage = result.usage
        if result.value is None:
            if result.stop_reason == "max_tokens" and len(claims) > self.min_batch:
                # The answer for many claims did not fit: judge the halves separately.
                half = len(claims) // 2
                left, right = await asyncio.gather(
                    self._judge_batch(sample, claims[:half]), self._judge_batch(sample, claims[half:])
                )
                return left[0] + right[0], usage + left[1] + right[1]
            return [self._error(c, result.error, result.raw_output) for c in claims], usage
        if self.mode.one_claim:
            return [self._verdict(sample, claims[0], result.value)], usage
        by_id = {_short_id(c): c for c in claims}
        found: dict[str, ClaimVerdict] = {}
        for item in result.value.verdicts:  # type: ignore[attr-defined]
            claim = by_id.get(item.claim_id.strip())
            if claim is None or claim.id in found:
                self.extra_verdicts += 1
                continue
            found[claim.id] = self._verdict(sample, claim, item)
        missing = [c for c in claims if c.id not in found]
        if missing and len(claims) > 1:
            # Ask again for each forgotten claim on its own, with the same prompt and contract.
            retried = await asyncio.gather(*(self._judge_batch(sample, [c]) for c in missing))
            for verdicts, extra in retried:
                usage = usage + extra
                found.update({v.claim_id: v for v in verdicts})
        elif missing:
            found[missing[0].id] = self._error(missing[0], "the answer had no verdict for this claim id",
                                               result.raw_output)
        return [found[c.id] for c in claims], usage

    def _verdict(self, sample: Sample, claim: Claim, value: BaseModel) -> ClaimVerdict:
        evidence = [verify(sample, e.passage_id, e.quote) for e in getattr(value, "evidence", ())]
        return ClaimVerdict(
            evidence=tuple(evidence),
            evidence_verified=all_verified(evidence),
            claim_id=claim.id,
            label_reason=getattr(value, "label_reason", None),
            label=value.label,  # type: ignore[attr-defined]
            subtype_reason=getattr(value, "subtype_reason", None) or None,
            subtype=value.subtype,  # type: ignore[attr-defined]
            judge=self.name,
        )

    def _error(self, claim: Claim, error: str | None, raw: str | None) -> ClaimVerdict:
        return ClaimVerdict(claim_id=claim.id, judge=self.name, error=error or "unknown error", raw_output=raw)
