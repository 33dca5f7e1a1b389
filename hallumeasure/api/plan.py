"""``plan``: how many shared samples an audit needs, from Python (what ``hallumeasure plan`` prints)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hallumeasure.report.audit_settings import PlanSettings
from hallumeasure.report.plan import plan_audit
from hallumeasure.stats.power import SamplePlan

if TYPE_CHECKING:
    from hallumeasure.api.run import Run
    from hallumeasure.core.types import Sample


def plan(
    baseline: Run | str | Path | None = None,
    current: Run | str | Path | None = None,
    *,
    samples: str | Path | Sequence[Sample] | None = None,
    settings: PlanSettings | None = None,
    **fields: Any,
) -> SamplePlan:
    """The shared samples an audit needs to flag a rise, to pass an unchanged model, and what measuring them costs.

    ``baseline`` and ``current`` are runs (``Run`` or their directories); without them give
    ``baseline_rate``. The settings are a ``PlanSettings`` or its fields as keywords
    (``plan("runs/base", rise=0.05)``, ``plan(baseline_rate=0.1, rise=0.05)``). The numbers are
    those of ``hallumeasure plan`` with the same inputs.
    """
    if settings is not None and fields:
        raise TypeError("give either settings= or its fields as keywords, not both")
    chosen = settings if settings is not None else PlanSettings(**fields)
    return plan_audit(chosen, baseline=_path_of(baseline), current=_path_of(current), samples=samples)


def _path_of(run: Run | str | Path | None) -> Path | None:
    if run is None:
        return None
    return Path(run) if isinstance(run, str | Path) else Path(run.path)
