"""hallumeasure: claim-level hallucination measurement for grounded LLM responses."""

from hallumeasure.version import __version__

from hallumeasure.inputs import load_samples  # noqa: E402
from hallumeasure.labels import Label, Policy, Subtype, UnevaluatablePolicy  # noqa: E402
from hallumeasure.pipeline.build import build_extractor, build_judge, build_model  # noqa: E402
from hallumeasure.pipeline.run import measure_samples, run_measurement  # noqa: E402
from hallumeasure.store import load_run  # noqa: E402
from hallumeasure.detectors import build_stages  # noqa: E402
from hallumeasure.mitigate import mitigate_run  # noqa: E402
from hallumeasure.types import Claim, ClaimVerdict, Mode, ResponseResult, RunManifest, Sample  # noqa: E402
from hallumeasure.types import Evidence, Passage  # noqa: E402
from hallumeasure.rag import SourceOptions  # noqa: E402

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
