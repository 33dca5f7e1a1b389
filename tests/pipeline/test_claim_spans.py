"""Claim spans are checked against the claim's text: the model's source sentence is a hint, not the answer."""

from hallumeasure.core.types import Sample
from hallumeasure.judges.llm.extract import claim_spans, make_claims

RESPONSE = "The sky over Lisbon was clear on Monday. The harbour reopened at noon after the storm."
FIRST, SECOND = RESPONSE[:40], RESPONSE[41:]


def _text(spans) -> str:
    return " | ".join(RESPONSE[s.start : s.end] for s in spans)


def test_a_claim_over_the_whole_response_is_not_pinned_to_the_sentence_the_model_named():
    # The defect of issue #19: a claim restating the whole response got a span over its second half.
    assert _text(claim_spans(RESPONSE, SECOND, RESPONSE)) == RESPONSE


def test_a_matching_source_sentence_gives_the_span_of_a_decontextualised_claim():
    claim = "The Lisbon harbour reopened at noon after the storm."
    assert _text(claim_spans(claim, SECOND, RESPONSE)) == SECOND


def test_a_source_sentence_about_something_else_is_replaced_by_where_the_claim_is():
    claim = "The harbour reopened at noon."
    # located from the claim's own words, which the response holds word for word (the full stop aside)
    assert _text(claim_spans(claim, FIRST, RESPONSE)) == "The harbour reopened at noon"


def test_a_claim_found_nowhere_gets_no_span_even_with_a_source_sentence():
    assert claim_spans("Porto's trams run all night on weekends.", FIRST, RESPONSE) == ()


def test_make_claims_uses_the_check():
    sample = Sample(id="s1", context="ctx", response=RESPONSE)
    (whole, harbour) = make_claims(sample, [(RESPONSE, SECOND), ("The harbour reopened at noon.", FIRST)])
    assert _text(whole.spans) == RESPONSE and _text(harbour.spans) == "The harbour reopened at noon"
    assert (whole.id, harbour.id) == ("s1:c0", "s1:c1")
