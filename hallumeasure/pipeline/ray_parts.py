"""The Ray engine writing a run in Parquet form: each worker writes its own batch's part, the driver only counts.

With ``RayOptions(out_format="parquet")`` a measuring actor stores the samples and results of its batch as one
part of the run (``runs/parquet_run.write_batch``: the run store's own rows, keyed by a hash of the batch's ids,
so a retried batch replaces its files) and sends back, per row, only what the driver counts: its kind, the part it
went to, its id and model, a hash of the sample, and a row's problem. The driver numbers the rows, keeps the input
problems and the parts' order, and writes the manifest, whose counts and usage it reads back from the parts a part
at a time. No result crosses to the driver, which stores nothing but the manifest, the index and the problems.
"""

from __future__ import annotations

import hashlib
import pickle
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hallumeasure.core.errors import InputError
from hallumeasure.core.types import ResponseResult, Sample
from hallumeasure.models.model import ProviderUnreachableError
from hallumeasure.pipeline.measurement import Measurement
from hallumeasure.pipeline.ray_rows import WITH_VALUE, RowKind
from hallumeasure.runs.inputs import ProblemKind, RowProblem, duplicate_message
from hallumeasure.runs.parquet_run import ParquetDataset, ParquetRunWriter, write_batch

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class PartRow:
    """What the driver gets for a stored sample: the part it is in, its id and model, and a hash of it."""

    key: str
    sample_id: str
    model: str | None
    digest: str


@dataclass(frozen=True)
class RepeatedRow:
    """A row whose id an earlier row of the same batch has (the ``first`` row of the batch, counted from 0)."""

    sample: Sample
    first: int
    first_model: str | None


def write_reply(
    location: str, rows: Sequence[tuple[RowKind, Any]], results: Iterator[ResponseResult]
) -> dict[str, Any]:
    """Write a measured batch as a part of the run at ``location`` and return the rows the driver counts, as
    ``BatchMeasurer`` returns them (``kind`` and ``payload`` columns): a sample's payload is a ``PartRow``, a row
    whose id the batch has already a ``RepeatedRow``."""
    import numpy as np

    kinds: list[int] = []
    values: list[Any] = []
    seen: dict[str, tuple[int, str | None]] = {}
    samples: list[Sample] = []
    measured: list[ResponseResult] = []
    for index, (kind, value) in enumerate(rows):
        result = next(results) if kind is RowKind.MEASURED else None
        if kind in (RowKind.MEASURED, RowKind.STORED):
            if value.id in seen:
                kinds.append(int(RowKind.PROBLEM))
                values.append(RepeatedRow(value, *seen[value.id]))
                continue
            seen[value.id] = (index, value.model)
        if result is not None:
            samples.append(value)
            measured.append(result)
        kinds.append(int(kind))
        values.append(value)
    key = write_batch(ParquetDataset(location), samples, measured) if samples else ""
    payloads = [
        pickle.dumps(
            PartRow(key, v.id, v.model, hashlib.sha256(v.model_dump_json().encode()).hexdigest())
            if isinstance(v, Sample)
            else v
        )
        for v in values
    ]
    return {"kind": np.array(kinds), "payload": np.array(payloads, dtype=object)}


def repeated_message(sample: Sample, first_row: int, first_model: str | None) -> str:
    """Why a row whose id an earlier row has is left out, worded as the SQLite writer words it."""
    if first_model == sample.model:
        return duplicate_message(sample, first_row)
    return (
        f"id {sample.id!r} is also the id of row {first_row} (model {first_model!r}); the Ray engine needs an id "
        "per row: give each model's rows their own ids, or measure this input without --engine ray"
    )


@dataclass
class PartsWriter:
    """The driver of a run in Parquet form: numbers rows in input order, keeps the problems, the parts' order and
    the input row of each sample it measured (4 bytes a row), and counts; the workers have written the rows."""

    store: ParquetRunWriter
    measurement: Measurement
    #: Called once for each sample measured and stored by a worker (the progress line's count; no result here).
    counted: Callable[[Any], None] | None = None
    row: int = 0
    samples: int = 0
    measured: int = 0
    sampled_out: int = 0
    problems: list[RowProblem] = field(default_factory=list)
    digest: Any = field(default_factory=hashlib.sha256)
    #: The input row of each sample measured in this pass, by part and position in it.
    rows: dict[str, array[int]] = field(default_factory=dict)
    #: The ids a resumed run had stored, as their rows come again: no more than the ids the workers are sent.
    stored: dict[str, tuple[int, str | None]] = field(default_factory=dict)

    def write(self, kinds: np.ndarray, payloads: np.ndarray) -> None:
        start = self.row
        for kind, payload in zip(kinds, payloads, strict=True):
            kind = RowKind(int(kind))
            if kind is RowKind.UNREACHABLE:
                raise ProviderUnreachableError(bytes(payload).decode())
            self.row += 1
            self.sampled_out += kind is RowKind.SAMPLED_OUT
            value = pickle.loads(payload) if kind in WITH_VALUE else None
            if isinstance(value, RowProblem):
                self._problem(RowProblem(self.row, value.sample_id, value.message, value.kind))
            elif isinstance(value, RepeatedRow):
                message = repeated_message(value.sample, start + value.first + 1, value.first_model)
                self._problem(RowProblem(self.row, value.sample.id, message, ProblemKind.DUPLICATE))
            elif isinstance(value, PartRow) and value.sample_id in self.stored:  # a stored id given again
                sample = Sample(id=value.sample_id, model=value.model, context="-", response="-")
                message = repeated_message(sample, *self.stored[value.sample_id])
                self._problem(RowProblem(self.row, value.sample_id, message, ProblemKind.DUPLICATE))
            elif isinstance(value, PartRow):
                if kind is RowKind.STORED:
                    self.stored[value.sample_id] = (self.row, value.model)
                self.samples += 1
                self.digest.update(value.digest.encode())
                if kind is RowKind.MEASURED:
                    self.measured += 1
                    self.store.add_order(value.key)
                    self.rows.setdefault(value.key, array("q")).append(self.row)
                    if self.counted is not None:
                        self.counted(None)

    def drop_repeated(self) -> None:
        """Leave out the rows whose id an earlier batch stored (each worker sees its own batch only): the first
        row keeps the id, the others are rewritten out of their parts and become input problems, as in one
        process; then count the run's samples from the parts. Reads the parts' id columns; rewrites only the
        parts that held such a row."""
        dataset = self.store.dataset
        self.store.write_index(self.store.order)
        keys = dataset.ordered_keys()
        repeated = dataset.repeated_ids(keys)
        first: dict[str, tuple[int, str | None]] = {}
        for key in keys if repeated else []:
            part = dataset.read_part("samples", key, ["sample_id", "position", "model"]).to_pydict()
            numbers = self.rows.get(key)  # None for a part an earlier driver wrote: its rows came again as stored
            drop = set()
            for sid, position, model in zip(part["sample_id"], part["position"], part["model"], strict=True):
                if sid not in repeated:
                    continue
                row = numbers[position] if numbers is not None else 0
                if sid not in first:
                    first[sid] = (row, model)
                    continue
                drop.add(sid)
                if numbers is not None:
                    sample = Sample(id=sid, model=model, context="-", response="-")
                    message = repeated_message(sample, *first[sid])
                    self._problem(RowProblem(row, sid, message, ProblemKind.DUPLICATE))
                    self.measured -= 1
            if drop:
                dataset.drop_samples(key, drop)
        self.problems.sort(key=lambda p: p.row)
        self.samples = dataset.count_rows("samples", keys)

    def _problem(self, problem: RowProblem) -> None:
        if self.measurement.settings.strict_input:
            who = f" (id {problem.sample_id})" if problem.sample_id else ""
            raise InputError(f"row {problem.row}{who}: {problem.message}")
        self.problems.append(problem)
