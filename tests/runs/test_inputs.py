import json

import pytest

from hallumeasure.core.errors import InputError
from hallumeasure.runs.inputs import ProblemKind, load_samples, records_to_samples


def _jsonl(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_bad_rows_are_reported_by_row_and_the_rest_load(tmp_path):
    path = _jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": "a", "context": "C.", "response": "R."},
            {"id": "b", "context": "", "response": "R."},
            "{not json",
            {"id": "a", "context": "C.", "response": "R2."},
            {"id": "c", "context": "C\u0000.", "response": "R.\u0007"},
        ],
    )
    loaded = load_samples(path)
    assert [s.id for s in loaded.samples] == ["a", "c"]
    assert loaded.samples[1].context == "C." and loaded.samples[1].response == "R."
    problems = {p.row: p.message for p in loaded.problems}
    assert "context is empty" in problems[2]
    assert "not valid JSON" in problems[3]
    assert "duplicate id 'a'" in problems[4] and "row 1" in problems[4]
    with pytest.raises(InputError, match="row 2"):
        load_samples(path, strict=True)


def test_invalid_utf8_is_named(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"id": "a", "context": "C", "response": "R"}\n{"id": "b", "context": "\xff", "response": "R"}\n')
    loaded = load_samples(path)
    assert [s.id for s in loaded.samples] == ["a"]
    assert loaded.problems[0].row == 2 and "UTF-8" in loaded.problems[0].message


def test_missing_column_names_the_mapping(tmp_path):
    path = _jsonl(tmp_path / "in.jsonl", [{"id": "a", "source": "C", "answer": "R"}])
    with pytest.raises(InputError, match="--column"):
        load_samples(path)
    loaded = load_samples(path, columns={"context": "source", "response": "answer"})
    assert loaded.samples[0].context == "C" and loaded.samples[0].response == "R"


def test_csv_with_semicolons_and_a_model_default(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text('id;context;response;tags\nx;"The sky, today, is blue.";It is blue.;a,b\n', encoding="utf-8")
    loaded = load_samples(path, model="m1")
    (sample,) = loaded.samples
    assert sample.context == "The sky, today, is blue." and sample.model == "m1" and sample.tags == ("a", "b")
    assert len(loaded.sha256) == 64


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_samples(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no usable rows"):
        load_samples(tmp_path / "empty.jsonl")


def test_a_cut_jsonl_line_is_reported_at_its_own_line_and_column(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(
        '{"id": "a", "context": "C.", "response": "R."}\n{"id": "b", "context": "C."\n'
        '{"id": "c", "context": "C.", "response": "R.\n',
        encoding="utf-8",
    )
    problems = {p.row: p.message for p in load_samples(path).problems}
    assert problems[2] == "not valid JSON (Expecting ',' delimiter at column 28)"
    assert problems[3] == "not valid JSON (Unterminated string starting at column 42)"


@pytest.mark.parametrize("delimiter", [",,", "", '"'])
def test_a_delimiter_that_is_not_one_character_is_an_input_error(tmp_path, delimiter):
    path = tmp_path / "in.csv"
    path.write_text("id,context,response\na,C.,R.\n", encoding="utf-8")
    with pytest.raises(InputError, match="delimiter must be one character"):
        load_samples(path, delimiter=delimiter)


@pytest.mark.parametrize("spelling", ["\\t", "tab", "\t"])
def test_a_tab_delimiter_can_be_written_as_a_shell_passes_it(tmp_path, spelling):
    path = tmp_path / "in.csv"
    path.write_text("id\tcontext\tresponse\na\tC, c.\tR.\n", encoding="utf-8")
    assert [s.context for s in load_samples(path, delimiter=spelling).samples] == ["C, c."]


def test_each_problem_carries_its_kind_and_only_a_missing_field_gets_the_column_hint(tmp_path):
    path = _jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": "d", "context": "C."},
            {"id": "e", "context": "C.", "messages": [{"role": "user", "content": "Hi?"}]},
            {"id": "x", "context": "C.", "response": "R."},
            [1, 2],
            {"id": "x", "context": "C.", "response": "Again."},
            {"id": "y", "contexts": "not a list", "response": "R."},
        ],
    )
    kinds = {p.row: p.kind for p in load_samples(path).problems}
    assert kinds == {
        1: ProblemKind.MISSING_FIELD,
        2: ProblemKind.MISSING_FIELD,
        4: ProblemKind.UNREADABLE,
        5: ProblemKind.DUPLICATE,
        6: ProblemKind.INVALID_VALUE,
    }
    # No usable row: the column hint ends the error when the first problem is a missing field, and only then.
    with pytest.raises(InputError, match=r"has no response .*--column field=name"):
        load_samples(_jsonl(tmp_path / "missing.jsonl", [{"id": "a", "context": "C.", "answer": "R."}]))
    with pytest.raises(InputError) as raised:
        load_samples(_jsonl(tmp_path / "empty.jsonl", [{"id": "a", "context": "", "response": "R."}]))
    assert "context is empty" in str(raised.value) and "--column" not in str(raised.value)


def test_records_in_memory_load_as_the_same_lines_of_a_file_do(tmp_path):
    rows = [
        {"id": "a", "context": "C.", "answer": "R."},
        {"id": "b", "context": "", "answer": "R."},
        {"id": "c", "context": "C.", "answer": "R.", "model": "m"},
    ]
    from_file = load_samples(_jsonl(tmp_path / "in.jsonl", rows), columns={"response": "answer"})
    in_memory = records_to_samples(rows, name="<my rows>", columns={"response": "answer"})
    assert in_memory.samples == from_file.samples and in_memory.path == "<my rows>"
    assert [(p.row, p.sample_id, p.message, p.kind) for p in in_memory.problems] == [
        (p.row, p.sample_id, p.message, p.kind) for p in from_file.problems
    ]
    with pytest.raises(InputError, match=r"^<my rows>: row 2 \(id b\): the context is empty"):
        records_to_samples(rows, name="<my rows>", columns={"response": "answer"}, strict=True)
