"""``onnx:<folder>`` on tiny checkers built here, and on the shipped entailment model, through every door."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Label
from hallumeasure.core.types import Claim, Sample
from hallumeasure.judges.build import build_judge
from hallumeasure.judges.checkers.judge import CheckerJudge

CALIBRATED = "threshold=0.5&unsure_low=0.4&unsure_high=0.6"
# Short sentences: the tiny window (24 tokens) holds three of them beside a claim, so the source is chunked.
SOURCE = "the sky is blue . grass is green . the sun is hot . water is wet . the bridge agrees . snow is cold ."


def claims(*texts: str) -> list[Claim]:
    return [Claim(id=f"c{i}", sample_id="s", index=i, text=t) for i, t in enumerate(texts)]


def judge(spec: str) -> CheckerJudge:
    built = build_judge(spec)
    assert isinstance(built, CheckerJudge)
    return built


def test_the_claim_is_checked_against_overlapping_chunks_and_the_best_is_kept(tiny_onnx):
    j = judge(f"onnx:{tiny_onnx}?{CALIBRATED}")
    assert j.scorer.window == 24 and j.scorer.head.three_way
    chunks = j.chunks(SOURCE, "the city is old")
    assert len(chunks) > 2 and all(j.scorer.count(c.text) <= 24 for c in chunks)
    verdict = j.judge_now(Sample(id="s", context=SOURCE, response="x"), claims("the city is old")).verdicts[0]
    assert verdict.label is Label.SUPPORTED and verdict.confident
    assert "agrees" in verdict.evidence[0].quote and verdict.evidence[0].quote in SOURCE
    assert verdict.probability is not None and verdict.probability < 0.4


def test_a_three_way_head_tells_contradicted_from_absent(tiny_onnx):
    j = judge(f"onnx:{tiny_onnx}?{CALIBRATED}")
    sample = Sample(id="s", context="the sky is blue . the ice denies .", response="x")
    contradicted = j.judge_now(sample, claims("the city is old")).verdicts[0]
    assert contradicted.label is Label.CONTRADICTED and "denies" in contradicted.evidence[0].quote
    absent = j.judge_now(Sample(id="s", context="the sky is blue .", response="x"), claims("a city")).verdicts[0]
    assert absent.label is Label.ABSENT and absent.subtype is None and absent.probability > 0.5


def test_a_two_way_head_says_absent_for_every_unsupported_claim(tmp_path):
    from tiny_models import build_onnx

    folder = build_onnx(tmp_path / "two", outputs=2, id2label={0: "LABEL_0", 1: "LABEL_1"}, token_types=True)
    j = judge(f"onnx:{folder}?{CALIBRATED}")
    assert not j.scorer.head.three_way and j.scorer.head.source == "convention"
    sample = Sample(id="s", context="the sky is blue . the ice denies .", response="x")
    verdict = j.judge_now(sample, claims("the city is old")).verdicts[0]
    assert verdict.label is Label.ABSENT and verdict.subtype is None


def test_batching_does_not_change_a_score(tiny_onnx):
    sample = Sample(id="s", context=SOURCE, response="x")
    texts = ["the city is old", "the park is new", "the river is big", "is the sky blue ?"]
    one = judge(f"onnx:{tiny_onnx}?{CALIBRATED}&batch_size=1").judge_now(sample, claims(*texts))
    many = judge(f"onnx:{tiny_onnx}?{CALIBRATED}&batch_size=16").judge_now(sample, claims(*texts))
    assert [v.probability for v in one.verdicts] == pytest.approx([v.probability for v in many.verdicts], abs=1e-6)
    assert one.verdicts[3].label is Label.UNEVALUATABLE  # a question: nothing to check
    assert one.score == max(v.probability for v in one.verdicts[:3])


def test_confident_comes_from_the_calibration(tiny_onnx):
    sample = Sample(id="s", context="the sky is blue .", response="x")
    uncalibrated = judge(f"onnx:{tiny_onnx}").judge_now(sample, claims("a city")).verdicts[0]
    assert not uncalibrated.confident and "not calibrated" in (uncalibrated.label_reason or "")
    p = uncalibrated.probability
    band = judge(f"onnx:{tiny_onnx}?threshold=0.5&unsure_low=0.3&unsure_high={p + 0.01:.4f}")
    inside = band.judge_now(sample, claims("a city")).verdicts[0]
    assert not inside.confident and "unsure band" in (inside.label_reason or "")
    assert band.settings()["calibration"]["unsure_high"] == pytest.approx(p + 0.01, abs=1e-4)


def test_what_is_missing_is_named(tmp_path, tiny_onnx):
    with pytest.raises(ConfigError, match="no such folder"):
        build_judge(f"onnx:{tmp_path / 'nowhere'}")
    bare = tmp_path / "bare"
    shutil.copytree(tiny_onnx, bare)
    (bare / "tokenizer.json").unlink()
    with pytest.raises(ConfigError, match=r"tokenizer\.json is missing"):
        build_judge(f"onnx:{bare}")
    vague = tmp_path / "vague"
    shutil.copytree(tiny_onnx, vague)
    (vague / "config.json").write_text(json.dumps({"id2label": {"0": "A", "1": "B", "2": "C"}}))
    with pytest.raises(ConfigError, match=r"\?entailment=<index>"):
        build_judge(f"onnx:{vague}")
    assert judge(f"onnx:{vague}?entailment=0").scorer.head.source == "option"
    with pytest.raises(ConfigError, match="unknown option"):
        build_judge(f"onnx:{tiny_onnx}?temperature=2")


def test_the_shipped_entailment_model_runs_through_the_onnx_path():
    from hallumeasure.judges.nli.model import available, load_nli, weights_dir

    if not available():
        pytest.skip("the nli extra or its weights are missing")
    # batch_size=1: the shipped model is int8 with per-batch activation scales (see judges/nli/model.py)
    j = judge(f"onnx:{weights_dir()}?threshold=0.5&unsure_low=0.3&unsure_high=0.7&batch_size=1")
    assert j.scorer.head.n_outputs == 1 and j.scorer.window == 192
    context = (
        "The town council approved a budget of 4.2 million euros for the harbor wall on Tuesday. "
        "Work starts in March and should take about eighteen months."
    )
    good = "The council approved a budget of 4.2 million euros for the harbor wall."
    bad = "The council approved a budget of 9.5 million euros for the harbor wall."
    out = j.judge_now(Sample(id="s", context=context, response="x"), claims(good, bad))
    assert out.verdicts[0].probability < out.verdicts[1].probability
    # the same numbers as the model's own runner: the onnx: path reads its head and calibration right
    expected = 1.0 - load_nli().entailment([(context, good), (context, bad)])
    assert [v.probability for v in out.verdicts] == pytest.approx(expected.tolist(), abs=1e-3)
    assert out.score == pytest.approx(out.verdicts[1].probability)


def test_check_cli_cascade_and_guard_take_an_onnx_checker(tiny_onnx, tmp_path):
    import hallumeasure
    from hallumeasure.cli.main import app
    from hallumeasure.guard import Guard

    spec = f"onnx:{tiny_onnx}?{CALIBRATED}"
    result = hallumeasure.check("the city is old.", context=SOURCE, judge=spec)
    assert [c.label for c in result.claims] == ["supported"]

    guard = Guard(judge=spec)
    assert guard.check("the city is old.", context="the sky is blue . the ice denies .").decision != "pass"

    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"id": "a", "context": SOURCE, "response": "the city is old."}) + "\n")
    runner = CliRunner()
    done = runner.invoke(app, ["measure", str(data), "--out", str(tmp_path / "run"), "--judge", spec, "--no-cache"])
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge"] == f"onnx:{tiny_onnx}"
    recorded = manifest["settings"]["judge"]
    assert recorded["calibration"]["unsure_high"] == 0.6 and recorded["labels_from"] == "config"
    cascade = runner.invoke(
        app,
        ["measure", str(data), "--out", str(tmp_path / "cascade"), "--detector", "cascade", "--judge", "fake",
         "--first-pass", spec, "--no-cache"],
    )  # fmt: skip
    assert cascade.exit_code == 0, cascade.output
    settings = json.loads((tmp_path / "cascade" / "manifest.json").read_text())["settings"]
    assert f"onnx:{tiny_onnx}" in json.dumps(settings) and '"unsure_low": 0.4' in json.dumps(settings)
