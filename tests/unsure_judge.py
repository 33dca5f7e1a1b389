"""A test judge that marks chosen claims unsure (confident=False), as the keyless judges may.

It wraps a real judge and changes nothing but ``confident``, which it sets on every verdict from
``unsure``, so tests of the plumbing (store, summary, show, compare, mitigation, cascade) do not
depend on when a keyless judge is unsure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hallumeasure.core.types import Claim, ClaimVerdict, Sample
from hallumeasure.judges.protocols import ClaimJudge, Judgement


class UnsureJudge:
    """``inner``'s verdicts, with ``confident=False`` where ``unsure(claim, verdict)`` says so and True elsewhere."""

    def __init__(self, inner: ClaimJudge, unsure: Callable[[Claim, ClaimVerdict], bool]) -> None:
        self.inner = inner
        self.unsure = unsure
        self.name = inner.name

    def settings(self) -> dict[str, Any]:
        return self.inner.settings()

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        judged = await self.inner.judge(sample, claims)
        by_id = {c.id: c for c in claims}
        verdicts = [
            v.model_copy(update={"confident": not self.unsure(by_id[v.claim_id], v)}) if v.ok else v
            for v in judged.verdicts
        ]
        return judged.model_copy(update={"verdicts": verdicts})
