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
  that is in no passage;
- ``context_ignored``: a probe (``probe_context``) asks the judge again about up to ``PROBE_CLAIMS`` claims
  that it found supported, contradicted or partially supported, with their source removed, and at least
  ``PROBE_SAME_SHARE`` of them (of at least ``MIN_PROBED``) keep their label: without a source a judge that
  reads it can only answer absent or unevaluatable. The probe's requests go through the run's request cache,
  and what it asked and found is recorded in the manifest (``settings.context_probe``). Detectors that count
  their calls for the manifest (the cascade, CoNLI) are not probed.

The label and reason-text checks and the probe skip verdicts of keyless judges: their labels and reasons
are rules over the text (a reason template per finding, one label for a data set of one kind), measured on
held-out data rather than here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from functools import cache, lru_cache

from pydantic import BaseModel, Field

from hallumeasure.core.judge_checks import JudgeCheck, JudgeCheckName
from hallumeasure.core.labels import Label
from hallumeasure.core.types import Claim, ClaimVerdict, ResponseResult, Sample, Usage
from hallumeasure.judges.llm.prompts import all_prompts
from hallumeasure.judges.protocols import ClaimJudge, CountingJudge
from hallumeasure.registry import is_keyless

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

#: Most claims the context probe asks again (its cost: at most this many extra judge answers per run), and at most
#: this many of one response.
PROBE_CLAIMS = 8
PROBE_PER_RESPONSE = 2
#: Fewest claims the probe must ask before it speaks, and the share of them keeping their label that fails it.
MIN_PROBED = 4
PROBE_SAME_SHARE = 0.85
#: Labels that a judge can give only from the source: without it, each should become absent or unevaluatable.
_SOURCE_LABELS = frozenset({Label.SUPPORTED, Label.CONTRADICTED, Label.PARTIALLY_SUPPORTED})

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
    JudgeCheckName.CONTEXT_IGNORED: (
        "the judge's labels do not depend on the source: it answers from habit or its own knowledge, not from "
        "the context, so its rate says nothing about grounding.",
        "Check that the source reaches the judge (is it cut to fit its window?); else use a larger judge model.",
    ),
}

_REASON_RE = re.compile(r'"(?:label_reason|subtype_reason)":\s*("(?:[^"\\]|\\.)*")')
_NOT_WORD = re.compile(r"[\W_]+")


class ContextProbe(BaseModel):
    """What the context probe asked and found: the claims asked again without their source, and how many of them
    kept their label (``settings.context_probe`` of the manifest)."""

    claims: list[str] = Field(default_factory=list)
    same: int = 0
    #: Claims whose second answer was an error row (left out of the count).
    errors: int = 0
    usage: Usage = Field(default_factory=Usage)

    @property
    def asked(self) -> int:
        return len(self.claims) - self.errors


def check_judge(results: Iterable[ResponseResult], probe: ContextProbe | None = None) -> list[JudgeCheck]:
    """The sanity checks that the judge's verdicts in ``results`` (and the context ``probe``, when it ran) fail
    (an empty list when all pass). ``results`` are read once, or twice when one reason may be the same for most
    claims (``JudgeTally``): pass a list, or use ``JudgeTally`` over a store's chunks."""
    results = results if isinstance(results, Sequence) else list(results)
    tally = JudgeTally()
    for result in results:
        tally.add(result)
    if tally.needs_recount():
        for result in results:
            tally.recount(result)
    return tally.checks(probe)


class JudgeTally:
    """``check_judge`` one response at a time, in memory that does not grow with the run: counts of labels, copied
    reasons and evidence, and (by Boyer and Moore's majority vote) the one reason that may hold most claims.

    ``add`` each result in input order; when ``needs_recount`` says so, ``recount`` each again in the same order
    (a second pass that counts that one reason exactly); then ``checks``.
    """

    def __init__(self) -> None:
        self.labels: Counter[Label | None] = Counter()
        self.n_llm = self.n_reasoned = self.n_copied = self.n_unverified = self.n_checked = 0
        self.n_reasons = 0
        self.candidate: str | None = None
        self.lead = 0
        self.candidate_count = 0
        self.candidate_written = ""

    def add(self, result: ResponseResult) -> None:
        for v in result.verdicts:
            if not v.ok:
                continue
            reasons = set(_reasons(v))
            if reasons:
                self.n_reasoned += 1
                self.n_copied += any(_copied_cached(r) for r in reasons)
            if v.evidence_verified is not None:
                self.n_checked += 1
                self.n_unverified += not v.evidence_verified
            if _keyless(v.judge):
                continue
            self.n_llm += 1
            self.labels[v.label] += 1
            if v.label_reason and v.label_reason.strip():
                self.n_reasons += 1
                reason = _normal(v.label_reason)
                if self.lead == 0:
                    self.candidate, self.lead = reason, 1
                else:
                    self.lead += 1 if reason == self.candidate else -1

    def needs_recount(self) -> bool:
        """Whether ``same_reason`` can speak: enough reasons, so the majority candidate must be counted."""
        return self.n_reasons >= MIN_CLAIMS

    def recount(self, result: ResponseResult) -> None:
        for v in result.verdicts:
            if not (v.ok and v.label_reason and v.label_reason.strip()) or _keyless(v.judge):
                continue
            if _normal(v.label_reason) == self.candidate:
                self.candidate_count += 1
                self.candidate_written = v.label_reason

    def checks(self, probe: ContextProbe | None = None) -> list[JudgeCheck]:
        found = [self._one_label(), self._copied_reasons(), self._same_reason(), self._unverified()]
        found.append(_context_ignored(probe) if probe is not None else None)
        return [check for check in found if check is not None]

    def _one_label(self) -> JudgeCheck | None:
        if self.n_llm < MIN_CLAIMS:
            return None
        label, count = self.labels.most_common(1)[0]
        if label is None or label == Label.SUPPORTED or count < ONE_LABEL_SHARE * self.n_llm:
            return None
        return _failed(JudgeCheckName.ONE_LABEL, count, self.n_llm, f"judged by the LLM are {label.value}")

    def _copied_reasons(self) -> JudgeCheck | None:
        if self.n_copied < MIN_COPIED or self.n_copied < COPIED_SHARE * self.n_reasoned:
            return None
        seen = "with a reason repeat a reason of the prompt's own example"
        return _failed(JudgeCheckName.COPIED_REASONS, self.n_copied, self.n_reasoned, seen)

    def _same_reason(self) -> JudgeCheck | None:
        # A reason of at least SAME_REASON_SHARE (over half) of the claims is the majority vote's candidate.
        if self.n_reasons < MIN_CLAIMS or self.candidate_count < SAME_REASON_SHARE * self.n_reasons:
            return None
        shown = " ".join(self.candidate_written.split())
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        seen = f"judged by the LLM have one reason: {shown!r}"
        return _failed(JudgeCheckName.SAME_REASON, self.candidate_count, self.n_reasons, seen)

    def _unverified(self) -> JudgeCheck | None:
        if self.n_checked < MIN_QUOTED or self.n_unverified < UNVERIFIED_SHARE * self.n_checked:
            return None
        seen = "with quoted evidence have a quote that is in no passage"
        return _failed(JudgeCheckName.UNVERIFIED_EVIDENCE, self.n_unverified, self.n_checked, seen)


def probe_claims(results: Iterable[ResponseResult]) -> list[tuple[str, list[Claim], list[ClaimVerdict]]]:
    """The claims the probe asks again, by sample id: judged by an LLM with a label only the source can give, at
    most ``PROBE_PER_RESPONSE`` of a response and ``PROBE_CLAIMS`` in all, in the run's order."""
    chosen: list[tuple[str, list[Claim], list[ClaimVerdict]]] = []
    left = PROBE_CLAIMS
    for result in results:
        by_id = {v.claim_id: v for v in result.verdicts if v.ok and not _keyless(v.judge)}
        picked = [(c, by_id[c.id]) for c in result.claims if c.id in by_id and by_id[c.id].label in _SOURCE_LABELS][
            : min(PROBE_PER_RESPONSE, left)
        ]
        if picked:
            chosen.append((result.sample_id, [c for c, _ in picked], [v for _, v in picked]))
            left -= len(picked)
        if left <= 0:
            break
    return chosen


async def probe_context(
    judge: ClaimJudge, samples: Sequence[Sample], results: Iterable[ResponseResult]
) -> ContextProbe | None:
    """Ask ``judge`` again about a few of its claims (``probe_claims``) with their source removed; None when there is
    nothing to probe (a keyless judge, or too few claims with a label that needs the source)."""
    if isinstance(judge, CountingJudge):
        return None  # a detector that counts its calls (cascade, CoNLI) would count the probe's too
    chosen = probe_claims(results)
    if sum(len(claims) for _, claims, _ in chosen) < MIN_PROBED:
        return None
    by_id = {s.id: s for s in samples}
    probe = ContextProbe()
    for sample_id, claims, before in chosen:
        sample = by_id.get(sample_id)
        if sample is None:
            continue
        sourceless = Sample.model_validate({**sample.model_dump(), "context": "", "passages": []})
        judgement = await judge.judge(sourceless, claims)
        probe.usage = probe.usage + judgement.usage
        for claim, first, again in zip(claims, before, judgement.verdicts, strict=True):
            probe.claims.append(claim.id)
            if not again.ok:
                probe.errors += 1
            elif again.label == first.label:
                probe.same += 1
    return probe


def _context_ignored(probe: ContextProbe) -> JudgeCheck | None:
    if probe.asked < MIN_PROBED or probe.same < PROBE_SAME_SHARE * probe.asked:
        return None
    seen = "judged supported, contradicted or partially supported kept their label with the source removed"
    return _failed(JudgeCheckName.CONTEXT_IGNORED, probe.same, probe.asked, seen)


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


@lru_cache(maxsize=1 << 16)
def _copied_cached(reason: str) -> bool:
    """``_copied``, remembered for the reasons seen most recently (a run repeats its reasons; memory stays bounded)."""
    return _copied(reason)


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
