"""A toy keyless judge for hallumeasure: a claim is supported when each of its content words is in the source.

It is an example of the plugin interface, not a judge to measure with: it knows no paraphrase, number
format or negation. hallumeasure finds it through the ``hallumeasure.judges`` entry point in this
package's pyproject.toml, which names ``part`` below.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hallumeasure.core.labels import Label
from hallumeasure.core.types import Claim, ClaimVerdict, Sample
from hallumeasure.judges.protocols import Judgement
from hallumeasure.registry import JudgePart, Option

_WORD = re.compile(r"[^\W_]+(?:[.,'][^\W_]+)*")
_STOP = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were with".split()
)


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` that carry meaning (a short stop list removed)."""
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP}


class ToyJudge:
    """Supported when every content word of the claim occurs in the source; absent otherwise."""

    name = "toy"

    def __init__(self, *, min_share: float = 1.0) -> None:
        if not 0 < min_share <= 1:
            raise ValueError(f"min_share must be in (0, 1], got {min_share}")
        self.min_share = min_share

    def settings(self) -> dict[str, Any]:
        return {"min_share": self.min_share}

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        source = content_words(sample.context)  # the passages joined, for a RAG sample
        verdicts = []
        for claim in claims:
            words = content_words(claim.text)
            missing = sorted(words - source)
            share = 1 - len(missing) / len(words) if words else 1.0
            supported = share >= self.min_share
            verdicts.append(
                ClaimVerdict(
                    claim_id=claim.id,
                    label_reason="every content word is in the source"
                    if supported
                    else f"not in the source: {', '.join(missing[:5])}",
                    label=Label.SUPPORTED if supported else Label.ABSENT,
                    probability=round(1 - share, 4),
                    judge=self.name,
                )
            )
        return Judgement(verdicts=verdicts)


#: What the entry point registers: a keyless judge built as ``ToyJudge(**options)``, with the one option a spec may
#: set (``toy?min_share=0.8``; the text is converted to a float, and an unknown option is refused).
part = JudgePart(
    "toy",
    ToyJudge,
    "toy word-overlap judge (example plugin)",
    options={"min_share": Option(float, 1.0, "the share of a claim's content words the source must hold")},
)
