"""compare, show and measure's summary read runs as columns, and the few rows they print by id: the same report
and the same summary as a read of the whole run, without building every result."""

import importlib.util
import re

import pytest
from report.helpers import measure_offline, sample, write_run
from report.test_audit_judge_error import write_answers
from testdata import REPO
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.cli.output import load_summary_table
from hallumeasure.report.compare import compare_runs, load_for_compare
from hallumeasure.report.next_steps import next_steps
from hallumeasure.report.rag import load_rag
from hallumeasure.report.rates import run_rates
from hallumeasure.runs.inputs import key_samples
from hallumeasure.runs.run import Run
from hallumeasure.runs.store import RunStore
from hallumeasure.testing.large_runs import write_large_run

FILES = ("report.md", "report.html", "report.json", "view.html")
runner = CliRunner()


def _rows(unsupported: int, n: int, *, errors: int = 0, models: tuple[str | None, ...] = ("m",)):
    specs = [("contradicted", "number", "42 is not 24")] * unsupported + ["error"] * errors
    specs += ["supported"] * (4 - len(specs))
    samples = key_samples([sample(i, model) for i in range(n) for model in models])
    return [(s, [(f"Claim {j} about {s.id}.", spec) for j, spec in enumerate(specs)]) for s in samples]


def _same_report(tmp_path, dirs, **options) -> None:
    """The report of the runs read whole equals, file for file, the report of the same runs given as directories."""
    whole = compare_runs([Run.load(d) for d in dirs], tmp_path / "whole", resamples=200, **options)
    columns = compare_runs(dirs, tmp_path / "columns", resamples=200, **options)
    assert columns.model_dump_json() == whole.model_dump_json()
    for name in FILES:
        assert (tmp_path / "columns" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


def test_two_models_sharing_ids_with_error_rows_compare_the_same(tmp_path):
    base = write_run(tmp_path / "base", _rows(1, 12, models=("a", "b")), failed={"s3@a": "the provider refused"})
    cur = write_run(tmp_path / "cur", _rows(2, 12, errors=1, models=("a", "b")))
    assert load_for_compare(base).columns_only
    _same_report(tmp_path, [base, cur])
    _same_report(tmp_path / "baseline", [base, cur], baseline="b (cur)")


def test_runs_measured_differently_over_other_samples_compare_the_same(tmp_path):
    base = write_run(tmp_path / "base", _rows(0, 10))
    cur = write_run(tmp_path / "cur", _rows(1, 10, models=(None,))[3:], judge="other-judge")
    _same_report(tmp_path, [base, cur], allow_mismatch=True)
    report = compare_runs([base, cur], tmp_path / "out", resamples=200, allow_mismatch=True)
    assert "inputs differ" in report.mismatches[0]


@pytest.mark.skipif(importlib.util.find_spec("hallumeasure.judges.offline") is None, reason="needs the offline judge")
def test_keyless_runs_with_unsure_claims_compare_and_summarise_the_same(tmp_path):
    faithful, planted = write_answers(tmp_path / "answers")
    base = measure_offline(faithful, tmp_path / "faithful")
    cur = measure_offline(planted, tmp_path / "planted")
    _same_report(tmp_path, [base, cur])
    whole, table = Run.load(cur), load_summary_table(cur)
    assert table.columns_only and table.results == []
    assert next_steps(table) == next_steps(whole) and next_steps(whole) is not None
    assert [r.model_dump_json() for r in run_rates(table)] == [r.model_dump_json() for r in run_rates(whole)]


def test_a_rag_run_with_repeats_compares_and_summarises_the_same(tmp_path):
    out = tmp_path / "rag"
    measured = runner.invoke(
        app,
        [
            *("measure", str(REPO / "examples" / "rag_samples.jsonl"), "--out", str(out), "--judge", "fake"),
            *("--extractor", "fake", "--repeats", "3", "--cache", str(tmp_path / "cache.sqlite")),
        ],
    )
    assert measured.exit_code in (0, 3), measured.output
    table = load_summary_table(out)
    assert table.has_rag_rows() and len(table.votes) > 0
    _same_report(tmp_path, [out])
    whole = Run.load(out)
    assert [s.model_dump_json() for s in load_rag(table)[0]] == [s.model_dump_json() for s in load_rag(whole)[0]]
    assert table.error_reasons == whole.error_reasons
    shown = runner.invoke(app, ["show", str(out)])
    assert shown.exit_code == 0 and "judge stability" in shown.output and "RAG: evidence" in shown.output


def test_error_reasons_of_a_run_read_as_columns_are_its_stored_error_rows(tmp_path):
    path = write_run(tmp_path / "run", _rows(1, 8, errors=2), failed={"s2": "the provider refused", "s5": "bad"})
    table, whole = load_summary_table(path), Run.load(path)
    assert table.error_reasons == whole.error_reasons
    assert {(r.rows, r.count) for r in table.error_reasons} >= {("claim", 12), ("response", 1)}
    clean = load_summary_table(write_run(tmp_path / "clean", _rows(1, 8)))
    assert clean.error_reasons == [] == Run.load(clean.path).error_reasons


def test_show_prints_the_same_summary_from_columns(tmp_path):
    path = write_run(tmp_path / "run", _rows(1, 8, errors=1, models=("a", "b")), failed={"s2@a": "refused"})
    from hallumeasure.cli import output

    printed = []
    for data in (Run.load(path), load_summary_table(path)):
        with output.out.capture() as captured:
            output.print_summary(path, data)
            output.print_error_reasons(data, output.out, run_dir=path)
        printed.append(captured.get())
    assert printed[0] == printed[1] and "model" in printed[0]


def test_records_of_a_run_read_as_columns_equal_those_of_the_whole_run(tmp_path):
    path = write_run(tmp_path / "run", _rows(2, 10, models=("a", "b")))
    whole, table = Run.load(path), load_for_compare(path)
    ids = ["s7@b", "s1@a"]
    part, sliced = table.records_of(ids), whole.records_of(ids)
    assert [s.id for s in part.samples] == ["s1@a", "s7@b"]  # in input order
    assert part.samples == sliced.samples and part.results == sliced.results
    for frame in ("responses", "claims", "summary", "votes"):
        assert getattr(part, frame).to_json() == getattr(sliced, frame).to_json(), frame


def _counting_results(monkeypatch) -> list[int]:
    """Counts the results built from the store (the real method, wrapped)."""
    built = [0]
    real = RunStore.iter_results

    def counting(self, chunk=None, *, only=None):
        for result in real(self, chunk, only=only):
            built[0] += 1
            yield result

    monkeypatch.setattr(RunStore, "iter_results", counting)
    return built


def test_compare_and_show_build_only_the_results_they_print(tmp_path, monkeypatch):
    from hallumeasure.report.viewer import DEFAULT_MAX_RESPONSES

    n = DEFAULT_MAX_RESPONSES + 500
    base = write_large_run(tmp_path / "base", n)
    cur = write_large_run(tmp_path / "cur", n, rise=0.05)
    built = _counting_results(monkeypatch)
    report = compare_runs([base, cur], tmp_path / "report", resamples=200, worst=3)
    assert report.model_stats[0].n_responses == n and report.runs[1].n_results == n
    # the page's first responses (one budget shared by both runs) and the worst examples, never every result
    assert 0 < built[0] <= 2 * DEFAULT_MAX_RESPONSES + 6
    built[0] = 0
    shown = runner.invoke(app, ["show", str(cur)])
    assert shown.exit_code == 0, shown.output
    assert built[0] == 0 and f"(all) {n} " in " ".join(shown.output.split())


def test_show_claims_with_a_limit_lists_the_first_claims_reading_only_their_responses(tmp_path, monkeypatch):
    path = write_run(tmp_path / "run", _rows(1, 12, errors=1, models=("a", "b")))
    every = Run.load(path).claims
    wanted = every[(every["model"] == "b") & (every["label"] == "contradicted")].head(3)
    built = _counting_results(monkeypatch)
    paged = runner.invoke(
        app, ["show", str(path), "--no-summary", "--limit", "3", "--model", "b", "--label", "contradicted"]
    )
    assert paged.exit_code == 0, paged.output
    assert built[0] == 3  # the three responses that hold the three claims
    assert f"3 of {len(every)} claims" in " ".join(paged.output.split())
    listed = [line.split()[:2] for line in paged.output.splitlines() if re.match(r"s\d+ ", line)]
    assert listed == [[i, "b"] for i in wanted["input_id"]]
    as_json = runner.invoke(app, ["show", str(path), "--json", "--limit", "3", "--model", "b", "--label", "partial"])
    assert as_json.exit_code == 0 and '"claims": []' in " ".join(as_json.output.split())
    unknown = runner.invoke(app, ["show", str(path), "--limit", "3", "--model", "c"])
    assert unknown.exit_code != 0 and "its models: a, b" in " ".join(unknown.output.split())
