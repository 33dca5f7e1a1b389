"""Span truth from RAGTruth's layout, Mu-SHROOM's labels and the shared schema's spans field."""

import json

import pytest

from hallumeasure.core.errors import InputError
from hallumeasure.runs.datasets import load_labelled
from hallumeasure.runs.span_sets import load_any, load_span_set

ANSWER = "Lisbon is the capital of Spain. It has 500,000 people."


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_ragtruth_layout(tmp_path):
    _jsonl(
        tmp_path / "source_info.jsonl",
        [
            {
                "source_id": "s1",
                "task_type": "QA",
                "source_info": {"question": "Where is Lisbon?", "passages": "Lisbon is the capital of Portugal."},
            },
            {"source_id": "s2", "task_type": "Summary", "source_info": "A text."},
        ],
    )
    label = {
        "start": 25,
        "end": 30,
        "text": "Spain",
        "label_type": "Evident Conflict",
        "meta": "",
        "due_to_null": False,
    }
    _jsonl(
        tmp_path / "response.jsonl",
        [
            {"id": "1", "source_id": "s1", "model": "m", "labels": [label], "split": "test", "response": ANSWER},
            {"id": "2", "source_id": "s2", "model": "m", "labels": [], "split": "train", "response": "A text."},
        ],
    )
    first, second = load_span_set(tmp_path)
    assert (first.question, first.context, first.label) == ("Where is Lisbon?", "Lisbon is the capital of Portugal.", 1)
    (span,) = first.spans
    assert (span.text, span.label) == ("Spain", "Evident Conflict") and ANSWER[span.start : span.end] == "Spain"
    assert second.spans == () and second.label == 0
    assert load_any(tmp_path)[0].id == "1"


def test_ragtruth_span_that_does_not_hold_its_text_is_refused(tmp_path):
    _jsonl(tmp_path / "source_info.jsonl", [{"source_id": "s1", "source_info": "x"}])
    bad = {"start": 0, "end": 5, "text": "Spain", "label_type": "Evident Conflict"}
    _jsonl(tmp_path / "response.jsonl", [{"id": "1", "source_id": "s1", "labels": [bad], "response": ANSWER}])
    with pytest.raises(InputError, match="holds 'Lisbo'"):
        load_span_set(tmp_path)


def test_mushroom_hard_and_soft_labels(tmp_path):
    path = _jsonl(
        tmp_path / "val.jsonl",
        [
            {
                "id": "val-en-1",
                "lang": "EN",
                "model_input": "What is the capital of Portugal?",
                "model_output_text": ANSWER,
                "hard_labels": [[25, 30]],
                "soft_labels": [{"start": 25, "end": 30, "prob": 0.8}, {"start": 39, "end": 46, "prob": 0.2}],
            }
        ],
    )
    (sample,) = load_any(path)
    (span,) = sample.spans
    assert (span.text, span.probability, sample.question, sample.context) == (
        "Spain",
        0.8,
        "What is the capital of Portugal?",
        "",
    )


def test_shared_schema_spans_field(tmp_path):
    path = _jsonl(
        tmp_path / "mine.jsonl",
        [
            {
                "id": "a",
                "context": "c",
                "response": ANSWER,
                "label": 1,
                "spans": [{"start": 25, "end": 30, "text": "Spain"}],
            },
            {"id": "b", "context": "c", "response": ANSWER, "label": 0, "spans": []},
            {"id": "c", "context": "c", "response": ANSWER, "label": 0},
        ],
    )
    a, b, c = load_labelled(path)
    assert [s.text for s in a.spans] == ["Spain"] and b.spans == () and c.spans is None
    assert [s.id for s in load_span_set(path)] == ["a", "b"]
    _jsonl(path, [{"id": "a", "context": "c", "response": ANSWER, "label": 1, "spans": [{"start": 50, "end": 99}]}])
    with pytest.raises(InputError, match="outside"):
        load_labelled(path)


def test_spans_follow_text_cleaning(tmp_path):
    raw = "Cafe\u0301 Lisbon\x00 is in Spain."  # NFC joins e + accent; the NUL goes
    start = raw.index("Spain")
    path = _jsonl(
        tmp_path / "x.jsonl",
        [{"id": "a", "context": "c", "response": raw, "label": 1, "spans": [{"start": start, "end": start + 5}]}],
    )
    (sample,) = load_labelled(path)
    (span,) = sample.spans
    assert span.text == "Spain" and sample.response[span.start : span.end] == "Spain"
