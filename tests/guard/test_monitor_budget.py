"""``monitor --max-cost``: the same budget per monitor run as ``measure`` has, against the Anthropic simulator."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.sampling import in_sample
from hallumeasure.core.types import Usage
from hallumeasure.guard import Guard, GuardSettings
from hallumeasure.guard.app import create_app
from hallumeasure.guard.traffic import read_traffic
from hallumeasure.models.pricing import Price, cost
from hallumeasure.testing import AnthropicServer, default_answer
from hallumeasure.testing.calls import Answer, Call

PRICE = Price(input=Decimal(3), output=Decimal(15))
CONTEXT = "The Kessler Public Library opens at 9 a.m. and closes at 9 p.m. on weekdays. It holds 120,000 books."


@pytest.fixture
def log_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "traffic"
    with TestClient(create_app(GuardSettings(log_sample=1.0, log_dir=folder), guard=Guard())) as client:
        for n in range(12):
            text = f"The library holds {210 + n * 10},000 books. It opens at 9 a.m. on weekdays."
            assert client.post("/v1/check", json={"response": text, "context": CONTEXT}).status_code == 200
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"anthropic:claude-test": {"input": "3", "output": "15"}}))
    monkeypatch.setenv("HALLUMEASURE_PRICES", str(prices))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    return folder


def _monitor(srv: AnthropicServer, log_dir: Path, *extra: str):
    args = ["monitor", str(log_dir), "--judge", f"anthropic:claude-test?base_url={srv.base_url}",
            "--extractor", "offline", *extra]  # fmt: skip
    return CliRunner().invoke(app, args)


def _billed(srv: AnthropicServer) -> float:
    t = srv.billed()
    usage = Usage(input_tokens=t.input_tokens, output_tokens=t.output_tokens, cache_read_tokens=t.cache_read_tokens,
                  cache_write_tokens=t.cache_write_tokens)  # fmt: skip
    return float(cost(usage, PRICE))


def test_a_budget_picks_logged_requests_in_hash_order_and_spends_within_it(log_dir: Path) -> None:
    records, _ = read_traffic(log_dir)
    with AnthropicServer() as srv:
        done = _monitor(srv, log_dir, "--json", "--max-cost", "0.15")
        assert done.exit_code == 0, done.output
        report = json.loads(done.output)
        budget = report["budget"]
        picked = [r for r in records if in_sample(r.request_id, budget["threshold"])]
        assert 0 < budget["picked"] == len(picked) == report["n_logged"] < len(records)
        assert budget["left_out"] == len(records) - len(picked)
        assert 0 < budget["spent"] <= 0.15 and budget["spent"] == pytest.approx(_billed(srv), abs=1e-5)
        # only the picked responses were sent to the judge
        numbers = {r.request_id: r.request.response.split()[3] for r in records}  # "210,000" ..., none in the context
        judged = {rid for rid, number in numbers.items() if any(number in c.prompt_text for c in srv.calls)}
        assert judged == {r.request_id for r in picked}


def test_the_cap_stops_a_monitor_run_before_the_spend_passes_it(log_dir: Path) -> None:
    asked: set[str] = set()

    def wordy(call: Call) -> Answer:
        """Long answers, and a first answer per claim with a label the schema refuses (so a re-ask): the run
        costs more than the estimate counts, and the cap is what stops it."""
        answer = default_answer(call)
        if call.tool is not None and call.tool["name"] == "record_verdict" and call.prompt_text not in asked:
            asked.add(call.prompt_text)
            answer = dataclasses.replace(answer, tool_input={"label": "certainly", "subtype": "x"})
        tokens = min(1000, call.max_tokens or 1000)
        return dataclasses.replace(answer, usage=dataclasses.replace(answer.usage, output_tokens=tokens))

    with AnthropicServer(answer=wordy) as srv:
        done = _monitor(srv, log_dir, "--max-cost", "0.15")
        assert done.exit_code == 3, done.output
        assert "budget reached" in done.output and "Run monitor again with a larger --max-cost" in done.output
        assert 0.15 / 2 < _billed(srv) <= 0.15
