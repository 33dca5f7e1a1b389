"""Cheap, explainable signals of whether a claim is backed by a context.

Every signal is computed from plain text with regular expressions and word sets: alignment of
the claim to its best context sentences, numbers and dates, capitalised names, negation,
intensity and hedging words, and attribution. ``claim_signals`` returns both the numeric
feature vector that the trained model reads and the evidence used to write a reason.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

from hallumeasure.offline.lexicon import (
    ATTRIBUTION,
    HEDGES,
    INTENSIFIERS,
    MONTHS,
    NEGATIONS,
    NUMBER_WORDS,
    SCALES,
    STOPWORDS,
)

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d[\d,]*(?:\.\d+)?")
_SENT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_NUM_RE = re.compile(
    r"(?P<cur>[$€£¥])?\s?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s*(?P<scale>thousand|million|billion|trillion|bn|mn|k|m)\b)?"
    r"(?:\s*(?P<pct>%|percent|per cent|percentage points?))?",
    re.IGNORECASE,
)
_WORDNUM_RE = re.compile(r"\b[a-z]+(?:-[a-z]+)?\b")
_AFTER_RE = re.compile(r"[\s-]+(thousand|million|billion|trillion|hundred|dozen)\b|\s*(%|percent|per cent)")
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_PATTERNS = [
    re.compile(r"\b(?P<year>\d{4})-(?P<mnum>\d{1,2})-(?P<day>\d{1,2})\b"),
    re.compile(r"\b(?P<mnum>\d{1,2})/(?P<day>\d{1,2})/(?P<year>\d{4})\b"),
    re.compile(r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b", re.IGNORECASE),
    re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(?P<year>\d{4})\b",
               re.IGNORECASE),
    re.compile(r"\b" + _MONTH + r",?\s+(?P<year>\d{4})\b", re.IGNORECASE),
]
_YEAR_RE = re.compile(r"\d{4}")
_CAPS_RE = re.compile(r"\b[A-Z][a-zA-Z'\-]*(?:\s+(?:of|the|de|van|von|and|&)?\s*[A-Z][a-zA-Z'\-]*)*|\b[A-Z]{2,}\b")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stripper: good enough to match 'approved' with 'approves' and 'repairs' with 'repair'."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    for suffix, keep in (("ies", "y"), ("ied", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""),
                         ("s", ""), ("ly", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not (suffix == "s" and w.endswith("ss")):
            w = w[: len(w) - len(suffix)] + keep
            break
    # "approve" and "approved" both end as "approv".
    return w[:-1] if w.endswith("e") and len(w) > 4 else w


def words(text: str) -> list[str]:
    return _WORD_RE.findall(text)


def content_stems(tokens: list[str]) -> list[str]:
    return [stem(t) for t in tokens if t.lower() not in STOPWORDS and not t[0].isdigit()]


# --- numbers and dates ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Quantity:
    text: str
    value: float
    percent: bool


def quantities(text: str) -> list[Quantity]:
    """Numbers with scale words and percent signs normalised: '3.5 million' and '3,500,000' are equal."""
    found: list[Quantity] = []
    lowered = text.lower()
    has_words = not NUMBER_WORDS.keys().isdisjoint(lowered.replace("-", " ").split()) or "-" in lowered
    if not has_words and not any(c.isdigit() for c in text):
        return found
    # Numbers inside dates are compared as dates (see ``dates``), not as quantities.
    date_spans = [m.span() for pattern in _DATE_PATTERNS for m in pattern.finditer(text)] if _YEAR_RE.search(text) else []
    taken: list[tuple[int, int]] = list(date_spans)
    for match in _NUM_RE.finditer(text):
        if any(a <= match.start("num") < b for a, b in date_spans):
            continue
        raw = match["num"].replace(",", "")
        try:
            value = float(raw)
        except ValueError:
            continue
        scale = (match["scale"] or "").lower()
        if scale == "m" and not match["cur"]:
            continue  # "5 m" is more often metres than millions
        value *= SCALES.get(scale, 1.0)
        found.append(Quantity(match.group(0).strip(), value, bool(match["pct"])))
        taken.append(match.span())
    if not has_words:
        return found
    for match in _WORDNUM_RE.finditer(lowered):
        value = NUMBER_WORDS.get(match.group(0))
        if value is None or any(a <= match.start() < b for a, b in taken):
            continue
        end, percent = match.end(), False
        while (after := _AFTER_RE.match(lowered, end)) is not None:
            if after.group(1):
                value *= SCALES[after.group(1)]
            else:
                percent = True
            end = after.end()
        found.append(Quantity(text[match.start():end].strip(), value, percent))
    return found


def _is_year(q: Quantity) -> bool:
    return not q.percent and q.value.is_integer() and 1800 <= q.value <= 2100 and "," not in q.text


def _comparable(a: Quantity, b: Quantity) -> bool:
    """Two quantities that could be the same fact stated differently: both percents or not, both years or not."""
    return a.percent == b.percent and _is_year(a) == _is_year(b)


def same_value(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def dates(text: str) -> set[tuple[int, int, int]]:
    """(year, month, day) of every date found; day 0 when only month and year are given."""
    out: set[tuple[int, int, int]] = set()
    if not _YEAR_RE.search(text):
        return out
    taken: list[tuple[int, int]] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue  # "March 2025" inside "14 March 2025" is the same date, not a second one
            taken.append(m.span())
            groups = m.groupdict()
            month = MONTHS.get(groups["month"].lower().rstrip(".")) if groups.get("month") else int(groups["mnum"])
            day = int(groups["day"]) if groups.get("day") else 0
            if month and 1 <= month <= 12 and 0 <= day <= 31:
                out.add((int(groups["year"]), month, day))
    return out


def date_conflict(claim_dates: set[tuple[int, int, int]], context_dates: set[tuple[int, int, int]]) -> tuple | None:
    """A claim date that no context date matches (a month-only date matches any day of that month)."""
    for y, m, d in sorted(claim_dates):
        if not any(cy == y and cm == m and (d == 0 or cd in (0, d)) for cy, cm, cd in context_dates):
            return (y, m, d)
    return None


# --- the context, analysed once ----------------------------------------------------------------------


@dataclass
class ContextIndex:
    sentences: list[str]
    sentence_stems: list[frozenset[str]]
    stems: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    trigrams: frozenset[tuple[str, str, str]]
    lower_text: str
    quantities: list[Quantity]
    dates: set[tuple[int, int, int]]
    lower_words: frozenset[str]
    n_words: int


def split_context(text: str) -> list[str]:
    return [s.strip() for s in _SENT_RE.split(text) if s and s.strip()]


@lru_cache(maxsize=512)
def index_context(context: str) -> ContextIndex:
    sentences = split_context(context) or [context]
    sentence_stems, bigrams, trigrams = [], set(), set()
    for sentence in sentences:
        toks = words(sentence)
        cs = content_stems(toks)
        sentence_stems.append(frozenset(cs))
        bigrams.update(zip(cs, cs[1:]))
        low = [t.lower() for t in toks]
        trigrams.update(zip(low, low[1:], low[2:]))
    all_words = words(context)
    return ContextIndex(
        sentences=sentences,
        sentence_stems=sentence_stems,
        stems=frozenset().union(*sentence_stems),
        bigrams=frozenset(bigrams),
        trigrams=frozenset(trigrams),
        lower_text=context.lower(),
        quantities=quantities(context),
        dates=dates(context),
        lower_words=frozenset(w.lower() for w in all_words),
        n_words=len(all_words),
    )


# --- per-claim signals --------------------------------------------------------------------------------

FEATURES = (
    "n_content",
    "recall_global",
    "recall_best",
    "recall_top2",
    "bigram_recall",
    "trigram_recall",
    "n_novel_bigrams",
    "n_novel",
    "novel_share",
    "n_novel_capitalised",
    "n_numbers",
    "n_numbers_missing",
    "number_conflict",
    "date_conflict",
    "n_entities",
    "n_entities_missing",
    "negation_mismatch",
    "n_intensifiers_novel",
    "hedge_dropped",
    "hedge_added",
    "attribution_dropped",
    "claim_words",
    "best_sentence_words",
    "log_context_words",
)


_RISK_UP = {"n_novel", "novel_share", "n_novel_capitalised", "n_novel_bigrams", "n_numbers_missing",
            "number_conflict", "date_conflict", "n_entities_missing", "negation_mismatch", "n_intensifiers_novel",
            "hedge_dropped", "attribution_dropped"}
_RISK_DOWN = {"recall_global", "recall_best", "recall_top2", "bigram_recall", "trigram_recall"}
#: +1 when a larger value can only raise the risk, -1 when it can only lower it, 0 when either.
MONOTONIC = tuple(1 if f in _RISK_UP else -1 if f in _RISK_DOWN else 0 for f in FEATURES)


@dataclass
class ClaimSignals:
    """Feature values plus the evidence behind them (for reasons and subtypes)."""

    values: dict[str, float]
    best_sentence: str = ""
    novel_words: list[str] = field(default_factory=list)
    missing_numbers: list[str] = field(default_factory=list)
    conflicting_numbers: list[str] = field(default_factory=list)
    missing_entities: list[str] = field(default_factory=list)
    novel_intensifiers: list[str] = field(default_factory=list)
    conflicting_date: tuple | None = None
    attribution_word: str | None = None

    def vector(self) -> list[float]:
        return [self.values[name] for name in FEATURES]


def _entities(claim: str) -> list[str]:
    found = []
    for m in _CAPS_RE.finditer(claim):
        span = m.group(0).strip()
        first = span.split()[0]
        if m.start() == 0 and len(span.split()) == 1 and not span.isupper():
            continue  # a lone capitalised first word is usually just the start of the sentence
        if first.lower() in MONTHS or span.lower() in STOPWORDS:
            continue
        found.append(span)
    return found


def _entity_present(entity: str, index: ContextIndex) -> bool:
    entity = re.sub(r"'s?$", "", entity)  # "Greenleaf Coffee's" names Greenleaf Coffee
    if entity.lower() in index.lower_text:
        return True
    parts = [p for p in words(entity) if p.lower() not in STOPWORDS]
    # "Ms Solberg" matches "Ingrid Solberg": enough when the most specific (last) word is there.
    return bool(parts) and parts[-1].lower() in index.lower_words


def claim_signals(claim: str, context: str) -> ClaimSignals:
    index = index_context(context)
    toks = words(claim)
    low = [t.lower() for t in toks]
    cs = content_stems(toks)
    cset = set(cs)
    n = max(1, len(cset))
    overlaps = [len(cset & s) for s in index.sentence_stems]
    order = sorted(range(len(overlaps)), key=lambda i: (-overlaps[i], len(index.sentences[i])))
    best = order[0] if order else 0
    top2 = cset & (index.sentence_stems[best] | (index.sentence_stems[order[1]] if len(order) > 1 else frozenset()))
    novel = [w for w in dict.fromkeys(cs) if w not in index.stems]
    bigrams = list(zip(cs, cs[1:]))
    trigrams = list(zip(low, low[1:], low[2:]))
    best_sentence = index.sentences[best] if index.sentences else ""
    best_low = set(w.lower() for w in words(best_sentence))

    claim_q = quantities(claim)
    missing_q = [q for q in claim_q if not any(same_value(q.value, c.value) for c in index.quantities)]
    best_q = quantities(index.sentences[best]) if missing_q and index.sentences else []
    conflicts = [c.text for c in best_q if any(_comparable(c, q) for q in missing_q)
                 and not any(same_value(c.value, q.value) for q in claim_q)]
    conflicting_date = date_conflict(dates(claim), index.dates) if index.dates else None

    entities = _entities(claim)
    missing_entities = [e for e in entities if not _entity_present(e, index)]

    claim_neg = any(w in NEGATIONS or w.endswith("n't") for w in low)
    sent_neg = any(w in NEGATIONS or w.endswith("n't") for w in best_low)
    novel_intensifiers = [w for w in dict.fromkeys(low) if w in INTENSIFIERS and w not in index.lower_words]
    # Case matters here: "may" hedges, "May" is a month.
    claim_hedged = any(t in HEDGES for t in toks)
    sent_hedged = any(t in HEDGES for t in words(best_sentence))
    claim_attr = next((w for w in low if w in ATTRIBUTION), None)
    sent_attr = next((w for w in best_low if w in ATTRIBUTION or w == "according"), None)

    values = {
        "n_content": float(len(cset)),
        "recall_global": len(cset & index.stems) / n,
        "recall_best": (overlaps[best] / n) if overlaps else 0.0,
        "recall_top2": len(top2) / n,
        "bigram_recall": (sum(b in index.bigrams for b in bigrams) / len(bigrams)) if bigrams else 1.0,
        "trigram_recall": (sum(t in index.trigrams for t in trigrams) / len(trigrams)) if trigrams else 1.0,
        "n_novel_bigrams": float(sum(b not in index.bigrams for b in bigrams)),
        "n_novel": float(len(novel)),
        "n_novel_capitalised": float(sum(1 for t in toks if t[0].isupper() and stem(t) in novel)),
        "novel_share": len(novel) / n,
        "n_numbers": float(len(claim_q)),
        "n_numbers_missing": float(len(missing_q)),
        "number_conflict": float(bool(conflicts)),
        "date_conflict": float(conflicting_date is not None),
        "n_entities": float(len(entities)),
        "n_entities_missing": float(len(missing_entities)),
        "negation_mismatch": float(claim_neg != sent_neg),
        "n_intensifiers_novel": float(len(novel_intensifiers)),
        "hedge_dropped": float(sent_hedged and not claim_hedged),
        "hedge_added": float(claim_hedged and not sent_hedged),
        "attribution_dropped": float(sent_attr is not None and claim_attr is None),
        "claim_words": float(len(toks)),
        "best_sentence_words": float(len(words(best_sentence))),
        "log_context_words": math.log1p(index.n_words),
    }
    return ClaimSignals(
        values=values,
        best_sentence=best_sentence,
        novel_words=novel,
        missing_numbers=[q.text for q in missing_q],
        conflicting_numbers=conflicts,
        missing_entities=missing_entities,
        novel_intensifiers=novel_intensifiers,
        conflicting_date=conflicting_date,
        attribution_word=sent_attr,
    )
