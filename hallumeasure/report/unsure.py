"""What the claims a keyless judge could not tell (``confident=False``) leave open in a group of responses.

Each response stores two extremes of its unsupported rate: every unsure claim counted supported
(``unsupported_rate_low``) and every unsure claim counted unsupported (``unsupported_rate_high``).
The group's mean rate gets the same two bounds, each with its interval, and one interval *covering*
both: from the lower limit of the low bound's interval to the upper limit of the high bound's. The
best-guess rate keeps its own interval (:func:`hallumeasure.stats.groups.group_stats`); the covering
interval is shown beside it, labelled, never in its place (:mod:`hallumeasure.report.rates`). All
intervals are percentile bootstraps over responses with one seed, so the same resamples of responses
make every interval. Within one resample the mean of the low rates is at most the mean of the
best-guess rates, which is at most the mean of the high rates; the covering interval is also
stretched to hold the best guess's own interval, for the rare response whose only claims are unsure
and guessed unevaluatable (rated in the bounds, unrated in the best guess).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from hallumeasure.report.runs import NO_MODEL
from hallumeasure.stats.bootstrap import mean_draws, percentile_interval
from hallumeasure.stats.estimate import Estimate
from hallumeasure.stats.groups import Resampling
from hallumeasure.stats.resampling import CONFIDENCE, RESAMPLES, SEED


class UnsureStats(BaseModel):
    """A group's decided share and the bounds of its mean unsupported rate."""

    name: str
    n_claims: int
    n_unsure_claims: int
    #: Responses whose hallucinated flag no unsure claim can change, among those with a flag.
    decided_share: Estimate
    #: The mean rate with every unsure claim counted supported, with its own interval.
    rate_low: Estimate
    #: The mean rate with every unsure claim counted unsupported, with its own interval.
    rate_high: Estimate
    #: The interval covering both bounds' intervals (and the best guess's): what the unsure claims leave open.
    covering: tuple[float | None, float | None]


def _floats(frame: pd.DataFrame, column: str) -> np.ndarray:
    """A numeric column as floats, NaN where missing (all NaN when the frame has no such column)."""
    if column not in frame:
        return np.full(len(frame), np.nan)
    return np.asarray(pd.to_numeric(frame[column], errors="coerce"), dtype=float)


def _bound(frame: pd.DataFrame, column: str) -> np.ndarray:
    """One of the rate bounds; a response without a stored bound has its rate as both."""
    values, rate = _floats(frame, column), _floats(frame, "unsupported_rate")
    return np.where(np.isfinite(values), values, rate)


def unsure_stats(
    responses: pd.DataFrame,
    name: str,
    n_claims: int,
    n_unsure_claims: int,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> UnsureStats:
    """The decided share and rate bounds of ``responses`` (rows of a run's ``responses`` frame, one group).

    Responses that failed or have no evaluated claim are kept as rows (the bootstrap draws over
    all of them, as the group's other statistics do) and left out of each mean.
    """
    flagged = responses["hallucinated"].notna().to_numpy()
    decided = responses["decided"].astype("boolean").fillna(True).to_numpy(dtype=float)
    columns = [
        _floats(responses, "unsupported_rate"),
        _bound(responses, "unsupported_rate_low"),
        _bound(responses, "unsupported_rate_high"),
        np.where(flagged, decided, np.nan),
    ]
    # one draw of rows for the four means, so that each resample keeps low <= best guess <= high
    draws = mean_draws(np.column_stack(columns), resamples, np.random.default_rng(seed))
    rate, low, high, decided_share = (
        Estimate.of(
            float(x[np.isfinite(x)].mean()) if np.isfinite(x).any() else None,
            *percentile_interval(draws[:, i], confidence),
        )
        for i, x in enumerate(columns)
    )
    ends = [x for x in (low.low, rate.low) if x is not None], [x for x in (high.high, rate.high) if x is not None]
    covering = Estimate.of(None, min(ends[0]) if ends[0] else None, max(ends[1]) if ends[1] else None)
    return UnsureStats(
        name=name,
        n_claims=n_claims,
        n_unsure_claims=n_unsure_claims,
        decided_share=decided_share,
        rate_low=low,
        rate_high=high,
        covering=(covering.low, covering.high),
    )


def _unsure_mask(claims: pd.DataFrame) -> pd.Series:
    if "confident" not in claims:
        return pd.Series(False, index=claims.index)
    return claims["confident"].astype("boolean").fillna(True).eq(False)


def group_unsure_stats(
    responses: pd.DataFrame,
    claims: pd.DataFrame,
    name: str,
    model: str | None = None,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> UnsureStats | None:
    """``UnsureStats`` of one model's responses (``model``; None: the whole run), or None when none is unsure.

    The rows are taken in the run's order, so the bootstrap resamples them exactly as
    :func:`hallumeasure.stats.groups.group_stats` resamples the same group.
    """
    if model is not None:
        responses = responses[responses["model"].fillna(NO_MODEL).astype(str) == model]
        if "model" in claims.columns:
            claims = claims[claims["model"].fillna(NO_MODEL).astype(str) == model]
    if "confident" not in claims.columns and "n_unsure_claims" in responses.columns:
        # a run read as columns (``Run.load_columns``): its claims are counted per response, not listed
        n_claims, n_unsure = int(responses["n_claims"].fillna(0).sum()), int(responses["n_unsure_claims"].sum())
    else:
        n_claims, n_unsure = len(claims), int(_unsure_mask(claims).sum())
    if not n_unsure:
        return None
    return unsure_stats(responses, name, n_claims, n_unsure, resamples=resamples, seed=seed, confidence=confidence)


def run_unsure_stats(
    responses: pd.DataFrame,
    claims: pd.DataFrame,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> list[UnsureStats]:
    """One ``UnsureStats`` for the whole run ("(all)") and one per model; empty when no claim is unsure.

    ``responses`` and ``claims`` are the frames of :func:`hallumeasure.runs.store.load_run`.
    """
    unsure = _unsure_mask(claims)
    if not unsure.any():
        return []
    models = responses["model"].fillna(NO_MODEL).astype(str)
    claim_models = claims["model"].fillna(NO_MODEL).astype(str)
    groups = [("(all)", pd.Series(True, index=responses.index), pd.Series(True, index=claims.index))]
    groups += [(m, models == m, claim_models == m) for m in dict.fromkeys(models)]
    options: Resampling = {"resamples": resamples, "seed": seed, "confidence": confidence}
    return [
        unsure_stats(responses[rows], name, int(mine.sum()), int((unsure & mine).sum()), **options)
        for name, rows, mine in groups
    ]
