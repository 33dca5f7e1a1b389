"""Numbers and dates written in different ways, normalised so they can be compared.

"3.5 million" and "3,500,000" are the same quantity, "5%" and "5 percent" the same share,
"12 March 2020", "March 12, 2020" and "2020-03-12" the same day.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from hallumeasure.offline.lexicon import MONTHS, NUMBER_WORDS, SCALES

_NUM_RE = re.compile(
    r"(?P<cur>[$€£¥])?\s?(?P<num>(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\d.,])\d+(?:\.\d+)?)"
    r"(?:\s*(?P<scale>thousand|million|billion|trillion|bn|mn|k|m)\b)?"
    r"(?:\s*(?P<pct>%|percent|per cent|percentage points?))?",
    re.IGNORECASE,
)
_WORDNUM_RE = re.compile(
    r"\b(?P<word>" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b"
    r"(?:[\s-]+(?P<scale>thousand|million|billion|trillion|hundred|dozen)\b)?"
    r"(?:\s*(?P<pct>%|percent|per cent))?",
    re.IGNORECASE,
)
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_PATTERNS = [
    re.compile(r"\b(?P<year>\d{4})-(?P<mnum>\d{1,2})-(?P<day>\d{1,2})\b"),
    re.compile(r"\b(?P<mnum>\d{1,2})/(?P<day>\d{1,2})/(?P<year>\d{4})\b"),
    re.compile(r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b", re.IGNORECASE),
    re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(?P<year>\d{4})\b",
               re.IGNORECASE),
    re.compile(r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?\b(?![,\s]*\d{4})", re.IGNORECASE),
    re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"\b(?![,\s]*\d{4})", re.IGNORECASE),
    re.compile(r"\b" + _MONTH + r",?\s+(?P<year>\d{4})\b", re.IGNORECASE),
]
#: Month names that are also ordinary words; only counted as a month next to a day or a year.
_AMBIGUOUS_MONTHS = {"may", "march", "mar", "jan", "jun", "aug", "sep", "oct", "nov", "dec", "sept"}


@dataclass(frozen=True)
class Quantity:
    """A number as written (``text``) and its value; ``percent`` when it is a share."""

    text: str
    value: float
    percent: bool


def quantities(text: str) -> list[Quantity]:
    """Numbers in ``text`` with scale words and percent signs normalised."""
    found: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    for match in _NUM_RE.finditer(text):
        try:
            value = float(match["num"].replace(",", ""))
        except ValueError:
            continue
        scale = (match["scale"] or "").lower()
        if scale == "m" and not match["cur"]:
            continue  # "5 m" is more often metres than millions
        value *= SCALES.get(scale, 1.0)
        found.append(Quantity(match.group(0).strip(), value, bool(match["pct"])))
        taken.append(match.span())
    for match in _WORDNUM_RE.finditer(text):
        if any(a <= match.start() < b for a, b in taken):
            continue
        value = NUMBER_WORDS[match["word"].lower()] * SCALES.get((match["scale"] or "").lower(), 1.0)
        found.append(Quantity(match.group(0).strip(), value, bool(match["pct"])))
    return found


def same_value(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def has_value(q: Quantity, others: list[Quantity]) -> bool:
    """True when ``others`` holds the same value (a share must match a share, or a plain number)."""
    return any(same_value(q.value, o.value) for o in others)


#: A date as (year, month, day); 0 stands for "not given".
Date = tuple[int, int, int]


def dates(text: str) -> set[Date]:
    """Every date found in ``text`` as (year, month, day), with 0 for a part that is not given."""
    out: set[Date] = set()
    seen: list[tuple[int, int]] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
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
    return all(a == 0 or b == 0 or a == b for a, b in zip(claim, context)) and claim[1] == context[1]


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
