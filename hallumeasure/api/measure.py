"""``measure`` and ``ameasure``: a whole input into a stored run, from a script, a notebook or an async app.

How it runs inside an event loop: the measurement itself is async, and ``measure`` drives it with
``pipeline.run.run_sync``. From plain code that is ``asyncio.run``; when the calling thread already runs
a loop (Jupyter, IPython, an async web app), the coroutine runs to completion in a fresh event loop on
one worker thread, and ``measure`` waits for it. The caller's loop is never patched or re-entered
(no nest_asyncio), so nothing leaks to it. ``ameasure`` hands the same blocking call to a worker
thread with ``asyncio.to_thread``, so the caller's loop keeps serving while the run goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hallumeasure.api.run import Run
from hallumeasure.core.config import cache_path
from hallumeasure.core.errors import InputError
from hallumeasure.core.types import ResponseResult, Sample
from hallumeasure.pipeline.measurement import Measurement
from hallumeasure.pipeline.settings import MeasureSettings
from hallumeasure.runs.inputs import API_COLUMN_HINT, LoadedInput, load_samples, records_to_samples

if TYPE_CHECKING:
    import pandas as pd


def measure(
    data: str | Path | pd.DataFrame | Iterable[Mapping[str, Any] | Sample],
    *,
    judge: str | list[str] | None = None,
    extractor: str | None = None,
    mode: str | None = None,
    out: str | Path | None = None,
    columns: Mapping[str, str] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    config: str | Path | None = None,
    progress: Callable[[ResponseResult], None] | None = None,
    settings: MeasureSettings | None = None,
    **options: Any,
) -> Run:
    """Measure every sample of ``data`` into a run directory and return the loaded ``Run``.

    ``data`` is a file path (JSONL, CSV, Parquet), a pandas DataFrame, or a list of dicts (the input
    file's fields: ``context`` or ``contexts``, ``response``, ``question``, ``id``, ``model`` ...) or of
    ``Sample``s. ``columns`` maps those field names to yours (``{"response": "answer"}``).
    ``settings`` is a ``MeasureSettings``, and ``options`` are its fields as keywords (``repeats``,
    ``detector``, ``concurrency``, ``max_context_tokens``, ``no_cache`` ...), validated as the command line
    validates them; ``config`` reads more from a hallumeasure.toml or pyproject.toml first (``settings`` win
    over it, keywords over both). The judge, extractor and mode default to ``offline``, ``offline`` and
    ``cot-one``. The work limits
    ``max_response_chars`` (100,000) and ``max_claims`` (2,000) make an over-long response an error row of
    the run instead of judging it; ``None`` or 0 lifts them.

    With ``out=None`` the run goes to a new directory under the cache folder
    (``$HALLUMEASURE_CACHE_DIR/runs/``); the request cache applies either way, so measuring the same
    data again with an LLM judge pays nothing. A directory that already holds a run needs ``resume``
    (go on where it stopped) or ``overwrite``. Works inside a running event loop (see the module).
    """
    return _measure(
        data,
        dict(options, judge=judge, extractor=extractor, mode=mode),
        out=out,
        columns=columns,
        resume=resume,
        overwrite=overwrite,
        config=config,
        progress=progress,
        base=settings,
    )


async def ameasure(
    data: str | Path | pd.DataFrame | Iterable[Mapping[str, Any] | Sample],
    *,
    judge: str | list[str] | None = None,
    extractor: str | None = None,
    mode: str | None = None,
    out: str | Path | None = None,
    columns: Mapping[str, str] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    config: str | Path | None = None,
    progress: Callable[[ResponseResult], None] | None = None,
    settings: MeasureSettings | None = None,
    **options: Any,
) -> Run:
    """``measure`` for async code: the run goes on in a worker thread while the caller's loop keeps serving."""
    return await asyncio.to_thread(
        _measure,
        data,
        dict(options, judge=judge, extractor=extractor, mode=mode),
        out=out,
        columns=columns,
        resume=resume,
        overwrite=overwrite,
        config=config,
        progress=progress,
        base=settings,
    )


def _measure(
    data: Any,
    values: dict[str, Any],
    *,
    out: str | Path | None,
    columns: Mapping[str, str] | None,
    resume: bool,
    overwrite: bool,
    config: str | Path | None,
    progress: Callable[[ResponseResult], None] | None,
    base: MeasureSettings | None = None,
) -> Run:
    measurement = Measurement.from_values(values, config=config, base=base)
    s = measurement.settings
    loaded = load_input(
        data, columns=columns, model=s.model_name, strict=s.strict_input, delimiter=s.delimiter, fmt=s.input_format
    )
    warn_skipped(loaded)
    run_dir = Path(out) if out is not None else default_run_dir(loaded.sha256)
    measurement.run(loaded, run_dir, resume=resume, overwrite=overwrite, progress=progress)
    run = Run.load(run_dir)
    warn_broken_judge(run)
    return run


class SkippedRowsWarning(UserWarning):
    """Input rows left out of a run (the CLI prints the same rows; ``Run.skipped`` lists them)."""


def warn_skipped(loaded: LoadedInput, *, shown: int = 3) -> None:
    """Warn about the input rows that were skipped, as the CLI prints them: a run never drops rows silently."""
    if not loaded.problems:
        return
    lines = [
        f"row {p.row}{f' (id {p.sample_id})' if p.sample_id else ''}: {p.message}" for p in loaded.problems[:shown]
    ]
    more = f"; and {len(loaded.problems) - shown} more" if len(loaded.problems) > shown else ""
    warnings.warn(
        f"{len(loaded.problems)} input row(s) of {loaded.path} skipped: {'; '.join(lines)}{more} "
        "(run.skipped lists them; strict_input=True makes the first one an error)",
        SkippedRowsWarning,
        stacklevel=4,
    )


class BrokenJudgeWarning(UserWarning):
    """The run's judge failed its sanity checks (``Run.manifest.judge_checks``); the CLI prints the same."""


def warn_broken_judge(run: Run) -> None:
    """Warn about each sanity check the run's judge failed: its numbers are no measurement."""
    checks = (run.manifest.judge_checks if run.manifest else None) or []
    if checks:
        warnings.warn(
            f"the judge of run {run.name} failed {len(checks)} sanity check(s), so its numbers are no measurement: "
            + "; ".join(check.line() for check in checks)
            + " (audit refuses the run unless allow_broken_judge=True)",
            BrokenJudgeWarning,
            stacklevel=4,
        )


def default_run_dir(input_sha256: str) -> Path:
    """A new directory for a run given no ``out``: under the cache folder, named by time and input."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return cache_path().parent / "runs" / f"{stamp}-{input_sha256[:8]}-{secrets.token_hex(3)}"


def load_input(
    data: Any,
    *,
    columns: Mapping[str, str] | None = None,
    model: str | None = None,
    strict: bool = False,
    delimiter: str | None = None,
    fmt: str | None = None,
) -> LoadedInput:
    """Samples from a path, a DataFrame, or a list of dicts or ``Sample``s.

    A DataFrame or a list of dicts is read in memory by ``runs.inputs.records_to_samples``: the same row checks,
    problems and column map as a JSONL file, with rows numbered from 1 and the data named in errors
    (``<DataFrame of 4 rows>``). ``fmt`` names the input format (``otlp``, ``openinference?outputs=all`` ...);
    without it the format is detected: a Phoenix span DataFrame or the DataFrame of ``mlflow.search_traces``
    is read as spans.

    The input hash of such data (what a resume compares) is the SHA-256 of its canonical JSON lines: one
    line per record as ``DataFrame.to_json(orient="records", lines=True, force_ascii=False, date_format="iso")``
    writes them (for a list of dicts ``json.dumps(record, ensure_ascii=False, default=str)``, joined by newlines),
    then one newline. The records are read back from those same lines, so the hash covers exactly the values
    measured. It is the hash of the JSONL file that earlier versions wrote to a temporary folder, so runs
    made then resume now.
    """
    if isinstance(data, (str, Path)):
        return load_samples(
            data,
            columns=columns,
            model=model,
            strict=strict,
            delimiter=delimiter,
            column_hint=API_COLUMN_HINT,
            fmt=fmt,
        )
    if _is_frame(data):
        # Objects a trace DataFrame may hold (MLflow's Trace, timestamps) go in as their text.
        text = data.to_json(orient="records", lines=True, force_ascii=False, date_format="iso", default_handler=str)
        return _from_json_lines(text, f"<DataFrame of {len(data)} rows>", columns, model, strict, fmt)
    if isinstance(data, (Mapping, Sample)):
        raise InputError("measure takes a list of samples; wrap one dict or Sample in a list, or use check()")
    try:
        items = list(data)
    except TypeError:
        raise InputError(
            f"measure cannot read a {type(data).__name__}: give a file path, a DataFrame, or a list of dicts or Samples"
        ) from None
    if not items:
        raise InputError("no samples to measure: the list is empty")
    if all(isinstance(x, Sample) for x in items):
        samples = [x if model is None or x.model else x.model_copy(update={"model": model}) for x in items]
        canonical = "\n".join(x.model_dump_json() for x in samples)
        return LoadedInput(
            samples=samples,
            sha256=hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
            path=f"<list of {len(items)} samples>",
        )
    if all(isinstance(x, Mapping) for x in items):
        text = "\n".join(json.dumps(dict(x), ensure_ascii=False, default=str) for x in items)
        return _from_json_lines(text, f"<list of {len(items)} records>", columns, model, strict, fmt)
    kinds = sorted({type(x).__name__ for x in items})
    raise InputError(f"measure takes a list of dicts or a list of Samples, not a list of {', '.join(kinds)}")


def _is_frame(data: Any) -> bool:
    return type(data).__name__ == "DataFrame" and hasattr(data, "to_json")


def _from_json_lines(
    text: str, name: str, columns: Mapping[str, str] | None, model: str | None, strict: bool, fmt: str | None = None
) -> LoadedInput:
    """Samples from canonical JSON lines (one record each), hashed as ``load_input`` says."""
    # JSON escapes every line break inside a value, so a newline always ends a record.
    records = [json.loads(line) for line in text.split("\n") if line.strip()]
    loaded = records_to_samples(records, name=name, fmt=fmt, columns=columns, model=model, strict=strict)
    loaded.sha256 = hashlib.sha256((text + "\n").encode("utf-8", errors="surrogatepass")).hexdigest()
    return loaded
