"""Other detectors from the papers, behind the same extractor / judge protocols as the claim judge.

A detector is a pair of stages, so its results land in an ordinary run (``manifest.detector``
says which one made it) and every report, the comparison and ``mitigate`` read it unchanged:

- ``claims``: the HalluMeasure claim extractor and claim judge (``hallumeasure.pipeline``);
- ``conli``: sentences as hypotheses, NLI per sentence, then per entity (``detectors.conli``);
- ``cascade``: a cheap first-pass judge, and an LLM that explains only its flags (``detectors.cascade``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import Mode, RunManifest
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge
from hallumeasure.models.model import Model

DETECTORS = ("claims", "conli", "cascade")
OFFLINE = "offline"

ModelFor = Callable[[str], Model]


def _default_model_for(spec: str) -> Model:
    from hallumeasure.detectors.scripted import fake_model_options
    from hallumeasure.judges.build import build_model

    return build_model(spec, model_options=fake_model_options(spec))


def build_stages(
    detector: str,
    *,
    extractor: str = OFFLINE,
    judge: str = OFFLINE,
    mode: Mode = Mode.COT_ONE,
    first_pass: str = OFFLINE,
    policy: Policy | None = None,
    threshold: float | None = 0.5,
    flip_no_problem: bool = True,
    model_for: ModelFor | None = None,
) -> tuple[ClaimExtractor, ClaimJudge]:
    """The extractor and judge of ``detector``; ``model_for(spec)`` gives the model of an LLM spec.

    ``judge`` is the claim judge (claims), the NLI judge (conli) or the reasoner LLM (cascade);
    ``first_pass`` is the cascade's first-pass judge; ``extractor`` is ignored by conli (it splits
    sentences). Pass one ``model_for`` that returns the same ``Model`` for the same spec to share
    a cache and usage between stages.
    """
    from hallumeasure.judges.build import build_extractor, build_judge
    from hallumeasure.judges.nli import KEYLESS_JUDGES, NLI

    model_for = model_for or _default_model_for

    def model(spec: str) -> Model | None:
        return None if spec in KEYLESS_JUDGES else model_for(spec)

    if detector == "claims":
        return (build_extractor(extractor, model=model(extractor)), build_judge(judge, mode, model=model(judge)))
    if detector == "conli":
        from hallumeasure.detectors.conli import ConliJudge, LLMNliJudge, NliJudge, OfflineNliJudge, SentenceExtractor

        nli: NliJudge
        if judge in KEYLESS_JUDGES:  # nli: the trained entailment model judges sentences, look-ups check entities
            nli = OfflineNliJudge(build_judge(NLI) if judge == NLI else None)
        else:
            nli = LLMNliJudge(model_for(judge))
        return SentenceExtractor(), ConliJudge(nli)
    if detector == "cascade":
        from hallumeasure.detectors.cascade import CascadeJudge

        if judge in KEYLESS_JUDGES:
            raise ConfigError(
                "the cascade needs an LLM as its reasoner: pass --judge <provider:model> "
                "(the first pass is set with --first-pass, offline by default)"
            )
        first = build_judge(first_pass, mode, model=model(first_pass))
        return (
            build_extractor(extractor, model=model(extractor)),
            CascadeJudge(first, model_for(judge), policy=policy, threshold=threshold, flip_no_problem=flip_no_problem),
        )
    raise ConfigError(f"unknown detector {detector!r}; use one of {', '.join(DETECTORS)}")


def stages_from_manifest(
    manifest: RunManifest, *, model_for: ModelFor | None = None
) -> tuple[ClaimExtractor, ClaimJudge]:
    """Rebuild the extractor and judge that measured a run, from its manifest."""
    judge_settings: dict[str, Any] = manifest.settings.get("judge", {}) or {}
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

        model_for = model_for or _default_model_for
        extractor = build_extractor(
            manifest.extractor, model=None if manifest.extractor == OFFLINE else model_for(manifest.extractor)
        )
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


def detector_stats(judge: ClaimJudge) -> dict[str, Any] | None:
    """The judge's counters (conli and cascade keep them), or None for judges without."""
    stats = getattr(judge, "stats", None)
    return stats() if callable(stats) else None


def save_detector_stats(run_dir: str | Path, judge: ClaimJudge) -> dict[str, Any] | None:
    """Write the judge's counters into the run manifest as ``settings.detector_stats`` (after the run).

    ``run_measurement`` records settings before any claim is judged, so counters that grow during
    the run are written here once it has finished.
    """
    from hallumeasure.runs.store import RunStore

    stats = detector_stats(judge)
    if stats is None:
        return None
    with RunStore(run_dir, write=True) as store:
        manifest = store.read_manifest()
        if manifest is None:
            raise ConfigError(f"{run_dir} has no manifest to record detector stats in")
        settings = {**manifest.settings, "detector_stats": stats}
        store.write_manifest(manifest.model_copy(update={"settings": settings}))
    return stats
