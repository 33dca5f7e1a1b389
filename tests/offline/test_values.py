"""Numbers and dates written in different ways compare equal; different ones do not."""

import pytest

from hallumeasure.offline.values import (
    date_conflict,
    dates,
    format_date,
    has_value,
    quantities,
    same_value,
)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("3.5 million", "3,500,000"),
        ("$1.2bn", "1,200,000,000 dollars"),
        ("five percent", "5%"),
        ("5 per cent", "5%"),
        ("twenty-two", "22"),
        ("2 thousand", "2,000"),
        ("€4.2m", "4,200,000 euros"),
    ],
)
def test_same_number_written_differently(a, b):
    (x,), (y,) = quantities(a), quantities(b)
    assert same_value(x.value, y.value)


def test_different_numbers_differ_and_percent_is_kept():
    (q,) = quantities("up 12 percent")
    assert q.percent and q.value == 12
    assert not has_value(quantities("42 km")[0], quantities("24 km"))
    assert has_value(quantities("3,500,000 people")[0], quantities("about 3.5 million people"))


def test_metres_are_not_millions_and_one_is_not_counted():
    assert [q.value for q in quantities("a 5 m wall")] == []
    assert quantities("one of them") == []


@pytest.mark.parametrize(
    "text",
    [
        "on 2025-03-14",
        "on March 14th, 2025",
        "on 14 March 2025",
        "on 3/14/2025",
        "on Mar. 14, 2025",
        "on the 14th of March 2025",
    ],
)
def test_dates_in_other_formats_are_the_same_date(text):
    assert (2025, 3, 14) in dates(text)


def test_month_only_dates_and_may_the_verb():
    assert (2026, 5, 0) in dates("in May 2026")
    assert dates("prices may 5 times rise") == set()


def test_date_conflicts():
    context = dates("The vote was held on 14 March 2025.")
    assert date_conflict(dates("on 2025-03-14"), context) is None
    assert date_conflict(dates("in March 2025"), context) is None  # less precise, not wrong
    assert date_conflict(dates("on March 15, 2025"), context) == (2025, 3, 15)
    assert date_conflict(dates("in April 2025"), context) == (2025, 4, 0)
    assert format_date((2025, 3, 15)) == "15 March 2025"
