"""hallumeasure: claim-level hallucination measurement for grounded LLM responses."""

from hallumeasure.core.labels import Label, Policy, Subtype, UnevaluatablePolicy
from hallumeasure.core.types import Claim, ClaimVerdict, Evidence, Mode, Passage, ResponseResult, RunManifest, Sample
from hallumeasure.detectors import build_stages
from hallumeasure.judges.build import build_extractor, build_judge, build_model
from hallumeasure.mitigate import mitigate_run
from hallumeasure.pipeline.run import measure_samples, run_measurement
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.store import load_run
from hallumeasure.sources.rag import SourceOptions
from hallumeasure.version import __version__

__all__ = [
    "Claim",
    "ClaimVerdict",
    "Evidence",
    "Label",
    "Mode",
    "Passage",
    "Policy",
    "ResponseResult",
    "RunManifest",
    "Sample",
    "SourceOptions",
    "Subtype",
    "UnevaluatablePolicy",
    "__version__",
    "build_extractor",
    "build_judge",
    "build_model",
    "build_stages",
    "load_run",
    "load_samples",
    "measure_samples",
    "mitigate_run",
    "run_measurement",
]
