"""The CLI as a user runs it: measure, show, exit codes, clear errors."""

import json

from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app

runner = CliRunner()


def test_measure_and_show_with_the_fake(tmp_path):
    run_dir = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "measure",
            str(EXAMPLES),
            "--out",
            str(run_dir),
            "--extractor",
            "fake",
            "--judge",
            "fake",
            "--mode",
            "nocot-all",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "mean unsupported rate" in result.output and "not a measurement" in result.output
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["mode"] == "nocot-all"
    shown = runner.invoke(app, ["show", str(run_dir), "--claims"])
    assert shown.exit_code == 0 and "contradicted" in shown.output
    as_json = runner.invoke(app, ["show", str(run_dir), "--json"])
    assert json.loads(as_json.output)["manifest"]["judge"] == "fake:demo"


def test_existing_run_needs_resume_or_overwrite(tmp_path):
    args = ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--extractor", "fake", "--judge", "fake"]
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "--resume" in again.output
    assert runner.invoke(app, [*args, "--resume"]).exit_code == 0
    assert runner.invoke(app, [*args, "--overwrite"]).exit_code == 0


def test_usage_errors_exit_2_with_a_message(tmp_path):
    bad_mode = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--mode", "fast"])
    assert bad_mode.exit_code == 2 and "--mode must be one of" in bad_mode.output
    bad_spec = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--judge", "nosuch:x"])
    assert bad_spec.exit_code == 2 and "unknown model provider" in bad_spec.output
    missing = runner.invoke(app, ["measure", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "r")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    not_a_run = runner.invoke(app, ["show", str(tmp_path)])
    assert not_a_run.exit_code == 2 and "not a hallumeasure run" in not_a_run.output


def test_skipped_rows_and_error_rows_exit_3(tmp_path):
    data = tmp_path / "in.jsonl"
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines()[:2]]
    data.write_text("\n".join(json.dumps(r) for r in rows) + '\n{"id": "x", "context": "", "response": "r"}\n')
    result = runner.invoke(
        app, ["measure", str(data), "--out", str(tmp_path / "r"), "--extractor", "fake", "--judge", "fake"]
    )
    assert result.exit_code == 3
    assert "row 3" in result.output and "1 input row(s) skipped" in result.output
