"""hallumeasure: claim-level hallucination measurement for grounded LLM responses.

The public API is the functions and types listed in ``__all__`` (docs/python-api.md
documents them). Each is imported on first use, so ``import hallumeasure`` stays cheap: the pytest
plugin, loaded into every test session of a project that installs hallumeasure, costs nothing until
a test uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hallumeasure.core.lazy import lazy_exports
from hallumeasure.version import __version__ as __version__

if TYPE_CHECKING:  # what type checkers and IDEs read: the names of _EXPORTS (tests/api/test_namespace.py)
    from hallumeasure.api.check import CheckedClaim as CheckedClaim
    from hallumeasure.api.check import Result as Result
    from hallumeasure.api.check import acheck as acheck
    from hallumeasure.api.check import check as check
    from hallumeasure.api.grounded import GroundednessError as GroundednessError
    from hallumeasure.api.grounded import assert_grounded as assert_grounded
    from hallumeasure.api.grounded import parametrize_samples as parametrize_samples
    from hallumeasure.api.measure import ameasure as ameasure
    from hallumeasure.api.measure import measure as measure
    from hallumeasure.api.plan import plan as plan
    from hallumeasure.api.run import ErrorReason as ErrorReason
    from hallumeasure.api.run import Run as Run
    from hallumeasure.api.run import RunAudit as RunAudit
    from hallumeasure.api.run import RunComparison as RunComparison
    from hallumeasure.api.run import load_run as load_run
    from hallumeasure.core.labels import Label as Label
    from hallumeasure.core.labels import Policy as Policy
    from hallumeasure.core.labels import Subtype as Subtype
    from hallumeasure.core.labels import UnevaluatablePolicy as UnevaluatablePolicy
    from hallumeasure.core.types import Claim as Claim
    from hallumeasure.core.types import ClaimVerdict as ClaimVerdict
    from hallumeasure.core.types import Evidence as Evidence
    from hallumeasure.core.types import Mode as Mode
    from hallumeasure.core.types import Passage as Passage
    from hallumeasure.core.types import ResponseResult as ResponseResult
    from hallumeasure.core.types import RunManifest as RunManifest
    from hallumeasure.core.types import Sample as Sample
    from hallumeasure.detectors import build_stages as build_stages
    from hallumeasure.guard import CheckResult as CheckResult
    from hallumeasure.guard import Guard as Guard
    from hallumeasure.guard import GuardSettings as GuardSettings
    from hallumeasure.judges.build import build_extractor as build_extractor
    from hallumeasure.judges.build import build_judge as build_judge
    from hallumeasure.mitigate import mitigate_run as mitigate_run
    from hallumeasure.models.factory import build_model as build_model
    from hallumeasure.pipeline.measurement import Measurement as Measurement
    from hallumeasure.pipeline.run import measure_samples as measure_samples
    from hallumeasure.pipeline.settings import MeasureSettings as MeasureSettings
    from hallumeasure.report.audit_settings import AuditGates as AuditGates
    from hallumeasure.report.audit_settings import AuditSettings as AuditSettings
    from hallumeasure.report.audit_settings import PlanSettings as PlanSettings
    from hallumeasure.runs.inputs import load_samples as load_samples
    from hallumeasure.sources.rag import SourceOptions as SourceOptions
    from hallumeasure.stats.power import SamplePlan as SamplePlan

#: Where each public name is defined, imported on first use (``hallumeasure.core.lazy``).
_EXPORTS = {
    # measuring and checking
    "hallumeasure.api.measure": ("measure", "ameasure"),
    "hallumeasure.api.check": ("check", "acheck", "Result", "CheckedClaim"),
    "hallumeasure.pipeline.settings": ("MeasureSettings",),
    # stored runs and their reports
    "hallumeasure.api.run": ("load_run", "Run", "RunComparison", "RunAudit", "ErrorReason"),
    "hallumeasure.report.audit_settings": ("AuditGates", "AuditSettings", "PlanSettings"),
    # planning an audit
    "hallumeasure.api.plan": ("plan",),
    "hallumeasure.stats.power": ("SamplePlan",),
    # in a test suite
    "hallumeasure.api.grounded": ("assert_grounded", "GroundednessError", "parametrize_samples"),
    # in the serving path (hallumeasure serve runs the same guard over HTTP)
    "hallumeasure.guard": ("Guard", "GuardSettings", "CheckResult"),
    # the records
    "hallumeasure.core.types": (
        "Sample",
        "Passage",
        "Claim",
        "ClaimVerdict",
        "Evidence",
        "ResponseResult",
        "RunManifest",
        "Mode",
    ),
    "hallumeasure.core.labels": ("Label", "Subtype", "Policy", "UnevaluatablePolicy"),
    # building blocks, for pipelines of your own
    "hallumeasure.runs.inputs": ("load_samples",),
    "hallumeasure.judges.build": ("build_extractor", "build_judge"),
    "hallumeasure.models.factory": ("build_model",),
    "hallumeasure.detectors": ("build_stages",),
    "hallumeasure.pipeline.measurement": ("Measurement",),
    "hallumeasure.pipeline.run": ("measure_samples",),
    "hallumeasure.mitigate": ("mitigate_run",),
    "hallumeasure.sources.rag": ("SourceOptions",),
}

if not TYPE_CHECKING:  # hidden from type checkers, so that a name not listed above is an error there
    __getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, own=("__version__",))
