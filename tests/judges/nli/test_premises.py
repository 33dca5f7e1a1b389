"""Premise selection for the NLI model: the best-overlapping context sentences, in document order."""

from hallumeasure.judges.nli.premises import best_sentences, hypothesis_sentences, premise_for

CONTEXT = (
    "The council met on Monday. Rain delayed the start of the match. "
    "The council approved the new budget for schools. Tickets sold out within an hour. "
    "The budget adds two million dollars for school repairs."
)


def test_best_sentences_are_the_overlapping_ones_in_document_order():
    found = best_sentences("The council approved two million dollars for school repairs.", CONTEXT, k=2)
    assert found == [
        "The council approved the new budget for schools.",
        "The budget adds two million dollars for school repairs.",
    ]


def test_a_short_context_is_kept_whole():
    assert best_sentences("Anything at all.", "One sentence. Two sentences.", k=3) == [
        "One sentence.",
        "Two sentences.",
    ]


def test_premise_joins_the_sentences_and_hypotheses_split_a_response():
    assert premise_for("Tickets sold out.", CONTEXT, k=1) == "Tickets sold out within an hour."
    assert hypothesis_sentences("It rained. The match was late.") == ["It rained.", "The match was late."]
