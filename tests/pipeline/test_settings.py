"""Settings: one model gives measure's options, the config file's schema and the defaults; flags beat the file."""

import json

import pytest
from pydantic import ValidationError
from report.helpers import sample, write_run
from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.pipeline.settings import MeasureSettings, find_config

runner = CliRunner()


def _measure(tmp_path, *extra):
    return runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "run"), "--overwrite", *extra])


def _manifest(tmp_path):
    return json.loads((tmp_path / "run" / "manifest.json").read_text())


def test_every_setting_is_an_option_of_measure_with_its_help():
    import re

    text = " ".join(runner.invoke(app, ["measure", "--help"], env={"COLUMNS": "400"}).output.split())
    for name, info in MeasureSettings.model_fields.items():
        assert f"--{name.replace('_', '-')} " in text, name
        assert " ".join(info.description.split()[:4]) in text, name
    assert re.search(r"--concurrency\s.*x>=1", text)  # bounds come from the model too


def test_the_file_sets_defaults_flags_win_and_the_manifest_records_both(tmp_path, monkeypatch):
    (tmp_path / "hallumeasure.toml").write_text(
        'extractor = "fake"\njudge = "fake"\nmode = "nocot-all"\nmax-concurrency = 2\n'
        'unsupported_labels = "contradicted"\n\n[audit]\nmax_rate_rise = 0.5\n'
    )
    monkeypatch.chdir(tmp_path)
    result = _measure(tmp_path)
    assert result.exit_code == 0, result.output
    manifest = _manifest(tmp_path)
    assert (manifest["judge"], manifest["mode"]) == ("fake:demo", "nocot-all")
    assert list(manifest["policy"]["unsupported_labels"]) == ["contradicted"]
    assert manifest["settings"]["config_file"] == str(tmp_path / "hallumeasure.toml")
    effective = manifest["settings"]["effective"]
    # the file's one judge is recorded as the panel of one that --judge (repeatable) makes of it
    assert effective["max_concurrency"] == 2 and effective["concurrency"] == 4 and effective["judge"] == ["fake"]
    result = _measure(tmp_path, "--mode", "cot-all", "--max-concurrency", "3")
    assert result.exit_code == 0, result.output
    assert (
        _manifest(tmp_path)["mode"] == "cot-all"
        and _manifest(tmp_path)["settings"]["effective"]["max_concurrency"] == 3
    )


def test_pyproject_table_is_found_from_a_subdirectory_and_config_names_a_file(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.hallumeasure]\nextractor = "fake"\njudge = "fake"\n'
    )
    (tmp_path / "sub").mkdir()
    assert find_config(tmp_path / "sub") == tmp_path / "pyproject.toml"
    monkeypatch.chdir(tmp_path / "sub")
    assert _measure(tmp_path).exit_code == 0 and _manifest(tmp_path)["judge"] == "fake:demo"
    other = tmp_path / "other.toml"
    other.write_text('judge = "offline"\nextractor = "offline"\n')
    assert _measure(tmp_path, "--config", str(other)).exit_code == 0 and _manifest(tmp_path)["judge"] == "offline"
    # a pyproject.toml without the table ends the search: it is the project's root
    (tmp_path / "sub" / "pyproject.toml").write_text('[project]\nname = "y"\n')
    assert find_config(tmp_path / "sub") is None


def test_bad_files_are_one_line_usage_errors_that_name_the_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "hallumeasure.toml"
    config.write_text('judje = "fake"\n')
    result = _measure(tmp_path)
    assert (
        result.exit_code == 2
        and "unknown setting(s) judje" in result.output
        and "valid settings: extractor, judge" in result.output
    )
    config.write_text("concurrency = 0\n")
    result = _measure(tmp_path)
    assert (
        result.exit_code == 2
        and f"concurrency in {config}: Input should be greater than or equal to 1" in result.output
    )
    config.write_text("concurrency = \n")
    result = _measure(tmp_path)
    assert result.exit_code == 2 and "is not valid TOML" in result.output
    missing = _measure(tmp_path, "--config", str(tmp_path / "nope.toml"))
    assert missing.exit_code == 2 and "nope.toml does not exist" in missing.output


def test_audit_gates_come_from_the_audit_table_unless_given(tmp_path, monkeypatch):
    def run(path, unsupported):
        specs = [("contradicted", "number")] * unsupported + ["supported"] * (4 - unsupported)
        # 80 samples: enough for the audit's finite-sample bounds to rule out a rise beyond the margins
        return write_run(path, [(sample(i, "m"), [(f"c{j}", spec) for j, spec in enumerate(specs)]) for i in range(80)])

    base, cur = run(tmp_path / "base", 1), run(tmp_path / "cur", 3)
    (tmp_path / "hallumeasure.toml").write_text(
        "[audit]\nmax-rate-rise = 0.6\nmin_samples = 3\nsubtype_shift = false\n"
    )
    monkeypatch.chdir(tmp_path)
    args = ["audit", "--baseline", str(base), "--current", str(cur), "--out", str(tmp_path / "a"), "--resamples", "200"]
    assert runner.invoke(app, args).exit_code == 0  # a rise of 0.5 is within the file's 0.6
    settings = json.loads((tmp_path / "a" / "audit.json").read_text())["settings"]
    assert settings["max_rate_rise"] == 0.6 and settings["min_samples"] == 3 and settings["alpha"] == 0.05
    assert runner.invoke(app, [*args, "--max-rate-rise", "0.1"]).exit_code == 1  # the flag wins: a regression


def test_the_docs_example_file_is_valid():
    import re
    import tomllib

    from testdata import REPO

    from hallumeasure.pipeline.settings import merge
    from hallumeasure.report.audit import AuditGates

    # docs/getting-started.md writes the example file with a heredoc (and tests/docs runs that block)
    page = (REPO / "docs" / "getting-started.md").read_text()
    block = re.search(r"<<'TOML'\n(.*?)^TOML$", page, re.S | re.M).group(1)
    data = {k.replace("-", "_"): v for k, v in tomllib.loads(block).items()}
    audit = {k.replace("-", "_"): v for k, v in data.pop("audit").items()}
    assert merge(MeasureSettings, data, {}, explicit=set()).rpm == "50"
    assert merge(AuditGates, audit, {}, explicit=set()).max_rate_rise == 0.02


# --- the rules live in the model: the command line, a file and Python get the same refusals -----------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"panel_rule": "most"}, "panel_rule must be one of ['majority', 'any-unsupported', 'unanimous'], got 'most'"),
        ({"mode": "fast"}, "mode must be one of ['cot-one', 'cot-all', 'nocot-one', 'nocot-all'], got 'fast'"),
        ({"detector": "magic"}, "detector must be one of ['claims', 'conli', 'cascade'], got 'magic'"),
        ({"unevaluatable": "drop"}, "unevaluatable must be one of exclude, supported, unsupported; got 'drop'"),
        ({"unsupported_labels": "absent,wrong"}, "unsupported_labels takes a comma-separated list of supported, "),
        ({"unsupported_labels": " , "}, "unsupported_labels takes a comma-separated list of"),
        (
            {"judge": ["fake", "fake:other"], "detector": "conli"},
            "repeats and several judge work with detector claims only; this run uses detector conli",
        ),
        ({"judge": "fake", "repeats": 2, "detector": "cascade"}, "work with detector claims only"),
        ({"repeats": 3}, "repeats 3: the offline judge is deterministic"),
        ({"judge": ["fake", "nli"], "repeats": 2}, "the nli judge is deterministic"),
        ({"first_pass": "fake"}, "first_pass is for detector cascade only; this run uses detector claims"),
        (
            {"flag_threshold": 0.3, "first_pass": "fake", "detector": "conli"},
            "flag_threshold and first_pass are for detector cascade only; this run uses detector conli",
        ),
    ],
)
def test_the_model_refuses_each_rule_with_its_message(values, message):
    with pytest.raises(ValidationError) as caught:
        MeasureSettings(**values)
    assert message in caught.value.errors()[0]["msg"]


def test_closed_sets_are_typed_and_valid_combinations_pass():
    from hallumeasure.core.labels import UnevaluatablePolicy
    from hallumeasure.core.types import Mode
    from hallumeasure.judges.votes import PanelRule
    from hallumeasure.registry import PartKind, registry

    # the settings' closed set of detectors is the registered detectors
    assert {"claims", "conli", "cascade"} <= set(registry().names(PartKind.DETECTOR))
    with pytest.raises(ValidationError, match="detector must be one of"):
        MeasureSettings(detector="nosuch")
    s = MeasureSettings(mode="nocot-all", panel_rule="unanimous", unevaluatable="supported", judge=["fake", "offline"])
    assert (s.mode, s.panel_rule) == (Mode.NOCOT_ALL, PanelRule.UNANIMOUS)
    assert s.unevaluatable == UnevaluatablePolicy.SUPPORTED
    assert MeasureSettings(detector="cascade", first_pass="nli", flag_threshold=0.3).first_pass == "nli"
    assert MeasureSettings(judge="fake", repeats=3).repeats == 3
    assert s.model_dump(mode="json")["mode"] == "nocot-all"  # the manifest records plain values


def test_a_rule_names_the_option_on_the_command_line_and_the_key_in_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _measure(tmp_path, "--detector", "conli", "--first-pass", "fake")
    assert result.exit_code == 2
    assert "--first-pass is for --detector cascade only; this run uses --detector conli" in result.output
    config = tmp_path / "hallumeasure.toml"
    config.write_text('mode = "fast"\n')
    result = _measure(tmp_path)
    assert result.exit_code == 2 and f"mode in {config} must be one of" in result.output and "'fast'" in result.output
    assert _measure(tmp_path, "--mode", "turbo").output.count("--mode must be one of") == 1
    config.write_text('first-pass = "fake"\n')
    result = _measure(tmp_path)
    assert result.exit_code == 2 and f"first-pass in {config} is for --detector cascade only" in result.output
