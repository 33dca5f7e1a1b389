"""Word-level alignment of a claim to its context: the copied fragments, and what differs between them.

Summaries and grounded answers reuse the context's wording, so most of a faithful claim is
covered by fragments copied from it. An error introduced into copied text shows up as a
small *difference* between two fragments that sit next to each other in the context: a word
swapped ("loves" where the context says "hates"), inserted ("not") or dropped ("may").
Each difference is classified by what changed: a number, a name, a negation, a pair of
opposites, a hedge or an intensifier, or just other content words.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from hallumeasure.judges.offline.antonyms import ANTONYM_PAIRS, COMPLEMENTARY_PAIRS
from hallumeasure.judges.offline.context import ContextIndex
from hallumeasure.judges.offline.lexicon import (
    EXCLUSIVE,
    HEDGES,
    INTENSIFIERS,
    MONTHS,
    NEGATING_PREFIXES,
    NEGATIONS,
    NUMBER_WORDS,
    STOPWORDS,
    WEEKDAYS,
)
from hallumeasure.judges.offline.tokens import info, is_content, key, short_form, stem
from hallumeasure.judges.offline.values import same_number

#: Two fragments are neighbours when at most this many context words lie between them.
MAX_GAP = 6
#: Look at most this many context positions per claim bigram (keeps very common bigrams cheap).
MAX_CANDIDATES = 64


@dataclass(frozen=True)
class Fragment:
    """Claim words [claim_start, claim_end) equal context words from context_start on."""

    claim_start: int
    claim_end: int
    context_start: int

    @property
    def length(self) -> int:
        return self.claim_end - self.claim_start

    @property
    def context_end(self) -> int:
        return self.context_start + self.length


@dataclass(frozen=True)
class Difference:
    """What the claim has (``claim_words``) where the context has ``context_words``, between copied text."""

    claim_words: tuple[str, ...]
    context_words: tuple[str, ...]
    sentence: int
    #: At the start or end of the claim, anchored on one side only.
    edge: bool = False
    kinds: frozenset[str] = frozenset()

    def describe(self) -> str:
        said = " ".join(self.claim_words) or "nothing"
        where = " ".join(self.context_words) or "nothing"
        return f"the claim has '{said}' where the context has '{where}'"


@dataclass
class Alignment:
    fragments: list[Fragment]
    differences: list[Difference]
    coverage: float
    density: float
    jumps: int
    n_words: int
    kinds: dict[str, int] = field(default_factory=dict)


def opposite(a: str, b: str) -> bool:
    """True when stems ``a`` and ``b`` are listed opposites, or one is the other with a negating prefix."""
    if b in antonyms().get(a, frozenset()):
        return True
    long, short = (a, b) if len(a) > len(b) else (b, a)
    return len(short) >= 4 and long.endswith(short) and long[: len(long) - len(short)] in _PREFIXES


_PREFIXES = frozenset(NEGATING_PREFIXES)
_PREFIX_SIZES = sorted({len(p) for p in NEGATING_PREFIXES})


def opposites_in(stem_: str, others: frozenset[str] | set[str]) -> list[str]:
    """The stems among ``others`` that are opposites of ``stem_`` (same test as ``opposite``, by look-up)."""
    found = set(antonyms().get(stem_, frozenset()) & others)
    for size in _PREFIX_SIZES:  # the stem's own prefix, read by its length rather than tried prefix by prefix
        if len(stem_) - size >= 4 and stem_[:size] in _PREFIXES and stem_[size:] in others:
            found.add(stem_[size:])  # "unsuitable" against "suitable"
    if len(stem_) >= 4:
        found.update(p + stem_ for p in NEGATING_PREFIXES if p + stem_ in others)  # "suitable" against "unsuitable"
    return sorted(found)


def exclusive_set(word: str) -> str | None:
    """The name of the closed set of exclusive values ``word`` belongs to ("colour", "kin", ...), if any."""
    return min((name for name, _ in EXCLUSIVE.get(word.lower(), ())), default=None)


def exclusive_partners(word: str, others: set[str]) -> list[str]:
    """The words among ``others`` that are another member of a closed set ``word`` belongs to."""
    mine = EXCLUSIVE.get(word, frozenset())
    return sorted(
        x
        for x in others
        if x != word
        and not mine & EXCLUSIVE.get(x, frozenset())
        and {n for n, _ in mine} & {n for n, _ in EXCLUSIVE.get(x, frozenset())}
    )


def exclusive_swap(claim_words: set[str], context_words: set[str]) -> bool:
    """True when the claim has a member of a closed set of exclusive values (colours, kin, periods...)
    where the context has another member of that set and not the claim's own."""
    claim_values = {v for w in claim_words for v in EXCLUSIVE.get(w, ())}
    if not claim_values:
        return False
    context_values = {v for w in context_words for v in EXCLUSIVE.get(w, ())}
    sets = {name for name, _ in claim_values} & {name for name, _ in context_values}
    return any(not {v for v in claim_values if v[0] == name} & context_values for name in sets)


@lru_cache(maxsize=1)
@lru_cache(maxsize=1)
def _complements() -> frozenset[tuple[str, str]]:
    """Stem pairs where "not A" means B, both ways round ("change" / "stay")."""
    pairs = {(stem(a), stem(b)) for a, b in COMPLEMENTARY_PAIRS}
    return frozenset(pairs | {(b, a) for a, b in pairs})


@lru_cache(maxsize=1)
def complement_partners() -> dict[str, frozenset[str]]:
    """For each stem of a complementary pair, the stems it pairs with (``_complements`` by look-up)."""
    partners: dict[str, set[str]] = {}
    for a, b in _complements():
        partners.setdefault(a, set()).add(b)
    return {a: frozenset(bs) for a, bs in partners.items()}


def complementary(claim_words: Iterable[str], context_words: Iterable[str]) -> bool:
    """True when the two sides hold the two halves of a complementary pair ("change" / "stay")."""
    c = {stem(w) for w in claim_words}
    x = {stem(w) for w in context_words}
    partners = complement_partners()
    return any(not partners[a].isdisjoint(x - c) for a in c - x if a in partners)


def negation_restated(claim_words: Sequence[str], context_words: Sequence[str]) -> bool:
    """True when exactly one side is negated and the two sides hold the two halves of a complementary
    pair ("did not change" against "stayed the same"): the negation restates the context."""
    return negated(claim_words) != negated(context_words) and complementary(claim_words, context_words)


@lru_cache(maxsize=1)
def antonyms() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for a, b in ANTONYM_PAIRS:
        table.setdefault(stem(a), set()).add(stem(b))
        table.setdefault(stem(b), set()).add(stem(a))
    return {k: frozenset(v) for k, v in table.items()}


def hedges(ws: Iterable[str]) -> set[str]:
    """Hedge words among ``ws`` (a capitalised "May" inside a sentence is the month, not a hedge)."""
    return {w.lower() for i, w in enumerate(ws) if w.lower() in HEDGES and not (w == "May" and i > 0)}


def _is_number(word: str) -> bool:
    return word[0].isdigit() or word.lower() in NUMBER_WORDS


def _time_like(ws: tuple[str, ...]) -> bool:
    """Tokens of a clock time ("9", "a", "m" from "9 a.m."; "21", "00" from "21:00"): compared as times in slots.py."""
    return any(
        w[0].isdigit()
        and (nxt.lower() in ("a", "p", "am", "pm", "o'clock", "clock") or (len(nxt) == 2 and nxt.isdigit()))
        for w, nxt in itertools.pairwise(ws)
    )


def _is_name(word: str, first: bool) -> bool:
    return word[0].isupper() and not first and word.lower() not in STOPWORDS and word.lower() not in MONTHS


def negated(ws: Iterable[str]) -> bool:
    """True when any of the words ``ws`` is a negation ("not", "never", "won't", ...)."""
    for w in ws:
        low = w.lower()
        if low in NEGATIONS or low.endswith("n't"):
            return True
    return False


_NEGATION = frozenset({"negation"})


def classify(
    claim_words: tuple[str, ...], context_words: tuple[str, ...], claim_first: bool, index: ContextIndex, edge: bool
) -> frozenset[str]:
    """The kinds of change between the two sides of a difference (empty when nothing that matters changed).

    ``edge`` differences are anchored on one side only, so only changes of a definite type count there.
    """
    if edge and not (claim_words and context_words):
        # One side is empty (the claim starts or ends with a copied fragment): every test below compares the two
        # sides but the negation one, which counts here a negated context or a negated claim of one or two words.
        negation = negated(context_words) if context_words else negated(claim_words) and len(claim_words) <= 2
        return _NEGATION if negation else frozenset()
    kinds: set[str] = set()
    c_low = {w.lower() for w in claim_words}
    x_low = {w.lower() for w in context_words}
    c_all = {stem(w) for w in claim_words}
    x_all = {stem(w) for w in context_words}
    c_nums = [w for w in claim_words if _is_number(w)]
    x_nums = [w for w in context_words if _is_number(w)]
    # Numbers next to a one-sided anchor differ all the time in faithful text; only trust them in a gap.
    if (
        c_nums
        and x_nums
        and not edge
        and not same_number(" ".join(claim_words), " ".join(context_words))
        and not _time_like(claim_words)
        and not _time_like(context_words)
        and sorted(map(key, c_nums)) != sorted(map(key, x_nums))
    ):  # "June 3" against "3 June"
        kinds.add("number")
    c_names = [w for i, w in enumerate(claim_words) if _is_name(w, claim_first and i == 0)]
    x_names = [w for w in context_words if _is_name(w, False)]
    if (
        c_names
        and x_names
        and not {stem(w) for w in c_names} & {stem(w) for w in x_names}
        and not short_form(" ".join(c_names), " ".join(x_names))  # "Brom" for "Bromwich Albion"
    ):
        kinds.add("name")
    if (c_low & WEEKDAYS and x_low & WEEKDAYS and not c_low & x_low & WEEKDAYS) or (
        c_low & MONTHS.keys() and x_low & MONTHS.keys() and not c_low & x_low
    ):
        kinds.add("temporal")
    if any(opposite(c, x) for c in c_all - x_all for x in x_all - c_all):
        kinds.add("antonym")
    if exclusive_swap(c_low, x_low):
        kinds.add("exclusive")
    if negated(claim_words) != negated(context_words):
        if complementary(claim_words, context_words):
            kinds.discard("antonym")  # the negation restates the context ("not change" / "stay")
        # One-sided windows may not be about the same thing: ask for a shared word there.
        elif not edge or len(claim_words) <= 2 or {key(w) for w in claim_words} & {key(w) for w in context_words}:
            kinds.add("negation")
    if edge:
        return frozenset(kinds)
    if (c_low & INTENSIFIERS) - x_low:
        kinds.add("intensifier")
    if hedges(context_words) - c_low:
        kinds.add("hedge_dropped")
    c_stems = {stem(w) for w in claim_words if is_content(w)}
    x_stems = {stem(w) for w in context_words if is_content(w)}
    novel = c_stems - x_stems
    if novel and x_stems:
        kinds.add("substitution")
        if all(s in index.stems for s in novel):
            kinds.add("intrinsic")
    elif novel:
        kinds.add("insertion")
    elif x_stems - c_stems:
        kinds.add("deletion")
    return frozenset(kinds)


def _fragments(ck: list[str], index: ContextIndex) -> list[Fragment]:
    """Greedy longest matches, left to right.

    Among equally long matches, prefer one after which the claim's next words soon follow in the
    context, then the one nearest the previous fragment: that keeps an edited word between two
    fragments that are neighbours in the context, where it can be compared.
    """
    xk = index.keys
    n, m = len(ck), len(xk)
    found: list[Fragment] = []
    i = 0
    previous_end: int | None = None
    while i < n - 1:
        candidates = index.bigram_positions(ck[i], ck[i + 1])
        if not candidates:
            i += 1
            continue
        best: tuple[tuple[int, int, int], int, int] | None = None
        for j in candidates[:MAX_CANDIDATES]:
            length = 2
            while i + length < n and j + length < m and ck[i + length] == xk[j + length]:
                length += 1
            ahead = set(ck[i + length + 1 : i + length + 4])
            follows = int(bool(ahead) and not ahead.isdisjoint(xk[j + length : j + length + MAX_GAP + 3]))
            distance = abs(j - previous_end) if previous_end is not None else 0
            score = (length, follows, -distance)
            if best is None or score > best[0]:
                best = (score, j, length)
        assert best is not None
        _, j, length = best
        near = previous_end is not None and 0 <= j - previous_end <= MAX_GAP
        if near or length >= 3 or any(is_content(w) for w in index.tokens[j : j + length]):
            found.append(Fragment(i, i + length, j))
            previous_end = j + length
        i += length
    return _drop_strays(found)


def _neighbours(a: Fragment, b: Fragment, slack: int = 0) -> bool:
    return 0 <= b.context_start - a.context_end <= MAX_GAP + slack and b.claim_start - a.claim_end <= MAX_GAP + slack


def _drop_strays(fragments: list[Fragment]) -> list[Fragment]:
    """Drop a short fragment matched elsewhere when its two neighbours are next to each other in the context.

    In "never let anyone see him or take photos" against "never let anyone touch him or take
    photos", "see him" also occurs elsewhere; dropping that stray match leaves "see" against "touch".
    """
    out: list[Fragment] = []
    for k, f in enumerate(fragments):
        a = out[-1] if out else None
        c = fragments[k + 1] if k + 1 < len(fragments) else None
        if (
            a is not None
            and c is not None
            and f.length <= 3
            and not _neighbours(a, f)
            and not _neighbours(f, c)
            and _neighbours(a, c, slack=f.length)
        ):
            continue
        out.append(f)
    return out


def _sentence_window(index: ContextIndex, start: int, end: int, sentence: int) -> tuple[str, ...]:
    """Context tokens in [start, end) that belong to ``sentence``."""
    start, end = max(start, 0), min(end, len(index.tokens))
    return tuple(
        t for t, s in zip(index.tokens[start:end], index.token_sentence[start:end], strict=True) if s == sentence
    )


def align(claim_tokens: list[str], index: ContextIndex) -> Alignment:
    """Fragments of ``claim_tokens`` copied from the context and the differences around them."""
    ck = [info(t)[3] for t in claim_tokens]  # the alignment key, cached per word
    n = len(ck)
    fragments = _fragments(ck, index) if n >= 2 else []
    differences: list[Difference] = []
    jumps = 0
    tokens = index.tokens

    def add(
        claim_side: tuple[str, ...],
        context_side: tuple[str, ...],
        claim_first: bool,
        at: int,
        edge: bool,
        touching: int | None = None,
    ) -> None:
        if not claim_side and not context_side:
            return
        kinds = classify(claim_side, context_side, claim_first, index, edge)
        if edge and touching is not None and claim_side and context_side:
            # Both sides hold a number right against the anchor ("in 1944" / "in 1943"): a swap, even one-sided.
            c, x = claim_side[touching], context_side[touching]
            if (
                _is_number(c)
                and _is_number(x)
                and not same_number(" ".join(claim_side), " ".join(context_side))
                and not _time_like(claim_side)
                and not _time_like(context_side)
            ):
                kinds = kinds | {"number"}
        if kinds:
            sentence = index.token_sentence[min(max(at, 0), len(tokens) - 1)]
            differences.append(Difference(claim_side, context_side, sentence, edge, kinds))

    for k, f in enumerate(fragments):
        previous = fragments[k - 1] if k else None
        if previous is not None and _neighbours(previous, f):
            add(
                tuple(claim_tokens[previous.claim_end : f.claim_start]),
                tuple(tokens[previous.context_end : f.context_start]),
                previous.claim_end == 0,
                previous.context_end,
                edge=False,
            )
            continue
        if previous is not None:
            jumps += 1
        # Not anchored on the left: compare the few words before this fragment on both sides.
        # "Norman Rockwell was a 19-year-old operator" vs "Mary Doyle was a 19-year-old operator".
        sentence = index.token_sentence[f.context_start]
        claim_from = max(0, f.claim_start - 3)
        claim_side = tuple(claim_tokens[claim_from : f.claim_start])
        context_side = _sentence_window(index, f.context_start - 3, f.context_start, sentence)
        add(claim_side, context_side, claim_from == 0, f.context_start - 1, edge=True, touching=-1)
        if previous is not None:
            # ... and the few words after the previous fragment, for the same reason.
            before = index.token_sentence[previous.context_end - 1]
            claim_side = tuple(claim_tokens[previous.claim_end : previous.claim_end + 3])
            context_side = _sentence_window(index, previous.context_end, previous.context_end + 3, before)
            add(claim_side, context_side, False, previous.context_end, edge=True, touching=0)
    if fragments:
        last = fragments[-1]
        claim_side = tuple(claim_tokens[last.claim_end : last.claim_end + 3])
        context_side = _sentence_window(
            index, last.context_end, last.context_end + 3, index.token_sentence[last.context_end - 1]
        )
        add(claim_side, context_side, False, last.context_end, edge=True, touching=0)
    covered = sum(f.length for f in fragments)
    kinds: dict[str, int] = {}
    for d in differences:
        for kind in d.kinds:
            name = f"edge_{kind}" if d.edge else kind  # one-sided differences are counted apart: they are less sure
            kinds[name] = kinds.get(name, 0) + 1
    return Alignment(
        fragments=fragments,
        differences=differences,
        coverage=covered / n if n else 0.0,
        density=sum(f.length**2 for f in fragments) / n if n else 0.0,
        jumps=jumps,
        n_words=n,
        kinds=kinds,
    )
