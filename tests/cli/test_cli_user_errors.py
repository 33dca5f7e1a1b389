"""The CLI as a new user meets it.

Bad options, broken inputs and unfinished runs give one line and the right exit code.
"""

import json

import pytest
import typer
from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.errors import ProviderError
from hallumeasure.models.fake import FakeAPI

runner = CliRunner()
FAKE = ["--extractor", "fake", "--judge", "fake"]


def _one_line_error(result, code=2):
    """The exit code, and exactly one line on stderr (no traceback)."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return lines[0]


def _range_error(result, option):
    """Typer's own report of a value out of its bounds: exit 2, the option named, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and f"Invalid value for '{option}'" in result.output, result.output


@pytest.fixture
def run(tmp_path):
    """A finished run measured with the fake model."""
    out = tmp_path / "run"
    assert runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(out), *FAKE]).exit_code == 0
    return out


# --- 1, 8, 9, 10: counts, rates and thresholds are bounded by typer ---------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--concurrency", "0"),
        ("--concurrency", "-3"),
        ("--max-concurrency", "0"),
        ("--max-retries", "-1"),
        ("--timeout", "0"),
        ("--batch-poll", "0"),
        ("--max-context-tokens", "0"),
        ("--min-unsupported-rate", "3"),
        ("--min-unsupported-claims", "-1"),
        ("--flag-threshold", "5"),
    ],
)
def test_measure_rejects_out_of_range_numbers(tmp_path, option, value):
    # --dry-run: on code without the bound the command returns at once (exit 0) instead of hanging.
    result = runner.invoke(
        app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), *FAKE, "--dry-run", option, value]
    )
    _range_error(result, option)


@pytest.mark.parametrize(
    ("option", "value"),
    [("--concurrency", "0"), ("--concurrency", "-3"), ("--max-concurrency", "0"), ("--rounds", "0")],
)
def test_mitigate_rejects_out_of_range_numbers(run, tmp_path, option, value):
    _range_error(runner.invoke(app, ["mitigate", str(run), "--out", str(tmp_path / "m"), option, value]), option)


@pytest.mark.parametrize(
    ("option", "value"),
    [("--limit", "0"), ("--limit", "-5"), ("--concurrency", "0"), ("--concurrency", "-3"), ("--resamples", "0")],
)
def test_bench_rejects_out_of_range_numbers(tmp_path, option, value):
    result = runner.invoke(app, ["bench", str(EXAMPLES), "--dry-run", "--out", str(tmp_path / "b"), option, value])
    _range_error(result, option)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--alpha", "2"),
        ("--alpha", "0"),
        ("--max-rate-rise", "-1"),
        ("--max-error-share", "1.5"),
        ("--subtype-alpha", "-0.1"),
        ("--max-hallucinated-share-rise", "2"),
        ("--min-samples", "0"),
    ],
)
def test_audit_rejects_out_of_range_numbers(run, tmp_path, option, value):
    result = runner.invoke(
        app, ["audit", "--baseline", str(run), "--current", str(run), "--out", str(tmp_path / "a"), option, value]
    )
    _range_error(result, option)
    assert "validation error" not in result.output  # not pydantic's dump


def test_bench_mode_lists_the_valid_modes(tmp_path):
    result = runner.invoke(app, ["bench", str(EXAMPLES), "--dry-run", "--mode", "bogus"])
    line = _one_line_error(result)
    assert "--mode must be one of" in line and "cot-one" in line and "nocot-all" in line and "'bogus'" in line


@pytest.mark.parametrize("extra", [["--flag-threshold", "0.3"], ["--first-pass", "fake"]])
def test_cascade_options_without_the_cascade_are_refused(tmp_path, extra):
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), *FAKE, *extra])
    line = _one_line_error(result)
    assert extra[0] in line and "--detector cascade" in line
    assert not (tmp_path / "r").exists()


# --- 2: audit never exits 1 unless there is a regression ---------------------------------------------------


def test_audit_of_a_corrupt_run_is_a_usage_error(run, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text((run / "manifest.json").read_text())
    (broken / "run.sqlite").write_bytes(b"this is not a database, it was cut by a failed copy\n" * 20)
    result = runner.invoke(
        app, ["audit", "--baseline", str(run), "--current", str(broken), "--out", str(tmp_path / "a")]
    )
    line = _one_line_error(result)
    assert "run.sqlite cannot be read" in line and "not a database" in line and "SELECT" not in line
    assert json.loads((tmp_path / "a" / "audit.json").read_text())["status"] == "usage_error"


def test_audit_of_a_damaged_manifest_is_a_usage_error(run, tmp_path):
    (run / "manifest.json").write_text('{"run_id": "x", "mode": ')
    result = runner.invoke(app, ["audit", "--baseline", str(run), "--current", str(run), "--out", str(tmp_path / "a")])
    assert "manifest.json cannot be read" in _one_line_error(result)


def test_an_unexpected_failure_in_audit_is_not_exit_1(run, tmp_path, monkeypatch):
    import hallumeasure.report.audit as audit_module

    def crash(*args, **kwargs):
        raise RuntimeError("something nobody expected\nsecond line")

    monkeypatch.setattr(audit_module, "audit_runs", crash)
    result = runner.invoke(app, ["audit", "--baseline", str(run), "--current", str(run), "--out", str(tmp_path / "a")])
    line = _one_line_error(result)
    assert "RuntimeError: something nobody expected" in line


# --- 3: the reasons of error rows are shown --------------------------------------------------------------


def test_measure_and_show_name_the_reasons_of_error_rows(tmp_path, monkeypatch):
    secret = "Very-Secret-Value-0123456789"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)

    async def no_credentials(self, request):
        raise ProviderError(f"fake:demo: no AWS credentials found: set AWS_PROFILE (saw {secret})")

    monkeypatch.setattr(FakeAPI, "generate", no_credentials)
    out = tmp_path / "r"
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(out), *FAKE, "--no-cache"])
    assert result.exit_code == 3, result.output
    assert "16 response(s) and 0 claim(s) ended as error rows" in result.stderr
    assert "16 responses (extraction_failed, e.g.):" in result.stderr
    assert "no AWS credentials found: set AWS_PROFILE" in result.stderr
    assert secret not in result.output
    shown = runner.invoke(app, ["show", str(out)])
    assert (
        shown.exit_code == 0
        and "16 responses (extraction_failed" in shown.stdout
        and "no AWS credentials found" in shown.stdout
    )
    as_json = json.loads(runner.invoke(app, ["show", str(out), "--json"]).stdout)
    [reason] = as_json["error_reasons"]
    assert reason["count"] == 16 and reason["rows"] == "response" and "no AWS credentials found" in reason["reason"]
    assert secret not in json.dumps(as_json)


def test_one_cause_with_varied_messages_is_one_line_with_a_count_and_an_example(tmp_path, monkeypatch):
    calls = {"n": 0}

    async def varied(self, request):
        calls["n"] += 1
        raise ProviderError(f"failure number {calls['n']} " + "x" * 500)

    monkeypatch.setattr(FakeAPI, "generate", varied)
    out = tmp_path / "r"
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(out), *FAKE, "--no-cache"])
    assert result.exit_code == 3
    # Grouped by kind, not by message text (#45 item 7): sixteen different messages of one cause are one line.
    assert "(1 cause)" in result.stderr and "16 responses (extraction_failed, e.g.): " in result.stderr
    assert "failure number 1 " in result.stderr and "failure number 2 " not in result.stderr
    assert "x" * 300 not in result.stderr  # shortened
    [reason] = json.loads(runner.invoke(app, ["show", str(out), "--json"]).stdout)["error_reasons"]
    assert reason["count"] == 16 and reason["kind"] == "extraction_failed"


# --- 4: Bedrock without credentials fails fast -----------------------------------------------------------


def test_bedrock_without_credentials_fails_fast_with_exit_2(tmp_path, monkeypatch):
    for name, value in {
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    out = tmp_path / "r"
    result = runner.invoke(
        app,
        ["measure", str(EXAMPLES), "--out", str(out), "--extractor", "fake", "--judge", "bedrock:anthropic.claude-x"],
    )
    line = _one_line_error(result)
    assert "no AWS credentials found" in line and "AWS_PROFILE" in line
    assert not (out / "run.sqlite").exists()


# --- 5, 14: --resume and --overwrite ----------------------------------------------------------------------


def test_resume_and_overwrite_together_are_a_usage_error(run):
    before = (run / "manifest.json").read_text()
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(run), *FAKE, "--resume", "--overwrite"])
    line = _one_line_error(result)
    assert "--resume" in line and "--overwrite" in line
    assert (run / "manifest.json").read_text() == before  # nothing was deleted


def test_an_existing_run_names_both_ways_out(run):
    line = _one_line_error(runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(run), *FAKE]))
    assert "already holds a run" in line and "--resume" in line and "--overwrite" in line


def test_mitigate_into_an_existing_run_names_overwrite(run, tmp_path):
    other = tmp_path / "other"
    assert runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(other), *FAKE]).exit_code == 0
    line = _one_line_error(runner.invoke(app, ["mitigate", str(run), "--out", str(other)]))
    assert "already holds a run" in line and "--overwrite" in line


def test_mitigate_overwrite_refuses_to_delete_a_directory_that_is_not_a_run(run, tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    line = _one_line_error(runner.invoke(app, ["mitigate", str(run), "--out", str(precious), "--overwrite"]))
    assert "refusing to delete" in line and (precious / "thesis.tex").exists()


# --- 6: bench does not write over the committed tables by default -----------------------------------------


def test_bench_writes_under_runs_by_default():
    command = typer.main.get_command(app).commands["bench"]
    [out] = [p for p in command.params if p.name == "out_dir"]
    assert str(out.default) == "runs/bench"


# --- 7: file system and delimiter errors -------------------------------------------------------------------


def test_a_delimiter_of_two_characters_is_one_line(tmp_path):
    data = tmp_path / "s.csv"
    data.write_text("id,context,response\na,The sky is blue.,The sky is blue.\n")
    line = _one_line_error(
        runner.invoke(app, ["measure", str(data), "--out", str(tmp_path / "r"), *FAKE, "--delimiter", ",,"])
    )
    assert "delimiter must be one character" in line and "',,'" in line


def test_an_out_directory_that_cannot_be_created_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = _one_line_error(runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(blocker / "run"), *FAKE]))
    assert line.startswith("error: cannot create run directory") and str(blocker / "run") in line


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="needs Linux /proc")
def test_out_under_proc_is_one_line(tmp_path):
    line = _one_line_error(runner.invoke(app, ["measure", str(EXAMPLES), "--out", "/proc/forbidden", *FAKE]))
    assert "cannot create run directory /proc/forbidden" in line


# --- 8: bench-compare on files that are not bench results ---------------------------------------------------


def test_bench_compare_on_other_files(run, tmp_path):
    line = _one_line_error(runner.invoke(app, ["bench-compare", str(EXAMPLES)]))
    assert f"{EXAMPLES} is not a bench result" in line
    line = _one_line_error(runner.invoke(app, ["bench-compare", str(run / "manifest.json")]))
    assert "manifest.json is not a bench result" in line and "validation error" not in line
    missing = tmp_path / "nonexist.json"
    assert f"{missing} does not exist" in _one_line_error(runner.invoke(app, ["bench-compare", str(missing)]))


# --- 12: unfinished runs ------------------------------------------------------------------------------------


@pytest.fixture
def unfinished(run):
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["status"] = "running"
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_show_warns_about_an_unfinished_run(unfinished):
    result = runner.invoke(app, ["show", str(unfinished)])
    assert result.exit_code == 0
    [warning] = [line for line in result.stderr.splitlines() if line.strip()]
    assert "unfinished" in warning and "--resume" in warning and "hallumeasure measure" in warning
    assert str(EXAMPLES) in warning
    assert json.loads(runner.invoke(app, ["show", str(unfinished), "--json"]).stdout)["unfinished"] is True


def test_compare_and_audit_refuse_an_unfinished_run(unfinished, tmp_path):
    line = _one_line_error(runner.invoke(app, ["compare", str(unfinished), "--out", str(tmp_path / "c")]))
    assert "unfinished" in line and "--resume" in line
    other = tmp_path / "other"
    assert runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(other), *FAKE]).exit_code == 0
    result = runner.invoke(
        app, ["audit", "--baseline", str(other), "--current", str(unfinished), "--out", str(tmp_path / "a")]
    )
    assert "unfinished" in _one_line_error(result)


# --- 13: show --json --claims -------------------------------------------------------------------------------


def test_show_json_includes_the_claims_when_asked(run):
    plain = json.loads(runner.invoke(app, ["show", str(run), "--json"]).stdout)
    assert "claims" not in plain
    payload = json.loads(runner.invoke(app, ["show", str(run), "--json", "--claims"]).stdout)
    claims = payload["claims"]
    assert len(claims) == payload["summary"][0]["n_claims"] > 0
    assert {"sample_id", "claim", "label", "subtype", "label_reason", "error"} <= set(claims[0])
    assert isinstance(claims[0]["spans"], list) and "raw_output" not in claims[0]


# --- 14: messages name things that exist -------------------------------------------------------------------


@pytest.mark.parametrize("command", [["show"], ["compare", "--out", "OUT"]])
def test_a_missing_run_directory_does_not_exist(tmp_path, command):
    missing = tmp_path / "nope"
    args = [command[0], str(missing), *[str(tmp_path / "o") if a == "OUT" else a for a in command[1:]]]
    line = _one_line_error(runner.invoke(app, args))
    assert f"{missing} does not exist" in line and "no run.sqlite" not in line


def test_audit_of_a_missing_run_does_not_exist(run, tmp_path):
    result = runner.invoke(
        app, ["audit", "--baseline", str(run), "--current", str(tmp_path / "nope"), "--out", str(tmp_path / "a")]
    )
    assert "does not exist" in _one_line_error(result)


def test_anthropic_without_a_key_names_the_environment_variable_only(tmp_path):
    line = _one_line_error(
        runner.invoke(
            app,
            [
                "measure",
                str(EXAMPLES),
                "--out",
                str(tmp_path / "r"),
                "--extractor",
                "fake",
                "--judge",
                "anthropic:claude-x",
            ],
        )
    )
    assert "ANTHROPIC_API_KEY" in line and "api_key=" not in line


def test_calibrate_with_neither_option_asks_for_one_and_does_not_say_not_both(tmp_path):
    result = runner.invoke(app, ["calibrate", str(tmp_path)])
    assert result.exit_code == 2
    assert "--labels FILE" in result.output and "--export-sample N" in result.output
    assert "not both" not in result.output  # issue #38: neither option is not "both"
    both = runner.invoke(app, ["calibrate", str(tmp_path), "--labels", "x.csv", "--export-sample", "3"])
    assert both.exit_code == 2 and "not both" in both.output
