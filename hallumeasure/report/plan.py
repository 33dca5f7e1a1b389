"""Planning an audit: from a measured run (or a baseline rate) and ``PlanSettings`` to a ``SamplePlan`` with its cost.

The arithmetic is ``hallumeasure.stats.power``'s; this module decides where its inputs come from,
as ``hallumeasure plan`` and ``hallumeasure.plan`` both use it:

* the per-sample differences the rate gate is simulated on (``hallumeasure.stats.rate_power``):
  the paired differences of two runs over the same samples (pairing included), else pairs of one
  run's values (independent, or the same sample's value with chance ``correlation``), else the
  yes/no outcomes of two shares with mean ``baseline_rate`` (the largest spread a rate can have);
  the current values are moved to each planned true rise;
* the samples to price: ``samples`` when given, else the baseline run's;
* the judge, extractor and mode to price: the settings', else the baseline run's, else the
  keyless ``offline`` judge in ``cot-one`` mode.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hallumeasure.core.errors import ConfigError, RunStoreError
from hallumeasure.core.types import Sample
from hallumeasure.report.audit_judge import PUBLISHED, judge_error_for
from hallumeasure.report.audit_settings import PlanSettings
from hallumeasure.report.runs import pair_up, response_units
from hallumeasure.runs.run import Run
from hallumeasure.stats.judge_error import JudgeError
from hallumeasure.stats.power import (
    PlanCost,
    SamplePlan,
    difference_sd,
    discordant_shares,
    plan_samples,
    sd_from_rates,
)
from hallumeasure.stats.rate_power import Differences

if TYPE_CHECKING:
    import pandas as pd

    from hallumeasure.runs.datasets import LabelledSample

#: A run to plan from: its directory, or a run already loaded for reporting.
RunSource = str | Path | Run

#: The per-response column each metric is planned on.
METRIC_COLUMNS: dict[str, str] = {"unsupported_rate": "rate", "hallucinated_share": "hallucinated"}


def _loaded(run: RunSource) -> Run:
    loaded = Run.of(run)
    if loaded.unfinished:
        raise RunStoreError(f"{_label(run)} is an unfinished run: finish it (measure with resume) before planning")
    return loaded


def _label(run: RunSource) -> str:
    """How messages name a run: the path as given, or a loaded run's name."""
    return run.name if isinstance(run, Run) else str(run)


def _samples_of(run: Run) -> list[Sample]:
    return [
        Sample(
            id=str(r["sample_id"]),
            context=r["context"],
            response=r["response"],
            question=r["question"] if isinstance(r["question"], str) else None,
        )
        for r in run.responses.to_dict(orient="records")
    ]


def _values(units: pd.DataFrame, column: str) -> np.ndarray:
    return np.asarray(units[column].to_numpy(dtype=float), dtype=float)


#: Most values of one run paired with each other when the current run is assumed (their square is simulated on).
_MOST_VALUES = 300


def _moved(values: np.ndarray, shift: float) -> np.ndarray:
    """``values`` in [0, 1] with their mean moved by ``shift``, each towards 1 (or 0) in proportion to its room."""
    mean = float(values.mean())
    if shift > 0 and mean < 1.0:
        return np.clip(values + shift * (1.0 - values) / (1.0 - mean), 0.0, 1.0)
    if shift < 0 and mean > 0.0:
        return np.clip(values + shift * values / mean, 0.0, 1.0)
    return values


def _paired_differences(base: np.ndarray, cur: np.ndarray) -> Callable[[float], Differences]:
    """Differences of the observed pairs with the current values moved to a true rise r."""
    keep = np.isfinite(base) & np.isfinite(cur)
    x, y = base[keep], cur[keep]
    return lambda r: Differences.observed(_moved(y, r - float(y.mean() - x.mean())) - x)


def _one_run_differences(values: np.ndarray, rho: float) -> Callable[[float], Differences]:
    """Differences of two draws of one run's values: the same sample's with chance |rho| (the opposite
    end of the sorted values when rho < 0), else an independent one; the second draw moved to r."""
    v = np.sort(values[np.isfinite(values)])
    if v.size > _MOST_VALUES:
        v = v[np.linspace(0, v.size - 1, _MOST_VALUES).round().astype(int)]  # evenly spaced quantiles
    if v.size == 0:
        v = np.zeros(1)
    share = abs(rho)
    paired_with = v if rho >= 0 else v[::-1]

    def at(r: float) -> Differences:
        y = _moved(v, r)
        independent = (y[None, :] - v[:, None]).ravel()
        same = _moved(paired_with, r) - v
        k = v.size
        probs = np.concatenate([np.full(k * k, (1.0 - share) / (k * k)), np.full(k, share / k)])
        return Differences(np.concatenate([independent, same]), probs)

    return at


def plan_audit(
    settings: PlanSettings,
    *,
    baseline: RunSource | None = None,
    current: RunSource | None = None,
    samples: str | Path | Sequence[Sample] | None = None,
) -> SamplePlan:
    """The shared samples an audit needs for each outcome, the chance to pass at the margin, and the cost.

    ``baseline`` (a measured run) gives the spread, and its samples price the plan; ``current`` (a
    second run over the same samples) gives the spread of the paired differences; without runs,
    ``settings.baseline_rate`` gives the largest spread. ``samples`` (an input file or samples)
    price the plan instead of the baseline's. Raises ``ConfigError`` when neither a baseline run
    nor a baseline rate is given, or ``current`` comes without ``baseline``.
    """
    if baseline is None and settings.baseline_rate is None:
        raise ConfigError("give a baseline run (its measured spread) or a baseline rate (the worst-case spread)")
    if current is not None and baseline is None:
        raise ConfigError("a current run needs a baseline run: the spread comes from the pairs of the two runs")
    column = METRIC_COLUMNS[settings.metric]
    correlation = settings.correlation
    priced: list[Sample] = []
    manifest = None
    if baseline is not None:
        base_run = _loaded(baseline)
        cur_run, cur_label = (_loaded(current), _label(current)) if current is not None else (None, "")
        manifest = base_run.manifest
        units = response_units(base_run)
        values = _values(units, column)
        rate = float(np.nanmean(values)) if np.isfinite(values).any() else 0.0
        if cur_run is not None:
            pa, pb, _ = pair_up(units, response_units(cur_run))
            sd, rho, n_pairs = difference_sd(_values(pa, column), _values(pb, column))
            if sd is None:
                raise ConfigError(
                    f"{_label(baseline)} and {cur_label} share fewer than 2 rated samples; "
                    "plan from the baseline alone or from a baseline rate"
                )
            correlation = rho if correlation is None else correlation
            differences = _paired_differences(_values(pa, column), _values(pb, column))
            source = f"paired differences of {base_run.name} and {cur_run.name} ({n_pairs} shared samples)"
        else:
            rho = 0.0 if correlation is None else correlation
            spread = float(np.nanstd(values, ddof=1)) if np.isfinite(values).sum() > 1 else 0.0
            sd = spread * float(np.sqrt(max(2 * (1 - rho), 0.0)))
            correlation = rho
            differences = _one_run_differences(values, rho)
            source = (
                f"spread of {base_run.name} ({int(np.isfinite(values).sum())} samples), the same spread "
                f"assumed for the current run, correlation {rho:g}"
            )
        priced = _samples_of(base_run)
    else:
        assert settings.baseline_rate is not None  # refused above when both are missing
        rate = float(settings.baseline_rate)
        correlation = 0.0 if correlation is None else correlation
        sd = sd_from_rates(rate, settings.rise, correlation)
        rho_rate = correlation
        differences = lambda r: Differences.discordant(*discordant_shares(rate, min(1.0, rate + r), rho_rate))  # noqa: E731
        source = f"baseline rate {rate:g}, largest spread of a share with that mean, correlation {correlation:g}"
    if isinstance(samples, str | Path):
        from hallumeasure.runs.inputs import load_samples

        priced = load_samples(samples).samples
    elif samples is not None:
        priced = list(samples)
    planner = functools.partial(
        plan_samples,
        metric=settings.metric,
        baseline_rate=round(rate, 6),
        sd=sd,
        source=source,
        power=settings.power,
        correlation=None if correlation is None else round(correlation, 6),
        differences=differences,
    )
    result = planner(rise=settings.rise, margin=settings.margin, alpha=settings.alpha)
    judge = settings.priced_stages(manifest)[0]
    if settings.judge_sensitivity is not None or settings.judge_specificity is not None:
        error = judge_error_for(
            judge,
            settings.metric,
            sensitivity=settings.judge_sensitivity,
            specificity=settings.judge_specificity,
            calibration=None,
            alpha=settings.alpha / 4,
        )
        result = _with_judge_error(result, settings, error, planner)
    elif judge in PUBLISHED:
        low, high, where = PUBLISHED[judge]
        result = result.model_copy(
            update={
                "notes": [
                    *result.notes,
                    f"these counts are for an error-free judge; the audit allows for the {judge} judge's error "
                    f"(J {low:g}-{high:g}, {where}): give --judge-sensitivity and --judge-specificity to plan "
                    "with it",
                ]
            }
        )
    wanted = result.largest_count
    if priced and wanted:
        judge, extractor, mode = settings.priced_stages(manifest)
        cost = plan_cost(priced, wanted, judge=judge, extractor=extractor, mode=mode.value)
        result = result.model_copy(update={"cost": cost})
    return result


def _with_judge_error(
    plan: SamplePlan, settings: PlanSettings, error: JudgeError, planner: Callable[..., SamplePlan]
) -> SamplePlan:
    """The plan by the audit's rule for a judge with ``error``: the same counts on the judge's labels.

    A true rise R reaches the labels as J R; a regression needs the labels above the margin times the
    judge's largest J, a pass their upper bound at alpha / 2 at or below the margin times its smallest J.
    The error-free counts stay beside them, so the note says what the judge's error costs.
    """
    if error.error_free:
        return plan.model_copy(update={"judge_error": error})
    margin, rise = settings.margin, settings.rise
    flag = planner(
        rise=error.youden_low * rise, margin=error.youden_high * margin, alpha=settings.alpha, only="regression"
    )
    to_flag = flag.samples_to_flag if error.youden_low * rise > error.youden_high * margin else None
    to_pass, chance_pass = None, None
    if error.youden_low > 0 and margin > 0:
        passing = planner(rise=0.0, margin=error.youden_low * margin, alpha=settings.alpha / 2, only="pass")
        to_pass, chance_pass = passing.samples_to_pass, passing.chance_to_pass

    def count(n: int | None) -> str:
        return "out of reach" if n is None else f"{n:,}"

    note = (
        f"the judge's error ({error.detail}; J {error.youden_low:.3f}-{error.youden_high:.3f}) costs samples: to flag "
        f"a rise of {rise:g}, {count(to_flag)} instead of {count(plan.samples_to_flag)} for an error-free judge; to "
        f"pass when unchanged, {count(to_pass)} instead of {count(plan.samples_to_pass)} (or responses that do not "
        "change: 0 changed of about 3 / margin pairs pass whatever the judge)"
    )
    return plan.model_copy(
        update={
            "judge_error": error,
            "samples_to_flag": to_flag,
            "chance_to_flag": flag.chance_to_flag if to_flag is not None else None,
            "samples_to_pass": to_pass,
            "chance_to_pass": chance_pass,
            "samples_to_flag_error_free": plan.samples_to_flag,
            "samples_to_pass_error_free": plan.samples_to_pass,
            "samples_to_pass_at_rise": None,
            "pass_chance_at_rise": None,
            "notes": [*plan.notes, note],
        }
    )


def plan_cost(samples: Sequence[Sample | LabelledSample], n: int, *, judge: str, extractor: str, mode: str) -> PlanCost:
    """Price ``n`` samples like ``samples`` (scaled from the dry-run estimate of ``samples``)."""
    from hallumeasure.models.pricing import PRICES_AS_OF, price_for
    from hallumeasure.pipeline.estimate import estimate_cost, estimate_run
    from hallumeasure.registry import PartKind, is_keyless

    est = estimate_run(samples, mode)
    scale = n / max(est.n_samples, 1)
    dollars = None
    if is_keyless(judge) and is_keyless(extractor, PartKind.EXTRACTOR):
        dollars = 0.0
    else:
        price = price_for(judge)
        if price is not None:
            dollars = round(estimate_cost(est, price) * scale, 2)
    return PlanCost(
        judge=judge,
        extractor=extractor,
        mode=str(mode),
        samples=n,
        calls=round(est.calls * scale),
        input_tokens=round(est.input_tokens * scale),
        output_tokens=round(est.output_tokens * scale),
        dollars=dollars,
        prices_as_of=PRICES_AS_OF,
        assumptions=[f"samples as long as the {est.n_samples} priced ones", *est.assumptions],
    )
