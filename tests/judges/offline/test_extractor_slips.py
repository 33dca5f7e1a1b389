"""The offline extractor's slips from issue #13, each pinned by a test."""

from __future__ import annotations

from hallumeasure.judges.offline import split_claims


def claims(text: str) -> list[str]:
    return [t for t, _ in split_claims(text)]


def test_a_second_verb_gets_the_leading_name_as_subject_not_a_garbled_merge():
    got = claims("Breathex cut severe asthma attacks by 31 percent and is safe for long-term use.")
    assert got == ["Breathex cut severe asthma attacks by 31 percent", "Breathex is safe for long-term use."]
    assert not any("asthma is" in c for c in got)


def test_a_fragment_after_and_gets_its_subject_even_after_a_leading_time_phrase():
    got = claims("From next Monday the Kessler Public Library opens at 8 a.m. on weekdays and closes at 9 p.m.")
    assert got[-1] == "The Kessler Public Library closes at 9 p.m."
    assert "Closes at 9 p.m." not in got


def test_a_verb_initial_piece_without_a_known_subject_stays_with_its_clause():
    got = claims("Seen from the hills at dawn and visited by many, it glows.")
    assert all(not c.lower().startswith(("visited", "glows")) for c in got)
    assert not any("Seen visited" in c for c in got)  # no subject is made up from a participle


def test_it_is_the_thing_the_previous_sentence_introduced_not_the_company():
    got = claims(
        "Voltra Labs announced a solid-state cell storing 410 watt-hours per kilogram. "
        "It kept 90 percent of its capacity after 800 cycles."
    )
    assert got[1] == "The solid-state cell kept 90 percent of its capacity after 800 cycles."


def test_it_still_means_the_subject_when_nothing_new_was_introduced():
    assert (
        claims("The bridge opened in 1998. It carries 20,000 cars a day.")[1] == "The bridge carries 20,000 cars a day."
    )


def test_a_person_pronoun_never_becomes_a_thing():
    got = claims("Mayor Ingrid Solberg opened a new bridge. She said it took four years.")
    assert got[1].startswith(("Mayor Ingrid Solberg", "She"))


# Issue #24's slips, each fixed by a general rule.


def test_a_bare_answer_word_is_unevaluatable_not_a_claim():
    from hallumeasure.judges.offline.extractor import is_unevaluatable

    for answer in ("Yes.", "No.", "Yes!", "Correct."):
        assert is_unevaluatable(answer), answer
    assert not is_unevaluatable("No trains run on Sundays.")


def test_they_never_stands_for_one_capitalised_word_that_opened_a_sentence():
    got = claims("Electric scooters are cheap to run. They need a charge every night.")
    assert got[1] in ("They need a charge every night.", "Electric scooters need a charge every night.")
    got = claims("Compact wind turbines suit flat roofs. They cost less than solar panels.")
    assert not got[1].startswith("Compact cost")
    assert claims("Voltra Labs grew fast. They hired 40 people.")[1] == "Voltra Labs hired 40 people."


def test_a_list_is_never_split_at_its_and():
    assert claims("If it rains, roads, bridges and tunnels close and buses stop.") == [
        "If it rains, roads, bridges and tunnels close and buses stop."
    ]
    got = claims("The firm sells apples, pears and plums and employs 40 people.")
    assert got == ["The firm sells apples, pears and plums", "The firm employs 40 people."]


def test_a_unit_letter_after_a_number_ends_its_sentence():
    got = claims("Water boils at 100 C. At altitude it boils sooner.")
    assert got[0] == "Water boils at 100 C."
    assert len(got) == 2


def test_a_numbered_name_keeps_its_number_when_it_replaces_a_pronoun():
    assert claims("Route 66 opened in 1926. It runs through eight states.")[1] == "Route 66 runs through eight states."
    assert claims("About 60 percent of homes have one. They cost less.")[1] == "They cost less."


def test_it_keeps_the_head_noun_of_a_named_thing():
    # "The Zephyr" names the bridge only with its noun: "The Zephyr opened in 2003" lost what opened
    assert claims("The Zephyr bridge is 2.4 km long. It opened in 2003.") == [
        "The Zephyr bridge is 2.4 km long.",
        "The Zephyr bridge opened in 2003.",
    ]
    assert claims("The Golden Gate suspension bridge was built in 1937. Its span is 1280 m.")[1] == (
        "The Golden Gate suspension bridge's span is 1280 m."
    )
    # a name followed by its verb keeps the name alone
    assert claims("The Nile flows north. It is 6,650 km long.")[1] == "The Nile is 6,650 km long."
