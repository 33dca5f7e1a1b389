"""`measure --extractor-option/--judge-option` against the local OpenAI-compatible simulator: the
options reach the server, the manifest records them with the resolved endpoint, and secrets are
refused and never echoed."""

import json

from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.testing import OpenAIServer

runner = CliRunner()
KEY = "sk-local-SENTINEL-never-print-me-0123456789"
CHAT = "langchain:langchain_openai:ChatOpenAI"


def _first_samples(tmp_path, n=3):
    path = tmp_path / "few.jsonl"
    path.write_text("".join(EXAMPLES.read_text().splitlines(keepends=True)[:n]))
    return path


def test_options_reach_the_server_and_the_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    samples, out = _first_samples(tmp_path), tmp_path / "run"
    with OpenAIServer() as srv:
        options = [
            "--extractor-option",
            "model=qwen-local",
            "--extractor-option",
            f"base_url={srv.base_url}",
            "--judge-option",
            "model=qwen-local",
            "--judge-option",
            f"base_url={srv.base_url}",
            "--judge-option",
            "temperature=0",
        ]
        result = runner.invoke(
            app,
            [
                "measure",
                str(samples),
                "--out",
                str(out),
                "--extractor",
                CHAT,
                "--judge",
                CHAT,
                "--mode",
                "cot-all",
                "--no-cache",
                *options,
            ],
        )
        assert result.exit_code == 0, result.output
        bodies, base_url = srv.bodies, srv.base_url
    assert bodies and {b["model"] for b in bodies} == {"qwen-local"}
    assert all("max_completion_tokens" in b for b in bodies)
    judged = [b for b in bodies if b.get("tool_choice", {}).get("function", {}).get("name") != "record_claims"]
    assert judged and all(b["temperature"] == 0 for b in judged)
    manifest_text = (out / "manifest.json").read_text()
    assert KEY not in manifest_text
    manifest = json.loads(manifest_text)
    assert manifest["judge"] == CHAT  # the options are settings of the judge, recorded beside it
    judge = manifest["settings"]["judge"]
    assert (judge["model"], judge["base_url"], judge["temperature"], judge["client_max_retries"]) == (
        "qwen-local",
        base_url,
        0,
        0,
    )


def test_a_secret_option_is_refused_without_echoing_it(tmp_path):
    result = runner.invoke(
        app,
        ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--judge", CHAT, "--judge-option", f"api_key={KEY}"],
    )
    assert result.exit_code == 2 and "looks like a secret" in result.output and KEY not in result.output


def test_options_for_the_offline_judge_are_refused(tmp_path):
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "r"), "--judge-option", "x=1"])
    assert result.exit_code == 2 and "judge 'offline': unknown option x; valid options: threshold" in result.output
