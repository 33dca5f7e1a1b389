"""``--sample-rate``: a run measures the responses a hash of their id picks, the same ones for every judge."""

import json

from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.sampling import in_sample
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.run import Run

runner = CliRunner()


def _synthetic(path, n=60):
    rows = [json.loads(x) for x in EXAMPLES.read_text().splitlines() if x.strip()]
    path.write_text("".join(json.dumps({**rows[i % len(rows)], "id": f"s-{i}"}) + "\n" for i in range(n)))
    return path


def test_a_sampled_run_measures_the_ids_the_hash_picks_for_every_judge(tmp_path):
    path = _synthetic(tmp_path / "in.jsonl")
    picked = [s.id for s in load_samples(path).samples if in_sample(s.id, 0.4)]
    assert 10 < len(picked) < 40
    for judge in ("offline", "fake"):
        out = tmp_path / judge
        args = ["measure", str(path), "--out", str(out), "--judge", judge, "--extractor", judge, "--sample-rate", "0.4"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        run = Run.load(out)
        assert [s.id for s in run.samples] == picked == run.responses["sample_id"].tolist()
        assert run.manifest.settings["sampled_out"] == 60 - len(picked)
        assert run.manifest.settings["effective"]["sample_rate"] == 0.4


def test_a_rate_that_picks_nothing_says_so(tmp_path):
    path = _synthetic(tmp_path / "in.jsonl", n=1)
    result = runner.invoke(app, ["measure", str(path), "--out", str(tmp_path / "r"), "--sample-rate", "0.000001"])
    assert result.exit_code != 0 and "picks none" in result.output
