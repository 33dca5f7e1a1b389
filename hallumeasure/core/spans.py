"""Where in the response a claim sits, and which characters of a response are unsupported.

Two jobs, both over character offsets ``[start, end)`` into the response:

* ``align`` finds a claim's span when the extractor did not know it (an LLM paraphrased): an exact
  match, then the same text ignoring case, spacing and quote marks, then the densest run of the
  response's words that holds at least half of the claim's content words. When none is found the
  claim keeps no span and ``Claim.located`` is False; a span is never outside the response.
* ``unsupported_spans`` turns a response's judged claims into LettuceDetect-style records
  ``{start, end, text, confidence, label, subtype}``, merged where claims overlap, with
  ``response[start:end] == text`` always. Where a verdict names the words it finds wrong (``focus``: the
  number, date, name or negation, or the phrase the claim adds), the record covers those words, not the
  whole claim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hallumeasure.core.labels import Label, Policy, Subtype
from hallumeasure.core.types import Claim, ClaimVerdict, Span

#: Worst first: the label a merged span reports when claims with different labels overlap.
SEVERITY: tuple[Label, ...] = (Label.CONTRADICTED, Label.ABSENT, Label.PARTIALLY_SUPPORTED, Label.UNEVALUATABLE)

#: The share of a claim's content words that an aligned run of response words must hold.
MIN_ALIGNED_COVERAGE = 0.5

#: Confidence given to an unsupported claim whose judge gives no probability: a confident verdict is 1.0,
#: an unsure best guess (a keyless judge that could not tell) 0.5.
CONFIDENT, UNSURE = 1.0, 0.5

_WORD = re.compile(r"\w+", re.UNICODE)
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})
_STOP = frozenset(
    "a an the of in on at to for by with from and or but is are was were be been being it its this that these those "
    "he she they them his her their as has have had do does did not no so than then there which who whom what".split()
)


class TextSpan(BaseModel):
    """A span of a text with the text it covers; built by ``TextSpan.of`` so that ``text`` is always right."""

    model_config = ConfigDict(frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str

    @model_validator(mode="after")
    def _ordered(self) -> TextSpan:
        if self.end < self.start or len(self.text) != self.end - self.start:
            raise ValueError(
                f"a span [{self.start}, {self.end}) must hold exactly its {self.end - self.start} characters"
            )
        return self


class UnsupportedSpan(TextSpan):
    """Characters of a response that unsupported claims come from (LettuceDetect's record, with the label).

    ``confidence`` is the highest probability of the claims behind it (1.0 for a confident verdict without
    one, 0.5 for a keyless judge's unsure guess); ``label`` and ``subtype`` are the worst claim's.
    """

    confidence: float = Field(ge=0.0, le=1.0)
    label: Label
    subtype: Subtype | None = None
    #: Indexes of the claims behind the span, in claim order.
    claims: tuple[int, ...] = ()


def valid(spans: Iterable[Span], response: str) -> tuple[Span, ...]:
    """``spans`` that lie inside ``response`` and hold something, sorted; anything else is dropped."""
    return tuple(sorted({s for s in spans if 0 <= s.start < s.end <= len(response)}, key=lambda s: (s.start, s.end)))


def bounded(claims: Iterable[Claim], response: str) -> list[Claim]:
    """``claims`` with every span outside ``response`` (or empty, or only white space) dropped and the rest trimmed."""
    out = []
    for claim in claims:
        spans = valid((t for s in claim.spans if (t := trimmed(s, response)) is not None), response)
        out.append(claim if spans == claim.spans else claim.model_copy(update={"spans": spans}))
    return out


def trimmed(span: Span, response: str) -> Span | None:
    """``span`` without the white space at its edges; None when nothing else is left, or it does not lie
    inside ``response`` (a span past the end was meant for another text: it is dropped, not cut)."""
    if not 0 <= span.start < span.end <= len(response):
        return None
    start, end = span.start, span.end
    while start < end and response[start].isspace():
        start += 1
    while end > start and response[end - 1].isspace():
        end -= 1
    return Span(start=start, end=end) if end > start else None


def align(fragment: str, response: str) -> tuple[Span, ...]:
    """Where ``fragment`` (a claim, or a model's quote of the response) sits in ``response``; () when nowhere."""
    fragment = fragment.strip()
    if not fragment or not response:
        return ()
    start = response.find(fragment)
    if start >= 0:
        return (Span(start=start, end=start + len(fragment)),)
    return loose_match(fragment, response) or aligned_words(fragment, response)


def loose_match(fragment: str, response: str) -> tuple[Span, ...]:
    """The fragment ignoring case, runs of white space, curly quotes and a final full stop."""
    pieces = _WORD.findall(fragment.translate(_QUOTES))
    if not pieces:
        return ()
    body = fragment.translate(_QUOTES).strip().rstrip(".")
    tokens = [re.escape(t) for t in re.split(r"\s+", body) if t]
    if not tokens:
        return ()
    pattern = r"\s+".join(t.replace("'", "['\u2018\u2019]").replace('"', '["\u201c\u201d]') for t in tokens)
    found = re.search(pattern, response, flags=re.IGNORECASE)
    return (Span(start=found.start(), end=found.end()),) if found and found.end() > found.start() else ()


def aligned_words(fragment: str, response: str, *, min_coverage: float = MIN_ALIGNED_COVERAGE) -> tuple[Span, ...]:
    """The densest run of response words holding at least ``min_coverage`` of the fragment's content words.

    Words match case-insensitively and in any order (a paraphrase may reorder them); a run may skip a
    few words between matches (a clause the claim left out). The span goes from the first matched word
    to the last, so it never starts or ends in white space.
    """
    wanted = {w.lower() for w in _WORD.findall(fragment)}
    content = {w for w in wanted if w not in _STOP} or wanted
    if not content:
        return ()
    hits = [(m.start(), m.end(), m.group(0).lower()) for m in _WORD.finditer(response)]
    positions = [i for i, (_, _, w) in enumerate(hits) if w in content]
    if not positions:
        return ()
    gap = max(5, 2 * len(content))
    best: tuple[int, int, int] | None = None  # (covered, first, last)
    first = previous = positions[0]
    for position in [*positions[1:], None]:
        if position is not None and position - previous <= gap:
            previous = position
            continue
        covered = len({hits[i][2] for i in range(first, previous + 1)} & content)
        if best is None or covered > best[0] or (covered == best[0] and previous - first < best[2] - best[1]):
            best = (covered, first, previous)
        if position is not None:
            first = previous = position
    assert best is not None
    covered, first, last = best
    if covered / len(content) < min_coverage:
        return ()
    return (Span(start=hits[first][0], end=hits[last][1]),)


def unsupported_spans(
    response: str, claims: Sequence[Claim], verdicts: Iterable[ClaimVerdict], policy: Policy | None = None
) -> list[UnsupportedSpan]:
    """The characters of ``response`` behind its unsupported claims, merged where claims overlap.

    A claim counts when its verdict is unsupported under ``policy`` (an unsure best guess included, with
    its lower confidence); error rows and claims without a span add nothing.
    """
    policy = policy or Policy()
    by_id = {v.claim_id: v for v in verdicts}
    pieces: list[tuple[Span, Claim, ClaimVerdict]] = []
    for claim in claims:
        verdict = by_id.get(claim.id)
        if verdict is None or not verdict.ok or verdict.label is None or not policy.is_unsupported(verdict.label):
            continue
        for span in valid(claim.spans, response):
            if (kept := trimmed(span, response)) is not None:
                pieces += [(part, claim, verdict) for part in focused(kept, verdict.focus, response)]
    pieces.sort(key=lambda p: (p[0].start, p[0].end))
    groups: list[list[tuple[Span, Claim, ClaimVerdict]]] = []
    end = -1
    for piece in pieces:
        if groups and piece[0].start < end:
            groups[-1].append(piece)
            end = max(end, piece[0].end)
        else:
            groups.append([piece])
            end = piece[0].end
    return [_merged(response, group) for group in groups]


def focused(span: Span, focus: Sequence[str], response: str) -> list[Span]:
    """The parts of ``span`` that hold the words a verdict finds wrong (``ClaimVerdict.focus``), matched ignoring
    case and the spacing and punctuation between words; the whole span when there are none or none is found."""
    text = response[span.start : span.end]
    parts = []
    for words in focus:
        pieces = _WORD.findall(words)
        if not pieces:
            continue
        pattern = r"(?<!\w)" + r"\W{1,3}".join(re.escape(p) for p in pieces) + r"(?!\w)"
        found = re.search(pattern, text, flags=re.IGNORECASE)
        if found is not None:
            parts.append(Span(start=span.start + found.start(), end=span.start + found.end()))
    return list(valid(parts, response)) or [span]


def _merged(response: str, group: list[tuple[Span, Claim, ClaimVerdict]]) -> UnsupportedSpan:
    start = min(s.start for s, _, _ in group)
    end = max(s.end for s, _, _ in group)
    worst = min(group, key=lambda p: (_severity(p[2].label), p[1].index))[2]
    return UnsupportedSpan(
        start=start,
        end=end,
        text=response[start:end],
        confidence=max(_confidence(v) for _, _, v in group),
        label=worst.label or Label.UNEVALUATABLE,
        subtype=worst.subtype,
        claims=tuple(sorted({c.index for _, c, _ in group})),
    )


def _severity(label: Label | None) -> int:
    return SEVERITY.index(label) if label in SEVERITY else len(SEVERITY)


def _confidence(verdict: ClaimVerdict) -> float:
    if verdict.probability is not None:
        return verdict.probability
    return CONFIDENT if verdict.confident else UNSURE


def covered(spans: Iterable[TextSpan | Span]) -> set[int]:
    """The character positions a set of spans covers."""
    return {i for s in spans for i in range(s.start, s.end)}
