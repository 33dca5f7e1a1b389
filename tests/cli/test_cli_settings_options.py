"""Commands with a settings model take their options from it (issue #43): each setting's flag, help text and
default exist once, in the model, and the command declares by hand only what is not a setting."""

import json

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.cli.options import option_parameters
from hallumeasure.guard.settings import GuardSettings
from hallumeasure.pipeline.settings import MeasureSettings, flag_name
from hallumeasure.report.audit_settings import AuditSettings, PlanSettings

#: Each command's own options, none of them a setting: what the command reads besides its settings model.
OWN_OPTIONS = {
    "audit": {"baseline", "current", "out_dir"},
    "serve": {"host", "port", "api_key_file", "workers"},
    "plan": {"baseline", "current", "samples", "as_json"},
    "measure": {
        *("input", "out_dir", "resume", "overwrite", "column", "dry_run", "out_format"),
        *("engine", "ray_address", "ray_workers", "ray_batch_size"),
    },
}
MODELS = {"audit": AuditSettings, "serve": GuardSettings, "plan": PlanSettings, "measure": MeasureSettings}

runner = CliRunner()


def _command(name):
    """The command as typer registered it (the function ``with_settings`` made) and as click runs it."""
    registered = next(c for c in app.registered_commands if c.callback.__name__ == name)
    return registered.callback, get_command(app).commands[name]


@pytest.mark.parametrize("name", ["audit", "serve", "plan", "measure"])
def test_no_option_declared_by_hand_is_a_setting(name):
    function, command = _command(name)
    model, left_out = function.settings_model, function.settings_left_out
    assert model is MODELS[name]
    generated = {p.name for p in option_parameters(model, left_out)}
    by_hand = {p.name for p in command.params} - generated - {"config"}
    assert by_hand == OWN_OPTIONS[name]
    assert not by_hand & set(model.model_fields)
    setting_flags = {flag_name(model, field) for field in model.model_fields}
    setting_flags |= {f"--{field.replace('_', '-')}" for field in model.model_fields}
    hand_flags = {flag for p in command.params if p.name in by_hand for flag in [*p.opts, *p.secondary_opts]}
    assert not hand_flags & setting_flags


@pytest.mark.parametrize("name", ["audit", "serve", "plan"])
def test_every_setting_is_an_option_or_left_out_with_a_reason(name):
    function, command = _command(name)
    model, left_out = function.settings_model, function.settings_left_out
    options = {p.name: p for p in command.params}
    for field, info in model.model_fields.items():
        if field in left_out:
            assert len(left_out[field]) > 20, f"{field} is left out without a reason"
            assert field not in options
            continue
        switches = [n for n in options if n.startswith(f"{field}__")]
        assert field in options or switches, f"{field} of {model.__name__} has no option in {name}"
        if field in options:  # its help and default are the model's
            assert options[field].help == info.description
            if info.is_required():
                assert options[field].required
                continue
            default = info.default.value if hasattr(info.default, "value") else info.default
            assert options[field].default == (sorted(default) if isinstance(default, frozenset) else default)


def test_audit_options_and_its_settings_file_table_meet_in_one_merge(tmp_path, monkeypatch):
    from report.helpers import sample, write_run

    rows = [(sample(i, "m"), [("Claim 0.", "supported")]) for i in range(30)]
    base, cur = write_run(tmp_path / "base", rows), write_run(tmp_path / "cur", rows)
    (tmp_path / "hallumeasure.toml").write_text("[audit]\nmax-rate-rise = 0.1\nallow-changes = ['judge']\nseed = 3\n")
    monkeypatch.chdir(tmp_path)
    args = ["audit", "--baseline", str(base), "--current", str(cur), "--out", str(tmp_path / "a"), "--resamples", "200"]
    result = runner.invoke(app, [*args, "--seed", "5", "--no-share-gate", "--allow-mode-change"])
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert written["settings"]["max_rate_rise"] == 0.1  # from the file
    assert written["settings"]["max_hallucinated_share_rise"] is None  # --no-share-gate
    assert written["seed"] == 5  # the option wins over the file
    assert "(1 setting(s) applied, 2 overridden by options given here)" in result.output  # seed, allow-changes


def test_a_refused_audit_setting_is_a_usage_error_with_its_files(tmp_path):
    out = tmp_path / "a"
    args = ["audit", "--baseline", str(tmp_path), "--current", str(tmp_path), "--out", str(out)]
    result = runner.invoke(app, [*args, "--inconclusive", "x"])
    assert result.exit_code == 2 and "--inconclusive" in result.output
    assert json.loads((out / "audit.json").read_text())["status"] == "usage_error"


def test_serve_reads_its_table_and_names_the_setting_it_refuses(tmp_path):
    config = tmp_path / "hallumeasure.toml"
    config.write_text("[serve]\nthreshold = 2\n")
    result = runner.invoke(app, ["serve", "--config", str(config)])
    assert result.exit_code == 2
    assert f"threshold in {config}" in result.output
    result = runner.invoke(app, ["serve", "--config", str(config), "--threshold", "0.4", "--timeout", "0"])
    assert result.exit_code == 2 and "Invalid value for '--timeout'" in result.output
