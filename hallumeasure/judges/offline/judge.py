"""The offline claim judge: signals -> trained trees -> probability, label, subtype and a reason.

Not an LLM. It sees words, numbers, names and a few cue words; it cannot follow a paraphrase
or an argument, so every verdict also says whether those signals are evidence enough
(``ClaimVerdict.confident``, set by confidence.py): a label is a best guess, and an unsure one
needs an LLM. Its measured quality is in benchmarks/results/offline_quality.md (leave one dataset out)
and benchmarks/results/frozen_suite.md (minimal pairs never tuned on).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from hallumeasure.core.activity import claims_judged
from hallumeasure.core.labels import Decidable, Label
from hallumeasure.core.language import outside, unknown
from hallumeasure.core.types import Claim, ClaimVerdict, Evidence, Sample
from hallumeasure.judges.decision import decidable
from hallumeasure.judges.offline.confidence import KeylessVerdict, Odds, confident_verdict
from hallumeasure.judges.offline.extractor import is_unevaluatable
from hallumeasure.judges.offline.model import OfflineModel, load_model
from hallumeasure.judges.offline.reasons import definite, explain, focus, named_conflict, support_reason
from hallumeasure.judges.offline.signals import ClaimSignals, claim_signals
from hallumeasure.judges.protocols import InstantJudge, Judgement

#: The default decision threshold on a claim's calibrated P(unsupported). The calibration gives both classes
#: equal weight, and a single short claim with no telling signal sits near 0.5, so 0.5 flags far more
#: responses than are hallucinated; 0.65 is the grid value whose flagged share tracks each dev set's positive
#: share best in the leave-one-dataset-out run (benchmarks/results/offline_quality.md) and keeps faithful
#: restatements of the contrast suite under 10% (benchmarks/results/contrast.md). Definite errors are flagged at any
#: threshold (their measured precision is their probability floor).
DEFAULT_THRESHOLD = 0.65


class Assistant(Protocol):
    """A model that gives P(unsupported) of claims against a sample's context (the NLI judge)."""

    def unsupported(self, sample: Sample, texts: Sequence[str]) -> list[float]: ...

    def settings(self) -> dict[str, Any]: ...


class OfflineJudge(InstantJudge):
    """``--judge offline``: a keyless judge trained on public labelled data. Not an LLM.

    ``probability`` on each verdict is the calibrated P(unsupported) of that claim alone;
    ``Judgement.score`` is the calibrated probability that the response as a whole holds an
    unsupported claim (the same model, fed the response's aggregated signals); a response with no
    checkable claim (empty, or only questions, greetings or instructions, each of which says why) has
    no score and is never cleared. ``Judgement.decidable`` is what its calibrated rule allows
    (judges/decision.py). Both probabilities are
    calibrated to equal class weights, so ``threshold=0.5`` is the balanced decision point, and
    both are raised to the measured precision of any evidence rule that fires (model.py).
    """

    name = "offline"

    def __init__(
        self, threshold: float = DEFAULT_THRESHOLD, model: OfflineModel | None = None, assist: Assistant | None = None
    ) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
        self.threshold = threshold
        self.trees = model or load_model()  # not "model": callers close stages' LLM models by that name
        #: The entailment model asked where the trees are unsure (``--judge offline+nli``), or None.
        self.assist = assist
        if assist is not None:
            self.name = "offline+nli"

    def settings(self) -> dict[str, Any]:
        meta = self.trees.meta
        out = {
            "kind": "gradient-boosted trees over lexical, number, name and cue-word signals",
            "threshold": self.threshold,
            "model_sha256": meta.get("sha256", ""),
            "trained_on": meta.get("trained_on"),
        }
        if self.assist is not None:
            from hallumeasure.judges.nli.assist import UNSURE

            out["kind"] += f"; averaged with an entailment model where P(unsupported) is in {UNSURE}"
            out["nli"] = self.assist.settings()
        return out

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        return self.judge_now(sample, claims)

    def judge_now(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        """The synchronous core (no I/O)."""
        return self.judge_signals(sample, claims, checkable_signals(sample, claims))

    def judge_signals(
        self, sample: Sample, claims: Sequence[Claim], checked: Sequence[tuple[Claim, ClaimSignals]]
    ) -> Judgement:
        """The verdicts from signals already computed (``checkable_signals``): what a benchmark reuses across models."""
        probabilities, score = self.trees.judge([signals.vector() for _, signals in checked])
        if self.assist is not None:
            probabilities, score = self._assisted(sample, [claim.text for claim, _ in checked], probabilities, score)
        found = {
            claim.id: with_sentence(confident_verdict(self._verdict(claim, signals, p), signals), signals)
            for (claim, signals), p in zip(checked, probabilities, strict=True)
        }
        score = None if score is None else round(score, 4)
        return keyless_judgement(sample, in_claim_order(claims, found, self.name), score, self.name)

    def _assisted(
        self, sample: Sample, texts: Sequence[str], probabilities: list[float], score: float | None
    ) -> tuple[list[float], float | None]:
        """The tree probabilities averaged with the entailment model's where they are unsure (nli/assist.py)."""
        from hallumeasure.judges.nli.assist import blend, needs_nli, unsure

        assert self.assist is not None
        todo = needs_nli(probabilities, score)
        if not todo:
            return probabilities, score
        found = dict(zip(todo, self.assist.unsupported(sample, [texts[i] for i in todo]), strict=True))
        if score is not None and unsure(score):  # then every claim was asked
            score = blend(score, max(found.values()))
        return [blend(p, found[i]) if i in found else p for i, p in enumerate(probabilities)], score

    #: Kept for callers of the first version.
    judge_sync = judge_now

    def _verdict(self, claim: Claim, signals: ClaimSignals, p: float) -> KeylessVerdict:
        if p < self.threshold and not definite(signals):
            return supported_verdict(claim.id, self.name, support_reason(signals), p, self.threshold)
        return flagged_verdict(claim.id, self.name, signals, p, self.threshold)


def keyless_judgement(sample: Sample, verdicts: list[ClaimVerdict], score: float | None, judge: str) -> Judgement:
    """A keyless judge's answer: its calibrated rule applied, and nothing sure on a language it was not built for
    (another language anywhere in the response or the source, or a text too short to tell)."""
    why = language_doubt(sample)
    if why is None:
        return Judgement(verdicts=verdicts, score=score, decidable=decidable(judge, score))
    unsure = [
        v.model_copy(
            update={"confident": False, "label_reason": f"{v.label_reason} ({why})" if v.label_reason else why}
        )
        if v.ok and v.label is not Label.UNEVALUATABLE  # nothing was judged there: it stays as it is
        else v
        for v in verdicts
    ]
    return Judgement(verdicts=unsure, score=score, decidable=Decidable.NEITHER)


def language_doubt(sample: Sample) -> str | None:
    """Why the keyless judges cannot rely on the language of ``sample``; None when both texts read as English."""
    other = outside(sample.response) or outside(sample.context)
    if other is not None:
        return (
            f"the text is (at least in part) in {other.name} ({other.code}); the keyless judges read English only, "
            "so this verdict is a guess an LLM judge must check"
        )
    known = f"{sample.context} {sample.question or ''}"
    if unknown(sample.context) or unknown(sample.response, known):
        return (
            "the text is too short to tell its language; the keyless judges read English only, "
            "so this verdict is a guess an LLM judge must check"
        )
    return None


def checkable_signals(sample: Sample, claims: Sequence[Claim]) -> list[tuple[Claim, ClaimSignals]]:
    """Every checkable claim (not a question, greeting or instruction) with its signals against the context."""
    out = []
    for claim in claims:
        if not is_unevaluatable(claim.text):
            out.append((claim, claim_signals(claim.text, sample.context)))
        # the signals are most of the judge's time: a long response's progress is told claim by claim
        claims_judged((claim.id,))
    return out


def odds(p: float, threshold: float, *, then: str = "") -> str:
    """The claim's probability beside the judge's threshold, as a reason ends with it (``Odds``)."""
    return Odds(p, threshold, then).text


def supported_verdict(claim_id: str, judge: str, reason: str, p: float, threshold: float) -> KeylessVerdict:
    """A keyless verdict on a claim under the threshold: supported, with ``reason`` and the odds."""
    verdict = ClaimVerdict(claim_id=claim_id, judge=judge, label=Label.SUPPORTED, probability=round(p, 4))
    return KeylessVerdict(verdict, reason, Odds(p, threshold))


def flagged_verdict(claim_id: str, judge: str, signals: ClaimSignals, p: float, threshold: float) -> KeylessVerdict:
    """A verdict on a claim judged unsupported: label, subtype and reasons from its offline signals.

    A definite mismatch (a number or name the source contradicts) flags the claim under the threshold too."""
    label, subtype, reason, subtype_reason = explain(signals)
    verdict = ClaimVerdict(
        claim_id=claim_id,
        judge=judge,
        label=label,
        subtype=subtype,
        probability=round(p, 4),
        subtype_reason=subtype_reason,
        focus=focus(signals),
    )
    then = "; flagged for the definite mismatch" if p < threshold else ""
    return KeylessVerdict(verdict, reason, Odds(p, threshold, then))


#: Labels whose verdict quotes the source sentence that decided it (an absent claim has none to quote).
_EVIDENCED = (Label.SUPPORTED, Label.PARTIALLY_SUPPORTED, Label.CONTRADICTED)


def with_sentence(verdict: ClaimVerdict, signals: ClaimSignals) -> ClaimVerdict:
    """``verdict`` quoting the source sentence that best aligns with its claim, as the judge's own evidence.

    An absent claim quotes nothing, unless its reason names a source sentence with another value ("the claim
    says 450,000 books; the context says 120,000"): that sentence is quoted. The quote is copied from the
    context; the source layer locates it in its passage and verifies it like any judge's quote.
    """
    if verdict.evidence:
        return verdict
    quote = signals.best_sentence if verdict.label in _EVIDENCED else ""
    conflict = named_conflict(signals) if verdict.label is Label.ABSENT else None
    if conflict is not None and conflict.context is not None and conflict.sentence is not None:
        quote = signals.context_sentences[conflict.sentence]
    if not quote.strip():
        return verdict
    return verdict.model_copy(update={"evidence": (Evidence(quote=quote),)})


def in_claim_order(claims: Sequence[Claim], found: dict[str, ClaimVerdict], judge: str) -> list[ClaimVerdict]:
    """The verdicts of ``found`` in claim order; a claim without one (a question, greeting...) is unevaluatable."""
    return [
        found.get(claim.id)
        or ClaimVerdict(
            claim_id=claim.id,
            judge=judge,
            label=Label.UNEVALUATABLE,
            label_reason="a question, greeting, instruction or list marker: nothing to check",
        )
        for claim in claims
    ]
