"""Cheap, explainable signals of whether one claim is backed by its context.

``claim_signals`` computes, for one claim: how well its words and stems align with the best
context sentences; which fragments it copies and what differs between them (alignment.py);
numbers and dates missing or different (values.py); capitalised names missing, or present but
far from the rest of the claim; negation, opposites, intensity, hedging and attribution cues. It
returns the numeric features the trained model reads together with the evidence needed to write a
reason.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hallumeasure.judges.offline.alignment import (
    Alignment,
    Difference,
    align,
    complement_partners,
    complementary,
    exclusive_partners,
    exclusive_swap,
    hedges,
    negated,
    opposites_in,
)
from hallumeasure.judges.offline.context import ContextIndex, index_context
from hallumeasure.judges.offline.extractor import without_list_marker
from hallumeasure.judges.offline.lexicon import (
    ATTRIBUTION,
    EXCLUSIVE,
    INTENSIFIERS,
    MONTHS,
    NEGATIONS,
    STOPWORDS,
    WEEKDAYS,
)
from hallumeasure.judges.offline.slots import Conflict, slot_conflicts
from hallumeasure.judges.offline.tokens import content_stems, short_form, stem, word_stems, words
from hallumeasure.judges.offline.values import (
    Date,
    Quantity,
    date_conflict,
    dates,
    has_value,
    letter_runs,
    quantities,
)

#: The tie-break of a sentence outside the two best overlaps.
_NO_TIE = (0, 0, 0, 0)
_PRONOUNS = frozenset({"It", "They", "He", "She", "Its", "Their", "His", "Her"})
_CAPS_RE = re.compile(r"\b[A-Z][a-zA-Z'\-]*(?:\s+(?:of|the|de|van|von|and|&)?\s*[A-Z][a-zA-Z'\-]*)*|\b[A-Z]{2,}\b")

#: Counts of the differences in copied text that name an error, inside a fragment and at its edge.
ERROR_DIFFERENCE_FEATURES = (
    "diff_negation",
    "diff_number",
    "diff_name",
    "diff_antonym",
    "diff_exclusive",
    "diff_temporal",
    "diff_intensifier",
    "diff_hedge_dropped",
    "edge_name",
    "edge_antonym",
    "edge_exclusive",
    "edge_negation",
    "edge_temporal",
)
#: The features the model reads, in order. Grouped: word alignment, copied fragments and their
#: differences, numbers and dates, names, cue words, sizes. The model reads a subset (features.py);
#: the rest serve the reasons and the baselines.
FEATURES = (
    "n_content",
    "recall_global",
    "recall_best",
    "recall_top2",
    "bigram_recall",
    "trigram_recall",
    "n_novel",
    "novel_share",
    "n_novel_capitalised",
    "coverage",
    "density",
    "jumps",
    "diff_substitution",
    "diff_intrinsic",
    "diff_insertion",
    "diff_deletion",
    *ERROR_DIFFERENCE_FEATURES,
    "n_numbers",
    "n_numbers_missing",
    "number_conflict",
    "date_conflict",
    "n_entities",
    "n_entities_missing",
    "entity_support",
    "negation_mismatch",
    "antonym_conflict",
    "exclusive_conflict",
    "n_intensifiers_novel",
    "hedge_dropped",
    "hedge_added",
    "attribution_dropped",
    "claim_words",
    "best_sentence_words",
    "log_context_words",
    "slot_swap",
    "slot_invented",
    "definite",
)
#: Kinds of difference inside copied text that name a definite error.
DEFINITE_KINDS = frozenset({"number", "temporal", "negation", "antonym", "exclusive", "name"})
#: A claim "aligns" with its best context sentence when at least this share of its content words is in it.
ALIGNED = 0.5
#: Exclusive-value sets whose words often play other roles in a sentence ("opening hours ... every day",
#: "the second time ... first"): trusted only inside copied text, not across two whole sentences.
_LOOSE_SETS = frozenset({"period", "ordinal"})
#: The words that belong to an exclusive-value set other than those.
_TRUSTED_EXCLUSIVE = frozenset(w for w, sets in EXCLUSIVE.items() if any(name not in _LOOSE_SETS for name, _ in sets))
#: Differences that name a specific error, in the order a reason prefers them.
TYPED_DIFFERENCES = ("number", "temporal", "negation", "antonym", "exclusive", "name", "hedge_dropped", "intensifier")


@dataclass
class ClaimSignals:
    """Feature values plus the evidence behind them (for reasons and subtypes)."""

    values: dict[str, float]
    best_sentence: str = ""
    claim: str = ""
    novel_words: list[str] = field(default_factory=list)
    missing_numbers: list[str] = field(default_factory=list)
    conflicting_numbers: list[str] = field(default_factory=list)
    missing_entities: list[str] = field(default_factory=list)
    displaced_entities: list[str] = field(default_factory=list)
    novel_intensifiers: list[str] = field(default_factory=list)
    conflicting_date: Date | None = None
    attribution_word: str | None = None
    opposites: list[tuple[str, str]] = field(default_factory=list)
    #: (claim word, context word): members of one closed set of exclusive values ("wife", "brother").
    swaps: list[tuple[str, str]] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    context_sentences: list[str] = field(default_factory=list)
    #: Values of the claim (numbers, times, dates, names, quantifiers, modality) the context does not hold.
    conflicts: list[Conflict] = field(default_factory=list)
    #: The context sentences closest to the claim, best first.
    candidates: list[int] = field(default_factory=list)

    def vector(self) -> list[float]:
        return [self.values[name] for name in FEATURES]

    def typed_difference(self) -> tuple[str, Difference] | None:
        """The most telling difference found in copied text, with its kind."""
        for kind in TYPED_DIFFERENCES:
            for d in self.differences:
                if kind in d.kinds:
                    return kind, d
        return None


def entities(claim: str, index: ContextIndex | None = None) -> list[str]:
    """Capitalised spans that look like names. A capitalised first word counts only when the context
    never uses it in lower case (so "Profits rose" has no name, "Delhi" is one)."""
    found = []
    for m in _CAPS_RE.finditer(claim):
        span = m.group(0).strip()
        parts = span.split()
        first = parts[0].lower()
        if (
            m.start() == 0
            and len(parts) == 1
            and not span.isupper()
            and (
                first in STOPWORDS
                or first in NEGATIONS
                or index is None
                or first in index.lowercase_words
                or first in MONTHS
            )
        ):
            continue
        if m.start() == 0 and len(parts) > 1 and first in STOPWORDS:
            span = " ".join(parts[1:])  # "The Beatles" -> "Beatles"; "In Paris" -> "Paris"
        if first in MONTHS or first in WEEKDAYS or span.lower() in STOPWORDS or not span:
            continue
        found.append(span)
    return found


def _entity_sentences(entity: str, index: ContextIndex) -> Sequence[int] | None:
    """Context sentences that mention ``entity`` (by its most specific word), or None when none does."""
    entity = re.sub(r"'s?$", "", entity)  # "Greenleaf Coffee's" names Greenleaf Coffee
    parts = [p for p in words(entity) if p.lower() not in STOPWORDS]
    if not parts:
        return None
    found = index.sentences_with(stem(parts[-1]))
    if found:
        return found
    if entity.lower() in index.lower_text:
        return []  # present, but not as a whole word (e.g. inside a hyphenated compound)
    return None


def _short_for_near(name: str, near: Sequence[int], index: ContextIndex) -> bool:
    """Whether ``name`` may be the short form of a name in the ``near`` sentences ("Man Utd": "Manchester United")."""
    return any(short_form(name, full) for i in near for full in entities(index.sentences[i], index))


def _support_near(entity_sentences: Sequence[int], claim_stems: set[str], entity: str, index: ContextIndex) -> float:
    """Share of the claim's other content words found within one sentence of where the entity is mentioned."""
    own = {stem(w) for w in words(entity)}
    rest = claim_stems - own
    if not rest or not entity_sentences:
        return 1.0
    last = len(index.sentences) - 1
    near = {t for s in entity_sentences[:20] for t in (s - 1, s, s + 1) if 0 <= t <= last}
    # Which of the claim's few words are near, read from where each word is (not a union of every near sentence).
    held = sum(1 for w in rest if not near.isdisjoint(index.stem_sentences.get(w, ())))
    return held / len(rest)


def _kind(q: Quantity) -> str:
    """Numbers are only held against numbers of the same kind: a share, a year, or an amount."""
    if q.percent:
        return "share"
    return "year" if q.text.isdigit() and len(q.text) == 4 and 1000 <= q.value <= 2100 else "amount"


def _complements(claim_stems: set[str], sentence_stems: frozenset[str]) -> list[tuple[str, str]]:
    """(claim stem, sentence stem) pairs of complementary stems that only one side holds, in sorted order."""
    partners = complement_partners()
    theirs = sentence_stems - claim_stems
    return [(a, b) for a in sorted(claim_stems - sentence_stems) if a in partners for b in sorted(partners[a] & theirs)]


def claim_signals(claim: str, context: str) -> ClaimSignals:
    """All signals of ``claim`` against ``context`` (a list marker it opens with is no number of it)."""
    claim = without_list_marker(claim)
    index = index_context(context)
    toks = words(claim)
    low = [t.lower() for t in toks]
    cs = content_stems(toks)
    cset = set(cs)
    n = max(1, len(cset))

    # Word alignment: the best sentence by shared content stems, and the best two together.
    overlaps = index.overlaps(cset)
    letters = letter_runs(claim)  # read once for the numbers and the dates of the claim
    claim_q = quantities(claim, letters)

    # Among equal overlaps, "District 52 has 9 schools" wants District 52's sentence: the one sharing more of the
    # claim's word pairs ("District 52", "9 schools") and values, a sentence opened by a pronoun read with the one
    # before it ("District 52 was founded in 1901. It has 9 schools ...").
    claim_pairs = set(itertools.pairwise(toks))
    top = sorted(set(overlaps), reverse=True)[:2]

    def tie_break(i: int) -> tuple[int, int, int, int]:
        """Sentence ``i``'s covered words, names, shared pairs and values, negated (the smallest ranks first)."""
        if i > 0 and index.sentence_words(i)[:1] and index.sentence_words(i)[0] in _PRONOUNS:
            pairs = index.sentence_pairs(i - 1) | index.sentence_pairs(i)
            held = index.sentence_quantities[i - 1] + index.sentence_quantities[i]
            covered = len(cset & (index.sentence_stems[i - 1] | index.sentence_stems[i]))
        else:
            pairs, held, covered = index.sentence_pairs(i), index.sentence_quantities[i], overlaps[i]
        shared = claim_pairs & pairs
        named = sum(1 for a, _ in shared if a[:1].isupper())  # who or what the claim is about comes first
        return -covered, -named, -len(shared), -sum(has_value(q, held) for q in claim_q)

    # The three closest sentences are all that is read below, so only the sentences whose overlap reaches the third
    # largest are ranked. Among them, those with one of the two best overlaps are told apart by the tie-break, the
    # rest by overlap and length alone; heapq.nsmallest gives sorted(...)[:3], ties in order.
    floor = heapq.nlargest(3, overlaps)[-1] if overlaps else 0
    contenders = [i for i, o in enumerate(overlaps) if o >= floor]
    ties = {i: tie_break(i) for i in contenders if overlaps[i] and overlaps[i] in top}
    order = heapq.nsmallest(3, contenders, key=lambda i: (-overlaps[i], *ties.get(i, _NO_TIE), len(index.sentences[i])))
    best = order[0] if order else 0
    second = index.sentence_stems[order[1]] if len(order) > 1 else frozenset()
    top2 = cset & (index.sentence_stems[best] | second)
    novel = [w for w in dict.fromkeys(cs) if w not in index.stems]
    bigrams = list(itertools.pairwise(cs))
    trigrams = list(zip(low, low[1:], low[2:], strict=False))  # the shifted copies end early on purpose
    best_sentence = index.sentences[best] if index.sentences else ""
    best_words = index.sentence_words(best) if index.sentences else []
    best_low = index.sentence_lower(best) if index.sentences else []

    alignment: Alignment = align(toks, index)

    missing_q = [q for q in claim_q if not has_value(q, index.quantities)]
    best_q = index.sentence_quantities[best] if index.sentence_quantities else []
    conflicts = [c.text for c in best_q if not has_value(c, claim_q) and any(_kind(c) == _kind(m) for m in missing_q)]
    conflicting_date = date_conflict(dates(claim, letters), index.dates) if index.dates else None

    names = entities(claim, index)
    missing, displaced, supports = [], [], []
    for name in names:
        where = _entity_sentences(name, index)
        if where is None:
            if not _short_for_near(name, order[:2], index):
                missing.append(name)
            continue
        support = _support_near(where, cset, name, index)
        supports.append(support)
        if support < 0.5:
            displaced.append(name)

    claim_neg, sent_neg = negated(low), negated(best_low)
    # Opposites: a claim word missing from the two closest sentences whose opposite is in them.
    near_stems = index.sentence_stems[best] | second
    claim_all = {stem(w) for w in toks}
    opposites = [
        (c, x) for c in sorted(claim_all - near_stems) for x in opposites_in(c, near_stems) if x not in claim_all
    ]
    if opposites:  # "excluded" restates "not included": the opposite's sentence is negated
        near_negated = [negated(index.sentence_words(i)) for i in order[:2]]
        opposites = [
            (c, x)
            for c, x in opposites
            if all(
                neg == claim_neg for i, neg in zip(order[:2], near_negated, strict=True) if x in index.sentence_stems[i]
            )
        ]
    # "will change" against "stay the same": the two halves of a complementary pair, both plain (or both
    # negated), say opposite things.
    if claim_neg == sent_neg:
        opposites += [pair for pair in _complements(claim_all, word_stems(best_sentence)) if pair not in opposites]
    # Exclusive values: a claim word whose set (colours, kin, periods...) has another member in the two
    # closest sentences, which lack the claim's own.
    swaps: list[tuple[str, str]] = []
    valued = sorted(_TRUSTED_EXCLUSIVE.intersection(low))
    if valued:
        near_low = set(best_low) | (set(index.sentence_lower(order[1])) if len(order) > 1 else set())
        swaps = [(w, x) for w in valued if exclusive_swap({w}, near_low) for x in exclusive_partners(w, near_low)[:1]]
    novel_intensifiers = [w for w in dict.fromkeys(low) if w in INTENSIFIERS and w not in index.lower_words]
    claim_hedged = bool(hedges(toks))
    sent_hedged = bool(hedges(best_words))
    claim_attr = next((w for w in low if w in ATTRIBUTION), None)
    sent_attr = next((w for w in best_low if w in ATTRIBUTION), None)

    aligned = bool(overlaps) and overlaps[best] / n >= ALIGNED
    found = slot_conflicts(claim, index, order[:2], aligned) if order else []
    kinds = alignment.kinds
    values = {
        "n_content": float(len(cset)),
        "recall_global": len(cset & index.stems) / n,
        "recall_best": (overlaps[best] / n) if overlaps else 0.0,
        "recall_top2": len(top2) / n,
        "bigram_recall": (sum(b in index.bigrams for b in bigrams) / len(bigrams)) if bigrams else 1.0,
        "trigram_recall": (sum(t in index.trigrams for t in trigrams) / len(trigrams)) if trigrams else 1.0,
        "n_novel": float(len(novel)),
        "novel_share": len(novel) / n,
        "n_novel_capitalised": float(sum(1 for t in toks if t[0].isupper() and stem(t) in novel)),
        "coverage": alignment.coverage,
        "density": alignment.density,
        "jumps": float(alignment.jumps),
        **{
            f"diff_{k}": float(kinds.get(k, 0))
            for k in (
                "substitution",
                "intrinsic",
                "insertion",
                "deletion",
                "negation",
                "number",
                "name",
                "antonym",
                "exclusive",
                "temporal",
                "intensifier",
                "hedge_dropped",
            )
        },
        **{
            f"edge_{k}": float(kinds.get(f"edge_{k}", 0))
            for k in ("name", "antonym", "exclusive", "negation", "temporal")
        },
        "n_numbers": float(len(claim_q)),
        "n_numbers_missing": float(len(missing_q)),
        "number_conflict": float(bool(conflicts)),
        "date_conflict": float(conflicting_date is not None),
        "n_entities": float(len(names)),
        "n_entities_missing": float(len(missing)),
        "entity_support": min(supports) if supports else 1.0,
        "negation_mismatch": float(claim_neg != sent_neg and not complementary(toks, best_words)),
        "antonym_conflict": float(len(opposites)),
        "exclusive_conflict": float(len(swaps)),
        "n_intensifiers_novel": float(len(novel_intensifiers)),
        "hedge_dropped": float(sent_hedged and not claim_hedged),
        "hedge_added": float(claim_hedged and not sent_hedged),
        "attribution_dropped": float(sent_attr is not None and claim_attr is None),
        "claim_words": float(len(toks)),
        "best_sentence_words": float(len(best_low)),
        "log_context_words": index.log_words,
        "slot_swap": float(sum(c.context is not None for c in found)),
        "slot_invented": float(sum(c.context is None for c in found)),
    }
    # A dropped "said" is left to the model: a company that "said" its cell kept 90% is usually reported as fact.
    values["definite"] = float(
        bool(
            found
            or swaps
            or opposites
            or conflicting_date is not None
            or any(d.kinds & DEFINITE_KINDS for d in alignment.differences if not d.edge)
            or ((values["recall_best"] >= ALIGNED or values["coverage"] >= ALIGNED) and values["negation_mismatch"])
        )
    )
    return ClaimSignals(
        values=values,
        best_sentence=best_sentence,
        claim=claim,
        novel_words=novel,
        missing_numbers=[q.text for q in missing_q],
        conflicting_numbers=conflicts,
        missing_entities=missing,
        displaced_entities=displaced,
        novel_intensifiers=novel_intensifiers,
        conflicting_date=conflicting_date,
        attribution_word=sent_attr if claim_attr is None else None,
        opposites=opposites,
        swaps=swaps,
        differences=alignment.differences,
        context_sentences=index.sentences,
        conflicts=found,
        candidates=order[:3],
    )
