"""Parts that the registry tests load through real ``importlib.metadata`` entry points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hallumeasure.core.types import Claim, Sample
from hallumeasure.judges.protocols import Judgement
from hallumeasure.registry import JudgePart, ProviderPart


class SilentJudge:
    """Judges nothing: a judge with no verdicts (every claim becomes an error row downstream)."""

    name = "silent"

    def settings(self) -> dict[str, Any]:
        return {}

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        return Judgement()


part = JudgePart("silent", SilentJudge, "a judge of the tests")
provider_part = ProviderPart("wrongkind", "x:y")
not_callable = 42


def broken() -> None:  # pragma: no cover - never called: its module attribute lookup is what fails
    raise AssertionError
