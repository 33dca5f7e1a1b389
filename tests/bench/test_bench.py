"""The bench harness is checked with judges whose answers we control: an oracle and a noisy oracle."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hallumeasure.bench.metrics import balanced_accuracy, precision_recall_f1
from hallumeasure.bench.run import (
    BenchResult,
    GoldClaimExtractor,
    bench_async,
    predicted_subtype,
    run_bench,
    score_bench,
)
from hallumeasure.bench.tables import bench_markdown, compare_bench, load_bench, save_bench
from hallumeasure.core.labels import Label, Policy, Subtype
from hallumeasure.core.subtype_maps import map_error_types
from hallumeasure.core.types import Claim, ClaimVerdict, Mode, ResponseResult, Sample, Usage
from hallumeasure.judges.protocols import Extraction, Judgement
from hallumeasure.models.pricing import Price
from hallumeasure.pipeline.estimate import estimate_cost, estimate_run
from hallumeasure.runs.datasets import GoldClaim, LabelledSample, load_labelled, subsample

FAST = {"n_resamples": 200, "seed": 0}


class WholeResponseExtractor:
    """One claim per response: the response itself. Costs one fake call."""

    name = "whole-response"

    def settings(self) -> dict[str, Any]:
        return {}

    async def extract(self, sample: Sample) -> Extraction:
        claim = Claim(id=f"{sample.id}:c0", sample_id=sample.id, index=0, text=sample.response)
        return Extraction(claims=[claim], usage=Usage(calls=1, input_tokens=7, output_tokens=3))


class OracleJudge:
    """Answers with the gold labels, except for the response or claim ids in ``flip``, which it inverts."""

    name = "oracle"
    mode = "cot-one"

    def __init__(
        self,
        samples: Sequence[LabelledSample],
        flip: set[str] = frozenset(),
        *,
        with_score: bool = True,
        fail: set[str] = frozenset(),
    ) -> None:
        self.gold = {s.id: s for s in samples}
        self.flip, self.with_score, self.fail = set(flip), with_score, set(fail)

    def settings(self) -> dict[str, Any]:
        return {"flip": len(self.flip)}

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        gold = self.gold[sample.id]
        mapped = map_error_types(gold.dataset, gold.gold_error_types() or []).single
        verdicts = []
        for claim in claims:
            if sample.id in self.fail:
                verdicts.append(ClaimVerdict(claim_id=claim.id, judge=self.name, error="malformed answer"))
                continue
            if claim.id.split(":")[-1].startswith("g"):  # a gold claim
                unsupported = gold.claims[claim.index].unsupported
                if unsupported is None:
                    verdicts.append(ClaimVerdict(claim_id=claim.id, label=Label.UNEVALUATABLE, judge=self.name))
                    continue
                unsupported ^= claim.id in self.flip
            else:
                unsupported = bool(gold.label) ^ (sample.id in self.flip)
            label = Label.ABSENT if unsupported else Label.SUPPORTED
            subtype = (mapped or Subtype.OTHER) if unsupported else None
            verdicts.append(ClaimVerdict(claim_id=claim.id, label=label, subtype=subtype, judge=self.name))
        n = len(claims)
        usage = Usage(calls=n, input_tokens=100 * n, output_tokens=10 * n, seconds=0.5 * n)
        score = None
        if self.with_score and sample.id not in self.fail:
            score = float(any(v.label == Label.ABSENT for v in verdicts))
        return Judgement(verdicts=verdicts, usage=usage, score=score)


def _samples(n: int, *, positive: float = 0.6, seed: int = 1, dataset: str = "synthetic") -> list[LabelledSample]:
    rng = np.random.default_rng(seed)
    labels = (rng.uniform(size=n) < positive).astype(int)
    return [
        LabelledSample(id=f"s{i}", dataset=dataset, context="ctx", response=f"response {i}.", label=int(y))
        for i, y in enumerate(labels)
    ]


def test_oracle_gives_perfect_scores() -> None:
    samples = _samples(60)
    result = run_bench(samples, OracleJudge(samples), WholeResponseExtractor(), **FAST)
    for name in ("precision", "recall", "f1", "accuracy", "balanced_accuracy", "auc_roc"):
        m = result.response[name]
        assert m.point == 1.0 and m.low == 1.0 and m.high == 1.0, name
    assert result.counts["scored"] == 60 and result.counts["error_responses"] == 0
    assert result.score_source == "judge" and result.mode == "cot-one" and result.claim is None
    assert result.subtype is None  # no error types in this set


def test_oracle_without_judge_score_uses_unsupported_rate() -> None:
    samples = _samples(30)
    result = run_bench(samples, OracleJudge(samples, with_score=False), WholeResponseExtractor(), **FAST)
    assert result.score_source == "unsupported_rate" and result.response["auc_roc"].point == 1.0


def test_noisy_oracle_matches_independent_metrics_and_expected_values() -> None:
    samples = _samples(400, positive=0.6, seed=5)
    rng = np.random.default_rng(11)
    q = 0.1
    flipped = {s.id for s in samples if rng.uniform() < q}
    result = run_bench(samples, OracleJudge(samples, flipped), WholeResponseExtractor(), n_resamples=500, seed=3)

    y = np.array([s.label for s in samples])
    pred = np.array([s.label ^ (s.id in flipped) for s in samples])
    # Harness agrees exactly with metrics computed outside it, from the flips alone.
    tp = int(np.sum((y == 1) & (pred == 1)))
    assert result.response["precision"].point == pytest.approx(tp / pred.sum())
    assert result.response["recall"].point == pytest.approx(tp / y.sum())
    assert result.response["f1"].point == pytest.approx(precision_recall_f1(y, pred)[2])
    assert result.response["accuracy"].point == pytest.approx(1 - len(flipped) / len(samples))
    # With 0/1 scores, AUC equals balanced accuracy.
    assert result.response["auc_roc"].point == pytest.approx(balanced_accuracy(y, pred))
    assert result.response["balanced_accuracy"].point == pytest.approx(balanced_accuracy(y, pred))

    # And the population values of a judge that flips 10% fall inside the reported intervals.
    pos = y.mean()
    expected = {
        "recall": 1 - q,
        "accuracy": 1 - q,
        "balanced_accuracy": 1 - q,
        "precision": (1 - q) * pos / ((1 - q) * pos + q * (1 - pos)),
    }
    for name, value in expected.items():
        m = result.response[name]
        assert m.low <= value <= m.high, (name, value, m)
        assert m.high - m.low < 0.15


def test_gold_claims_give_claim_level_metrics() -> None:
    claims_a = (
        GoldClaim(text="x", raw_label="supported", label=Label.SUPPORTED, unsupported=False),
        GoldClaim(text="y", raw_label="not_supported", unsupported=True),
        GoldClaim(text="z", raw_label="unevaluatable", label=Label.UNEVALUATABLE, unsupported=None),
    )
    claims_b = (GoldClaim(text="w", raw_label="supported", label=Label.SUPPORTED, unsupported=False),)
    samples = [
        LabelledSample(
            id=f"{k}{i}",
            dataset="wice",
            context="c",
            response="r",
            label=int(k == "a"),
            claims=claims_a if k == "a" else claims_b,
        )
        for i in range(20)
        for k in "ab"
    ]
    perfect = run_bench(samples, OracleJudge(samples), gold_claims=True, **FAST)
    c = perfect.claim
    assert c.n_gold == 60 and c.n_scored == 60 and c.n_errors == 0  # the unevaluatable gold claim is skipped
    assert c.precision.point == c.recall.point == c.f1.point == c.balanced_accuracy.point == 1.0
    assert perfect.extractor == "gold-claims" and perfect.usage.extraction_total.calls == 0

    # Flip the unsupported gold claim of 5 of the 20 "a" responses: claim recall 15/20.
    flips = {f"a{i}:g1" for i in range(5)}
    noisy = run_bench(samples, OracleJudge(samples, flips), gold_claims=True, **FAST)
    assert noisy.claim.recall.point == pytest.approx(0.75)
    assert noisy.claim.precision.point == 1.0
    assert noisy.claim.recall.low < 0.75 < noisy.claim.recall.high
    assert noisy.response["recall"].point == pytest.approx(0.75)


def test_gold_claims_need_claims_and_no_extractor() -> None:
    samples = _samples(4)
    with pytest.raises(ValueError, match="no gold claims") as refused:
        run_bench(samples, OracleJudge(samples), gold_claims=True)
    # The message names the data set at fault and the CLI flag, not the Python parameter.
    message = str(refused.value)
    assert f"the {samples[0].dataset} data set" in message and "without --gold-claims" in message
    assert "gold_claims" not in message
    with pytest.raises(ValueError, match="pass an extractor"):
        run_bench(samples, OracleJudge(samples))


def test_claims_without_gold_flag_are_noted_not_aligned() -> None:
    claims = (GoldClaim(text="x", raw_label="supported", label=Label.SUPPORTED, unsupported=False),)
    samples = [
        LabelledSample(id="a", dataset="d", context="c", response="r", label=0, claims=claims),
        LabelledSample(id="b", dataset="d", context="c", response="r", label=1, claims=claims),
    ]
    result = run_bench(samples, OracleJudge(samples), WholeResponseExtractor(), **FAST)
    assert result.claim is None and any("gold_claims=True" in n for n in result.notes)


def test_error_rows_are_counted_never_dropped() -> None:
    samples = _samples(20)

    class FailingExtractor(WholeResponseExtractor):
        async def extract(self, sample: Sample) -> Extraction:
            if sample.id == "s0":
                return Extraction(error="could not parse claims", usage=Usage(calls=1))
            return await super().extract(sample)

    failing = {"s1", "s2"}
    result = run_bench(samples, OracleJudge(samples, fail=failing), FailingExtractor(), **FAST)
    assert result.counts["error_responses"] == 1
    assert result.counts["undefined_responses"] == 2
    assert result.counts["claim_errors"] == 2
    assert result.counts["scored"] == 17
    assert any("not scored" in n for n in result.notes)
    assert result.usage.extraction_total.calls == 20  # the failed extraction still cost a call
    md = bench_markdown(result)
    assert "error_responses | 1" in md and "not scored" in md


def test_missing_results_are_error_rows() -> None:
    samples = _samples(5)
    results = [ResponseResult(sample_id="s0", hallucinated=bool(samples[0].label), unsupported_rate=0.0)]
    result = score_bench(samples, results, judge="j", extractor="e", **FAST)
    assert result.counts["error_responses"] == 4 and any("no result" in n for n in result.notes)


def _bump_like() -> list[LabelledSample]:
    rows = [
        ("Intrinsic Entity Error", 1),
        ("Extrinsic Entity", 1),
        ("Coreference Error", 1),
        ("Other", 1),
        ("Intrinsic Predicate Error", 1),
        ("Mystery Error", 1),
        (None, 0),
    ]
    out = []
    for i in range(4):
        for j, (etype, label) in enumerate(rows):
            out.append(
                LabelledSample(
                    id=f"b{i}-{j}",
                    dataset="bump",
                    context="c",
                    response="r",
                    label=label,
                    error_types=(etype,) if etype else (),
                )
            )
    return out


def test_subtypes_map_and_unmapped_types_are_reported() -> None:
    samples = _bump_like()
    result = run_bench(samples, OracleJudge(samples), WholeResponseExtractor(), **FAST)
    st = result.subtype
    assert st.n_responses == 16  # entity x3 + other, four times; predicate and mystery are not scored
    assert st.n_ambiguous == 8
    assert st.macro_f1.point == 1.0 and st.weighted_f1.point == 1.0
    assert {r.subtype: r.n_gold for r in st.rows} == {"entity": 12, "other": 4}
    assert st.unmapped == {"Intrinsic Predicate Error": 4} and st.unknown == {"Mystery Error": 4}
    md = bench_markdown(result)
    assert "Unknown gold types" in md and "Mystery Error (4)" in md


def test_predicted_subtype_is_majority_then_first() -> None:
    def v(i: int, label: Label, sub: Subtype | None) -> ClaimVerdict:
        return ClaimVerdict(claim_id=f"x:c{i}", label=label, subtype=sub, judge="j")

    r = ResponseResult(
        sample_id="x",
        verdicts=[
            v(0, Label.ABSENT, Subtype.NUMBER),
            v(1, Label.CONTRADICTED, Subtype.ENTITY),
            v(2, Label.SUPPORTED, None),
            v(3, Label.ABSENT, Subtype.ENTITY),
        ],
    )
    assert predicted_subtype(r, Policy()) == "entity"
    r2 = ResponseResult(sample_id="x", verdicts=r.verdicts[:2])
    assert predicted_subtype(r2, Policy()) == "number"
    assert predicted_subtype(ResponseResult(sample_id="x"), Policy()) == "none"


def test_usage_and_cost_per_response() -> None:
    samples = _samples(10)
    price = Price(input=Decimal("1"), output=Decimal("2"))
    result = run_bench(samples, OracleJudge(samples), WholeResponseExtractor(), price_of=lambda spec: price, **FAST)
    per = result.usage.per_response
    assert per["calls"].point == 1 and per["input_tokens"].point == 100 and per["output_tokens"].point == 10
    assert per["seconds"].point == 0.5
    assert result.usage.judge_total.calls == 10 and result.usage.extraction_total.input_tokens == 70
    # judge: (100 * 1 + 10 * 2) / 1e6; extraction: (7 * 1 + 3 * 2) / 1e6
    assert per["cost_usd"].point == pytest.approx(133e-6)
    assert result.usage.cost_usd_total == pytest.approx(133e-5)
    unknown = run_bench(samples, OracleJudge(samples), WholeResponseExtractor(), price_of=lambda spec: None, **FAST)
    assert "cost_usd" not in unknown.usage.per_response and "no price" in unknown.usage.cost_note


def test_bounded_concurrency() -> None:
    samples = _samples(12)
    state = {"now": 0, "peak": 0}

    class SlowJudge(OracleJudge):
        async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            await asyncio.sleep(0.005)
            state["now"] -= 1
            return await super().judge(sample, claims)

    asyncio.run(bench_async(samples, SlowJudge(samples), WholeResponseExtractor(), concurrency=3, **FAST))
    assert state["peak"] == 3


def test_run_bench_closes_models() -> None:
    samples = _samples(3)
    closed = []

    class FakeModel:
        async def aclose(self) -> None:
            closed.append(True)

    judge = OracleJudge(samples)
    judge.model = FakeModel()
    run_bench(samples, judge, WholeResponseExtractor(), **FAST)
    assert closed == [True]


def test_json_roundtrip_markdown_and_compare(tmp_path: Path) -> None:
    samples = _samples(40)
    a = run_bench(samples, OracleJudge(samples), WholeResponseExtractor(), **FAST)
    b = run_bench(
        samples, OracleJudge(samples, {"s0", "s1", "s2"}), WholeResponseExtractor(), mode=Mode.NOCOT_ALL, **FAST
    )
    json_a, md_a = save_bench(a, tmp_path)
    json_b, _ = save_bench(b, tmp_path)
    assert json_a.name == "synthetic__oracle__cot-one.json" and json_b.name == "synthetic__oracle__nocot-all.json"
    assert load_bench(json_a) == a
    assert "## Response level" in md_a.read_text()
    table = compare_bench([json_a, b])
    lines = table.strip().splitlines()
    assert len(lines) == 4 and "resp F1" in lines[0] and "AUC ROC" in lines[0]
    assert "1.00 [1.00, 1.00]" in lines[2] and "nocot-all" in lines[3]
    assert compare_bench([]) == "(no bench results)\n"


def test_auc_is_na_with_one_class() -> None:
    samples = [s for s in _samples(30) if s.label == 1]
    result = run_bench(samples, OracleJudge(samples), WholeResponseExtractor(), **FAST)
    assert result.response["auc_roc"].point is None and result.response["auc_roc"].fmt() == "n/a"
    BenchResult.model_validate_json(result.model_dump_json())  # stays valid JSON (no NaN)


def test_estimate_counts_calls_and_tokens() -> None:
    samples = [LabelledSample(id="1", dataset="d", context="x" * 400, response="One. Two! Three?", label=0)]
    one = estimate_run(samples, Mode.COT_ONE, claims_per_sentence=1.0)
    assert one.claims == 3 and one.extraction_calls == 1 and one.judge_calls == 3 and one.calls == 4
    allc = estimate_run(samples, Mode.NOCOT_ALL, claims_per_sentence=1.0)
    assert allc.judge_calls == 1 and allc.calls == 2
    assert one.input_tokens > allc.input_tokens > 100 and one.output_tokens > allc.output_tokens
    gold = [
        LabelledSample(
            id="1",
            dataset="d",
            context="c",
            response="r",
            label=1,
            claims=(GoldClaim(text="a", raw_label="1", unsupported=True),) * 5,
        )
    ]
    g = estimate_run(gold, "cot-one", gold_claims=True)
    assert g.claims == 5 and g.extraction_calls == 0 and g.judge_calls == 5
    assert estimate_cost(one, Price(input=Decimal("0"), output=Decimal("0"))) == 0.0


def test_oracle_on_shared_sets(shared_data: Path) -> None:
    bump = subsample(load_labelled(shared_data / "bump.jsonl"), 150, seed=2)
    result = run_bench(bump, OracleJudge(bump), WholeResponseExtractor(), **FAST)
    assert result.response["f1"].point == 1.0 and result.response["auc_roc"].point == 1.0
    assert result.subtype.macro_f1.point == 1.0 and not result.subtype.unknown
    assert (
        "Intrinsic Predicate Error" in result.subtype.unmapped or "Extrinsic Predicate Error" in result.subtype.unmapped
    )
    wice = subsample(load_labelled(shared_data / "wice.jsonl"), 80, seed=2)
    gold = run_bench(wice, OracleJudge(wice), gold_claims=True, **FAST)
    assert gold.claim.f1.point == 1.0 and gold.claim.n_gold == 80


def test_gold_claim_extractor_returns_gold_claims_or_an_error_row() -> None:
    claims = (GoldClaim(text="The cat sat.", raw_label="supported", label=Label.SUPPORTED, unsupported=False),)
    with_claims = LabelledSample(id="a", dataset="d", context="c", response="r", label=0, claims=claims)
    without = LabelledSample(id="b", dataset="d", context="c", response="r", label=0)
    extractor = GoldClaimExtractor([with_claims, without])
    got = asyncio.run(extractor.extract(with_claims.to_sample()))
    assert [(c.id, c.text, c.index) for c in got.claims] == [("a:g0", "The cat sat.", 0)] and got.error is None
    assert asyncio.run(extractor.extract(without.to_sample())).error == "sample b has no gold claims"


class _KeylessOracle(OracleJudge):
    """The oracle, claiming in its settings to have been fitted on the named data sets (as the keyless judges do)."""

    def __init__(self, samples: Sequence[LabelledSample], settings: dict[str, Any]) -> None:
        super().__init__(samples)
        self._settings = settings

    def settings(self) -> dict[str, Any]:
        return self._settings


@pytest.mark.parametrize(
    "settings",
    [
        {"trained_on": {"wice": 10, "bump": 5}},  # the offline trees
        {"training_pool": {"shared_sets": ["wice"]}},  # the NLI model
        {"trained_on": {"bump": 5}, "nli": {"training_pool": {"shared_sets": ["wice"]}}},  # offline+nli
    ],
)
def test_bench_warns_when_a_keyless_judge_is_measured_on_a_set_it_was_trained_on(settings) -> None:
    samples = _samples(20, dataset="wice")
    result = run_bench(samples, _KeylessOracle(samples, settings), WholeResponseExtractor(), **FAST)
    (note,) = [n for n in result.notes if "in-sample" in n]
    assert "wice" in note


def test_bench_does_not_warn_on_a_held_out_set() -> None:
    samples = _samples(20, dataset="halueval_dialogue")
    result = run_bench(samples, _KeylessOracle(samples, {"trained_on": {"wice": 10}}), WholeResponseExtractor(), **FAST)
    assert not [n for n in result.notes if "in-sample" in n]
