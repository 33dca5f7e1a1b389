"""The offline judge's unsupported spans cover the words it finds wrong, not the whole claim (#45 item 3)."""

from __future__ import annotations

import pytest

from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.labels import Policy
from hallumeasure.core.spans import unsupported_spans
from hallumeasure.core.types import Sample
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge

BRIDGE = "The Storebaelt bridge is 6.8 km long. It opened in 1998 after four years of work, the mayor said."


def _spans(context: str, response: str) -> list[str]:
    sample = Sample(id="s", context=context, response=response)
    claims = OfflineExtractor().claims(sample)
    judgement = OfflineJudge().judge_now(sample, claims)
    summarise_response(sample, claims, judgement.verdicts, Policy(), score=judgement.score)
    return [s.text for s in unsupported_spans(response, claims, judgement.verdicts)]


@pytest.mark.parametrize(
    ("response", "wrong"),
    [
        ("The Storebaelt bridge is 42 km long.", ["42 km"]),  # a number
        ("The Storebaelt bridge opened in 2004 after four years of work.", ["2004"]),  # a year
        ("The Storebaelt bridge did not open after four years of work.", ["did not open"]),  # a negation
        ("The Oresund bridge is 6.8 km long.", ["Oresund"]),  # a name
    ],
)
def test_a_known_failing_value_is_the_span(response: str, wrong: list[str]) -> None:
    assert _spans(BRIDGE, response) == wrong


def test_a_faithful_claim_has_no_span() -> None:
    assert _spans(BRIDGE, "The Storebaelt bridge is 6.8 km long.") == []
