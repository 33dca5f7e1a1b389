"""``--judge nli``: the trained entailment model decides, the offline signals explain.

Each claim is paired with its best context sentences (premises.py) and scored by the int8
cross-encoder (model.py). P(unsupported) = 1 - calibrated P(entailment). The model decides
whether a claim is supported; an unsupported claim takes its label, subtype and reason from the
offline signals (offline/reasons.py): ``contradicted`` when one names a definite error (a
different number, date or name, a negation, an opposite...), else ``partially_supported`` when
most of its words are in the closest sentence, ``absent`` when they are not, each with a reason
that quotes the context. The response score is the largest P(unsupported) of its claims.
Whether a verdict is ``confident`` follows the offline evidence rules (offline/confidence.py): the
model's probability picks the label, the words decide whether the judge can be sure of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hallumeasure.core.text import quote
from hallumeasure.core.types import Claim, Sample
from hallumeasure.judges.nli.model import NliModel, load_nli
from hallumeasure.judges.nli.premises import premise_for
from hallumeasure.judges.offline.confidence import KeylessVerdict, confident_verdict
from hallumeasure.judges.offline.judge import (
    checkable_signals,
    flagged_verdict,
    in_claim_order,
    keyless_judgement,
    supported_verdict,
    with_sentence,
)
from hallumeasure.judges.offline.signals import ClaimSignals
from hallumeasure.judges.protocols import InstantJudge, Judgement


class NliClaimJudge(InstantJudge):
    """A keyless claim judge built on a small trained entailment model (all-MiniLM-L6-v2, int8 ONNX)."""

    name = "nli"

    def __init__(self, threshold: float = 0.5, model: NliModel | None = None) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
        self.threshold = threshold
        self.nli = model or load_nli()

    def settings(self) -> dict[str, Any]:
        return {
            "kind": "cross-encoder entailment model (int8 ONNX) with offline signals for reasons",
            "threshold": self.threshold,
            **self.nli.settings(),
        }

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        return self.judge_now(sample, claims)

    def unsupported(self, sample: Sample, texts: Sequence[str]) -> list[float]:
        """P(unsupported) of each text against the sample's context."""
        pairs = [(premise_for(text, sample.context), text) for text in texts]
        return [float(1.0 - p) for p in self.nli.entailment(pairs)]

    def judge_now(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        checked = checkable_signals(sample, claims)
        return self.judge_scored(sample, claims, checked, self.unsupported(sample, [c.text for c, _ in checked]))

    def judge_scored(
        self,
        sample: Sample,
        claims: Sequence[Claim],
        checked: Sequence[tuple[Claim, ClaimSignals]],
        probabilities: Sequence[float],
    ) -> Judgement:
        """The verdicts from signals and entailment probabilities already computed (a benchmark reuses them)."""
        found = {
            claim.id: with_sentence(confident_verdict(self._label(claim, signals, p), signals), signals)
            for (claim, signals), p in zip(checked, probabilities, strict=True)
        }
        score = round(max(probabilities), 4) if probabilities else None
        return keyless_judgement(sample, in_claim_order(claims, found, self.name), score, self.name)

    def _label(self, claim: Claim, signals: ClaimSignals, p: float) -> KeylessVerdict:
        if p < self.threshold:
            reason = f"the context entails the claim: {quote(signals.best_sentence)}"
            return supported_verdict(claim.id, self.name, reason, p, self.threshold)
        return flagged_verdict(claim.id, self.name, signals, p, self.threshold)
