"""hallumeasure: claim-level hallucination measurement for grounded LLM responses.

The public API is the functions and types listed in ``__all__`` (docs/python-api.md
documents them). Each is imported on first use, so ``import hallumeasure`` stays cheap: the pytest
plugin, loaded into every test session of a project that installs hallumeasure, costs nothing until
a test uses it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from hallumeasure.version import __version__

if TYPE_CHECKING:
    from hallumeasure.api.check import CheckedClaim, Result, acheck, check
    from hallumeasure.api.grounded import GroundednessError, assert_grounded, parametrize_samples
    from hallumeasure.api.measure import ameasure, measure
    from hallumeasure.api.plan import plan
    from hallumeasure.api.run import ErrorReason, Run, RunAudit, RunComparison
    from hallumeasure.api.run import load as load_run
    from hallumeasure.core.labels import Label, Policy, Subtype, UnevaluatablePolicy
    from hallumeasure.core.types import (
        Claim,
        ClaimVerdict,
        Evidence,
        Mode,
        Passage,
        ResponseResult,
        RunManifest,
        Sample,
    )
    from hallumeasure.detectors import build_stages
    from hallumeasure.guard import CheckResult, Guard, GuardSettings
    from hallumeasure.judges.build import build_extractor, build_judge
    from hallumeasure.mitigate import mitigate_run
    from hallumeasure.models.factory import build_model
    from hallumeasure.pipeline.run import measure_samples, run_measurement
    from hallumeasure.pipeline.settings import MeasureSettings
    from hallumeasure.report.audit import AuditGates, AuditSettings
    from hallumeasure.report.plan import PlanSettings
    from hallumeasure.runs.inputs import load_samples
    from hallumeasure.sources.rag import SourceOptions
    from hallumeasure.stats.power import SamplePlan

#: Public name -> (module, name in it).
_EXPORTS: dict[str, tuple[str, str]] = {
    # measuring and checking
    "measure": ("hallumeasure.api.measure", "measure"),
    "ameasure": ("hallumeasure.api.measure", "ameasure"),
    "check": ("hallumeasure.api.check", "check"),
    "acheck": ("hallumeasure.api.check", "acheck"),
    "Result": ("hallumeasure.api.check", "Result"),
    "CheckedClaim": ("hallumeasure.api.check", "CheckedClaim"),
    "MeasureSettings": ("hallumeasure.pipeline.settings", "MeasureSettings"),
    # stored runs and their reports
    "load_run": ("hallumeasure.api.run", "load"),
    "Run": ("hallumeasure.api.run", "Run"),
    "RunComparison": ("hallumeasure.api.run", "RunComparison"),
    "RunAudit": ("hallumeasure.api.run", "RunAudit"),
    "ErrorReason": ("hallumeasure.api.run", "ErrorReason"),
    "AuditGates": ("hallumeasure.report.audit", "AuditGates"),
    "AuditSettings": ("hallumeasure.report.audit", "AuditSettings"),
    # planning an audit
    "plan": ("hallumeasure.api.plan", "plan"),
    "PlanSettings": ("hallumeasure.report.plan", "PlanSettings"),
    "SamplePlan": ("hallumeasure.stats.power", "SamplePlan"),
    # in a test suite
    "assert_grounded": ("hallumeasure.api.grounded", "assert_grounded"),
    "GroundednessError": ("hallumeasure.api.grounded", "GroundednessError"),
    "parametrize_samples": ("hallumeasure.api.grounded", "parametrize_samples"),
    # in the serving path (hallumeasure serve runs the same guard over HTTP)
    "Guard": ("hallumeasure.guard", "Guard"),
    "GuardSettings": ("hallumeasure.guard", "GuardSettings"),
    "CheckResult": ("hallumeasure.guard", "CheckResult"),
    # the records
    "Sample": ("hallumeasure.core.types", "Sample"),
    "Passage": ("hallumeasure.core.types", "Passage"),
    "Claim": ("hallumeasure.core.types", "Claim"),
    "ClaimVerdict": ("hallumeasure.core.types", "ClaimVerdict"),
    "Evidence": ("hallumeasure.core.types", "Evidence"),
    "ResponseResult": ("hallumeasure.core.types", "ResponseResult"),
    "RunManifest": ("hallumeasure.core.types", "RunManifest"),
    "Mode": ("hallumeasure.core.types", "Mode"),
    "Label": ("hallumeasure.core.labels", "Label"),
    "Subtype": ("hallumeasure.core.labels", "Subtype"),
    "Policy": ("hallumeasure.core.labels", "Policy"),
    "UnevaluatablePolicy": ("hallumeasure.core.labels", "UnevaluatablePolicy"),
    # building blocks, for pipelines of your own
    "load_samples": ("hallumeasure.runs.inputs", "load_samples"),
    "build_extractor": ("hallumeasure.judges.build", "build_extractor"),
    "build_judge": ("hallumeasure.judges.build", "build_judge"),
    "build_model": ("hallumeasure.models.factory", "build_model"),
    "build_stages": ("hallumeasure.detectors", "build_stages"),
    "measure_samples": ("hallumeasure.pipeline.run", "measure_samples"),
    "run_measurement": ("hallumeasure.pipeline.run", "run_measurement"),
    "mitigate_run": ("hallumeasure.mitigate", "mitigate_run"),
    "SourceOptions": ("hallumeasure.sources.rag", "SourceOptions"),
}

__all__ = [
    "AuditGates",
    "AuditSettings",
    "CheckResult",
    "CheckedClaim",
    "Claim",
    "ClaimVerdict",
    "ErrorReason",
    "Evidence",
    "GroundednessError",
    "Guard",
    "GuardSettings",
    "Label",
    "MeasureSettings",
    "Mode",
    "Passage",
    "PlanSettings",
    "Policy",
    "ResponseResult",
    "Result",
    "Run",
    "RunAudit",
    "RunComparison",
    "RunManifest",
    "Sample",
    "SamplePlan",
    "SourceOptions",
    "Subtype",
    "UnevaluatablePolicy",
    "__version__",
    "acheck",
    "ameasure",
    "assert_grounded",
    "build_extractor",
    "build_judge",
    "build_model",
    "build_stages",
    "check",
    "load_run",
    "load_samples",
    "measure",
    "measure_samples",
    "mitigate_run",
    "parametrize_samples",
    "plan",
    "run_measurement",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'hallumeasure' has no attribute {name!r}") from None
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return list(__all__)
