"""The Ray engine: one run measured by many Ray workers and stored by one writer, the same run a local one makes.

Ray Data reads the input (JSON Lines as lines, Parquet as tables, CSV through a local run's reader, or a
Dataset the caller built), cuts it into blocks of a batch each and hands them to a pool of actors, all started
before the first batch. Each actor builds the run's stages once (``Measurement.stages``) and measures its
batch with ``measure_samples``, the judging path of a local run. The batches come back to this process in input
order, where one writer stores them in the run store as they arrive, so the driver holds a batch at a time,
not the run. Rows are keyed by sample id, never by Ray's blocks: a retried batch replaces its rows instead of
adding them, and a resume measures the ids not stored yet, whatever the cluster's size now.

``ray`` is an optional extra (``pip install 'hallumeasure[ray]'``); nothing here imports it until a run starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import os
import pickle
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hallumeasure.core.errors import ConfigError, InputError
from hallumeasure.core.sampling import in_sample
from hallumeasure.core.types import ResponseResult, RunManifest, Sample
from hallumeasure.models.factory import ModelFactory
from hallumeasure.models.limits import parse_limit
from hallumeasure.models.model import ProviderUnreachableError
from hallumeasure.pipeline.judge_checks import ContextProbe, probe_claims, probe_context
from hallumeasure.pipeline.measurement import Measurement, Stages
from hallumeasure.pipeline.ray_limits import cluster_limits
from hallumeasure.pipeline.ray_parts import PartsWriter
from hallumeasure.pipeline.ray_rows import WITH_VALUE, RowKind
from hallumeasure.pipeline.run import (
    STORE_ERRORS,
    Progress,
    close_stage_models,
    finish_manifest,
    mark_interrupted,
    measure_samples,
    new_manifest,
    resumed_manifest,
    run_sync,
    store_result,
    stored_ids,
)
from hallumeasure.registry import is_keyless
from hallumeasure.runs.inputs import (
    ColumnMap,
    LoadedInput,
    ProblemKind,
    RowProblem,
    csv_delimiter,
    duplicate_message,
    file_sha256,
    header_check,
    jsonl_record,
    read_rows,
    record_to_sample,
    row_id,
    sample_key,
)
from hallumeasure.runs.store import RunStore

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import ray.data
    from ray.data import DataContext

log = logging.getLogger(__name__)

#: What the extra is called, for the message a user without it gets.
INSTALL_HINT = "pip install 'hallumeasure[ray]'"


class RayOptions(BaseModel):
    """Where and how wide a run on Ray goes."""

    model_config = ConfigDict(frozen=True)

    address: str | None = Field(
        default=None, description="The Ray cluster to join (else RAY_ADDRESS, else a local cluster on this machine)."
    )
    workers: int | None = Field(
        default=None, ge=1, description="Measuring actors (default: the cluster's CPUs less one, at least one)."
    )
    batch_size: int = Field(default=256, ge=1, description="Responses per batch an actor measures at a time.")
    out_format: Literal["sqlite", "parquet"] = Field(
        default="sqlite",
        description="The run's form: one SQLite file written by this process, or Parquet parts written by the "
        "workers (a folder or an object-storage URI; see pipeline/ray_parts.py).",
    )


def require_ray() -> Any:
    """The ``ray`` module, or a ``ConfigError`` that says how to install it."""
    try:
        import ray
        import ray.data  # the data library is what the engine needs; ray alone is not enough
    except ImportError as exc:
        raise ConfigError(f"the Ray engine needs the ray extra ({exc.name} is not installed): {INSTALL_HINT}") from None
    return ray


def pool_size(cluster_cpus: float, workers: int | None) -> tuple[int, float]:
    """How many measuring actors, and the CPUs each asks for, so that one CPU is always left for reading.

    An actor pool that takes every CPU leaves the read step none, and Ray then waits for ever (seen with two
    one-CPU actors on a two-CPU cluster). The actors share what is left after one CPU (half of a one-CPU
    cluster); more actors than that share it in fractions.
    """
    if cluster_cpus <= 0:
        raise ConfigError("the Ray cluster has no CPUs to measure on")
    room = cluster_cpus - 1 if cluster_cpus >= 2 else cluster_cpus / 2
    count = workers or max(1, math.floor(room))
    return count, min(1.0, room / count)


#: Why a row without an id is left out: rows are not numbered across workers, so an id cannot default to one.
NO_ID = "has no id; the Ray engine keys samples by id (rows are not numbered across workers): give every row an id"


class InputForm(StrEnum):
    """How a worker reads the rows of its batch."""

    LINES = "lines"  # JSON Lines: a line per row, parsed as a local run parses it
    TABLE = "table"  # Parquet or a Dataset: a record per row
    CSV = "csv"  # CSV, read in the driver by a local run's reader: each row's record (or why it is unusable) as JSON


def read_input(
    path: str | Path, *, columns: dict[str, str] | None = None, delimiter: str | None = None
) -> tuple[ray.data.Dataset, InputForm]:
    """The Ray Dataset of an input path and how its rows read: JSON Lines as lines (parsed as a local run parses
    them), Parquet (a file or a folder, local or in object storage) as tables, CSV (a local file) as the records
    a local run's reader makes of it."""
    require_ray()
    import ray.data

    name = str(path).rstrip("/")
    if reads_lines(name):
        return ray.data.read_text(name, drop_empty_lines=False), InputForm.LINES
    if name.endswith((".csv", ".tsv")) and "://" not in name:
        # The local run's reader, for the same rows: it reads the file whole, as a local run does (CSV inputs are
        # small; convert a large one to Parquet). Its header is checked here, once, as a local run checks it.
        check = header_check(name, ColumnMap.of(columns))
        rows = read_rows(Path(name), "csv", csv_delimiter(delimiter), on_header=check)
        return ray.data.from_items([{"text": json.dumps(record)} for _, record in rows]), InputForm.CSV
    if name.endswith(".parquet") or (Path(name).is_dir() and not name.startswith(("s3:", "gs:"))):
        return ray.data.read_parquet(name), InputForm.TABLE
    if "://" in name:
        return ray.data.read_parquet(name), InputForm.TABLE
    raise InputError(
        f"{path}: the Ray engine reads JSON Lines (.jsonl), CSV (.csv, .tsv) and Parquet; convert the file, or pass "
        "a Ray Dataset"
    )


def reads_lines(path: str | Path) -> bool:
    """Whether ``path`` is read as JSON Lines (else as CSV or Parquet)."""
    return str(path).endswith((".jsonl", ".json", ".jsonl.gz"))


def _plain(value: Any) -> Any:
    """A value from an Arrow-backed batch as a local run's reader gives it: <NA> as None, numpy scalars as Python
    ones (arrays stay arrays: the readers take Parquet's list columns as arrays already)."""
    import numpy as np
    import pandas as pd

    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class RowReader:
    """A batch's rows as a local run reads them: samples, keyed by (id, model) where ``shared`` ids need it."""

    fields: ColumnMap
    model: str | None
    form: InputForm
    #: Ids that rows of several models share: their samples get the key ``id@model``, as in a local run.
    shared: frozenset[str] = frozenset()

    def records(self, batch: pd.DataFrame) -> Iterator[dict[str, Any] | str | None]:
        """Each row's record, or why it cannot be read (a text), or None for a blank line."""
        if self.form is InputForm.TABLE:
            for record in batch.to_dict(orient="records"):
                yield {str(k): _plain(v) for k, v in record.items()}
            return
        for text in batch["text"]:
            if self.form is InputForm.CSV:
                yield json.loads(text)
                continue
            line = str(text).lstrip("\ufeff")
            yield jsonl_record(line) if line.strip() else None

    def sample(self, record: dict[str, Any] | str) -> Sample | RowProblem:
        """The sample of a record, keyed as a local run keys it, or the problem that keeps it out."""
        if isinstance(record, str):
            return RowProblem(0, None, record, ProblemKind.UNREADABLE)
        sample = record_to_sample(record, self.fields, 0, self.model)
        if isinstance(sample, RowProblem):
            return sample
        if row_id(record, self.fields) is None:
            return RowProblem(0, None, NO_ID, ProblemKind.MISSING_FIELD)
        if sample.id in self.shared:
            return sample.model_copy(update={"id": sample_key(sample.id, sample.model), "input_id": sample.id})
        return sample

    def __call__(self, batch: pd.DataFrame) -> dict[str, np.ndarray]:
        """The (id, model) of every sample of a batch (``shared_ids`` reads them; a model left out as "")."""
        import numpy as np

        samples = [self.sample(record) for record in self.records(batch) if record is not None]
        pairs = [(s.id, s.model or "") for s in samples if isinstance(s, Sample)]
        return {
            "id": np.array([i for i, _ in pairs], dtype=object),
            "model": np.array([m for _, m in pairs], dtype=object),
        }


def shared_ids(pairs: Iterable[tuple[Iterable[str], Iterable[str]]]) -> frozenset[str]:
    """The ids that samples of more than one model share, from batches of (ids, models): what ``key_samples``
    keys as ``id@model`` in a local run. The pairs go through a SQLite file, not this process's memory."""
    with tempfile.TemporaryDirectory() as tmp, contextlib.closing(sqlite3.connect(Path(tmp) / "ids.sqlite")) as db:
        db.execute("CREATE TABLE pairs (id TEXT, model TEXT, PRIMARY KEY (id, model)) WITHOUT ROWID")
        for ids, models in pairs:
            db.executemany("INSERT OR IGNORE INTO pairs VALUES (?, ?)", zip(ids, models, strict=True))
        return frozenset(row[0] for row in db.execute("SELECT id FROM pairs GROUP BY id HAVING count(*) > 1"))


class BatchMeasurer:
    """One measuring actor: the run's stages built once, then batch after batch through ``measure_samples``."""

    def __init__(
        self,
        measurement: Measurement,
        *,
        reader: RowReader,
        stored: frozenset[str] = frozenset(),
        limits_run: str | None = None,
        parts: str | None = None,
    ) -> None:
        self.parts = parts  # the run in Parquet form this worker writes its batches into, if any
        if limits_run is not None:  # --rpm / --tpm: this worker's calls draw on the run's buckets
            from hallumeasure.pipeline.ray_limits import draw_on_cluster_limits

            draw_on_cluster_limits(require_ray(), limits_run)
        self.measurement = measurement
        self.stages = measurement.stages()
        self.reader, self.stored = reader, stored
        self.loop = asyncio.new_event_loop()

    def _row(self, record: dict[str, Any] | str | None) -> tuple[RowKind, Any]:
        if record is None:
            return RowKind.BLANK, None
        sample = self.reader.sample(record)
        if isinstance(sample, RowProblem):
            return RowKind.PROBLEM, sample
        if not in_sample(sample.id, self.measurement.settings.sample_rate):
            return RowKind.SAMPLED_OUT, None
        return (RowKind.STORED if sample.id in self.stored else RowKind.MEASURED), sample

    def __call__(self, batch: pd.DataFrame) -> dict[str, np.ndarray]:
        import numpy as np

        rows = [self._row(record) for record in self.reader.records(batch)]
        todo = [value for kind, value in rows if kind is RowKind.MEASURED]
        m, stages = self.measurement, self.stages
        try:
            results = iter(
                self.loop.run_until_complete(
                    measure_samples(
                        todo,
                        stages.extractor,
                        stages.judge,
                        stages.policy,
                        concurrency=m.settings.concurrency,
                        sources=m.sources,
                        limits=m.limits,
                    )
                )
            )
        except ProviderUnreachableError as exc:  # a value, so that the driver stops the run with the provider's words
            return {
                "kind": np.array([int(RowKind.UNREACHABLE)]),
                "payload": np.array([str(exc).encode()], dtype=object),
            }
        if self.parts is not None:
            from hallumeasure.pipeline.ray_parts import write_reply

            return write_reply(self.parts, rows, results)
        payloads = [pickle.dumps((value, next(results)) if kind is RowKind.MEASURED else value) for kind, value in rows]
        return {"kind": np.array([int(kind) for kind, _ in rows]), "payload": np.array(payloads, dtype=object)}


@dataclass
class _Writer:
    """The one writer: stores each batch as it arrives, numbering rows and positions in input order."""

    store: RunStore
    measurement: Measurement
    progress: Progress | None = None
    row: int = 0
    position: int = 0
    samples: int = 0
    measured: int = 0
    sampled_out: int = 0
    problems: list[RowProblem] = field(default_factory=list)
    digest: Any = field(default_factory=hashlib.sha256)

    def write(self, kinds: np.ndarray, payloads: np.ndarray) -> None:
        rows: list[tuple[int, RowKind, Any]] = []
        for kind, payload in zip(kinds, payloads, strict=True):
            kind = RowKind(int(kind))
            if kind is RowKind.UNREACHABLE:
                raise ProviderUnreachableError(bytes(payload).decode())
            self.row += 1
            self.sampled_out += kind is RowKind.SAMPLED_OUT
            rows.append((self.row, kind, pickle.loads(payload) if kind in WITH_VALUE else None))
        ids = [_sample_of(value).id for _, kind, value in rows if kind in (RowKind.MEASURED, RowKind.STORED)]
        stored = self.store.positions(ids) if ids else {}
        keep: list[Sample] = []
        results: list[tuple[Sample, ResponseResult]] = []
        seen: dict[str, int] = {}
        for number, kind, value in rows:
            if kind is RowKind.PROBLEM:
                self._problem(RowProblem(number, value.sample_id, value.message, value.kind))
                continue
            if kind not in WITH_VALUE:
                continue
            sample = _sample_of(value)
            where = self.position + len(keep)
            if sample.id in seen or stored.get(sample.id, where) != where:
                first_row = seen.get(sample.id) or (self.store.noted_row(sample.id) or (0, None))[0]
                # worded as a local run words it, which finds duplicates before it keys shared ids as id@model
                as_given = sample.model_copy(update={"id": sample.given_id})
                self._problem(
                    RowProblem(number, sample.given_id, duplicate_message(as_given, first_row), ProblemKind.DUPLICATE)
                )
                continue
            seen[sample.id] = number
            keep.append(sample)
            self.digest.update(sample.model_dump_json().encode())
            if kind is RowKind.MEASURED:
                results.append(value)
        self.store.add_samples(keep, start=self.position)
        self.store.note_rows([(sid, number, None) for sid, number in seen.items()])
        self.position += len(keep)
        self.samples += len(keep)
        try:  # the batch in one transaction: a commit per response would cost the writer about half its time
            self.store.write_results([result for _, result in results])
            written = [result for _, result in results]
        except STORE_ERRORS:  # one by one, so that the result the store rejects becomes an error row that says why
            written = [store_result(self.store, sample, result, self.measurement.policy) for sample, result in results]
        self.measured += len(written)
        if self.progress is not None:
            for result in written:
                self.progress(result)

    def _problem(self, problem: RowProblem) -> None:
        if self.measurement.settings.strict_input:
            who = f" (id {problem.sample_id})" if problem.sample_id else ""
            raise InputError(f"row {problem.row}{who}: {problem.message}")
        self.problems.append(problem)


def _sample_of(value: Sample | tuple[Sample, ResponseResult]) -> Sample:
    return value[0] if isinstance(value, tuple) else value


def input_sha256(path: str | Path | None) -> str | None:
    """The hash a local run records for the same input (a local file's bytes; a local folder's files in name
    order); None for a Dataset or object storage, whose rows are hashed as they pass instead."""
    if path is None or "://" in str(path):
        return None
    local = Path(path)
    if local.is_file():
        return file_sha256(local)
    digest = hashlib.sha256()
    for part in sorted(p for p in local.rglob("*") if p.is_file()):
        digest.update(f"{part.relative_to(local)}:{file_sha256(part)}\n".encode())
    return digest.hexdigest()


@contextlib.contextmanager
def connected(address: str | None) -> Iterator[Any]:
    """Ray, joined to ``address`` (else ``RAY_ADDRESS``, else a new local cluster); a cluster started here is shut
    down on the way out, one the caller started is left running."""
    ray = require_ray()
    if ray.is_initialized():
        yield ray
        return
    ray.init(
        address=address or os.environ.get("RAY_ADDRESS") or None,
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
    )
    try:
        yield ray
    finally:
        ray.shutdown()


#: Seconds the actor pool may take to start every worker before the first batch goes out (else the run fails, saying
#: the cluster lacks the resources, rather than wait for ever).
WORKERS_START_WITHIN = 600


@contextlib.contextmanager
def _in_input_order(ctx: DataContext) -> Iterator[None]:
    """Ray Data set to give batches back in input order (the writer numbers rows by it), without its bars, and to
    start every worker before the first batch (else the first actor up takes the queued batches and the others
    wait with nothing to do); the context (a Dataset's, shared with the Datasets it was made from) is put back as
    it was afterwards."""
    before = (ctx.execution_options.preserve_order, ctx.enable_progress_bars, ctx.wait_for_min_actors_s)
    ctx.execution_options.preserve_order, ctx.enable_progress_bars = True, False
    if ctx.wait_for_min_actors_s <= 0:
        ctx.wait_for_min_actors_s = WORKERS_START_WITHIN
    try:
        yield
    finally:
        ctx.execution_options.preserve_order, ctx.enable_progress_bars, ctx.wait_for_min_actors_s = before


def _parts_location(out: str | Path) -> str:
    """Where workers write a run in Parquet form: a URI as given, a local folder as an absolute path."""
    from hallumeasure.runs.parquet_run import is_uri

    return str(out) if is_uri(out) else str(Path(out).absolute())


def _run_store(run_dir: Path, parts: str | None, overwrite: bool) -> RunStore:
    """The driver's store: the SQLite run it writes, or the Parquet run the workers write (``ray_parts``)."""
    if parts is None:
        return RunStore(run_dir, write=True, overwrite=overwrite)
    from hallumeasure.runs.parquet_run import ParquetRunWriter

    return ParquetRunWriter(parts, overwrite=overwrite)


def _writer(store: RunStore, measurement: Measurement, progress: Progress | None, row: int) -> _Writer | PartsWriter:
    """The driver's writer, numbering rows after ``row``: rows stored here, or only counted (the workers stored
    them as Parquet parts)."""
    from hallumeasure.runs.parquet_run import ParquetRunWriter

    if isinstance(store, ParquetRunWriter):
        return PartsWriter(store, measurement, counted=progress, row=row)
    return _Writer(store, measurement, progress, row=row)


def measure_on_ray(
    data: ray.data.Dataset | str | Path,
    out: str | Path,
    measurement: Measurement | None = None,
    *,
    options: RayOptions | None = None,
    columns: dict[str, str] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: Callable[[ResponseResult], None] | None = None,
) -> RunManifest:
    """Measure ``data`` (a Ray Dataset, a JSON Lines or Parquet path Ray Data reads, or a local CSV file) into the
    run directory ``out`` on a Ray cluster, and return the finished manifest.

    The run is the one a local ``measure`` makes of the same rows: the same stages from ``measurement``'s
    settings, the same manifest, rates, intervals and judge checks (the context probe is asked here, at the
    end). Every row needs an id. ``progress`` is called in this process for every result stored.
    """
    from hallumeasure.pipeline.measurement import check_run_dir

    measurement = measurement or Measurement()
    options = options or RayOptions()
    run_dir = Path(out)
    check_run_dir(run_dir, resume=resume, overwrite=overwrite)
    if measurement.settings.batch:
        raise ConfigError("the Ray engine measures live: provider batches (batch) run in one process, without it")
    if measurement.settings.max_cost is not None:
        raise ConfigError("max_cost picks and caps in one process: drop --engine ray, or pick with sample_rate")
    path = str(data) if isinstance(data, (str, Path)) else None
    local_hash = input_sha256(path)
    stages = measurement.stages()  # checked here, in one process, before any worker starts; workers build their own
    s = measurement.settings
    parts = _parts_location(out) if options.out_format == "parquet" else None
    with connected(options.address) as ray, _run_store(run_dir, parts, overwrite) as store:
        if path is None and not isinstance(data, (str, Path)):
            dataset, form = data, InputForm.TABLE
        else:
            dataset, form = read_input(str(data), columns=columns, delimiter=s.delimiter)
        reader = RowReader(ColumnMap.of(columns), s.model_name, form)
        reader = RowReader(reader.fields, reader.model, form, _shared_ids(dataset, reader, path))
        workers, cpus = pool_size(ray.cluster_resources().get("CPU", 0), options.workers)
        recorded = {
            **measurement.recorded(LoadedInput(samples=[])),
            "engine": {"name": "ray", "workers": workers, "batch_size": options.batch_size},
        }
        manifest = new_manifest(
            run_dir,
            stages.extractor,
            stages.judge,
            mode=s.mode,
            input_sha256=local_hash or "",
            input_path=path or "<Ray Dataset>",
            n_samples=0,
            policy=stages.policy,
            detector=s.detector,
            settings={
                "concurrency": s.concurrency,
                "sources": measurement.sources.settings(stages.judge.name),
                **recorded,
            },
        )
        previous = store.read_manifest()
        if local_hash is None and previous is not None:  # rows are hashed as they pass: compared once they have
            manifest = manifest.model_copy(update={"input_sha256": previous.input_sha256})
        manifest, resumed = resumed_manifest(store, previous, manifest, resume=resume)
        store.write_manifest(manifest)
        done = frozenset(stored_ids(store)) if resumed else frozenset()
        writer = _writer(store, measurement, progress, row=1 if form is InputForm.CSV else 0)  # CSV: the header
        limits = (parse_limit(s.rpm), parse_limit(s.tpm), parse_limit(s.otpm))
        specs = list(stages.models.models) if isinstance(stages.models, ModelFactory) else []
        limits_run = uuid.uuid4().hex if any(limits) and specs else None
        # A block per batch, so that each batch goes to whichever worker is free (a file read as a few large blocks
        # would keep the first workers busy and leave the others idle).
        measured = dataset.repartition(target_num_rows_per_block=options.batch_size).map_batches(
            BatchMeasurer,
            fn_constructor_kwargs={
                "measurement": measurement,
                "reader": reader,
                "stored": done,
                "limits_run": limits_run,
                "parts": parts,
            },
            batch_size=options.batch_size,
            batch_format="pandas",
            # A pool of fixed size; Ray restarts a lost actor and retries its batch (the writer keys rows by id).
            compute=ray.data.ActorPoolStrategy(size=workers),
            num_cpus=cpus,
        )
        log.info("measuring on Ray with %d worker(s) of %.2f CPU, %d already stored", workers, cpus, len(done))
        try:
            with _in_input_order(measured.context), cluster_limits(ray, limits_run or "", specs, limits):
                for batch in measured.iter_batches(batch_size=None, batch_format="numpy"):
                    writer.write(batch["kind"], batch["payload"])
        except KeyboardInterrupt:
            mark_interrupted(store, manifest, writer.samples)
            raise
        if isinstance(writer, PartsWriter):  # workers see their own batches: ids repeated across them go now
            writer.drop_repeated()
        if not writer.samples:
            if writer.sampled_out:
                raise InputError(f"sample_rate {s.sample_rate} picks none of the {writer.sampled_out} responses")
            problems = writer.problems
            first = f"; first problem: row {problems[0].row}: {problems[0].message}" if problems else ""
            raise InputError(f"{path or 'the Dataset'}: no usable rows{first}")
        store.write_input_problems(writer.problems)
        if local_hash is None:
            digest = writer.digest.hexdigest()
            if resumed and manifest.input_sha256 and digest != manifest.input_sha256:
                log.warning(
                    "the resumed input's rows differ from the first run's (hash %s, was %s)",
                    digest,
                    manifest.input_sha256,
                )
            manifest = manifest.model_copy(update={"input_sha256": digest})
        recorded = {
            **measurement.recorded(LoadedInput([], problems=writer.problems), sampled_out=writer.sampled_out),
            "engine": recorded["engine"],
        }
        manifest = manifest.model_copy(update={"settings": {**manifest.settings, **recorded}})
        probe = _probe(stages, store, previous if resumed else None, measured_now=writer.measured)
        manifest = finish_manifest(
            store,
            manifest,
            n_samples=writer.samples,
            measured_now=writer.measured,
            skipped=len(writer.problems),
            probe=probe,
        )
    return manifest


def _shared_ids(dataset: ray.data.Dataset, reader: RowReader, path: str | None) -> frozenset[str]:
    """The ids the rows of several models share (a first pass over the input, in Ray tasks, of ids and models
    only); none, without a pass, when no row can name a model: a table without the model column, a local JSON
    Lines or CSV file in which the column's name does not occur."""
    column = reader.fields.mapping["model"]
    if reader.form is InputForm.TABLE and column not in (dataset.columns() or []):
        return frozenset()
    plain_file = path is not None and "://" not in path and not path.endswith(".gz")
    if plain_file and reader.form is not InputForm.TABLE:
        needle = json.dumps(column) if reader.form is InputForm.LINES else column  # a JSON key, or a CSV header's
        if not _occurs(Path(str(path)), needle.encode()):
            return frozenset()
    keys = dataset.map_batches(reader, batch_format="pandas")
    return shared_ids((batch["id"], batch["model"]) for batch in keys.iter_batches(batch_format="numpy"))


def _occurs(path: Path, needle: bytes) -> bool:
    """Whether ``needle`` occurs in the file (read a MiB at a time, each piece with the end of the one before)."""
    tail = b""
    with path.open("rb") as handle:
        for piece in iter(lambda: handle.read(1 << 20), b""):
            if needle in tail + piece:
                return True
            tail = piece[-len(needle) :]
    return False


def _probe(stages: Stages, store: RunStore, previous: RunManifest | None, *, measured_now: int) -> ContextProbe | None:
    """The context probe of a local run (``probe_context``: a few LLM verdicts asked again without their source),
    asked by this process once the workers are done, with the few samples it needs read back from the store."""
    if not measured_now:  # a resume of a finished run: its verdicts, so its probe, are those of before
        before = previous.settings.get("context_probe") if previous is not None else None
        return None if before is None else ContextProbe.model_validate(before)
    if all(is_keyless(name) for name in store.judges()):
        return None  # the probe asks again about LLM verdicts only

    async def ask() -> ContextProbe | None:
        try:
            chosen = [sample_id for sample_id, _, _ in probe_claims(store.iter_results())]
            return await probe_context(stages.judge, store.samples(chosen), store.iter_results())
        except Exception:  # as in a local run, the probe never fails the run
            log.warning("the context probe of the judge could not run", exc_info=True)
            return None
        finally:
            await close_stage_models(stages.extractor, stages.judge)

    return run_sync(ask())
