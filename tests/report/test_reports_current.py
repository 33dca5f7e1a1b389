"""The committed example reports in reports/ are what scripts/make_reports.py makes today."""

import importlib.util
import json

import pytest
from testdata import REPO, load_script

REPORTS = REPO / "reports"
TEXT_FILES = ["comparison/report.md", "audit/audit.json", "audit/audit.md", "README.md", "comparison/view.html"]
PNG_FILES = [
    "comparison/unsupported_rate.png",
    "comparison/hallucinated_share.png",
    "comparison/label_mix.png",
    "comparison/subtype_mix.png",
    "comparison/differences.png",
]
REGENERATE = ".venv/bin/python scripts/make_reports.py --judge {judge}"


def _make_reports_module():
    return load_script("scripts/make_reports.py")


def _committed_judge() -> str:
    runs = json.loads((REPORTS / "audit" / "audit.json").read_text())["runs"]
    return "fake" if runs[0]["judge"].startswith("fake") else "offline"


def test_committed_reports_are_current(tmp_path):
    judge = _committed_judge()
    if judge == "offline" and importlib.util.find_spec("hallumeasure.judges.offline") is None:
        pytest.skip("the committed reports were made with the offline judge, which is not installed here")
    make_reports = _make_reports_module()
    make_reports.make_reports(tmp_path / "reports", judge, tmp_path / "runs")
    stale = [name for name in TEXT_FILES if (tmp_path / "reports" / name).read_text() != (REPORTS / name).read_text()]
    assert not stale, f"reports/ is out of date ({', '.join(stale)}); run: {REGENERATE.format(judge=judge)}"
    for name in PNG_FILES:
        assert (REPORTS / name).is_file() and (tmp_path / "reports" / name).is_file(), name
    assert (REPORTS / "comparison" / "report.html").is_file()
    assert (REPORTS / "audit" / "audit.junit.xml").is_file()


def test_committed_viewer_screenshot_shows_the_committed_page():
    """The screenshot is retaken with the page: its record names the sha256 of the view.html it shows."""
    import hashlib

    record = json.loads((REPORTS / "viewer" / "screenshot.json").read_text())
    page = (REPORTS / "viewer" / record["page"]).read_bytes()
    assert (REPORTS / "viewer" / "screenshot.png").is_file()
    assert record["page_sha256"] == hashlib.sha256(page).hexdigest(), (
        "reports/viewer/screenshot.png shows an older view.html; run: make reports (needs chromium)"
    )
