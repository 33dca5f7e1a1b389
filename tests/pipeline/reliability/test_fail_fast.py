"""A provider that cannot be reached stops the run at once (exit 2), naming the URL and never the
key, instead of turning every sample into an error row."""

import socket

from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.testing import AnthropicServer

KEY = "sk-ant-never-shown-4242"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _measure(tmp_path, monkeypatch, base_url: str):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
    spec = "anthropic:claude-x"
    args = ["measure", str(EXAMPLES), "--out", str(tmp_path / "run"), "--no-cache"]
    return CliRunner().invoke(app, [*args, "--judge", spec, "--extractor", spec, "--max-retries", "1"])


def test_a_wrong_base_url_stops_the_run_with_exit_2_and_shows_the_url(tmp_path, monkeypatch):
    url = f"http://127.0.0.1:{_closed_port()}"
    result = _measure(tmp_path, monkeypatch, url)
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert "cannot connect to" in flat and url in flat
    assert KEY not in result.output
    assert "error rows" not in result.output  # it stopped: no run of error rows was measured
    assert "0 sample(s) stored" in flat and "--resume" in flat


def test_a_reachable_server_that_fails_is_not_mistaken_for_a_wrong_url(tmp_path, monkeypatch):
    with AnthropicServer(answer=lambda call: (_ for _ in ()).throw(RuntimeError("boom"))) as srv:
        result = _measure(tmp_path, monkeypatch, srv.base_url)
    assert result.exit_code == 3, result.output  # error rows, as any failing provider gives
    assert "cannot connect" not in result.output
