"""The light stemmer merges inflections and irregular forms, and keeps different words apart."""

import pytest

from hallumeasure.judges.offline.tokens import content_stems, key, stem, words


@pytest.mark.parametrize(
    "forms",
    [
        ("approved", "approves", "approve", "approving"),
        ("repairs", "repair"),
        ("studies", "study", "studied"),
        ("planned", "plan", "plans"),
        ("won", "wins", "win"),
        ("fell", "falls", "fall"),
        ("houses", "house"),
        ("children", "child"),
        ("agreed", "agree"),
    ],
)
def test_inflections_share_a_stem(forms):
    assert len({stem(f) for f in forms}) == 1


def test_different_words_keep_different_stems():
    assert stem("increase") != stem("decrease")
    assert stem("loves") != stem("lives")


def test_words_numbers_and_keys():
    assert words("It cost $3,500,000 (about 3.5 million) in 2019.") == [
        "It",
        "cost",
        "3,500,000",
        "about",
        "3.5",
        "million",
        "in",
        "2019",
    ]
    assert key("3,500") == "3500" and key("five") == key("5")
    assert content_stems(words("The council approved the plans")) == ["council", "approv", "plan"]
