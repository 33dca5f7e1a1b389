"""Numbers and dates written in different ways, normalised so they can be compared.

"3.5 million" and "3,500,000" are the same quantity, "5%" and "5 percent" the same share,
"12 March 2020", "March 12, 2020" and "2020-03-12" the same day.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from hallumeasure.judges.offline.lexicon import MONTHS, NUMBER_WORDS, SCALES


def _alternatives(words: Iterable[str]) -> str:
    """An alternation of ``words``, longest first, grouped by first letter ("s(?:eventy|ix)|t(?:en|wo)"): the same
    matches as the words listed one by one (at a given place only the group of its letter can match, and within it
    the order is kept), but the regex engine tries one group there rather than a hundred words."""
    groups: dict[str, list[str]] = {}
    for word in sorted(words, key=len, reverse=True):
        groups.setdefault(word[0], []).append(word[1:])
    return "|".join(f"{first}(?:{'|'.join(rests)})" for first, rests in groups.items())


_NUM_RE = re.compile(
    r"(?P<cur>[$€£¥])?\s?(?P<num>(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\d.,])\d+(?:\.\d+)?)"
    r"(?:\s*(?P<scale>thousand|million|billion|trillion|bn|mn|k|m)\b)?"
    r"(?:\s*(?P<pct>%|percent|per cent|percentage points?))?",
    re.IGNORECASE,
)
#: A number in digits that does not continue another: "1,250", "3.5", "2019". The pattern opens with its first
#: digit and checks the character before it afterwards (the same matches as a leading look-behind), because a
#: pattern that starts with a character class is scanned for much faster.
_DIGITS_RE = re.compile(
    r"\d(?<![\d.,]\d)(?:\d{0,2}\.\s\d+(?=\s*(?:%|(?:per\s?cent|percentage|million|billion|thousand|bn)\b))"
    r"|\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d*(?:\.\d+)?)",
    re.IGNORECASE,
)
#: A decimal number that a space splits after its point ("98. 7 per cent", as some sources print 98.7): read as
#: one number when a share or a scale word follows, never as the "7" it ends with. The first alternative above.
SPLIT_DECIMAL_RE = re.compile(
    r"(?<![\d.,])\d{1,3}\.\s(?=\d+\s*(?:%|(?:per\s?cent|percentage|million|billion|thousand|bn)\b))", re.IGNORECASE
)
_TAIL_RE = re.compile(
    r"(?:\s*(?P<scale>thousand|million|billion|trillion|bn|mn|k|m)\b)?"
    r"(?:\s*(?P<pct>%|percent|per cent|percentage points?))?",
    re.IGNORECASE,
)
_CURRENCIES = "$€£¥"
_WORDNUM_RE = re.compile(
    r"\b(?P<word>" + _alternatives(NUMBER_WORDS) + r")\b"
    r"(?:[\s-]+(?P<scale>thousand|million|billion|trillion|hundred|dozen)\b)?"
    r"(?:\s*(?P<pct>%|percent|per cent))?",
    re.IGNORECASE,
)
_MONTH = r"(?P<month>" + _alternatives(MONTHS) + r")\.?"
_MONTH_WORDS = frozenset(MONTHS)
#: The two numeric patterns come first (they need no month name).
_DATE_PATTERNS = [
    re.compile(r"\b(?P<year>\d{4})-(?P<mnum>\d{1,2})-(?P<day>\d{1,2})\b"),
    re.compile(r"\b(?P<mnum>\d{1,2})/(?P<day>\d{1,2})/(?P<year>\d{4})\b"),
    re.compile(r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b", re.IGNORECASE),
    re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(?P<year>\d{4})\b", re.IGNORECASE),
    re.compile(r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?\b(?![,\s]*\d{4})", re.IGNORECASE),
    re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"\b(?![,\s]*\d{4})", re.IGNORECASE),
    re.compile(r"\b" + _MONTH + r",?\s+(?P<year>\d{4})\b", re.IGNORECASE),
]
#: A character each date pattern cannot match without ("" for none): a quick test before the slow scan.
_DATE_MARKS = ("-", "/", "", "", "", "", "")
#: Month names that are also ordinary words; only counted as a month next to a day or a year.
_AMBIGUOUS_MONTHS = {"may", "march", "mar", "jan", "jun", "aug", "sep", "oct", "nov", "dec", "sept"}


@dataclass(frozen=True)
class Quantity:
    """A number as written (``text``) and its value; ``percent`` when it is a share."""

    text: str
    value: float
    percent: bool
    #: Character offsets of ``text`` in the string it was read from (not part of equality).
    start: int = field(default=-1, compare=False)
    end: int = field(default=-1, compare=False)


_DIGIT_RE = re.compile(r"\d")
_LETTERS_RE = re.compile(r"[a-z]+", re.IGNORECASE)
_NUMBER_WORD_PARTS = frozenset(part for word in NUMBER_WORDS for part in word.split("-"))


def letter_runs(text: str) -> set[str]:
    """The lower-cased runs of letters in ``text`` (what the cheap pre-checks below look at)."""
    return {w.lower() for w in _LETTERS_RE.findall(text)}


#: The four letters besides A-Z and a-z that ``[a-z]`` matches when case is ignored (see the ``re`` documentation).
_FOLDED_LETTER_RE = re.compile("[\u0130\u0131\u017f\u212a]")


def plain_letters(text: str) -> bool:
    """True when ``letter_runs(text)`` and the lower-cased words of ``text`` (with the parts of its hyphenated
    words and contractions, as the context index collects them) give ``quantities`` and ``dates`` the same
    answers: both then hold every run of letters, so both meet the same number words and month names. Only
    the four letters that ``[a-z]`` also matches when case is ignored can make them differ."""
    return _FOLDED_LETTER_RE.search(text) is None


def quantities(text: str, letters: set[str] | None = None) -> list[Quantity]:
    """Numbers in ``text`` with scale words and percent signs normalised.

    ``letters`` may pass ``letter_runs(text)`` when the caller already has it.
    """
    found: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    # Cheap tests first: most sentences hold no digit and no number word, and the patterns are slow.
    digits = _DIGIT_RE.search(text) is not None
    if letters is None:
        letters = letter_runs(text)
    number_words = not _NUMBER_WORD_PARTS.isdisjoint(letters)
    months = not _MONTH_WORDS.isdisjoint(letters)
    # Digits are found with a plain pattern (fast to scan for); currency, scale and percent around them
    # are then read at fixed places, which is much cheaper than one pattern with optional parts.
    clocks = [span for _, _, span in clock_times(text)] if digits else []
    for match in _DIGITS_RE.finditer(text) if digits else ():
        start, end = match.span()
        if clocks and any(a <= start < b for a, b in clocks):
            continue  # "9:00", "9 a.m.": times are compared as times
        if months and _in_date(text, start, end):
            continue  # the day of "14 March" / "March 14": dates are compared as dates
        value = float(re.sub(r"[,\s]", "", match.group(0)))
        tail = _TAIL_RE.match(text, end)
        assert tail is not None  # every part of the pattern is optional: it always matches
        begin = start - 1 if start >= 1 and text[start - 1].isspace() else start
        currency = begin >= 1 and text[begin - 1] in _CURRENCIES
        if currency:
            begin -= 1
        scale = (tail["scale"] or "").lower()
        if scale == "m" and not currency:
            continue  # "5 m" is more often metres than millions
        value *= SCALES.get(scale, 1.0)
        found.append(Quantity(text[begin : tail.end()].strip(), value, bool(tail["pct"]), begin, tail.end()))
        taken.append((begin, tail.end()))
    for match in _WORDNUM_RE.finditer(text) if number_words else ():
        if any(a <= match.start() < b for a, b in taken):
            continue
        if any(a <= match.start() < b for _, _, (a, b) in clock_times(text)):
            continue  # "nine o'clock"
        value = NUMBER_WORDS[match["word"].lower()] * SCALES.get((match["scale"] or "").lower(), 1.0)
        found.append(Quantity(match.group(0).strip(), value, bool(match["pct"]), match.start(), match.end()))
    return found


_HOUR_WORDS = {w: int(v) for w, v in NUMBER_WORDS.items() if 1 <= v <= 12 and float(v).is_integer()} | {"one": 1}
_HOUR = r"(?P<h>\d{1,2}|" + _alternatives(_HOUR_WORDS) + r")"
_MERIDIEM = r"(?P<ap>[ap])(?:\.\s?m\b\.?|\s?m\b)"
_TIME_RES = (
    re.compile(r"\b" + _HOUR + r"(?:[:.](?P<m>\d{2}))?\s*" + _MERIDIEM, re.IGNORECASE),  # 9 am, 9 a.m., 9:30pm
    re.compile(r"\b(?P<h>\d{1,2}):(?P<m>\d{2})(?!\d)(?:\s*(?:h|hrs|hours)\b)?"),  # 9:00, 09:00, 21:00
    re.compile(r"\b" + _HOUR + r"\s+o'?\s?clock\b", re.IGNORECASE),  # 9 o'clock, nine o'clock
    re.compile(r"\b(?P<word>noon|midday|midnight)\b", re.IGNORECASE),
)
_TIME_CUE_RE = re.compile(r"clock|noon|midday|midnight|\b[ap]\.?m\b", re.IGNORECASE)
#: What each pattern above cannot match without: a meridiem ("am", "p. m"), a colon, or one of these words.
_MERIDIEM_CUE_RE = re.compile(r"[ap](?:\.\s?m\b|\s?m\b)", re.IGNORECASE)
_TIME_WORDS = ("clock", "noon", "midday", "midnight")


def _may_hold_time(text: str) -> bool:
    """False when no clock-time pattern can match ``text``: a quick test that spares most sentences the
    four patterns (slow to scan, as they try their hour words at every word)."""
    if ":" in text or not text.isascii():  # case-insensitive matching of other letters is left to the patterns
        return True
    lowered = text.lower()
    return any(word in lowered for word in _TIME_WORDS) or _MERIDIEM_CUE_RE.search(text) is not None


def _minutes(h: int, m: int, ap: str | None) -> frozenset[int]:
    """The minutes after midnight a clock time can mean (both halves of the day when it does not say)."""
    if ap:
        return frozenset({((h % 12) + (12 if ap.lower() == "p" else 0)) * 60 + m})
    if h > 12:
        return frozenset({h * 60 + m})
    return frozenset({(h % 12) * 60 + m, (h % 12 + 12) * 60 + m})


@lru_cache(maxsize=16384)
def clock_times(text: str) -> tuple[tuple[str, frozenset[int], tuple[int, int]], ...]:
    """Clock times in ``text`` as (text, the minutes after midnight it can mean, span): "9 a.m.", "9:00",
    "09:00", "21:00", "nine o'clock", "noon"."""
    found: list[tuple[str, frozenset[int], tuple[int, int]]] = []
    if not _may_hold_time(text) or (_DIGIT_RE.search(text) is None and not _TIME_CUE_RE.search(text)):
        return ()
    for pattern in _TIME_RES:
        for match in pattern.finditer(text):
            if any(a < match.end() and match.start() < b for _, _, (a, b) in found):
                continue
            groups = match.groupdict()
            if groups.get("word"):
                norm = frozenset({0}) if match["word"].lower() == "midnight" else frozenset({720})
            else:
                raw = match["h"].lower()
                h = int(raw) if raw.isdigit() else _HOUR_WORDS[raw]
                m = int(groups.get("m") or 0)
                if h > 23 or m > 59:
                    continue
                norm = _minutes(h, m, groups.get("ap"))
            found.append((match.group(0).strip(), norm, match.span()))
    return tuple(found)


_MONTH_NAMES = "(?:" + _alternatives(MONTHS) + r")\.?"
_MONTH_NEAR_RE = re.compile(
    r"(?:^|\s)" + _MONTH_NAMES + r"\s*$|^\s*(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH_NAMES + r"\b", re.IGNORECASE
)


def _in_date(text: str, start: int, end: int) -> bool:
    """True for a one- or two-digit number right next to a month name."""
    if end - start > 2:
        return False
    return bool(_MONTH_NEAR_RE.search(text[max(0, start - 12) : start]) or _MONTH_NEAR_RE.match(text[end : end + 16]))


def same_value(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def same_number(a: str, b: str) -> bool:
    """True when two number words or phrases can be the same value, allowing for a scale word left
    outside one of them ("3,500,000" against the "3.5" of "3.5 million")."""
    xs = [q.value for q in quantities(a)]
    ys = [q.value for q in quantities(b)]
    return any(same_value(x, y * s) or same_value(y, x * s) for x in xs for y in ys for s in (1.0, 1e3, 1e6, 1e9))


def has_value(q: Quantity, others: list[Quantity]) -> bool:
    """True when ``others`` holds the same value (a share must match a share, or a plain number)."""
    return any(same_value(q.value, o.value) for o in others)


#: A date as (year, month, day); 0 stands for "not given".
Date = tuple[int, int, int]


def dates(text: str, letters: set[str] | None = None) -> set[Date]:
    """Every date found in ``text`` as (year, month, day), with 0 for a part that is not given."""
    out: set[Date] = set()
    seen: list[tuple[int, int]] = []
    if _DIGIT_RE.search(text) is None:
        return out  # every date pattern needs a day or a year
    has_month = not _MONTH_WORDS.isdisjoint(letters if letters is not None else letter_runs(text))
    patterns = _DATE_PATTERNS if has_month else _DATE_PATTERNS[:2]
    for pattern, mark in zip(patterns, _DATE_MARKS[: len(patterns)], strict=True):
        for m in pattern.finditer(text) if mark in text else ():
            if any(a <= m.start() < b or a < m.end() <= b for a, b in seen):
                continue  # already read as part of a fuller date
            groups = m.groupdict()
            name = (groups.get("month") or "").lower().rstrip(".")
            month = MONTHS.get(name) if name else int(groups["mnum"])
            year = int(groups["year"]) if groups.get("year") else 0
            day = int(groups["day"]) if groups.get("day") else 0
            if name in _AMBIGUOUS_MONTHS and m.group(0)[0].islower():
                continue  # "may 5" is rarely a date when lower-cased
            if month and 1 <= month <= 12 and 0 <= day <= 31:
                out.add((year, month, day))
                seen.append(m.span())
    return out


def date_matches(claim: Date, context: Date) -> bool:
    """True when the context date can be the claim date (parts missing on either side are not held against it)."""
    return all(a == 0 or b == 0 or a == b for a, b in zip(claim, context, strict=True)) and claim[1] == context[1]


def date_conflict(claim_dates: set[Date], context_dates: set[Date]) -> Date | None:
    """A claim date that no context date can match, or None."""
    for d in sorted(claim_dates):
        if not any(date_matches(d, c) for c in context_dates):
            return d
    return None


def format_date(d: Date) -> str:
    year, month, day = d
    name = next(k for k, v in MONTHS.items() if v == month).capitalize()  # full names come first in MONTHS
    return " ".join(p for p in (str(day) if day else "", name, str(year) if year else "") if p)
