"""What "confident" and "decided" mean, in the words every view uses (docs/concepts.md says the same).

* A claim's verdict is **confident** when its label is not a best guess: an LLM judge's always is; a keyless
  judge's is when one of its evidence rules decided it. Otherwise the claim is **unsure**. A keyless
  reason's probability, P(unsupported), places the label against the judge's threshold; it is not the
  judge's confidence, so an unsure claim may carry a high or a low probability.
* A response is **decided** when no unsure claim can change its hallucinated flag and, for a keyless judge
  with a calibrated rule, its response score agrees with the flag. So a response whose claims are all
  confident is undecided when its score disagrees.

Views render these from the stored fields (``ClaimVerdict.confident``, ``ResponseResult.decided``) with
the functions here, so `check`, the guard's JSON, `show`, the viewer, the pytest message and the exports
cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable

#: What the views call a claim whose label is not a best guess, and one whose label is.
CONFIDENT, UNSURE = "confident", "unsure"
#: The sentence beside an unsure claim: what it is, and why its probability is not a confidence.
UNSURE_NOTE = (
    "unsure: a best guess that no evidence rule of the judge confirmed; its P(unsupported) places the label, "
    "it is not the judge's confidence"
)


def claim_certainty(confident: bool | None) -> str:
    """``confident`` or ``unsure`` for a verdict's ``confident`` field (None, an older run: confident)."""
    return UNSURE if confident is False else CONFIDENT


def undecided_reason(decided: bool | None, confident: Iterable[bool | None], *, has_flag: bool) -> str | None:
    """Why a response is not decided, in the words of the concepts page; None when it is decided.

    ``confident`` holds its claims' ``confident`` fields; ``has_flag`` whether it has a hallucinated flag.
    """
    if decided:
        return None
    if decided is None:
        return "no decision: an error row"
    if not has_flag:
        return "undecided: no checkable claim"
    if any(c is False for c in confident):
        return "undecided: an unsure claim could change its hallucinated flag"
    return (
        "undecided: its claims are confident, but its response score does not agree with its flag by the "
        "judge's calibrated rule"
    )
