"""Other detectors from the papers, behind the same extractor / judge protocols as the claim judge.

A detector is a pair of stages, so its results land in an ordinary run (``manifest.detector``
says which one made it) and every report, the comparison and ``mitigate`` read it unchanged. The
built-in detectors are registered in ``hallumeasure.registry`` (``detectors.stages`` builds them);
plugins add theirs under the ``hallumeasure.detectors`` entry-point group:

- ``claims``: the HalluMeasure claim extractor and claim judge (``hallumeasure.pipeline``);
- ``conli``: sentences as hypotheses, NLI per sentence, then per entity (``detectors.conli``);
- ``cascade``: a cheap first pass, and an LLM that explains only its flags (``detectors.cascade``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hallumeasure.core.labels import Policy
from hallumeasure.core.types import Mode, RunManifest
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge, StageRequest
from hallumeasure.models.model import Model
from hallumeasure.registry import PartKind, registry

ModelFor = Callable[[str], Model]


def _default_models() -> ModelFor:
    from hallumeasure.models.factory import ModelFactory, ModelOptions

    return ModelFactory(ModelOptions(no_cache=True))


def build_stages(
    detector: str,
    *,
    extractor: str = "offline",
    judge: str = "offline",
    mode: Mode = Mode.COT_ONE,
    first_pass: str = "offline",
    policy: Policy | None = None,
    threshold: float | None = 0.5,
    flip_no_problem: bool = True,
    model_for: ModelFor | None = None,
) -> tuple[ClaimExtractor, ClaimJudge]:
    """The extractor and judge of the registered ``detector``; ``model_for(spec)`` gives an LLM spec's model.

    Pass one ``model_for`` that returns the same ``Model`` for the same spec (a ``ModelFactory``) to share a
    cache and usage between stages; without one, models are built without a request cache.
    """
    request = StageRequest(
        model_for=model_for or _default_models(),
        extractor=extractor,
        judge=judge,
        mode=Mode(mode),
        first_pass=first_pass,
        policy=policy,
        threshold=threshold,
        flip_no_problem=flip_no_problem,
    )
    stages = registry().part(PartKind.DETECTOR, detector).load()(request)
    return stages[0], stages[1]


def stages_from_manifest(
    manifest: RunManifest, *, model_for: ModelFor | None = None
) -> tuple[ClaimExtractor, ClaimJudge]:
    """Rebuild the extractor and judge that measured a run, from its manifest."""
    judge_settings: dict[str, Any] = manifest.settings.get("judge", {}) or {}
    model_for = model_for or _default_models()
    if manifest.detector == "cascade":
        return build_stages(
            "cascade",
            extractor=manifest.extractor,
            judge=judge_settings["model"],
            mode=manifest.mode,
            first_pass=judge_settings["first_pass"],
            policy=manifest.policy,
            threshold=judge_settings.get("threshold", 0.5),
            flip_no_problem=judge_settings.get("flip_no_problem", True),
            model_for=model_for,
        )
    if manifest.detector == "conli":
        return build_stages("conli", judge=judge_settings.get("nli", manifest.judge), model_for=model_for)
    votes = judge_settings.get("votes")
    if votes:  # repeats or a panel: the same judges, repeats and rule
        from hallumeasure.judges.build import build_extractor
        from hallumeasure.judges.votes import build_voting_judge

        request = StageRequest(model_for=model_for)
        extractor = build_extractor(manifest.extractor, model=request.model(manifest.extractor))
        return extractor, build_voting_judge(
            votes["judges"],
            manifest.mode,
            repeats=votes["repeats"],
            rule=votes["rule"],
            policy=manifest.policy,
            model_for=model_for,
        )
    return build_stages(
        manifest.detector, extractor=manifest.extractor, judge=manifest.judge, mode=manifest.mode, model_for=model_for
    )
