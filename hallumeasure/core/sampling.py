"""Deterministic sampling by id: a response is in a sample when a hash of its id falls below the rate.

The same ids are picked on every run, by every judge and on every machine (no random state, no order), so two
runs sampled at one rate hold the same responses and an audit between them stays paired; a higher rate keeps
every id a lower one kept.

A budget picks the same way (``budget_cut``): the responses in the order of their hash, lowest first, as long
as their estimated costs add up to no more than the budget. What it picks is every response below a threshold,
as a rate picks, so a larger budget keeps every response a smaller one kept, and a run given that threshold as
its rate picks the same responses whatever its judge costs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from itertools import groupby

#: The hash's range: the first 8 bytes of SHA-256, as an unsigned integer.
_RANGE = 2**64


def hash_share(sample_id: str) -> float:
    """Where ``sample_id`` falls in [0, 1): the first 8 bytes of its UTF-8 SHA-256 over 2^64."""
    digest = hashlib.sha256(sample_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / _RANGE


def in_sample(sample_id: str, rate: float | None) -> bool:
    """Whether the response with ``sample_id`` is measured at ``rate`` (None or 1: every response)."""
    return rate is None or rate >= 1 or hash_share(sample_id) < rate


@dataclass(frozen=True)
class BudgetCut:
    """What a budget picks: every id whose ``hash_share`` is below ``threshold`` (1.0: every id)."""

    threshold: float
    picked: int
    #: The estimated cost of what is picked, and of what is left out.
    estimated: Decimal
    left_out_estimated: Decimal


def budget_cut(costs: Iterable[tuple[str, Decimal]], budget: Decimal) -> BudgetCut:
    """The threshold a ``budget`` reaches when ``(id, estimated cost)`` pairs are taken in hash order, lowest first.

    Ids that share a hash (the same id twice) are taken together or not at all, so the threshold picks exactly
    the ``picked`` ones counted here.
    """
    ordered = sorted(((hash_share(sample_id), cost) for sample_id, cost in costs), key=lambda pair: pair[0])
    spent, picked, threshold = Decimal(0), 0, 1.0
    groups = [(share, [cost for _, cost in group]) for share, group in groupby(ordered, key=lambda pair: pair[0])]
    for share, group_costs in groups:
        if spent + sum(group_costs, Decimal(0)) > budget:
            threshold = share
            break
        spent += sum(group_costs, Decimal(0))
        picked += len(group_costs)
    total = sum((cost for _, cost in ordered), Decimal(0))
    return BudgetCut(threshold=threshold, picked=picked, estimated=spent, left_out_estimated=total - spent)
