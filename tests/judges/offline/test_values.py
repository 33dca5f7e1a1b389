"""Numbers and dates written in different ways compare equal; different ones do not."""

import pytest

from hallumeasure.judges.offline.values import (
    clock_times,
    date_conflict,
    dates,
    format_date,
    has_value,
    plain_letters,
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


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("Doors open at 9 a.m. sharp.", {540}),
        ("It closes at 9:30pm.", {1290}),
        ("The bus leaves at 21:00.", {1260}),
        ("We meet at nine o'clock.", {540, 1260}),
        ("Lunch is at NOON.", {720}),
        ("Open until 9 p. m daily.", {1260}),
        ("Start at 7am.", {420}),
    ],
)
def test_clock_times_in_every_form_get_past_the_quick_test(text, minutes):
    (found,) = clock_times(text)
    assert found[1] == minutes


def test_numbers_without_a_time_have_no_clock_time():
    assert clock_times("The team of 12 won 3 games in 2019 at the Amsterdam program.") == ()


def test_numbers_in_digits_do_not_start_inside_another_number():
    assert [q.text for q in quantities("1,250 and 3.5 and .5 and 1.2.3 and x7")] == ["1,250", "3.5", "1.2", "7"]


def test_plain_letters_flags_the_letters_that_case_folding_adds():
    assert plain_letters("Twenty-two visitors came in March, café included.")
    assert not plain_letters("\u017fix visitors")  # a long s, which [a-z] matches when case is ignored
