"""Claim numbers that a source gives without writing them: a sum, a difference, a ratio, a unit change.

A restatement may say "ten years" for "opened in 1990, closed in 2000", "42 tonnes of fruit" for
"30 tonnes of apples and 12 tonnes of pears", or "1,200 metres" for "1.2 kilometres". Word overlap
sees a number the source never gives; arithmetic on the source's own numbers finds it. A claim
number that such arithmetic reaches may be right or wrong (the words around it decide which), so a
keyless judge must not call it a clear conflict. Some number words are also read unreliably: "three
quarters of an hour", "three in the afternoon", "half past six" are a fraction and clock times, not
counts; a conflict resting on such a reading is no evidence either.

``explained_numbers`` tells whether every claim number the source lacks is of one of these kinds.
"""

from __future__ import annotations

import re
from itertools import combinations

from hallumeasure.judges.offline.slots import Value, read_values
from hallumeasure.judges.offline.tokens import words

#: Value kinds compared as plain quantities.
_NUMERIC = frozenset({"number", "share", "money", "year"})
#: Fraction and multiple words a source may give a quantity with ("cut by a quarter", "twice the estimate").
_FRACTIONS = {
    "half": 0.5,
    "halved": 0.5,
    "quarter": 0.25,
    "quarters": 0.25,
    "third": 1 / 3,
    "thirds": 1 / 3,
    "fifth": 0.2,
    "tenth": 0.1,
    "twice": 2.0,
    "double": 2.0,
    "doubled": 2.0,
    "triple": 3.0,
    "tripled": 3.0,
}
#: Words around a number that make it a fraction or a clock time rather than a count ("three quarters",
#: "three in the afternoon", "half past six", "six o'clock").
_AFTER = frozenset({"quarter", "quarters", "third", "thirds", "fifths", "tenths", "o'clock", "oclock"})
_AFTER_PHRASE = re.compile(r"^\s*(?:in the (?:morning|afternoon|evening)|at night)\b", re.IGNORECASE)
_BEFORE = frozenset({"past", "to", "quarter", "half"})
#: Unit changes: 1.2 km is 1,200 m, 2.5 million is 2,500 thousand, 0.25 is 25%.
_SCALES = (10.0, 100.0, 1000.0, 1_000_000.0)
#: Relative tolerance of a match; wider when the claim hedges its number ("about", "nearly", "just over").
_EXACT, _ROUGH = 1e-6, 0.1
APPROXIMATORS = frozenset(
    {"about", "around", "roughly", "nearly", "almost", "approximately", "some", "over", "under", "just", "close"}
)


def _quantities(values: list[Value]) -> list[float]:
    return [float(v.norm) for v in values if v.kind in _NUMERIC and isinstance(v.norm, int | float)]


def source_numbers(sentences: list[str]) -> list[float]:
    """Every quantity the source gives: its numbers, its fraction words, clock hours, and the length of a span of
    weekdays ("Monday to Saturday" is six days). A number given twice counts twice ("drew 2-2": four goals)."""
    out: list[float] = []
    for sentence in sentences:
        values = list(read_values(sentence, names=False))
        out += _quantities(values)
        for w in words(sentence):
            share = _FRACTIONS.get(w.lower())
            if share is not None:
                out += [share, share * 100]
        for v in values:
            if v.kind == "time" and isinstance(v.norm, frozenset):
                out += sorted(m / 60 for m in v.norm if isinstance(m, int | float))
        days = [min(v.norm) for v in values if v.kind == "days" and isinstance(v.norm, frozenset) and len(v.norm) == 1]
        out += [float((b - a) % 7 + 1) for a, b in zip(days, days[1:], strict=False)]
    return out


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-9)


def derivable(value: float, pool: list[float], rough: bool = False) -> bool:
    """Whether ``value`` is a source number in another unit, or the sum, difference, ratio or share of two."""
    tolerance = _ROUGH if rough else _EXACT
    numbers = sorted(pool)
    candidates = list(numbers)
    candidates += [n * k for n in numbers for k in _SCALES] + [n / k for n in numbers for k in _SCALES]
    for a, b in combinations(numbers, 2):
        candidates += [a + b, abs(a - b), a * b / 100]
        if a:
            candidates.append(b / a)
        if b:
            candidates.append(a / b)
        candidates += [a * b] if min(a, b) <= 3 else []  # "twice", "half": a multiple, not a product of counts
    return any(_close(value, c, tolerance) for c in candidates)


def unreliable_reading(v: Value, claim: str) -> bool:
    """Whether a claim number is written so that its reading as a count may be wrong (module doc)."""
    at = claim.find(v.text)
    if at < 0:
        return False
    before = words(claim[:at])
    after_text = claim[at + len(v.text) :]
    after = words(after_text)
    if after and after[0].lower() in _AFTER:
        return True
    if _AFTER_PHRASE.match(after_text):
        return True
    return bool(before) and before[-1].lower() in _BEFORE and not v.text[:1].isdigit()


def explained_numbers(claim: str, sentences: list[str]) -> bool:
    """Whether the claim has a number the source lacks and every such number is derivable from the source's
    numbers or read unreliably (module doc)."""
    pool = source_numbers(sentences)
    held = {(v.kind, v.norm) for s in sentences for v in read_values(s, names=False)}
    lower = [w.lower() for w in words(claim)]
    unheld = [v for v in read_values(claim, names=False) if v.kind in _NUMERIC and (v.kind, v.norm) not in held]
    if not unheld:
        return False
    for v in unheld:
        if unreliable_reading(v, claim):
            continue
        at = claim.find(v.text)
        near = {w.lower() for w in words(claim[:at])[-3:]} if at >= 0 else set()
        rough = bool(near & APPROXIMATORS) or "more" in lower and "than" in lower
        if not isinstance(v.norm, int | float) or not derivable(float(v.norm), pool, rough):
            return False
    return True
