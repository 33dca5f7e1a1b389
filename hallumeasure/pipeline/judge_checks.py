"""Sanity checks on a judge's own output, run after every measurement (``run_measurement``).

A judge that cannot do the task still answers: a small instruct model labelled 44 of 44 claims
partially supported, with the reason of its prompt's example and 44 unverified quotes, and the run
reported a hallucinated share of 1.000. These checks look for such signs in the verdicts alone:

- ``one_label``: at least ``MIN_CLAIMS`` claims judged by an LLM and ``ONE_LABEL_SHARE`` of them share
  one label other than ``supported`` (a faithful system may well be supported throughout);
- ``copied_reasons``: reasons equal or nearly equal to a reason in a prompt's own examples that names
  something of the example (a person, a number);
- ``same_reason``: one reason text for ``SAME_REASON_SHARE`` of at least ``MIN_CLAIMS`` claims judged by an LLM;
- ``unverified_evidence``: ``UNVERIFIED_SHARE`` of at least ``MIN_QUOTED`` claims with quotes have a quote
  that is in no passage.

The label and reason-text checks skip verdicts of keyless judges: their labels and reasons are rules
over the text (a reason template per finding, one label for a data set of one kind), measured on
held-out data rather than here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from functools import cache

from hallumeasure.core.judge_checks import JudgeCheck, JudgeCheckName
from hallumeasure.core.labels import Label
from hallumeasure.core.types import ClaimVerdict, ResponseResult
from hallumeasure.judges.llm.prompts import all_prompts
from hallumeasure.registry import is_keyless
from hallumeasure.sources.evidence import count_unverified

#: Fewest claims judged by an LLM before the label and reason-text checks speak.
MIN_CLAIMS = 20
#: Share of those claims with one label (other than supported) that fails ``one_label``.
ONE_LABEL_SHARE = 0.95
#: Share of claims with one reason text that fails ``same_reason``.
SAME_REASON_SHARE = 0.8
#: Share of reasons copied from a prompt's examples that fails ``copied_reasons`` (and at least this many).
COPIED_SHARE = 0.1
MIN_COPIED = 2
#: How alike a reason and an example reason must be (difflib's ratio, after normalising case and punctuation).
NEAR_EQUAL = 0.85
#: Fewest claims with quotes, and the share of them unverified, that fail ``unverified_evidence``.
MIN_QUOTED = 10
UNVERIFIED_SHARE = 0.8

#: What each failing check means for the run's numbers, and what to do about it.
_MEANS_AND_TODO: dict[JudgeCheckName, tuple[str, str]] = {
    JudgeCheckName.ONE_LABEL: (
        "a judge that gives one label whatever it reads measures nothing: the rate is its habit, not the data's.",
        "Read a few claims in the viewer; if the label is wrong, use a larger judge model (or another mode).",
    ),
    JudgeCheckName.COPIED_REASONS: (
        "the judge copies its instructions instead of reading the claim and the source, so its labels are no "
        "measurement.",
        "Use a larger judge model; a model this small cannot follow the judging prompt.",
    ),
    JudgeCheckName.SAME_REASON: (
        "a judge that gives one reason for different claims did not read them.",
        "Read a few claims in the viewer; use a larger judge model.",
    ),
    JudgeCheckName.UNVERIFIED_EVIDENCE: (
        "the judge's quotes are made up, so the verdicts they back rest on nothing in the source.",
        "Check that the source reaches the judge (is it cut to fit its window?); else use a larger judge model.",
    ),
}

_REASON_RE = re.compile(r'"(?:label_reason|subtype_reason)":\s*("(?:[^"\\]|\\.)*")')
_NOT_WORD = re.compile(r"[\W_]+")


def check_judge(results: Sequence[ResponseResult]) -> list[JudgeCheck]:
    """The sanity checks that the judge's verdicts in ``results`` fail (an empty list when all pass)."""
    verdicts = [v for r in results for v in r.verdicts if v.ok]
    by_llm = [v for v in verdicts if not _keyless(v.judge)]
    found = [_one_label(by_llm), _copied_reasons(verdicts), _same_reason(by_llm), _unverified(verdicts)]
    return [check for check in found if check is not None]


@cache
def _keyless(judge: str) -> bool:
    return is_keyless(judge)


def _failed(name: JudgeCheckName, count: int, total: int, seen: str) -> JudgeCheck:
    """The record of a failed check: ``seen`` follows "<count> of <total> (<share>) claims"."""
    means, todo = _MEANS_AND_TODO[name]
    return JudgeCheck(
        name=name,
        seen=f"{count} of {total} ({count / total:.0%}) claims {seen}",
        count=count,
        total=total,
        means=means,
        todo=todo,
    )


def _one_label(verdicts: Sequence[ClaimVerdict]) -> JudgeCheck | None:
    if len(verdicts) < MIN_CLAIMS:
        return None
    label, count = Counter(v.label for v in verdicts).most_common(1)[0]
    if label is None or label == Label.SUPPORTED or count < ONE_LABEL_SHARE * len(verdicts):
        return None
    return _failed(JudgeCheckName.ONE_LABEL, count, len(verdicts), f"judged by the LLM are {label.value}")


def _normal(text: str) -> str:
    return _NOT_WORD.sub(" ", text.lower()).strip()


@cache
def example_reasons() -> tuple[str, ...]:
    """The reasons written in the prompts' own examples that name something of the example, normalised.

    Only reasons with a name or a number count ("Ana Ruiz said ...", "18 months instead of 14"): a judge
    that writes them about another source copied them. A generic one ("The claim brings in a person who
    is not in the context.") may well be the right reason for a claim of the user's data.
    """
    found = set()
    for prompt in all_prompts():
        for match in _REASON_RE.finditer(prompt.system + "\n" + prompt.user_prefix + "\n" + prompt.user_suffix):
            reason = json.loads(match.group(1))
            if _names_something(reason):
                found.add(_normal(reason))
    return tuple(sorted(found))


def _names_something(text: str) -> bool:
    """Whether ``text`` holds a number or a capitalised word after its first (a name, a month)."""
    words = text.split()
    return any(c.isdigit() for c in text) or any(w.strip("'\"(")[:1].isupper() for w in words[1:])


def _copied(reason: str) -> bool:
    """Whether a normalised reason is equal or nearly equal to one of the prompts' example reasons."""
    for example in example_reasons():
        if reason == example:
            return True
        if min(len(reason), len(example)) < NEAR_EQUAL * max(len(reason), len(example)):
            continue
        matcher = SequenceMatcher(None, reason, example, autojunk=False)
        if matcher.quick_ratio() >= NEAR_EQUAL and matcher.ratio() >= NEAR_EQUAL:
            return True
    return False


def _reasons(verdict: ClaimVerdict) -> Iterable[str]:
    return (_normal(r) for r in (verdict.label_reason, verdict.subtype_reason) if r and r.strip())


def _copied_reasons(verdicts: Sequence[ClaimVerdict]) -> JudgeCheck | None:
    reasoned = [v for v in verdicts if any(_reasons(v))]
    copied = {reason for reason in {r for v in reasoned for r in _reasons(v)} if _copied(reason)}
    count = sum(1 for v in reasoned if any(r in copied for r in _reasons(v)))
    if count < MIN_COPIED or count < COPIED_SHARE * len(reasoned):
        return None
    seen = "with a reason repeat a reason of the prompt's own example"
    return _failed(JudgeCheckName.COPIED_REASONS, count, len(reasoned), seen)


def _same_reason(verdicts: Sequence[ClaimVerdict]) -> JudgeCheck | None:
    given = [v.label_reason for v in verdicts if v.label_reason and v.label_reason.strip()]
    reasons = [_normal(reason) for reason in given]
    written = dict(zip(reasons, given, strict=True))
    if len(reasons) < MIN_CLAIMS:
        return None
    reason, count = Counter(reasons).most_common(1)[0]
    if count < SAME_REASON_SHARE * len(reasons):
        return None
    shown = " ".join(written[reason].split())
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return _failed(JudgeCheckName.SAME_REASON, count, len(reasons), f"judged by the LLM have one reason: {shown!r}")


def _unverified(verdicts: Sequence[ClaimVerdict]) -> JudgeCheck | None:
    unverified, checked = count_unverified(verdicts)
    if checked < MIN_QUOTED or unverified < UNVERIFIED_SHARE * checked:
        return None
    seen = "with quoted evidence have a quote that is in no passage"
    return _failed(JudgeCheckName.UNVERIFIED_EVIDENCE, unverified, checked, seen)
