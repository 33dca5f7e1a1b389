"""Passages as input: ``contexts`` (or ragas' ``retrieved_contexts``) in JSONL, CSV and Parquet."""

import csv
import json

import pandas as pd
import pytest

from hallumeasure.core.errors import InputError
from hallumeasure.core.types import Passage, Sample
from hallumeasure.runs.inputs import load_samples

PASSAGES = [
    {"id": "doc-a", "text": "The bridge is 24 km long.", "title": "Bridge", "url": "https://example.org/b"},
    {"text": "It opened in 2019."},
]


def _jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_jsonl_contexts_of_strings_and_objects_with_default_ids(tmp_path):
    loaded = load_samples(
        _jsonl(
            tmp_path / "in.jsonl",
            [
                {"id": "s", "contexts": ["First passage.", "Second passage."], "response": "R."},
                {"id": "o", "contexts": PASSAGES, "response": "R."},
            ],
        )
    )
    strings, objects = loaded.samples
    assert [(p.id, p.text) for p in strings.passages] == [("1", "First passage."), ("2", "Second passage.")]
    assert objects.passages == (
        Passage(id="doc-a", text="The bridge is 24 km long.", title="Bridge", url="https://example.org/b"),
        Passage(id="2", text="It opened in 2019."),
    )
    assert objects.context == "The bridge is 24 km long.\n\nIt opened in 2019."  # stages that read one text


def test_a_single_context_is_one_passage_and_stores_no_passages(tmp_path):
    (sample,) = load_samples(_jsonl(tmp_path / "in.jsonl", [{"id": "a", "context": "C.", "response": "R."}])).samples
    assert sample.passages == () and sample.sources == (Passage(id="1", text="C."),)


def test_ragas_column_names_are_recognised(tmp_path):
    rows = [
        {
            "user_input": "How long is it?",
            "retrieved_contexts": ["The bridge is 24 km long."],
            "response": "It is 24 km long.",
            "reference": "24 km",
        }
    ]
    (sample,) = load_samples(_jsonl(tmp_path / "in.jsonl", rows)).samples
    assert sample.question == "How long is it?" and sample.passages[0].text == "The bridge is 24 km long."


def test_a_column_map_names_the_passages_column_and_wins_over_the_alias(tmp_path):
    rows = [{"docs": ["Mapped."], "retrieved_contexts": ["Alias."], "answer": "R."}]
    (sample,) = load_samples(
        _jsonl(tmp_path / "in.jsonl", rows), columns={"contexts": "docs", "response": "answer"}
    ).samples
    assert [p.text for p in sample.passages] == ["Mapped."]


def test_csv_contexts_are_a_json_encoded_column(tmp_path):
    path = tmp_path / "in.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "retrieved_contexts", "response"])
        writer.writerow(["a", json.dumps(PASSAGES), "R."])
        writer.writerow(["b", "not json", "R."])
    loaded = load_samples(path)
    assert [p.id for p in loaded.samples[0].passages] == ["doc-a", "2"]
    assert loaded.problems[0].row == 3 and "JSON list of passages" in loaded.problems[0].message


def test_parquet_contexts_are_a_list_column_of_strings_or_structs(tmp_path):
    strings, structs = tmp_path / "strings.parquet", tmp_path / "structs.parquet"
    pd.DataFrame({"id": ["a"], "contexts": [["One.", "Two."]], "response": ["R."]}).to_parquet(strings)
    pd.DataFrame({"id": ["b"], "contexts": [PASSAGES], "response": ["R."]}).to_parquet(structs)
    (a,) = load_samples(strings).samples
    (b,) = load_samples(structs).samples
    assert [p.text for p in a.passages] == ["One.", "Two."]
    assert b.passages == (
        Passage(id="doc-a", text="The bridge is 24 km long.", title="Bridge", url="https://example.org/b"),
        Passage(id="2", text="It opened in 2019."),
    )


@pytest.mark.parametrize(
    ("contexts", "message"),
    [
        ([], "contexts list is empty"),
        (["", "  "], "contexts list is empty"),
        ([{"id": "1", "text": "A."}, {"id": "1", "text": "B."}], "passage ids repeat within the row: ['1']"),
        ([{"text": "A.", "body": "x"}], "unknown field(s) ['body']"),
        ({"text": "A."}, "must be a list of passages, not dict"),
        ([["nested"]], "must be text, not a list"),
    ],
)
def test_bad_passages_are_row_problems_that_say_why(tmp_path, contexts, message):
    path = _jsonl(
        tmp_path / "in.jsonl",
        [{"id": "ok", "context": "C.", "response": "R."}, {"id": "bad", "contexts": contexts, "response": "R."}],
    )
    loaded = load_samples(path)
    assert [s.id for s in loaded.samples] == ["ok"]
    assert loaded.problems[0].row == 2 and message in loaded.problems[0].message


def test_a_file_with_neither_context_nor_contexts_names_both(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("id,response\na,R.\n", encoding="utf-8")
    with pytest.raises(InputError, match="context \\(column 'context'\\) or contexts \\(column 'contexts'\\)"):
        load_samples(path)


def test_a_sample_refuses_repeated_passage_ids():
    with pytest.raises(ValueError, match="passage ids must be unique"):
        Sample(id="a", response="R.", passages=(Passage(id="1", text="A."), Passage(id="1", text="B.")))
