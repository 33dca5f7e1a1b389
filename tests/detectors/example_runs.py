"""A run of the bundled examples with a detector's stages, as ``measure --detector`` makes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testdata import EXAMPLES

from hallumeasure.core.types import Mode, ResponseResult, RunManifest
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.runs.inputs import load_samples


def measure_examples(out: Path, detector: str, extractor: Any, judge: Any) -> tuple[RunManifest, list[ResponseResult]]:
    """Measure examples/samples.jsonl into ``out`` with ``detector``'s ``extractor`` and ``judge`` (cot-one)."""
    loaded = load_samples(EXAMPLES)
    return run_measurement(
        loaded.samples, out, extractor, judge, mode=Mode.COT_ONE, input_sha256=loaded.sha256, detector=detector
    )
