"""The CLI never surprises (issue #25 items 6 and 8): -v anywhere, help that fits 80 columns, "did you mean",
the settings file named, the provider usage of a run, no lock files left, times in a pipe, no bill for keyless
judges, mitigation printed in words."""

import json
import os
import re
import subprocess
import sys

import pytest
from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.cli.output import duration, usage_line
from hallumeasure.core.types import Usage
from hallumeasure.testing import AnthropicServer

runner = CliRunner()
COMMANDS = ["measure", "mitigate", "bench", "show", "view", "compare", "audit", "plan", "calibrate"]


def _cli(*args, env=None, timeout=300):
    """The CLI in its own process, output piped (as in a CI log)."""
    return subprocess.run(
        [sys.executable, "-m", "hallumeasure.cli", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def _fake_run(tmp_path, name="r", *extra):
    out = tmp_path / name
    result = runner.invoke(
        app, ["measure", str(EXAMPLES), "--out", str(out), "--extractor", "fake", "--judge", "fake", *extra]
    )
    assert result.exit_code == 0, result.output
    return out, result


# --- -v before or after the command ------------------------------------------------------------


def test_verbose_is_accepted_after_the_command_name_and_counts_with_the_one_before(tmp_path):
    args = ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--overwrite", "--extractor", "fake"]
    after = _cli(*args, "--judge", "fake", "-v")
    assert after.returncode == 0, after.stderr
    assert "INFO hallumeasure.pipeline.run: measuring 16 samples" in after.stderr and " DEBUG " not in after.stderr
    both = _cli("-v", *args, "--judge", "fake", "--verbose")  # -v before and after: -vv
    assert "DEBUG hallumeasure.pipeline.judging: sample " in both.stderr
    for command in COMMANDS:  # every command lists it
        assert "-v, --verbose" in runner.invoke(app, [command, "-h"]).output, command


# --- help --------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_80_columns_and_names_every_option_whole(command):
    result = _cli(command, "-h", env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in result.stdout  # nothing cut
    for artefact in ("<bool>", "<str>", "<int", "<float", "<path>", "<list", "│"):  # typer's labels, rich's boxes
        assert artefact not in result.stdout, artefact
    assert not re.search(r"\{[a-z_]+\}", result.stdout)  # an argument as typer's {name}
    # every option of the command appears whole in its help
    from typer.main import get_command

    group = get_command(app)
    click_command = group.get_command(None, command)  # type: ignore[arg-type]
    for param in click_command.params:
        for opt in getattr(param, "opts", []):
            if opt.startswith("--"):
                assert re.search(rf"(^|[\s,/]){re.escape(opt)}(?![\w-])", result.stdout, re.M), (command, opt)


def test_measure_help_is_short_enough_to_read_and_keeps_bracketed_text():
    result = _cli("measure", "-h", env={**os.environ, "COLUMNS": "80"})
    assert len(result.stdout.splitlines()) < 160  # rich's boxes made it 310 lines at 80 columns
    assert "[doc2]" in result.stdout  # --citation-pattern's example, once swallowed as markup
    assert "Usage: python -m hallumeasure.cli measure [OPTIONS] INPUT" in result.stdout


# --- did you mean ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "typo", "meant"),
    [
        ("--judge", "offlin", "offline"),
        ("--judge", "offline+nl", "offline+nli"),
        ("--judge", "anthropc:claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("--extractor", "bedrok:amazon.nova-pro-v1:0", "bedrock:amazon.nova-pro-v1:0"),
        ("--judge", "fak", "fake"),
    ],
)
def test_a_misspelt_judge_or_extractor_gets_did_you_mean(tmp_path, option, typo, meant):
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), option, typo])
    assert result.exit_code == 2
    assert f"did you mean '{meant}'?" in result.output and "unknown model provider" in result.output
    assert not (tmp_path / "r").exists()  # refused before anything is written


def test_a_misspelt_option_gets_the_close_ones(tmp_path):
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--judg", "offline"])
    assert result.exit_code == 2 and "--judge" in result.output and "No such option: --judg" in result.output


# --- the settings file -------------------------------------------------------------------------


def test_one_line_names_the_settings_file_in_use(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "hallumeasure.toml"
    config.write_text('extractor = "fake"\njudge = "fake"\nconcurrency = 2\n')
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--concurrency", "3"])
    assert result.exit_code == 0, result.output
    named = [line for line in result.output.splitlines() if line.startswith("settings: ")]
    assert named == [f"settings: {config} (2 setting(s) applied, 1 overridden by options given here)"]
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["extractor"] == "fake:demo" or manifest["extractor"].startswith("fake")


def test_no_settings_line_without_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()  # stop the search for a file here
    _, result = _fake_run(tmp_path)
    assert "settings: " not in result.output


def test_settings_file_errors_name_the_key_as_written_and_suggest_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hallumeasure.toml").write_text("max-concurency = 2\n")
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "unknown setting(s) max-concurency (did you mean max-concurrency?)" in result.output
    assert "max_" not in result.output  # no snake_case key the user never wrote


# --- the end of a run --------------------------------------------------------------------------


def test_an_llm_run_ends_with_calls_tokens_cache_hits_and_cost(tmp_path, monkeypatch):
    few = tmp_path / "few.jsonl"
    few.write_text("".join(EXAMPLES.read_text().splitlines(keepends=True)[:2]))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    spec = "anthropic:claude-sonnet-4-5"
    with AnthropicServer() as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        args = ["measure", str(few), "--extractor", spec, "--judge", spec]
        first = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
        again = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert first.exit_code == 0, first.output
    usage = json.loads((tmp_path / "a" / "manifest.json").read_text())["usage"]
    lines = [line for line in first.output.splitlines() if line.startswith("provider usage: ")]
    assert len(lines) == 1
    line = lines[0]
    assert f"{usage['calls']:,} call(s) sent, 0 answered from the request cache" in line
    assert f"{usage['input_tokens']:,} input + {usage['output_tokens']:,} output tokens" in line
    assert re.search(r"cost about \$\d+\.\d{4} at list prices of ", line)
    # the second run is answered from the request cache: no call sent, and it says so
    cached = next(x for x in again.output.splitlines() if x.startswith("provider usage: "))
    assert f"0 call(s) sent, {usage['calls']:,} answered from the request cache" in cached


def test_a_keyless_run_prints_no_usage_line(tmp_path):
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0 and "provider usage" not in result.output


def test_usage_line_prices_one_model_and_says_why_it_cannot_price_two():
    usage = Usage(calls=3, cached_calls=1, input_tokens=1_000_000, output_tokens=100_000)
    line = usage_line(usage, ["anthropic:claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"])
    # $3 per million input, $15 per million output for Sonnet 4.5 in the default table
    assert line is not None and "cost about $4.5000" in line
    two = usage_line(usage, ["anthropic:claude-sonnet-4-5", "anthropic:claude-haiku-4-5"])
    assert two is not None and "cost not split" in two
    unknown = usage_line(usage, ["langchain:x:Y"])
    assert unknown is not None and "cost unknown (no price for langchain:x:Y" in unknown
    assert usage_line(Usage(), ["offline"]) is None


def test_a_finished_run_keeps_no_lock_files(tmp_path):
    out, _ = _fake_run(tmp_path)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []
    # and a later writer still gets the lock (resume)
    args = ["measure", str(EXAMPLES), "--out", str(out), "--extractor", "fake", "--judge", "fake", "--resume"]
    assert runner.invoke(app, args).exit_code == 0
    assert not (out / ".lock").exists() and not (out / ".lock.owner").exists()


def test_progress_lines_in_a_pipe_show_time_that_moves():
    assert [duration(x) for x in (0.04, 0.4, 9.94, 12.4, 65, 3 * 3600 + 7 * 60)] == [
        "0.0 s",
        "0.4 s",
        "9.9 s",
        "12 s",
        "1 min 05 s",
        "3 h 07 min",
    ]


def test_progress_lines_in_a_pipe_never_all_say_zero(tmp_path):
    result = _cli(
        "measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--extractor", "fake", "--judge", "fake", "--no-cache"
    )
    assert result.returncode == 0, result.stderr
    times = re.findall(r"measuring: \d+/16 samples \(\d+%\), (\S+ s) elapsed", result.stderr)
    assert times and all(re.fullmatch(r"\d+\.\d s", t) for t in times)
    assert " 0 s elapsed" not in result.stderr


def test_plan_gives_no_token_or_cost_estimate_for_keyless_judges(tmp_path):
    run = tmp_path / "base"
    assert runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(run)]).exit_code == 0
    result = runner.invoke(app, ["plan", "--baseline", str(run), "--rise", "0.05"])
    assert result.exit_code == 0, result.output
    assert "calls no provider" in result.output and "no cost" in result.output
    assert "input tokens" not in result.output and "$" not in result.output
    priced = runner.invoke(
        app, ["plan", "--baseline", str(run), "--rise", "0.05", "--judge", "anthropic:claude-sonnet-4-5"]
    )
    assert "input and" in priced.output and "$" in priced.output


def test_dry_run_of_a_keyless_run_counts_no_tokens(tmp_path):
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--dry-run"])
    assert result.exit_code == 0 and "call no provider" in result.output
    assert "input and" not in result.output and "output tokens" not in result.output


# --- mitigate ----------------------------------------------------------------------------------


def test_mitigate_prints_words_not_python_booleans_and_no_tokens_for_the_offline_rewriter(tmp_path):
    run = tmp_path / "run"
    assert runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(run)]).exit_code == 0
    result = runner.invoke(app, ["mitigate", str(run), "--out", str(tmp_path / "fixed")])
    assert result.exit_code in (0, 3), result.output
    assert "rewrite output tokens" not in result.output and "True" not in result.output
    report = (tmp_path / "fixed" / "mitigation.md").read_text()
    assert "hallucinated yes -> no" in report
    assert "True" not in report and "False" not in report and "rewrite output tokens" not in report


def test_mitigate_with_a_model_rewriter_ends_with_its_usage_line(tmp_path):
    run, _ = _fake_run(tmp_path)
    result = runner.invoke(app, ["mitigate", str(run), "--rewriter", "fake", "--out", str(tmp_path / "fixed")])
    assert result.exit_code in (0, 3), result.output
    text = " ".join(result.output.split())  # lines wrap at 80 columns (issue #38)
    assert re.search(r"rewrite calls \d+, output tokens \d+", text)
    assert text.count("provider usage: ") == 1
    usage = text[text.index("provider usage: ") :]
    assert "call(s) sent" in usage and "cost about $0.0000" in usage


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "--baseline-rate", "0.2", "--rise", "0.05", "--judge", "antropic:claude-x"],
        ["bench", "summedits", "--judge", "antropic:claude-x"],
        ["mitigate", "RUN", "--rewriter", "antropic:claude-x", "--out", "OUT"],
    ],
)
def test_did_you_mean_reaches_every_command_that_takes_a_model_spec(tmp_path, args):
    run, _ = _fake_run(tmp_path) if "RUN" in args else (None, None)
    args = [str(run) if a == "RUN" else str(tmp_path / "out") if a == "OUT" else a for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "did you mean 'anthropic:claude-x'?" in result.output, result.output
