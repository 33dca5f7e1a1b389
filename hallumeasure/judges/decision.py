"""When a keyless judge's response may be called decided: a rule calibrated on labelled responses.

The claims' ``confident`` flags say whether an unsure claim could flip a response's hallucinated flag
(core/aggregate.py). On real labelled responses that alone was wrong on 7-20% of them, so a keyless judge
also asks its response score to agree with the flag: at most ``clear_at_most`` for a clean response, at
least ``flag_at_least`` for a hallucinated one. The two thresholds per judge are chosen by risk control
(Learn-then-Test, MAPIE) so that at most ``target`` of all responses are decided wrongly, with probability
``confidence``, on data like the calibration data; benchmarks/decided_calibration.py makes them (its command
is in each file) and measures them leave-one-dataset-out (benchmarks/results/decided_calibration.md).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, Field

from hallumeasure.core.labels import Decidable

_HERE = Path(__file__).resolve().parent

#: The rule files shipped with the package, and the judges each holds.
RULE_FILES: dict[Path, tuple[str, ...]] = {
    _HERE / "offline" / "decision.json": ("offline", "offline+nli"),
    _HERE / "nli" / "decision.json": ("nli",),
}


class DecisionRule(BaseModel):
    """Thresholds on one judge's response score (P(hallucinated))."""

    clear_at_most: float = Field(description="a clean flag is decided only at or below this score (-1: never)")
    flag_at_least: float = Field(description="a hallucinated flag is decided only at or above this score (2: never)")
    target: float = Field(description="the share of all responses decided wrongly that the rule controls")
    confidence: float = Field(description="the probability, over the calibration draw, that it holds")
    calibrated_on: int = Field(description="labelled responses it was calibrated on")

    def decidable(self, score: float | None) -> Decidable:
        """What ``score`` allows: no score (no checkable claim) allows nothing."""
        if score is None:
            return Decidable.NEITHER
        if score <= self.clear_at_most:
            return Decidable.CLEAN
        if score >= self.flag_at_least:
            return Decidable.HALLUCINATED
        return Decidable.NEITHER


class DecisionRules(BaseModel):
    """One shipped rule file."""

    rules: dict[str, DecisionRule]
    method: str
    command: str
    data_sha256: dict[str, str] = Field(default_factory=dict)


@cache
def decision_rule(judge: str) -> DecisionRule | None:
    """The shipped rule of a keyless judge (``offline``, ``nli``, ``offline+nli``), or None when it has none."""
    for file, judges in RULE_FILES.items():
        if judge in judges and file.exists():
            return DecisionRules.model_validate_json(file.read_text()).rules.get(judge)
    return None


def decidable(judge: str, score: float | None) -> Decidable | None:
    """What ``judge``'s shipped rule allows for a response scoring ``score``; None when the judge has no rule."""
    rule = decision_rule(judge)
    return None if rule is None else rule.decidable(score)
