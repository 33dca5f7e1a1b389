"""Build the extractor and judge that a spec string names (``offline``, ``fake``, ``anthropic:...`` ...)."""

from __future__ import annotations

from typing import Any

from hallumeasure.core.types import Mode
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.judges.nli import NLI, OFFLINE_NLI
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge
from hallumeasure.models.cache import RequestCache
from hallumeasure.models.model import Model
from hallumeasure.models.registry import build_model_api

OFFLINE = "offline"


def build_model(
    spec: str, *, cache: RequestCache | None = None, model_options: dict[str, Any] | None = None, **wrapper_options: Any
) -> Model:
    """A ``Model`` wrapper around the provider named by ``spec``."""
    return Model(build_model_api(spec, **(model_options or {})), cache=cache, **wrapper_options)


def build_extractor(spec: str, *, model: Model | None = None, **options: Any) -> ClaimExtractor:
    if spec == OFFLINE:
        from hallumeasure.judges.offline import OfflineExtractor

        return OfflineExtractor()
    return LLMExtractor(model or build_model(spec, **options))


def build_judge(
    spec: str, mode: Mode | str = Mode.COT_ONE, *, model: Model | None = None, **options: Any
) -> ClaimJudge:
    if spec == OFFLINE:
        from hallumeasure.judges.offline import OfflineJudge

        return OfflineJudge()
    if spec == NLI:
        from hallumeasure.judges.nli.judge import NliClaimJudge

        return NliClaimJudge()
    if spec == OFFLINE_NLI:
        from hallumeasure.judges.nli.judge import NliClaimJudge
        from hallumeasure.judges.offline import OfflineJudge

        return OfflineJudge(assist=NliClaimJudge())
    return LLMJudge(model or build_model(spec, **options), Mode(mode))
