"""Word alignment: copied fragments, and the differences between neighbouring ones."""

from hallumeasure.judges.offline.alignment import align, opposite
from hallumeasure.judges.offline.context import index_context
from hallumeasure.judges.offline.tokens import stem, words

CONTEXT = (
    "Mary Doyle was a 19-year-old telephone operator at the time. Norman Rockwell painted her in 1943. "
    "The council said it may raise taxes next year. He never let anyone touch him or take photos. "
    "Henderson has urged Raheem Sterling to follow his lead."
)


def diffs(claim):
    a = align(words(claim), index_context(CONTEXT))
    return a, [(d.claim_words, d.context_words, d.kinds, d.edge) for d in a.differences]


def test_a_faithful_copy_is_fully_covered_without_differences():
    a, found = diffs("Norman Rockwell painted her in 1943.")
    assert a.coverage == 1.0 and found == []


def test_an_inserted_negation_between_copied_fragments():
    _, found = diffs("The council said it may not raise taxes next year.")
    assert found == [(("not",), (), frozenset({"insertion", "negation"}), False)]


def test_a_dropped_hedge():
    _, found = diffs("The council said it will raise taxes next year.")
    assert [(c, x) for c, x, k, _ in found if "hedge_dropped" in k] == [(("will",), ("may",))]


def test_a_swapped_word_that_also_occurs_elsewhere_is_still_compared_in_place():
    _, found = diffs("He never let anyone see him or take photos.")
    ((claim_side, context_side, kinds, edge),) = found
    assert claim_side[0] == "see" and context_side[0] == "touch" and "substitution" in kinds and not edge


def test_a_number_swapped_inside_copied_text():
    _, found = diffs("Norman Rockwell painted her in 1944.")
    assert any("number" in k and c == ("1944",) for c, _, k, _ in found)


def test_a_name_swapped_across_a_seam():
    _, found = diffs("Norman Rockwell was a 19-year-old telephone operator at the time.")
    assert [(c, x) for c, x, k, _ in found if "name" in k] == [(("Norman", "Rockwell"), ("Mary", "Doyle"))]


def test_an_opposite_verb_in_place():
    _, found = diffs("Henderson has discouraged Raheem Sterling to follow his lead.")
    assert any("antonym" in k for _, _, k, _ in found)


def test_opposites_from_the_list_and_from_prefixes():
    assert opposite(stem("increase"), stem("decreased"))
    assert opposite(stem("suitable"), stem("unsuitable"))
    assert opposite(stem("motivate"), stem("demotivate"))
    assert not opposite(stem("inform"), stem("information"))


def test_exclusive_values_swapped_inside_copied_text():
    from hallumeasure.judges.offline.alignment import exclusive_swap

    a = align(words("The car is blue and fast."), index_context("The car is red and fast."))
    assert [("exclusive" in d.kinds, d.claim_words, d.context_words) for d in a.differences] == [
        (True, ("blue",), ("red",))
    ]
    assert exclusive_swap({"wife"}, {"his", "brother"}) and exclusive_swap({"week"}, {"every", "year"})
    # Spelling variants and plurals are one value; words of different sets are not compared.
    assert not exclusive_swap({"gray"}, {"grey"}) and not exclusive_swap({"brothers"}, {"brother"})
    assert not exclusive_swap({"blue"}, {"brother"}) and not exclusive_swap({"green"}, {"green", "red"})


def test_a_negation_that_restates_a_complementary_word_is_not_a_contradiction():
    from hallumeasure.judges.offline.alignment import negation_restated

    assert negation_restated(words("hours do not change"), words("hours stay the same"))
    assert not negation_restated(words("hours do not stay"), words("hours stay the same"))
    # A contrary pair is not complementary: "did not rise" does not mean "fell".
    assert not negation_restated(words("prices did not rise"), words("prices fell"))
