"""The shipped entailment model through onnxruntime: real rankings, batching, and clear errors without the extra."""

import sys

import numpy as np
import pytest

from hallumeasure.core.errors import ConfigError
from hallumeasure.judges.nli import model as nli_model


def test_missing_extra_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # an import of it now fails, as when it is not installed
    with pytest.raises(ConfigError, match=r"pip install 'hallumeasure\[nli\]'") as info:
        nli_model.NliModel(tmp_path)
    assert "\n" not in str(info.value) and "onnxruntime" in str(info.value)
    assert not nli_model.available()


def test_missing_weights_name_the_files(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    with pytest.raises(ConfigError, match=r"model.onnx.*scripts/export_nli.py"):
        nli_model.NliModel(tmp_path)


# (premise, entailed hypothesis, contradicting or unsupported hypothesis): hand-written, never trained on.
TRIPLES = [
    (
        "The company reported a profit of five million dollars in 2020.",
        "The company made a profit in 2020.",
        "The company reported a loss in 2020.",
    ),
    (
        "A man is playing a guitar on a stage in front of a crowd.",
        "A man is playing an instrument.",
        "A woman is sleeping at home.",
    ),
    (
        "The museum is closed on Mondays and open every other day.",
        "The museum is open on Tuesdays.",
        "The museum is open on Mondays.",
    ),
    (
        "The bridge was opened in 1932 and carries four lanes of traffic.",
        "The bridge carries four lanes of traffic.",
        "The bridge carries six lanes of traffic.",
    ),
    (
        "Maria Lopez was elected mayor of the town after the previous mayor retired.",
        "Maria Lopez became mayor of the town.",
        "Maria Lopez lost the election for mayor.",
    ),
    (
        "The study followed 400 patients for two years and found no side effects.",
        "The study found no side effects.",
        "The study found serious side effects.",
    ),
    (
        "Heavy rain forced the organisers to cancel the outdoor concert on Saturday.",
        "The outdoor concert was cancelled.",
        "The outdoor concert took place as planned.",
    ),
    (
        "The new phone has a larger screen than the old one but the same battery.",
        "The new phone's screen is larger than the old one's.",
        "The new phone has a bigger battery than the old one.",
    ),
    (
        "The train to Berlin leaves at 9:15 from platform 4.",
        "The train to Berlin leaves from platform 4.",
        "The train to Berlin leaves from platform 7.",
    ),
    (
        "The river flooded the village twice last year, in March and in October.",
        "The village was flooded last year.",
        "The village has never been flooded.",
    ),
    (
        "Sales of electric cars rose by 40 percent, while sales of diesel cars fell.",
        "Sales of diesel cars fell.",
        "Sales of diesel cars rose.",
    ),
    (
        "The author wrote her first novel at the age of 19 while studying law.",
        "The author studied law.",
        "The author studied medicine.",
    ),
]


def test_entailed_hypotheses_rank_above_the_others(nli):
    """The direction of the whole chain (tokenizer pairing, ONNX export, calibration sign) on hand-written pairs.

    The model is small and makes mistakes on single pairs (its measured quality is in
    benchmarks/results/nli_quality.md), so the check is on the share ranked right: a swapped premise and
    hypothesis, an inverted calibration or a broken export ranks about half or fewer right.
    """
    pairs = [(premise, hyp) for premise, *hyps in TRIPLES for hyp in hyps]
    p = nli.entailment(pairs).reshape(-1, 2)
    right = p[:, 0] > p[:, 1]
    assert right.mean() >= 0.75, f"{int(right.sum())} of {len(right)} ranked right: {p.round(3).tolist()}"
    assert p.min() >= 0.0 and p.max() <= 1.0


def test_a_pair_scores_the_same_whatever_its_batch(nli):
    """One pair per run by default: dynamic int8 quantisation scales activations per batch, so batch-mates and
    padding would otherwise move a claim's score; a measurement must not depend on its neighbours."""
    pairs = [(premise, hyp) for premise, *hyps in TRIPLES for hyp in hyps]
    together = nli.entailment(pairs)
    alone = np.array([nli.entailment([pair])[0] for pair in pairs])
    assert np.allclose(together, alone, atol=1e-6)
    assert np.allclose(nli.entailment(pairs[::-1])[::-1], together, atol=1e-6)


def test_empty_input_gives_an_empty_result(nli):
    assert nli.entailment([]).shape == (0,)
