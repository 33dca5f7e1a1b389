"""Label, subtype and a plain-language reason for a claim the model scored as unsupported.

The model says *how likely* a claim is unsupported; the signals say *why*. The first signal
that names a definite error wins (a different number, a different date, an opposite or a
negation, a swapped name, ...), and the label follows from what was found:

- contradicted: the closest context says something else (a conflicting value, an opposite, a negation);
- partially_supported: most of the claim matches the closest context, but a detail is off;
- absent: little of the claim can be found in the context at all.
"""

from __future__ import annotations

from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.text import quote
from hallumeasure.judges.offline.alignment import Difference, exclusive_set
from hallumeasure.judges.offline.lexicon import NEGATIONS
from hallumeasure.judges.offline.signals import ALIGNED, ClaimSignals
from hallumeasure.judges.offline.slots import Conflict, read_values
from hallumeasure.judges.offline.tokens import is_content, stem, words
from hallumeasure.judges.offline.values import format_date

#: The subtype of a swap between members of a closed set of exclusive values, by set (others: other).
_EXCLUSIVE_SUBTYPES = {
    "kin": Subtype.ENTITY,
    "gender": Subtype.ENTITY,
    "continent": Subtype.ENTITY,
    "period": Subtype.TEMPORAL,
    "relative_day": Subtype.TEMPORAL,
    "season": Subtype.TEMPORAL,
    "ordinal": Subtype.NUMBER,
    "distance": Subtype.NUMBER,
    "weight": Subtype.NUMBER,
    "currency": Subtype.NUMBER,
}

#: Stems of opposites that place an event in time: swapping them is a temporal error.
_TIME_OPPOSITES = frozenset(
    stem(w)
    for w in (
        "start",
        "finish",
        "begin",
        "end",
        "before",
        "after",
        "early",
        "late",
        "earlier",
        "later",
        "past",
        "future",
        "next",
        "last",
        "open",
        "close",
    )
)


def _swap(*claim_words: str) -> tuple[Subtype, str]:
    """Subtype and subtype reason of a swap between exclusive values, from the set of the claim's value."""
    kind = next((k for k in map(exclusive_set, claim_words) if k), "other")
    why = f"the claim swaps one {kind.replace('_', ' ')} value for another"
    return _EXCLUSIVE_SUBTYPES.get(kind, Subtype.OTHER), why


def _difference(
    s: ClaimSignals, d: Difference, subtype: Subtype, why: str, label: Label = Label.CONTRADICTED
) -> tuple[Label, Subtype, str, str]:
    """The reasons for a difference found in copied text, quoting the context sentence it is in."""
    n = d.sentence
    sentence = s.context_sentences[n] if n is not None and 0 <= n < len(s.context_sentences) else s.best_sentence
    return label, subtype, f"{d.describe()} ({quote(sentence)})", why


_CONFLICT_WHY = {
    "number": "a number differs from the context",
    "share": "a percentage differs from the context",
    "money": "an amount of money differs from the context",
    "year": "the year differs from the context",
    "time": "the time of day differs from the context",
    "date": "the date differs from the context",
    "days": "the days differ from the context",
    "name": "a name differs from the context",
    "quantifier": "the claim's quantifier (all / some / none) differs from the context",
    "modality": "the modality differs (may / will)",
    "speaker": "the claim gives another source than the context",
}


def named_conflict(s: ClaimSignals) -> Conflict | None:
    """The conflict a reason should name: a swap (both values known) before an invented value."""
    return min(s.conflicts, key=lambda c: c.context is None, default=None)


def definite(s: ClaimSignals) -> bool:
    """True when the signals name a definite error (signals.py, feature ``definite``): such a claim is
    flagged whatever its probability."""
    return s.values["definite"] > 0


def support_reason(s: ClaimSignals) -> str:
    """Why a claim is judged supported, quoting a sentence that holds its values (never one that holds others)."""
    claim_values = [v for v in read_values(s.claim) if v.kind not in ("modality", "quantifier", "name", "days")]
    for number in s.candidates:
        sentence = s.context_sentences[number]
        theirs = read_values(sentence)
        clash = any(w.kind == v.kind for v in claim_values for w in theirs) and not all(
            any(w.kind == v.kind and w.norm == v.norm for w in theirs) for v in claim_values
        )
        if not clash:
            return f"the claim matches the context: {quote(sentence)}"
    return (
        f"every number, date and name of the claim is in the context, though not all in one sentence; "
        f"the closest is {quote(s.best_sentence)}"
    )


def explain(s: ClaimSignals) -> tuple[Label, Subtype, str, str]:
    """(label, subtype, label reason, subtype reason) for a claim judged unsupported."""
    conflict = named_conflict(s)
    if conflict is not None:
        return (
            conflict.label,
            conflict.subtype,
            conflict.describe(s.context_sentences),
            _CONFLICT_WHY.get(conflict.kind, "a value differs from the context"),
        )
    v = s.values
    aligned = v["recall_best"] >= ALIGNED or v["coverage"] >= ALIGNED
    closest = f"the closest context sentence is {quote(s.best_sentence)}"
    typed = s.typed_difference()

    if typed and typed[0] == "number":
        return _difference(s, typed[1], Subtype.NUMBER, "a number differs from the one in the context")
    if s.missing_numbers and s.conflicting_numbers:
        return (
            Label.CONTRADICTED,
            Subtype.NUMBER,
            f"the claim says {', '.join(s.missing_numbers)}; the closest context sentence says "
            f"{', '.join(s.conflicting_numbers)} ({quote(s.best_sentence)})",
            "a number differs from the one in the context",
        )
    if s.conflicting_date is not None:
        return (
            Label.CONTRADICTED,
            Subtype.TEMPORAL,
            f"no date in the context matches {format_date(s.conflicting_date)}; {closest}",
            "the date differs from the context",
        )
    if typed and typed[0] == "temporal":
        return _difference(s, typed[1], Subtype.TEMPORAL, "the day or month differs from the context")
    if typed and typed[0] in ("negation", "antonym"):
        d = typed[1]
        what = "negation" if typed[0] == "negation" else "an opposite word"
        timing = typed[0] == "antonym" and bool({stem(w) for w in d.claim_words + d.context_words} & _TIME_OPPOSITES)
        if timing:
            return _difference(
                s, d, Subtype.TEMPORAL, "the claim moves the time of an event (start / end, before / after)"
            )
        return _difference(s, d, Subtype.OTHER, f"the claim reverses the context with {what}")
    if typed and typed[0] == "exclusive":
        return _difference(s, typed[1], *_swap(*typed[1].claim_words))
    if s.swaps:
        claim_word, context_word = s.swaps[0]
        subtype, why = _swap(claim_word)
        return (
            Label.CONTRADICTED if aligned else Label.ABSENT,
            subtype,
            f"the claim says '{claim_word}' where the closest context says '{context_word}': {quote(s.best_sentence)}",
            why,
        )
    if s.opposites:
        claim_word, context_word = s.opposites[0]
        return (
            Label.CONTRADICTED,
            Subtype.OTHER,
            f"the claim uses '{claim_word}...' where the closest context sentence uses the opposite "
            f"'{context_word}...': {quote(s.best_sentence)}",
            "the claim reverses the context with an opposite word",
        )
    if v["negation_mismatch"] and aligned:
        return (
            Label.CONTRADICTED,
            Subtype.OTHER,
            f"the claim and the closest context sentence differ in negation: {quote(s.best_sentence)}",
            "one of the two is negated and the other is not",
        )
    if typed and typed[0] == "name":
        return _difference(s, typed[1], Subtype.ENTITY, "a name is swapped for another one")
    if s.missing_numbers:
        return (
            Label.PARTIALLY_SUPPORTED if aligned else Label.ABSENT,
            Subtype.NUMBER,
            f"the context never mentions {', '.join(s.missing_numbers)}; {closest}",
            "a number in the claim is not in the context",
        )
    if s.missing_entities:
        return (
            Label.PARTIALLY_SUPPORTED if aligned else Label.ABSENT,
            Subtype.ENTITY,
            f"the context never names {', '.join(s.missing_entities)}; {closest}",
            "a name in the claim does not appear in the context",
        )
    if s.displaced_entities:
        names = ", ".join(s.displaced_entities)
        return (
            Label.CONTRADICTED if aligned else Label.ABSENT,
            Subtype.FALSE_CONCATENATION,
            f"the context mentions {names}, but not together with the rest of the claim; {closest}",
            "facts about different things seem to be joined",
        )
    if v["attribution_dropped"] and aligned:
        return (
            Label.PARTIALLY_SUPPORTED,
            Subtype.ATTRIBUTION_FAILURE,
            f"the context attributes this ('{s.attribution_word}'), the claim states it as fact: "
            f"{quote(s.best_sentence)}",
            "the source of the statement was dropped",
        )
    if s.novel_intensifiers:
        return (
            Label.PARTIALLY_SUPPORTED if aligned else Label.ABSENT,
            Subtype.HYPERBOLE,
            f"the claim adds {', '.join(s.novel_intensifiers)}, which the context does not say; {closest}",
            "the claim is stronger than the context",
        )
    if v["hedge_dropped"] and aligned:
        return (
            Label.PARTIALLY_SUPPORTED,
            Subtype.TEMPORAL,
            f"the context is tentative, the claim is not: {quote(s.best_sentence)}",
            "the modality differs (may / will)",
        )
    novel = ", ".join(f"'{w}'" for w in _surface(s, s.novel_words[:6]))
    changed = next((d for d in s.differences if d.claim_words and d.context_words and not d.edge), None)
    if aligned and changed is not None:
        return _difference(
            s, changed, Subtype.OTHER, "a detail is not backed by the context", Label.PARTIALLY_SUPPORTED
        )
    if aligned and novel:
        return (
            Label.PARTIALLY_SUPPORTED,
            Subtype.OTHER,
            f"the claim adds {novel}, which the closest context sentence does not say: {quote(s.best_sentence)}",
            "a detail is not backed by the context",
        )
    if aligned:
        return (
            Label.PARTIALLY_SUPPORTED,
            Subtype.OTHER,
            f"the claim's words are in the context, but not said together as the claim says them; {closest}",
            "a detail is not backed by the context",
        )
    return (
        Label.ABSENT,
        Subtype.OTHER,
        f"little of the claim appears in the context (not found: {novel or 'most of its words'}); {closest}",
        "the claim adds information the context does not give",
    )


def _surface(s: ClaimSignals, stems: list[str]) -> list[str]:
    """The claim's own words for a list of stems (so a reason quotes "revolutionized", not "revolutioniz")."""
    by_stem: dict[str, str] = {}
    for w in words(s.claim):
        by_stem.setdefault(stem(w), w)
    return [by_stem.get(x, x) for x in stems]


def focus(s: ClaimSignals) -> tuple[str, ...]:
    """The words of the claim that ``explain`` finds wrong, as the claim writes them; () when it names none.

    In the order ``explain`` prefers its reasons: a named conflict's value, a typed difference in copied text,
    a missing or conflicting number, a swapped or opposite word, a negation, a missing name or intensifier, and
    last the smallest phrase the claim adds beyond its closest sentence (``added_phrases``).
    """
    conflict = named_conflict(s)
    if conflict is not None and conflict.kind not in ("modality", "speaker"):
        return (conflict.claim,)
    typed = s.typed_difference()
    if typed and typed[0] == "number" and typed[1].claim_words:
        return (" ".join(typed[1].claim_words),)
    if s.missing_numbers:
        return tuple(s.missing_numbers)
    if typed and typed[0] in ("temporal", "negation", "antonym", "exclusive") and typed[1].claim_words:
        return (" ".join(typed[1].claim_words),)
    if s.swaps:
        return (s.swaps[0][0],)
    if s.opposites:
        return tuple(_surface(s, [c for c, _ in s.opposites[:2]]))
    if s.values["negation_mismatch"]:
        negations = [w for w in words(s.claim) if w.lower() in NEGATIONS or w.lower().endswith("n't")]
        if negations:
            return tuple(negations)
    if typed and typed[0] == "name" and typed[1].claim_words:
        return (" ".join(typed[1].claim_words),)
    if s.missing_entities:
        return tuple(s.missing_entities)
    if s.displaced_entities:
        return tuple(s.displaced_entities)
    if s.novel_intensifiers:
        return tuple(s.novel_intensifiers)
    changed = next((d for d in s.differences if d.claim_words and d.context_words and not d.edge), None)
    if changed is not None:
        return (" ".join(changed.claim_words),)
    return added_phrases(s)


def added_phrases(s: ClaimSignals) -> tuple[str, ...]:
    """The runs of the claim's words that its closest sentence lacks: content words the source does not hold, with
    the words between two of them ("in a landslide" of "won in a landslide"); () when there are none."""
    novel = set(s.novel_words)
    tokens = words(s.claim)
    marked = [is_content(t) and stem(t) in novel for t in tokens]
    runs: list[str] = []
    start = None
    for at, flag in enumerate([*marked, False]):
        if flag and start is None:
            start = at
        elif not flag and start is not None:
            gap = next((j for j in range(at, min(at + 3, len(marked))) if marked[j]), None)
            if gap is not None and not any(is_content(t) for t in tokens[at:gap]):
                continue  # "a new and bigger" - a stopword between two new words joins them
            runs.append(" ".join(tokens[start:at]))
            start = None
    return tuple(runs)
