"""The training pairs of scripts/train_nli.py: minimal-edit sentence labels and the rule-made edits (no torch)."""

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

import nli_edits
import train_nli

from hallumeasure.judges.nli.premises import premise_for
from hallumeasure.judges.offline.context import split_context

CONTEXT = (
    "The council met on Tuesday in Leeds. It approved a budget of 4,200 euros for the harbor wall. "
    "Mayor Alice Brown said the work would start in March 2025. Critics in Bradford were not convinced."
)


def test_edit_pairs_label_the_changed_sentence_only():
    base = "The council met on Tuesday. It approved a budget of 4,200 euros."
    edited = "The council met on Tuesday. It approved a budget of 5,200 euros."
    pairs = train_nli.edit_pairs(CONTEXT, edited, base, label=1)
    assert [(h, y) for _, h, y in pairs] == [
        ("The council met on Tuesday.", 1),
        ("It approved a budget of 5,200 euros.", 0),
    ]
    # A faithful edit keeps every sentence entailed; the premise is the best context sentences.
    faithful = train_nli.edit_pairs(CONTEXT, "The council met on Tuesday. It backed a 4,200 euro budget.", base, 0)
    assert [y for _, _, y in faithful] == [1, 1]
    assert "4,200 euros" in faithful[1][0]


@pytest.mark.parametrize(
    ("rule", "sentence"),
    [
        (nli_edits.change_number, "It approved a budget of 4,200 euros for the harbor wall."),
        (nli_edits.change_number, "Mayor Alice Brown said the work would start in March 2025."),
        (nli_edits.swap_name, "The work was praised by Mayor Alice Brown in the town hall."),
        (nli_edits.negate, "Critics in Bradford were not convinced."),
        (nli_edits.negate, "The council was ready to vote."),
        (nli_edits.exclusive_member, "The council met on Tuesday in Leeds."),
        (nli_edits.pronoun, "She said the work would start soon."),
    ],
)
def test_each_edit_changes_one_detail(rule, sentence):
    for seed in range(5):
        changed = rule(sentence, random.Random(seed), CONTEXT)
        assert changed and changed != sentence
        before, after = sentence.split(), changed.split()
        # one word replaced, or "not" added or removed
        assert abs(len(before) - len(after)) <= 1 or rule is nli_edits.swap_name
        assert sum(a != b for a, b in zip(before, after, strict=False)) >= 1


def test_number_edits_never_give_the_same_value():
    for seed in range(50):
        changed = nli_edits.change_number("They sold 1 car and 300 bikes in 2019.", random.Random(seed), "")
        assert changed != "They sold 1 car and 300 bikes in 2019."


def test_rules_that_do_not_apply_give_none():
    rng = random.Random(0)
    assert nli_edits.change_number("No digits here at all.", rng, CONTEXT) is None
    assert nli_edits.pronoun("The council met.", rng, CONTEXT) is None


def test_shorten_drops_an_aside_and_keeps_the_rest():
    rng = random.Random(0)
    assert nli_edits.shorten("The wall (built in 1890) needs repair.", rng) == "The wall needs repair."
    assert nli_edits.shorten("Nothing to drop here.", rng) == "Nothing to drop here."


def test_synthetic_pairs_are_deterministic_and_balanced():
    texts = [CONTEXT, CONTEXT.replace("Leeds", "York"), "A short one."]
    one = nli_edits.synthetic_pairs(texts, 10, 3, premise_for, split_context)
    two = nli_edits.synthetic_pairs(texts, 10, 3, premise_for, split_context)
    assert one == two and 0 < len(one) <= 10
    for premise, hypothesis, label in one:
        assert label in (0, 1) and premise and hypothesis
        if label == 0:
            assert hypothesis not in premise  # an edited sentence is never copied from its premise
