"""The source cut to the checker's own window: overlapping chunks of whole sentences, each a slice of the source.

A trained checker reads at most its window of tokens (512 for RoBERTa and DeBERTa, 2048 for HHEM's Flan-T5)
for the chunk and the claim together, and truncating a long source would hide its end from every claim.
So the source is split into sentences and packed, in order, into chunks that fit what the window leaves
after the claim; consecutive chunks share ``overlap`` sentences, so a fact stated across a chunk border is
whole in one of them (MiniCheck chunks documents the same way; Tang et al., 2024). A sentence longer than a
chunk is cut at word boundaries. Every chunk is a slice of the source, so it can be quoted as evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from hallumeasure.core.text import pack_sentences, split_sentences

#: Sentences shared by consecutive chunks.
OVERLAP = 1
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    """A slice ``source[start:end]`` of the source."""

    text: str
    start: int
    end: int


def _pieces(source: str, start: int, end: int, budget: int, count: Callable[[str], int]) -> list[tuple[int, int]]:
    """``source[start:end]`` (one sentence) as spans of at most ``budget`` tokens, cut between words."""
    if count(source[start:end]) <= budget:
        return [(start, end)]
    spans: list[tuple[int, int]] = []
    piece_start: int | None = None
    last_end = start
    for match in _WORD.finditer(source, start, end):
        if piece_start is None:
            piece_start = match.start()
        elif count(source[piece_start : match.end()]) > budget:
            spans.append((piece_start, last_end))
            piece_start = match.start()
        last_end = match.end()
    if piece_start is not None:
        spans.append((piece_start, last_end))
    return spans


def chunk_source(source: str, budget: int, count: Callable[[str], int], *, overlap: int = OVERLAP) -> list[Chunk]:
    """``source`` in chunks of whole sentences of at most ``budget`` tokens (by ``count``), ``overlap``
    sentences shared between neighbours; the whole source as one chunk when it fits."""
    if not source.strip():
        return [Chunk(source, 0, len(source))]
    if count(source) <= budget:
        return [Chunk(source, 0, len(source))]
    units: list[tuple[int, int]] = []
    spans = [(span.start, span.end) for _, span in split_sentences(source)] or [(0, len(source))]
    for start, end in spans:
        units.extend(_pieces(source, start, end, max(budget, 1), count))
    packed = pack_sentences(len(units), lambda i, j: count(source[units[i][0] : units[j][1]]) <= budget, overlap)
    return [Chunk(source[units[i][0] : units[j][1]], units[i][0], units[j][1]) for i, j in packed]
