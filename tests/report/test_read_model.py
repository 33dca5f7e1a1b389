"""One read model: every reader of a stored run reads its store through ``runs.run.Run``, once (or, for the
readers of runs read as columns, a fixed number of times whatever the run's size), and what a run lacks stays
missing (None / <NA>), never NaN patched over."""

import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from report.helpers import sample, write_run
from typer.testing import CliRunner

import hallumeasure
from hallumeasure.cli import app
from hallumeasure.report.audit import audit_runs
from hallumeasure.report.compare import compare_runs
from hallumeasure.report.viewer import write_viewer
from hallumeasure.runs import store as store_module
from hallumeasure.runs.run import Run
from hallumeasure.runs.store import RunStore


@pytest.fixture
def opens(monkeypatch):
    """Counts every opening of a run's store for reading, by directory (the real class, wrapped)."""
    counted: Counter[str] = Counter()
    real = RunStore.__init__

    def counting(self, path, *, write=False, overwrite=False):
        if not write:
            counted[Path(path).name] += 1
        real(self, path, write=write, overwrite=overwrite)

    monkeypatch.setattr(store_module.RunStore, "__init__", counting)
    return counted


def _rows(model: str):
    return [
        (
            sample(i, model),
            [("The bridge is 42 km long.", ("contradicted", "number")), ("It opened in 2019.", "supported")],
        )
        for i in range(6)
    ]


@pytest.fixture
def two_runs(tmp_path):
    return write_run(tmp_path / "base", _rows("model-a")), write_run(tmp_path / "cur", _rows("model-a"))


def _unmeasured_run(path: Path) -> Path:
    """A run with a claim the judge gave no verdict on, and a sample (without a question) never measured."""
    write_run(path, [(sample(0, "m"), [("The bridge is 42 km long.", "error"), ("It opened in 2019.", "supported")])])
    with RunStore(path, write=True) as store:
        store.add_samples([sample(1, "m")])
    return path


def test_the_viewer_reads_each_run_once(two_runs, tmp_path, opens):
    base, cur = two_runs
    write_viewer([base, cur], tmp_path / "view.html")
    assert opens == {"base": 1, "cur": 1}


#: A comparison reads a run as columns, then its small tables (votes, skipped rows), then the rows it shows by id.
COMPARE_OPENS = 3


def test_a_comparison_and_an_audit_read_each_run_a_fixed_number_of_times(two_runs, tmp_path, opens):
    base, cur = two_runs
    compare_runs([base, cur], tmp_path / "compare", resamples=200)  # its report embeds the viewer page too
    assert opens == {"base": COMPARE_OPENS, "cur": COMPARE_OPENS}
    opens.clear()
    audit_runs(base, cur, resamples=200)
    assert opens == {"base": 1, "cur": 1}


def test_the_api_run_reads_its_store_once_for_everything_it_shows(two_runs, tmp_path, opens):
    base, cur = two_runs
    run = hallumeasure.load_run(cur)
    assert isinstance(run, Run)  # the API's Run is the read model, with the notebook face added
    run.view(tmp_path / "view.html", open=False)
    _ = (run.rates, run.citations, run.stability, run.filter(label="contradicted"), run.error_reasons)
    run.evidence_html()
    run._repr_html_()
    assert opens == {"cur": 1}
    run.compare(base, out=tmp_path / "compare", resamples=200)
    run.audit(base, resamples=200)
    assert opens == {"cur": 1, "base": 2}  # the baseline given as a path is loaded once per call, this run never


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["show", "{cur}", "--claims"], {"cur": 1}),
        (["show", "{cur}"], {"cur": 2}),  # its columns, then its small tables
        (["view", "{base}", "{cur}", "--out", "{tmp}/v.html"], {"base": 1, "cur": 1}),
        (
            ["compare", "{base}", "{cur}", "--out", "{tmp}/c", "--resamples", "200"],
            {"base": COMPARE_OPENS, "cur": COMPARE_OPENS},
        ),
        (
            ["audit", "--baseline", "{base}", "--current", "{cur}", "--out", "{tmp}/a", "--resamples", "200"],
            {"base": 1, "cur": 1},
        ),
        (["plan", "--rise", "0.1", "--baseline", "{base}", "--current", "{cur}"], {"base": 1, "cur": 1}),
    ],
)
def test_each_command_reads_each_run_a_fixed_number_of_times(two_runs, tmp_path, opens, command, expected):
    base, cur = two_runs
    args = [a.format(base=base, cur=cur, tmp=tmp_path) for a in command]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1, 4), result.output  # an audit may pass, regress or be inconclusive
    assert opens == expected


def test_missing_values_stay_missing_in_the_frames(tmp_path):
    run = Run.load(_unmeasured_run(tmp_path / "run"))
    responses = run.responses.set_index("sample_id")
    assert str(responses["n_claims"].dtype) == "Int64" and str(responses["unsupported_rate"].dtype) == "Float64"
    assert responses.loc["s0", "n_claims"] == 2 and responses.loc["s0", "unsupported_rate"] == 0.0
    unmeasured = responses.loc["s1"]
    assert unmeasured["n_claims"] is pd.NA and unmeasured["unsupported_rate"] is pd.NA
    assert unmeasured["hallucinated"] is pd.NA and unmeasured["error"] is None and unmeasured["question"] is None
    [record] = [r for r in run.responses.to_dict(orient="records") if r["sample_id"] == "s1"]
    assert record["n_claims"] is None and record["unsupported_rate"] is None  # not NaN
    claims = run.claims.set_index("claim_index")
    assert claims.loc[0, "label"] is None and claims.loc[0, "error"] == "the judge returned no verdict"
    assert claims.loc[0, "probability"] is pd.NA and claims.loc[1, "label"] == "supported"
    assert all(v is None or isinstance(v, str) for column in ("label", "subtype", "error") for v in run.claims[column])


def test_missing_values_stay_missing_in_the_viewer(tmp_path):
    path = _unmeasured_run(tmp_path / "run")
    page = write_viewer([path], tmp_path / "view.html").read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="viewer-data">(.*?)</script>', page, re.S)
    assert block is not None and "NaN" not in block.group(1)
    data = json.loads(block.group(1))
    measured, unmeasured = data["responses"]
    assert (unmeasured["rate"], unmeasured["hallucinated"], unmeasured["question"]) == (None, None, None)
    assert unmeasured["error"] == "not measured yet (the run is unfinished)" and unmeasured["claims"] == []
    error_claim = measured["claims"][0]
    assert (error_claim["label"], error_claim["probability"]) == (None, None)
    assert error_claim["error"] == "the judge returned no verdict"
