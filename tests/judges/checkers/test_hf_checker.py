"""``hf:<path>`` on random-weight classifiers saved with save_pretrained (BERT 3-way, DeBERTa-v2 2-way).

Needs the hf extra (transformers, torch), which CI does not install (a CPU torch is a large download): these
tests skip there, and run where the extra is installed (pip install torch==2.13.0 transformers)."""

import pytest
from conftest import require

require("torch", "transformers", ci=False)

from tiny_models import build_hf  # noqa: E402

from hallumeasure.core.errors import ConfigError  # noqa: E402
from hallumeasure.core.labels import Label  # noqa: E402
from hallumeasure.core.types import Claim, Sample  # noqa: E402
from hallumeasure.judges.build import build_judge  # noqa: E402
from hallumeasure.judges.checkers.judge import CheckerJudge  # noqa: E402

SOURCE = " ".join(["the sky is blue . grass is green . the sun is hot . water is wet . snow is cold ."] * 3)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return build_hf(tmp_path_factory.mktemp("bert"), "bert")


def test_a_bert_style_mnli_head_is_read_chunked_and_batched(bert):
    j = build_judge(f"hf:{bert}?threshold=0.5&unsure_low=0.45&unsure_high=0.55&batch_size=2")
    assert isinstance(j, CheckerJudge)
    assert j.scorer.head.three_way and j.scorer.window == 40
    assert len(j.chunks(SOURCE, "the city is old")) > 1
    claims = [Claim(id=f"c{i}", sample_id="s", index=i, text=t) for i, t in enumerate(["the city is old", "a park"])]
    sample = Sample(id="s", context=SOURCE, response="x")
    batched = j.judge_now(sample, claims)
    one = build_judge(f"hf:{bert}?threshold=0.5&batch_size=1").judge_now(sample, claims)
    assert [v.probability for v in batched.verdicts] == pytest.approx([v.probability for v in one.verdicts], abs=1e-4)
    for v in batched.verdicts:
        assert v.label in (Label.SUPPORTED, Label.ABSENT, Label.CONTRADICTED) and v.subtype is None
        assert v.evidence and v.evidence[0].quote in SOURCE
    assert j.settings()["backend"] == "transformers" and j.settings()["labels_from"] == "config"


def test_a_deberta_style_binary_head_with_generic_labels(tmp_path):
    folder = build_hf(tmp_path / "deberta", "deberta", id2label={0: "LABEL_0", 1: "LABEL_1"})
    j = build_judge(f"hf:{folder}")
    assert isinstance(j, CheckerJudge) and not j.scorer.head.three_way and j.scorer.head.source == "convention"
    verdict = j.judge_now(
        Sample(id="s", context=SOURCE, response="x"), [Claim(id="c", sample_id="s", index=0, text="a city")]
    )
    assert verdict.verdicts[0].label in (Label.SUPPORTED, Label.ABSENT) and not verdict.verdicts[0].confident


def test_a_model_without_a_trained_head_is_refused_naming_what_is_missing(tmp_path):
    folder = build_hf(tmp_path / "bare", "bert", head=False)
    with pytest.raises(ConfigError, match=r"no trained classification head: the weights classifier\.") as caught:
        build_judge(f"hf:{folder}")
    assert "not a bare encoder" in str(caught.value)
    with pytest.raises(ConfigError, match="cannot be loaded"):
        build_judge(f"hf:{tmp_path / 'missing'}")


def test_remote_code_is_off_unless_the_spec_turns_it_on(bert, monkeypatch):
    import transformers

    seen = []
    real = transformers.AutoConfig.from_pretrained

    def spy(path, **kw):
        seen.append(kw.get("trust_remote_code"))
        return real(path, **kw)

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", spy)
    build_judge(f"hf:{bert}")
    plain, seen[:] = list(seen), []
    build_judge(f"hf:{bert}?trust_remote_code=true")
    assert set(plain) == {False} and set(seen) == {True}


def test_a_model_exported_to_onnx_from_torch_reads_the_same_through_onnx(bert, tmp_path):
    import torch

    pytest.importorskip("onnx")
    hf = build_judge(f"hf:{bert}?threshold=0.5")
    assert isinstance(hf, CheckerJudge)
    out = tmp_path / "exported"
    out.mkdir()
    model = hf.scorer.model  # type: ignore[attr-defined]
    ids = torch.ones((1, 8), dtype=torch.long)
    try:
        torch.onnx.export(
            model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(out / "model.onnx"),
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
            dynamic_axes={n: {0: "b", 1: "t"} for n in ("input_ids", "attention_mask", "token_type_ids")},
            dynamo=False,
        )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - the exporter's own needs (onnxscript...) vary by torch version
        pytest.skip(f"torch.onnx.export is not usable here: {exc}")
    for name in ("tokenizer.json", "config.json"):
        (out / name).write_bytes((bert / name).read_bytes())
    onnx = build_judge(f"onnx:{out}?threshold=0.5")
    sample = Sample(id="s", context="the sky is blue . the sun is hot .", response="x")
    claims = [Claim(id="c", sample_id="s", index=0, text="the city is old")]
    a, b = hf.judge_now(sample, claims).verdicts[0], onnx.judge_now(sample, claims).verdicts[0]
    assert a.probability == pytest.approx(b.probability, abs=1e-3) and a.label == b.label
