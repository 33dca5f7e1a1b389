"""Labelled data for benchmarking judges: JSONL or CSV in the shared schema, read into ``LabelledSample``.

The schema (see ``shared/data/README.md``): ``id``, ``context``, ``response``, optional
``question``, ``label`` (1 = contains a hallucination, 0 = faithful), optional ``claims``
(``[{"text", "label"}]`` with the dataset's own label strings), optional ``error_types``
(the dataset's own names; null = not annotated, [] = annotated, none), ``meta`` (object),
and optionally ``dataset``, ``split``, ``model``. A user's file in this schema works the
same way; ``columns`` maps our field names to other column names.

Loading is strict: a labelled set with a bad row would give wrong numbers, so every bad row
(missing column, bad label, unknown claim label, duplicate id) is listed in one ``InputError``.
In CSV, ``claims``, ``error_types`` and ``meta`` cells hold JSON (``error_types`` may also be
a ``;``-separated list); columns that are not mapped to a field are kept in ``meta``.

Where the sets are: a set is named by its file stem (``bump``) and found in the data folder, which
comes from an argument (``resolve_dataset(name, data=DIR)``, ``hallumeasure bench --data DIR``), else
from the ``HALLUMEASURE_DATA`` environment variable; with neither, naming a set is an error that says
how to give the folder (a file path always works). The library never guesses a folder from where it
is installed. In a clone with ``../shared/data`` beside it, ``make`` and the test suite
(``tests/conftest.py``) set ``HALLUMEASURE_DATA`` to that folder, and the benchmark scripts default
their ``--data`` to it, so nothing changes there.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hallumeasure.core.errors import InputError
from hallumeasure.core.labels import Label
from hallumeasure.core.subtype_maps import ERROR_TYPE_FIELDS, claim_label
from hallumeasure.core.text import clean_text
from hallumeasure.core.types import Sample
from hallumeasure.runs.inputs import read_rows  # the shared row reader: JSONL / CSV / Parquet with row numbers

FIELDS = (
    "id",
    "dataset",
    "split",
    "context",
    "response",
    "question",
    "model",
    "label",
    "claims",
    "error_types",
    "meta",
    "spans",
)
REQUIRED = ("context", "response", "label")
#: The sets staged in shared/data, by file stem.
SHARED_SETS = ("wice", "summedits", "bump", "cliff", "halueval_qa")
_TRUE = {"1", "true", "yes"}
_FALSE = {"0", "false", "no"}
_MAX_LISTED = 10


class GoldClaim(BaseModel):
    """A human-labelled claim: the dataset's own label string and what it means for us."""

    model_config = ConfigDict(frozen=True)

    text: str
    raw_label: str
    label: Label | None = None
    #: True / False for the unsupported class; None when the claim is excluded (unevaluatable).
    unsupported: bool | None = None


class GoldSpan(BaseModel):
    """Characters of the response a human marked as hallucinated; ``text`` is ``response[start:end]``."""

    model_config = ConfigDict(frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str
    #: The set's own label type (RAGTruth's ``Evident Conflict``...), when it gives one.
    label: str | None = None
    #: The share of annotators who marked it (Mu-SHROOM's soft labels), when given.
    probability: float | None = Field(default=None, ge=0.0, le=1.0)


class LabelledSample(BaseModel):
    """One response with its human labels."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    dataset: str
    split: str | None = None
    context: str
    response: str
    question: str | None = None
    model: str | None = None
    #: 1 = contains a hallucination / not fully supported, 0 = faithful.
    label: int = Field(ge=0, le=1)
    claims: tuple[GoldClaim, ...] | None = None
    error_types: tuple[str, ...] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    #: The hallucinated characters of ``response``; None when the set marks none (not annotated), () when it
    #: was annotated and nothing is marked.
    spans: tuple[GoldSpan, ...] | None = None

    @model_validator(mode="after")
    def _spans_hold_their_text(self) -> LabelledSample:
        for span in self.spans or ():
            if not span.start < span.end <= len(self.response) or self.response[span.start : span.end] != span.text:
                raise ValueError(f"span [{span.start}, {span.end}) must lie inside the response and hold {span.text!r}")
        return self

    def to_sample(self) -> Sample:
        """The unlabelled ``Sample`` a judge sees; gold labels are left out so no judge can read them."""
        return Sample(
            id=self.id,
            context=self.context,
            response=self.response,
            question=self.question,
            model=self.model,
            tags=(self.dataset,),
            metadata={"dataset": self.dataset},
        )

    def gold_error_types(self) -> list[str] | None:
        """The human error-type names, from ``error_types`` or the field named in ``ERROR_TYPE_FIELDS``."""
        if self.error_types is not None:
            return list(self.error_types)
        where = ERROR_TYPE_FIELDS.get(self.dataset)
        if where is None:
            return None
        value: Any = self
        for part in where.split("."):
            value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
        return [str(v) for v in value] if isinstance(value, list) else None


def load_labelled(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    dataset: str | None = None,
    fmt: str | None = None,
    delimiter: str | None = None,
    label_values: Mapping[str, int] | None = None,
) -> list[LabelledSample]:
    """Labelled samples from a JSONL or CSV (or Parquet) file; raises ``InputError`` naming every bad row.

    ``columns`` maps our field names to the file's (``{"response": "summary"}``). ``dataset``
    overrides the records' ``dataset`` field (default: that field, else the file stem); it picks
    the label and error-type tables of ``hallumeasure.core.subtype_maps``. ``label_values`` adds
    label spellings (``{"hallucinated": 1, "faithful": 0}``) to 0/1/true/false/yes/no.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"labelled data file {path} does not exist")
    unknown = set(columns or {}) - set(FIELDS)
    if unknown:
        raise InputError(f"unknown field(s) in the column map: {sorted(unknown)}; fields are {list(FIELDS)}")
    mapping = {name: name for name in FIELDS} | dict(columns or {})
    fmt = fmt or {".csv": "csv", ".tsv": "csv", ".parquet": "parquet"}.get(path.suffix.lower(), "jsonl")
    values = {str(k).strip().lower(): int(v) for k, v in (label_values or {}).items()}
    samples: list[LabelledSample] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, record in read_rows(path, fmt, delimiter if fmt == "csv" else None):
        if isinstance(record, str):
            problems.append(f"row {number}: {record}")
            continue
        try:
            sample = _to_labelled(record, mapping, number, dataset, path.stem, values, csv_cells=fmt != "jsonl")
        except ValueError as exc:
            rid = record.get(mapping["id"])
            problems.append(f"row {number}{f' (id {rid})' if rid not in (None, '') else ''}: {exc}")
            continue
        if sample.id in seen:
            problems.append(f"row {number}: duplicate id {sample.id!r} (first seen at row {seen[sample.id]})")
            continue
        seen[sample.id] = number
        samples.append(sample)
    if problems:
        listed = "\n  ".join(problems[:_MAX_LISTED])
        more = f"\n  ... and {len(problems) - _MAX_LISTED} more" if len(problems) > _MAX_LISTED else ""
        raise InputError(f"{path}: {len(problems)} bad row(s):\n  {listed}{more}")
    if not samples:
        raise InputError(f"{path}: no rows")
    return samples


def _missing(value: Any) -> bool:
    return (
        value is None or (isinstance(value, float) and value != value) or (isinstance(value, str) and not value.strip())
    )


def _text(value: Any) -> str | None:
    return None if _missing(value) else clean_text(str(value))


def _label(value: Any, extra: Mapping[str, int]) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    key = str(value).strip().lower()
    if key in extra:
        return extra[key]
    if key in _TRUE:
        return 1
    if key in _FALSE:
        return 0
    hint = f" or one of {sorted(extra)}" if extra else "; map other spellings with label_values"
    raise ValueError(f"bad label value {value!r}: expected 0 / 1 (1 = hallucinated){hint}")


def _json_cell(value: Any, what: str, csv_cells: bool) -> Any:
    if csv_cells and isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            if what == "error_types":
                return [part.strip() for part in value.split(";") if part.strip()]
            raise ValueError(f"{what} cell is not valid JSON ({exc.msg})") from exc
    return value


def _list_cell(value: Any, what: str, csv_cells: bool, of: str) -> list[Any] | None:
    """A field that holds a list (JSON text in a CSV cell); None when it is empty."""
    if _missing(value):
        return None
    items = _json_cell(value, what, csv_cells)
    if not isinstance(items, list):
        raise ValueError(f"{what} must be a list of {of}")
    return items


def _claims(value: Any, dataset: str, csv_cells: bool) -> tuple[GoldClaim, ...] | None:
    value = _list_cell(value, "claims", csv_cells, "{text, label} objects")
    if value is None:
        return None
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or _missing(item.get("text")) or _missing(item.get("label")):
            raise ValueError(f"claim {i} needs a non-empty text and label")
        raw = item["label"]
        if isinstance(raw, (bool, int)) and int(raw) in (0, 1):  # 1 = unsupported, like the response label
            out.append(GoldClaim(text=clean_text(str(item["text"])), raw_label=str(int(raw)), unsupported=bool(raw)))
            continue
        mapped = claim_label(dataset, str(raw))
        if mapped is None:
            raise ValueError(
                f"claim {i} has unknown label {raw!r} for dataset {dataset!r}; "
                "add it to hallumeasure/core/subtype_maps.py CLAIM_LABEL_MAPS or use our label names"
            )
        out.append(
            GoldClaim(
                text=clean_text(str(item["text"])),
                raw_label=str(raw),
                label=mapped.label,
                unsupported=mapped.unsupported,
            )
        )
    return tuple(out)


def _to_labelled(
    record: dict[str, Any],
    mapping: Mapping[str, str],
    number: int,
    override: str | None,
    default_dataset: str,
    label_values: Mapping[str, int],
    *,
    csv_cells: bool,
) -> LabelledSample:
    get = {f: record.get(col) for f, col in mapping.items()}
    absent = [f"{f} (column {mapping[f]!r})" for f in REQUIRED if mapping[f] not in record]
    if absent:
        raise ValueError(f"missing {', '.join(absent)}; columns present: {sorted(record)[:20]}")
    if _missing(get["context"]):
        raise ValueError("the context is empty")
    if get["response"] is None:
        raise ValueError("the response is missing")
    if _missing(get["label"]):
        raise ValueError("the label is empty")
    dataset = override or (default_dataset if _missing(get["dataset"]) else str(get["dataset"]))
    error_types = _list_cell(get["error_types"], "error_types", csv_cells, "names (or null)")
    meta = _json_cell(get["meta"], "meta", csv_cells) if not _missing(get["meta"]) else {}
    if not isinstance(meta, dict):
        raise ValueError("meta must be an object")
    extra = {k: v for k, v in record.items() if k not in set(mapping.values()) and not _missing(v)}
    try:
        return LabelledSample(
            id=_text(get["id"]) or f"{dataset}-row{number}",
            dataset=dataset,
            split=_text(get["split"]),
            context=clean_text(str(get["context"])),
            response=clean_text(str(get["response"])) if not _missing(get["response"]) else "",
            question=_text(get["question"]),
            model=_text(get["model"]),
            label=_label(get["label"], label_values),
            claims=_claims(get["claims"], dataset, csv_cells),
            error_types=tuple(str(e) for e in error_types) if error_types is not None else None,
            meta={**extra, **meta},
            spans=_spans(get["spans"], str(get["response"] or ""), csv_cells),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None


def _spans(value: Any, response: str, csv_cells: bool) -> tuple[GoldSpan, ...] | None:
    """The ``spans`` field: ``[{"start", "end", "text"?, "label"?}]`` over the response as written."""
    items = _list_cell(value, "spans", csv_cells, "{start, end} objects")
    if items is None:
        return None
    cleaned = clean_text(response)
    out = []
    for item in items:
        if not isinstance(item, dict) or not {"start", "end"} <= set(item):
            raise ValueError(f"a span must be an object with start and end; got {item!r}")
        start, end = int(item["start"]), int(item["end"])
        if not 0 <= start < end <= len(response):
            raise ValueError(f"span [{start}, {end}) lies outside the {len(response)}-character response")
        if item.get("text") is not None and response[start:end] != item["text"]:
            raise ValueError(f"span [{start}, {end}) holds {response[start:end]!r}, not {item['text']!r}")
        if cleaned != response:
            start, end = carried(start, end, response, cleaned)
        if end > start:
            label = item.get("label")
            out.append(
                GoldSpan(start=start, end=end, text=cleaned[start:end], label=None if label is None else str(label))
            )
    return tuple(out)


def carried(start: int, end: int, old: str, new: str) -> tuple[int, int]:
    """``[start, end)`` of ``old`` as offsets into ``new`` (the same text after cleaning)."""
    if old == new:
        return start, end
    mapping: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        for k in range(i1, i2 + 1):
            mapping.setdefault(k, j1 + min(k - i1, j2 - j1) if tag != "delete" else j1)
    return mapping.get(start, len(new)), mapping.get(end, len(new))


#: The environment variable naming the folder of the labelled sets (``bump`` -> ``$HALLUMEASURE_DATA/bump.jsonl``).
DATA_ENV = "HALLUMEASURE_DATA"


def data_dir(data: str | Path | None = None) -> Path | None:
    """The folder of the labelled sets: ``data`` when given, else ``$HALLUMEASURE_DATA``; None when neither is set."""
    chosen = data if data is not None else os.environ.get(DATA_ENV) or None
    return Path(chosen) if chosen is not None else None


def resolve_dataset(name_or_path: str | Path, *, data: str | Path | None = None) -> Path:
    """A file path as given, or the set of that name in the data folder (``bump`` -> ``<data>/bump.jsonl``).

    The folder is ``data`` when given, else ``$HALLUMEASURE_DATA`` (see the module docstring).
    """
    path = Path(name_or_path)
    if path.exists():
        return path
    base = data_dir(data)
    if base is None:
        raise InputError(
            f"no labelled data file {name_or_path!r}, and no data folder to find a set of that name in: give the "
            f"folder (bench --data DIR, or data= in Python) or set {DATA_ENV}=DIR (a clone's sets are in "
            f"../shared/data); shared sets are {', '.join(SHARED_SETS)}"
        )
    if not base.is_dir():
        source = "given" if data is not None else f"from {DATA_ENV}"
        raise InputError(f"the data folder {base} ({source}) is not a folder; give the folder of the labelled sets")
    if (base / f"{name_or_path}.jsonl").exists():
        return base / f"{name_or_path}.jsonl"
    raise InputError(f"no labelled data file {name_or_path!r} or in {base}; shared sets are {', '.join(SHARED_SETS)}")


def subsample(samples: Sequence[LabelledSample], n: int | None, *, seed: int = 13) -> list[LabelledSample]:
    """At most ``n`` samples, drawn per label in proportion (stratified), file order kept; all when n is None."""
    if n is None or n >= len(samples):
        return list(samples)
    rng = random.Random(seed)
    by_label: dict[int, list[int]] = {}
    for i, s in enumerate(samples):
        by_label.setdefault(s.label, []).append(i)
    keep: list[int] = []
    remaining = n
    groups = sorted(by_label.items())
    for k, (_, idx) in enumerate(groups):
        share = remaining if k == len(groups) - 1 else round(n * len(idx) / len(samples))
        share = min(share, len(idx), remaining)
        keep += rng.sample(idx, share)
        remaining -= share
    return [samples[i] for i in sorted(keep)]
