"""The keyless triage (judges/offline/confidence.py): a keyless verdict is confident only on evidence.

Cases here are not the issue's examples: each mechanism is checked on claims of its own.
"""

from __future__ import annotations

import json
import re

import pytest
from testdata import REPO, load_script

from hallumeasure.core.labels import Label
from hallumeasure.core.types import Sample
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.judges.offline.cues import cue_conflicts
from tests.judges.offline.contrast.dev_pairs import pairs

_HARBOUR = (
    "The Pelham ferry company runs four boats between Arden and Coll. Two of its captains voted to strike and "
    "the other two voted against. The company plans to buy an electric boat in 2027. Ticket prices rose by 5 "
    "percent in January, the company said. The morning boat leaves at 7 a.m. and the last boat returns at 10 p.m."
)


def _verdicts(claim: str, context: str = _HARBOUR):
    sample = Sample(id="t", response=claim, context=context)
    claims = OfflineExtractor().claims(sample)
    return OfflineJudge().judge_now(sample, claims).verdicts


def _only(claim: str, context: str = _HARBOUR):
    verdicts = [v for v in _verdicts(claim, context) if v.label != Label.UNEVALUATABLE]
    assert len(verdicts) == 1, verdicts
    return verdicts[0]


@pytest.mark.parametrize(
    "claim",
    [
        "All of its captains voted to strike.",  # a group the source splits
        "The company has bought an electric boat.",  # a plan told as done
        "Pelham runs the fastest boats between Arden and Coll.",  # a superlative
        "The Pelham ferry company has transformed travel between Arden and Coll.",  # hyperbole
        "Ticket prices rose because the captains voted to strike.",  # a cause the source never gives
        "Ticket prices rose by more than 5 percent in January.",  # a comparison
        "Ticket prices rose by 5 percent in January.",  # an attribution dropped ("the company said")
    ],
)
def test_semantic_claims_are_never_confidently_supported(claim):
    verdict = _only(claim)
    assert not (verdict.label == Label.SUPPORTED and verdict.confident), verdict.label_reason
    if verdict.label == Label.SUPPORTED:
        assert verdict.label_reason.startswith("unsure:")


@pytest.mark.parametrize(
    "claim",
    [
        "The Pelham ferry company runs four boats between Arden and Coll.",
        "The morning boat leaves at 7:00.",
        "The company said ticket prices rose by 5% in January.",
    ],
)
def test_a_covering_sentence_without_conflicting_cues_is_confidently_supported(claim):
    verdict = _only(claim)
    assert verdict.label == Label.SUPPORTED and verdict.confident, verdict.label_reason
    (evidence,) = verdict.evidence
    assert evidence.quote in _HARBOUR and evidence.quote in verdict.label_reason


@pytest.mark.parametrize(
    ("claim", "named"),
    [
        ("The Pelham ferry company runs six boats between Arden and Coll.", "six"),
        ("The morning boat leaves at 8 a.m.", "8"),
        ("The Pelham ferry company runs four boats between Arden and Skye.", "Skye"),
    ],
)
def test_a_named_conflict_or_absence_is_confidently_unsupported(claim, named):
    verdict = _only(claim)
    assert verdict.label != Label.SUPPORTED and verdict.confident, verdict.label_reason
    assert named in verdict.label_reason


def test_a_value_the_source_gives_elsewhere_is_not_a_confident_conflict():
    # "returns at 10 p.m." is held against the morning sentence by a weak alignment; the source does say 10 p.m.
    context = (
        "The ferry will add a late crossing from next week. The morning boat leaves at 7 a.m. and returns at 10 p.m."
    )
    verdict = _only("The ferry returns at 10 p.m.", context)
    assert verdict.label == Label.SUPPORTED or not verdict.confident, verdict.label_reason


def test_a_negated_claim_against_a_restricted_value_is_not_a_confident_conflict():
    verdict = _only("The cafe is not open on Sundays.", "The cafe is open from Monday to Saturday only.")
    assert verdict.label == Label.SUPPORTED or not verdict.confident, verdict.label_reason


def test_cue_conflicts_name_the_words_as_written():
    (conflict,) = cue_conflicts("The river rose twice as high.", "The river rose less than half as high.")
    assert conflict.family == "comparison" and conflict.claim_only == ("twice",)
    assert cue_conflicts("The mayor said the bridge will reopen.", "The mayor said the bridge will reopen.") == []
    assert [c.family for c in cue_conflicts("The bridge reopened.", "The city plans to reopen the bridge.")] == [
        "modality"
    ]


def _benchmark():
    return load_script("benchmarks/frozen_suite.py")


@pytest.fixture(scope="module")
def dev_result():
    return _benchmark().evaluate(("offline",), pairs(), keep_rows=True)["offline"]


def test_dev_pairs_meet_the_triage_bounds(dev_result):
    overall = dev_result["overall"]
    assert overall["confidently_wrong"] <= 0.05
    assert overall["decided"] >= 0.6


def test_the_decision_rule():
    decide = _benchmark().decide
    assert decide([(Label.SUPPORTED, True), (Label.CONTRADICTED, True)]) == "hallucinated"
    assert decide([(Label.SUPPORTED, True), (Label.SUPPORTED, True)]) == "faithful"
    assert decide([(Label.SUPPORTED, True), (Label.ABSENT, False)]) is None
    assert decide([(Label.SUPPORTED, False)]) is None
    assert decide([]) is None


_QUOTE = re.compile(r'"([^"]+)"')


def _dev_sets():
    """(context, response) of every dev set: the dev pairs, the contrast stories' claims and the examples."""
    for pair in pairs():
        yield pair["context"], pair["claim"]
    for name in ("samples.jsonl", "rag_samples.jsonl"):
        for line in (REPO / "examples" / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            passages = row.get("retrieved_contexts") or []
            context = row.get("context") or "\n".join(p["text"] if isinstance(p, dict) else p for p in passages)
            yield context, re.sub(r" ?\[[^\]]*\]", "", row["response"])


def test_no_supported_reason_quotes_a_sentence_with_a_conflicting_cue():
    extractor, judge = OfflineExtractor(), OfflineJudge()
    bad = []
    for context, response in _dev_sets():
        sample = Sample(id="d", response=response, context=context)
        claims = extractor.claims(sample)
        for claim, verdict in zip(claims, judge.judge_now(sample, claims).verdicts, strict=True):
            if verdict.label != Label.SUPPORTED or verdict.label_reason.startswith("unsure:"):
                continue
            for quoted in _QUOTE.findall(verdict.label_reason):
                if cue_conflicts(claim.text, quoted):
                    bad.append((claim.text, verdict.label_reason))
    assert bad == []


def test_modal_words_of_one_class_agree_and_of_two_classes_conflict():
    assert cue_conflicts("Parts of the path could flood.", "Parts of the path may flood.") == []
    assert cue_conflicts("The town intends to sell the site.", "The town plans to sell the site.") == []
    (conflict,) = cue_conflicts("Parts of the path will flood.", "Parts of the path may flood.")
    assert conflict.family == "modality"


def test_a_future_timetable_may_be_told_in_the_present_but_not_as_done():
    sentence = "The festival will open at 6 p.m. on Friday."
    assert cue_conflicts("The festival opens at 6 p.m. on Friday.", sentence) == []
    assert [c.family for c in cue_conflicts("The festival has opened.", sentence)] == ["modality"]


def test_a_source_sentence_opened_by_a_pronoun_covers_with_the_sentence_before():
    context = "The Tarn gallery reopened in May. It opens at 10 a.m. from Wednesday to Sunday."
    verdict = _only("The Tarn gallery opens at 10 a.m. from Wednesday to Sunday.", context)
    assert verdict.label == Label.SUPPORTED and verdict.confident, verdict.label_reason


def test_a_negation_in_another_clause_of_the_source_is_no_confident_conflict():
    context = "Dana Reyes scored the winning goal in the final, but it wasn't enough to save the coach's job."
    verdict = _only("Dana Reyes scored the winning goal in the final.", context)
    assert verdict.label == Label.SUPPORTED or not verdict.confident, verdict.label_reason


def test_a_name_the_source_gives_in_another_form_is_no_confident_conflict():
    context = "The former minister spoke for an hour. Mr Okafor said he would not stand again."
    verdict = _only("Daniel Okafor said he would not stand again.", context)
    assert verdict.label == Label.SUPPORTED or not verdict.confident, verdict.label_reason
    # the same shape with another first name is a named conflict
    verdict = _only("Maria Okafor said he would not stand again.", "Daniel Okafor said he would not stand again.")
    assert verdict.label != Label.SUPPORTED and verdict.confident, verdict.label_reason


_YEARBOOK = (
    "District 1 was founded in 1943. It has 9 schools and 880 street trees. "
    "District 52 was founded in 1901. It has 4 schools and 2210 street trees. "
    "District 7 was founded in 1960. It has 12 schools and 52 street trees."
)


def test_a_claim_about_one_district_is_held_against_that_district_only():
    verdict = _only("District 52 has 9 schools.", _YEARBOOK)  # District 1's figure
    assert not (verdict.label == Label.SUPPORTED and verdict.confident), verdict.label_reason
    assert "It has 4 schools" in verdict.label_reason, verdict.label_reason
    verdict = _only("District 52 has 2210 street trees.", _YEARBOOK)
    assert verdict.label == Label.SUPPORTED and verdict.confident, verdict.label_reason
    assert "2210" in verdict.evidence[0].quote


def test_a_pronoun_that_names_nobody_is_never_confidently_supported():
    verdict = _only("It has 12 schools and 52 street trees.", _YEARBOOK)
    assert not verdict.confident and "names nobody" in verdict.label_reason


def test_a_covering_sentence_must_hold_the_claims_times():
    # 6 a.m. is in the source, but in the gym's sentence, not in the one that covers the claim's words
    context = "The Oakfield pool will extend its opening hours from next Monday. The gym next door opens at 6 a.m."
    verdict = _only("From next Monday the Oakfield pool opens at 6 a.m.", context)
    assert not (verdict.label == Label.SUPPORTED and verdict.confident), verdict.label_reason
