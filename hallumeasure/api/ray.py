"""``measure_on_ray``: ``measure`` on a Ray cluster, for a Ray Dataset, a JSON Lines or Parquet path Ray Data reads,
or a local CSV file.

The run is the one ``measure`` makes of the same rows (``pipeline/ray_engine.py`` says how); this is its Python
face, with ``measure``'s settings and a loaded ``Run`` back. It needs the ``ray`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hallumeasure.api.measure import warn_broken_judge
from hallumeasure.api.run import Run
from hallumeasure.core.types import ResponseResult
from hallumeasure.pipeline.measurement import Measurement
from hallumeasure.pipeline.ray_engine import RayOptions
from hallumeasure.pipeline.ray_engine import measure_on_ray as run_on_ray
from hallumeasure.pipeline.settings import MeasureSettings

if TYPE_CHECKING:
    import ray.data


def measure_on_ray(
    data: ray.data.Dataset | str | Path,
    *,
    out: str | Path,
    judge: str | list[str] | None = None,
    extractor: str | None = None,
    mode: str | None = None,
    columns: Mapping[str, str] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    config: str | Path | None = None,
    progress: Callable[[ResponseResult], None] | None = None,
    settings: MeasureSettings | None = None,
    address: str | None = None,
    workers: int | None = None,
    batch_size: int | None = None,
    out_format: Literal["sqlite", "parquet"] = "sqlite",
    **options: Any,
) -> Run:
    """Measure every row of ``data`` on a Ray cluster into the run directory ``out`` and return the loaded ``Run``.

    ``data`` is a Ray Dataset, a path Ray Data reads (JSON Lines, Parquet; local or ``s3://``) or a local CSV
    file; every row needs an id. The settings are ``measure``'s (``judge``, ``settings``, ``config`` and the keywords of
    ``MeasureSettings``). ``address`` joins a cluster (else ``RAY_ADDRESS``, else one is started here and shut
    down after; a cluster already joined with ``ray.init`` is used as it is); ``workers`` and ``batch_size``
    size the actor pool and its batches, and ``out_format="parquet"`` has the workers write the run as Parquet
    parts (``out`` a folder or an object-storage URI; ``RayOptions``).

    >>> run = measure_on_ray("s3://bucket/answers/", out="runs/nightly", judge="offline")  # doctest: +SKIP
    """
    measurement = Measurement.from_values(
        dict(options, judge=judge, extractor=extractor, mode=mode), config=config, base=settings
    )
    sizing = {"workers": workers} | ({"batch_size": batch_size} if batch_size is not None else {})
    run_on_ray(
        data,
        out,
        measurement,
        options=RayOptions(address=address, out_format=out_format, **sizing),
        columns=dict(columns) if columns else None,
        resume=resume,
        overwrite=overwrite,
        progress=progress,
    )
    run = Run.load(out)
    warn_broken_judge(run)
    return run
