"""A judge that is broken says so: a scripted model that answers one label with the prompt's own example
reasons is caught after the run, stored in the manifest, printed, shown in the viewer and refused by audit."""

import json
import re

import pytest
from testdata import EXAMPLES
from typer.testing import CliRunner

import hallumeasure
from hallumeasure.api.measure import BrokenJudgeWarning
from hallumeasure.cli import app
from hallumeasure.core.errors import ConfigError
from hallumeasure.models.fake import FakeAPI

runner = CliRunner()
FAKE = ["--extractor", "fake", "--judge", "fake", "--no-cache"]

#: The verdict of the cot-one prompt's own example, as a small model copies it for every claim.
COPIED = {
    "label_reason": "Ana Ruiz said numbers would 'probably double'; the claim drops the speaker and the hedge.",
    "evidence": [{"passage_id": "1", "quote": 'said visitor numbers would "probably double"'}],
    "label": "partially_supported",
    "subtype_reason": "The director's hedged forecast is stated as fact.",
    "subtype": "attribution_failure",
}
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture
def copying_judge(monkeypatch):
    """The fake provider with claims extracted as always, and every claim judged with the example's verdict."""
    extract = FakeAPI.generate

    async def generate(self, request):
        if request.tool is not None and request.tool.name == "record_verdict":
            return await extract(FakeAPI(self.model_name, responder=lambda _: dict(self.verdict)), request)
        return await extract(self, request)

    monkeypatch.setattr(FakeAPI, "verdict", COPIED, raising=False)
    monkeypatch.setattr(FakeAPI, "generate", generate)
    return monkeypatch


def _measure(out, *options):
    return runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(out), *FAKE, *options])


def test_a_copying_judge_is_caught_stored_and_printed(tmp_path, copying_judge):
    result = _measure(tmp_path / "r")
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    checks = {c["name"]: c for c in manifest["judge_checks"]}
    assert set(checks) == {"one_label", "copied_reasons", "same_reason", "unverified_evidence", "context_ignored"}
    n = manifest["counts"]["claims"]
    assert checks["one_label"]["count"] == checks["one_label"]["total"] == n >= 20
    assert f"{n} of {n} (100%) claims judged by the LLM are partially_supported" in checks["one_label"]["seen"]
    assert checks["unverified_evidence"]["count"] == manifest["counts"]["evidence_unverified"] == n
    assert all(c["means"] and c["todo"] for c in checks.values())
    # The context probe: 8 claims asked again without their source, every one kept its label.
    probe = manifest["settings"]["context_probe"]
    assert len(probe["claims"]) == 8 and probe["same"] == 8 and probe["errors"] == 0 and probe["usage"]["calls"] == 8
    assert (checks["context_ignored"]["count"], checks["context_ignored"]["total"]) == (8, 8)
    output = " ".join(result.output.split())
    assert "the judge failed 5 sanity check(s)" in output
    assert "context_ignored: 8 of 8 (100%) claims judged supported" in output
    assert "copied_reasons:" in output and "repeat a reason of the prompt's own example" in output
    assert "--allow-broken-judge" in output
    shown = runner.invoke(app, ["show", str(tmp_path / "r")])
    assert shown.exit_code == 0 and "one_label:" in shown.output


def test_a_judge_that_reads_the_source_passes_the_context_probe(tmp_path):
    """The fake provider's demo judge reads the context (word overlap): without it, its labels change."""
    result = _measure(tmp_path / "r")
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    probe = manifest["settings"]["context_probe"]
    assert len(probe["claims"]) >= 4 and probe["same"] < 0.85 * (len(probe["claims"]) - probe["errors"])
    assert "context_ignored" not in {c["name"] for c in manifest["judge_checks"]}


def test_the_viewer_shows_each_failed_check_as_a_banner_escaped(tmp_path, copying_judge):
    copying_judge.setattr(FakeAPI, "verdict", {"label_reason": HOSTILE, "label": "absent", "subtype": "other"})
    assert _measure(tmp_path / "r").exit_code == 0
    page_path = tmp_path / "view.html"
    assert runner.invoke(app, ["view", str(tmp_path / "r"), "--out", str(page_path)]).exit_code == 0
    page = page_path.read_text()
    body = page.split('id="viewer-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in body and HOSTILE not in page
    data = json.loads(body)
    checks = data["runs"][0]["judge_checks"]
    assert [c["name"] for c in checks] == ["one_label", "same_reason"]
    assert "alert(1)" in checks[1]["seen"]  # shown as text, never as markup


def test_audit_refuses_a_broken_judge_unless_allowed(tmp_path, copying_judge):
    for name in ("base", "cur"):
        assert _measure(tmp_path / name).exit_code == 0
    runs = ["--baseline", str(tmp_path / "base"), "--current", str(tmp_path / "cur"), "--out", str(tmp_path / "a")]
    refused = runner.invoke(app, ["audit", *runs])
    assert refused.exit_code == 2, refused.output
    message = " ".join(refused.stderr.split())
    assert "the judge of run cur failed its sanity checks" in message and "one_label" in message
    assert "--allow-broken-judge" in message
    allowed = runner.invoke(app, ["audit", *runs, "--allow-broken-judge"])
    assert allowed.exit_code in (0, 4), allowed.output
    noted = json.loads((tmp_path / "a" / "audit.json").read_text())["mismatches"]
    assert any("failed its sanity checks" in m for m in noted)


def test_the_python_api_warns_and_its_audit_refuses(tmp_path, copying_judge):
    with pytest.warns(BrokenJudgeWarning, match=r"one_label: \d+ of \d+ \(100%\)"):
        run = hallumeasure.measure(EXAMPLES, judge="fake", extractor="fake", out=tmp_path / "r", no_cache=True)
    assert {c.name for c in run.manifest.judge_checks} >= {"one_label", "copied_reasons"}
    with pytest.raises(ConfigError, match="--allow-broken-judge"):
        run.audit(run)
    assert run.audit(run, allow_broken_judge=True).exit_code in (0, 4)


def test_the_keyless_offline_judge_raises_no_check_on_the_examples(tmp_path):
    for data in sorted(EXAMPLES.parent.glob("*.jsonl")):
        out = tmp_path / data.stem
        result = runner.invoke(app, ["measure", str(data), "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert json.loads((out / "manifest.json").read_text())["judge_checks"] == []
        assert not re.search(r"sanity check", result.output)
