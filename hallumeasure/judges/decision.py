"""When a keyless judge's response may be called decided: a rule calibrated on labelled responses.

The claims' ``confident`` flags say whether an unsure claim could flip a response's hallucinated flag
(core/aggregate.py). On real labelled responses that alone was wrong on 7-20% of them, so a keyless judge
also asks its response score to agree with the flag: at most ``clear_at_most`` for a clean response, at
least ``flag_at_least`` for a hallucinated one. The two thresholds per judge are chosen by risk control
(Learn-then-Test, MAPIE) so that at most ``target`` of all responses are decided wrongly, with probability
``confidence``, on data like the calibration data; benchmarks/decided_calibration.py makes them (its command
is in each file) and measures them leave-one-dataset-out (benchmarks/results/decided_calibration.md).

A judge's rule is part of its registration: ``JudgePart.decision`` names the rule file (``"package:file.json"``)
that holds a rule under the judge's name, so a plugin judge may ship a calibrated rule of its own.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from pydantic import BaseModel, Field

from hallumeasure.core.labels import Decidable
from hallumeasure.registry import JudgePart, PartKind, registry


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


def rule_path(where: str) -> Path:
    """The file a part's ``decision`` names (``"hallumeasure.judges.nli:decision.json"``)."""
    package, _, name = where.partition(":")
    return Path(str(files(package) / name))


def rule_files() -> dict[Path, tuple[str, ...]]:
    """Every registered judge's rule file, with the judges whose rules it holds (what the calibration writes)."""
    found: dict[Path, tuple[str, ...]] = {}
    for part in registry().parts[PartKind.JUDGE].values():
        if isinstance(part, JudgePart) and part.decision is not None:
            path = rule_path(part.decision)
            found[path] = (*found.get(path, ()), part.name)
    return found


@cache
def _rules(where: str) -> DecisionRules | None:
    path = rule_path(where)
    return DecisionRules.model_validate_json(path.read_text()) if path.exists() else None


def decision_rule(judge: str) -> DecisionRule | None:
    """The calibrated rule its registered part gives ``judge`` (``offline``, ``nli`` ...), or None when it has none."""
    part = registry().parts[PartKind.JUDGE].get(judge)
    if not isinstance(part, JudgePart) or part.decision is None:
        return None
    rules = _rules(part.decision)
    return None if rules is None else rules.rules.get(judge)


def decidable(judge: str, score: float | None) -> Decidable | None:
    """What ``judge``'s shipped rule allows for a response scoring ``score``; None when the judge has no rule."""
    rule = decision_rule(judge)
    return None if rule is None else rule.decidable(score)
