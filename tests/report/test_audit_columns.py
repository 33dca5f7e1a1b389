"""An audit of runs read as columns (``Run.load_columns``) gives the very audit of the runs read whole."""

import importlib.util
import sqlite3

import pandas as pd
import pytest
from report.helpers import measure_offline, sample, write_run
from report.test_audit_judge_error import write_answers

from hallumeasure.core.sample_features import style, task_key
from hallumeasure.report.audit import audit_runs, load_for_audit
from hallumeasure.runs.inputs import key_samples
from hallumeasure.runs.run import Run
from hallumeasure.runs.store import RunStore


def _rows(unsupported: int, n: int, *, errors: int = 0, models: tuple[str | None, ...] = ("m",)):
    """Samples of four claims each; several models share each id (keyed by (id, model), as ``measure`` keys them)."""
    specs = [("contradicted", "number")] * unsupported + ["error"] * errors
    specs += ["supported"] * (4 - len(specs))
    samples = key_samples([sample(i, model) for i in range(n) for model in models])
    return [(s, [(f"Claim {j} about {s.id}.", spec) for j, spec in enumerate(specs)]) for s in samples]


def _same_audit(base, cur, **options) -> None:
    whole = audit_runs(Run.load(base), Run.load(cur), resamples=200, **options)
    columns = audit_runs(base, cur, resamples=200, **options)
    assert columns.model_dump_json() == whole.model_dump_json()


def test_a_regression_with_error_rows_reads_the_same_from_columns(tmp_path):
    base = write_run(tmp_path / "base", _rows(0, 40))
    cur = write_run(tmp_path / "cur", _rows(2, 40, errors=1))
    _same_audit(base, cur)


def test_several_models_sharing_ids_read_the_same_from_columns(tmp_path):
    base = write_run(tmp_path / "base", _rows(1, 30, models=("a", "b")))
    cur = write_run(tmp_path / "cur", _rows(1, 30, models=("a", "b")))
    _same_audit(base, cur, baseline_model="a", current_model="b")
    _same_audit(base, cur)


def test_runs_over_other_samples_read_the_same_from_columns(tmp_path):
    base = write_run(tmp_path / "base", _rows(0, 30))
    cur = write_run(tmp_path / "cur", _rows(1, 30, models=(None,))[5:])
    _same_audit(base, cur, allow_mismatch=True)


@pytest.mark.skipif(importlib.util.find_spec("hallumeasure.judges.offline") is None, reason="needs the offline judge")
def test_a_keyless_run_with_unsure_claims_reads_the_same_from_columns(tmp_path):
    faithful, planted = write_answers(tmp_path / "answers")
    base = measure_offline(faithful, tmp_path / "faithful")
    cur = measure_offline(planted, tmp_path / "planted")
    read = load_for_audit(cur)
    assert read.columns_only and read.results == [] and read.responses["n_unsure_claims"].sum() > 0
    _same_audit(base, cur)


def test_a_run_stored_before_decisions_is_read_whole_and_audits_the_same(tmp_path):
    base = write_run(tmp_path / "base", _rows(0, 30))
    cur = write_run(tmp_path / "cur", _rows(1, 30))
    with sqlite3.connect(cur / "run.sqlite") as db:  # as a run written before decisions were stored
        db.execute("UPDATE results SET decided = NULL, unsupported_rate_low = NULL, unsupported_rate_high = NULL")
    assert not load_for_audit(cur).columns_only and load_for_audit(base).columns_only
    _same_audit(base, cur)


def test_the_stored_sample_features_are_those_of_the_texts(tmp_path):
    run = write_run(tmp_path / "run", _rows(1, 12, models=("a", None)))
    with RunStore(run) as store:
        read = pd.concat(list(store.response_columns(5)), ignore_index=True)
        texts = pd.read_sql_query("SELECT context, question, response FROM samples ORDER BY position", store.db)
    assert read[["question", "context", "response"]].isna().all().all()  # no text is read where features are stored
    worked = [style(r, c) for r, c in zip(texts["response"], texts["context"], strict=True)]
    assert read["task_key"].tolist() == [
        task_key(c, q) for c, q in zip(texts["context"], texts["question"], strict=True)
    ]
    assert read["style_words"].tolist() == [w for w, _, _ in worked]
    assert read["response_hash"].tolist() == [h for _, _, h in worked]
    assert read["style_overlap"].tolist() == pytest.approx([o for _, o, _ in worked], nan_ok=True)


def test_runs_stored_before_sample_features_audit_the_same(tmp_path):
    base = write_run(tmp_path / "base", _rows(0, 30))
    cur = write_run(tmp_path / "cur", _rows(2, 30, errors=1))
    stored = audit_runs(base, cur, resamples=200)
    with sqlite3.connect(cur / "run.sqlite") as db:  # as a run written before features were stored
        db.execute("DROP TABLE sample_features")
    with sqlite3.connect(base / "run.sqlite") as db:  # and one resumed since: features for some samples only
        db.execute("DELETE FROM sample_features WHERE rowid % 3 = 0")
    assert audit_runs(base, cur, resamples=200).model_dump_json() == stored.model_dump_json()
    _same_audit(base, cur)
