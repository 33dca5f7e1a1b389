"""The sentence index finds the reading-aid sentence that ``align_claim`` finds, without scanning every sentence."""

from hallumeasure.sources.align import SentenceIndex, align_claim

CONTEXT = (
    "The bridge is 24 km long. It opened in 2019. The mayor praised the builders. "
    "The bridge over the river opened after six years. Builders from three towns worked on the bridge."
)
CLAIMS = [
    "The bridge opened in 2020.",
    "The mayor thanked the builders warmly.",
    "Completely unrelated words here.",
    "The.",
    "The bridge is long.",
    "Builders worked for six years on the river bridge.",
    "",
]


def test_the_index_aligns_every_claim_as_align_claim_does():
    index = SentenceIndex(CONTEXT)
    for claim in CLAIMS:
        assert index.align(claim) == align_claim(claim, CONTEXT), claim


def test_hundreds_of_claims_against_a_long_context_align_at_once():
    import time

    context = " ".join(f"Sentence {i} mentions the item number {i} of the list." for i in range(20_000))
    index = SentenceIndex(context)
    started = time.perf_counter()
    found = [index.align(f"The item number {i} is on the list.") for i in range(0, 20_000, 40)]
    assert time.perf_counter() - started < 20  # scanning every sentence per claim takes minutes
    assert found[1] is not None and found[1].sentence == "Sentence 40 mentions the item number 40 of the list."


def test_a_repeated_sentence_aligns_to_its_first_copy():
    context = "Filler here. The bridge is long. Filler here. The bridge is long."
    found = SentenceIndex(context).align("The bridge is long.")
    assert found == align_claim("The bridge is long.", context) and found.start == context.index("The bridge")
