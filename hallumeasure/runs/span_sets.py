"""Span-labelled data: which characters of each response a human marked as hallucinated.

Three layouts are read into ``LabelledSample`` with ``spans`` set:

* the shared JSONL schema with a ``spans`` field: ``[{"start", "end", "text"?, "label"?}]`` over ``response``
  (``load_labelled`` reads it; an empty list means "annotated, nothing marked");
* RAGTruth: a folder with ``response.jsonl`` (``labels``: ``{start, end, text, label_type}``) and
  ``source_info.jsonl`` (``source_info``: the passages, a question with passages, or a data record);
* SemEval-2025 Mu-SHROOM: JSONL with ``model_output_text``, ``hard_labels`` (``[[start, end], ...]``) and
  ``soft_labels`` (``[{start, end, prob}]``); it has no source text, so give one in a ``context`` field
  (else the context is empty and a judge can only call every claim absent).

Offsets point into the response as stored. Where text cleaning (NFC, control characters) changes a
response, spans are carried over to the cleaned text; a span outside its response is an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from hallumeasure.core.errors import InputError
from hallumeasure.core.text import clean_text
from hallumeasure.runs.datasets import GoldSpan, LabelledSample, carried, load_labelled

RAGTRUTH_FILES = ("response.jsonl", "source_info.jsonl")
#: A span as a file gives it: start, end, its text and label type when given, its annotators' share when given.
_Raw = tuple[int, int, str | None, str | None, float | None]


def load_span_set(path: str | Path) -> list[LabelledSample]:
    """Span-labelled samples from a RAGTruth folder, a Mu-SHROOM file, or a shared-schema file with ``spans``."""
    path = Path(path)
    if path.is_dir():
        if all((path / name).exists() for name in RAGTRUTH_FILES):
            return load_ragtruth(path)
        raise InputError(f"{path} is a folder without RAGTruth's {' and '.join(RAGTRUTH_FILES)}")
    if not path.exists():
        raise InputError(f"span-labelled data file {path} does not exist")
    first = next(_records(path), None)
    if first is not None and "model_output_text" in first:
        return load_mushroom(path)
    samples = load_labelled(path)
    if not any(s.spans is not None for s in samples):
        raise InputError(f"{path}: no record has a 'spans' field, so there is no span truth to score against")
    return [s for s in samples if s.spans is not None]


def load_any(path: str | Path, *, columns: Mapping[str, str] | None = None) -> list[LabelledSample]:
    """A labelled set in any layout ``bench`` reads: a RAGTruth folder, a Mu-SHROOM file, or the shared schema
    (whose records may carry ``spans``)."""
    path = Path(path)
    if path.is_dir():
        return load_span_set(path)
    if path.exists() and path.suffix.lower() in ("", ".jsonl", ".json") and not columns:
        first = next(_records(path), None)
        if first is not None and "model_output_text" in first:
            return load_mushroom(path)
    return load_labelled(path, columns=columns)


def load_ragtruth(folder: str | Path, *, split: str | None = None) -> list[LabelledSample]:
    """RAGTruth's ``response.jsonl`` joined with ``source_info.jsonl`` on ``source_id``."""
    folder = Path(folder)
    sources = {str(r["source_id"]): r for r in _records(folder / "source_info.jsonl")}
    out = []
    for number, r in enumerate(_records(folder / "response.jsonl"), start=1):
        if split is not None and r.get("split") != split:
            continue
        source = sources.get(str(r.get("source_id")))
        if source is None:
            raise InputError(
                f"{folder}/response.jsonl row {number}: source_id {r.get('source_id')!r} is not in source_info.jsonl"
            )
        context, question = _ragtruth_source(source)
        labels = r.get("labels") or []
        spans: list[_Raw] = [(int(x["start"]), int(x["end"]), x.get("text"), x.get("label_type"), None) for x in labels]
        out.append(
            _sample(
                sample_id=str(r.get("id", number)),
                dataset="ragtruth",
                split=r.get("split"),
                context=context,
                question=question,
                response=str(r["response"]),
                model=r.get("model"),
                spans=spans,
                meta={"task_type": source.get("task_type"), "source_id": source.get("source_id")},
                where=f"{folder}/response.jsonl row {number}",
            )
        )
    return out


def load_mushroom(path: str | Path) -> list[LabelledSample]:
    """Mu-SHROOM's records: ``hard_labels`` become the spans, ``soft_labels`` their probabilities."""
    path = Path(path)
    out = []
    for number, r in enumerate(_records(path), start=1):
        soft = r.get("soft_labels") or []
        spans: list[_Raw] = []
        for start, end in r.get("hard_labels") or []:
            probs = [s["prob"] for s in soft if s["start"] < end and s["end"] > start]
            spans.append((int(start), int(end), None, None, max(probs) if probs else None))
        out.append(
            _sample(
                sample_id=str(r.get("id", number)),
                dataset="mushroom",
                split=None,
                context=str(r.get("context") or ""),
                question=r.get("model_input"),
                response=str(r["model_output_text"]),
                model=r.get("model_id"),
                spans=spans,
                meta={"lang": r.get("lang"), "soft_labels": soft},
                where=f"{path} row {number}",
            )
        )
    return out


def _ragtruth_source(source: dict[str, Any]) -> tuple[str, str | None]:
    info = source.get("source_info")
    if isinstance(info, str):
        return info, None
    if isinstance(info, dict) and "passages" in info:
        return str(info["passages"]), info.get("question")
    return json.dumps(info, ensure_ascii=False, indent=1), None  # Data2txt: the structured record itself


def _sample(
    *,
    sample_id: str,
    dataset: str,
    split: str | None,
    context: str,
    question: str | None,
    response: str,
    model: str | None,
    spans: list[_Raw],
    meta: dict[str, Any],
    where: str,
) -> LabelledSample:
    cleaned = clean_text(response)
    gold = []
    for start, end, text, label, prob in spans:
        if not 0 <= start <= end <= len(response):
            raise InputError(f"{where}: span [{start}, {end}) lies outside the {len(response)}-character response")
        if text is not None and response[start:end] != text:
            raise InputError(f"{where}: span [{start}, {end}) holds {response[start:end]!r}, not {text!r}")
        start, end = carried(start, end, response, cleaned)
        if end > start:
            gold.append(GoldSpan(start=start, end=end, text=cleaned[start:end], label=label, probability=prob))
    return LabelledSample(
        id=sample_id,
        dataset=dataset,
        split=split,
        context=clean_text(context),
        question=question,
        response=cleaned,
        model=model,
        label=int(bool(gold)),
        spans=tuple(gold),
        meta=meta,
    )


def _records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path} row {number}: not JSON ({exc.msg})") from None
