"""Heads read from id2label, chunks cut to the window, and the calibration of threshold and unsure band."""

import numpy as np
import pytest

from hallumeasure.core.errors import ConfigError
from hallumeasure.judges.checkers.calibration import calibrate
from hallumeasure.judges.checkers.chunks import chunk_source
from hallumeasure.judges.checkers.heads import read_head
from hallumeasure.judges.checkers.judge import calibration_of


def test_heads_follow_the_config_labels():
    mnli = read_head({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, 3)
    assert (mnli.entailment, mnli.contradiction, mnli.three_way) == (2, 0, True)
    e, c = mnli.probabilities(np.array([[0.0, 0.0, 10.0]]))
    assert e[0] > 0.99 and c is not None and c[0] < 0.01
    binary = read_head({0: "LABEL_0", 1: "LABEL_1"}, 2)
    assert (binary.entailment, binary.three_way, binary.source) == (1, False, "convention")
    assert read_head({0: "not_entailment", 1: "entailment"}, 2).entailment == 1
    one = read_head(None, 1)
    assert one.probabilities(np.array([[0.0]]))[0][0] == pytest.approx(0.5)
    assert read_head({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}, 3, entailment=1).source == "option"


def test_a_head_whose_labels_say_nothing_asks_for_the_entailment_index():
    with pytest.raises(ConfigError, match=r"\?entailment=<index>"):
        read_head({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}, 3)
    with pytest.raises(ConfigError, match="0 labels"):
        read_head({}, 0)


def words(text: str) -> int:
    return len(text.split())


def test_chunks_are_overlapping_slices_of_the_source_that_fit_the_budget():
    source = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    chunks = chunk_source(source, 6, words)
    assert [c.text for c in chunks] == [
        "One two three. Four five six.",
        "Four five six. Seven eight nine.",
        "Seven eight nine. Ten eleven twelve.",
    ]
    assert all(source[c.start : c.end] == c.text and words(c.text) <= 6 for c in chunks)
    assert chunk_source(source, 100, words)[0].text == source  # fits whole
    long = chunk_source("a b c d e f g h i j", 4, words)  # one sentence longer than a chunk: cut between words
    assert [c.text for c in long] == ["a b c d", "e f g h", "i j"]


def test_calibration_tunes_the_threshold_and_the_band_where_it_was_not_reliable():
    p = [0.05, 0.1, 0.2, 0.45, 0.55, 0.6, 0.8, 0.9, 0.95, 0.5]
    gold = [False, False, False, True, False, True, True, True, True, False]
    cal = calibrate(p, gold)
    assert cal.threshold == 0.6 and cal.balanced_accuracy == 1.0 - 1 / 10  # one positive (0.45) below it
    assert cal.unsure(0.6) is True or cal.unsure_low == cal.unsure_high == 0.6
    assert not cal.unsure(0.05) and not cal.unsure(0.95)
    assert cal.unsure_low <= cal.threshold <= cal.unsure_high
    assert cal.options().startswith("threshold=0.6000&unsure_low=")
    assert calibration_of(None, None, None) is None
    with pytest.raises(ValueError, match="must hold the threshold"):
        calibration_of(0.5, 0.6, 0.7)
