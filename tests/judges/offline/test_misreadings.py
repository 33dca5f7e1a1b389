"""The keyless misreadings found in the held-out error analysis (issue #45, item 4), one case or more each.

Each test failed before its fix: a decimal split by a space after its point read as its last digits, a list
marker checked as a number, a short form of a name called another name, roles swapped inside one sentence
cleared as supported, and the language read from the first 400 characters only.
"""

from __future__ import annotations

import pytest

from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.labels import Decidable, Label, Policy
from hallumeasure.core.language import outside, unknown
from hallumeasure.core.types import Sample
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.judges.offline.context import split_context
from hallumeasure.judges.offline.extractor import is_unevaluatable, without_list_marker
from hallumeasure.judges.offline.roles import role_swap
from hallumeasure.judges.offline.tokens import short_form
from hallumeasure.judges.offline.values import quantities

JUDGE = OfflineJudge()


def _judge(context: str, response: str):
    sample = Sample(id="s", context=context, response=response)
    claims = OfflineExtractor().claims(sample)
    judgement = JUDGE.judge_now(sample, claims)
    result = summarise_response(
        sample, claims, judgement.verdicts, Policy(), score=judgement.score, decidable=judgement.decidable
    )
    return claims, judgement, result


# --- a decimal split by a space after its point --------------------------------------------------------------

TURNOUT = "Turnout in the city was 98. 7 per cent, officials said on Monday."


def test_a_decimal_split_after_its_point_is_one_number() -> None:
    found = quantities(TURNOUT)
    assert [(q.value, q.percent) for q in found] == [(98.7, True)]
    assert found[0].text == "98. 7 per cent"
    assert [q.value for q in quantities("Sales rose to 4. 5 million units.")] == [4_500_000]


def test_the_split_decimal_is_no_sentence_end_but_a_year_before_a_sentence_still_is() -> None:
    assert split_context(TURNOUT) == [TURNOUT]
    assert split_context("It opened in 1998. 7 people attended.") == ["It opened in 1998.", "7 people attended."]


def test_the_split_share_is_held_against_the_claim_as_98_7() -> None:
    _, judgement, _ = _judge(TURNOUT, "Turnout was 7 per cent.")
    (verdict,) = judgement.verdicts
    assert verdict.label is Label.CONTRADICTED and "98. 7 per cent" in (verdict.label_reason or "")
    _, judgement, _ = _judge(TURNOUT, "Turnout in the city was 98.7 per cent, officials said on Monday.")
    (verdict,) = judgement.verdicts
    assert verdict.label is Label.SUPPORTED and verdict.confident


# --- list markers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("marker", ["3.", "(2)", "12)", "b)", "iv."])
def test_a_bare_list_marker_is_nothing_to_check(marker: str) -> None:
    assert is_unevaluatable(marker)


def test_a_list_marker_is_no_number_of_its_claim() -> None:
    assert without_list_marker("3. The bridge opened in 1998.") == "The bridge opened in 1998."
    assert without_list_marker("A. Smith won the race.") == "A. Smith won the race."  # an initial, not a marker
    context = "The bridge opened in 1998 after four years of work. It carries 40,000 cars a day."
    _, judgement, result = _judge(context, "3. The bridge opened in 1998.\n4. It carries 40,000 cars a day.")
    assert all(v.label in (Label.SUPPORTED, Label.UNEVALUATABLE) for v in judgement.verdicts)
    assert not any("says 3" in (v.label_reason or "") or "says 4" in (v.label_reason or "") for v in judgement.verdicts)
    assert result.hallucinated is False


# --- short forms of names -------------------------------------------------------------------------------------


def test_short_forms_of_names() -> None:
    assert short_form("West Brom", "West Bromwich Albion")
    assert short_form("Man Utd", "Manchester United")
    assert short_form("Barca", "Barcelona")
    assert short_form("UN", "United Nations")
    assert not short_form("Anna", "Maria") and not short_form("Mark", "Marcus") and not short_form("Chelsea", "Arsenal")


@pytest.mark.parametrize(
    ("context", "response"),
    [
        (
            "The striker joined West Bromwich Albion in 2015 from Swansea City.",
            "The striker joined West Brom in 2015.",
        ),
        ("Manchester United signed the player in July.", "Man Utd signed the player."),
        ("Lionel Messi scored for Barcelona in the second half.", "Messi scored for Barca."),
    ],
)
def test_a_short_form_of_a_name_is_not_called_contradicted(context: str, response: str) -> None:
    _, judgement, _ = _judge(context, response)
    (verdict,) = judgement.verdicts
    assert not (verdict.confident and verdict.label in (Label.CONTRADICTED, Label.ABSENT)), verdict.label_reason


def test_another_name_is_still_contradicted() -> None:
    context = "Manchester United signed the player in July."
    _, judgement, _ = _judge(context, "Manchester City signed the player in July.")
    (verdict,) = judgement.verdicts
    assert verdict.label is Label.CONTRADICTED and verdict.confident


# --- roles swapped inside one sentence ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("context", "response"),
    [
        ("Italian cuisine was influenced by French cuisine.", "French cuisine was influenced by Italian cuisine."),
        ("Italian cuisine is influenced by French.", "French cuisine was influenced by Italian."),
        ("Arsenal beat Chelsea on Sunday.", "Chelsea beat Arsenal on Sunday."),
    ],
)
def test_swapped_roles_are_never_cleared(context: str, response: str) -> None:
    _, judgement, result = _judge(context, response)
    (verdict,) = judgement.verdicts
    assert not (verdict.label is Label.SUPPORTED and verdict.confident)
    assert "the other way round" in (verdict.label_reason or "") or verdict.label is not Label.SUPPORTED
    assert not (result.decided and result.hallucinated is False)


@pytest.mark.parametrize(
    ("claim", "sentence"),
    [
        ("Italian cuisine influenced French cuisine.", "French cuisine was influenced by Italian cuisine."),  # voice
        ("Chelsea met Arsenal.", "Arsenal met Chelsea."),  # the same both ways round
        ("We sell apples, pears and plums.", "We sell plums, pears and apples."),  # a list
        ("The company said profits rose.", "Profits rose, the company said."),
    ],
)
def test_a_turned_round_restatement_is_no_swap(claim: str, sentence: str) -> None:
    assert role_swap(claim, sentence) is None


def test_the_unswapped_sentence_is_still_confidently_supported() -> None:
    context = "Italian cuisine was influenced by French cuisine."
    _, judgement, _ = _judge(context, "Italian cuisine was influenced by French cuisine.")
    (verdict,) = judgement.verdicts
    assert verdict.label is Label.SUPPORTED and verdict.confident


# --- language over the whole text; short texts unknown ---------------------------------------------------------

ENGLISH_OPENING = (
    "The council said on Tuesday that the new bridge would open in March. It has been under construction for "
    "three years, and the cost of the work has risen from 40 million to 52 million euros. Residents who live near "
    "the river have complained about the noise, which the builders say will end with the last stage of the work. "
    "The bridge will connect the old town with the harbour district and will carry trams as well as cars. "
)
GERMAN_REST = (
    "Der Stadtrat hat am Dienstag mitgeteilt, dass die neue Brücke im März eröffnet wird. Sie wird seit drei "
    "Jahren gebaut, und die Kosten sind von 40 auf 52 Millionen Euro gestiegen. Was die Anwohner am Fluss stört, "
    "ist der Lärm, der mit dem letzten Bauabschnitt enden soll. Die Brücke ist 300 Meter lang."
)


def test_a_source_that_goes_on_in_german_is_outside_english() -> None:
    assert len(ENGLISH_OPENING) > 400
    found = outside(ENGLISH_OPENING + GERMAN_REST)
    assert found is not None and found.code == "de"
    assert outside(ENGLISH_OPENING) is None


@pytest.mark.parametrize("response", ["The bridge is 300 metres long.", "The bridge is 500 metres long."])
def test_a_mixed_source_is_never_decided(response: str) -> None:
    _, judgement, result = _judge(ENGLISH_OPENING + GERMAN_REST, response)
    assert judgement.decidable is Decidable.NEITHER and result.decided is False
    assert all(not v.confident and "German (de)" in (v.label_reason or "") for v in judgement.verdicts)


@pytest.mark.parametrize(
    ("context", "response"),
    [
        ("Umsatz: 412 Millionen Euro.", "Umsatz: 412 Millionen Euro."),
        ("Revenue was 412 million euros in 2023, the company said.", "Umsatz: 412 Millionen Euro."),
    ],
)
def test_a_short_text_of_unknown_language_is_never_decided(context: str, response: str) -> None:
    _, judgement, result = _judge(context, response)
    assert judgement.decidable is Decidable.NEITHER and result.decided is False
    assert all(not v.confident and "too short to tell" in (v.label_reason or "") for v in judgement.verdicts)


def test_short_english_and_short_answers_copied_from_the_source_are_known() -> None:
    assert unknown("Umsatz: 412 Millionen Euro.")
    assert not unknown("Revenue was 412 million euros.")  # "was"
    assert not unknown("Paris.", "The capital of France is Paris.")  # copied from the source
    assert not unknown("1998.")  # no words at all: nothing to tell
    _, _, result = _judge("The capital of France is Paris.", "Paris.")
    assert result.decided is True
