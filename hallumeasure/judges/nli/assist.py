"""The offline judge assisted by the entailment model where its cheap signals are unsure (``--judge offline+nli``).

The trees decide alone when they are confident. When a probability (a claim's, or the response
score) falls inside ``UNSURE``, the entailment model is asked too and the two probabilities are
averaged. The rule is fixed, fitted on nothing, so its leave-one-dataset-out measure needs no
extra hold-out (benchmarks/results/nli_quality.md), and the model runs only on the unsure part of a run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The band of P(unsupported) in which the offline judge asks the entailment model.
UNSURE = (0.3, 0.7)


def unsure(p: float | np.ndarray, band: tuple[float, float] = UNSURE) -> bool | np.ndarray:
    """Whether ``p`` lies strictly inside ``band``."""
    return (p > band[0]) & (p < band[1])


def blend(offline: float, nli: float, band: tuple[float, float] = UNSURE) -> float:
    """The offline probability, averaged with the NLI one when the offline one is unsure."""
    return (offline + nli) / 2 if unsure(offline, band) else offline


def needs_nli(probabilities: Sequence[float], score: float | None, band: tuple[float, float] = UNSURE) -> list[int]:
    """Indices of the claims whose NLI probability the blend needs: the unsure ones, or all when the score is."""
    if score is not None and unsure(score, band):
        return list(range(len(probabilities)))
    return [i for i, p in enumerate(probabilities) if unsure(p, band)]
