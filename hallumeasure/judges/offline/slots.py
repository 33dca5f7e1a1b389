"""Typed values of a claim compared with the same slots of its closest context sentences.

A faithful claim may reword everything around a fact, but the fact's value must survive:
the number of rooms, the opening time, the year, the weekday, the person's name, the
quantifier ("all" / "some" / "no") and the modality ("may" / "will"). This module reads
those values out of a claim and out of the context sentences that share most of its other
words, normalises them ("nine" = "9", "9 a.m." = "9:00" = "09:00" = "9 o'clock",
"150-seat" = "with 150 seats"), and reports every value of the claim that the context does
not hold, with the value the aligned context sentence holds in its place.

A value absent from the whole context is *invented*; one that the aligned sentence replaces
with another value of the same type is *swapped*. Both are definite, explainable errors: the
judge labels such a claim unsupported whatever its other signals say, and names both values
in the reason ("the claim says 10 rooms; the context says 9 rooms").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.text import quote
from hallumeasure.judges.offline.context import ContextIndex
from hallumeasure.judges.offline.lexicon import EXCLUSIVE, MONTHS, STOPWORDS, WEEKDAYS
from hallumeasure.judges.offline.tokens import short_form, source_stems, stem, words
from hallumeasure.judges.offline.values import (
    Date,
    Quantity,
    clock_times,
    dates,
    letter_runs,
    plain_letters,
    quantities,
    same_value,
)

# ----------------------------------------------------------------------------------------------- values

#: Words that carry the day scope of a statement, as the set of weekdays (0 = Monday) they cover.
_ALL_DAYS = frozenset(range(7))
_DAY_SCOPES: dict[str, frozenset[int]] = {
    **{
        d: frozenset({i})
        for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
    },
    "weekday": frozenset(range(5)),
    "weekdays": frozenset(range(5)),
    "weekend": frozenset({5, 6}),
    "weekends": frozenset({5, 6}),
    "daily": _ALL_DAYS,
    "everyday": _ALL_DAYS,
}
_DAY_PLURALS = {f"{d}s": d for d in WEEKDAYS}
_QUANTIFIERS = {
    **dict.fromkeys(
        ("all", "every", "each", "everyone", "everybody", "everything", "always", "entire", "whole", "unanimously"),
        "all",
    ),
    **dict.fromkeys(
        (
            "some",
            "several",
            "many",
            "most",
            "few",
            "part",
            "half",
            "majority",
            "minority",
            "sometimes",
            "often",
            "occasionally",
        ),
        "some",
    ),
    **dict.fromkeys(("none", "nobody", "nothing", "never", "no"), "none"),
}
#: Words that make a statement tentative; "will" and plain tense make it definite.
_TENTATIVE = frozenset(
    {
        "may",
        "might",
        "could",
        "possibly",
        "perhaps",
        "probably",
        "likely",
        "unlikely",
        "should",
        "expect",
        "expects",
        "expected",
        "hope",
        "hopes",
        "hoped",
        "plan",
        "plans",
        "planned",
        "aims",
        "intends",
    }
)
#: Tentative only as verbs before "to" ("plans to build"), not as nouns ("the paid plan").
_INTENT = frozenset({"hope", "hopes", "hoped", "plan", "plans", "planned", "aims", "intends"})
#: Every word the token loop of ``read_values`` reads a value from (day scopes, quantifiers, months, hedges).
_VALUE_WORDS = frozenset({*_DAY_SCOPES, *_DAY_PLURALS, "every", *_QUANTIFIERS, *MONTHS, *_INTENT, *_TENTATIVE})
_CAPS_NAME_RE = re.compile(r"[A-Z][a-zA-Z'\-]*(?:\s+(?:of|de|van|von|al|bin|da|du|la|le)?\s*[A-Z][a-zA-Z'\-]*)*")


@dataclass(frozen=True)
class Value:
    """One typed value read from a sentence: ``kind``, its text as written and its normal form."""

    kind: str  # number, share, money, year, time, date, days, name, quantifier, modality
    text: str
    norm: object
    #: Stems of the content words right after a number ("10 rooms" -> {"room"}), for pairing like with like.
    unit: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Conflict:
    """A value of the claim that the context does not hold, and what the aligned context sentence says."""

    kind: str
    claim: str
    context: str | None
    sentence: int | None
    label: Label
    subtype: Subtype

    def describe(self, sentences: list[str]) -> str:
        if self.kind == "modality":
            where = f" ({quote(sentences[self.sentence])})" if self.sentence is not None else ""
            if self.claim == "it as certain":
                return f"the claim states as certain what the context only says {self.context} happen{where}"
            return f"the claim hedges with {self.claim} what the context states as certain{where}"
        if self.context is None:
            what = _KIND_NAMES.get(self.kind, "value")
            return f"the claim says {self.claim}; the context never gives this {what}"
        where = f" ({quote(sentences[self.sentence])})" if self.sentence is not None else ""
        return f"the claim says {self.claim}; the context says {self.context}{where}"


_KIND_NAMES = {
    "number": "number",
    "share": "percentage",
    "money": "amount",
    "year": "year",
    "time": "time",
    "date": "date",
    "days": "day",
    "name": "name",
    "quantifier": "quantity",
    "modality": "modality",
    "speaker": "source",
}
_SUBTYPES = {
    "number": Subtype.NUMBER,
    "share": Subtype.NUMBER,
    "money": Subtype.NUMBER,
    "year": Subtype.NUMBER,
    "time": Subtype.TEMPORAL,
    "date": Subtype.TEMPORAL,
    "days": Subtype.TEMPORAL,
    "name": Subtype.ENTITY,
    "modality": Subtype.TEMPORAL,
    "quantifier": Subtype.OVERGENERALIZATION,
}


#: The words after a number, its money word and its next word (read by the three functions below).
_UNIT_RE = re.compile(r"[\-\s]*((?:[A-Za-z][A-Za-z\-]*\s*){1,4})")
_MONEY_WORD_RE = re.compile(r"\s*(?:million|billion|thousand|bn|m|k)?\s*([A-Za-z]+)")
_NEXT_WORD_RE = re.compile(r"\s+([a-z][a-z\-]*)")


def _unit(text: str, end: int) -> frozenset[str]:
    """Stems of the content words right after a number, up to the first small word or punctuation
    ("150-seat" -> seat; "450 people at" -> people; "6 euros for adults" -> nothing: currency and scale
    words are the kind, not the unit). Units of a closed set are read as its member ("kg" = "kilograms")."""
    tail = _UNIT_RE.match(text[end : end + 50])
    if not tail:
        return frozenset()
    out: list[str] = []
    for w in tail.group(1).replace("-", " ").lower().split():
        if w in _SCALE_WORDS or stem(w) in _CURRENCY_STEMS:
            continue
        if w in STOPWORDS or len(out) == 2:
            break
        out.append(min(EXCLUSIVE[w])[1] if w in EXCLUSIVE else stem(w))
    return frozenset(out)


_SCALE_WORDS = frozenset({"thousand", "million", "billion", "trillion", "bn", "m", "k", "percent", "per", "cent"})
_CURRENCY_STEMS = frozenset({"dollar", "euro", "pound", "yen", "cent", "franc", "rupee", "yuan"})


def _money_word(text: str, end: int) -> bool:
    follow = _MONEY_WORD_RE.match(text[end : end + 30])
    return follow is not None and stem(follow.group(1)) in _CURRENCY_STEMS


def _next_word_is_content(text: str, end: int) -> bool:
    follow = _NEXT_WORD_RE.match(text[end : end + 30])
    return follow is not None and follow.group(1) not in STOPWORDS


def _is_name_token(token: str, first: bool, next_token: str) -> bool:
    """A capitalised word that is not the sentence's first word (a first word counts only when the next word
    is capitalised too, as in "Maria Smith leads": "According", "Fewer" and "Not" are no names)."""
    low = token.lower()
    if not token[0].isupper() or low in STOPWORDS or low in MONTHS or low in WEEKDAYS or low in _DAY_PLURALS:
        return False
    nxt = next_token.lower()
    return not first or (
        next_token[:1].isupper() and nxt not in STOPWORDS and nxt not in MONTHS and nxt not in WEEKDAYS
    )


@lru_cache(maxsize=8192)
def read_values(text: str, names: bool = True) -> tuple[Value, ...]:
    """Every typed value of one sentence (``names``: also the capitalised words that read as names)."""
    letters = letter_runs(text)
    numbers = _numeric_values(text, quantities(text, letters), _clock_spans(text))
    return _values(text, words(text), dates(text, letters), numbers, names)


def sentence_values(index: ContextIndex, number: int) -> tuple[Value, ...]:
    """``read_values`` of one context sentence, read once per context from the words and numbers the index holds."""
    cache = index.slot_cache
    key = ("sentence", number)
    if key not in cache:
        text = index.sentences[number]
        if plain_letters(text):  # then the index's numbers are the ones read_values would find
            cache[key] = _values(text, index.sentence_words(number), dates(text), _sentence_numbers(index, number))
        else:
            cache[key] = read_values(text)
    values: tuple[Value, ...] = cache[key]
    return values


def _sentence_numbers(index: ContextIndex, number: int) -> list[Value]:
    """The numbers, shares, amounts and years of one context sentence (kept on the index: the whole context's
    numbers are read for the pool, the closest sentences' for their values)."""
    cache = index.slot_cache
    key = ("numbers", number)
    if key not in cache:
        text = index.sentences[number]
        cache[key] = _numeric_values(text, index.sentence_quantities[number], _clock_spans(text))
    numbers: list[Value] = cache[key]
    return numbers


def _clock_spans(text: str) -> list[tuple[int, int]]:
    return [span for _, _, span in clock_times(text)]


def _values(
    text: str, toks: list[str], found_dates: set[Date], numbers: list[Value], names: bool = True
) -> tuple[Value, ...]:
    """The values of ``text`` from its words, dates and numbers: times, dates, numbers, then the values its
    words name (days, quantifiers, months, hedges) and, with ``names``, its names."""
    out = [Value("time", t, norm) for t, norm, _ in clock_times(text)]
    for d in found_dates:
        if d[1]:
            out.append(Value("date", _date_text(d), d))
    months = {d[1] for d in found_dates}
    out += numbers
    lows = [t.lower() for t in toks]
    for i, low in enumerate(lows):
        if low not in _VALUE_WORDS:
            continue  # most words name no value: spare them the tests below
        day = _DAY_PLURALS.get(low, low)
        if day in _DAY_SCOPES:
            out.append(Value("days", toks[i], _DAY_SCOPES[day]))
        elif low == "every" and i + 1 < len(lows) and lows[i + 1] == "day":
            out.append(Value("days", "every day", _ALL_DAYS))
        if (
            low in _QUANTIFIERS
            and not (i + 1 < len(lows) and lows[i + 1] in ("longer", "one", "doubt"))
            and not (i and lows[i - 1] in ("the", "at", "a"))
        ):
            out.append(Value("quantifier", toks[i], _QUANTIFIERS[low]))
        month = MONTHS.get(low) if len(low) > 3 and toks[i][0].isupper() and low != "may" else None
        if month and month not in months:
            out.append(Value("date", toks[i], (0, month, 0)))
        intent = low in _INTENT and (
            not (i + 1 < len(lows) and lows[i + 1] == "to")  # "the free plan" is a noun,
            or (i > 0 and lows[i - 1] in ("a", "an", "the", "its", "their", "his", "her"))
        )
        if low in _TENTATIVE and not (toks[i] == "May" and i > 0) and not intent:
            out.append(Value("modality", toks[i], "tentative"))
    for i, tok in enumerate(toks if names else ()):
        if tok[0].isupper() and _is_name_token(tok, i == 0, toks[i + 1] if i + 1 < len(toks) else ""):
            base = re.sub(r"'s?$", "", tok)
            out.append(Value("name", base, base))
    return tuple(out)


def _numeric_values(text: str, found: list[Quantity], taken: list[tuple[int, int]]) -> list[Value]:
    """Numbers, shares, amounts of money and years among the quantities ``found`` in ``text`` (those inside a
    clock time, the ``taken`` spans, are times)."""
    out: list[Value] = []
    for q in found:
        if any(a < q.end and q.start < b for a, b in taken) or q.start < 0:
            continue
        if q.percent:
            kind = "share"
        elif q.text[:1] in "$€£¥" or _money_word(text, q.end):
            kind = "money"
        elif (
            q.text.isdigit() and len(q.text) == 4 and 1500 <= q.value <= 2100 and not _next_word_is_content(text, q.end)
        ):
            kind = "year"
        else:
            kind = "number"
        out.append(Value(kind, q.text, q.value, _unit(text, q.end) if kind in ("number", "money") else frozenset()))
    return out


def _date_text(d: tuple[int, int, int]) -> str:
    from hallumeasure.judges.offline.values import format_date

    return format_date(d)


# ------------------------------------------------------------------------------------------- comparison


def _same(kind: str, a: Any, b: Any) -> bool:
    """Whether two normal forms (``Value.norm``, whose type depends on ``kind``) agree."""
    if kind == "time":
        return bool(a & b)
    if kind in ("number", "share", "money", "year"):
        return any(
            same_value(float(a), float(b) * s) or same_value(float(b), float(a) * s) for s in (1.0, 1e3, 1e6, 1e9)
        )
    if kind == "date":
        (y1, m1, d1), (y2, m2, d2) = a, b
        return bool(m1 == m2 and (not y1 or not y2 or y1 == y2) and (not d1 or not d2 or d1 == d2))
    if kind == "days":
        return bool(a <= b)  # the claim's days must all be covered
    return bool(a == b)


#: Number-like kinds compared with one another ("9" is not held against "9%").
_COMPARABLE = {
    "number": ("number",),
    "share": ("share",),
    "money": ("money", "number"),
    "year": ("year",),
    "time": ("time",),
    "date": ("date",),
    "days": ("days",),
    "name": ("name",),
    "quantifier": ("quantifier",),
}


_AFTER_VALUE_RE = re.compile(
    r"(?:[\-\s]*(?:thousand|million|billion|trillion|bn)\b)?"
    r"(?:\s*(?:dollars?|euros?|pounds?|yen|cents?|francs?|rupees?|yuan)\b)?",
    re.IGNORECASE,
)


_UNIT_NOUN_RE = re.compile(r"[\-\s]*[A-Za-z][A-Za-z\-]*")


def _with_unit(v: Value, text: str) -> str:
    """The value as it reads in its sentence, with its scale, currency and unit noun ("4.2 million euros",
    "10 rooms")."""
    if v.kind not in ("number", "money", "share"):
        return v.text
    at = text.find(v.text)
    if at < 0:
        return v.text
    after = _AFTER_VALUE_RE.match(text, at + len(v.text))
    assert after is not None  # every part of the pattern is optional: it always matches
    end = after.end()
    if v.unit:
        noun = _UNIT_NOUN_RE.match(text, end)
        end = noun.end() if noun else end
    return text[at:end].strip()


def _full_name(token: str, text: str) -> str:
    """The whole capitalised name a token belongs to ("Smith" -> "Maria Smith")."""
    for match in _CAPS_NAME_RE.finditer(text):
        if re.search(r"\b" + re.escape(token) + r"\b", match.group(0)):
            return re.sub(r"^(?:The|A|An|In|On|At|By|For|From)\s+", "", match.group(0))
    return token


def slot_conflicts(claim: str, index: ContextIndex, candidates: list[int], aligned: bool) -> list[Conflict]:
    """Values of ``claim`` the context of ``index`` does not hold.

    ``candidates``: the context sentences closest to the claim, best first (their values are the
    claim's slots' counterparts; a value found anywhere else in the context is not invented).
    ``aligned``: the best sentence shares most of the claim's other words, so a value it replaces
    is a swap rather than a different fact.
    """
    sentences = index.sentences
    mine = read_values(claim)
    near = [(i, sentence_values(index, i)) for i in candidates]
    out: list[Conflict] = []
    claim_names = {v.norm for v in mine if v.kind == "name"}
    for v in mine:
        if v.kind in ("modality", "quantifier"):
            continue
        if v.kind == "name":
            if v.text.lower() in index.lower_text or (v.text.isupper() and not aligned):
                continue
            if any(
                w.kind == "name" and short_form(v.text, _full_name(w.text, sentences[i])) for i, vs in near for w in vs
            ):
                continue  # "West Brom" where the source says "West Bromwich Albion": a short form, not another name
            other = (
                next(
                    (
                        (i, w)
                        for i, vs in near
                        for w in vs
                        if w.kind == "name"
                        and w.norm not in claim_names
                        and w.text.isupper() == v.text.isupper()
                        and _same_slot(v, claim, w, sentences[i])
                    ),
                    None,
                )
                if aligned
                else None
            )
            name = _full_name(v.text, claim)
            if other is None:
                if v.text.isupper():
                    continue  # an acronym the context spells out is not an invented name
                out.append(Conflict("name", name, None, None, Label.ABSENT, Subtype.ENTITY))
            else:
                i, w = other
                out.append(
                    Conflict("name", name, _full_name(w.text, sentences[i]), i, Label.CONTRADICTED, Subtype.ENTITY)
                )
            continue
        kinds = _COMPARABLE[v.kind]
        if v.kind != "days" and any(_holds(v, vs, strict=True) for _, vs in near):
            continue  # held by an aligned sentence with its unit: no need to read the whole context
        pool = [w for w in context_pool(index, POOL_GROUPS[v.kind]) if w.kind in kinds]
        if v.kind == "days" and len(v.norm) == 1 and any(len(w.norm) == 1 for w in pool):  # type: ignore[arg-type]
            pool = [w for w in pool if len(w.norm) == 1]  # type: ignore[arg-type]  # a weekday against weekdays
        other = next(
            (
                (i, w)
                for i, vs in near
                for w in vs
                if w.kind in kinds
                and _unit_fits(v, w, strict=True)
                and not any(_held(w, x) for x in mine if x.kind in kinds)
            ),
            None,
        )
        # The value is held with the same unit, or loosely (no unit on one side) while no aligned sentence gives
        # the claim's unit another value ("five projects" against "Version 5.0 ... three projects").
        if _holds(v, pool, strict=True) or (other is None and _holds(v, pool, strict=False)):
            continue
        if other is None and v.kind in ("number", "money"):
            other = next(
                (
                    (i, w)
                    for i, vs in near[:1]
                    for w in vs
                    if w.kind in kinds and not any(_same(w.kind, w.norm, x.norm) for x in mine if x.kind in kinds)
                ),
                None,
            )
        if other is None:
            if v.kind == "days":
                continue  # "every day" against "every morning": only a day swapped for another day counts
            out.append(
                Conflict(
                    v.kind,
                    _with_unit(v, claim),
                    None,
                    None,
                    Label.PARTIALLY_SUPPORTED if aligned else Label.ABSENT,
                    _SUBTYPES[v.kind],
                )
            )
            continue
        i, w = other
        label = Label.CONTRADICTED if aligned else Label.ABSENT
        subtype = _SUBTYPES[v.kind]
        if v.kind == "days" and w.norm < v.norm:  # type: ignore[operator]
            label, subtype = Label.PARTIALLY_SUPPORTED, Subtype.OVERGENERALIZATION
        out.append(Conflict(v.kind, _with_unit(v, claim), _with_unit(w, sentences[i]), i, label, subtype))
    if aligned and near:
        out += _scope_conflicts(claim, mine, near[0], sentences)
        speaker = _speaker_conflict(claim, near[0], sentences)
        if speaker is not None:
            out = [c for c in out if c.kind != "name" or c.claim not in speaker.claim] + [speaker]
    return out


_SPEECH_RE = re.compile(
    r"\b(?:said|says|say|told|warned|claimed|claims|argued|argues|stated|insisted|believes)\b|"
    r"\baccording to\b",
    re.IGNORECASE,
)
_PRONOUNS = frozenset({"he", "she", "they", "it", "we", "i", "you", "who", "which", "that"})


def speaker(sentence: str) -> str | None:
    """Who a sentence attributes its statement to: the words before "said" (up to four, back to a comma) or
    the words after "according to" (up to a comma); None when it attributes nothing or to a pronoun."""
    match = _SPEECH_RE.search(sentence)
    if match is None:
        return None
    if match.group(0).lower().startswith("according"):
        phrase = re.split(r"[,.;]", sentence[match.end() :], maxsplit=1)[0]
        who = phrase.split()[:4]
    else:
        before = re.split(r"[,;\-–—()]", sentence[: match.start()])[-1].split()
        who = before[-4:]
    if who and (
        who[-1].lower() in STOPWORDS | _PRONOUNS or not who[-1][0].isalpha() or who[-1].lower().endswith(("ed", "ing"))
    ):
        return None  # "he", "which", "the relationship -": no source named right before the verb
    if not any(w.lower() not in STOPWORDS for w in who) or (len(who) == 1 and who[0].islower()):
        return None  # "68-year-old says": a lone lower-case word is no named source
    return " ".join(who).strip()


def _speaker_conflict(claim: str, best: tuple[int, tuple[Value, ...]], sentences: list[str]) -> Conflict | None:
    """The claim names another source than the aligned context sentence, or a source the context never names."""
    mine = speaker(claim)
    if mine is None:
        return None
    i = best[0]
    theirs = speaker(sentences[i])
    mine_stems = {stem(w) for w in words(mine) if w.lower() not in STOPWORDS}
    if theirs is not None:
        their_stems = {stem(w) for w in words(theirs) if w.lower() not in STOPWORDS}
        if mine_stems & their_stems or _named(mine) != _named(theirs):
            return None  # "the Frenchman" may well be "Franck Ribery": only like is held against like
        return Conflict(
            "speaker",
            f"{_strip_article(mine)} said it",
            _strip_article(theirs),
            i,
            Label.CONTRADICTED,
            Subtype.ATTRIBUTION_FAILURE,
        )
    if mine_stems & source_stems(tuple(sentences)):
        return None
    return Conflict("speaker", f"{_strip_article(mine)} said it", None, None, Label.ABSENT, Subtype.ATTRIBUTION_FAILURE)


def _named(phrase: str) -> bool:
    """True when a speaker phrase holds a name (a capitalised word after its first)."""
    return any(w[0].isupper() for w in phrase.split()[1:])


def _strip_article(phrase: str) -> str:
    return re.sub(r"^(?:the|a|an)\s+", "", phrase.strip(), flags=re.IGNORECASE)


def _held(w: Value, x: Value) -> bool:
    """The claim's value ``x`` already states the context's ``w`` (days: the very same days, not a wider set)."""
    return w.norm == x.norm if w.kind == "days" else _same(w.kind, w.norm, x.norm)


def _unit_fits(v: Value, w: Value, strict: bool = False) -> bool:
    """Two numbers are the same slot when their unit nouns meet (or, unless ``strict``, one has none)."""
    if v.kind not in ("number", "money") or w.kind not in ("number", "money"):
        return True
    if not v.unit or not w.unit:
        return not strict
    return bool(v.unit & w.unit)


def _holds(v: Value, values: Iterable[Value], strict: bool) -> bool:
    """Whether ``values`` hold the value of ``v``: one of its kind with the same normal form and a unit that fits.

    The unit is tested first: it is cheap, and rules out most numbers before their values are compared.
    """
    kind = v.kind
    if strict and kind in ("number", "money"):  # ``_unit_fits`` spelled out: both need units, and they must meet
        unit = v.unit
        return bool(unit) and any(
            w.kind == kind and not unit.isdisjoint(w.unit) and _same(kind, v.norm, w.norm) for w in values
        )
    return any(w.kind == kind and _unit_fits(v, w, strict) and _same(kind, v.norm, w.norm) for w in values)


def _neighbours_of(token: str, text: str) -> set[tuple[int, str]]:
    """(side, word) next to each occurrence of ``token`` in ``text``: (-1, previous word), (1, next word)."""
    toks = [t.lower() for t in words(text)]
    out: set[tuple[int, str]] = set()
    for k, t in enumerate(toks):
        if t == token.lower():
            if k:
                out.add((-1, toks[k - 1]))
            if k + 1 < len(toks):
                out.add((1, toks[k + 1]))
    return out


def _same_slot(v: Value, claim: str, w: Value, sentence: str) -> bool:
    """Two names fill the same slot when a word next to one is the same word next to the other ("Maria Smith" /
    "Anna Smith", "said Jones" / "said Smith", "Carver Foundation" / "Hartwell Foundation")."""
    return bool(_neighbours_of(v.text, claim) & _neighbours_of(w.text, sentence))


def _hedges_claim(hedge: str, sentence: str, claim: str) -> bool:
    toks = words(sentence)
    mine = {stem(w) for w in words(claim) if w.lower() not in STOPWORDS}
    for k, t in enumerate(toks):
        if t == hedge and not (
            t.lower() in ("could", "can") and k + 1 < len(toks) and toks[k + 1].lower() in ("not", "n't", "never")
        ):  # "could not" = was unable
            ahead = [stem(x) for x in toks[k + 1 : k + 5] if x.lower() not in STOPWORDS]
            if any(a in mine for a in ahead):
                return True
    return False


def _scope_conflicts(
    claim: str, mine: tuple[Value, ...], best: tuple[int, tuple[Value, ...]], sentences: list[str]
) -> list[Conflict]:
    """Quantifier and modality slots, compared with the best-aligned sentence only."""
    i, theirs = best
    out: list[Conflict] = []
    claim_q = {v.norm: v for v in mine if v.kind == "quantifier"}
    context_q = {v.norm: v for v in theirs if v.kind == "quantifier"}
    for norm, v in claim_q.items():
        if norm in context_q or not context_q:
            continue
        w = next(iter(context_q.values()))
        label = Label.PARTIALLY_SUPPORTED if norm == "all" else Label.CONTRADICTED
        subtype = Subtype.OVERGENERALIZATION if norm == "all" else Subtype.OTHER
        out.append(Conflict("quantifier", f"'{v.text}'", f"'{w.text}'", i, label, subtype))
    claim_tentative = any(v.kind == "modality" for v in mine)
    # A hedge counts only where the claim's statement is: a content word of the claim follows it closely
    # ("more rain may arrive" against "more rain will arrive"; not "..., but it could have been ...").
    context_tentative = next(
        (v for v in theirs if v.kind == "modality" and _hedges_claim(v.text, sentences[i], claim)), None
    )
    if context_tentative is not None and not claim_tentative:
        out.append(
            Conflict(
                "modality",
                "it as certain",
                f"'{context_tentative.text}'",
                i,
                Label.PARTIALLY_SUPPORTED,
                Subtype.TEMPORAL,
            )
        )
    return out


#: The group of context values a claim value of each kind is looked up in (read once per context and group).
POOL_GROUPS = {
    "number": "numeric",
    "share": "numeric",
    "money": "numeric",
    "year": "numeric",
    "time": "time",
    "date": "date",
    "days": "days",
}


def context_pool(index: ContextIndex, group: str) -> tuple[Value, ...]:
    """The context's values of one group, read once per context (kept on the cached context index)."""
    cache = index.slot_cache
    key = ("pool", group)
    if key not in cache:
        cache[key] = context_values(index, group)
    pool: tuple[Value, ...] = cache[key]
    return pool


def context_values(index: ContextIndex, group: str) -> tuple[Value, ...]:
    """Every value of one group of kinds in a whole context (``context_pool`` keeps it on the context)."""
    sentences = index.sentences
    if group == "numeric":
        return tuple(v for number in range(len(sentences)) for v in _sentence_numbers(index, number))
    if group == "time":
        return tuple(Value("time", t, norm) for s in sentences for t, norm, _ in clock_times(s))
    kind = "date" if group == "date" else "days"
    return tuple(v for s in sentences for v in read_values(s, names=False) if v.kind == kind)
