"""JSON Schemas of the public records, generated into ``schemas/``; a test fails when they drift.

Regenerate with ``python -m hallumeasure.report.schemas``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from hallumeasure.core import types
from hallumeasure.judges import votes
from hallumeasure.judges.llm import outputs
from hallumeasure.report import stability
from hallumeasure.report.audit import AuditResult
from hallumeasure.report.calibrate import CalibrationReport
from hallumeasure.sources import rag
from hallumeasure.stats.power import SamplePlan

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"

MODELS: dict[str, type[BaseModel]] = {
    "sample": types.Sample,
    "claim": types.Claim,
    "claim_verdict": types.ClaimVerdict,
    "response_result": types.ResponseResult,
    "run_manifest": types.RunManifest,
    "vote": types.Vote,
    "vote_settings": votes.VoteSettings,
    "judge_stability": stability.StabilityReport,
    "passage": types.Passage,
    "evidence": types.Evidence,
    "rag_summary": rag.RagSummary,
    "llm_extracted_claims": outputs.ExtractedClaims,
    "llm_verdict_cot": outputs.CotVerdict,
    "llm_verdict_nocot": outputs.PlainVerdict,
    "llm_verdicts_cot": outputs.CotVerdicts,
    "llm_verdicts_nocot": outputs.PlainVerdicts,
    "llm_rewrite": outputs.Rewrite,
    "llm_nli": outputs.NliJudgement,
    "llm_cascade_explanation": outputs.CascadeExplanation,
    "audit_result": AuditResult,
    "calibration_report": CalibrationReport,
    "sample_plan": SamplePlan,
}


def render(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"


def write_all(directory: Path = SCHEMA_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in MODELS.items():
        path = directory / f"{name}.schema.json"
        path.write_text(render(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_all():
        print(path)
    sys.exit(0)
