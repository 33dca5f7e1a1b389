"""One row per question and model, the models sharing ids: every place that joins samples uses (id, model)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from report.helpers import sample, write_run
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.errors import InputError
from hallumeasure.report.calibrate import read_labels
from hallumeasure.report.compare import compare_runs
from hallumeasure.report.runs import load_runs, mismatches, model_groups, pair_up, response_units
from hallumeasure.report.viewer import build_viewer_data
from hallumeasure.runs.inputs import key_samples, load_samples
from hallumeasure.runs.run import load_run
from hallumeasure.runs.store import RunStore

CONTEXT = "The bridge is 24 km long. It opened in 2019. The mayor praised the builders."


def _rows(n: int = 4) -> list[dict[str, str]]:
    rows = []
    for i in range(n):
        rows.append({"id": f"q{i}", "model": "model-a", "context": CONTEXT, "response": "The bridge is 24 km long."})
        rows.append({"id": f"q{i}", "model": "model-b", "context": CONTEXT, "response": "The bridge is 42 km long."})
    return rows


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_shared_ids_across_models_load_every_row():
    loaded = key_samples([sample(0, "model-a", id="q0"), sample(0, "model-b", id="q0"), sample(1, "model-a", id="q1")])
    assert [s.id for s in loaded] == ["q0@model-a", "q0@model-b", "q1"]
    assert [s.given_id for s in loaded] == ["q0", "q0", "q1"]
    assert [s.model for s in loaded] == ["model-a", "model-b", "model-a"]


def test_loader_keeps_both_models_and_names_a_repeated_pair_with_its_rows_and_a_fix(tmp_path):
    rows = _rows(2)
    rows.append({"id": "q1", "model": "model-b", "context": CONTEXT, "response": "Again."})
    loaded = load_samples(_jsonl(tmp_path / "in.jsonl", rows))
    assert len(loaded.samples) == 4
    assert {(s.given_id, s.model) for s in loaded.samples} == {
        (f"q{i}", m) for i in range(2) for m in ("model-a", "model-b")
    }
    (problem,) = loaded.problems
    assert problem.row == 5 and "model 'model-b' (first seen at row 4)" in problem.message
    assert "model-b" in problem.message and "unique id per model" in problem.message
    assert "add a model column" in problem.message


def test_the_same_id_and_model_twice_is_refused_by_the_library_with_a_fix():
    with pytest.raises(InputError, match=r"'q0' with model 'model-a' appears twice \(positions 0 and 2\).*per model"):
        key_samples([sample(0, "model-a", id="q0"), sample(0, "model-b", id="q0"), sample(1, "model-a", id="q0")])


def test_a_key_that_clashes_with_another_id_is_refused():
    with pytest.raises(InputError, match="q0@model-a"):
        key_samples([sample(0, "model-a", id="q0"), sample(0, "model-b", id="q0"), sample(1, id="q0@model-a")])


def test_measure_and_resume_keep_both_models(tmp_path):
    path = _jsonl(tmp_path / "in.jsonl", _rows(3))
    out = tmp_path / "run"
    args = ["measure", str(path), "--out", str(out), "--extractor", "fake", "--judge", "fake"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    data = load_run(out)
    assert len(data.responses) == 6 and data.responses["n_claims"].notna().all()
    assert sorted(set(data.responses["model"])) == ["model-a", "model-b"]
    assert list(data.responses["input_id"]) == ["q0", "q0", "q1", "q1", "q2", "q2"]
    # Resume after losing one model's result: only that one is measured again.
    with sqlite3.connect(out / "run.sqlite") as db:
        db.execute("DELETE FROM results WHERE sample_id = 'q1@model-b'")
    again = CliRunner().invoke(app, [*args, "--resume"])
    assert again.exit_code == 0, again.output
    manifest = load_run(out).manifest
    assert manifest is not None and manifest.counts["measured_now"] == 1 and manifest.counts["results"] == 6


def _shared_run(path, worse: int = 3):
    rows = []
    for i in range(6):
        a = sample(i, "model-a", id=f"q{i}")
        b = sample(i, "model-b", id=f"q{i}", response="Something else.")
        rows.append((a, [("Claim.", "supported")]))
        rows.append((b, [("Claim.", ("contradicted", "number") if i < worse else "supported")]))
    keyed = key_samples([s for s, _ in rows])
    return write_run(path, [(k, specs) for k, (_, specs) in zip(keyed, rows, strict=True)])


def test_compare_pairs_the_models_of_one_run_on_their_shared_ids(tmp_path):
    runs = load_runs([_shared_run(tmp_path / "run")])
    units = {r.name: response_units(r) for r in runs}
    a, b = model_groups(runs, units)
    pa, pb, how = pair_up(a.units, b.units)
    assert how == "same sample id" and len(pa) == len(pb) == 6
    report = compare_runs([tmp_path / "run"], tmp_path / "out", resamples=200)
    (comparison,) = report.comparisons
    assert comparison.paired and comparison.n_shared == 6
    assert comparison.unsupported_rate.diff.value == pytest.approx(0.5)


def test_a_run_keyed_by_pairs_has_the_same_inputs_as_runs_of_one_model(tmp_path):
    both = _shared_run(tmp_path / "both")
    only_a = write_run(
        tmp_path / "a", [(sample(i, "model-a", id=f"q{i}"), [("Claim.", "supported")]) for i in range(6)]
    )
    runs = load_runs([both, only_a])
    assert response_units(runs[0])["input_id"].tolist()[:2] == ["q0", "q0"]
    assert mismatches(runs) == []  # measured alike, so any inputs may be compared


def test_calibrate_joins_labels_by_id_and_model(tmp_path):
    data = load_run(_shared_run(tmp_path / "run"))
    labels = tmp_path / "labels.csv"
    labels.write_text("sample_id,model,hallucinated\nq0,model-b,yes\nq0,model-a,no\n", encoding="utf-8")
    human = read_labels(labels, data)
    assert human.responses == {"q0@model-b": True, "q0@model-a": False} and not human.unmatched


def test_viewer_shows_the_written_id_and_pairs_runs_by_id_and_model(tmp_path):
    first, second = _shared_run(tmp_path / "r1"), _shared_run(tmp_path / "r2", worse=0)
    view = build_viewer_data(load_runs([first, second]))
    assert {r.sample_id for r in view.responses} == {f"q{i}" for i in range(6)}
    assert len({r.key for r in view.responses}) == 24
    assert view.pairing is not None and view.pairing.n_shared == 12
    for r in view.responses:
        partner = next(x for x in view.responses if x.key == r.pair)
        assert (partner.sample_id, partner.model) == (r.sample_id, r.model)


def test_runs_written_before_keying_load_and_join_by_id(tmp_path):
    path = write_run(tmp_path / "old", [(sample(i, "m"), [("Claim.", "supported")]) for i in range(3)])
    with sqlite3.connect(path / "run.sqlite") as db:
        db.execute("DROP TABLE input_ids")
    data = load_run(path)
    assert list(data.responses["input_id"]) == ["s0", "s1", "s2"]
    with RunStore(path) as store:
        assert [s.given_id for s in store.samples()] == ["s0", "s1", "s2"]


def test_the_readme_model_comparison_example_keeps_every_model(tmp_path):
    from testdata import REPO

    path = REPO / "examples" / "models.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len({r["id"] for r in rows}) < len(rows)  # the models share the questions' ids
    out = tmp_path / "run"
    measured = CliRunner().invoke(
        app, ["measure", str(path), "--out", str(out), "--extractor", "fake", "--judge", "fake"]
    )
    assert measured.exit_code == 0, measured.output
    assert len(load_run(out).responses) == len(rows)
    compared = CliRunner().invoke(
        app, ["compare", str(out), "--baseline", "model-a", "--out", str(tmp_path / "cmp"), "--resamples", "200"]
    )
    assert compared.exit_code == 0, compared.output
    report = json.loads((tmp_path / "cmp" / "report.json").read_text(encoding="utf-8"))
    assert report["baseline"] == "model-a"
    assert [(c["a"], c["b"], c["n_shared"]) for c in report["comparisons"]] == [
        ("model-a", "model-b", 4),
        ("model-a", "model-c", 4),
    ]


def test_audit_of_two_runs_that_each_hold_both_models_pairs_each_model_with_itself(tmp_path):
    from hallumeasure.report.audit import AuditGates, audit_runs

    base, cur = _shared_run(tmp_path / "base", worse=0), _shared_run(tmp_path / "cur", worse=3)
    result = audit_runs(base, cur, AuditGates(), out_dir=tmp_path / "audit", resamples=200)
    # 12 (id, model) pairs, not 6 ids averaged over the two models
    assert result.comparison.paired and result.comparison.n_shared == 12
    assert result.comparison.unsupported_rate.diff.value == pytest.approx(3 / 12)
    only_b = audit_runs(
        base,
        cur,
        AuditGates(),
        out_dir=tmp_path / "audit-b",
        resamples=200,
        baseline_model="model-b",
        current_model="model-b",
    )
    assert only_b.comparison.n_shared == 6
    assert only_b.comparison.unsupported_rate.diff.value == pytest.approx(0.5)
