"""The run-at-a-time normalisation (ASCII passages, and others whose case folding keeps one character for one) gives
exactly what the character-at-a-time one gives."""

from __future__ import annotations

import random

from hallumeasure.sources.evidence import find_quote, normalise

#: The folding table of evidence.py, written out again (a private name is not imported across modules).
FOLD = str.maketrans({"\u2019": "'", "`": "'", "\u00a0": " ", "\u2014": "-"})


def reference(text: str) -> tuple[str, list[int]]:
    """The definition: fold, casefold, one space per whitespace run at its first index, no edge spaces."""
    out: list[str] = []
    where: list[int] = []
    space = False
    for index, char in enumerate(text.translate(FOLD)):
        if char.isspace():
            if out and not space:
                out.append(" ")
                where.append(index)
            space = True
            continue
        space = False
        for folded in char.casefold():
            out.append(folded)
            where.append(index)
    if out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


def test_matches_the_definition_on_random_text() -> None:
    rng = random.Random(13)
    alphabet = "ab C.D,\n\t\r\x0b\x0c\x1c\x1f\x85\u2028\u3000  9`\u2019\u00a0\u2014xéßΣσςİıﬁ"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert normalise(text) == reference(text), repr(text)


def test_quotes_are_found_at_the_same_offsets() -> None:
    passage = "  The council  voted\n7 to 2.  It holds 120,000 books.  "
    assert find_quote("voted 7 to 2", passage) == (15, 27)
    assert find_quote("It holds 120,000 books.", passage) == (30, 53)
