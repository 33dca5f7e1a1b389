"""The context, analysed once and reused for every claim judged against it."""

from __future__ import annotations

import itertools
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from hallumeasure.offline.tokens import info, words
from hallumeasure.offline.values import Date, Quantity, dates, quantities

# Sentence ends: a full stop (or ! ?) followed by a capital, a digit or an opening quote; or a line break.
# A regular expression rather than pysbd, because contexts are long and this runs once per context.
_SENT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n+")


_APOSTROPHE_OR_HYPHEN = re.compile(r"['\-]")


def split_context(text: str) -> list[str]:
    return [s.strip() for s in _SENT_RE.split(text) if s and s.strip()]


@dataclass
class ContextIndex:
    """Sentences, words, stems, n-grams, numbers and dates of one context, with positions."""

    sentences: list[str]
    sentence_stems: list[frozenset[str]]
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
    #: Every word of the context in order, its alignment key and the sentence it belongs to.
    tokens: list[str]
    keys: list[str]
    token_sentence: list[int]
    bigram_positions: dict[tuple[str, str], list[int]]
    stem_sentences: dict[str, list[int]]
    n_words: int
    #: Typed values of the whole context by group, filled on first use: tuples of offline/slots.py's
    #: ``Value`` (Any here, as that module imports this one).
    slot_pools: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def log_words(self) -> float:
        return math.log1p(self.n_words)


@lru_cache(maxsize=256)
def index_context(context: str) -> ContextIndex:
    """Analyse ``context`` (cached: responses to the same source share the work)."""
    sentences = split_context(context) or [context]
    sentence_stems: list[frozenset[str]] = []
    bigrams: set[tuple[str, str]] = set()
    trigrams: set[tuple[str, str, str]] = set()
    tokens: list[str] = []
    token_sentence: list[int] = []
    stem_sentences: dict[str, list[int]] = defaultdict(list)
    infos: list[tuple[str, str, bool, str]] = []
    sentence_letters: list[set[str]] = []
    for number, sentence in enumerate(sentences):
        toks = words(sentence)
        these = [info(t) for t in toks]
        cs = [i[1] for i in these if i[2]]
        sentence_stems.append(frozenset(cs))
        for s in sentence_stems[-1]:
            stem_sentences[s].append(number)
        bigrams.update(itertools.pairwise(cs))
        low = [i[0] for i in these]
        trigrams.update(zip(low, low[1:], low[2:], strict=False))  # the shifted copies end early on purpose
        letters = set(low)  # digits in the set are harmless: it is only tested against word lists
        if "-" in sentence or "'" in sentence:
            for w in low:
                if "-" in w or "'" in w:
                    letters.update(p for p in _APOSTROPHE_OR_HYPHEN.split(w) if p)
        sentence_letters.append(letters)
        tokens += toks
        infos += these
        token_sentence += [number] * len(toks)
    keys = [i[3] for i in infos]
    sentence_quantities = [quantities(s, letters) for s, letters in zip(sentences, sentence_letters, strict=True)]
    bigram_positions: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, pair in enumerate(itertools.pairwise(keys)):
        bigram_positions[pair].append(i)
    return ContextIndex(
        sentences=sentences,
        sentence_stems=sentence_stems,
        stems=frozenset().union(*sentence_stems),
        bigrams=frozenset(bigrams),
        trigrams=frozenset(trigrams),
        lower_text=context.lower(),
        lower_words=frozenset(i[0] for i in infos),
        lowercase_words=frozenset(t for t, i in zip(tokens, infos, strict=True) if i[2] and t[0].islower()),
        quantities=[q for qs in sentence_quantities for q in qs],
        sentence_quantities=sentence_quantities,
        dates=dates(context, set().union(*sentence_letters)),
        tokens=tokens,
        keys=keys,
        token_sentence=token_sentence,
        bigram_positions=dict(bigram_positions),
        stem_sentences=dict(stem_sentences),
        n_words=len(tokens),
    )
