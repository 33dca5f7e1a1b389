"""Traffic logging and ``hallumeasure monitor``: the guard's sampled traffic re-judged by an LLM judge
(the local Anthropic simulator), with precision, recall, rates and the exported disagreements."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy.stats import binomtest

from hallumeasure.guard import Guard, GuardSettings
from hallumeasure.guard.app import create_app
from hallumeasure.guard.monitor import Share
from hallumeasure.guard.traffic import TRAFFIC_FILE, read_traffic
from hallumeasure.stats.correction import stratified_ppi
from hallumeasure.testing import AnthropicServer, default_answer
from hallumeasure.testing.calls import Answer, Call

CONTEXT = "The Kessler Public Library opens at 9 a.m. and closes at 9 p.m. on weekdays. It holds 120,000 books."
RESPONSES = [
    "The library holds 120,000 books.",  # faithful: guard passes, judge agrees
    "The library holds 300,000 books.",  # changed: guard flags, judge agrees
    "The library closes at 9 p.m. on weekdays.",  # faithful
    "The library has a rooftop garden.",  # invented: the simulated judge calls it supported -> a disagreement
]


def reference_answer(call: Call) -> Answer:
    """A simulated LLM judge: 'contradicted' for the one claim that states 300,000, else supported."""
    answer = default_answer(call)
    if call.tool is not None and call.tool["name"] == "record_verdict" and answer.tool_input is not None:
        claim = call.prompt_text.rsplit("<claim>", 1)[-1]
        wrong = "300,000" in claim
        answer.tool_input.update(
            {
                "label": "contradicted" if wrong else "supported",
                "subtype": "number" if wrong else None,
                "subtype_reason": "the count differs" if wrong else None,
            }
        )
    return answer


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "traffic"
    settings = GuardSettings(log_sample=1.0, log_dir=folder)
    with TestClient(create_app(settings, guard=Guard())) as client:
        for text in RESPONSES:
            assert client.post("/v1/check", json={"response": text, "context": CONTEXT}).status_code == 200
    with (folder / TRAFFIC_FILE).open("a") as f:
        f.write('{"request_id": "torn", "time": "2026-')  # a line cut by a crash
    return folder


def test_the_log_holds_every_sampled_request_and_skips_a_torn_line(log_dir: Path) -> None:
    records, unreadable = read_traffic(log_dir)
    assert [r.request.response for r in records] == RESPONSES
    assert unreadable == 1
    assert [r.decision for r in records] == ["pass", "flag", "pass", records[3].decision]


def test_log_sample_needs_a_folder() -> None:
    with pytest.raises(ValueError, match="log_dir"):
        GuardSettings(log_sample=0.1)


def test_wilson_share_matches_scipy() -> None:
    share = Share.of(3, 40)
    ci = binomtest(3, 40).proportion_ci(method="wilson")
    assert (share.low, share.high) == pytest.approx((ci.low, ci.high))
    assert Share.of(0, 0).value is None
    assert Share.of(0, 10).low == 0.0 and 0 < Share.of(0, 10).high < 0.35


def _monitor(log_dir: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    with AnthropicServer(answer=reference_answer) as srv:
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "sk-test-" + "m" * 30,
            "ANTHROPIC_BASE_URL": srv.base_url,
            "HALLUMEASURE_CACHE_DIR": str(tmp_path / "cache"),
        }
        cmd = [sys.executable, "-m", "hallumeasure.cli", "monitor", str(log_dir), "--judge", "anthropic:claude-test",
               "--extractor", "offline", *extra]  # fmt: skip
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def test_monitor_rejudges_the_traffic_and_exports_disagreements(log_dir: Path, tmp_path: Path) -> None:
    disagreements = tmp_path / "disagree.jsonl"
    done = _monitor(log_dir, tmp_path, "--json", "--export-disagreements", str(disagreements))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    records, _ = read_traffic(log_dir)
    acted = [r.decision != "pass" for r in records]
    truth = ["300,000" in r.request.response for r in records]
    both = sum(a and t for a, t in zip(acted, truth, strict=True))
    assert report["n_logged"] == 4 and report["n_judged"] == 4 and report["n_unreadable"] == 1
    assert report["precision"]["k"] == both and report["precision"]["n"] == sum(acted)
    assert report["recall"] == {**report["recall"], "k": both, "n": sum(truth)}
    assert report["recall"]["value"] == 1.0
    assert report["n_disagreements"] == sum(a != t for a, t in zip(acted, truth, strict=True))
    rows = [json.loads(line) for line in disagreements.read_text().splitlines()]
    assert len(rows) == report["n_disagreements"]
    for row in rows:
        assert set(row) == {"id", "dataset", "split", "context", "response", "question", "label", "claims",
                            "error_types", "meta"}  # fmt: skip
        assert row["label"] == int("300,000" in row["response"])
        assert row["meta"]["reference_judge"].startswith("anthropic")
    assert "sk-test-" not in done.stdout + done.stderr


def test_human_labels_correct_the_rate_and_score_the_guard_against_people(log_dir: Path, tmp_path: Path) -> None:
    records, _ = read_traffic(log_dir)
    # People label three of the four: the changed number and the invented garden are hallucinated.
    people = {r.request_id: ("300,000" in r.request.response or "garden" in r.request.response) for r in records[1:]}
    labels = tmp_path / "labels.csv"
    labels.write_text("request_id,hallucinated\n" + "".join(f"{k},{int(v)}\n" for k, v in people.items()))
    done = _monitor(log_dir, tmp_path, "--json", "--labels", str(labels))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["n_human_labels"] == 3
    acted = {r.request_id: r.decision != "pass" for r in records}
    both = sum(acted[k] and v for k, v in people.items())
    assert report["precision_vs_people"]["k"] == both and report["precision_vs_people"]["n"] == sum(
        acted[k] for k in people
    )
    assert report["recall_vs_people"] == {**report["recall_vs_people"], "k": both, "n": sum(people.values())}
    # The corrected rate is the calibrate estimator on the judge's verdicts (only "300,000" is hallucinated to it).
    judge = {r.request_id: "300,000" in r.request.response for r in records}
    expected = stratified_ppi(
        np.array([float(v) for v in people.values()]),
        np.array([float(judge[k]) for k in people]),
        np.array([float(v) for k, v in judge.items() if k not in people]),
    )
    assert report["hallucination_rate_corrected"] == pytest.approx(list(expected))
    assert all(0.0 <= x <= 1.0 for x in report["hallucination_rate_corrected"])
    assert report["hallucination_rate"]["k"] == 1 and report["hallucination_rate"]["n"] == 4


def test_a_bad_labels_file_is_a_usage_error(log_dir: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("id,label\nx,1\n")
    done = _monitor(log_dir, tmp_path, "--labels", str(labels))
    assert done.returncode == 2 and "request_id and hallucinated" in done.stderr
    labels.write_text("request_id,hallucinated\nnot-in-the-log,1\n")
    done = _monitor(log_dir, tmp_path, "--labels", str(labels))
    assert done.returncode == 2 and "not in the traffic log" in done.stderr


def test_sample_rate_judges_the_requests_a_hash_of_their_id_picks(log_dir: Path, tmp_path: Path) -> None:
    from hallumeasure.core.sampling import hash_share, in_sample
    from hallumeasure.guard.monitor import REWRITE_SUFFIX
    from hallumeasure.runs.run import Run

    records, _ = read_traffic(log_dir)
    shares = sorted(hash_share(r.request_id) for r in records)
    rate = (shares[0] + shares[-1]) / 2  # picks some of the logged requests and leaves some out
    picked = {r.request_id for r in records if in_sample(r.request_id, rate)}
    assert 0 < len(picked) < len(records)
    done = _monitor(log_dir, tmp_path, "--json", "--sample-rate", str(rate), "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n_logged"] == len(picked)
    judged = Run.load(tmp_path / "run").responses["sample_id"].str.removesuffix(REWRITE_SUFFIX)
    assert set(judged) == picked
