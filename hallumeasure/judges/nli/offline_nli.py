"""The ``offline+nli`` judge as the registry builds it (a module of its own: it joins two families)."""

from __future__ import annotations

from hallumeasure.judges.nli.judge import NliClaimJudge
from hallumeasure.judges.offline import OfflineJudge


def offline_with_nli() -> OfflineJudge:
    """The offline judge, asking the entailment model where its own signals are unsure (``assist.py``)."""
    return OfflineJudge(assist=NliClaimJudge())
