"""Every offline signal on hand-written cases, including the tricky ones."""

from hallumeasure.judges.offline.context import index_context
from hallumeasure.judges.offline.signals import FEATURES, claim_signals, entities

CONTEXT = (
    "The town council approved a budget of 3.5 million euros on 14 March 2025. "
    "According to the mayor, the repairs will protect around 300 homes. "
    "The works may start in May. The bridge is not open to lorries. "
    "Ingrid Solberg chairs the council. Prices rose sharply last year."
)


def test_a_supported_paraphrase_has_no_alarm():
    s = claim_signals("The council approved a budget of 3,500,000 euros.", CONTEXT)
    assert s.values["recall_best"] == 1.0
    assert s.missing_numbers == [] and s.missing_entities == []
    assert s.values["negation_mismatch"] == 0 and s.values["date_conflict"] == 0
    assert s.differences == [] and s.opposites == []
    assert len(s.vector()) == len(FEATURES)


def test_a_changed_number_is_missing_conflicts_and_is_swapped_in_copied_text():
    s = claim_signals("The town council approved a budget of 5.3 million euros.", CONTEXT)
    assert s.missing_numbers == ["5.3 million"]
    assert s.conflicting_numbers == ["3.5 million"]
    assert "3.5 million euros" in s.best_sentence
    assert s.values["diff_number"] == 1
    kind, difference = s.typed_difference()
    assert kind == "number" and difference.claim_words == ("5.3",) and difference.context_words == ("3.5",)


def test_a_date_in_another_format_matches_and_a_wrong_one_conflicts():
    assert claim_signals("The budget was approved on 2025-03-14.", CONTEXT).conflicting_date is None
    assert claim_signals("The budget was approved on March 15, 2025.", CONTEXT).conflicting_date == (2025, 3, 15)


def test_names_absent_from_the_context_are_reported():
    s = claim_signals("Mayor Henrik Dahl approved the budget.", CONTEXT)
    assert s.missing_entities == ["Mayor Henrik Dahl"]
    assert claim_signals("Ms Solberg chairs the council.", CONTEXT).missing_entities == []  # surname is enough
    assert claim_signals("The town council's budget was approved.", CONTEXT).missing_entities == []


def test_a_capitalised_first_word_is_a_name_only_when_the_context_never_lowercases_it():
    index = index_context("Food prices rose in the council area. Delhi is large.")
    assert entities("Prices rose.", index) == []
    assert entities("Mumbai", index) == ["Mumbai"]
    assert entities("The Beatles played in Hamburg.", index) == ["Beatles", "Hamburg"]


def test_a_name_from_elsewhere_in_the_context_is_displaced():
    s = claim_signals("Ingrid Solberg protects around 300 homes.", CONTEXT)
    assert s.missing_entities == [] and s.displaced_entities == ["Ingrid Solberg"]
    assert s.values["entity_support"] < 0.5


def test_negation_mismatch():
    assert claim_signals("The bridge is open to lorries.", CONTEXT).values["negation_mismatch"] == 1
    assert claim_signals("The bridge is not open to lorries.", CONTEXT).values["negation_mismatch"] == 0
    assert claim_signals("The bridge isn't open to lorries.", CONTEXT).values["negation_mismatch"] == 0


def test_opposites_against_the_closest_sentences():
    s = claim_signals("Prices fell sharply last year.", CONTEXT)
    assert s.values["antonym_conflict"] >= 1 and ("fall", "rise") in s.opposites
    assert claim_signals("Prices rose sharply last year.", CONTEXT).values["antonym_conflict"] == 0


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


def test_a_swapped_member_of_a_closed_set_is_found_even_in_reworded_text():
    context = "Andrew Tate and his brother Tristan were held for another 30 days by the court."
    s = claim_signals("The court kept Andrew Tate and his wife in detention.", context)
    assert s.swaps == [("wife", "brother")] and s.values["exclusive_conflict"] == 1
    same = claim_signals("The court kept Andrew Tate and his brother in detention.", context)
    assert same.swaps == [] and same.values["exclusive_conflict"] == 0


def test_a_restating_negation_is_not_a_negation_mismatch():
    context = "On weekdays the library opens at 8 a.m. Weekend hours stay the same."
    assert claim_signals("Weekend hours do not change.", context).values["negation_mismatch"] == 0
    assert claim_signals("Weekend hours are not the same.", context).values["negation_mismatch"] == 1
