"""The shipped entailment model through onnxruntime: real rankings, batching, and clear errors without the extra."""

import sys

import numpy as np
import pytest

from hallumeasure.errors import ConfigError
from hallumeasure.nli import model as nli_model


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


@pytest.fixture(scope="module")
def nli():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    if not nli_model.available():
        pytest.skip("no NLI weights are exported: none ship yet (see benchmarks/nli_quality.md)")
    return nli_model.load_nli()


# (premise, entailed hypothesis, contradicting or unsupported hypothesis)
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
]


@pytest.mark.parametrize(("premise", "entailed", "other"), TRIPLES)
def test_entailed_hypothesis_ranks_above_the_other(nli, premise, entailed, other):
    p = nli.entailment([(premise, entailed), (premise, other)])
    assert p[0] > p[1]
    assert p.min() >= 0.0 and p.max() <= 1.0


def test_batching_matches_one_pair_at_a_time(nli):
    pairs = [(premise, hyp) for premise, *hyps in TRIPLES for hyp in hyps]
    batched = nli.entailment(pairs)
    single = np.array([nli.entailment([pair])[0] for pair in pairs])
    # Dynamic int8 quantisation scales activations per batch, so padding moves results a little.
    assert np.allclose(batched, single, atol=0.03)


def test_empty_input_gives_an_empty_result(nli):
    assert nli.entailment([]).shape == (0,)
