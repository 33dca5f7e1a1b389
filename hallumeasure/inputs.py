"""Read samples from JSONL, CSV or Parquet, with a column map and errors that name the row."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hallumeasure.errors import InputError
from hallumeasure.text import clean_text
from hallumeasure.types import Sample

FIELDS = ("id", "context", "response", "question", "model", "tags", "metadata")
REQUIRED = ("context", "response")
#: Fields that are read as sample metadata when present and not mapped elsewhere.
_KNOWN_EXTRA = ("label", "claims", "error_types", "meta", "dataset", "split")


@dataclass
class RowProblem:
    row: int
    sample_id: str | None
    message: str


@dataclass
class LoadedInput:
    samples: list[Sample]
    problems: list[RowProblem] = field(default_factory=list)
    sha256: str = ""
    path: str | None = None


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_rows(path: Path, fmt: str, delimiter: str | None) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(1-based row number, record or an error message) for every row of the file."""
    if fmt == "jsonl":
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield number, f"not valid UTF-8 at byte {exc.start}"
                    continue
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as exc:
                    yield number, f"not valid JSON ({exc.msg} at column {exc.colno})"
                    continue
                yield number, record if isinstance(record, dict) else "a JSON object was expected"
    elif fmt == "csv":
        data = path.read_bytes().decode("utf-8", errors="replace")
        if delimiter is None:
            try:
                delimiter = csv.Sniffer().sniff(data[:65536], delimiters=",;\t|").delimiter
            except csv.Error:
                delimiter = ","
        csv.field_size_limit(1 << 30)
        reader = csv.DictReader(io.StringIO(data, newline=""), delimiter=delimiter)
        for number, record in enumerate(reader, start=2):  # row 1 is the header
            yield number, dict(record)
    elif fmt == "parquet":
        import pandas as pd

        try:
            frame = pd.read_parquet(path)
        except ImportError as exc:
            raise InputError("reading Parquet needs pyarrow or fastparquet: pip install pyarrow") from exc
        for number, record in enumerate(frame.to_dict(orient="records"), start=1):
            yield number, record
    else:
        raise InputError(f"unknown input format {fmt!r}; use jsonl, csv or parquet")


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    return {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "csv",
            ".parquet": "parquet"}.get(suffix, "jsonl")


def load_samples(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    fmt: str | None = None,
    delimiter: str | None = None,
    model: str | None = None,
    strict: bool = False,
) -> LoadedInput:
    """Samples from a file. ``columns`` maps our field names to the file's (``{"response": "answer"}``).

    Bad rows are reported as ``problems`` (row number, id, what is wrong) and skipped; the others load.
    With ``strict`` the first problem raises ``InputError``. A file with no usable row raises.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"input file {path} does not exist")
    fmt = fmt or _format_of(path)
    mapping = {name: name for name in FIELDS}
    unknown = set(columns or {}) - set(FIELDS)
    if unknown:
        raise InputError(f"unknown field(s) in the column map: {sorted(unknown)}; fields are {list(FIELDS)}")
    mapping.update(columns or {})
    samples: list[Sample] = []
    problems: list[RowProblem] = []
    seen: dict[str, int] = {}
    header_checked = False
    for number, record in read_rows(path, fmt, delimiter if fmt == "csv" else None):
        if isinstance(record, str):
            problems.append(RowProblem(number, None, record))
            continue
        if not header_checked:
            header_checked = True
            missing = [f"{f} (column {mapping[f]!r})" for f in REQUIRED if mapping[f] not in record]
            if missing:
                raise InputError(
                    f"{path}: row {number} has no {', '.join(missing)}; columns present: {sorted(record)[:20]}. "
                    "Map your column names with --column field=name."
                )
        problem, sample = _to_sample(record, mapping, number, model)
        if problem is None and sample is not None and sample.id in seen:
            problem = f"duplicate id {sample.id!r} (first seen at row {seen[sample.id]})"
        if problem is not None:
            sid = str(record.get(mapping["id"])) if record.get(mapping["id"]) is not None else None
            problems.append(RowProblem(number, sid, problem))
            continue
        assert sample is not None
        seen[sample.id] = number
        samples.append(sample)
    if strict and problems:
        p = problems[0]
        raise InputError(f"{path}: row {p.row}{f' (id {p.sample_id})' if p.sample_id else ''}: {p.message}")
    if not samples:
        detail = f"; first problem: row {problems[0].row}: {problems[0].message}" if problems else ""
        raise InputError(f"{path}: no usable rows{detail}")
    return LoadedInput(samples=samples, problems=problems, sha256=file_sha256(path), path=str(path))


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):  # NaN from pandas
        return None
    return clean_text(str(value))


def _to_sample(record: dict[str, Any], mapping: Mapping[str, str], number: int, model: str | None):
    values = {field: record.get(column) for field, column in mapping.items()}
    context, response = _text(values["context"]), _text(values["response"])
    if context is None or not context.strip():
        return "the context is empty", None
    if response is None:
        return "the response is missing", None
    tags = values["tags"]
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    metadata = values["metadata"] if isinstance(values["metadata"], dict) else {}
    metadata = {**{k: record[k] for k in _KNOWN_EXTRA if k in record and k not in mapping.values()}, **metadata}
    try:
        sample = Sample(
            id=_text(values["id"]) or f"row-{number}",
            context=context,
            response=response,
            question=_text(values["question"]) or None,
            model=_text(values["model"]) or model,
            tags=tuple(str(t) for t in (tags or ())),
            metadata=metadata,
        )
    except ValidationError as exc:
        return f"invalid row: {exc.errors()[0]['msg']}", None
    return None, sample
