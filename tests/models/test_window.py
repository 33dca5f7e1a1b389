"""Any model's window (#45 item 7): a local OpenAI-compatible server with a small window, at the wire level.

The simulator serves a 2,048-token window as llama.cpp (refuses a longer prompt, stops the answer where the window
ends) or vLLM does (refuses a prompt whose max_tokens do not fit beside it), and says so at /props and /v1/models.
Nothing of ours is mocked: the openai SDK sends every request."""

from __future__ import annotations

import asyncio

import pytest

from hallumeasure import measure
from hallumeasure.core.types import ErrorKind
from hallumeasure.models.factory import build_model_api
from hallumeasure.models.model import Model
from hallumeasure.testing.openai_server import OpenAIServer

KEY = "sk-local-window-test"
#: A source that fits the window only when cut, and a response of five claims.
SOURCE = " ".join(
    f"Paragraph {i}: the Harlow Street Library reopened on 3 March after a 14-month renovation that cost "
    f"2.1 million pounds, and it now opens on Sundays from April; the children's wing has {i} new rooms."
    for i in range(1, 25)
)
RESPONSE = (
    "The Harlow Street Library reopened on 3 March. The renovation took 14 months. It cost 2.1 million pounds. "
    "It opens on Sundays from April. The children's wing has 7 new rooms."
)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _window_of(spec: str) -> int | None:
    async def go():
        model = Model(build_model_api(spec))
        try:
            return await model.window()
        finally:
            await model.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("rule", ["llama.cpp", "vllm"])
@pytest.mark.parametrize("mode", ["cot-one", "cot-all"])
@pytest.mark.parametrize("extractor", ["offline", "llm"])
def test_a_2048_token_server_runs_without_a_context_length_error_row(tmp_path, mode, rule, extractor):
    samples = [{"id": f"s{i}", "context": SOURCE, "response": RESPONSE} for i in range(3)]
    with OpenAIServer(context_window=2048, window_rule=rule) as srv:
        spec = f"openai:smollm2-135m?base_url={srv.base_url}"
        run = measure(
            samples,
            judge=spec,
            extractor="offline" if extractor == "offline" else spec,
            mode=mode,
            out=tmp_path / "run",
        )
        refused = list(srv.window_refusals)
        asked = [call.max_tokens for call in srv.calls]
    assert refused == []  # not one request over the window
    assert run.claims["error"].isna().all(), run.claims["error"].dropna().tolist()
    assert run.responses["error"].isna().all()
    assert asked and max(asked) < 2048  # the answer budget is sized to the window, not 1,024 or 4,096
    judge = run.manifest.settings["judge"]
    assert judge["context_window"] == 2048
    assert len(run.claims) >= 3 * (5 if extractor == "offline" else 1)
    verdicts = [v for r in run.results for v in r.verdicts]
    assert all(v.shown for v in verdicts)  # the source was cut to fit


def test_the_same_run_without_sizing_fails_on_every_claim_as_the_issue_saw(tmp_path):
    """The baseline: a window the judge cannot know (not listed, not given) and the facts' 128k: every request
    is refused, and the error rows are one kind, with one line in the summary."""
    samples = [{"id": "s0", "context": SOURCE, "response": RESPONSE}]
    with OpenAIServer(context_window=2048, list_window=False) as srv:
        run = measure(
            samples,
            judge=f"openai:smollm2-135m?base_url={srv.base_url}",
            extractor="offline",
            mode="cot-one",
            out=tmp_path / "run",
            max_retries=0,
        )
        assert srv.window_refusals
    kinds = {v.error_kind for r in run.results for v in r.verdicts}
    assert kinds == {ErrorKind.WINDOW}
    reasons = run.error_reasons
    assert len(reasons) == 1 and reasons[0].count == 5 and reasons[0].kind == ErrorKind.WINDOW


def test_a_window_given_in_the_spec_is_used_and_the_server_is_not_asked():
    with OpenAIServer(context_window=4096) as srv:
        assert _window_of(f"openai:m?base_url={srv.base_url}&context_window=2048") == 2048
        assert srv.fact_requests == []


@pytest.mark.parametrize("rule", ["llama.cpp", "vllm"])
def test_the_window_is_asked_of_the_server(rule):
    with OpenAIServer(context_window=3000, window_rule=rule) as srv:
        assert _window_of(f"openai:m?base_url={srv.base_url}") == 3000
        assert srv.fact_requests == ["/props"]
    with OpenAIServer(context_window=3000, list_window=False) as srv:
        assert _window_of(f"openai:m?base_url={srv.base_url}") == 128_000  # the facts' default for openai:*


def test_models_list_entry_is_read_when_props_is_absent():
    """vLLM has no /props: its /v1/models entry's max_model_len gives the window."""

    class VLLM(OpenAIServer):
        def _server_facts(self, path):
            return None if path.rstrip("/") == "/props" else super()._server_facts(path)

    with VLLM(context_window=1500) as srv:
        assert _window_of(f"openai:simulated-open-model?base_url={srv.base_url}") == 1500


def test_hosted_openai_models_keep_the_facts_window():
    assert _window_of("openai:gpt-4.1-mini") == 1_047_576
