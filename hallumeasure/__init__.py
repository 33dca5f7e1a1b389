"""hallumeasure: claim-level hallucination measurement for grounded LLM responses."""

from hallumeasure.detectors import build_stages
from hallumeasure.inputs import load_samples
from hallumeasure.labels import Label, Policy, Subtype, UnevaluatablePolicy
from hallumeasure.mitigate import mitigate_run
from hallumeasure.pipeline.build import build_extractor, build_judge, build_model
from hallumeasure.pipeline.run import measure_samples, run_measurement
from hallumeasure.rag import SourceOptions
from hallumeasure.store import load_run
from hallumeasure.types import Claim, ClaimVerdict, Evidence, Mode, Passage, ResponseResult, RunManifest, Sample
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
