"""Every field rendered into a report is escaped: hostile text in contexts, responses, questions,
claims, reasons, model names, sample ids, judge and extractor names and run names, through the
comparison report, the audit outputs (Markdown and JUnit XML, also for a usage error), the notebook
claims table and the mitigation report. Uses ``assert_escaped`` from tests/report/helpers.py: each
payload must be shown, escaped, and no live markup may remain.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from report.helpers import assert_escaped, write_run

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.types import Mode, Sample
from hallumeasure.detectors.rewrite import OfflineRewriter
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.mitigate import mitigate_run
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.report.audit import AuditGates, audit_runs, write_usage_error
from hallumeasure.report.compare import compare_runs
from hallumeasure.report.drilldown import claims_html, claims_with_sources
from hallumeasure.runs.run import load_run

FIELDS = ("id", "model", "question", "context", "response", "claim", "reason", "detail", "judge", "extractor", "run")


def payloads(field: str) -> tuple[str, str]:
    """The two payloads of assert_escaped, tagged with the field they are put in."""
    return f"<script>alert(1)</script>{field}", f'"><img src=x onerror=alert(1)>{field}'


def shown(*fields: str) -> list[str]:
    return [p for f in fields for p in payloads(f)]


def _hostile_sample(i: int) -> Sample:
    s_id, i_id = payloads("id")
    return Sample(
        id=f"{s_id if i % 2 else i_id} {i}",
        model=" ".join(payloads("model")),
        question="How long? " + " ".join(payloads("question")),
        context=f"The bridge number {i} is 24 km long. {' '.join(payloads('context'))} It opened in 2019.",
        response=f"The bridge number {i} is 42 km long {' '.join(payloads('response'))}. It opened in 2019.",
    )


def _hostile_run(path: Path, unsupported: int) -> Path:
    claim, reason, detail = " ".join(payloads("claim")), " ".join(payloads("reason")), " ".join(payloads("detail"))
    rows = []
    for i in range(8):
        bad = ("contradicted", "number", reason) if i < unsupported else "supported"
        rows.append(
            (_hostile_sample(i), [(f"The bridge is 42 km long {claim}.", bad), ("It opened in 2019.", "supported")])
        )
    run = write_run(
        path,
        rows,
        judge="judge " + " ".join(payloads("judge")),
        extractor="extractor " + " ".join(payloads("extractor")),
        failed={_hostile_sample(7).id: "extraction failed: " + reason},
    )
    # write_run gives every reasoned verdict the same subtype reason; put the hostile detail in it.
    with sqlite3.connect(run / "run.sqlite") as db:
        db.execute("UPDATE verdicts SET subtype_reason = ? WHERE subtype_reason IS NOT NULL", (detail,))
    return run


@pytest.fixture
def runs(tmp_path):
    run_name = payloads("run")[1]  # a directory name may hold quotes and angle brackets (but no slash)
    base = _hostile_run(tmp_path / f"base {run_name}", unsupported=2)
    cur = _hostile_run(tmp_path / f"cur {run_name}", unsupported=5)
    return base, cur


def test_the_comparison_report_escapes_every_field(tmp_path, runs):
    compare_runs(list(runs), tmp_path / "out", resamples=200, worst=8)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert_escaped(
        page, shown("id", "model", "question", "context", "response", "claim", "reason", "detail", "judge", "extractor")
    )
    assert_escaped(page, [payloads("run")[1]])
    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "<script" not in markdown.lower() and "<img" not in markdown.lower()


def test_the_audit_outputs_escape_every_field(tmp_path, runs):
    base, cur = runs
    model = " ".join(payloads("model"))
    result = audit_runs(
        base, cur, AuditGates(), out_dir=tmp_path / "out", resamples=200, current_model=model, baseline_model=model
    )
    assert result.exit_code in (1, 3)
    out = tmp_path / "out"
    markdown = (out / "audit.md").read_text(encoding="utf-8")
    assert_escaped(markdown, [*shown("model", "judge", "extractor"), payloads("run")[1]])
    junit = (out / "audit.junit.xml").read_text(encoding="utf-8")
    assert_escaped(junit, [])  # no live markup; the gates hold numbers and settings only
    saved = json.loads((out / "audit.json").read_text(encoding="utf-8"))  # data, kept exact (JSON-escaped)
    assert saved["current"].endswith(f"[{model}]")


def test_an_audit_usage_error_naming_hostile_text_is_escaped(tmp_path, runs):
    base, cur = runs
    unknown = payloads("model")[0] + " missing"
    with pytest.raises(ConfigError) as caught:
        audit_runs(base, cur, resamples=200, current_model=unknown)
    write_usage_error(tmp_path / "out", str(caught.value))
    for name in ("audit.md", "audit.junit.xml"):
        assert_escaped((tmp_path / "out" / name).read_text(encoding="utf-8"), [payloads("model")[0]])


def test_the_notebook_claims_table_escapes_every_field(runs):
    base, _ = runs
    page = str(claims_html(claims_with_sources(load_run(base)), limit=100))
    assert_escaped(page, shown("id", "model", "context", "claim", "reason", "detail"))


def test_the_mitigation_report_escapes_every_field(tmp_path):
    samples = [_hostile_sample(i) for i in range(4)]
    model = Model(FakeAPI())
    extractor, judge = LLMExtractor(model), LLMJudge(model, Mode.COT_ONE)
    run_measurement(samples, tmp_path / "run", extractor, judge, mode=Mode.COT_ONE, input_sha256="0" * 64)
    mitigate_run(
        tmp_path / "run",
        tmp_path / "mitigated",
        OfflineRewriter(),
        extractor=LLMExtractor(model),
        judge=LLMJudge(model, Mode.COT_ONE),
    )
    page = (tmp_path / "mitigated" / "mitigation.html").read_text(encoding="utf-8")
    assert_escaped(page, shown("id", "response"))
