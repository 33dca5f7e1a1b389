"""Sources longer than the judge's window: chunk, rank per claim with BM25, show the judge what fits.

A response's claims are judged against one *view* of the source: the chunks that rank highest
for the whole response and for each claim, with the text around the best of them, until the
token budget is full (``view_for``). One view per response keeps the prompt-cache design: the view is the
cached prefix shared by the response's claims, and the claims come after it. Chunks follow
sentence boundaries and overlap by one sentence, so a fact that straddles two chunks is whole
in one of them. The view keeps passage ids and titles, and text cut out between two shown ranges
is marked, so a judge's quote is still checked against the full passage.

Ranking uses ``bm25s`` (numpy only, maintained, fast sparse scoring); ``rank-bm25`` was the
alternative but is unmaintained since 2022 and scores in Python loops.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from hallumeasure.core.text import count_tokens, pack_sentences
from hallumeasure.core.types import Claim, Passage, Sample
from hallumeasure.registry import facts as model_facts

if TYPE_CHECKING:  # imported where used: a run without passages never loads them
    import bm25s
    import numpy as np

#: Source tokens per chunk (the simulators' token count: words and punctuation marks).
CHUNK_TOKENS = 160
#: Sentences repeated at the start of the next chunk.
OVERLAP_SENTENCES = 1
#: Shown between two ranges of one passage that are not next to each other.
GAP_MARK = "\n[...]\n"
#: Tokens of a window kept for instructions, claims and the answer.
WINDOW_RESERVE = 16_000
#: Real tokenizers count more tokens than the simulators' words-and-marks estimate; stay on the safe side.
TOKEN_SAFETY = 1.3
#: A chunk joins a view from a ranking only if it scores at least this share of that ranking's best.
RELATIVE_FLOOR = 0.5
#: How far (in chunks) the view reaches around each best chunk before it takes lower-ranked ones.
NEIGHBOURS = 2

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n|\n(?=\s*[-*\u2022\d])")


@dataclass(frozen=True)
class Chunk:
    passage_id: str
    start: int
    end: int
    tokens: int

    @property
    def label(self) -> str:
        return f"{self.passage_id}:{self.start}-{self.end}"


@dataclass(frozen=True)
class SourceView:
    """What the judge is shown for one response: the sample (a view of it when cut) and the ranges shown."""

    sample: Sample
    shown: tuple[str, ...] = ()
    budget: int | None = None

    @property
    def cut(self) -> bool:
        return bool(self.shown)


def context_budget(judge_name: str, max_context_tokens: int | None = None) -> int | None:
    """Source tokens the judge may be shown per call: the explicit budget, else what its window leaves."""
    if max_context_tokens is not None:
        return max_context_tokens
    window = model_facts(judge_name).context_window  # the registry's facts of the judge's model; keyless: none
    return int((window - WINDOW_RESERVE) / TOKEN_SAFETY) if window else None


def source_tokens(sample: Sample) -> int:
    return sum(count_tokens(p.text) + count_tokens(p.title or "") for p in sample.sources)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence (a fast rule: sentence marks before a capital, blank lines, list items)."""
    spans, cursor = [], 0
    for match in [*_SENTENCE_END.finditer(text), None]:
        end = match.start() if match else len(text)
        piece = text[cursor:end]
        if piece.strip():
            start = cursor + (len(piece) - len(piece.lstrip()))
            spans.append((start, cursor + len(piece.rstrip())))
        cursor = match.end() if match else len(text)
    return spans


def chunk_passage(passage: Passage, size: int = CHUNK_TOKENS, overlap: int = OVERLAP_SENTENCES) -> list[Chunk]:
    """Sentence-aligned chunks of about ``size`` tokens; consecutive chunks share ``overlap`` sentences.

    A sentence longer than ``size`` is a chunk of its own (cut at word boundaries if it is longer than
    four chunks, so that one run-on sentence cannot fill the window).
    """
    text = passage.text
    sentences = [(s, e, count_tokens(text[s:e])) for s, e in _split_long(text, sentence_spans(text), size * 4)]
    ends = list(itertools.accumulate((t for _, _, t in sentences), initial=0))  # tokens before each sentence
    packed = pack_sentences(len(sentences), lambda i, j: ends[j + 1] - ends[i] <= size, overlap)
    return [Chunk(passage.id, sentences[i][0], sentences[j][1], ends[j + 1] - ends[i]) for i, j in packed]


def _split_long(text: str, spans: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    out = []
    for start, end in spans:
        if count_tokens(text[start:end]) <= limit:
            out.append((start, end))
            continue
        words = [m.span() for m in re.finditer(r"\S+", text[start:end])]
        for i in range(0, len(words), limit // 2):
            piece = words[i : i + limit // 2]
            out.append((start + piece[0][0], start + piece[-1][1]))
    return out


@lru_cache(maxsize=16)
def _index(sources: tuple[Passage, ...]) -> tuple[list[Chunk], bm25s.BM25]:
    import bm25s

    chunks = [c for p in sources for c in chunk_passage(p)]
    texts = {p.id: p for p in sources}
    corpus = [(texts[c.passage_id].title or "") + " " + texts[c.passage_id].text[c.start : c.end] for c in chunks]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    return chunks, retriever


def _scores(sources: tuple[Passage, ...], query: str) -> np.ndarray:
    import bm25s
    import numpy as np

    chunks, retriever = _index(sources)
    tokens = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
    return np.asarray(retriever.get_scores(tokens), dtype=float) if tokens else np.zeros(len(chunks))


def rank_chunks(sources: tuple[Passage, ...], query: str) -> list[tuple[Chunk, float]]:
    """Chunks of ``sources`` by BM25 score for ``query``, best first; chunks sharing no word are left out."""
    chunks, _ = _index(sources)
    scores = _scores(sources, query)
    order = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
    return [(chunks[i], float(scores[i])) for i in order if scores[i] > 0]


def view_for(sample: Sample, claims: Sequence[Claim], budget: int | None) -> SourceView:
    """The whole sample when its source fits ``budget`` tokens, else a view of the chunks that matter to ``claims``.

    Rankings come from the whole response and from each claim, keeping chunks that score at least
    ``RELATIVE_FLOOR`` of that ranking's best. The view takes the best chunk of each ranking, then the
    chunks around those (up to ``NEIGHBOURS`` away, nearest first), then the rest of each ranking in
    turns, while the budget lasts: it stays on the text the response is about rather than on loosely
    related passages elsewhere.
    """
    if budget is None or source_tokens(sample) <= budget or not claims:
        return SourceView(sample, budget=budget)
    sources = sample.sources
    # The whole response leads the turns: it names what the response is about, which single claims
    # ("It was 42 metres tall.") may not.
    queries = [sample.response, *(claim.text for claim in claims)]
    rankings = []
    for query in queries:
        ranked = rank_chunks(sources, query)
        rankings.append([c for c, score in ranked if score >= RELATIVE_FLOOR * ranked[0][1]] if ranked else [])
    chosen: dict[str, Chunk] = {}
    used = 0

    def take(chunk: Chunk) -> None:
        nonlocal used
        if chunk.label not in chosen and used + chunk.tokens <= budget:
            chosen[chunk.label] = chunk
            used += chunk.tokens

    chunks, _ = _index(sources)
    position = {c.label: i for i, c in enumerate(chunks)}
    for ranking in rankings:
        if ranking:
            take(ranking[0])
    ranked_best = next((ranking[0] for ranking in rankings if ranking), None)
    if not chosen and ranked_best is None:  # nothing shares a word with the response: show the start of the source
        take(chunks[0])
    best = ranked_best or chunks[0]
    if not chosen:  # a budget smaller than the best chunk (a small window): its start, cut to fit
        cut = _cut_to(best, next(p.text for p in sources if p.id == best.passage_id), budget)
        return _view(sample, [cut] if cut is not None else [], budget)
    # Then the text around the best chunks, nearest first; then the rest of each ranking in turns.
    seeds = list(chosen.values())
    for distance in range(1, NEIGHBOURS + 1):
        for seed in seeds:
            for i in (position[seed.label] - distance, position[seed.label] + distance):
                if 0 <= i < len(chunks) and chunks[i].passage_id == seed.passage_id:
                    take(chunks[i])
    for rank in range(1, max(map(len, rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                take(ranking[rank])
    return _view(sample, list(chosen.values()), budget)


def _cut_to(chunk: Chunk, text: str, budget: int) -> Chunk | None:
    """The start of ``chunk`` that fits ``budget`` tokens, ended after a whole word; None when no word fits."""
    end, tokens = chunk.start, 0
    for word in re.finditer(r"\S+", text[chunk.start : chunk.end]):
        more = count_tokens(word.group())
        if tokens + more > budget:
            break
        end, tokens = chunk.start + word.end(), tokens + more
    return Chunk(chunk.passage_id, chunk.start, end, tokens) if tokens else None


def _view(sample: Sample, chunks: list[Chunk], budget: int) -> SourceView:
    by_passage: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        by_passage.setdefault(c.passage_id, []).append((c.start, c.end))
    passages, shown = [], []
    for passage in sample.sources:
        ranges = _merge(by_passage.get(passage.id, []))
        if not ranges:
            continue
        passages.append(passage.model_copy(update={"text": GAP_MARK.join(passage.text[s:e] for s, e in ranges)}))
        shown += [f"{passage.id}:{s}-{e}" for s, e in ranges]
    view = sample.model_copy(update={"passages": tuple(passages), "context": ""})
    # model_copy skips validation: rebuild so that the context is the view's own text.
    view = Sample.model_validate(view.model_dump())
    return SourceView(view, shown=tuple(shown), budget=budget)


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
