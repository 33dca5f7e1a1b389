"""An audit of runs read as columns (``Run.load_columns``) gives the very audit of the runs read whole."""

import importlib.util
import sqlite3

import pytest
from report.helpers import measure_offline, sample, write_run
from report.test_audit_judge_error import write_answers

from hallumeasure.report.audit import audit_runs, load_for_audit
from hallumeasure.runs.inputs import key_samples
from hallumeasure.runs.run import Run


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
