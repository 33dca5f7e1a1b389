"""A trained entailment checker as a claim judge: every claim against every chunk of its source, best chunk kept.

P(unsupported) of a claim is 1 - its best chunk's P(entailed). Under the calibrated threshold it is
``supported`` with that chunk as evidence. Above it, a three-way (MNLI) head tells the two kinds apart: a
claim that some chunk contradicts more than it leaves it neutral is ``contradicted``, with that chunk as
evidence; every other unsupported claim is ``absent`` (a two-way head, entailed or not, cannot say more, so
its unsupported claims are all ``absent``). No subtype is given: the model says nothing of one. Whether a
verdict is ``confident`` comes from the calibration (calibration.py); without one, none is. The response
score is the largest P(unsupported) of its claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hallumeasure.core.labels import Label
from hallumeasure.core.text import quote
from hallumeasure.core.types import Claim, ClaimVerdict, Evidence, Sample
from hallumeasure.judges.checkers.calibration import CheckerCalibration
from hallumeasure.judges.checkers.chunks import OVERLAP, Chunk, chunk_source
from hallumeasure.judges.checkers.heads import Head
from hallumeasure.judges.offline.extractor import is_unevaluatable
from hallumeasure.judges.offline.judge import in_claim_order
from hallumeasure.judges.protocols import InstantJudge, Judgement

#: Tokens of the window kept for the model's special tokens (``[CLS]``, ``[SEP]`` x2, ``</s>``...).
SPECIAL_TOKENS = 4
#: The smallest chunk, as a share of the window: a claim so long that less is left is cut by the tokenizer.
MIN_CHUNK_SHARE = 0.25


@runtime_checkable
class EntailmentScorer(Protocol):
    """What the judge needs of a loaded checker (hf.py, onnx.py): its head, window, tokens and logits."""

    head: Head
    #: Tokens the model reads at once (premise and hypothesis together).
    window: int

    def count(self, text: str) -> int:
        """Tokens of ``text`` by the model's tokenizer, without special tokens."""
        ...

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """The head's raw outputs, one row per (premise, hypothesis) pair, in the order given."""
        ...

    def settings(self) -> dict[str, Any]: ...


class CheckerJudge(InstantJudge):
    """A keyless claim judge built on a trained checker the user brings (``hf:``, ``onnx:``)."""

    def __init__(
        self,
        scorer: EntailmentScorer,
        *,
        name: str,
        calibration: CheckerCalibration | None = None,
        batch_size: int = 8,
        overlap: int = OVERLAP,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.scorer = scorer
        self.name = name
        self.calibration = calibration
        self.threshold = calibration.threshold if calibration is not None else 0.5
        self.batch_size = batch_size
        self.overlap = overlap

    def settings(self) -> dict[str, Any]:
        return {
            "kind": "trained entailment checker brought by the user (not measured by hallumeasure)",
            "threshold": self.threshold,
            "calibration": self.calibration.model_dump() if self.calibration is not None else None,
            "batch_size": self.batch_size,
            "chunk_overlap_sentences": self.overlap,
            **self.scorer.settings(),
        }

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        return self.judge_now(sample, claims)

    def chunks(self, context: str, claim: str) -> list[Chunk]:
        """The source in chunks that fit the model's window beside ``claim``."""
        window = self.scorer.window
        budget = max(window - self.scorer.count(claim) - SPECIAL_TOKENS, int(window * MIN_CHUNK_SHARE), 1)
        return chunk_source(context, budget, self.scorer.count, overlap=self.overlap)

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray | None]:
        """P(entailed) (and P(contradicted) for a three-way head) of each pair, scored in batches of similar length."""
        entailed = np.zeros(len(pairs))
        contradicted = np.zeros(len(pairs)) if self.scorer.head.three_way else None
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        for start in range(0, len(order), self.batch_size):
            part = order[start : start + self.batch_size]
            e, c = self.scorer.head.probabilities(self.scorer.logits([pairs[i] for i in part]))
            entailed[part] = e
            if contradicted is not None and c is not None:
                contradicted[part] = c
        return entailed, contradicted

    def judge_now(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        checked = [claim for claim in claims if not is_unevaluatable(claim.text)]
        per_claim = [self.chunks(sample.context, claim.text) for claim in checked]
        pairs = [(chunk.text, claim.text) for claim, chunks in zip(checked, per_claim, strict=True) for chunk in chunks]
        entailed, contradicted = self.probabilities(pairs)
        found: dict[str, ClaimVerdict] = {}
        at = 0
        for claim, chunks in zip(checked, per_claim, strict=True):
            n = len(chunks)
            c = contradicted[at : at + n] if contradicted is not None else None
            found[claim.id] = self._verdict(claim, chunks, entailed[at : at + n], c)
            at += n
        ps = [v.probability for v in found.values() if v.probability is not None]
        return Judgement(verdicts=in_claim_order(claims, found, self.name), score=max(ps) if ps else None)

    def _verdict(
        self, claim: Claim, chunks: list[Chunk], entailed: np.ndarray, contradicted: np.ndarray | None
    ) -> ClaimVerdict:
        best = int(np.argmax(entailed))
        p = round(float(1.0 - entailed[best]), 4)
        where = f"the best of {len(chunks)} chunks" if len(chunks) > 1 else "the source"
        chunk, label = chunks[best], Label.SUPPORTED
        if p < self.threshold:
            reason = f"{self.name} finds the claim entailed by {where}: {quote(chunk.text)} (P(unsupported) = {p:.2f})"
        elif contradicted is not None and _contradicts(entailed, contradicted):
            worst = int(np.argmax(contradicted))
            chunk, label = chunks[worst], Label.CONTRADICTED
            reason = (
                f"{self.name} finds the claim contradicted by {quote(chunk.text)} "
                f"(P(contradicted) = {contradicted[worst]:.2f}; P(unsupported) = {p:.2f})"
            )
        else:
            label = Label.ABSENT
            kind = "neither entailed nor contradicted" if contradicted is not None else "not entailed"
            reason = (
                f"{self.name} finds the claim {kind} by any chunk of the source; closest: {quote(chunk.text)} "
                f"(P(unsupported) = {p:.2f})"
            )
        confident = self.calibration is not None and not self.calibration.unsure(p)
        if not confident:
            why = "not calibrated" if self.calibration is None else "inside its calibrated unsure band"
            reason += f"; unsure: the checker is {why}"
        return ClaimVerdict(
            claim_id=claim.id,
            judge=self.name,
            label=label,
            label_reason=reason,
            probability=p,
            evidence=(Evidence(quote=chunk.text),),  # located in its passage, and verified, by sources.rag
            confident=confident,
        )


def _contradicts(entailed: np.ndarray, contradicted: np.ndarray) -> bool:
    """Whether the most contradicting chunk contradicts the claim more than it leaves it neutral."""
    worst = int(np.argmax(contradicted))
    return bool(contradicted[worst] > 1.0 - entailed[worst] - contradicted[worst])


def calibration_of(
    threshold: float | None, unsure_low: float | None, unsure_high: float | None
) -> CheckerCalibration | None:
    """The calibration given in a spec's options; None when none is given (every verdict is then unsure)."""
    if threshold is None:
        if unsure_low is not None or unsure_high is not None:
            raise ValueError("unsure_low and unsure_high need threshold too")
        return None
    low = threshold if unsure_low is None else unsure_low
    high = threshold if unsure_high is None else unsure_high
    if not low <= threshold <= high:
        raise ValueError(f"the unsure band [{low}, {high}) must hold the threshold {threshold}")
    return CheckerCalibration(threshold=threshold, unsure_low=low, unsure_high=high)
