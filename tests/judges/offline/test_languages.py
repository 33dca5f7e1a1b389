"""The keyless judges never decide on a language they were not built for, and say why."""

from __future__ import annotations

import pytest

from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.labels import Decidable, Policy
from hallumeasure.core.types import Sample
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge

GERMAN = (
    "Die Stadt Freiburg hat 4,2 Millionen Euro für den Ausbau der Stadtbibliothek bewilligt. "
    "Der Gemeinderat stimmte mit 30 zu 8 Stimmen für das Projekt."
)


def _run(context: str, response: str):
    sample = Sample(id="s", context=context, response=response)
    claims = OfflineExtractor().claims(sample)
    judgement = OfflineJudge().judge_now(sample, claims)
    return (
        claims,
        judgement,
        summarise_response(
            sample, claims, judgement.verdicts, Policy(), score=judgement.score, decidable=judgement.decidable
        ),
    )


def test_a_faithful_german_translation_is_never_confidently_wrong() -> None:
    claims, judgement, result = _run(GERMAN, "Freiburg bewilligte 4,2 Millionen Euro für die Stadtbibliothek.")
    assert claims and judgement.verdicts
    assert all(not v.confident for v in judgement.verdicts)
    assert all("German (de)" in (v.label_reason or "") for v in judgement.verdicts)
    assert judgement.decidable is Decidable.NEITHER and result.decided is False


@pytest.mark.parametrize(
    "context",
    ["The city of Freiburg approved 4.2 million euros to expand its library. The council voted 30 to 8.", GERMAN],
)
def test_an_other_language_on_either_side_is_enough(context: str) -> None:
    _, judgement, result = _run(context, "Der Gemeinderat stimmte mit 30 zu 8 Stimmen für das Projekt.")
    assert all(not v.confident for v in judgement.verdicts) and result.decided is False


def test_japanese_is_split_into_claims_and_left_undecided() -> None:
    context = "東京タワーは1958年に完成しました。高さは333メートルです。"
    claims, judgement, result = _run(context, "東京タワーは1958年に完成しました。高さは333メートルです。")
    assert len(claims) == 2
    assert all("Japanese (ja)" in (v.label_reason or "") for v in judgement.verdicts)
    assert result.decided is False


def test_english_is_judged_as_before() -> None:
    context = "The Kessler Public Library holds 120,000 books. It opens at 9 a.m. on weekdays."
    _, judgement, _ = _run(context, "The Kessler Public Library holds 120,000 books.")
    assert all("keyless judges read English only" not in (v.label_reason or "") for v in judgement.verdicts)
