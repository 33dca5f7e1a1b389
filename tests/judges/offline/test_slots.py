"""A context sentence's values read from the context index are the values read from its text."""

from __future__ import annotations

from hallumeasure.judges.offline.context import index_context
from hallumeasure.judges.offline.slots import context_pool, read_values, sentence_values

CONTEXT = (
    "The museum opens at 9 a.m. on weekdays and has 150 seats. Twenty-two rooms were renovated in March 2021 "
    "for 4.2 million euros. Maria Smith said all visitors may enter free on Sundays. "
    "The \u017fix new rooms cost 3,500,000 dollars."  # a long s: this sentence is read from its text
)


def test_sentence_values_are_read_values_of_the_sentence():
    index = index_context(CONTEXT)
    for number, sentence in enumerate(index.sentences):
        assert sentence_values(index, number) == read_values(sentence)
        assert sentence_values(index, number) is sentence_values(index, number)  # read once per context


def test_the_number_pool_holds_every_sentences_numbers():
    index = index_context(CONTEXT)
    pool = context_pool(index, "numeric")
    numbers = [v for s in index.sentences for v in read_values(s) if v.kind in ("number", "share", "money", "year")]
    assert sorted(map(repr, pool)) == sorted(map(repr, numbers))
