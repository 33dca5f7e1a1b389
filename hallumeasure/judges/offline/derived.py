"""Claim numbers that a source gives without writing them: a sum, a difference, a ratio, a unit change.

A restatement may say "ten years" for "opened in 1990, closed in 2000", "42 tonnes of fruit" for
"30 tonnes of apples and 12 tonnes of pears", or "1,200 metres" for "1.2 kilometres". Word overlap
sees a number the source never gives; arithmetic on the source's own numbers finds it. A claim
number that such arithmetic reaches may be right or wrong (the words around it decide which), so a
keyless judge must not call it a clear conflict. Some number words are also read unreliably: "three
quarters of an hour", "three in the afternoon", "half past six" are a fraction and clock times, not
counts; a conflict resting on such a reading is no evidence either. Nor is a bound ("more than 20 years")
that no source quantity of its unit breaks.

``explained_numbers`` tells whether every claim number the source lacks is of one of these kinds. The
helpers at the end read other values that word overlap misjudges: a date in figures that reads two
ways ("12/01/2025"), a decade, days told as those the source leaves out ("closed on Sundays").
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import combinations, pairwise

from hallumeasure.judges.offline.alignment import Difference
from hallumeasure.judges.offline.slots import Value, read_values
from hallumeasure.judges.offline.tokens import stem, words

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
_POINTS = frozenset({"point", "points", "percentag"})
#: Relative tolerance of a match: derived numbers must match exactly (a near miss is a changed value).
_EXACT = 1e-6
#: Words that hedge a number ("about 500"): not names, though they may open a sentence with a capital.
APPROXIMATORS = frozenset(
    {"about", "around", "roughly", "nearly", "almost", "approximately", "some", "over", "under", "just", "close"}
)


#: A quantity with its kind and unit stems: sums and differences combine like with like ("30 tonnes" and
#: "12 tonnes"; two years give a span; two clock times give hours), never a price with a count.
Quantity = tuple[float, str, frozenset[str]]


def source_numbers(sentences: list[str]) -> list[Quantity]:
    """Every quantity the source gives: its numbers, its fraction words, clock hours, and the length of a span of
    weekdays ("Monday to Saturday" is six days). A number given twice counts twice ("drew 2-2": four goals)."""
    return [q for sentence in sentences for q in _sentence_numbers(sentence)]


@lru_cache(maxsize=4096)
def _sentence_values(sentence: str) -> tuple[Value, ...]:
    """The values of one source sentence (names left out), read once: every claim of a response asks again."""
    return tuple(read_values(sentence, names=False))


@lru_cache(maxsize=64)
def _source_values(sentences: tuple[str, ...]) -> frozenset[tuple[str, object]]:
    """Every value of a source (names left out) as (kind, normal form), read once per source: every claim asks."""
    return frozenset((v.kind, v.norm) for s in sentences for v in _sentence_values(s))


@lru_cache(maxsize=4096)
def _sentence_numbers(sentence: str) -> tuple[Quantity, ...]:
    """The quantities of one source sentence (``source_numbers``), computed once per sentence."""
    out: list[Quantity] = []
    values = _sentence_values(sentence)
    out += [(float(v.norm), v.kind, v.unit) for v in values if v.kind in _NUMERIC and isinstance(v.norm, int | float)]
    for w in words(sentence):
        share = _FRACTIONS.get(w.lower())
        if share is not None:
            out += [(share, "factor", frozenset()), (share * 100, "share", frozenset())]
    for v in values:
        if v.kind == "time" and isinstance(v.norm, frozenset):
            out += [(m / 60, "clock", frozenset()) for m in sorted(v.norm) if isinstance(m, int | float)]
    days = [min(v.norm) for v in values if v.kind == "days" and isinstance(v.norm, frozenset) and len(v.norm) == 1]
    out += [(float((b - a) % 7 + 1), "number", frozenset()) for a, b in pairwise(days)]
    return tuple(out)


_OTHER = "<another unit>"


def _fits(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two unit sets may name one unit: one is missing or they share a word."""
    return not a or not b or bool(a & b)


def _candidates(pool: list[Quantity]) -> list[Quantity]:
    out = list(pool)
    for value, kind, unit in pool:
        if unit:  # a unit change: 1.2 km is 1,200 m (held only against a claim of another unit)
            other = frozenset({_OTHER, *unit})
            out += [(value * k, kind, other) for k in _SCALES] + [(value / k, kind, other) for k in _SCALES]
    for (a, ka, ua), (b, kb, ub) in combinations(pool, 2):
        if "factor" in (ka, kb):  # "twice the first estimate", "cut by a quarter"
            x, kind, unit = (b, kb, ub) if ka == "factor" else (a, ka, ua)
            f = a if ka == "factor" else b
            out += [(x * f, kind, unit), (x / f, kind, unit)]
            continue
        if "share" in (ka, kb) and ka != kb:  # 25% of 2,000 adults
            unit = ub if ka == "share" else ua
            out.append((a * b / 100, "number", unit))
            continue
        if a and b and ka == kb:  # 840 pupils and 56 teachers: 15 pupils a teacher
            out += [(a / b, "number", ua), (b / a, "number", ub)]
        if ka != kb or not _fits(ua, ub):
            continue
        # two years give a span of years, two clock times one of hours; two shares give percentage points
        unit = {"year": frozenset({"year"}), "clock": frozenset({"hour"})}.get(ka, ua or ub)
        span = {"year": "number", "clock": "number", "share": "points"}.get(ka, ka)
        # a sum needs one unit on both sides ("four boats" and "two of its captains" make no six boats)
        # (two years or two times have a span, not a sum; two prices are rarely restated as their sum)
        summed = ua == ub and ka not in ("year", "clock", "money")
        out += [(abs(a - b), span, unit)] + ([(a + b, span, unit)] if summed else [])
    return out


def derivable(value: float, kind: str, unit: frozenset[str], pool: list[Quantity]) -> bool:
    """Whether a claim quantity is a source quantity in another unit, or the sum, difference, ratio or share of two
    of like kind (module doc)."""
    for c, ckind, cunit in _candidates(pool):
        if abs(value - c) > _EXACT * max(abs(value), abs(c), 1e-9):
            continue
        if _OTHER in cunit:  # each side has a unit word the other lacks ("centimetres" for "metres")
            theirs = cunit - {_OTHER}
            if unit - theirs and theirs - unit:
                return True
            continue
        if ckind == "points":  # "by 7 points", "by 7 percentage points", "by 7%"
            ckind, cunit = ("number", unit) if unit & _POINTS else ("share", cunit)
        if (ckind == kind or {ckind, kind} <= {"number", "year"}) and _fits(unit, cunit):
            return True
    return False


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
    if _AFTER_PHRASE.match(after_text) or re.match(r"'?s\b", after_text):  # "the 1960s": a decade
        return True
    return bool(before) and before[-1].lower() in _BEFORE and v.text[:1].isalpha()


#: Words that make a claim number a bound ("more than 20 years", "nearly 500 seats"), by the side it bounds.
_BOUNDS = {
    "over": ">",
    "above": ">",
    "exceeding": ">",
    "more than": ">",
    "at least": ">",
    "under": "<",
    "below": "<",
    "less than": "<",
    "fewer than": "<",
    "at most": "<",
    "up to": "<",
    "nearly": "~<",
    "almost": "~<",
}


def bound_of(v: Value, claim: str) -> str | None:
    """ ">" or "<" when the claim gives ``v`` as a lower or upper bound, "~<" for "nearly"; None for a value."""
    at = claim.find(v.text)
    before = [w.lower() for w in words(claim[:at])] if at >= 0 else []
    for size in (2, 1):
        bound = _BOUNDS.get(" ".join(before[-size:])) if len(before) >= size else None
        if bound is not None:
            return bound
    return None


def bound_allowed(v: Value, bound: str, pool: list[Quantity]) -> bool:
    """Whether a bounded claim number may hold: the source gives no quantity of its kind that may share its unit
    (a bound on what the source leaves open, "more than 20 years" since 2004), or one that meets the bound.
    Quantities are those given, and spans of years or times with their unit."""
    if not isinstance(v.norm, int | float):
        return False
    value = float(v.norm)
    given = [c for c, kind, unit in pool if kind == v.kind and _fits(unit, v.unit)]
    spans = [c for c, kind, unit in _candidates(pool) if kind == v.kind and unit & v.unit]
    same = given + spans
    if not same:
        return True
    if bound == ">":
        return any(c > value for c in same)
    if bound == "<":
        return any(c < value for c in same)
    return any(0.9 * value <= c < value for c in same)


def explained_numbers(claim: str, sentences: list[str], near: int | None = None) -> bool:
    """Whether the claim has a number the source lacks and every such number is derivable from the source's
    numbers, read unreliably, or a bound the source's numbers allow (module doc).

    With ``near`` (the index of the sentence that gives the claim's slot another value: "nine years" against the
    claim's "four years"), only numbers of that sentence and its neighbours may derive the claim's, so that a
    chance sum elsewhere in a long source does not excuse a changed value."""
    # two numbers are combined only when one sentence or two neighbouring ones give them: a long source holds
    # many numbers, and sums and ratios of far-apart ones would reach almost any claim number by chance
    starts = range(max(1, len(sentences) - 1))
    if near is not None:
        starts = range(max(0, near - 1), min(near, len(sentences) - 1) + 1)
    held = _source_values(tuple(sentences))
    unheld = [v for v in read_values(claim, names=False) if v.kind in _NUMERIC and (v.kind, v.norm) not in held]
    if not unheld:
        return False
    windows = [source_numbers(sentences[i : i + 2]) for i in starts]
    pool = [q for window in windows for q in window] if near is not None else source_numbers(sentences)
    for v in unheld:
        if unreliable_reading(v, claim):
            continue
        bound = bound_of(v, claim)
        if bound is not None:
            if bound_allowed(v, bound, pool):
                continue
            return False
        if not isinstance(v.norm, int | float):
            return False
        if not any(derivable(float(v.norm), v.kind, v.unit, window) for window in windows):
            return False
    return True


#: A date in figures whose day and month may be read either way ("03/04/2025"), and a decade ("the 1960s").
_AMBIGUOUS_DATE = re.compile(r"\b(?:(?:0?[1-9]|1[0-2])[/.-](?:0?[1-9]|1[0-2])[/.-]\d{2,4}|\d{3}0'?s)\b")
#: Words that turn a claim about days to the days the source leaves out ("closed on Sundays" against "open
#: Monday to Saturday"; "every day but Monday").
_COMPLEMENT = frozenset({"closed", "shut", "not", "except", "but", "apart", "besides", "other"})


def ambiguous_date(claim: str) -> bool:
    """Whether the claim writes a date in figures that reads two ways, or a decade (module doc)."""
    return bool(_AMBIGUOUS_DATE.search(claim))


def in_ambiguous_date(value: str, claim: str) -> bool:
    """Whether ``value`` is a piece of such a date ("12" of "12/01/2025")."""
    return any(value in m.group(0) for m in _AMBIGUOUS_DATE.finditer(claim))


def has_complement(text: str) -> bool:
    """Whether ``text`` speaks of what is left out or shut ("closed", "except", "not")."""
    low = [w.lower() for w in words(text)]
    return bool(set(low) & _COMPLEMENT) or any(w.endswith("n't") for w in low)


def value_units(text: str) -> set[str]:
    """Unit stems of the numbers of ``text`` ("metre" of "1,200 metres"): a swapped unit is the unit change."""
    return {u for v in read_values(text, names=False) for u in v.unit}


def is_unit(word: str, units: set[str]) -> bool:
    """Whether ``word`` is one of ``units`` in another form."""
    w = stem(word)
    return any(u.startswith(w) or w.startswith(u) for u in units)


def about_numbers(d: Difference) -> bool:
    """Whether both sides of a difference hold a number ("1,200 metres" for "1.2 kilometres"): the difference is
    the number's own wording, which ``explained_numbers`` checks."""
    return all(read_values(" ".join(side), names=False) for side in (d.claim_words, d.context_words))


def is_number_word(name: str) -> bool:
    """Whether a capitalised "name" is a number ("Three of the staff")."""
    return any(v.kind == "number" and v.text == name for v in read_values(name, names=False))
