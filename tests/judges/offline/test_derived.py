"""Derived numbers (judges/offline/derived.py): a restated number is no confident conflict; a changed one is.

Cases are new (not the dev restatements): each mechanism is checked on a faithful claim, which must not be
confidently unsupported, and on a changed twin of the same shape, which must stay so.
"""

from __future__ import annotations

import pytest
from testdata import load_script

from hallumeasure.core.labels import LABELS_WITH_SUBTYPE
from hallumeasure.core.types import Sample
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.judges.offline.derived import bound_of, derivable, explained_numbers, source_numbers
from hallumeasure.judges.offline.slots import read_values
from tests.judges.offline.contrast.dev_restatements import pairs as restatements

_MILL = (
    "The Corran mill opened in 1874 and shut in 1931. It ground 220 tonnes of wheat and 80 tonnes of barley a "
    "year. The mill employed 36 people, 12 of them women. Its wheel is 6.4 metres across. Visitors can tour it "
    "from Tuesday to Friday between 10 a.m. and 4 p.m. Owner Hugh Barr said repairs cost a third of the budget."
)
_POLL = (
    "In the Wexley poll of 1,600 voters, 35% backed the new park and 55% opposed it. Support was 20 points "
    "higher among voters under 25. The council spent £90,000 on the survey, twice the usual amount."
)


def _verdicts(claim: str, context: str):
    sample = Sample(id="t", response=claim, context=context)
    return OfflineJudge().judge_now(sample, OfflineExtractor().claims(sample)).verdicts


def _confidently_unsupported(claim: str, context: str) -> bool:
    return any(v.label in LABELS_WITH_SUBTYPE and v.confident for v in _verdicts(claim, context))


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        ("The Corran mill was in business for 57 years.", _MILL),  # a span of two years
        ("The mill ground 300 tonnes of grain a year.", _MILL),  # a sum of like quantities
        ("The mill ground 140 tonnes more wheat than barley each year.", _MILL),  # a difference
        ("The mill employed 24 people besides its 12 women.", _MILL),  # the rest of a group
        ("The Corran mill's wheel is 640 centimetres across.", _MILL),  # a unit change
        ("Tours of the Corran mill last six hours.", _MILL),  # two clock times
        ("Tours of the Corran mill run on four days a week.", _MILL),  # a span of weekdays
        ("About 560 of the 1,600 voters polled backed the new park.", _POLL),  # a share of a count
        ("The park was opposed by 20 percentage points more voters than backed it.", _POLL),  # points
        ("The council usually spends £45,000 on such a survey.", _POLL),  # a multiple word
        ("The Corran mill ran for more than 50 years.", _MILL),  # a bound that holds
    ],
)
def test_a_number_the_sources_numbers_give_is_no_confident_conflict(claim, context):
    assert not _confidently_unsupported(claim, context), _verdicts(claim, context)


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        ("The Corran mill was in business for 75 years.", _MILL),
        ("The mill ground 340 tonnes of grain a year.", _MILL),
        ("The mill employed 48 people.", _MILL),
        ("The mill's wheel is 8.2 metres across.", _MILL),
        ("In the Wexley poll of 2,400 voters, 35% backed the new park.", _POLL),
        ("The council spent £120,000 on the survey.", _POLL),
        ("The Corran mill ran for more than 70 years.", _MILL),  # a bound the two years break
    ],
)
def test_a_changed_number_stays_a_confident_conflict(claim, context):
    assert _confidently_unsupported(claim, context), _verdicts(claim, context)


def test_a_sum_combines_like_quantities_only():
    pool = source_numbers(["The farm keeps 40 cows, 25 of them calves, and 30 sheep. It has 3 barns."])
    cows = next(v for v in read_values("70 cows") if v.kind == "number")
    assert derivable(15.0, "number", frozenset(), pool)  # 40 - 25: the rest of a group
    assert derivable(10.0, "number", frozenset(), pool)  # 40 cows - 30 sheep: a difference may drop a unit
    assert not derivable(float(cows.norm), cows.kind, cows.unit, pool)  # 40 cows and 30 sheep make no 70 cows
    assert not derivable(43.0, "money", frozenset(), pool)  # counts never make a price


def test_unit_changes_need_another_unit():
    pool = source_numbers(["The trail is 3.5 kilometres long."])
    metres = next(v for v in read_values("3,500 metres") if v.kind == "number")
    km = next(v for v in read_values("3,500 kilometres") if v.kind == "number")
    assert derivable(float(metres.norm), metres.kind, metres.unit, pool)
    assert not derivable(float(km.norm), km.kind, km.unit, pool)  # the same unit a thousand times over


def test_words_of_fractions_and_clock_times_are_unreliable_readings():
    context = ["The tram runs every 20 minutes from 6 a.m."]
    assert explained_numbers("The first tram runs at six in the morning.", context)
    assert explained_numbers("A tram leaves every two thirds of an hour.", context)
    assert not explained_numbers("The tram runs every 25 minutes.", context)


def test_bounds_are_read_by_side():
    def first(claim: str):
        return bound_of(next(v for v in read_values(claim) if v.kind == "number"), claim)

    assert first("It has more than 40 rooms.") == ">"
    assert first("It has at least 40 rooms.") == ">"
    assert first("It has fewer than 40 rooms.") == "<"
    assert first("It has nearly 40 rooms.") == "~<"
    assert first("It has 40 rooms.") is None


@pytest.mark.parametrize(
    "claim",
    ["Two of the gym's trainers work part-time.", "Seven trainers work at the gym."],
)
def test_number_words_are_not_absent_names(claim):
    context = (
        "The Elm Road gym opened in 2016. It has 7 trainers, 2 of them part-time. About 400 members use it each week."
    )
    assert not _confidently_unsupported(claim, context), _verdicts(claim, context)


def _frozen_suite():
    return load_script("benchmarks/frozen_suite.py")


def test_dev_restatements_meet_the_wrong_bound_and_keep_changed_decisions():
    result = _frozen_suite().evaluate(("offline",), restatements())["offline"]
    assert len(restatements()) >= 150
    assert result["overall"]["confidently_wrong"] <= 0.05
    assert result["faithful"]["confidently_wrong"] <= 0.05
    assert result["changed"]["decided"] >= 0.5
    assert result["changed"]["accuracy_decided"] >= 0.9


_PHARMACY = (
    "The Brook Street pharmacy opened on 04/09/2019. It opens at 8 a.m. and closes at 6 p.m., Monday to Friday. "
    "Its founder, Lena Ortiz, trained in 1982."
)


@pytest.mark.parametrize(
    "claim",
    [
        "The Brook Street pharmacy opened on 09/04/2019.",  # the same date, day and month read the other way
        "The Brook Street pharmacy is closed on Sundays.",  # days the source leaves out
        "Lena Ortiz trained in the early 1980s.",  # a decade, not the year 1980
    ],
)
def test_dates_that_read_two_ways_and_days_left_out_are_no_confident_conflict(claim):
    assert not _confidently_unsupported(claim, _PHARMACY), _verdicts(claim, _PHARMACY)


@pytest.mark.parametrize(
    "claim",
    [
        "The Brook Street pharmacy opened on 23/09/2019.",  # one reading only, and another day
        "The Brook Street pharmacy opens at 8 a.m. on Saturdays.",
    ],
)
def test_a_changed_date_or_day_stays_a_confident_conflict(claim):
    assert _confidently_unsupported(claim, _PHARMACY), _verdicts(claim, _PHARMACY)
