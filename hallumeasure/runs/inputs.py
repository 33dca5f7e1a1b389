"""Read samples from JSONL, CSV or Parquet, or from records in memory, with a column map and errors that name the row.

A bad row never stops the others: it comes back as a ``RowProblem`` (row number, id when known,
what is wrong, and its kind) and is left out. Only a file that cannot be read at all, or whose columns cannot
be mapped, raises ``InputError``. A file's rows, once parsed, and records given in memory (a DataFrame's
rows, a list of dicts: ``records_to_samples``) become samples the same way (``rows_to_samples``).
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hallumeasure.core.errors import ConfigError, InputError
from hallumeasure.core.text import clean_text
from hallumeasure.core.types import Passage, Sample
from hallumeasure.registry import BUILTIN, InputFormatPart, PartKind, registry
from hallumeasure.registry.specs import split_options
from hallumeasure.runs.messages import MessagesError, read_conversation

FIELDS = ("id", "context", "contexts", "messages", "response", "question", "model", "tags", "metadata")
#: A row needs a response, or messages ending with the assistant's answer.
REQUIRED = ("response",)
#: A row needs one of these: one context string, a list of passages, or a conversation (whose sources
#: may be none at all: such a response is unevaluatable, see ``pipeline/run.py``).
SOURCE_FIELDS = ("context", "contexts", "messages")
#: Fields of a passage object in ``contexts`` (the source's kind and tool fields, see ``core.types.Passage``).
PASSAGE_FIELDS = ("id", "text", "title", "url", "kind", "tool_name", "call_id", "failed")
#: Column names other tools use (ragas' evaluation rows), recognised when the field is not mapped.
ALIASES = {"contexts": ("retrieved_contexts",), "question": ("user_input",)}
#: Fields that are read as sample metadata when present and not mapped elsewhere.
_KNOWN_EXTRA = ("label", "claims", "error_types", "meta", "dataset", "split")
#: Delimiters a CSV file may use; the header line decides which one.
CSV_DELIMITERS = (",", ";", "\t", "|")
#: How the command line maps column names (the default of ``load_samples``'s ``column_hint``).
CLI_COLUMN_HINT = "Map your column names with --column field=name."
#: How the Python API maps them: its ``columns`` argument, not the CLI's flag.
API_COLUMN_HINT = "Map your column names with columns={'field': 'name'} (e.g. columns={'response': 'answer'})."
# Bytes that are not UTF-8, as the surrogateescape decoder keeps them.
_BAD_BYTES = re.compile("[\udc80-\udcff]")


class ProblemKind(StrEnum):
    """What is wrong with an input row that did not become a sample."""

    #: The row cannot be read: not UTF-8, not JSON or CSV, not an object, or what a trace reader could not use.
    UNREADABLE = "unreadable"
    #: A field the row needs is absent: a column map (``--column``, ``columns=``) may be what is missing.
    MISSING_FIELD = "missing_field"
    #: A field is there but its value cannot be used (empty, not text, a malformed list of passages ...).
    INVALID_VALUE = "invalid_value"
    #: An earlier row has the same (id, model) pair.
    DUPLICATE = "duplicate"


@dataclass
class RowProblem:
    """An input row left out of a run: its number as the user counts it, its id when known, why, and the kind."""

    row: int
    sample_id: str | None
    message: str
    kind: ProblemKind


@dataclass
class LoadedInput:
    samples: list[Sample]
    problems: list[RowProblem] = field(default_factory=list)
    sha256: str = ""
    path: str | None = None


class _UnusableRowError(ValueError):
    """A row that cannot become a sample; the message says why."""

    kind = ProblemKind.INVALID_VALUE


class _MissingFieldError(_UnusableRowError):
    """A row without a field it needs."""

    kind = ProblemKind.MISSING_FIELD


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


#: Called once before the rows of a file with a header, with its columns and how it was read.
OnHeader = Callable[[list[str], str], None]


def read_rows(
    path: Path, fmt: str, delimiter: str | None, *, on_header: OnHeader | None = None
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(1-based row number, record or an error message) for every row of the file, read by the registered
    input format ``fmt`` (``jsonl``, ``csv``, ``parquet`` or a plugin's).

    JSONL rows are numbered by line; CSV rows by record, the header being row 1; Parquet rows from 1.
    ``on_header(columns, how)`` is called once before the rows of a CSV or Parquet file.
    """
    part, options = _input_format(fmt)
    yield from part.load()(path, delimiter=delimiter, on_header=on_header, **options)


#: Formats whose rows are records in our fields (``response``, ``context`` ...): records given in memory are
#: read as their rows. The other built-in formats (the trace readers) read JSON values in memory as from a file.
ROW_FORMATS = ("jsonl", "csv", "parquet")


def read_records(values: Sequence[Mapping[str, Any]], fmt: str | None) -> Iterator[tuple[int, Mapping[str, Any] | str]]:
    """(1-based row number, record or an error message) for JSON values in memory (a DataFrame's records, a
    list of dicts), read by the input format ``fmt``, or by the built-in format that recognises them.

    Without ``fmt``, or with a row format, the values are the rows. A trace format reads them as it reads
    its files; a plugin's format reads files only, and is refused here with what to do instead.
    """
    part, options = _input_format(fmt or format_of_values(values))
    if part.name in ROW_FORMATS:
        yield from enumerate(values, start=1)
        return
    if part.origin != BUILTIN:
        raise InputError(
            f"input format {part.name!r} ({part.origin}) reads files only: save the data to a file and measure "
            "that file"
        )
    yield from part.load()(list(values), delimiter=None, on_header=None, **options)


def format_of_values(values: Sequence[Mapping[str, Any]]) -> str:
    """The built-in input format that recognises ``values`` in memory (a span DataFrame's records), else ``jsonl``:
    records in our fields. Plugins' formats recognise files only (``format_of``)."""
    for part in registry().parts_of(InputFormatPart):
        sniff = part.load_sniff() if part.origin == BUILTIN else None
        if sniff is not None and sniff(list(values)):
            return part.name
    return "jsonl"


def _input_format(fmt: str) -> tuple[InputFormatPart, dict[str, Any]]:
    """The registered input format that ``fmt`` names, and its options, checked against those it declares."""
    name, given = split_options(fmt)
    try:
        part = registry().part(PartKind.INPUT_FORMAT, name.strip())
        options = part.read_options(given)
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    return part, options


def parquet_rows(
    path: Path, *, delimiter: str | None = None, on_header: OnHeader | None = None
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """The rows of a Parquet file (needs pyarrow or fastparquet)."""
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except ImportError as exc:
        raise InputError("reading Parquet needs pyarrow or fastparquet: pip install pyarrow") from exc
    except Exception as exc:
        raise InputError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from exc
    if on_header is not None:
        on_header([str(c) for c in frame.columns], "Parquet")
    yield from enumerate(frame.to_dict(orient="records"), start=1)


def jsonl_rows(
    path: Path, *, delimiter: str | None = None, on_header: OnHeader | None = None
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """The rows of a JSON Lines file; a line that is not one JSON object is an error row."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]  # editors on Windows start files with a byte-order mark
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, f"not valid UTF-8 at byte {exc.start} of the line; re-save the file as UTF-8"
                continue
            yield number, jsonl_record(text)


def jsonl_record(line: str) -> dict[str, Any] | str:
    """One line of a JSON Lines file as a record, or why it is not one."""
    # Without its line ending, an error at the end of a cut line points at that end, not at
    # "column 1" of a line that does not exist.
    try:
        record = json.loads(line.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})"
    return record if isinstance(record, dict) else "a JSON object was expected"


#: Spellings of a tab that a shell passes through as more than one character.
_TAB_NAMES = ("\\t", "tab", "TAB")


def csv_delimiter(delimiter: str | None) -> str | None:
    """A checked CSV delimiter: one character (``\\t`` and ``tab`` mean a tab); None = detect it."""
    if delimiter is None:
        return None
    if delimiter in _TAB_NAMES:
        return "\t"
    if len(delimiter) != 1 or delimiter in ('"', "\r", "\n"):
        raise InputError(f"the CSV delimiter must be one character such as , ; | or \\t, not {delimiter!r}")
    return delimiter


def sniff_delimiter(header_line: str) -> str:
    """The CSV delimiter: the candidate that occurs most often in the header line (``,`` on a tie or none)."""
    counts = {d: header_line.count(d) for d in CSV_DELIMITERS}
    best = max(CSV_DELIMITERS, key=lambda d: (counts[d], -CSV_DELIMITERS.index(d)))
    return best if counts[best] else ","


def csv_rows(
    path: Path, *, delimiter: str | None = None, on_header: OnHeader | None = None
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """The rows of a CSV or TSV file with a header row (the delimiter detected unless given)."""
    # surrogateescape keeps undecodable bytes visible, so that the row holding them can be named.
    data = path.read_bytes().decode("utf-8", errors="surrogateescape")
    if data.startswith("\ufeff"):
        data = data[1:]
    delimiter = csv_delimiter(delimiter)
    if delimiter is None:
        delimiter = sniff_delimiter(data.split("\n", 1)[0])
    csv.field_size_limit(1 << 30)
    reader = csv.reader(io.StringIO(data, newline=""), delimiter=delimiter)
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        return
    except csv.Error as exc:
        raise InputError(f"{path}: the CSV header cannot be read ({exc})") from exc
    if on_header is not None:
        on_header(header, f"CSV with delimiter {delimiter!r}")
    number = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            number += 1
            yield number, f"not valid CSV ({exc})"
            continue
        if not any(cell.strip() for cell in row):
            continue  # blank line
        number += 1
        bad = [
            header[i] if i < len(header) else f"field {i + 1}" for i, cell in enumerate(row) if _BAD_BYTES.search(cell)
        ]
        if bad:
            yield number, f"not valid UTF-8 in column(s) {', '.join(map(repr, bad))}; re-save the file as UTF-8"
            continue
        if len(row) > len(header):
            yield (
                number,
                (
                    f"has {len(row)} fields but the header has {len(header)}: an unquoted {delimiter!r} "
                    "inside a field, or the wrong delimiter"
                ),
            )
            continue
        record: dict[str, Any] = dict.fromkeys(header)  # a short row leaves its last fields missing
        record.update(zip(header, row, strict=False))
        yield number, record


def format_of(path: Path) -> str:
    """The registered input format of ``path``: the first whose ``sniff`` knows the file (a trace export), else
    the one that reads ``path``'s suffix; JSON Lines for any other."""
    parts = registry().parts_of(InputFormatPart)
    for part in parts:
        try:
            sniff = part.load_sniff()
        except ConfigError:
            continue  # a plugin that does not load is reported by `hallumeasure plugins`
        if sniff is not None and sniff(path):
            return part.name
    suffix = path.suffix.lower()
    for part in parts:
        if suffix in part.suffixes:
            return part.name
    return "jsonl"


def load_samples(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    fmt: str | None = None,
    delimiter: str | None = None,
    model: str | None = None,
    strict: bool = False,
    column_hint: str = CLI_COLUMN_HINT,
) -> LoadedInput:
    """Samples from a file. ``columns`` maps our field names to the file's (``{"response": "answer"}``).

    ``column_hint`` ends a missing-column error: how the caller maps column names (the CLI's flag by
    default, ``API_COLUMN_HINT`` for the Python API).

    Bad rows are reported as ``problems`` (row number, id, what is wrong) and skipped; the others
    load. Rows that are unreadable (not UTF-8, not JSON, not CSV), that lack a context (missing,
    empty or whitespace only) or a response field, whose fields are not text, or whose (id, model)
    pair repeats an earlier row's are problems. Rows may share an id when their models differ (one
    row per question and model): see :func:`key_samples`. An empty (or whitespace-only) response
    loads as ``""``: a result with no claims. With ``strict`` the first problem raises ``InputError``. A file
    with no usable row, or whose header lacks a required column, raises.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"input file {path} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a JSONL, CSV or Parquet file")
    fmt = fmt or format_of(path)
    delimiter = csv_delimiter(delimiter)
    fields = ColumnMap.of(columns)

    # CSV and Parquet columns are checked once for the whole file; JSONL rows one by one, since each
    # line may have its own fields.
    rows = read_rows(path, fmt, delimiter if fmt == "csv" else None, on_header=header_check(path, fields, column_hint))
    loaded = rows_to_samples(rows, name=str(path), fields=fields, model=model, strict=strict, column_hint=column_hint)
    loaded.sha256 = file_sha256(path)
    return loaded


def records_to_samples(
    records: Iterable[Mapping[str, Any]],
    *,
    name: str,
    fmt: str | None = None,
    columns: Mapping[str, str] | None = None,
    model: str | None = None,
    strict: bool = False,
    column_hint: str = API_COLUMN_HINT,
) -> LoadedInput:
    """Samples from records in memory (a DataFrame's rows, a list of dicts), checked as a file's rows are.

    Row ``n`` of a problem is the ``n``-th record, counted from 1 as the lines of a JSONL file are; ``name``
    names the data in errors (``<DataFrame of 4 rows>``). Records of spans (a trace format's, named by ``fmt``
    or recognised) are read by that format first (``read_records``). The caller sets ``sha256``: what it
    hashes is its own (see ``api/measure.py``).
    """
    fields = ColumnMap.of(columns)
    rows = read_records(list(records), fmt)
    return rows_to_samples(rows, name=name, fields=fields, model=model, strict=strict, column_hint=column_hint)


@dataclass(frozen=True)
class ColumnMap:
    """Where each of our fields is read from: ``mapping`` (field -> column) and the aliases of unmapped fields."""

    mapping: Mapping[str, str]
    aliases: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, columns: Mapping[str, str] | None) -> ColumnMap:
        """The column map of the user's ``columns`` (our field -> their column); unknown fields raise."""
        unknown = set(columns or {}) - set(FIELDS)
        if unknown:
            raise InputError(f"unknown field(s) in the column map: {sorted(unknown)}; fields are {list(FIELDS)}")
        mapping = {name: name for name in FIELDS}
        mapping.update(columns or {})
        # Aliases only stand in for fields the user did not map.
        return cls(mapping, {f: names for f, names in ALIASES.items() if f not in (columns or {})})

    def resolve(self, present: Any) -> dict[str, str]:
        """``mapping`` with a field's alias column in place of its own name when only the alias is present."""
        out = dict(self.mapping)
        for name, names in self.aliases.items():
            if out[name] not in present:
                out[name] = next((alias for alias in names if alias in present), out[name])
        return out


def rows_to_samples(
    rows: Iterable[tuple[int, Mapping[str, Any] | str]],
    *,
    name: str,
    fields: ColumnMap,
    model: str | None,
    strict: bool,
    column_hint: str,
) -> LoadedInput:
    """Samples from numbered rows, each a record or why it could not be read (``read_rows``); see ``load_samples``.

    ``name`` names the input in errors (a file's path, ``<DataFrame of 4 rows>``).
    """
    samples: list[Sample] = []
    problems: list[RowProblem] = []
    seen: dict[tuple[str, str | None], int] = {}
    for number, record in rows:
        if isinstance(record, str):
            problems.append(RowProblem(number, None, record, ProblemKind.UNREADABLE))
            continue
        sample = record_to_sample(record, fields, number, model)
        if isinstance(sample, RowProblem):
            problems.append(sample)
            continue
        pair = (sample.id, sample.model)
        if pair in seen:
            problems.append(RowProblem(number, sample.id, duplicate_message(sample, seen[pair]), ProblemKind.DUPLICATE))
            continue
        seen[pair] = number
        samples.append(sample)
    samples = key_samples(samples)
    if strict and problems:
        p = problems[0]
        raise InputError(f"{name}: row {p.row}{f' (id {p.sample_id})' if p.sample_id else ''}: {p.message}")
    if not samples:
        detail = f"; first problem: row {problems[0].row}: {problems[0].message}" if problems else ""
        hint = f" {column_hint}" if problems and problems[0].kind is ProblemKind.MISSING_FIELD else ""
        raise InputError(f"{name}: no usable rows{detail}.{hint}")
    return LoadedInput(samples=samples, problems=problems, path=name)


#: Joins an id and a model into the run key of a sample whose id other models' samples share.
KEY_SEPARATOR = "@"


def duplicate_message(sample: Sample, first_row: int) -> str:
    """The problem of a row whose (id, model) pair an earlier row (``first_row``) already has."""
    model = f" for model {sample.model!r}" if sample.model else ""
    return (
        f"duplicate id {sample.id!r}{model} (first seen at row {first_row}); give each row a unique id per "
        "model, or add a model column (rows may share an id when their models differ)"
    )


def sample_key(sample_id: str, model: str | None) -> str:
    """The run key of a sample whose id is shared by other models' samples: ``id@model``."""
    return f"{sample_id}{KEY_SEPARATOR}{model}" if model else sample_id


def key_samples(samples: Sequence[Sample]) -> list[Sample]:
    """Samples keyed by (id, model): ids that several models share get a unique run key.

    A run stores, resumes and joins samples by ``Sample.id``, so it must be unique. When one id is
    used by samples of different models (one row per question and model), each of them gets the
    key ``id@model`` as ``id`` and keeps the id as written in ``input_id``; ids used once stay as
    they are, so runs whose ids were unique are keyed as before. The same (id, model) twice, or a
    key that clashes with another sample's id, raises ``InputError`` naming both (0-based) positions.
    """
    counts: dict[str, int] = {}
    for sample in samples:
        counts[sample.given_id] = counts.get(sample.given_id, 0) + 1
    out: list[Sample] = []
    first: dict[str, int] = {}
    pairs: dict[tuple[str, str | None], int] = {}
    for position, sample in enumerate(samples):
        given = sample.given_id
        pair = (given, sample.model)
        if pair in pairs:
            model = f" with model {sample.model!r}" if sample.model else ""
            raise InputError(
                f"sample id {given!r}{model} appears twice (positions {pairs[pair]} and {position}); ids must "
                "be unique per model within a run, or one result would replace the other: give each sample a "
                "unique id per model, or set its model"
            )
        pairs[pair] = position
        if counts[given] > 1 and sample.input_id is None:
            sample = sample.model_copy(update={"id": sample_key(given, sample.model), "input_id": given})
        if sample.id in first:
            raise InputError(
                f"the key {sample.id!r} of the sample at position {position} is also the id of the sample at "
                f"position {first[sample.id]}; "
                f"rename one of them (a shared id gets the key id{KEY_SEPARATOR}model)"
            )
        first[sample.id] = position
        out.append(sample)
    return out


def record_to_sample(
    record: Mapping[str, Any], fields: ColumnMap, number: int, model: str | None
) -> Sample | RowProblem:
    """One record as a sample, or the problem that keeps it out (``number`` is its row, counted from 1)."""
    try:
        return _to_sample(record, fields.resolve(record), number, model)
    except _UnusableRowError as exc:
        return RowProblem(number, _row_id(record, fields.mapping), str(exc), exc.kind)


def row_id(record: Mapping[str, Any], fields: ColumnMap) -> str | None:
    """The id a record gives itself (None when it has none)."""
    return _row_id(record, fields.mapping)


def header_check(path: str | Path, fields: ColumnMap, column_hint: str = CLI_COLUMN_HINT) -> OnHeader:
    """The check of a CSV or Parquet header: an ``InputError`` naming the required columns it lacks."""

    def check(present: list[str], how: str) -> None:
        _check_columns(str(path), present, fields.resolve(present), how, column_hint)

    return check


def _check_columns(name: str, present: list[str], mapping: Mapping[str, str], how: str, hint: str) -> None:
    conversation = mapping["messages"] in present
    missing = [f"{f} (column {mapping[f]!r})" for f in REQUIRED if mapping[f] not in present and not conversation]
    if not any(mapping[f] in present for f in SOURCE_FIELDS):
        missing.insert(0, " or ".join(f"{f} (column {mapping[f]!r})" for f in SOURCE_FIELDS))
    if missing:
        raise InputError(
            f"{name}: read as {how}, the header has no {', '.join(missing)}; "
            f"columns present: {[str(c) for c in present][:20]}. {hint}"
        )


def _row_id(record: Mapping[str, Any], mapping: Mapping[str, str]) -> str | None:
    try:
        value = _text(record.get(mapping["id"]), "id")
    except _UnusableRowError:
        return None
    return (value.strip() or None) if value is not None else None


def _text(value: Any, name: str) -> str | None:
    """A field's text, cleaned (NFC, no control characters); None when absent."""
    if value is None or (isinstance(value, float) and value != value):  # NaN from pandas
        return None
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _UnusableRowError(f"the {name} is not valid UTF-8 (at byte {exc.start})") from None
    if isinstance(value, (dict, list, tuple)):
        kind = "an object" if isinstance(value, dict) else "a list"
        raise _UnusableRowError(f"the {name} must be text, not {kind}")
    return clean_text(str(value))


def _blank_to_none(text: str | None) -> str | None:
    return text if text is not None and text.strip() else None


def _to_sample(record: Mapping[str, Any], mapping: Mapping[str, str], number: int, model: str | None) -> Sample:
    values = {name: record.get(column) for name, column in mapping.items()}
    conversation = values["messages"] is not None and not (isinstance(values["messages"], float))
    absent = [f"{f} (column {mapping[f]!r})" for f in REQUIRED if mapping[f] not in record and not conversation]
    if not any(mapping[f] in record for f in SOURCE_FIELDS):
        absent.insert(0, " or ".join(f"{f} (column {mapping[f]!r})" for f in SOURCE_FIELDS))
    if absent:
        raise _MissingFieldError(f"has no {', '.join(absent)}")
    passages = _passages(values["contexts"])
    context = None if passages else _text(values["context"], "context")
    response = _text(values["response"], "response")
    question = _blank_to_none(_text(values["question"], "question"))
    if conversation:
        passages, response, question = _with_conversation(values["messages"], passages, context, response, question)
        context = None
    if not conversation and not passages and (context is None or not context.strip()):
        what = (
            "the contexts list is empty"
            if mapping["contexts"] in record and values["contexts"] is not None
            else "the context is empty" + (" (whitespace only)" if context else "")
        )
        raise _UnusableRowError(what)
    if response is None:
        raise _UnusableRowError("the response is missing")
    if not response.strip():
        response = ""  # an empty answer is a result with no claims: stored and counted, not a bad row
    tags = values["tags"]
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    elif tags is not None and not isinstance(tags, (list, tuple)) and not hasattr(tags, "tolist"):
        tags = [tags] if not (isinstance(tags, float) and tags != tags) else []
    metadata = values["metadata"] if isinstance(values["metadata"], dict) else {}
    metadata = {**{k: record[k] for k in _KNOWN_EXTRA if k in record and k not in mapping.values()}, **metadata}
    try:
        return Sample(
            id=_blank_to_none(_text(values["id"], "id")) or f"row-{number}",
            context=context or "",
            passages=passages,
            response=response,
            question=question,
            model=_blank_to_none(_text(values["model"], "model")) or model,
            tags=tuple(str(t) for t in (list(tags) if tags is not None else ())),
            metadata=metadata,
        )
    except ValidationError as exc:
        raise _UnusableRowError(f"invalid row: {exc.errors()[0]['msg']}") from None


def _with_conversation(
    messages: Any, passages: tuple[Passage, ...], context: str | None, response: str | None, question: str | None
) -> tuple[tuple[Passage, ...], str, str | None]:
    """Sources, response and question of a row with ``messages``: the row's context or passages first, then
    the conversation's system prompt, tool results and user turns (``runs/messages.py``)."""
    if isinstance(messages, str):
        try:
            messages = json.loads(messages)
        except json.JSONDecodeError as exc:
            raise _UnusableRowError(f"messages must be a JSON list ({exc.msg} at column {exc.colno})") from None
    import numpy as np

    if isinstance(messages, np.ndarray):  # a Parquet list column
        messages = messages.tolist()
    if context is not None and context.strip() and not passages:
        passages = (Passage(id="context", text=context),)
    try:
        conversation = read_conversation(messages, taken_ids=[p.id for p in passages])
    except (MessagesError, ValidationError) as exc:
        raise _UnusableRowError(f"messages: {exc}") from None
    answer = response if response is not None and response.strip() else conversation.response
    if answer is None:
        raise _MissingFieldError("has no response, and its messages end with no assistant answer")
    return (*passages, *conversation.sources), answer, question or conversation.question


def _passages(value: Any) -> tuple[Passage, ...]:
    """Passages from a ``contexts`` value: a list (JSON text in CSV, an array in Parquet) of strings or
    ``{id, text, title?, url?}`` objects. Ids default to the position, 1..n; empty passages are dropped."""
    if value is None or (isinstance(value, float) and value != value):
        return ()
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # a Parquet list column arrives as a numpy array
    if isinstance(value, str):
        if not value.strip():
            return ()
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _UnusableRowError(
                f"contexts must be a JSON list of passages ({exc.msg} at column {exc.colno})"
            ) from None
    if not isinstance(value, (list, tuple)):
        raise _UnusableRowError(f"contexts must be a list of passages, not {type(value).__name__}")
    out: list[Passage] = []
    for position, item in enumerate(value, start=1):
        extra: dict[str, Any] = {}
        if isinstance(item, dict):
            unknown = set(item) - set(PASSAGE_FIELDS)
            if unknown:
                raise _UnusableRowError(
                    f"passage {position} has unknown field(s) {sorted(unknown)}; a passage has "
                    f"{', '.join(PASSAGE_FIELDS)}"
                )
            text = _text(item.get("text"), f"text of passage {position}")
            pid = _text(item.get("id"), f"id of passage {position}")
            title, url = _text(item.get("title"), "passage title"), _text(item.get("url"), "passage url")
            extra = {k: item[k] for k in ("kind", "tool_name", "call_id", "failed") if item.get(k) is not None}
        else:
            text, pid, title, url = _text(item, f"passage {position}"), None, None, None
        if text is None or not text.strip():
            continue
        try:
            out.append(
                Passage(
                    id=_blank_to_none(pid) or str(position),
                    text=text,
                    title=_blank_to_none(title),
                    url=_blank_to_none(url),
                    **extra,
                )
            )
        except ValidationError as exc:
            raise _UnusableRowError(f"passage {position}: {exc.errors()[0]['msg']}") from None
    ids = [p.id for p in out]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise _UnusableRowError(f"passage ids repeat within the row: {twice}")
    return tuple(out)
