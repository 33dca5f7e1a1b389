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

from dataclasses import dataclass

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
