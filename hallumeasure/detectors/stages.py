"""The built-in detectors as the registry builds them: each turns a ``StageRequest`` into (extractor, judge)."""

from __future__ import annotations

from hallumeasure.core.errors import ConfigError
from hallumeasure.judges.build import build_extractor, build_judge
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge, StageRequest
from hallumeasure.registry import is_keyless

Stages = tuple[ClaimExtractor, ClaimJudge]


def claims_stages(request: StageRequest) -> Stages:
    """HalluMeasure: the claim extractor and the claim judge."""
    r = request
    return (
        build_extractor(r.extractor, model=r.model(r.extractor)),
        build_judge(r.judge, r.mode, model=r.model(r.judge)),
    )


def conli_stages(request: StageRequest) -> Stages:
    """CoNLI: sentences as hypotheses, NLI per sentence, then per entity (the extractor setting is not used)."""
    from hallumeasure.detectors.conli import ConliJudge, LLMNliJudge, NliJudge, OfflineNliJudge, SentenceExtractor

    nli: NliJudge
    if is_keyless(request.judge):  # a keyless judge labels the sentences; value look-ups check the entities
        nli = OfflineNliJudge(build_judge(request.judge))
    else:
        nli = LLMNliJudge(request.model_for(request.judge))
    return SentenceExtractor(), ConliJudge(nli)


def cascade_stages(request: StageRequest) -> Stages:
    """The cascade: a keyless first pass flags suspects, and only those go to the LLM reasoner."""
    from hallumeasure.detectors.cascade import CascadeJudge

    r = request
    if is_keyless(r.judge):
        raise ConfigError(
            "the cascade needs an LLM as its reasoner: pass --judge <provider:model> "
            "(the first pass is set with --first-pass, offline by default)"
        )
    first = build_judge(r.first_pass, r.mode, model=r.model(r.first_pass))
    judge = CascadeJudge(
        first, r.model_for(r.judge), policy=r.policy, threshold=r.threshold, flip_no_problem=r.flip_no_problem
    )
    return build_extractor(r.extractor, model=r.model(r.extractor)), judge
