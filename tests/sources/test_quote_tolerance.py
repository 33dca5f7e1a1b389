"""Evidence quotes are matched tolerant of what models change at a quote's edges (trailing
punctuation, quote marks, spacing), never of changed words or numbers."""

import pytest

from hallumeasure.sources.evidence import find_quote

PASSAGE = "The fund protected around 300 homes from winter storms. It cost 3.5 million, said \u201cthe mayor\u201d."


@pytest.mark.parametrize(
    "quote",
    [
        "around 300 homes.",  # a period where the passage's sentence goes on
        "\u2026around 300 homes.",
        "\u201caround 300 homes.\u201d",
        "'around   300 homes,'",
        "It cost 3.5 million.",
        'said "the mayor".',
        "protected around 300 homes ... winter storms.",
    ],
)
def test_edge_punctuation_quote_marks_and_spacing_may_differ(quote):
    found = find_quote(quote, PASSAGE)
    assert found is not None
    start, end = found
    core = quote.strip("\u2026'\"\u201c\u201d.,").split(" ... ")[0].split()[0]
    assert PASSAGE[start:end].startswith(core)


@pytest.mark.parametrize(
    "quote",
    [
        "around 30 homes.",  # a changed number
        "around 300 home.",  # a changed word
        "It cost 3.",  # a number cut inside "3.5"
        "cost 35 million",
        "round 300 homes",  # starts inside a word
        "around 300 houses.",
    ],
)
def test_changed_words_and_numbers_are_never_matched(quote):
    assert find_quote(quote, PASSAGE) is None
