"""Synthetic minimal edits for training the entailment model (rule-based, in the spirit of FactCC).

A sentence of a source text is entailed by that text; the same sentence with one detail changed
(a number, a name, a weekday or month, an antonym, a negation, a pronoun) is not. Pairs made this
way teach the contrast that summary-consistency sets test, a faithful sentence next to the same
sentence with one swapped detail, from unlabelled text: no label of any dev set is used. Kryscinski
et al. (2020, FactCC) trained a consistency classifier on transformations of this kind.

Deterministic for a seed. Used by scripts/train_nli.py (``--synthetic``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable

from hallumeasure.judges.offline.antonyms import ANTONYM_PAIRS
from hallumeasure.judges.offline.lexicon import EXCLUSIVE, MONTHS, WEEKDAYS

_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.]*\d)")
_NAME = re.compile(r"(?<=[a-z,;:] )([A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})?)")
_AUX = re.compile(r"\b(is|was|are|were|has|have|had|will|can|could|would|should|does|did)\b(?! not\b)")
_NOT = re.compile(r"\b(is|was|are|were|has|have|had|will|can|could|would|should|does|did) not\b")
_PRONOUNS = {"he": "she", "she": "he", "his": "her", "him": "her", "her": "his"}
_OPPOSITE: dict[str, str] = {}
for _a, _b in ANTONYM_PAIRS:
    _OPPOSITE.setdefault(_a, _b)
    _OPPOSITE.setdefault(_b, _a)
_MEMBERS: dict[str, list[str]] = {}
for _word, _sets in EXCLUSIVE.items():
    for _set, _ in _sets:
        _MEMBERS.setdefault(_set, []).append(_word)


def _keep_case(new: str, old: str) -> str:
    return new.capitalize() if old[:1].isupper() else new


def change_number(sentence: str, rng: random.Random, context: str) -> str | None:
    found = list(_NUMBER.finditer(sentence))
    if not found:
        return None
    m = rng.choice(found)
    text = m.group(1)
    value = float(text.replace(",", ""))
    if "." in text:
        places = len(text.split(".")[1])
        new = f"{value * rng.choice([0.5, 0.8, 1.25, 1.5, 2.0]):.{places}f}"
    elif 1900 <= value <= 2100 and "," not in text:
        new = str(int(value) + rng.choice([-3, -2, -1, 1, 2, 3]))
    else:
        whole = int(value)
        step = rng.choice([1, 2, max(1, whole // 10), max(1, whole // 3), whole])
        changed = whole + step if whole - step <= 0 or rng.random() < 0.5 else whole - step
        new = f"{changed:,}" if "," in text else str(changed)
    if new == text:
        return None
    return sentence[: m.start(1)] + new + sentence[m.end(1) :]


def swap_name(sentence: str, rng: random.Random, context: str) -> str | None:
    mine = list(_NAME.finditer(sentence))
    if not mine:
        return None
    m = rng.choice(mine)
    others = sorted({n for n in _NAME.findall(context) if n not in sentence and n.lower() not in EXCLUSIVE})
    if not others:
        return None
    return sentence[: m.start(1)] + rng.choice(others) + sentence[m.end(1) :]


def _swap_word(sentence: str, rng: random.Random, table: Callable[[str], str | None]) -> str | None:
    words = list(re.finditer(r"[A-Za-z]+", sentence))
    options = [(m, table(m.group(0).lower())) for m in words]
    options = [(m, new) for m, new in options if new]
    if not options:
        return None
    m, new = rng.choice(options)
    return sentence[: m.start()] + _keep_case(new, m.group(0)) + sentence[m.end() :]


def antonym(sentence: str, rng: random.Random, context: str) -> str | None:
    return _swap_word(sentence, rng, _OPPOSITE.get)


#: Weekdays and months by name ("may" is left out: it is more often the verb).
_CALENDAR = {
    **dict.fromkeys(WEEKDAYS, "weekday"),
    **{m: "month" for m in MONTHS if len(m) > 4 or m in ("june", "july")},
}
_MEMBERS["weekday"] = sorted(WEEKDAYS)
_MEMBERS["month"] = sorted(m for m, kind in _CALENDAR.items() if kind == "month")


def exclusive_member(sentence: str, rng: random.Random, context: str) -> str | None:
    """A weekday, month, colour, relative... replaced by another member of its set."""

    def other(word: str) -> str | None:
        sets = EXCLUSIVE.get(word) or ({(_CALENDAR[word], word)} if word in _CALENDAR else None)
        if not sets:
            return None
        name = sorted(sets)[0][0]
        choices = [w for w in _MEMBERS[name] if w != word and len(w) > 2]
        return rng.choice(sorted(choices)) if choices else None

    return _swap_word(sentence, rng, other)


def pronoun(sentence: str, rng: random.Random, context: str) -> str | None:
    return _swap_word(sentence, rng, _PRONOUNS.get)


def negate(sentence: str, rng: random.Random, context: str) -> str | None:
    removed = _NOT.search(sentence)
    if removed:
        return sentence[: removed.start()] + removed.group(1) + sentence[removed.end() :]
    added = _AUX.search(sentence)
    if added:
        return sentence[: added.end()] + " not" + sentence[added.end() :]
    return None


EDITS: tuple[Callable[[str, random.Random, str], str | None], ...] = (
    change_number,
    swap_name,
    antonym,
    exclusive_member,
    pronoun,
    negate,
)


_ASIDE = re.compile(r" \([^()]{3,80}\)|, (?:which|who|where|when|while|as|after|before|including) [^,]{3,80},")


def shorten(sentence: str, rng: random.Random) -> str:
    """The sentence without one aside (a bracket, or a clause between commas), still entailed; else unchanged."""
    asides = list(_ASIDE.finditer(sentence))
    if not asides:
        return sentence
    m = rng.choice(asides)
    return (
        sentence[: m.start()]
        + ("," if m.group(0).startswith(",") and m.end() < len(sentence) - 1 else "")
        + (sentence[m.end() :])
    )


def edit(sentence: str, rng: random.Random, context: str) -> str | None:
    """One randomly chosen edit that applies to ``sentence`` (None when none does)."""
    for rule in rng.sample(EDITS, len(EDITS)):
        changed = rule(sentence, rng, context)
        if changed and changed != sentence:
            return changed
    return None


def synthetic_pairs(
    texts: Iterable[str], n: int, seed: int, premise_for: Callable[[str, str], str], split: Callable[[str], list[str]]
) -> list[tuple[str, str, int]]:
    """Up to ``n`` (premise, hypothesis, label 1 = entailed) pairs, half kept sentences and half edited ones.

    Each chosen sentence (8 to 40 words) of a text gives one pair: the sentence itself or, as often,
    an edit of it, against the text's sentences that best match the hypothesis (as at inference).
    """
    rng = random.Random(seed)
    pool = sorted(set(texts))
    rng.shuffle(pool)
    out: list[tuple[str, str, int]] = []
    for text in pool:
        sentences = [s for s in split(text) if 8 <= len(s.split()) <= 40]
        for sentence in rng.sample(sentences, min(2, len(sentences))):
            if rng.random() < 0.5:
                kept = shorten(sentence, rng)
                out.append((premise_for(kept, text), kept, 1))
            else:
                changed = edit(sentence, rng, text)
                if changed:
                    out.append((premise_for(changed, text), changed, 0))
            if len(out) >= n:
                return out
    return out
