"""The audit's files: ``audit.json`` (everything), ``audit.md`` (for people) and ``audit.junit.xml``.

The JUnit file has one testcase per gate, each with its own outcome, so a CI system shows which
gate decided; a usage error (exit code 2) is written as the same three files.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from hallumeasure.report.render import render_markdown
from hallumeasure.stats.groups import SUBTYPES

if TYPE_CHECKING:
    from hallumeasure.report.audit_models import AuditResult, GateResult

#: The exit code of an audit that could not run (``hallumeasure.report.audit.EXIT_USAGE``).
EXIT_USAGE = 2


def junit_xml(gates: list[GateResult], *, error: str | None = None, result: AuditResult | None = None) -> str:
    """JUnit XML with one testcase per gate (or one errored testcase for a usage error).

    An inconclusive gate is a ``<failure type="inconclusive">``, or ``<skipped>`` when the audit
    treats inconclusive as a pass. The suite's properties carry the outcome, exit code and headline.
    """
    lenient = result is not None and result.settings.inconclusive == "pass"
    failing = [g for g in gates if g.status == "fail" or (g.status == "inconclusive" and not lenient)]
    skipped = sum(g.status == "skipped" or (g.status == "inconclusive" and lenient) for g in gates)
    tests = len(gates) + (1 if error else 0)
    counts = {
        "tests": str(tests),
        "failures": str(len(failing)),
        "errors": str(int(error is not None)),
        "skipped": str(skipped),
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": "hallumeasure audit", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "hallumeasure.audit", **counts})
    if result is not None:
        properties = ET.SubElement(suite, "properties")
        for name, value in (
            ("outcome", result.status),
            ("exit_code", str(result.exit_code)),
            ("headline", result.headline),
            ("decided_by", ", ".join(result.decided_by)),
        ):
            ET.SubElement(properties, "property", {"name": name, "value": value})
    for gate in gates:
        case = ET.SubElement(
            suite, "testcase", {"classname": f"hallumeasure.audit.{gate.kind}", "name": gate.name, "time": "0"}
        )
        details = f"observed: {gate.observed}\nthreshold: {gate.threshold}"
        if gate in failing:
            kind = "inconclusive" if gate.status == "inconclusive" else gate.kind
            failure = ET.SubElement(case, "failure", {"message": gate.message, "type": kind})
            failure.text = details
        elif gate.status in ("skipped", "inconclusive"):
            ET.SubElement(case, "skipped", {"message": gate.message})
        else:
            ET.SubElement(case, "system-out").text = details
    if error is not None:
        case = ET.SubElement(suite, "testcase", {"classname": "hallumeasure.audit", "name": "usage", "time": "0"})
        ET.SubElement(case, "error", {"message": error, "type": "usage_error"}).text = error
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_audit(result: AuditResult, out_dir: str | Path) -> AuditResult:
    """Write ``audit.json``, ``audit.md`` and ``audit.junit.xml``; returns the result with ``files`` set."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = result.model_copy(update={"files": ["audit.json", "audit.md", "audit.junit.xml"]})
    (out / "audit.json").write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    subtypes = [
        x for x in SUBTYPES if result.comparison.subtypes.counts_a.get(x) or result.comparison.subtypes.counts_b.get(x)
    ]
    (out / "audit.md").write_text(render_markdown("audit.md.j2", audit=result, subtypes=subtypes), encoding="utf-8")
    (out / "audit.junit.xml").write_text(junit_xml(result.gates, result=result), encoding="utf-8")
    return result


def write_usage_error(out_dir: str | Path, message: str) -> None:
    """Record an audit that could not run (exit code 2) in the same three files, so CI shows why."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {"status": "usage_error", "exit_code": EXIT_USAGE, "message": message}
    (out / "audit.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    (out / "audit.md").write_text(render_markdown("audit_error.md.j2", message=message), encoding="utf-8")
    (out / "audit.junit.xml").write_text(junit_xml([], error=message), encoding="utf-8")
