"""The offline judge: keyless, networkless claim extraction and judgement.

A rule-based claim extractor (extractor.py) and a judge that scores each claim with small
gradient-boosted trees over cheap, explainable signals (signals.py: n-gram overlap, copied
fragments and what differs between them, numbers and dates, names, negation, opposites,
hedges, intensity, attribution), raised by evidence rules of measured precision (model.py),
then labels and explains it from the signal that fired (reasons.py). Trained on public
labelled sets by scripts/train_offline.py. It is not an LLM: benchmarks/results/offline_quality.md
has its measured quality, next to simple baselines.
"""

from hallumeasure.judges.offline.extractor import OfflineExtractor, split_claims
from hallumeasure.judges.offline.judge import OfflineJudge

__all__ = ["OfflineExtractor", "OfflineJudge", "split_claims"]
