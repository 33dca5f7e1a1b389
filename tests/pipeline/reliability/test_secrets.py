"""No secret leaks: sentinel credentials are set for full CLI runs at debug log level (-vv), against
simulators that succeed and simulators whose error messages and headers echo the credentials back
(the worst a provider or a proxy could do). Every file the runs wrote (run directories, request
cache), everything printed (stdout, stderr, logs) and the texts of the exceptions raised in-process
are scanned for the secrets and for fragments of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
import traceback
from pathlib import Path

import boto3
import pytest
from pipeline.reliability.samples import SAMPLES
from testdata import REPO

from hallumeasure.core.errors import ProviderError
from hallumeasure.judges.llm.extract import EXTRACT_TOOL
from hallumeasure.judges.llm.outputs import ExtractedClaims
from hallumeasure.judges.llm.parsing import ask_structured
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import GenerateRequest, Message
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.model import Model
from hallumeasure.testing import AnthropicServer, BedrockServer
from hallumeasure.testing.anthropic_server import error_reply as anthropic_error
from hallumeasure.testing.bedrock_server import error_reply as bedrock_error

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + secrets.token_hex(24),
    "AWS_ACCESS_KEY_ID": "AKIA" + secrets.token_hex(8).upper(),
    "AWS_SECRET_ACCESS_KEY": secrets.token_urlsafe(30),
    "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjE" + secrets.token_urlsafe(40),
}


def _needles() -> list[bytes]:
    """Each secret, and its last 12 characters (a secret cut short in a message still leaks)."""
    out = []
    for value in SECRETS.values():
        out += [value.encode(), value[-12:].encode()]
    return out


def _leaks(data: bytes) -> list[str]:
    return [n.decode() for n in _needles() if n in data]


def _scan_tree(root: Path) -> dict[str, list[str]]:
    found = {}
    for path in root.rglob("*"):
        if path.is_file():
            leaks = _leaks(path.read_bytes())
            if leaks:
                found[str(path.relative_to(root))] = leaks
    return found


class _Echo:
    """Answers through ``reply(headers)`` with the credentials it received, and the secrets too."""

    def __init__(self, server_cls, make_error, *, fail: bool = True) -> None:
        self.server_cls, self.make_error, self.fail = server_cls, make_error, fail

    def server(self):
        outer = self

        class Echoing(self.server_cls):
            def respond(self, method, path, headers, raw):
                if not outer.fail:
                    return super().respond(method, path, headers, raw)
                received = " ".join(
                    f"{k}={v}"
                    for k, v in headers.items()
                    if k in ("x-api-key", "authorization", "x-amz-security-token")
                )
                message = f"invalid credentials {received}; expected {' '.join(SECRETS.values())}"
                reply = outer.make_error(message)
                reply.headers["x-debug-credentials"] = SECRETS["ANTHROPIC_API_KEY"] + SECRETS["AWS_ACCESS_KEY_ID"]
                with self._lock:
                    self.requests.append(None)  # counted, not parsed
                return reply

        return Echoing()


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hallumeasure.cli", "-vvv", *args], env=env, capture_output=True, timeout=180
    )


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(s.model_dump(mode="json")) + "\n" for s in SAMPLES[:3]), encoding="utf-8")
    return path


def test_full_cli_runs_at_debug_level_leak_no_secret(tmp_path, data):
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        **SECRETS,
        "PYTHONPATH": str(REPO),
        "HALLUMEASURE_CACHE_DIR": str(cache),
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    outputs: list[bytes] = []
    runs = []
    for provider, server_cls, make_error in [
        ("anthropic", AnthropicServer, lambda m: anthropic_error(401, m)),
        ("bedrock", BedrockServer, lambda m: bedrock_error(403, m, code="UnrecognizedClientException")),
    ]:
        spec = "anthropic:claude-sim" if provider == "anthropic" else "bedrock:anthropic.claude-sim"
        for fail in (False, True):
            with _Echo(server_cls, make_error, fail=fail).server() as srv:
                run_env = {**env, "ANTHROPIC_BASE_URL": srv.url, "HALLUMEASURE_BEDROCK_ENDPOINT": srv.url}
                out = tmp_path / f"{provider}-{'fail' if fail else 'ok'}"
                # The failing runs must not be answered from the cache that the good runs filled.
                result = _cli(
                    [
                        "measure",
                        str(data),
                        "--out",
                        str(out),
                        "--extractor",
                        spec,
                        "--judge",
                        spec,
                        "--max-retries",
                        "1",
                        "--timeout",
                        "10",
                        *(["--no-cache"] if fail else []),
                    ],
                    run_env,
                )
                assert srv.requests, f"the run never reached the simulator: {result.stderr.decode()[-3000:]}"
            assert result.returncode == (3 if fail else 0), result.stderr.decode()[-2000:]
            assert b"DEBUG" in result.stderr  # debug logging was on
            outputs += [result.stdout, result.stderr]
            runs.append(out)
            if fail:  # 'show' prints the stored error rows, which quote the provider's message
                shown = _cli(["show", str(out), "--claims"], run_env)
                outputs += [shown.stdout, shown.stderr]
    # A run that fails with provider errors really recorded them (with the provider's message, scrubbed).
    failed = (tmp_path / "anthropic-fail" / "run.sqlite").read_bytes()
    assert b"invalid credentials" in failed and b"***" in failed
    for index, output in enumerate(outputs):
        assert not _leaks(output), f"output {index} leaks {_leaks(output)}: {output.decode()[-1500:]}"
    for root in [*runs, cache]:
        assert not _scan_tree(root), f"{root} holds a secret: {_scan_tree(root)}"


def test_exception_texts_and_settings_hold_no_secret(monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    request = GenerateRequest(system="s", messages=(Message.user("u"),), tool=EXTRACT_TOOL)
    texts: list[str] = []
    for server_cls, make_error, build in [
        (AnthropicServer, lambda m: anthropic_error(401, m), lambda url: AnthropicAPI("claude-sim", base_url=url)),
        (
            BedrockServer,
            lambda m: bedrock_error(403, m, code="UnrecognizedClientException"),
            lambda url: BedrockAPI(
                "anthropic.claude-sim", endpoint_url=url, session=boto3.Session(region_name="us-east-1")
            ),
        ),
    ]:
        with _Echo(server_cls, make_error).server() as srv:
            api = build(srv.url)
            model = Model(api, max_retries=0)
            with pytest.raises(ProviderError) as caught:
                asyncio.run(model.generate(request))
            structured = asyncio.run(ask_structured(model, request, ExtractedClaims))
        exc = caught.value
        assert "invalid credentials" in str(exc)  # the provider's message is kept, scrubbed
        # Tracebacks do not show the SDK's error (no cause, and no context or a suppressed one).
        assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)
        texts += [
            str(exc),
            repr(exc),
            repr(exc.args),
            structured.error or "",
            repr(api.settings()),
            repr(model.settings()),
            repr(vars(exc)),
            "".join(traceback.format_exception(exc)),
        ]
    for text in texts:
        assert not _leaks(text.encode()), text


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_the_sdk_error_behind_a_provider_error_is_not_kept(monkeypatch, provider):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    request = GenerateRequest(system="s", messages=(Message.user("u"),), tool=EXTRACT_TOOL)
    if provider == "anthropic":
        server_cls, make_error = AnthropicServer, (lambda m: anthropic_error(401, m))
    else:
        server_cls, make_error = BedrockServer, (lambda m: bedrock_error(403, m, code="UnrecognizedClientException"))
    with _Echo(server_cls, make_error).server() as srv:
        api = (
            AnthropicAPI("claude-sim", base_url=srv.url)
            if provider == "anthropic"
            else BedrockAPI(
                "anthropic.claude-sim", endpoint_url=srv.url, session=boto3.Session(region_name="us-east-1")
            )
        )
        with pytest.raises(ProviderError) as caught:
            asyncio.run(Model(api, max_retries=0).generate(request))
    # Hidden from tracebacks is not enough ('from None' still keeps it as __context__): it must be gone.
    exc = caught.value
    assert exc.__cause__ is None and exc.__context__ is None, type(exc.__cause__ or exc.__context__).__name__


def test_a_redacted_value_is_also_removed_from_log_records(caplog, monkeypatch):
    """The CLI's logging filter: a library (or ours) logging a secret at debug level prints '***'."""
    import logging

    from hallumeasure.core.config import RedactingFilter

    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    logger = logging.getLogger("some.library")
    caplog.handler.addFilter(RedactingFilter())
    with caplog.at_level(logging.DEBUG, logger="some.library"):
        logger.debug(
            "headers: %s",
            {
                "x-api-key": SECRETS["ANTHROPIC_API_KEY"],
                "authorization": f"Credential={SECRETS['AWS_ACCESS_KEY_ID']}/x",
            },
        )
    assert not _leaks(caplog.text.encode()) and "***" in caplog.text
