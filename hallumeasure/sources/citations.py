"""Citations in a response ("[1]", "[doc2]", "[^3]", "¹"): find them, give each claim its sentence's, judge them.

Each claim inherits the citations of the response sentence(s) its span falls in. After judging,
a claim's ``citation`` finding says whether a cited passage is one that supports it (a verified
quote from that passage), whether it cites the wrong passage while another supports it, whether it
cites nothing, or cites a passage that contradicts it. The finding sits next to the label; it never
changes it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hallumeasure.core.labels import Label
from hallumeasure.core.types import CitationFinding, Claim, ClaimVerdict, Sample, Span
from hallumeasure.sources.passages import passage_by_id

#: Default citation markers; each pattern names the cited id(s) in a group called ``ids``.
DEFAULT_PATTERNS: tuple[str, ...] = (
    r"\[(?P<ids>\d+(?:\s*[-,;\u2013]\s*\d+)*)\]",
    r"\[(?P<ids>(?:doc|document|source|passage|ref)\s*[-_#]?\s*\w+(?:\s*[,;]\s*(?:doc|document|source|passage|ref)\s*[-_#]?\s*\w+)*)\]",
    r"\[\^(?P<ids>\w+)\]",
    r"(?P<ids>[\u00b9\u00b2\u00b3\u2070\u2074-\u2079]+)",
)
_SUPERSCRIPT = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "0123456789")
_SPLIT_IDS = re.compile(r"\s*[,;]\s*")
_RANGE = re.compile(r"^(\d+)\s*[-\u2013]\s*(\d+)$")
#: A range wider than this is read as two ids, not expanded.
MAX_RANGE = 20


@dataclass(frozen=True)
class Marker:
    start: int
    end: int
    ids: tuple[str, ...]


def compile_patterns(patterns: Sequence[str] | None = None) -> list[re.Pattern[str]]:
    """The citation patterns, compiled; a pattern without an ``ids`` group (or a bad one) is a one-line error."""
    out = []
    for pattern in patterns or DEFAULT_PATTERNS:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"citation pattern {pattern!r} is not a valid regular expression: {exc}") from None
        if "ids" not in compiled.groupindex:
            raise ValueError(f"citation pattern {pattern!r} needs a group named ids, such as \\[(?P<ids>\\d+)\\]")
        out.append(compiled)
    return out


def id_pattern(sample: Sample) -> re.Pattern[str] | None:
    """A marker that names one of the sample's own passage ids in brackets ("[moon]", "[moon, tides]")."""
    ids = sorted({p.id for p in sample.passages if not p.id.isdigit()}, key=len, reverse=True)
    if not ids:
        return None
    one = "(?:" + "|".join(re.escape(i) for i in ids) + ")"
    return re.compile(rf"\[(?P<ids>{one}(?:\s*[,;]\s*{one})*)\]")


def find_markers(response: str, patterns: Sequence[re.Pattern[str]]) -> list[Marker]:
    """Citation markers of ``response``, in order, overlapping matches dropped (first pattern wins)."""
    found: list[Marker] = []
    for pattern in patterns:
        for match in pattern.finditer(response):
            if any(match.start() < m.end and m.start < match.end() for m in found):
                continue
            found.append(Marker(match.start(), match.end(), _ids(match["ids"])))
    return sorted(found, key=lambda m: m.start)


def _ids(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for part in _SPLIT_IDS.split(text.translate(_SUPERSCRIPT).strip()):
        span = _RANGE.match(part)
        if span and 0 < int(span[2]) - int(span[1]) <= MAX_RANGE:
            out += [str(i) for i in range(int(span[1]), int(span[2]) + 1)]
        elif part:
            out.append(part)
    return tuple(dict.fromkeys(out))


def strip_markers(response: str, markers: Sequence[Marker]) -> tuple[str, list[int]]:
    """``response`` without its markers (and the spaces just before them), and for each character kept
    its index in ``response``, so that claim spans found in the stripped text map back."""
    drop = [False] * len(response)
    for m in markers:
        start = m.start
        while start > 0 and response[start - 1] in " \t" and not drop[start - 1]:
            start -= 1
        for i in range(start, m.end):
            drop[i] = True
    kept = [i for i, gone in enumerate(drop) if not gone]
    return "".join(response[i] for i in kept), kept


def restore_spans(claims: Sequence[Claim], kept: Sequence[int]) -> list[Claim]:
    """Claims whose spans (into the stripped response) now point into the original response."""
    out = []
    for claim in claims:
        spans = tuple(
            Span(start=kept[s.start], end=kept[s.end - 1] + 1) for s in claim.spans if 0 <= s.start < s.end <= len(kept)
        )
        out.append(claim.model_copy(update={"spans": spans}))
    return out


def claim_citations(
    sample: Sample, claims: Sequence[Claim], markers: Sequence[Marker], sentences: Sequence[tuple[int, int]]
) -> dict[str, tuple[str, ...]]:
    """Claim id -> the passage ids (or unresolved ids, prefixed "?") its sentence(s) cite.

    A marker belongs to the last sentence that starts at or before it, so "...capital.[1] Next" cites
    the first sentence. Claims without a span in the response get no citations.
    """
    sentence_ids: list[list[str]] = [[] for _ in sentences]
    for marker in markers:
        owner = max((i for i, (start, _) in enumerate(sentences) if start <= marker.start), default=None)
        if owner is not None:
            sentence_ids[owner] += [_resolve(sample, i) for i in marker.ids]
    out: dict[str, tuple[str, ...]] = {}
    for claim in claims:
        cited: list[str] = []
        for span in claim.spans:
            for i, (start, end) in enumerate(sentences):
                if start < span.end and span.start < end:
                    cited += sentence_ids[i]
        out[claim.id] = tuple(dict.fromkeys(cited))
    return out


def _resolve(sample: Sample, cited: str) -> str:
    passage = passage_by_id(sample, cited)
    return passage.id if passage is not None else f"?{cited}"


def supporting(verdict: ClaimVerdict, label: Label = Label.SUPPORTED) -> set[str]:
    """Passages that a verified quote shows to back (or, with ``label=contradicted``, to contradict) the claim."""
    if verdict.label != label:
        return set()
    return {e.passage_id for e in verdict.evidence if e.verified and e.passage_id}


def finding(verdict: ClaimVerdict, cited: tuple[str, ...]) -> CitationFinding | None:
    """What the claim's citations say, in a response that cites; None for claims that are not checked."""
    if not verdict.ok or verdict.label == Label.UNEVALUATABLE:
        return None
    known = {c for c in cited if not c.startswith("?")}
    if not cited:
        return CitationFinding.UNCITED
    if not known:
        return CitationFinding.UNKNOWN_PASSAGE
    if verdict.label == Label.SUPPORTED:
        support = supporting(verdict)
        if not support:
            return CitationFinding.UNCHECKED
        return CitationFinding.CORRECT if known & support else CitationFinding.WRONG_PASSAGE
    if known & supporting(verdict, Label.CONTRADICTED):
        return CitationFinding.CITED_CONTRADICTS
    return CitationFinding.CITED_UNSUPPORTED
