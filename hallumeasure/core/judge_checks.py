"""What a run's sanity checks on its judge found: one typed record per failing check.

A judge can fail without a single error row: a small model that answers one label for every claim,
copies the reasons of its prompt's example, or quotes text that is in no passage still yields a
rate. ``pipeline/judge_checks.py`` looks for these signs after every run; each failing check is a
``JudgeCheck`` stored in the run's manifest (``RunManifest.judge_checks``), printed after the run,
shown in the viewer, and refused by ``audit`` unless it is told to allow a broken judge.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class JudgeCheckName(StrEnum):
    """The sanity checks run on a judge's own output."""

    #: (Nearly) every judged claim has the same label, and it is not ``supported``.
    ONE_LABEL = "one_label"
    #: Reasons that repeat, word for word or nearly, a reason from the prompt's own examples.
    COPIED_REASONS = "copied_reasons"
    #: One reason text for most claims.
    SAME_REASON = "same_reason"
    #: Most quotes the judge gave as evidence are in no passage.
    UNVERIFIED_EVIDENCE = "unverified_evidence"
    #: Asked again with the source removed, the judge gave (nearly) the same labels: it ignores the context.
    CONTEXT_IGNORED = "context_ignored"


class JudgeCheck(BaseModel):
    """A failing sanity check on the judge: what was seen (with its numbers), what it means, what to do."""

    model_config = ConfigDict(frozen=True)

    name: JudgeCheckName
    #: What was seen, in a sentence with its numbers ("44 of 44 judged claims (100%) are partially_supported").
    seen: str
    #: How many claims showed the sign, out of how many the check looked at.
    count: int = Field(ge=0)
    total: int = Field(ge=0)
    #: What it means for the run's numbers.
    means: str
    #: What to do about it.
    todo: str

    @property
    def share(self) -> float:
        """``count`` out of ``total`` (0 when the check looked at nothing)."""
        return self.count / self.total if self.total else 0.0

    def line(self) -> str:
        """The check in one line: its name, what was seen, what it means and what to do."""
        return f"{self.name.value}: {self.seen}; {self.means} {self.todo}"
