"""Parquet input (the ``parquet`` extra, installed with ``dev``): same fields, column map and row checks."""

import pandas as pd
import pytest

from hallumeasure.core.errors import InputError
from hallumeasure.runs.inputs import load_samples


def test_parquet_rows_load_with_a_column_map_and_bad_rows_are_reported(tmp_path):
    path = tmp_path / "answers.parquet"
    pd.DataFrame(
        {
            "source": ["The bridge is 24 km long.", "", "Rain fell.", "It opened in 2019."],
            "answer": ["The bridge is 42 km long.", "It opened.", "Rain fell.", ""],
            "id": ["a", "b", "c", "d"],
        }
    ).to_parquet(path)
    loaded = load_samples(path, columns={"context": "source", "response": "answer"})
    assert [s.id for s in loaded.samples] == ["a", "c", "d"]  # an empty answer is a result with no claims
    assert loaded.samples[0].response == "The bridge is 42 km long." and loaded.samples[2].response == ""
    assert [(p.row, p.sample_id) for p in loaded.problems] == [(2, "b")]  # an empty source is a bad row


def test_a_parquet_file_without_a_required_column_is_refused(tmp_path):
    path = tmp_path / "answers.parquet"
    pd.DataFrame({"context": ["x"], "answer": ["y"]}).to_parquet(path)
    with pytest.raises(InputError, match="response"):
        load_samples(path)
