"""Finishing a run streams its store: the manifest equals the one the all-in-memory finish wrote."""

import json
import random
from pathlib import Path

from pipeline.finish_runs import LLM_JUDGE, finished_manifests

from hallumeasure.core.aggregate import _Mean
from hallumeasure.core.judge_checks import JudgeCheckName
from hallumeasure.core.types import Claim, ClaimVerdict, ResponseResult
from hallumeasure.pipeline.judge_checks import MIN_CLAIMS, check_judge
from hallumeasure.runs import store as store_module
from hallumeasure.runs.store import RunStore

EXPECTED = Path(__file__).with_name("finish_expected.json")


def test_finished_manifests_equal_those_of_the_all_in_memory_finish(tmp_path, monkeypatch):
    # Chunks of 7 responses: every run spans several, and the synthetic one ends in a part chunk.
    monkeypatch.setattr(store_module, "RESULTS_CHUNK", 7)
    found = finished_manifests(tmp_path)
    assert found == json.loads(EXPECTED.read_text())
    assert [c["name"] for c in found["synthetic"]["judge_checks"]] == [name.value for name in JudgeCheckName]
    with RunStore(tmp_path / "synthetic") as store:
        whole = [r.model_dump() for r in store.iter_results(chunk=10_000)]
        assert [r.model_dump() for r in store.iter_results(chunk=3)] == whole
        assert len(whole) == 180 and any(r["votes"] for r in whole) and any(r["error"] for r in whole)


def test_the_running_mean_equals_sum_over_len_bit_for_bit():
    rng = random.Random(7)
    for _ in range(200):
        values = [rng.random() * 10 ** rng.randint(-8, 8) * rng.choice((1, -1)) for _ in range(rng.randint(1, 300))]
        mean = _Mean()
        for value in values:
            mean.add(value)
        assert mean.value() == sum(values) / len(values)
    assert _Mean().value() is None


def _verdicts(reasons):
    claims = [Claim(id=f"c{i}", sample_id=f"s{i}", index=0, text="x") for i in range(len(reasons))]
    return [
        ResponseResult(
            sample_id=c.sample_id,
            claims=[c],
            verdicts=[ClaimVerdict(claim_id=c.id, label="absent", label_reason=reason, judge=LLM_JUDGE)],
        )
        for c, reason in zip(claims, reasons, strict=True)
    ]


def test_one_reason_for_most_claims_is_found_wherever_it_stands():
    # The shared reason comes last, after as many different ones as the majority vote can absorb.
    n = 4 * MIN_CLAIMS
    others = [f"reason number {i}" for i in range(n // 5)]
    results = _verdicts(others + ["Same words, again."] * (n - len(others)))
    [same] = [c for c in check_judge(iter(results)) if c.name == JudgeCheckName.SAME_REASON]
    assert (same.count, same.total) == (n - len(others), n)
    assert "'Same words, again.'" in same.seen
    # One short of the share: no finding.
    results = _verdicts(others + ["x"] + ["Same words, again."] * (n - len(others) - 1))
    short = [c for c in check_judge(results) if c.name == JudgeCheckName.SAME_REASON]
    assert (n - len(others) - 1) / n < 0.8 and short == []
