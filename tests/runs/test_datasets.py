import csv
import json
from pathlib import Path

import pytest

from hallumeasure.core.errors import InputError
from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.subtype_maps import (
    CLAIM_LABEL_MAPS,
    ERROR_TYPE_MAPS,
    claim_label,
    error_type,
    map_error_types,
    normalise_type_name,
)
from hallumeasure.core.types import Sample
from hallumeasure.runs.datasets import (
    SHARED_SETS,
    LabelledSample,
    data_dir,
    load_labelled,
    resolve_dataset,
    subsample,
)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [
    {
        "id": "a",
        "context": "The cat sat.",
        "response": "The cat sat.",
        "label": 0,
        "claims": None,
        "error_types": [],
        "meta": {"k": 1},
    },
    {
        "id": "b",
        "context": "The cat sat.",
        "response": "The dog sat.",
        "question": "Who sat?",
        "label": 1,
        "claims": [{"text": "The dog sat.", "label": "contradicted"}],
        "error_types": ["entity"],
        "meta": {},
    },
]


def test_jsonl_loads_into_labelled_samples(tmp_path: Path) -> None:
    samples = load_labelled(_jsonl(tmp_path / "mine.jsonl", ROWS))
    assert [s.id for s in samples] == ["a", "b"]
    a, b = samples
    assert a.dataset == "mine" and a.label == 0 and a.claims is None and a.error_types == () and a.meta == {"k": 1}
    assert b.question == "Who sat?" and b.error_types == ("entity",)
    (claim,) = b.claims
    assert claim.label == Label.CONTRADICTED and claim.unsupported is True and claim.raw_label == "contradicted"
    sample = b.to_sample()
    assert isinstance(sample, Sample) and sample.id == "b" and sample.question == "Who sat?"
    # The judge never sees gold labels.
    assert "label" not in sample.metadata and "error_types" not in sample.metadata


def test_dataset_name_from_record_or_override(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "x.jsonl", [{**ROWS[0], "dataset": "wice"}])
    assert load_labelled(path)[0].dataset == "wice"
    assert load_labelled(path, dataset="bump")[0].dataset == "bump"


def test_csv_with_column_map_and_label_values(tmp_path: Path) -> None:
    path = tmp_path / "user.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["key", "source", "summary", "verdict", "types", "annotator"])
        writer.writerow(["1", "Paris is in France.", "Paris is in France.", "faithful", "", "ann1"])
        writer.writerow(["2", "Paris is in France.", "Paris is in Spain.", "hallucinated", "entity; number", "ann2"])
        writer.writerow(["3", "Paris is in France.", "Paris, France.", "0", '["other"]', "ann1"])
    samples = load_labelled(
        path,
        columns={"id": "key", "context": "source", "response": "summary", "label": "verdict", "error_types": "types"},
        label_values={"faithful": 0, "Hallucinated": 1},
    )
    assert [s.label for s in samples] == [0, 1, 0]
    assert samples[0].error_types is None
    assert samples[1].error_types == ("entity", "number")
    assert samples[2].error_types == ("other",)
    assert samples[1].meta == {"annotator": "ann2"}  # unmapped columns are kept


def test_csv_claims_cell_holds_json(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "context", "response", "label", "claims", "meta"])
        writer.writerow(["1", "ctx", "resp", "1", json.dumps([{"text": "t", "label": 1}]), '{"m": 2}'])
    (s,) = load_labelled(path)
    assert s.claims[0].unsupported is True and s.claims[0].label is None and s.meta == {"m": 2}


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"id": "a", "context": "c", "label": 0}], r"row 1 \(id a\): missing response"),
        ([{"id": "a", "context": "c", "response": "r", "label": "maybe"}], "bad label value 'maybe'"),
        ([{"id": "a", "context": "c", "response": "r", "label": 2}], "bad label value 2"),
        ([{"id": "a", "context": "", "response": "r", "label": 0}], "context is empty"),
        ([ROWS[0], {**ROWS[1], "id": "a"}], r"row 2: duplicate id 'a' \(first seen at row 1\)"),
        ([{**ROWS[1], "claims": [{"text": "x", "label": "sorta"}]}], "claim 0 has unknown label 'sorta'"),
        ([{**ROWS[1], "claims": [{"text": "", "label": "supported"}]}], "claim 0 needs a non-empty text"),
        ([{**ROWS[1], "error_types": "entity"}], "error_types must be a list"),
    ],
)
def test_bad_rows_are_named(tmp_path: Path, rows: list[dict], message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_labelled(_jsonl(tmp_path / "bad.jsonl", rows))


def test_every_bad_row_is_listed_and_bad_json_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n{not json\n" + json.dumps({**ROWS[1], "label": "x"}) + "\n")
    with pytest.raises(InputError) as info:
        load_labelled(path)
    text = str(info.value)
    assert "2 bad row(s)" in text and "row 2: not valid JSON" in text and "row 3 (id b)" in text


def test_missing_file_and_unknown_column_field(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_labelled(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="unknown field"):
        load_labelled(_jsonl(tmp_path / "a.jsonl", ROWS), columns={"answer": "x"})


def test_claim_label_tables() -> None:
    assert claim_label("wice", "not_supported").unsupported is True
    assert claim_label("wice", "not_supported").label is None
    assert claim_label("wice", "supported").unsupported is False
    assert claim_label("anything", "Partially_Supported").label == Label.PARTIALLY_SUPPORTED
    assert claim_label("anything", "unevaluatable").unsupported is None
    assert claim_label("anything", "sorta") is None
    for table in CLAIM_LABEL_MAPS.values():
        for mapping in table.values():
            assert mapping.label is None or isinstance(mapping.label, Label)


def test_error_type_tables_never_guess() -> None:
    assert normalise_type_name("Intrinsic Entity Error") == "intrinsic entity"
    assert normalise_type_name("extrinsic-entire_sent") == "extrinsic entire sent"
    assert error_type("bump", "Extrinsic Entity").subtype == Subtype.ENTITY
    assert error_type("bump", "Extrinsic Entity Error").label == Label.ABSENT
    assert error_type("bump", "Intrinsic Predicate Error").subtype is None
    assert error_type("cliff", "intrinsic-NP").label == Label.CONTRADICTED
    assert error_type("bump", "Made Up Error") is None
    assert error_type("mine", "temporal").subtype == Subtype.TEMPORAL  # our own names work everywhere
    mapped = map_error_types("bump", ["Coreference Error", "Extrinsic Predicate", "Mystery"])
    assert mapped.subtypes == [Subtype.ENTITY] and mapped.unmapped == ["Extrinsic Predicate"]
    assert mapped.unknown == ["Mystery"] and mapped.single is None
    assert map_error_types("bump", ["Intrinsic Entity Error", "Coreference"]).single == Subtype.ENTITY
    for table in ERROR_TYPE_MAPS.values():
        for key, mapping in table.items():
            assert key == normalise_type_name(key)
            assert mapping.subtype is not None or mapping.note, f"{key}: an unmapped type must say why"


def test_gold_error_types_come_from_meta_for_cliff() -> None:
    s = LabelledSample(
        id="1", dataset="cliff", context="c", response="r", label=1, meta={"aggrefact_error_types": ["extrinsic-NP"]}
    )
    assert s.gold_error_types() == ["extrinsic-NP"]
    assert LabelledSample(id="1", dataset="x", context="c", response="r", label=0).gold_error_types() is None


def test_subsample_is_stratified_and_deterministic(tmp_path: Path) -> None:
    rows = [{"id": str(i), "context": "c", "response": "r", "label": int(i % 4 == 0)} for i in range(100)]
    samples = load_labelled(_jsonl(tmp_path / "s.jsonl", rows))
    part = subsample(samples, 20, seed=1)
    assert len(part) == 20 and sum(s.label for s in part) == 5
    assert part == subsample(samples, 20, seed=1)
    assert [int(s.id) for s in part] == sorted(int(s.id) for s in part)
    assert subsample(samples, None) == samples


def test_resolve_dataset_names_the_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALLUMEASURE_DATA", str(tmp_path))
    _jsonl(tmp_path / "bump.jsonl", ROWS)
    assert resolve_dataset("bump") == tmp_path / "bump.jsonl"
    with pytest.raises(InputError, match="shared sets are"):
        resolve_dataset("nothing-here")


@pytest.mark.parametrize("name", SHARED_SETS)
def test_every_shared_set_loads(shared_data: Path, name: str) -> None:
    path = shared_data / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is not staged")
    samples = load_labelled(path)
    assert samples and all(s.dataset == name for s in samples)
    assert {s.label for s in samples} == {0, 1}
    # Every error-type name of the shared sets is in a table (mapped or unmapped on purpose).
    for s in samples:
        assert not map_error_types(s.dataset, s.gold_error_types() or []).unknown
        for claim in s.claims or ():
            assert claim.unsupported is not None


def test_the_data_folder_comes_from_the_argument_before_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given, from_env = tmp_path / "given", tmp_path / "env"
    for folder in (given, from_env):
        folder.mkdir()
        _jsonl(folder / "bump.jsonl", ROWS)
    monkeypatch.setenv("HALLUMEASURE_DATA", str(from_env))
    assert data_dir() == from_env
    assert data_dir(given) == given
    assert resolve_dataset("bump") == from_env / "bump.jsonl"
    assert resolve_dataset("bump", data=given) == given / "bump.jsonl"
    monkeypatch.delenv("HALLUMEASURE_DATA")
    assert data_dir() is None
    assert resolve_dataset("bump", data=str(given)) == given / "bump.jsonl"


def test_naming_a_set_without_a_data_folder_says_how_to_give_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HALLUMEASURE_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"set HALLUMEASURE_DATA=DIR") as missing:
        resolve_dataset("bump")
    assert "bench --data DIR" in str(missing.value) and "shared sets are" in str(missing.value)
    _jsonl(tmp_path / "mine.jsonl", ROWS)
    assert resolve_dataset(tmp_path / "mine.jsonl") == tmp_path / "mine.jsonl"  # a path needs no folder
    monkeypatch.setenv("HALLUMEASURE_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match=r"nowhere \(from HALLUMEASURE_DATA\) is not a folder"):
        resolve_dataset("bump")


def test_the_library_does_not_guess_a_folder_from_where_it_is_installed() -> None:
    import hallumeasure.runs.datasets as datasets

    source = Path(datasets.__file__).read_text(encoding="utf-8")
    assert "parents[" not in source and "__file__" not in source
