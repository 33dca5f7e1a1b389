"""Claim spans and unsupported spans: always inside the response, always holding the text they name."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hallumeasure.core.labels import Label, Policy, Subtype
from hallumeasure.core.spans import (
    TextSpan,
    align,
    aligned_words,
    bounded,
    covered,
    loose_match,
    unsupported_spans,
)
from hallumeasure.core.text import locate
from hallumeasure.core.types import Claim, ClaimVerdict, Span

RESPONSE = "The bridge opened in 1998. It carries 40,000 cars a day, the mayor said, and cost $2 billion."


def _text(spans: tuple[Span, ...], response: str = RESPONSE) -> str:
    return " | ".join(response[s.start : s.end] for s in spans)


def test_exact_then_loose_then_words():
    assert _text(align("It carries 40,000 cars a day", RESPONSE)) == "It carries 40,000 cars a day"
    assert _text(align("the BRIDGE   opened in 1998.", RESPONSE)) == "The bridge opened in 1998"
    # a paraphrase with the words reordered: the densest run of its words
    assert (
        _text(align("40,000 cars a day are carried by the bridge", RESPONSE))
        == "bridge opened in 1998. It carries 40,000 cars a day"
    )
    assert _text(align("The bridge cost 2 billion dollars.", RESPONSE)).endswith("cost $2 billion")


def test_a_claim_found_nowhere_says_so():
    assert align("Porto's trams run all night.", RESPONSE) == ()
    claim = Claim(
        id="s:c0",
        sample_id="s",
        index=0,
        text="Porto's trams run all night.",
        spans=align("Porto's trams run all night.", RESPONSE),
    )
    assert not claim.located


def test_case_folding_that_changes_length_keeps_offsets_right():
    # "İ".lower() is two characters: offsets from a lowered copy would point one character off.
    response = "İstanbul hosted it. Then Ankara did."
    (span,) = locate("then ankara did.", response)
    assert response[span.start : span.end] == "Then Ankara did"


def _verdict(cid: str, label: Label, subtype: Subtype | None = None, probability: float | None = None, **kw):
    return ClaimVerdict(claim_id=cid, label=label, subtype=subtype, probability=probability, judge="t", **kw)


def test_unsupported_spans_merge_overlaps_with_the_worst_label():
    claims = [
        Claim(id="c0", sample_id="s", index=0, text="a", spans=(Span(start=0, end=26),)),
        Claim(id="c1", sample_id="s", index=1, text="b", spans=(Span(start=27, end=55),)),
        Claim(id="c2", sample_id="s", index=2, text="c", spans=(Span(start=38, end=55),)),
        Claim(id="c3", sample_id="s", index=3, text="d", spans=(Span(start=73, end=93),)),
        Claim(id="c4", sample_id="s", index=4, text="e", spans=()),  # not located: adds nothing
    ]
    verdicts = [
        _verdict("c0", Label.SUPPORTED),
        _verdict("c1", Label.PARTIALLY_SUPPORTED, Subtype.HYPERBOLE, 0.6),
        _verdict("c2", Label.CONTRADICTED, Subtype.NUMBER, 0.9),
        _verdict("c3", Label.ABSENT, confident=False),
        _verdict("c4", Label.CONTRADICTED),
    ]
    spans = unsupported_spans(RESPONSE, claims, verdicts)
    assert [(s.text, s.label, s.subtype, s.confidence, s.claims) for s in spans] == [
        ("It carries 40,000 cars a day", Label.CONTRADICTED, Subtype.NUMBER, 0.9, (1, 2)),
        ("and cost $2 billion.", Label.ABSENT, None, 0.5, (3,)),
    ]
    # the policy decides what counts: partially supported claims only
    narrow = Policy(unsupported_labels=frozenset({Label.PARTIALLY_SUPPORTED}))
    assert [s.claims for s in unsupported_spans(RESPONSE, claims, verdicts, narrow)] == [(1,)]


def test_error_rows_and_spans_outside_the_response_add_nothing():
    claims = [Claim(id="c0", sample_id="s", index=0, text="a", spans=(Span(start=5, end=500),))]
    assert unsupported_spans(RESPONSE, claims, [_verdict("c0", Label.ABSENT)]) == []
    assert unsupported_spans(RESPONSE, claims, [ClaimVerdict(claim_id="c0", judge="t", error="boom")]) == []
    (kept,) = bounded(claims, RESPONSE)
    assert kept.spans == () and not kept.located


def test_a_text_span_must_hold_its_text():
    with pytest.raises(ValueError, match="exactly"):
        TextSpan(start=0, end=3, text="ab")


# --- properties -------------------------------------------------------------------------------------

texts = st.text(alphabet=st.sampled_from("abcXYZ İß ,.'\u2019\"\n1é"), max_size=60)


@settings(max_examples=300, deadline=None)
@given(fragment=texts, response=texts)
def test_aligned_spans_lie_inside_the_response(fragment, response):
    for finder in (align, loose_match, aligned_words, locate):
        for span in finder(fragment, response):
            assert 0 <= span.start < span.end <= len(response)


@settings(max_examples=200, deadline=None)
@given(response=texts, data=st.data())
def test_a_verbatim_fragment_is_found_exactly(response, data):
    start = data.draw(st.integers(0, len(response)))
    end = data.draw(st.integers(start, len(response)))
    fragment = response[start:end]
    if not fragment.strip():
        return
    (span,) = align(fragment, response)
    assert response[span.start : span.end] == fragment.strip()


@settings(max_examples=300, deadline=None)
@given(
    response=texts,
    raw=st.lists(st.tuples(st.integers(-5, 70), st.integers(-5, 70), st.sampled_from(list(Label))), max_size=8),
)
def test_unsupported_spans_are_disjoint_hold_their_text_and_cover_every_unsupported_claim(response, raw):
    claims, verdicts = [], []
    for i, (a, b, label) in enumerate(raw):
        spans = (Span(start=min(max(a, 0), max(b, 0)), end=max(a, b, 0)),)
        claims.append(Claim(id=f"c{i}", sample_id="s", index=i, text="x", spans=spans))
        verdicts.append(_verdict(f"c{i}", label))
    out = unsupported_spans(response, claims, verdicts)
    for span in out:
        assert response[span.start : span.end] == span.text and span.end > span.start
        assert not span.text[0].isspace() and not span.text[-1].isspace()
    assert all(a.end <= b.start for a, b in itertools.pairwise(out))
    wanted = set()
    for claim in bounded(claims, response):
        if Policy().is_unsupported(verdicts[claim.index].label):
            wanted |= covered(claim.spans)
    assert wanted <= covered(out)
    assert covered(out) <= {
        i for i in range(len(response)) if any(s.start <= i < s.end for c in claims for s in c.spans)
    }


def test_a_verdict_that_names_the_wrong_words_is_spanned_on_them():
    claims = [
        Claim(id="c0", sample_id="s", index=0, text="a", spans=(Span(start=0, end=26),)),
        Claim(id="c1", sample_id="s", index=1, text="b", spans=(Span(start=27, end=55),)),
        Claim(id="c2", sample_id="s", index=2, text="c", spans=(Span(start=73, end=93),)),
    ]
    verdicts = [
        _verdict("c0", Label.CONTRADICTED, Subtype.TEMPORAL, 0.9, focus=("1998",)),
        # matched ignoring case and the punctuation between words; a word found nowhere adds nothing
        _verdict("c1", Label.CONTRADICTED, Subtype.NUMBER, 0.9, focus=("40,000 CARS", "tonnes")),
        _verdict("c2", Label.ABSENT, focus=("euros",)),  # none found: the whole claim
    ]
    spans = unsupported_spans(RESPONSE, claims, verdicts)
    assert [(s.text, s.claims) for s in spans] == [
        ("1998", (0,)),
        ("40,000 cars", (1,)),
        ("and cost $2 billion.", (2,)),
    ]


def test_a_focus_word_inside_another_word_is_not_matched():
    claims = [Claim(id="c0", sample_id="s", index=0, text="a", spans=(Span(start=27, end=55),))]
    (span,) = unsupported_spans(RESPONSE, claims, [_verdict("c0", Label.ABSENT, focus=("car",))])
    assert span.text == "It carries 40,000 cars a day"
