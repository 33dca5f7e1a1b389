"""Check the judge's evidence quotes against the passages, and locate them (character offsets).

A quote counts as found when it appears in its passage after light normalisation: runs of
whitespace become one space, curly and typographic quote marks become straight ones, dashes
become hyphens, and case is ignored. An ellipsis ("...") inside a quote may skip text: each
piece must then appear in order. Punctuation and quote marks at the edges of a quote (or of
a piece) may differ from the passage: a quote that ends with a period where the passage's
sentence goes on is found. A match starts and ends at word boundaries, so "cost 3." never
matches "cost 35" or "cost 3.5": words and numbers are never changed. Anything else (a
paraphrase, a wrong passage id, an invented sentence) is marked ``verified=False`` and counted;
it is never silently accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from hallumeasure.core.types import ClaimVerdict, Evidence, Passage, Sample, SourceKind
from hallumeasure.sources.passages import passage_by_id

#: Quote marks, dashes and spaces folded to their plain form, one character for one (indices are kept).
_FOLD = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "`": "'",
    "\u00b4": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u00ab": '"',
    "\u00bb": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2212": "-",
    "\u00a0": " ",
    "\u2009": " ",
    "\u202f": " ",
}
_ELLIPSIS_RE = re.compile(r"\s*(?:\.\s*\.\s*\.|\u2026)\s*")
_EDGE_QUOTES = "\"'\u2018\u2019\u201c\u201d\u00ab\u00bb` "
#: What may differ at the edges of a quote: quote marks, spaces and sentence punctuation.
_EDGE_MARKS = _EDGE_QUOTES + ".,;:!?\u2026"
#: Quotes shorter than this (after normalisation) prove nothing and are not accepted.
MIN_QUOTE = 3


def _fold(text: str) -> str:
    """``text`` with the characters of ``_FOLD`` replaced: a replace per character the text holds, which is far
    quicker than ``str.translate`` on a long non-ASCII passage, and the same (no replacement is itself folded)."""
    for char, plain in _FOLD.items():
        if char in text:
            text = text.replace(char, plain)
    return text


def normalise(text: str) -> tuple[str, list[int]]:
    """``text`` folded (quote marks, dashes, whitespace, case) and, per folded character, its original index."""
    text = _fold(text)
    folded = text.casefold()
    if len(folded) == len(text):  # no character folds to several ("ß" to "ss"): whitespace runs are all that move
        return _normalise_runs(text, folded)
    out: list[str] = []
    where: list[int] = []
    space = False
    for index, char in enumerate(text):
        if char.isspace():
            if out and not space:
                out.append(" ")
                where.append(index)
            space = True
            continue
        space = False
        for folded in char.casefold():
            out.append(folded)
            where.append(index)
    if out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


#: Runs of two or more whitespace characters: the only places where folding an ASCII text moves its indices.
_SPACE_RUN_RE = re.compile(r"\s{2,}")


def _normalise_runs(text: str, cased: str) -> tuple[str, list[int]]:
    """``normalise`` of a text whose case folding ``cased`` keeps one character for one, built from its few long
    whitespace runs rather than character by character.

    A single whitespace character becomes one space at its own index, so the index map is the identity except
    across the edges and across runs of two or more whitespace characters, each of which keeps only its first index.
    """
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    if start >= end:
        return "", []
    where: list[int] = []
    cursor = start
    for match in _SPACE_RUN_RE.finditer(text, start, end):
        where.extend(range(cursor, match.start() + 1))
        cursor = match.end()
    where.extend(range(cursor, end))
    return " ".join(cased.split()), where


def _folded(text: str) -> str:
    """``normalise(text)[0]`` without the index map, which a quote does not need: case folding maps one character
    at a time and never to a space, so folding the whole text after collapsing its spaces gives the same."""
    return " ".join(_fold(text).split()).casefold()


@lru_cache(maxsize=32)
def _normalised(text: str) -> tuple[str, list[int]]:
    """``normalise(text)``, kept for the passages of the sample at hand: every quote of a sample is looked up in
    the same few passages, which are folded once rather than once per quote (read-only: never mutate)."""
    return normalise(text)


def find_quote(quote: str, text: str) -> tuple[int, int] | None:
    """Offsets [start, end) of ``quote`` in ``text`` after normalisation, or None when it is not there.

    The quote is tried as given, then without quote marks around it (models often wrap quotes in them).
    """
    folded, where = _normalised(text)
    for candidate in dict.fromkeys((quote.strip(), quote.strip().strip(_EDGE_QUOTES))):
        found = _find_pieces(candidate, folded)
        if found is not None:
            return where[found[0]], where[found[1] - 1] + 1
    found = _find_pieces(quote, folded, trim=True)
    return None if found is None else (where[found[0]], where[found[1] - 1] + 1)


def _find_pieces(quote: str, folded: str, *, trim: bool = False) -> tuple[int, int] | None:
    """Where the pieces of ``quote`` (split at ellipses) occur in order in ``folded``.

    Every piece must start and end at word boundaries of ``folded``; with ``trim``, each piece first
    loses the quote marks and punctuation at its edges.
    """
    pieces = [_folded(p) for p in _ELLIPSIS_RE.split(quote)]
    if trim:
        pieces = [p.strip(_EDGE_MARKS) for p in pieces]
    pieces = [p for p in pieces if p.strip(_EDGE_QUOTES + ".")]
    if not pieces or sum(len(p) for p in pieces) < MIN_QUOTE:
        return None
    cursor, starts = 0, []
    for piece in pieces:
        at = folded.find(piece, cursor)
        while at >= 0 and not _on_word_boundaries(folded, at, at + len(piece)):
            at = folded.find(piece, at + 1)
        if at < 0:
            return None
        starts.append(at)
        cursor = at + len(piece)
    return starts[0], cursor


def _on_word_boundaries(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` neither starts nor ends inside a word or a number ("3" in "3.5")."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if before.isalnum() or after.isalnum():
        return False
    # A decimal point or thousands separator between digits joins one number.
    if after in ".," and end + 1 < len(text) and text[end + 1].isdigit() and text[end - 1].isdigit():
        return False
    return not (before in ".," and start >= 2 and text[start - 2].isdigit() and text[start].isdigit())


#: Which source a quote found in several is taken from: the most direct kind first.
KIND_ORDER = (
    SourceKind.PASSAGE,
    SourceKind.TOOL_RESULT,
    SourceKind.USER_CONTEXT,
    SourceKind.TOOL_CALL,
    SourceKind.SYSTEM_PROMPT,
    SourceKind.USER_TURN,
)


def verify(sample: Sample, passage_id: str | None, quote: str) -> Evidence:
    """An ``Evidence`` for ``quote`` said to come from ``passage_id``: located and verified, or marked unverified.

    A quote is looked up in the passage the judge named. Without a usable id (none given, or one
    that names no passage) it is looked up in every passage, and accepted only when exactly one
    passage holds it, counting only the most direct kind of source that holds it (``KIND_ORDER``: a
    retrieved passage before a system prompt that copies it).
    """
    passage = passage_by_id(sample, passage_id)
    candidates: Sequence[Passage] = (passage,) if passage is not None else sample.sources
    hits = [(p, span) for p in candidates if (span := find_quote(quote, p.text)) is not None]
    if len(hits) > 1 and passage is None:
        # The same words in sources of different kinds (an app that copies its retrieved documents into the
        # system prompt): the quote comes from the most direct kind, when one source of that kind holds it.
        best = min(KIND_ORDER.index(p.kind) for p, _ in hits)
        hits = [(p, span) for p, span in hits if KIND_ORDER.index(p.kind) == best]
    if len(hits) == 1 or (hits and passage is not None):
        found, (start, end) = hits[0]
        return Evidence(passage_id=found.id, source_kind=found.kind, quote=quote, start=start, end=end, verified=True)
    return Evidence(
        passage_id=passage.id if passage is not None else passage_id,
        source_kind=passage.kind if passage is not None else None,
        quote=quote,
        verified=False,
    )


def all_verified(evidence: Iterable[Evidence]) -> bool | None:
    """False when any quote failed, True when all were found, None when there is no quote."""
    evidence = list(evidence)
    return None if not evidence else all(e.verified for e in evidence)


def with_evidence(verdict: ClaimVerdict, evidence: Sequence[Evidence]) -> ClaimVerdict:
    return verdict.model_copy(update={"evidence": tuple(evidence), "evidence_verified": all_verified(evidence)})


def verified(sample: Sample, verdict: ClaimVerdict) -> ClaimVerdict:
    """``verdict`` with each of its quotes located and verified in ``sample``'s full passages."""
    if not verdict.evidence:
        return verdict
    return with_evidence(verdict, [verify(sample, e.passage_id, e.quote) for e in verdict.evidence])


def count_unverified(verdicts: Iterable[ClaimVerdict]) -> tuple[int, int]:
    """(claims whose evidence failed verification, claims with evidence to check)."""
    checked = [v.evidence_verified for v in verdicts if v.evidence_verified is not None]
    return sum(1 for v in checked if not v), len(checked)
