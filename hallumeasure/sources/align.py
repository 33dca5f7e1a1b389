"""Find the context sentence a claim most likely comes from, by word overlap.

This is a reading aid for reports and notebooks, not a judgement: the sentence with the
largest share of the claim's content words is shown beside the claim, and nothing is shown
when no sentence shares any content word.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from markupsafe import Markup, escape

from hallumeasure.core.text import split_sentences, words
from hallumeasure.core.types import Span

#: Words too common to say where a claim comes from.
_STOP = frozenset(
    "a an the of and or but to in on at for by with from as is are was were be been being it its this that "
    "these those he she they them his her their there here not no so than then has have had will would can "
    "could should may might do does did about into over after before".split()
)


@dataclass(frozen=True)
class Alignment:
    """The best-matching context sentence, its character span in the context, and its overlap (0..1)."""

    sentence: str
    start: int
    end: int
    overlap: float


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in _STOP}


def align_claim(claim: str, context: str, sentences: list[tuple[str, Span]] | None = None) -> Alignment | None:
    """The context sentence sharing the largest share of the claim's content words, or None."""
    target = content_words(claim)
    if not target:
        return None
    sentences = split_sentences(context) if sentences is None else sentences
    best: Alignment | None = None
    for sentence, span in sentences:
        overlap = len(target & content_words(sentence)) / len(target)
        if overlap > 0 and (best is None or overlap > best.overlap):
            best = Alignment(sentence, span.start, span.end, round(overlap, 3))
    return best


class SentenceIndex:
    """A context's sentences and, for each content word, the sentences that hold it: ``align`` gives what
    ``align_claim`` gives, at the cost of the claim's words' postings rather than of every sentence (a
    thousand claims against a context of 40,000 sentences take a second, not minutes)."""

    def __init__(self, context: str, sentences: list[tuple[str, Span]] | None = None) -> None:
        self.sentences = split_sentences(context) if sentences is None else sentences
        self.postings: dict[str, list[int]] = {}
        seen: set[str] = set()
        for i, (sentence, _) in enumerate(self.sentences):
            if sentence in seen:  # a repeated sentence never beats its first copy
                continue
            seen.add(sentence)
            for word in content_words(sentence):
                self.postings.setdefault(word, []).append(i)

    def align(self, claim: str) -> Alignment | None:
        """The sentence sharing the largest share of the claim's content words (the first of equals), or None."""
        target = content_words(claim)
        shared: Counter[int] = Counter()
        for word in target:
            shared.update(self.postings.get(word, ()))
        if not shared:
            return None
        top = max(shared.values())
        best = min(i for i, n in shared.items() if n == top)
        sentence, span = self.sentences[best]
        return Alignment(sentence, span.start, span.end, round(shared[best] / len(target), 3))


def highlight(context: str, alignments: Alignment | Iterable[Alignment | None] | None) -> Markup:
    """The context as safe HTML with aligned sentences wrapped in ``<mark>``; every piece is escaped."""
    if alignments is None or isinstance(alignments, Alignment):
        alignments = [alignments]
    spans = sorted({(a.start, a.end) for a in alignments if a is not None})
    out, cursor = Markup(""), 0
    for start, end in spans:
        start = max(start, cursor)  # overlapping spans: mark the rest only
        if end <= start:
            continue
        out += escape(context[cursor:start]) + Markup("<mark>") + escape(context[start:end]) + Markup("</mark>")
        cursor = end
    return out + escape(context[cursor:])
