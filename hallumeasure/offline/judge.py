"""The offline claim judge: signals -> trained trees -> label, subtype and a reason written from the signals.

Not an LLM. It sees words, numbers, names and a few cue words; it cannot follow a paraphrase
or an argument. Its measured quality is in benchmarks/offline_quality.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hallumeasure.labels import Label, Subtype
from hallumeasure.offline.extractor import is_unevaluatable
from hallumeasure.offline.model import OfflineModel, load_model
from hallumeasure.offline.signals import FEATURES, ClaimSignals, claim_signals
from hallumeasure.pipeline.protocols import Judgement
from hallumeasure.types import Claim, ClaimVerdict, Sample

#: Response-level features: how the worst and the average claim look. Each has a known direction
#: (more missing numbers can only mean more risk), which training enforces as a monotonic constraint.
RESPONSE_AGGREGATES: tuple[tuple[str, str, int], ...] = (
    ("min", "recall_best", -1),
    ("mean", "recall_best", -1),
    ("min", "recall_global", -1),
    ("min", "recall_top2", -1),
    ("min", "bigram_recall", -1),
    ("mean", "bigram_recall", -1),
    ("min", "trigram_recall", -1),
    ("mean", "trigram_recall", -1),
    ("sum", "n_novel", 1),
    ("max", "novel_share", 1),
    ("sum", "n_novel_bigrams", 1),
    ("sum", "n_novel_capitalised", 1),
    ("sum", "n_numbers_missing", 1),
    ("max", "number_conflict", 1),
    ("max", "date_conflict", 1),
    ("sum", "n_entities_missing", 1),
    ("max", "negation_mismatch", 1),
    ("sum", "n_intensifiers_novel", 1),
    ("max", "hedge_dropped", 1),
    ("max", "attribution_dropped", 1),
)
# Lengths (of the context, the response, the claim list) are left out on purpose: they say more about
# which dataset a row comes from than about hallucination, and they hurt on unseen kinds of text.
RESPONSE_FEATURES = tuple(f"{agg}_{name}" for agg, name, _ in RESPONSE_AGGREGATES)
RESPONSE_MONOTONIC = tuple(sign for _, _, sign in RESPONSE_AGGREGATES)
_AGG = {"min": min, "max": max, "sum": sum, "mean": lambda c: sum(c) / len(c)}
_INDEX = {name: i for i, name in enumerate(FEATURES)}


def response_vector(vectors: Sequence[Sequence[float]]) -> list[float]:
    """Aggregate claim feature vectors into one response vector (all zeros when there is no claim)."""
    if not vectors:
        return [0.0] * len(RESPONSE_FEATURES)
    return [float(_AGG[agg]([v[_INDEX[name]] for v in vectors])) for agg, name, _ in RESPONSE_AGGREGATES]


def _quote(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return f'"{text[:limit]}{"..." if len(text) > limit else ""}"'


def label_and_subtype(s: ClaimSignals) -> tuple[Label, Subtype, str, str]:
    """For a claim judged unsupported: which label and subtype the signals point to, and why."""
    v = s.values
    aligned = v["recall_best"] >= 0.5
    closest = f"the closest context sentence is {_quote(s.best_sentence)}"
    if s.missing_numbers and s.conflicting_numbers:
        return (Label.CONTRADICTED, Subtype.NUMBER,
                f"the claim says {', '.join(s.missing_numbers)}; the closest context sentence says "
                f"{', '.join(s.conflicting_numbers)} ({_quote(s.best_sentence)})",
                "a number differs from the context")
    if s.conflicting_date is not None:
        y, m, d = s.conflicting_date
        when = f"{y}-{m:02d}" + (f"-{d:02d}" if d else "")
        return (Label.CONTRADICTED, Subtype.TEMPORAL, f"no date in the context matches {when}; {closest}",
                "the date differs from the context")
    if s.missing_numbers:
        return (Label.ABSENT if not aligned else Label.CONTRADICTED, Subtype.NUMBER,
                f"the context never mentions {', '.join(s.missing_numbers)}; {closest}",
                "a number in the claim is not in the context")
    if v["negation_mismatch"] and aligned:
        return (Label.CONTRADICTED, Subtype.OTHER,
                f"the claim and the closest context sentence differ in negation: {_quote(s.best_sentence)}",
                "one of the two is negated and the other is not")
    if s.missing_entities:
        label = Label.CONTRADICTED if aligned else Label.ABSENT
        return (label, Subtype.ENTITY, f"the context never names {', '.join(s.missing_entities)}; {closest}",
                "a name in the claim does not appear in the context")
    if v["attribution_dropped"] and aligned:
        return (Label.PARTIALLY_SUPPORTED, Subtype.ATTRIBUTION_FAILURE,
                f"the context attributes this ('{s.attribution_word}'), the claim states it as fact: "
                f"{_quote(s.best_sentence)}",
                "the source of the statement was dropped")
    if s.novel_intensifiers:
        return (Label.PARTIALLY_SUPPORTED if aligned else Label.ABSENT, Subtype.HYPERBOLE,
                f"the claim adds {', '.join(s.novel_intensifiers)}, which the context does not say; {closest}",
                "the claim is stronger than the context")
    if v["hedge_dropped"] and aligned:
        return (Label.PARTIALLY_SUPPORTED, Subtype.TEMPORAL,
                f"the context is tentative, the claim is not: {_quote(s.best_sentence)}",
                "modality differs (may / will)")
    novel = ", ".join(s.novel_words[:6])
    if aligned:
        return (Label.PARTIALLY_SUPPORTED, Subtype.OTHER,
                f"most of the claim matches {_quote(s.best_sentence)}, but not: {novel}",
                "a detail is not backed by the context")
    return (Label.ABSENT, Subtype.OTHER,
            f"little of the claim appears in the context (not found: {novel or 'its wording'}); {closest}",
            "the claim adds information the context does not give")


class OfflineJudge:
    """``--judge offline``: a keyless judge trained on public labelled data. Not an LLM."""

    name = "offline"

    def __init__(self, threshold: float = 0.5, model: OfflineModel | None = None) -> None:
        self.threshold = threshold
        self.trees = model or load_model()

    def settings(self) -> dict[str, Any]:
        return {"kind": "gradient-boosted trees over lexical/number/entity signals", "threshold": self.threshold,
                "model_sha256": self.trees.meta.get("sha256", ""), "trained_on": self.trees.meta.get("trained_on")}

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        return self.judge_sync(sample, claims)

    def judge_sync(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        verdicts, vectors = [], []
        for claim in claims:
            if is_unevaluatable(claim.text):
                verdicts.append(ClaimVerdict(claim_id=claim.id, judge=self.name, label=Label.UNEVALUATABLE,
                                             label_reason="a question, greeting or instruction: nothing to check"))
                continue
            signals = claim_signals(claim.text, sample.context)
            vector = signals.vector()
            vectors.append(vector)
            p = self.trees.response.probability(response_vector([vector]))
            verdicts.append(self._verdict(claim, signals, p))
        score = self.trees.response.probability(response_vector(vectors)) if vectors else None
        return Judgement(verdicts=verdicts, score=score)

    def _verdict(self, claim: Claim, signals: ClaimSignals, p: float) -> ClaimVerdict:
        # Hard evidence outranks the model: a value the context states differently in the aligned sentence.
        conflict = bool(signals.missing_numbers and signals.conflicting_numbers) or signals.conflicting_date is not None
        if p < self.threshold and not conflict:
            return ClaimVerdict(claim_id=claim.id, judge=self.name, label=Label.SUPPORTED, probability=round(p, 4),
                                label_reason=f"the claim matches the context: {_quote(signals.best_sentence)} "
                                             f"(P(unsupported) = {p:.2f})")
        label, subtype, reason, subtype_reason = label_and_subtype(signals)
        return ClaimVerdict(claim_id=claim.id, judge=self.name, label=label, subtype=subtype,
                            probability=round(p, 4), label_reason=f"{reason} (P(unsupported) = {p:.2f})",
                            subtype_reason=subtype_reason)
