"""The context, analysed once and reused for every claim judged against it."""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from typing import Any

from hallumeasure.judges.offline.tokens import info, words
from hallumeasure.judges.offline.values import SPLIT_DECIMAL_RE, Date, Quantity, dates, quantities

# Sentence ends: a full stop (or ! ?) followed by a capital, a digit or an opening quote; or a line break.
# A regular expression rather than pysbd, because contexts are long and this runs once per context.
_SENT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n+")


_APOSTROPHE_OR_HYPHEN = re.compile(r"['\-]")
#: The lower-case form and the alignment key in a word's ``info`` tuple.
_LOWER, _KEY = itemgetter(0), itemgetter(3)


def _split_decimal(text: str, dot: int, after: int) -> bool:
    """Whether the sentence end between ``dot`` and ``after`` is the space inside a split decimal."""
    for begin in range(max(0, dot - 4), dot - 1):
        found = SPLIT_DECIMAL_RE.match(text, begin)
        if found is not None and found.end() == after:
            return True
    return False


def split_context(text: str) -> list[str]:
    """The sentences of ``text``; a decimal split by a space after its point ("98. 7 per cent") is no sentence end."""
    pieces, start = [], 0
    for end in _SENT_RE.finditer(text):
        if _split_decimal(text, end.start(), end.end()):
            continue
        pieces.append(text[start : end.start()])
        start = end.end()
    pieces.append(text[start:])
    return [s.strip() for s in pieces if s and s.strip()]


@dataclass
class ContextIndex:
    """Sentences, words, stems, n-grams, numbers and dates of one context, with positions."""

    sentences: list[str]
    sentence_stems: list[frozenset[str]]
    #: The sentences whose content words include each stem, in order (``sentence_stems`` read the other way).
    stem_sentences: dict[str, tuple[int, ...]]
    stems: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    trigrams: frozenset[tuple[str, str, str]]
    lower_text: str
    lower_words: frozenset[str]
    #: Words seen in lower case somewhere in the context (so a capitalised first word of a claim is not a name).
    lowercase_words: frozenset[str]
    quantities: list[Quantity]
    sentence_quantities: list[list[Quantity]]
    dates: set[Date]
    #: Every word of the context in order, in lower case, its alignment key and the sentence it belongs to.
    tokens: list[str]
    lower_tokens: list[str]
    keys: list[str]
    token_sentence: list[int]
    #: Where each sentence's words start in ``tokens``, and (last) where the words end.
    sentence_starts: list[int]
    #: Where each alignment key occurs in ``keys``. Tuples, not lists: tuples of numbers are not tracked by
    #: Python's cycle collector, which would otherwise walk the lists of every cached context over and over.
    key_positions: dict[str, tuple[int, ...]]
    n_words: int
    #: Typed values that offline/slots.py reads from this context, filled on first use: of the whole context by
    #: group of kinds, and of single sentences. Its ``Value`` objects (Any here, as that module imports this one).
    slot_cache: dict[tuple[str, int | str], Any] = field(default_factory=dict)
    #: The pairs of neighbouring words of single sentences, filled on first use (``sentence_pairs``).
    pair_cache: dict[int, frozenset[tuple[str, str]]] = field(default_factory=dict)

    @property
    def log_words(self) -> float:
        return math.log1p(self.n_words)

    def sentence_words(self, sentence: int) -> list[str]:
        """The words of one sentence, as ``words`` reads them (kept from the index, not read again)."""
        return self.tokens[self.sentence_starts[sentence] : self.sentence_starts[sentence + 1]]

    def sentence_lower(self, sentence: int) -> list[str]:
        """The words of one sentence in lower case."""
        return self.lower_tokens[self.sentence_starts[sentence] : self.sentence_starts[sentence + 1]]

    def sentence_pairs(self, sentence: int) -> frozenset[tuple[str, str]]:
        """The pairs of neighbouring words of one sentence, read once per context: every claim's tie-break asks."""
        pairs = self.pair_cache.get(sentence)
        if pairs is None:
            pairs = self.pair_cache[sentence] = frozenset(itertools.pairwise(self.sentence_words(sentence)))
        return pairs

    def bigram_positions(self, first: str, second: str) -> list[int]:
        """Where the alignment keys ``first`` and ``second`` follow each other, in order."""
        keys = self.keys
        before, after = self.key_positions.get(first, ()), self.key_positions.get(second, ())
        if len(after) < len(before):  # walk the rarer word's places ("the bridge": the places of "bridge")
            return [at - 1 for at in after if at > 0 and keys[at - 1] == first]
        last = len(keys) - 1
        return [at for at in before if at < last and keys[at + 1] == second]

    def sentences_with(self, stem: str) -> list[int]:
        """The sentences whose content words include ``stem``, in order."""
        return list(self.stem_sentences.get(stem, ()))

    def overlaps(self, stems: set[str]) -> list[int]:
        """How many of ``stems`` each sentence's content words include, sentence by sentence (counted from the
        stems' sentences: a claim has a few stems, a context many sentences)."""
        counts = [0] * len(self.sentence_stems)
        for stem in stems:
            for number in self.stem_sentences.get(stem, ()):
                counts[number] += 1
        return counts


def _positions(items: list[str]) -> dict[str, tuple[int, ...]]:
    """Where each item occurs in ``items``, in order."""
    found: dict[str, list[int]] = {}
    for at, item in enumerate(items):
        if item in found:
            found[item].append(at)
        else:
            found[item] = [at]
    return {item: tuple(where) for item, where in found.items()}


def _containing(sets: list[frozenset[str]]) -> dict[str, tuple[int, ...]]:
    """For each member of any of ``sets``, the numbers of the sets that hold it, in order."""
    found: dict[str, list[int]] = {}
    for number, members in enumerate(sets):
        for member in members:
            found.setdefault(member, []).append(number)
    return {member: tuple(numbers) for member, numbers in found.items()}


def _letters(sentence: str, lower: list[str]) -> set[str]:
    """The lower-cased words of a sentence and the parts of its hyphenated words and contractions (what the
    number and date readers' quick tests look for)."""
    letters = set(lower)  # digits in the set are harmless: it is only tested against word lists
    if "-" in sentence or "'" in sentence:
        for w in lower:
            if "-" in w or "'" in w:
                letters.update(p for p in _APOSTROPHE_OR_HYPHEN.split(w) if p)
    return letters


@lru_cache(maxsize=256)
def index_context(context: str) -> ContextIndex:
    """Analyse ``context`` (cached: responses to the same source share the work)."""
    sentences = split_context(context) or [context]
    sentence_stems: list[frozenset[str]] = []
    bigrams: set[tuple[str, str]] = set()
    trigrams: set[tuple[str, str, str]] = set()
    tokens: list[str] = []
    token_sentence: list[int] = []
    starts: list[int] = []
    infos: list[tuple[str, str, bool, str]] = []
    lower_tokens: list[str] = []
    sentence_letters: list[set[str]] = []
    for number, sentence in enumerate(sentences):
        starts.append(len(tokens))
        toks = words(sentence)
        these = list(map(info, toks))
        cs = [i[1] for i in these if i[2]]
        sentence_stems.append(frozenset(cs))
        bigrams.update(itertools.pairwise(cs))
        low = list(map(_LOWER, these))
        trigrams.update(zip(low, low[1:], low[2:], strict=False))  # the shifted copies end early on purpose
        sentence_letters.append(_letters(sentence, low))
        tokens += toks
        lower_tokens += low
        infos += these
        token_sentence += [number] * len(toks)
    starts.append(len(tokens))
    keys = list(map(_KEY, infos))
    sentence_quantities = [quantities(s, letters) for s, letters in zip(sentences, sentence_letters, strict=True)]
    # Read per distinct word: whether a word is a content word in lower case depends on the word alone.
    distinct = dict(zip(tokens, infos, strict=True))
    return ContextIndex(
        sentences=sentences,
        sentence_stems=sentence_stems,
        stem_sentences=_containing(sentence_stems),
        stems=frozenset().union(*sentence_stems),
        bigrams=frozenset(bigrams),
        trigrams=frozenset(trigrams),
        lower_text=context.lower(),
        lower_words=frozenset(lower_tokens),
        lowercase_words=frozenset(t for t, i in distinct.items() if i[2] and t[0].islower()),
        quantities=[q for qs in sentence_quantities for q in qs],
        sentence_quantities=sentence_quantities,
        dates=dates(context, set().union(*sentence_letters)),
        tokens=tokens,
        lower_tokens=lower_tokens,
        keys=keys,
        token_sentence=token_sentence,
        sentence_starts=starts,
        key_positions=_positions(keys),
        n_words=len(tokens),
    )
