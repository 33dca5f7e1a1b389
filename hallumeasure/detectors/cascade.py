"""A cheap first-pass judge, with an LLM as constrained reasoner for the claims it flags (papers/slm-meets-llm.txt).

Every claim is judged by the first pass (the offline judge by default). Only the claims it
flags -- labelled unsupported under the policy, with a probability of being unsupported at
or above ``threshold``, or marked unsure (``confident=False``: the first pass could not tell)
-- go to the LLM through the ``cascade_explain`` prompt. The LLM does not
re-judge: it explains the flag by picking one category from a fixed list, which holds the ten
error subtypes and ``no_problem_found``.

What the answer does to the verdict:

- ``no_problem_found``: the LLM disagrees with the first pass. Its text is never used as a
  reason. The disagreement is counted as detector feedback (by the first pass's subtype) and,
  with ``flip_no_problem`` (the default), the claim becomes ``supported``; without it the first
  pass's verdict is kept as it was.
- any other category: it becomes the verdict's subtype, and the LLM's reason becomes the label
  reason. The label stays the first pass's when that is an unsupported label. When the claim
  was flagged by probability alone (the first pass said supported), the label comes from the
  category: hyperbole, overgeneralization and attribution_failure -> ``partially_supported``;
  other -> ``absent``; every other category -> ``contradicted``.
- an answer that cannot be used (after re-asks): the first pass's verdict is kept and the
  failure is counted (an unsure verdict then stays unsure).

A verdict the LLM settled is confident, like every LLM verdict. So a response is never cleared
by a guess: it skips the LLM only when the first pass is sure of every claim and flags none.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Any

from hallumeasure.core.labels import Label, Policy, Subtype
from hallumeasure.core.text import fence
from hallumeasure.core.types import Claim, ClaimVerdict, Sample, Usage
from hallumeasure.judges.llm.classify import claim_block
from hallumeasure.judges.llm.extract import question_block
from hallumeasure.judges.llm.outputs import CascadeExplanation, tool_schema
from hallumeasure.judges.llm.parsing import ask_structured
from hallumeasure.judges.llm.prompts import Prompt
from hallumeasure.judges.protocols import (
    ClaimJudge,
    ComposedStage,
    Judgement,
    ModelStage,
    MultiPromptStage,
    PromptedStage,
)
from hallumeasure.models.base import GenerateRequest, ToolSpec
from hallumeasure.models.model import Model

NO_PROBLEM = "no_problem_found"

EXPLAIN_TOOL = ToolSpec(
    name="record_explanation",
    description="Record why the flagged claim is not supported, as one category from the fixed list.",
    input_schema=tool_schema(CascadeExplanation),
)

_PARTIAL = {Subtype.HYPERBOLE, Subtype.OVERGENERALIZATION, Subtype.ATTRIBUTION_FAILURE}

#: The note shown instead of the reasoner's text when it found no problem and the claim flipped.
FLIPPED_NOTE = "Flagged by the first pass; the reasoner found no problem, so the flag was withdrawn."


def label_for_category(category: Subtype) -> Label:
    """The label a category implies when the first pass did not give an unsupported label."""
    if category in _PARTIAL:
        return Label.PARTIALLY_SUPPORTED
    return Label.ABSENT if category == Subtype.OTHER else Label.CONTRADICTED


class CascadeJudge(PromptedStage, MultiPromptStage, ModelStage, ComposedStage):
    """First pass on every claim; the LLM explains (or rejects) only the flags."""

    def __init__(
        self,
        first_pass: ClaimJudge,
        model: Model,
        *,
        policy: Policy | None = None,
        threshold: float | None = 0.5,
        flip_no_problem: bool = True,
        max_reasks: int = 2,
        max_tokens: int = 1024,
    ) -> None:
        from hallumeasure.judges.llm.prompts import load_prompt

        self.first_pass = first_pass
        self.model: Model = model
        self.policy = policy or Policy()
        self.threshold = threshold
        self.flip_no_problem = flip_no_problem
        self.max_reasks = max_reasks
        self.max_tokens = max_tokens
        self.prompt: Prompt = load_prompt("cascade_explain")
        first_prompt = first_pass.prompt if isinstance(first_pass, PromptedStage) else None
        self.extra_prompts: tuple[Prompt, ...] = (first_prompt,) if first_prompt is not None else ()
        self.name = f"{first_pass.name}+{model.spec}"
        self.counts: Counter[str] = Counter()
        self.categories: Counter[str] = Counter()
        self.feedback: Counter[str] = Counter()

    def members(self) -> list[ClaimJudge]:
        """The first-pass judge (its model is closed with the cascade's)."""
        return [self.first_pass]

    def settings(self) -> dict[str, Any]:
        return {
            "detector": "cascade",
            "first_pass": self.first_pass.name,
            "first_pass_settings": self.first_pass.settings(),
            "model": self.model.spec,
            "model_settings": self.model.settings(),
            "threshold": self.threshold,
            "flag_policy": self.policy.describe(),
            "flip_no_problem": self.flip_no_problem,
            "max_reasks": self.max_reasks,
            "max_tokens": self.max_tokens,
            "prompt": self.prompt.key,
            "stats": self.stats(),
        }

    def stats(self) -> dict[str, Any]:
        """Counts since construction; ``llm_calls_avoided`` is against sending every claim to the LLM."""
        seen, flagged = self.counts["claims_seen"], self.counts["flagged"]
        overruled = sum(self.feedback.values())
        return {
            "claims_seen": seen,
            "flagged": flagged,
            "flagged_unsure": self.counts["flagged_unsure"],
            "first_pass_errors": self.counts["first_pass_errors"],
            "llm_requests": self.counts["llm_requests"],
            "llm_provider_calls": self.counts["llm_provider_calls"],
            "llm_calls_avoided": seen - self.counts["llm_requests"],
            "explain_errors": self.counts["explain_errors"],
            "categories": dict(sorted(self.categories.items())),
            "feedback_no_problem_found": overruled,
            "feedback_by_first_pass_subtype": dict(sorted(self.feedback.items())),
            "overrule_rate": overruled / flagged if flagged else None,
        }

    def is_flagged(self, verdict: ClaimVerdict) -> bool:
        """Whether the claim goes to the LLM: unsupported, likely unsupported, or unsure."""
        if not verdict.ok:
            return False
        if self.policy.is_unsupported(verdict.label) or not verdict.confident:  # type: ignore[arg-type]
            return True
        return self.threshold is not None and verdict.probability is not None and verdict.probability >= self.threshold

    def request(self, sample: Sample, claim: Claim, verdict: ClaimVerdict) -> GenerateRequest:
        flag = f"label: {verdict.label}"
        if verdict.subtype:
            flag += f"\nsubtype: {verdict.subtype}"
        if verdict.probability is not None:
            flag += f"\nprobability unsupported: {verdict.probability:.2f}"
        if not verdict.confident:
            flag += "\nfirst pass: could not tell; the label is its best guess"
        system, message = self.prompt.render(
            question_block=question_block(sample),
            context_block=fence("context", sample.context),
            claim_block=claim_block(claim),
            flag_block=fence("flag", flag),
        )
        return GenerateRequest(system=system, messages=(message,), tool=EXPLAIN_TOOL, max_tokens=self.max_tokens)

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        first = await self.first_pass.judge(sample, claims)
        by_id = {v.claim_id: v for v in first.verdicts}
        self.counts["claims_seen"] += len(claims)
        self.counts["first_pass_errors"] += sum(1 for c in claims if c.id in by_id and not by_id[c.id].ok)
        flagged = [c for c in claims if c.id in by_id and self.is_flagged(by_id[c.id])]
        if not flagged and not any(self._checked(by_id[c.id]) for c in claims if c.id in by_id):
            # nothing the first pass could check (only questions, greetings...): the LLM looks, nothing is cleared
            flagged = [c for c in claims if c.id in by_id and by_id[c.id].ok]
        self.counts["flagged"] += len(flagged)
        self.counts["flagged_unsure"] += sum(1 for c in flagged if not by_id[c.id].confident)
        explained = await asyncio.gather(*(self._explain(sample, c, by_id[c.id]) for c in flagged))
        usage = first.usage
        for claim, (verdict, extra) in zip(flagged, explained, strict=True):
            by_id[claim.id] = verdict
            usage = usage + extra
        # the first pass's calibrated rule speaks for the response only when the LLM settled nothing
        decidable = first.decidable if not flagged else None
        return Judgement(
            verdicts=[by_id[c.id] for c in claims if c.id in by_id], usage=usage, score=first.score, decidable=decidable
        )

    def _checked(self, verdict: ClaimVerdict) -> bool:
        """Whether the first pass evaluated the claim (an unevaluatable label under the policy is not)."""
        return verdict.ok and verdict.label is not None and self.policy.is_evaluated(verdict.label)

    async def _explain(self, sample: Sample, claim: Claim, verdict: ClaimVerdict) -> tuple[ClaimVerdict, Usage]:
        self.counts["llm_requests"] += 1
        result = await ask_structured(
            self.model, self.request(sample, claim, verdict), CascadeExplanation, max_reasks=self.max_reasks
        )
        self.counts["llm_provider_calls"] += result.usage.calls
        if result.value is None:
            self.counts["explain_errors"] += 1
            return verdict, result.usage
        category = result.value.category
        self.categories[category] += 1
        if category == NO_PROBLEM:
            # Keyed by what the first pass claimed was wrong, so that its weak spots show up.
            key = verdict.subtype.value if verdict.subtype else f"label:{verdict.label.value}"  # type: ignore[union-attr]
            self.feedback[key] += 1
            if not self.flip_no_problem:
                return verdict, result.usage
            return verdict.model_copy(
                update={
                    "label": Label.SUPPORTED,
                    "label_reason": FLIPPED_NOTE,
                    "subtype": None,
                    "subtype_reason": None,
                    "judge": self.name,
                    "confident": True,
                }
            ), result.usage
        subtype = Subtype(category)
        label = verdict.label if self.policy.is_unsupported(verdict.label) else label_for_category(subtype)  # type: ignore[arg-type]
        return verdict.model_copy(
            update={
                "label": label,
                "label_reason": result.value.reason,
                "subtype": subtype,
                "subtype_reason": "Category chosen by the constrained reasoner.",
                "judge": self.name,
                "confident": True,
            }
        ), result.usage
