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

from typing import Any

from hallumeasure.core.labels import Policy
from hallumeasure.core.types import Mode
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge
from hallumeasure.pipeline.measurement import Measurement, ModelFor, measure_settings, policy_values

__all__ = ["ModelFor", "build_stages"]


def build_stages(
    detector: str,
    *,
    extractor: str = "offline",
    judge: str = "offline",
    mode: Mode = Mode.COT_ONE,
    first_pass: str | None = None,
    policy: Policy | None = None,
    threshold: float | None = None,
    model_for: ModelFor | None = None,
) -> tuple[ClaimExtractor, ClaimJudge]:
    """The extractor and judge of the registered ``detector``, built as ``measure`` builds them (``Measurement``).

    ``model_for(spec)`` gives an LLM spec's model: pass one that returns the same ``Model`` for the same spec (a
    ``ModelFactory``) to share a cache and usage between stages; without one, models are built without a request
    cache. ``first_pass`` and ``threshold`` are the cascade's (offline and 0.5 when not given).
    """
    from hallumeasure.models.factory import ModelFactory, ModelOptions

    values: dict[str, Any] = {"detector": detector, "extractor": extractor, "judge": [judge], "mode": Mode(mode)}
    values |= {"first_pass": first_pass, "flag_threshold": threshold}
    if policy is not None:
        values |= policy_values(policy)
    stages = Measurement(measure_settings(values)).stages(models=model_for or ModelFactory(ModelOptions(no_cache=True)))
    return stages.extractor, stages.judge
