"""``AuditSettings``: the audit's knobs in one typed model, for the command line, a settings file and Python."""

import pytest
from pydantic import ValidationError
from report.helpers import sample, write_run
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.errors import ConfigError
from hallumeasure.pipeline.settings import merge
from hallumeasure.report.audit import AuditGates, AuditSettings, audit_runs, run_audit


def test_validation_errors_name_the_rule():
    with pytest.raises(ValidationError, match="resamples must be at least 100 for a usable interval, got 50"):
        AuditSettings(resamples=50)
    with pytest.raises(ValidationError, match="allow_changes"):
        AuditSettings(allow_changes={"judge", "colour"})
    with pytest.raises(ValidationError, match="alpha"):
        AuditSettings(alpha=0.5)
    with pytest.raises(ValidationError, match="inconclusive"):
        AuditSettings(inconclusive="maybe")
    with pytest.raises(ValidationError, match="extra"):
        AuditSettings(max_rate_raise=0.1)


def test_the_gates_are_the_gate_fields_alone():
    settings = AuditSettings(max_rate_rise=0.04, subtype_shift=True, resamples=300, allow_changes={"judge"})
    assert settings.gates == AuditGates(max_rate_rise=0.04, subtype_shift=True)
    assert settings.allow_changes == frozenset({"judge"})


def test_a_settings_file_sets_every_audit_knob_and_options_win(tmp_path):
    from_file = {"resamples": 300, "allow_changes": ["judge"], "max_rate_rise": 0.1}
    settings = merge(AuditSettings, from_file, {"resamples": 500, "seed": 4}, explicit={"seed"}, source=tmp_path)
    assert (settings.resamples, settings.seed, settings.max_rate_rise) == (300, 4, 0.1)
    assert settings.allow_changes == {"judge"}
    with pytest.raises(ConfigError, match="resamples must be at least 100"):
        merge(AuditSettings, {"resamples": 10}, {}, explicit=set(), source=tmp_path)


def _run(path, bad_every):
    rows = [
        (sample(i, "m"), [("Claim 0.", ("contradicted", "number") if i % bad_every == 0 else "supported")])
        for i in range(30)
    ]
    return write_run(path, rows)


def test_python_and_the_command_give_the_same_audit(tmp_path):
    base, cur = _run(tmp_path / "base", 10), _run(tmp_path / "cur", 3)
    settings = AuditSettings(max_rate_rise=0.05, resamples=300, seed=2)
    result = run_audit(base, cur, settings)
    assert result == audit_runs(base, cur, settings.gates, resamples=300, seed=2)
    assert result.settings == settings.gates  # audit.json records the gates, as before
    cli = CliRunner().invoke(
        app,
        ["audit", "--baseline", str(base), "--current", str(cur), "--max-rate-rise", "0.05", "--resamples", "300",
         "--seed", "2", "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert cli.exit_code == result.exit_code, cli.output
    assert f"audit: {result.headline}" in " ".join(cli.output.split())
