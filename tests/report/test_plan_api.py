"""``hallumeasure.plan`` from Python gives the numbers ``hallumeasure plan`` prints for the same inputs."""

import json

import pytest
from pydantic import ValidationError
from report.helpers import planned_run
from testdata import EXAMPLES
from typer.testing import CliRunner

import hallumeasure
from hallumeasure.cli import app
from hallumeasure.core.errors import ConfigError
from hallumeasure.report.audit_settings import PlanSettings
from hallumeasure.report.plan import plan_audit
from hallumeasure.runs.run import Run


def _cli(*args):
    result = CliRunner().invoke(app, ["plan", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_plan_from_two_runs_matches_the_command(tmp_path):
    base, cur = planned_run(tmp_path / "base", [0, 1, 2, 0]), planned_run(tmp_path / "cur", [1, 1, 2, 1])
    from_python = hallumeasure.plan(base, cur, rise=0.1)
    assert isinstance(from_python, hallumeasure.SamplePlan)
    assert from_python.model_dump() == _cli("--baseline", str(base), "--current", str(cur), "--rise", "0.1")
    assert from_python.cost is not None and from_python.cost.dollars and from_python.cost.dollars > 0
    # a Run and a run loaded for reports plan the same
    assert hallumeasure.plan(hallumeasure.load_run(base), str(cur), rise=0.1) == from_python
    loaded = [Run.load(p) for p in (base, cur)]
    assert plan_audit(PlanSettings(rise=0.1), baseline=loaded[0], current=loaded[1]) == from_python


def test_plan_from_a_rate_and_a_samples_file_matches_the_command():
    settings = PlanSettings(
        rise=0.05, baseline_rate=0.2, metric="hallucinated_share", judge="anthropic:claude-sonnet-4-5"
    )
    from_python = hallumeasure.plan(samples=EXAMPLES, settings=settings)
    expected = _cli(
        "--baseline-rate", "0.2", "--rise", "0.05", "--metric", "hallucinated_share",
        "--judge", "anthropic:claude-sonnet-4-5", "--samples", str(EXAMPLES),
    )  # fmt: skip
    assert from_python.model_dump() == expected
    assert from_python.largest_count == from_python.cost.samples


def test_one_run_with_a_margin_of_zero_matches_the_command(tmp_path):
    base = planned_run(tmp_path / "base", [0, 1, 2, 0])
    from_python = hallumeasure.plan(base, rise=0.05, fail_on_any_significant_rise=True, correlation=0.5, power=0.9)
    expected = _cli(
        "--baseline", str(base), "--rise", "0.05", "--fail-on-any-significant-rise", "--correlation", "0.5",
        "--power", "0.9",
    )  # fmt: skip
    assert from_python.model_dump() == expected and from_python.margin == 0


def test_plan_settings_refuse_what_the_command_refuses():
    with pytest.raises(ValidationError, match="metric"):
        PlanSettings(rise=0.05, metric="nope")
    with pytest.raises(ValidationError, match="alpha"):
        PlanSettings(rise=0.05, alpha=0.5)
    with pytest.raises(ValidationError, match="mode"):
        PlanSettings(rise=0.05, mode="sideways")
    with pytest.raises(ValidationError, match="extra"):
        PlanSettings(rise=0.05, rise_by=0.1)
    assert PlanSettings(rise=0.05, max_rate_rise=0.03).margin == 0.03
    with pytest.raises(ConfigError, match="baseline rate"):
        hallumeasure.plan(rise=0.05)
    with pytest.raises(ConfigError, match="needs a baseline run"):
        hallumeasure.plan(current="somewhere", rise=0.05, baseline_rate=0.1)
    with pytest.raises(TypeError, match="either settings"):
        hallumeasure.plan(settings=PlanSettings(rise=0.05), baseline_rate=0.1)
