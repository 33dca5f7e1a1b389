"""Every offline signal on hand-written cases, including the tricky ones."""

import pytest

from hallumeasure.offline.signals import claim_signals, dates, quantities, same_value, stem

CONTEXT = (
    "The town council approved a budget of 3.5 million euros on 14 March 2025. "
    "According to the mayor, the repairs will protect around 300 homes. "
    "The works may start in May. The bridge is not open to lorries."
)


def values(text):
    return sorted(q.value for q in quantities(text))


@pytest.mark.parametrize(
    "a, b",
    [
        ("3.5 million", "3,500,000"),
        ("$1.2bn", "1,200,000,000 dollars"),
        ("five percent", "5%"),
        ("twenty-two", "22"),
        ("2 thousand", "2,000"),
    ],
)
def test_same_number_written_differently(a, b):
    (x,), (y,) = quantities(a), quantities(b)
    assert same_value(x.value, y.value)


def test_percent_is_kept_apart_from_plain_numbers():
    (q,) = quantities("up 12 percent")
    assert q.percent and q.value == 12


def test_dates_in_other_formats_are_the_same_date():
    assert (2025, 3, 14) in dates("on 2025-03-14")
    assert (2025, 3, 14) in dates("on March 14th, 2025")
    assert (2025, 3, 14) in dates("on 14 March 2025")
    assert (2025, 3, 14) in dates("on 3/14/2025")
    assert (2026, 5, 0) in dates("in May 2026")


def test_stemmer_matches_inflections():
    assert stem("approved") == stem("approves") == stem("approve")
    assert stem("repairs") == stem("repair") and stem("studies") == stem("study")


def test_a_supported_paraphrase_has_no_alarm():
    s = claim_signals("The council approved a budget of 3,500,000 euros.", CONTEXT)
    assert s.values["recall_best"] == 1.0
    assert s.missing_numbers == [] and s.missing_entities == []
    assert s.values["negation_mismatch"] == 0 and s.values["date_conflict"] == 0


def test_a_changed_number_is_missing_and_conflicts_with_the_aligned_sentence():
    s = claim_signals("The town council approved a budget of 5.3 million euros.", CONTEXT)
    assert s.missing_numbers == ["5.3 million"]
    assert s.conflicting_numbers == ["3.5 million"]
    assert "3.5 million euros" in s.best_sentence


def test_a_date_in_another_format_matches_and_a_wrong_one_conflicts():
    assert claim_signals("The budget was approved on 2025-03-14.", CONTEXT).conflicting_date is None
    assert claim_signals("The budget was approved on March 15, 2025.", CONTEXT).conflicting_date == (2025, 3, 15)


def test_a_name_absent_from_the_context_is_reported():
    s = claim_signals("Mayor Ingrid Solberg approved the budget.", CONTEXT)
    assert s.missing_entities == ["Mayor Ingrid Solberg"]
    assert claim_signals("The town council's budget was approved.", CONTEXT).missing_entities == []


def test_negation_mismatch():
    assert claim_signals("The bridge is open to lorries.", CONTEXT).values["negation_mismatch"] == 1
    assert claim_signals("The bridge is not open to lorries.", CONTEXT).values["negation_mismatch"] == 0


def test_intensifiers_and_hedges():
    strong = claim_signals("The repairs will completely protect around 300 homes.", CONTEXT)
    assert strong.novel_intensifiers == ["completely"]
    certain = claim_signals("The works will start in May.", CONTEXT)
    assert certain.values["hedge_dropped"] == 1
    hedged = claim_signals("The works may start in May.", CONTEXT)
    assert hedged.values["hedge_dropped"] == 0


def test_dropped_attribution():
    s = claim_signals("The repairs will protect around 300 homes.", CONTEXT)
    assert s.values["attribution_dropped"] == 1 and s.attribution_word == "according"
    kept = claim_signals("According to the mayor, the repairs will protect around 300 homes.", CONTEXT)
    assert kept.values["attribution_dropped"] == 0
