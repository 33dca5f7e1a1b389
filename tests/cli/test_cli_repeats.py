"""measure --repeats / a panel of judges, as a user runs them: flips and kappa shown, re-runs free,
clear refusals, and the stability output valid against its JSON Schema."""

import json

import jsonschema
from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.report.schemas import SCHEMA_DIR

runner = CliRunner()


def _measure(tmp_path, out, *extra):
    return runner.invoke(
        app,
        [
            "measure",
            str(EXAMPLES),
            "--out",
            str(tmp_path / out),
            "--extractor",
            "fake",
            "--cache",
            str(tmp_path / "cache.sqlite"),
            *extra,
        ],
    )


def test_measure_twice_with_repeats_shows_flips_and_kappa_and_the_second_run_is_free(tmp_path):
    first = _measure(tmp_path, "a", "--judge", "fake", "--repeats", "3")
    assert first.exit_code == 0, first.output
    assert "flipped between repeats" in first.output and "Fleiss' kappa" in first.output
    assert "rates with judge variance" in first.output
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    votes = manifest["settings"]["judge"]["votes"]
    assert votes["repeats"] == 3 and votes["rule"] == "majority" and "demo responder" in votes["sampling"]["fake:demo"]
    n_claims = manifest["counts"]["claims"]
    assert manifest["usage"]["calls"] == manifest["n_samples"] + 3 * n_claims  # extraction + 3 votes per claim
    second = _measure(tmp_path, "b", "--judge", "fake", "--repeats", "3")
    assert second.exit_code == 0, second.output
    again = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert again["usage"]["calls"] == 0 and again["usage"]["cached_calls"] == manifest["usage"]["calls"]

    shown = runner.invoke(app, ["show", str(tmp_path / "a"), "--json", "--claims"])
    payload = json.loads(shown.output)
    schema = json.loads((SCHEMA_DIR / "judge_stability.schema.json").read_text())
    jsonschema.validate(payload["stability"], schema)
    (judge,) = payload["stability"]["judges"]
    assert judge["repeats"] == 3 and 0 < judge["flipped_share"] < 1 and judge["fleiss_kappa"] < 1
    assert any(c["flip_rate"] and c["flip_rate"] > 0 for c in payload["claims"])
    table = runner.invoke(app, ["show", str(tmp_path / "a"), "--claims"])
    assert "flip rate" in table.output and "judge stability" in table.output

    report = runner.invoke(
        app, ["compare", str(tmp_path / "a"), "--out", str(tmp_path / "report"), "--resamples", "200"]
    )
    assert report.exit_code == 0, report.output
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "## Judge stability" in markdown and "one judge call: mean unsupported rate" in markdown
    assert json.loads((tmp_path / "report" / "report.json").read_text())["judge_stability"][0]["run"] == "a"


def test_a_run_without_repeats_shows_no_stability(tmp_path):
    plain = _measure(tmp_path, "p", "--judge", "fake")
    assert plain.exit_code == 0 and "judge stability" not in plain.output
    assert json.loads(runner.invoke(app, ["show", str(tmp_path / "p"), "--json"]).output)["stability"] is None


def test_a_panel_reports_agreement_between_judges(tmp_path):
    panel = _measure(tmp_path, "panel", "--judge", "fake", "--judge", "offline", "--panel-rule", "unanimous")
    assert panel.exit_code == 0, panel.output
    assert "panel agreement" in panel.output and "Cohen's kappa" in panel.output
    manifest = json.loads((tmp_path / "panel" / "manifest.json").read_text())
    assert manifest["judge"] == "panel(unanimous): fake:demo, offline"
    assert "--judge fake:demo --judge offline --panel-rule unanimous" in _resume_hint(manifest)


def _resume_hint(manifest):
    from hallumeasure.cli.common import _resume_hint as hint
    from hallumeasure.core.types import RunManifest

    return hint("out", RunManifest.model_validate(manifest))


def test_refusals_are_one_line_and_exit_2(tmp_path):
    offline = _measure(tmp_path, "o", "--repeats", "3")
    assert offline.exit_code == 2 and "offline judge is deterministic" in offline.output
    assert len(offline.output.strip().splitlines()) == 1
    rule = _measure(tmp_path, "r", "--judge", "fake", "--repeats", "2", "--panel-rule", "most")
    assert rule.exit_code == 2 and "--panel-rule must be one of" in rule.output
    conli = _measure(tmp_path, "c", "--judge", "fake", "--repeats", "2", "--detector", "conli")
    assert conli.exit_code == 2 and "--detector claims only" in conli.output
    twice = _measure(tmp_path, "t", "--judge", "fake", "--judge", "fake")
    assert twice.exit_code == 2 and "given twice" in twice.output
    dry = _measure(tmp_path, "d", "--judge", "fake", "--repeats", "3", "--dry-run")
    assert dry.exit_code == 0 and "multiply them by 3" in dry.output


def test_runs_with_and_without_repeats_are_different_measurements(tmp_path):
    from hallumeasure.report.runs import load_runs, measured_differently, run_labels

    assert _measure(tmp_path, "one", "--judge", "fake").exit_code == 0
    assert _measure(tmp_path, "three", "--judge", "fake", "--repeats", "3").exit_code == 0
    one, three = load_runs([tmp_path / "one", tmp_path / "three"])
    assert measured_differently(one, three) == ["votes"]
    assert run_labels([one, three])["three"] == "three: votes 3 repeat(s) of each judge, majority rule"
