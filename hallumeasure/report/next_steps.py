"""What a user of a keyless judge can do next, when the run left claims unsure.

A keyless judge (``offline``, ``nli``) runs without a key, and it says so when its signals cannot tell:
such a claim is unsure, and the run's rate is then a range, not a number. This module names, in one short
block, the concrete ways to settle them: an LLM judge (the option and the key it reads), the cascade that
sends only the claims the keyless judge flags to the LLM, a checker of the user's own (``hf:``, ``onnx:``),
and ``calibrate`` against a few human labels. Each step links to its page of the documentation site, never
to a file of the repository. ``measure`` and ``show`` print it; the viewer shows the same lines.
"""

from __future__ import annotations

import textwrap

from pydantic import BaseModel

from hallumeasure.core.docs import docs_link
from hallumeasure.registry import is_keyless
from hallumeasure.runs.run import Run


class NextStep(BaseModel):
    """One thing to do next: what, the command or option that does it, and where it is explained."""

    what: str
    how: str
    link: str


class NextSteps(BaseModel):
    """The block shown after a keyless run that left claims unsure."""

    judge: str
    unsure_claims: int
    claims: int
    steps: list[NextStep]

    def lines(self, width: int | None = 80) -> list[str]:
        """The block as printed: a heading line, then each step, its command under it (wrapped at ``width``
        columns; None: one line, as the viewer shows it), and its link on a line of its own (so that nothing
        wraps the address)."""
        head = (
            f"next steps: the {self.judge} judge left {self.unsure_claims} of {self.claims} claims unsure, so the "
            "rate is a range; to settle them:"
        )
        lines = [head] if width is None else textwrap.wrap(head, width)
        for step in self.steps:
            if width is None:
                lines.append(f"  - {step.what}: {step.how}")
            else:
                lines.append(f"  - {step.what}:")
                # options and placeholders stay whole
                lines += textwrap.wrap(
                    step.how,
                    width,
                    initial_indent="    ",
                    subsequent_indent="    ",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            lines.append(f"    {step.link}")
        return lines


def next_steps(run: Run) -> NextSteps | None:
    """The next steps for ``run``: None unless its judge is keyless and left at least one claim unsure."""
    judge = run.judge
    if judge is None or not is_keyless(judge):
        return None
    claims, unsure = run.verdict_tally()
    if not unsure:
        return None
    return NextSteps(judge=judge, unsure_claims=unsure, claims=claims, steps=_steps(judge))


def _steps(judge: str) -> list[NextStep]:
    return [
        NextStep(
            what="judge with an LLM",
            how="--judge anthropic:<model> with ANTHROPIC_API_KEY set, or --judge openai:<model> with OPENAI_API_KEY",
            link=docs_link("judges", "using-an-llm-judge"),
        ),
        NextStep(
            what="send only the claims it flags to the LLM",
            how=f"--detector cascade --first-pass {judge} --judge anthropic:<model>",
            link=docs_link("detectors"),
        ),
        NextStep(
            what="use a checker of your own",
            how="--judge hf:<model folder> or --judge onnx:<exported folder>",
            link=docs_link("checkers"),
        ),
        NextStep(
            what="measure its error against a few human labels",
            how="hallumeasure calibrate <run> --export-sample 30, label them, then --labels <file>",
            link=docs_link("statistics"),
        ),
    ]
