"""Short premises for a long context: the few context sentences that share the most content words with a claim.

A small cross-encoder reads at most a few hundred tokens, and entailment models trained on
sentence pairs judge a long document poorly (Laban et al., SummaC, 2022). So each claim (or
each sentence of a response) is paired with its best context sentences, found by the same
content-stem overlap the offline judge aligns with, kept in document order and joined.
"""

from __future__ import annotations

from hallumeasure.judges.offline.context import index_context, split_context
from hallumeasure.judges.offline.tokens import content_stems, words

#: Context sentences joined into one premise per claim.
TOP_SENTENCES = 3


def hypothesis_sentences(text: str) -> list[str]:
    """The sentences of a response (one claim is usually one sentence and stays whole)."""
    return split_context(text) or [text.strip()]


def best_sentences(hypothesis: str, context: str, k: int = TOP_SENTENCES) -> list[str]:
    """The ``k`` context sentences that share most content stems with ``hypothesis``, in document order."""
    index = index_context(context)
    sentences = index.sentences
    if len(sentences) <= k:
        return list(sentences)
    wanted = set(content_stems(words(hypothesis)))
    ranked = sorted(range(len(sentences)), key=lambda i: (-len(wanted & index.sentence_stems[i]), i))
    return [sentences[i] for i in sorted(ranked[:k])]


def premise_for(hypothesis: str, context: str, k: int = TOP_SENTENCES) -> str:
    """One premise for ``hypothesis``: its best ``k`` context sentences joined."""
    return " ".join(best_sentences(hypothesis, context, k))
