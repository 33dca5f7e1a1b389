"""The offline judge: keyless, networkless claim extraction and judgement.

A rule-based claim extractor and a small gradient-boosted model over cheap signals (word and
n-gram alignment, numbers and dates, names, negation, intensity, hedging, attribution),
trained on public labelled data. It is not an LLM; benchmarks/offline_quality.md has its
measured quality.
"""

from hallumeasure.offline.extractor import OfflineExtractor, split_claims
from hallumeasure.offline.judge import OfflineJudge

__all__ = ["OfflineExtractor", "OfflineJudge", "split_claims"]
