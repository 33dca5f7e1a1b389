"""When a keyless judge may be sure of its verdict, and when it must say it cannot tell.

Words, numbers and names can show that a claim repeats a source sentence, or that it changes a
value the source gives; they cannot check a claim whose meaning turns on a word of degree,
scope, time or cause. So a keyless verdict is *confident* only on evidence of one of three kinds:

- supported: one source sentence holds nearly all of the claim's content words and all of its
  values, and no cue word of meaning (negation, modality and plans, quantifiers, superlatives,
  hyperbole, causes, attribution, comparisons, completion) sits on one side without its
  counterpart on the other;
- unsupported, by a named conflict: a value, name, date, negation, opposite or quantifier that
  the aligned sentence contradicts, when the claim's own value is nowhere in the source;
- unsupported, by a clear absence: most of the claim's content words, or a name or number of
  it, appear nowhere in the source.

Everything else keeps its best-guess label with ``confident=False``: the claim needs an LLM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from hallumeasure.core.labels import Label
from hallumeasure.core.text import quote
from hallumeasure.core.types import ClaimVerdict, Evidence
from hallumeasure.judges.offline.cues import CUE_STEMS, CUE_WORDS, CueConflict, cue_conflicts, cue_words, text_cues
from hallumeasure.judges.offline.derived import (
    APPROXIMATORS,
    about_numbers,
    ambiguous_date,
    explained_numbers,
    has_complement,
    in_ambiguous_date,
    is_number_word,
    is_unit,
    value_units,
)
from hallumeasure.judges.offline.lexicon import MONTHS, PRONOUNS, WEEKDAYS
from hallumeasure.judges.offline.roles import RoleSwap, role_swap
from hallumeasure.judges.offline.signals import ClaimSignals
from hallumeasure.judges.offline.tokens import (
    content_stem_set,
    source_stems,
    stem,
    word_stems,
    words,
)

_PRONOUN_START = re.compile(r"^(?:It|They|He|She|Its|Their|His|Her)\b")
_CALENDAR = frozenset(WEEKDAYS) | frozenset(MONTHS)
#: Share of the claim's content words that one sentence must hold for a confident "supported".
COVERED = 0.8
#: Share of the claim's content words absent from the whole source that makes a clear absence.
ABSENT_SHARE = 0.5


def _wordy_stems(text: str) -> frozenset[str]:
    """Content stems of ``text`` outside its values: "four thousand", "forty-five", "kg", "daily" are compared as
    values (slots.py), not as words."""
    from hallumeasure.judges.offline.slots import read_values

    value_words = {stem(w) for v in read_values(text, names=False) for w in words(v.text)}
    return content_stem_set(text) - value_words - _SCALE_STEMS


_SCALE_STEMS = frozenset(
    stem(w) for w in ("thousand", "million", "billion", "hundred", "dozen", "kg", "km", "cm", "mm", "daily", "percent")
)


def covering_sentence(s: ClaimSignals) -> str | None:
    """The source sentence that holds at least ``COVERED`` of the claim's content words, or None."""
    claim_stems = _wordy_stems(s.claim)
    if not claim_stems:
        return None
    # Who said it is one word: a claim that reports a speech must name every word of it ("patients said").
    needed = 1.0 if "attribution" in text_cues(s.claim) else COVERED
    for number in s.candidates:
        sentence = s.context_sentences[number]
        # "It opens at 9 a.m.": "it" is the previous sentence's subject, read with it
        scope = (
            s.context_sentences[number - 1 : number + 1]
            if number > 0 and _PRONOUN_START.match(sentence)
            else [sentence]
        )
        sentence_stems = frozenset().union(*map(word_stems, scope))
        held = claim_stems & sentence_stems
        if len(held) / len(claim_stems) >= needed and _values_held(s.claim, scope, sentence_stems):
            return sentence
    return None


#: Values held against the covering sentence by their normal form.
_COUNTED = frozenset({"number", "share", "money", "year", "date"})
#: Values whose normal form is a set of readings ("9:00" is 9 a.m. or 9 p.m.; "weekdays" is five days): held when
#: a reading is shared.
_READINGS = frozenset({"time", "days"})


def _values_held(claim: str, scope: list[str], scope_stems: frozenset[str]) -> bool:
    """Whether the sentence (with its antecedent) holds every number, time, date and name of the claim, not only
    the source somewhere ("District 52 has 9 schools" is not backed by District 1's "It has 9 schools")."""
    from hallumeasure.judges.offline.slots import read_values

    values = [v for text in scope for v in read_values(text)]
    theirs = {(_NUMERIC.get(v.kind, v.kind), v.norm) for v in values}
    for v in read_values(claim):
        if v.kind == "name":
            held = all(stem(w) in scope_stems for w in words(v.text))
        elif v.kind in _COUNTED:
            held = (_NUMERIC.get(v.kind, v.kind), v.norm) in theirs
        elif v.kind in _READINGS:
            held = any(
                w.kind == v.kind and isinstance(w.norm, frozenset) and isinstance(v.norm, frozenset) and w.norm & v.norm
                for w in values
            )
        else:
            held = True
        if not held:
            return False
    return True


def _unanchored_pronoun(claim: str) -> str | None:
    """A pronoun of a claim that names nobody ("Most of its trees are plane trees": whose trees, the words cannot
    tell); None when the claim has no pronoun or names what it is about."""
    from hallumeasure.judges.offline.slots import read_values

    pronoun = next((w for w in words(claim) if w.lower() in PRONOUNS), None)
    if pronoun is None or any(v.kind == "name" for v in read_values(claim)):
        return None
    return pronoun


class _Reading:
    """What the rules read of one claim's signals, each found once: one verdict asks for most of them more than
    once (the covering sentence and the numbers the source explains up to three times each)."""

    def __init__(self, s: ClaimSignals) -> None:
        self.s = s

    @cached_property
    def covering(self) -> str | None:
        return covering_sentence(self.s)

    @cached_property
    def covering_conflicts(self) -> list[CueConflict]:
        """``cue_conflicts`` of the claim and its covering sentence (none without one)."""
        return [] if self.covering is None else cue_conflicts(self.s.claim, self.covering)

    @cached_property
    def numbers_explained(self) -> bool:
        return _numbers_explained(self.s)

    @cached_property
    def own_value_elsewhere(self) -> bool:
        return _own_value_elsewhere(self.s)

    @cached_property
    def negated_only_in_claim(self) -> bool:
        return _negated_only_in_claim(self.s)

    @cached_property
    def swapped(self) -> RoleSwap | None:
        """``role_swap`` of the claim and its covering sentence (none without one)."""
        return None if self.covering is None else role_swap(self.s.claim, self.covering)

    @cached_property
    def pronoun(self) -> str | None:
        """``_unanchored_pronoun`` of the claim."""
        return _unanchored_pronoun(self.s.claim)


def confidently_supported(s: ClaimSignals) -> bool:
    """Positive evidence: a covering sentence with the claim's values and no conflicting cue."""
    return _supported(_Reading(s))


def _supported(r: _Reading) -> bool:
    s, v = r.s, r.s.values
    if v["definite"] or s.missing_numbers or s.missing_entities or s.displaced_entities or s.conflicts:
        return False
    if v["n_novel"] > 0 or v["number_conflict"] or v["date_conflict"]:
        return False
    if r.pronoun:
        return False
    return r.covering is not None and not r.covering_conflicts and r.swapped is None


#: Conflict kinds that name a value (the rest are cue words: modality, quantifier, speaker).
_VALUE_KINDS = frozenset({"number", "share", "money", "year", "time", "date", "days", "name"})


def _own_value_elsewhere(s: ClaimSignals) -> bool:
    """Whether every value of the claim is nonetheless held somewhere in the source (the aligned sentence may be
    the wrong one: "closes at 9 p.m." held against the sentence on opening hours)."""
    from hallumeasure.judges.offline.slots import read_values

    claim_values = [v for v in read_values(s.claim) if v.kind in _VALUE_KINDS]
    if not claim_values:
        return False
    held = _source_values(tuple(s.context_sentences))
    return all((_NUMERIC.get(v.kind, v.kind), v.norm) in held for v in claim_values)


@lru_cache(maxsize=64)
def _source_values(sentences: tuple[str, ...]) -> frozenset[tuple[str, object]]:
    """Every value a source gives, as (kind, normal form), read once per source: every claim may ask for them."""
    from hallumeasure.judges.offline.slots import read_values

    return frozenset((_NUMERIC.get(v.kind, v.kind), v.norm) for sentence in sentences for v in read_values(sentence))


#: A bare number and a year are one kind of value here ("a 2020 survey" against "in 2020").
_NUMERIC = {"year": "number"}


def _same_name_maybe(claim_name: str, context_name: str | None, stems: frozenset[str]) -> bool:
    """Whether a claim's name may be one the source gives in another form: one of its words is in the source, and
    the source's aligned name is missing or of another shape ("Alex Salmond" for "Mr Salmond"; not "Maria Smith"
    for "Anna Smith")."""
    if not any(stem(w) in stems for w in words(claim_name)):
        return False
    if context_name is None:
        return True
    theirs = words(context_name)
    return len(theirs) != len(words(claim_name)) or theirs[0].lower().rstrip(".") in _TITLES


_TITLES = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "sir", "dame", "lord", "lady"})


def _source_stems(s: ClaimSignals) -> frozenset[str]:
    return source_stems(tuple(s.context_sentences))


def _value_conflict(r: _Reading) -> bool:
    """A value, date, name or closed-set member of the claim that the aligned source sentence gives otherwise.

    A number conflict counts only when the claim's numbers cannot be reached from the source's by arithmetic or
    a unit change, and are read reliably (derived.py): "ten years" against "opened in 1990" is no conflict. A
    date in figures that reads two ways, a decade, and days told as the ones the source leaves out ("closed on
    Sundays") are no conflict either."""
    s = r.s
    stems = _source_stems(s)
    derived = r.numbers_explained
    ambiguous = ambiguous_date(s.claim)
    complement = has_complement(s.claim)
    named = [
        c
        for c in s.conflicts
        if c.kind in _VALUE_KINDS
        # "Alex Salmond" against "Mr Salmond": a name one of whose words the source holds may be the same one
        and not (c.kind == "name" and _same_name_maybe(c.claim, c.context, stems))
        and not (derived and c.kind in _QUANTITY_KINDS)
        and not (c.kind == "date" and ambiguous)
        and not (c.kind in _QUANTITY_KINDS and in_ambiguous_date(c.claim, s.claim))
        # "closed on Sundays" against "open Monday to Saturday"; not against "shut on Mondays"
        and not (c.kind == "days" and complement and not has_complement(_sentence_of(s, c.sentence)))
    ]
    kinds = {"number", "temporal", "name", "exclusive"} - ({"temporal", "number"} if ambiguous else set())
    return bool(
        named
        or [w for w, _ in s.swaps if not (derived and is_unit(w, value_units(s.claim)))]
        or (s.conflicting_date is not None and not ambiguous)
        or any(d.kinds & kinds and not (derived and about_numbers(d)) for d in s.differences if not d.edge)
    )


def _sentence_of(s: ClaimSignals, number: int | None) -> str:
    return s.context_sentences[number] if number is not None else s.best_sentence


def _numbers_explained(s: ClaimSignals) -> bool:
    """``explained_numbers`` of the claim, near the sentence that gives one of its quantities another value."""
    near = next((c.sentence for c in s.conflicts if c.kind in _QUANTITY_KINDS and c.sentence is not None), None)
    return explained_numbers(s.claim, s.context_sentences, near)


#: Conflict kinds that compare plain quantities, which a derived number explains.
_QUANTITY_KINDS = frozenset({"number", "share", "money", "year"})


def _cue_conflict(r: _Reading) -> bool:
    """A negation, opposite or quantifier that the aligned source sentence gives otherwise (a modality or a
    speaker is a difference of meaning, not a named conflict: the source may say it in other words)."""
    s = r.s
    return bool(
        any(c.kind == "quantifier" for c in s.conflicts)  # modality and speakers are left to an LLM
        or s.opposites
        or (s.values["negation_mismatch"] and _negation_in_scope(r))
        or any(d.kinds & {"negation", "antonym"} for d in s.differences if not d.edge)
    )


#: Share of a negated source sentence's content words that a plain claim must repeat for the negation to be
#: its own ("Castro scored one of the goals of the season but it wasn't enough" negates another clause).
SCOPE = 0.7


def _negation_in_scope(r: _Reading) -> bool:
    """Whether a negation that only one side holds can be read as negating the claim's own statement."""
    if r.negated_only_in_claim:
        return True
    sentence_stems = content_stem_set(r.s.best_sentence)
    if not sentence_stems:
        return False
    return len(sentence_stems & content_stem_set(r.s.claim)) / len(sentence_stems) >= SCOPE


def _whole_sentence(s: ClaimSignals) -> bool:
    """Whether one source sentence holds every content word of the claim but its cue words and opposites,
    so that a differing cue is the only difference (else the claim may be about something else)."""
    flipped = {c for c, _ in s.opposites}
    claim_stems = content_stem_set(s.claim) - CUE_STEMS - flipped
    if not claim_stems:
        return False
    return any(claim_stems <= word_stems(s.context_sentences[n]) for n in s.candidates[:2])


def _negated_only_in_claim(s: ClaimSignals) -> bool:
    """A negated claim against a plain sentence: "not open at weekends" may follow from "open on weekdays only"."""
    return any(c.family == "negation" and c.claim_only for c in cue_conflicts(s.claim, s.best_sentence))


def _absent_names(s: ClaimSignals) -> list[str]:
    """Names of the claim none of whose words the source holds ("City-centre" is not absent beside "city centre")."""
    stems = _source_stems(s)
    return [
        name
        for name in s.missing_entities
        if name.lower() not in CUE_WORDS
        and name.lower().rstrip("s") not in _CALENDAR  # "Sundays" is a day, compared as a value
        and not is_number_word(name)  # "Three of the staff": a number, compared as a value
        and name.lower() not in APPROXIMATORS  # "Around 500 adults": a capital, not a name
        and not any(stem(w) in stems for w in re.split(r"[\s\-]+", name) if w)
    ]


def _mostly_absent(r: _Reading) -> bool:
    """More than ``ABSENT_SHARE`` of the claim's content words, cue words aside, and at least two, are nowhere in
    the source."""
    s = r.s
    claim_stems = content_stem_set(s.claim) - CUE_STEMS
    novel = set(s.novel_words) & claim_stems
    if r.numbers_explained:
        # a number the source's numbers give ("fell by 7 points" for "38%, down from 45%") ties the claim to them
        return False
    return len(novel) >= 2 and len(novel) / max(1, len(claim_stems)) > ABSENT_SHARE


def confidently_unsupported(s: ClaimSignals) -> bool:
    """A named conflict that the source cannot be read to allow, or a clear absence."""
    return _unsupported(_Reading(s))


def _unsupported(r: _Reading) -> bool:
    s = r.s
    if _absent_names(s):
        return True
    missing = [m for m in s.missing_numbers if not in_ambiguous_date(m, s.claim)]
    if missing and not r.own_value_elsewhere and not r.numbers_explained:
        return True
    if _mostly_absent(r):
        return True
    if _value_conflict(r) and not r.own_value_elsewhere and not r.negated_only_in_claim:
        return True
    return _cue_conflict(r) and _whole_sentence(s)


def is_confident(label: Label, s: ClaimSignals) -> bool:
    """Whether a keyless verdict with ``label`` on a claim with signals ``s`` rests on evidence (module doc)."""
    if label == Label.SUPPORTED:
        return confidently_supported(s)
    if label == Label.UNEVALUATABLE:
        return True
    return confidently_unsupported(s)


def unsure_reason(s: ClaimSignals) -> str:
    """Why a keyless judge cannot tell whether a claim is supported, quoting the sentence it compared."""
    return _unsure_reason(_Reading(s))


def _unsure_reason(r: _Reading) -> str:
    s = r.s
    pronoun = r.pronoun
    if pronoun is not None:
        closest = quote(s.best_sentence)
        return f"unsure: the claim's '{pronoun}' names nobody, so whom it is about cannot be checked: {closest}"
    sentence = r.covering
    if sentence is None:
        closest = quote(s.best_sentence)
        return f"unsure: no single source sentence holds the claim's words and values; the closest is {closest}"
    swap = r.swapped
    if swap is not None:
        return (
            f"unsure: the claim puts '{swap.before}' and '{swap.after}' the other way round from the source, "
            f"a swap of roles that word overlap cannot check: {quote(sentence)}"
        )
    conflicts = r.covering_conflicts
    if conflicts:
        c = conflicts[0]
        return (
            f"unsure: {cue_words(c)} ({c.family}), a difference of meaning that word overlap cannot check: "
            f"{quote(sentence)}"
        )
    return f"unsure: the closest sentence shares most of the claim's words, but not all of them: {quote(sentence)}"


@dataclass(frozen=True)
class Odds:
    """A claim's probability beside the judge's threshold, so that a reason says which side decided it;
    ``then`` adds what decided it besides."""

    p: float
    threshold: float
    then: str = ""

    @property
    def text(self) -> str:
        side = "under" if self.p < self.threshold else "at or over"
        digits = 2  # more where two would print 0.65 "under the 0.65"
        while digits < 6 and self.p != self.threshold and f"{self.p:.{digits}f}" == f"{self.threshold:.{digits}f}":
            digits += 1
        return f"(P(unsupported) = {self.p:.{digits}f}, {side} the {self.threshold:.2f} that flags a claim{self.then})"


@dataclass(frozen=True)
class KeylessVerdict:
    """A keyless judge's verdict before its reason is written: what decided it (``basis``) and its ``odds``.

    The reason is rendered from these once, by :meth:`render`; a step that explains the claim otherwise
    (``confident_verdict``) replaces the basis, and the odds stay as they were computed.
    """

    verdict: ClaimVerdict
    basis: str
    odds: Odds

    def render(self, *, basis: str | None = None, **update: Any) -> ClaimVerdict:
        """The verdict with its reason, ``basis`` (or the basis it was made with) then the odds."""
        reason = f"{self.basis if basis is None else basis} {self.odds.text}"
        return self.verdict.model_copy(update={"label_reason": reason, **update})


def confident_verdict(draft: KeylessVerdict, s: ClaimSignals) -> ClaimVerdict:
    """The verdict of ``draft`` with ``confident`` set from the evidence rules (module doc), its reason rendered.

    A confident "supported" quotes the covering sentence that decided it, as reason and as evidence; a
    supported guess without positive evidence says why it is unsure instead of calling the claim a match.
    """
    label = draft.verdict.label
    if label is None or label == Label.UNEVALUATABLE:
        return draft.render()
    r = _Reading(s)
    if label == Label.SUPPORTED:
        sentence = r.covering if _supported(r) else None
        if sentence is None:
            return draft.render(basis=_unsure_reason(r), confident=False)
        return draft.render(
            basis=f"one source sentence holds the claim's words and values: {quote(sentence)}",
            evidence=(Evidence(quote=sentence),),
        )
    if _unsupported(r):
        return draft.render()
    return draft.render(confident=False)
