"""``--max-cost``: a budget picks responses in the order of a hash of their id and caps what a run's requests cost,
against the local Anthropic simulator (what it billed, priced at the test's prices, is what was spent)."""

import dataclasses
import json
from decimal import Decimal

import pytest
from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.sampling import hash_share, in_sample
from hallumeasure.core.types import Usage
from hallumeasure.models.pricing import Price, cost
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.run import Run
from hallumeasure.testing import AnthropicServer, default_answer

runner = CliRunner()
CHEAP = Price(input=Decimal(3), output=Decimal(15))
DEAR = Price(input=Decimal(15), output=Decimal(75))


@pytest.fixture
def priced(tmp_path, monkeypatch):
    """Prices of the simulator's two models, and its key."""
    prices = tmp_path / "prices.json"
    fields = {"anthropic:claude-sim": CHEAP, "anthropic:claude-dear": DEAR}
    prices.write_text(json.dumps({k: {"input": str(p.input), "output": str(p.output)} for k, p in fields.items()}))
    monkeypatch.setenv("HALLUMEASURE_PRICES", str(prices))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")


def _input(path, n=24):
    rows = [json.loads(x) for x in EXAMPLES.read_text().splitlines() if x.strip()]
    path.write_text("".join(json.dumps({**rows[i % len(rows)], "id": f"s-{i}"}) + "\n" for i in range(n)))
    return path


def _measure(srv, data, out, *extra, judge="claude-sim"):
    args = ["measure", str(data), "--out", str(out), "--judge", f"anthropic:{judge}",
            "--extractor", "offline", "--judge-option", f"base_url={srv.base_url}", *extra]  # fmt: skip
    return runner.invoke(app, args)


def _billed(srv, price=CHEAP):
    tokens = srv.billed()
    usage = Usage(input_tokens=tokens.input_tokens, output_tokens=tokens.output_tokens,
                  cache_read_tokens=tokens.cache_read_tokens, cache_write_tokens=tokens.cache_write_tokens)  # fmt: skip
    return float(cost(usage, price))


def _wordy(call):
    """Answers that bill more output than the estimate counts (400 tokens each), so the cap is what stops."""
    answer = default_answer(call)
    return dataclasses.replace(
        answer, usage=dataclasses.replace(answer.usage, output_tokens=min(400, call.max_tokens or 400))
    )


def test_picks_are_nested_in_hash_order_and_a_threshold_pairs_two_judges(tmp_path, priced):
    data = _input(tmp_path / "in.jsonl")
    with AnthropicServer() as srv:
        picks, thresholds = [], []
        for budget in ("0.1", "0.2", "0.4"):
            done = _measure(srv, data, tmp_path / f"r{budget}", "--max-cost", budget, "--dry-run")
            assert done.exit_code == 0, done.output
            assert "picks" in done.output and srv.requests == []  # a dry run calls nothing
        for budget in ("0.1", "0.2", "0.4"):
            done = _measure(srv, data, tmp_path / f"r{budget}", "--max-cost", budget)
            assert done.exit_code == 0, done.output
            run = Run.load(tmp_path / f"r{budget}")
            record = run.manifest.settings["budget"]
            ids = [s.id for s in run.samples]
            # the responses whose hash is below the recorded threshold, and the cheapest-first prefix in hash order
            everyone = sorted((s.id for s in load_samples(data).samples), key=hash_share)
            assert sorted(ids, key=hash_share) == everyone[: len(ids)]
            assert ids and all(in_sample(i, record["threshold"]) for i in ids) and record["picked"] == len(ids)
            assert record["left_out"] == 24 - len(ids) and run.manifest.settings["sampled_out"] == 24 - len(ids)
            assert 0 < record["spent"] <= float(budget) and record["estimated_cost"] <= float(budget)
            picks.append(set(ids))
            thresholds.append(record["threshold"])
        assert picks[0] <= picks[1] <= picks[2] and len(picks[0]) < len(picks[2]) < 24
        # A dearer judge given the cheap run's threshold as its sample rate measures the same responses.
        done = _measure(srv, data, tmp_path / "dear", "--sample-rate", repr(thresholds[1]), judge="claude-dear")
        assert done.exit_code == 0, done.output
        assert {s.id for s in Run.load(tmp_path / "dear").samples} == picks[1]
        # ... and given the same budget it picks fewer, all of them among the cheap judge's.
        done = _measure(srv, data, tmp_path / "dear-budget", "--max-cost", "0.2", judge="claude-dear")
        assert done.exit_code == 0, done.output
        assert {s.id for s in Run.load(tmp_path / "dear-budget").samples} < picks[1]


def test_the_cap_stops_the_run_before_the_spend_passes_it_and_resume_finishes_without_paying_twice(tmp_path, priced):
    data = _input(tmp_path / "in.jsonl", n=16)
    with AnthropicServer(answer=_wordy) as srv:
        out = tmp_path / "run"
        done = _measure(srv, data, out, "--max-cost", "0.3")
        assert done.exit_code == 3, done.output
        assert "budget reached" in done.output and "--resume" in done.output
        run = Run.load(out)
        first = run.manifest.settings["budget"]
        assert run.manifest.status == "budget_spent" and run.unfinished
        paid = _billed(srv)
        # what the run says it spent is what the simulator billed, and it is within the budget
        assert first["spent"] == pytest.approx(paid, abs=1e-5) and paid <= 0.3
        assert paid > 0.3 / 2  # it went on while the next request's worst case fitted
        stored, sent = len(run.results), len(srv.requests)
        assert 0 < stored < first["picked"]
        # Resumed with a larger budget: the same pick, finished, and no request sent twice.
        done = _measure(srv, data, out, "--max-cost", "1", "--resume")
        assert done.exit_code == 0, done.output
        run = Run.load(out)
        record = run.manifest.settings["budget"]
        assert run.manifest.status == "complete" and len(run.results) == first["picked"]
        assert record["threshold"] == first["threshold"] and record["max_cost"] == 1
        bodies = [json.dumps(b, sort_keys=True) for b in srv.bodies]
        assert len(bodies) > sent and len(set(bodies)) == len(bodies)
        assert record["spent"] == pytest.approx(_billed(srv), abs=1e-5)


def test_keyless_judges_cost_nothing_so_a_budget_changes_nothing(tmp_path):
    data = _input(tmp_path / "in.jsonl")
    done = runner.invoke(app, ["measure", str(data), "--out", str(tmp_path / "r"), "--max-cost", "0.0001"])
    assert done.exit_code == 0, done.output
    assert "changes nothing" in done.output
    run = Run.load(tmp_path / "r")
    assert len(run.samples) == 24 and run.manifest.settings["budget"]["keyless"] is True


def test_a_judge_without_a_price_is_refused_before_anything_is_sent(tmp_path, priced):
    data = _input(tmp_path / "in.jsonl")
    with AnthropicServer() as srv:
        done = _measure(srv, data, tmp_path / "r", "--max-cost", "1", judge="claude-unpriced")
        assert done.exit_code != 0
        assert "price of 'anthropic:claude-unpriced'" in done.output and "HALLUMEASURE_PRICES" in done.output
        assert srv.requests == []
        # with a price given, it runs
        (tmp_path / "more.json").write_text(json.dumps({"anthropic:claude-unpriced": {"input": 1, "output": 5}}))
        runner_env = {"HALLUMEASURE_PRICES": str(tmp_path / "more.json")}
        args = ["measure", str(data), "--out", str(tmp_path / "r"), "--judge", "anthropic:claude-unpriced",
                "--judge-option", f"base_url={srv.base_url}", "--max-cost", "1"]  # fmt: skip
        done = runner.invoke(app, args, env=runner_env)
        assert done.exit_code == 0, done.output


def test_a_budget_is_refused_with_batch_mode(tmp_path, priced):
    data = _input(tmp_path / "in.jsonl")
    done = runner.invoke(app, ["measure", str(data), "--out", str(tmp_path / "r"), "--max-cost", "1", "--batch",
                               "--judge", "anthropic:claude-sim"])  # fmt: skip
    assert done.exit_code != 0 and "--max-cost" in done.output and "--batch" in done.output


def test_a_resumed_run_keeps_whether_it_had_a_budget(tmp_path):
    data = _input(tmp_path / "in.jsonl", n=4)
    out = tmp_path / "r"
    assert runner.invoke(app, ["measure", str(data), "--out", str(out)]).exit_code == 0
    done = runner.invoke(app, ["measure", str(data), "--out", str(out), "--resume", "--max-cost", "1"])
    assert done.exit_code != 0 and "started without max_cost" in done.output
