"""Work limits per response: how long a response, and how many claims, a run judges before it stops to ask.

One response can cost more than a whole dataset: a 20 MB answer was split into 240,963 claims, ran for ten
minutes and would have cost a judge call per claim. A response over a limit is not judged; it is stored as
an error row whose message names the limit, the measured size and how to raise it, so nothing is lost and
the run says what it left out. The response limit is checked before anything is called, the claim limit
after the extraction and before any judge call. A limit of 0 lifts it. Resuming a run measures its
over-limit rows again under the limits given then, so raising a limit and adding ``--resume`` finishes them.

Only the response is limited here: sources of any length are judged through views (``sources/retrieval.py``).
The guard keeps its own, tighter limits for its latency budget (``guard/settings.py``).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hallumeasure.core.types import Sample

#: The measure settings that are work limits, in the order they are checked.
LIMIT_SETTINGS = ("max_response_chars", "max_claims")
#: The limits of ``measure`` by default; ``bench``, ``monitor`` and the mitigation rounds apply them too.
MAX_RESPONSE_CHARS = 100_000
MAX_CLAIMS = 2_000
#: How the message of a response left out by a limit begins. For people only: the row's kind is
#: ``ErrorKind.OVER_LIMIT`` (set by the pipeline), and that is what a resume asks the run store for.
OVER_LIMIT = "not judged: "


@dataclass(frozen=True)
class LimitHit:
    """A response over a work limit: what was measured, its size, the limit and the setting that raises it."""

    what: str
    size: int
    limit: int
    setting: str

    @property
    def message(self) -> str:
        """The error row's text: the limit, the size, and each way to raise it."""
        return over_limit(f"{self.size:,} {self.what}", self.limit, self.setting, self.size)


@dataclass(frozen=True)
class WorkLimits:
    """The per-response limits of a run; 0 (or None) lifts a limit."""

    max_response_chars: int | None = None
    max_claims: int | None = None
    #: The claims' units times the source's (``claim_units``, ``source_units``): what the keyless judges spend,
    #: comparing each claim with the source (the guard sets it; ``measure`` leaves it off).
    max_work_units: int | None = None

    @classmethod
    def defaults(cls) -> WorkLimits:
        """The limits ``measure`` applies unless told otherwise."""
        return cls(MAX_RESPONSE_CHARS, MAX_CLAIMS)

    def response_hit(self, response: str) -> LimitHit | None:
        """The limit ``response`` is over, or None when it is within ``max_response_chars``."""
        size = len(response)
        if not self.max_response_chars or size <= self.max_response_chars:
            return None
        return LimitHit("characters in the response", size, self.max_response_chars, "max_response_chars")

    def claims_hit(self, n_claims: int) -> LimitHit | None:
        """The limit a response of ``n_claims`` claims is over, or None when it is within ``max_claims``."""
        if not self.max_claims or n_claims <= self.max_claims:
            return None
        return LimitHit("claims extracted from the response", n_claims, self.max_claims, "max_claims")

    def work_hit(
        self, units: int, sample: Sample, *, of: str = "the claims", source: int | None = None
    ) -> LimitHit | None:
        """The limit that claims of ``units`` (``claim_units``; before the extraction ``of="the response"``:
        ``response_units``) checked against ``sample``'s source are over, or None when within ``max_work_units``.
        ``source``: the source's ``source_units`` when the caller has them."""
        if not self.max_work_units:
            return None
        source = source_units(sample) if source is None else source
        if units * source <= self.max_work_units:
            return None
        what = f"work units ({units:,} of {of} x {source:,} of the source)"
        return LimitHit(what, units * source, self.max_work_units, "max_work_units")

    def response_error(self, response: str) -> str | None:
        """Why ``response`` is not judged, or None when it is within ``max_response_chars``."""
        hit = self.response_hit(response)
        return hit.message if hit is not None else None


def over_limit(what: str, limit: int, setting: str, size: int) -> str:
    """The error row of a response over a limit: the limit, the size, and each way to raise it."""
    flag = "--" + setting.replace("_", "-")
    return (
        f"{OVER_LIMIT}{what}, over the limit of {limit:,} ({setting}). Raise it to measure it: {flag} {size} "
        f"(command line), {setting}={size} (Python, hallumeasure.toml); 0: no limit"
    )


#: Where a sentence ends for the units below: a run of ``.``, ``!`` or ``?`` (or a full-width end) before
#: whitespace or the end, or a line break.
_SENTENCE_END_RE = re.compile(r"[.!?]+(?=\s|$)|[。！？]+|\n")
_WORD_RE = re.compile(r"[^\W_]+")
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
#: What a claim costs besides its words (its own pass over the source), in words.
CLAIM_UNITS = 8


def _units(text: str) -> int:
    """One unit per word of ``text`` (split at whitespace), and one per pair of numbers within one of its
    sentences (a number may be the sum, difference or ratio of any two numbers of the other side's sentence,
    so 300 numbers in one sentence cost 44,850 units). A few regular-expression passes, no sentence splitter:
    cheap enough for every request before any work is queued (a few ms for 100,000 characters)."""
    words = len(text.split())
    numbers = [m.start() for m in _NUMBER_RE.finditer(text)]
    if len(numbers) < 2:
        return words
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(text)]
    per_sentence = Counter(bisect.bisect_right(ends, at) for at in numbers)
    return words + sum(n * (n - 1) // 2 for n in per_sentence.values())


def claim_units(claims: Sequence[str]) -> int:
    """What ``claims`` cost the keyless judges for each unit of source: their words and pairs of numbers, and
    ``CLAIM_UNITS`` each."""
    return sum(_units(claim) + CLAIM_UNITS for claim in claims)


def response_units(response: str) -> int:
    """``claim_units`` of a response before its claims are extracted: its sentences stand for its claims."""
    sentences = sum(1 for piece in _SENTENCE_END_RE.split(response) if _WORD_RE.search(piece))
    return _units(response) + CLAIM_UNITS * sentences


def source_units(sample: Sample) -> int:
    """What ``sample``'s source costs the keyless judges for each unit of claim: its words, and the pairs of
    numbers within each of its sentences.

    The time of a check follows claim units x source units (measured on the offline judge: 0.1 to 0.5 us a
    unit on a busy 2-core machine), where claims x sentences missed long claims and sentences dense in
    numbers (one claim of 500 numbers took 2 s of CPU against a source of 120 words)."""
    return sum(_units(text) for text in (sample.context, *(p.text for p in sample.passages)))
