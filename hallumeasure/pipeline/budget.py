"""A run's budget (``max_cost``): the responses it picks before the run starts, and what it says if it stops one.

Before the run, every response's cost is estimated as ``measure --dry-run`` estimates it (``estimate.py``, at
the list prices of the extractor and of each judge and repeat; a response over a work limit costs nothing),
and the responses are taken in the order of a hash of their id, lowest first, while their estimates fit
the budget (``core.sampling.budget_cut``). What is picked is every response whose hash falls below a
threshold, recorded in the manifest: a larger budget keeps every response a smaller one kept, and another run
given the threshold as its ``sample_rate`` measures the same responses. With ``sample_rate`` too, the smaller
pick wins.

While the run goes, ``models.budget.Budget`` stops it before what its requests cost passes the budget;
``BudgetStoppedError`` then says what was spent, what is left and how to finish.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from pydantic import BaseModel, Field

from hallumeasure.core.errors import RunStoppedError
from hallumeasure.core.sampling import budget_cut, in_sample
from hallumeasure.core.types import Mode, Sample
from hallumeasure.models.budget import Budget, known_price
from hallumeasure.models.pricing import Price
from hallumeasure.pipeline.estimate import sample_costs
from hallumeasure.pipeline.limits import WorkLimits
from hallumeasure.registry import PartKind, is_keyless, model_spec
from hallumeasure.sources.rag import SourceOptions, capped_for_estimate


class BudgetRecord(BaseModel):
    """What a run's manifest records of its budget (``settings["budget"]``), in dollars at list prices."""

    max_cost: float
    threshold: float = Field(
        description="responses whose id hashes below it were picked (core.sampling.hash_share): give it to "
        "another run as its sample_rate to measure the same responses"
    )
    picked: int
    left_out: int = Field(description="responses the budget (or sample_rate) left out")
    estimated_cost: float = Field(description="the estimate of what the picked responses cost")
    left_out_estimated_cost: float = Field(description="the estimate of what the responses left out would cost")
    spent: float = Field(0.0, description="what the run's requests cost, priced from their usage, every attempt")
    #: Every stage is keyless: nothing is paid, and the budget changes nothing.
    keyless: bool = False


@dataclass(frozen=True)
class StagePrices:
    """The list prices a run's requests are billed at: the extractor's (None: keyless) and one per judge call
    of a claim (each judge of a panel, once per repeat; empty: keyless judges)."""

    extractor: Price | None
    judges: tuple[Price, ...]

    @property
    def keyless(self) -> bool:
        return self.extractor is None and not self.judges


def stage_prices(
    extractor: str, judges: Sequence[str], *, repeats: int = 1, first_pass: str | None = None
) -> StagePrices:
    """The prices of the stages named by these specs; a ``ConfigError`` for a model whose price is unknown."""
    paid_extractor = None
    if not is_keyless(extractor, PartKind.EXTRACTOR):
        paid_extractor = known_price(model_spec(extractor, PartKind.EXTRACTOR) or extractor)
    paid = [known_price(model_spec(j) or j) for j in judges if not is_keyless(j)] * repeats
    if first_pass is not None and not is_keyless(first_pass):
        paid.append(known_price(model_spec(first_pass) or first_pass))
    return StagePrices(paid_extractor, tuple(paid))


@dataclass(frozen=True)
class RunBudget:
    """A run's budget: its dollars, the prices its picks are estimated at, and the cap its models share."""

    max_cost: float
    prices: StagePrices
    cap: Budget


def _own_id(sample: Sample) -> str:
    return sample.id


def pick_within(
    samples: Sequence[Sample],
    max_cost: float,
    prices: StagePrices,
    *,
    mode: Mode,
    judge: str,
    sources: SourceOptions,
    limits: WorkLimits,
    rate: float | None = None,
    key: Callable[[Sample], str] = _own_id,
) -> tuple[list[Sample], BudgetRecord]:
    """The samples that ``max_cost`` picks (of those ``rate`` picks), and the record of the pick. Samples are
    picked by the hash of ``key`` (their id; ``monitor`` keeps a response and its rewrite together), and
    ``picked`` and ``left_out`` count keys."""
    rated = [s for s in samples if in_sample(key(s), rate)]
    keys = len({key(s) for s in samples})
    if prices.keyless:
        picked_keys = len({key(s) for s in rated})
        record = BudgetRecord(
            max_cost=max_cost,
            threshold=1.0 if rate is None else rate,
            picked=picked_keys,
            left_out=keys - picked_keys,
            estimated_cost=0.0,
            left_out_estimated_cost=0.0,
            keyless=True,
        )
        return rated, record
    judged = [s for s in rated if limits.response_error(s.response) is None]  # the rest cost nothing
    costs = sample_costs(
        capped_for_estimate(judged, judge, sources), mode, extractor=prices.extractor, judges=prices.judges
    )
    cut = budget_cut(((key(s), c) for s, c in zip(judged, costs, strict=True)), Decimal(str(max_cost)))
    threshold = min(cut.threshold, 1.0 if rate is None else rate)
    picked = [s for s in rated if in_sample(key(s), threshold)]
    picked_keys = len({key(s) for s in picked})
    record = BudgetRecord(
        max_cost=max_cost,
        threshold=threshold,
        picked=picked_keys,
        left_out=keys - picked_keys,
        estimated_cost=float(cut.estimated),
        left_out_estimated_cost=float(cut.left_out_estimated),
    )
    return picked, record


def describe_pick(record: BudgetRecord, total: int) -> str:
    """One line on what a budget picked, for the command line."""
    if record.keyless:
        return (
            f"--max-cost ${record.max_cost:,.2f} changes nothing here: the stages call no provider, so every "
            "response costs 0"
        )
    return (
        f"--max-cost ${record.max_cost:,.2f} picks {record.picked:,} of {total:,} responses (estimated "
        f"${record.estimated_cost:,.2f}; hash threshold {record.threshold!r}, a --sample-rate that picks the "
        "same ones in another run)"
    )


#: How to go on after a stop (``{enough}``: a budget that likely finishes the run).
RESUME = "Resume with a larger --max-cost (about {enough}); the responses stay those picked at the start"


class BudgetStoppedError(RunStoppedError):
    """A run stopped by its budget: what was spent, what is left, and how to finish it."""

    def __init__(self, record: BudgetRecord, *, stored: int, n_samples: int, again: str = RESUME) -> None:
        self.record, self.stored, self.n_samples = record, stored, n_samples
        left = n_samples - stored
        share = left / record.picked if record.picked else 0.0
        #: The estimate of what the responses left to measure cost, and a budget that would likely finish them.
        self.more = record.estimated_cost * share
        self.enough = record.spent + self.more
        super().__init__(
            f"stopped before passing --max-cost ${record.max_cost:,.2f}: ${record.spent:,.4f} spent; {stored:,} of "
            f"{n_samples:,} responses stored, {left:,} left (about ${self.more:,.2f} more by the estimate). The "
            "answers paid for are kept in the request cache. "
            + (
                again
                or "Resume with a larger --max-cost (about {enough}); the responses stay those picked at the start"
            ).format(enough=f"${self.enough:,.2f}")
        )
