"""``show`` on a run with unsure claims: the rate with its own interval, then the bounds, decided share and the
interval covering the bounds, labelled as such; '?' on unsure labels.

A run whose verdicts are all confident (every LLM judge's) must print exactly what it printed before.
"""

import re

import pytest
from testdata import EXAMPLES
from typer.testing import CliRunner
from unsure_judge import UnsureJudge

from hallumeasure.cli import app
from hallumeasure.core.types import Mode
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.run import load_run

runner = CliRunner()


def _run(out, unsure):
    samples = load_samples(EXAMPLES).samples
    judge = UnsureJudge(OfflineJudge(), unsure)
    run_measurement(samples, out, OfflineExtractor(), judge, mode=Mode.COT_ALL, input_sha256="x" * 64)
    return out


def test_show_gives_bounds_decided_share_and_a_covering_interval(tmp_path):
    run_dir = _run(tmp_path / "run", lambda c, v: c.index % 2 == 1)
    data = load_run(run_dir)
    everything = data.summary.set_index("model").loc["(all)"]
    shown = runner.invoke(app, ["show", str(run_dir)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    low, rate, high = (
        everything[k] for k in ("mean_unsupported_rate_low", "mean_unsupported_rate", "mean_unsupported_rate_high")
    )
    assert low < rate < high
    row = re.search(rf"\(all\) \d+ \d+ {rate:.3f} \[([\d.]+), ([\d.]+)\]", text)  # the rate with its own interval
    assert row, text
    own = float(row[1]), float(row[2])
    assert own[0] <= rate <= own[1]
    n_unsure, n_claims = int(everything["n_unsure_claims"]), int(everything["n_claims"])
    bounds = re.search(
        rf"\(all\) {n_unsure} of {n_claims} {low:.3f}-{high:.3f} \[([\d.]+), ([\d.]+)\] "
        rf"{everything['decided_share']:.0%}",
        text,
    )
    assert bounds, text  # the unsure table: claims, bounds, the interval covering them, decided
    covering = float(bounds[1]), float(bounds[2])
    assert covering[0] <= min(low, own[0]) and covering[1] >= max(high, own[1])
    assert "95% CI covering the bounds: from the lower limit" in text and "it is not the rate's interval" in text


def test_show_claims_never_presents_an_unsure_label_as_decided(tmp_path):
    run_dir = _run(tmp_path / "run", lambda c, v: c.index % 2 == 1)
    data = load_run(run_dir)
    shown = runner.invoke(app, ["show", str(run_dir), "--claims", "--no-summary"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    rows = [
        line for line in shown.output.splitlines() if line.strip() and line.split()[0] in set(data.claims["sample_id"])
    ]
    assert len(rows) == len(data.claims)
    at = 2 if "model" in shown.output.splitlines()[0].split() else 1  # sample, [model,] label
    for line, confident in zip(rows, data.claims["confident"], strict=True):
        label = line.split()[at]
        assert label.endswith("?") is (not confident), line
    assert "'?' = unsure" in shown.output


def test_a_confident_run_prints_what_it_always_printed(tmp_path):
    run_dir = _run(tmp_path / "run", lambda c, v: False)
    shown = runner.invoke(app, ["show", str(run_dir), "--claims"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    # (the offline judge's own reasons may say "unsure: ..."; the run's summary must not add its lines)
    for word in ("unsure claims", "decided", "bounds"):
        assert word not in shown.output
    samples = set(load_run(run_dir).claims["sample_id"])
    at = 2 if any(line.split()[:2] == ["sample", "model"] for line in shown.output.splitlines()) else 1
    labels = [line.split()[at] for line in shown.output.splitlines() if line.strip() and line.split()[0] in samples]
    assert labels and not any(label.endswith("?") for label in labels)
    flat = " ".join(shown.output.split())
    assert re.search(r"mean unsupported rate \[95% CI\]\s+hallucinated share \[95% CI\]", flat)


@pytest.mark.parametrize("flag", ["--json"])
def test_show_json_lists_confident_and_the_decided_share(tmp_path, flag):
    import json

    run_dir = _run(tmp_path / "run", lambda c, v: c.index == 0)
    payload = json.loads(runner.invoke(app, ["show", str(run_dir), flag, "--claims"]).output)
    assert {c["confident"] for c in payload["claims"]} == {True, False}
    assert payload["summary"][0]["decided_share"] < 1
