"""Two groups of responses compared: paired on shared samples when there are any, else unpaired."""

from __future__ import annotations

import pandas as pd
from pydantic import BaseModel

from hallumeasure.report.runs import Pairing, pairing
from hallumeasure.stats.groups import (
    SUBTYPES,
    Difference,
    Resampling,
    SubtypeShift,
    paired_difference,
    subtype_shift,
    unpaired_difference,
)
from hallumeasure.stats.resampling import RESAMPLES, SEED

#: Fewest shared samples for a paired analysis; below it the groups are compared as independent.
MIN_PAIRS = 2


class Comparison(BaseModel):
    """``b`` against ``a``: differences are ``b - a``, so a positive difference means ``b`` is worse."""

    a: str
    b: str
    paired: bool
    pairing: str
    n_shared: int
    unsupported_rate: Difference
    hallucinated_share: Difference
    subtypes: SubtypeShift


def compare_groups(
    a: pd.DataFrame,
    b: pd.DataFrame,
    name_a: str,
    name_b: str,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = 0.95,
    paired_up: Pairing | None = None,
) -> Comparison:
    """Compare two response tables (see :func:`hallumeasure.report.runs.response_units`); ``paired_up`` is their
    ``pairing`` when the caller has it already."""
    paired_up = paired_up or pairing(a, b)
    pa, pb, how = paired_up.a, paired_up.b, paired_up.how
    paired = len(pa) >= MIN_PAIRS
    options: Resampling = {"resamples": resamples, "seed": seed, "confidence": confidence}
    if paired:
        ta, tb = pa, pb
        rate = paired_difference(ta["rate"].to_numpy(), tb["rate"].to_numpy(), "mean unsupported rate", **options)
        flag = paired_difference(
            ta["hallucinated"].to_numpy(), tb["hallucinated"].to_numpy(), "hallucinated share", **options
        )
    else:
        ta, tb = a, b
        rate = unpaired_difference(ta["rate"].to_numpy(), tb["rate"].to_numpy(), "mean unsupported rate", **options)
        flag = unpaired_difference(
            ta["hallucinated"].to_numpy(dtype=float),
            tb["hallucinated"].to_numpy(dtype=float),
            "hallucinated share",
            **options,
        )
    columns = [f"subtype_{x}" for x in SUBTYPES]
    shift = subtype_shift(
        ta[columns].to_numpy(),
        tb[columns].to_numpy(),
        ta["n_evaluated"].to_numpy(),
        tb["n_evaluated"].to_numpy(),
        paired=paired,
        resamples=resamples,
        seed=seed,
    )
    return Comparison(
        a=name_a,
        b=name_b,
        paired=paired,
        pairing=how if paired else "independent groups (too few shared samples)",
        n_shared=len(pa),
        unsupported_rate=rate,
        hallucinated_share=flag,
        subtypes=shift,
    )
