"""After a keyless run with unsure claims, one block names what to do next (#45 item 5): the LLM judge with its
key variable, the cascade, an own checker and calibrate, each with a link to the documentation site. That the
block fits 80 columns is checked with every command's output in tests/cli/test_cli_width.py."""

import re
from pathlib import Path

import pytest
from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.docs import DOCS_SITE
from hallumeasure.report.next_steps import next_steps
from hallumeasure.runs.run import load_run

runner = CliRunner()
DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def keyless_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("nx") / "run"
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(out), "--judge", "offline"])
    assert result.exit_code == 0, result.output
    return out, " ".join(result.output.split())


def test_a_keyless_run_with_unsure_claims_prints_the_next_steps(keyless_run):
    out, printed = keyless_run
    steps = next_steps(load_run(out))
    assert steps is not None and 0 < steps.unsure_claims <= steps.claims
    assert f"next steps: the offline judge left {steps.unsure_claims} of {steps.claims} claims unsure" in printed
    for needed in (
        "--judge anthropic:<model> with ANTHROPIC_API_KEY",
        "--judge openai:<model> with OPENAI_API_KEY",
        "--detector cascade --first-pass offline --judge anthropic:<model>",
        "--judge hf:<model folder>",
        "--judge onnx:",
        "hallumeasure calibrate <run> --export-sample",
    ):
        assert needed in printed, needed
    assert "docs/" not in re.sub(r"https://\S+", "", printed)  # links to the site, never a repository path
    shown = " ".join(runner.invoke(app, ["show", str(out)]).output.split())
    assert "next steps: the offline judge left" in shown


def test_every_link_is_a_page_and_heading_of_the_docs(keyless_run):
    steps = next_steps(load_run(keyless_run[0]))
    assert steps is not None
    for step in steps.steps:
        assert step.link.startswith(DOCS_SITE + "/")
        page, _, anchor = step.link[len(DOCS_SITE) + 1 :].partition("/#")
        text = (DOCS / f"{page.rstrip('/')}.md").read_text(encoding="utf-8")
        if anchor:
            headings = [
                re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-")
                for h in re.findall(r"^#+ (.+)$", text, re.M)
            ]
            assert anchor in headings, (anchor, headings)


def test_the_viewer_shows_the_same_lines(keyless_run, tmp_path):
    out, _ = keyless_run
    page = tmp_path / "view.html"
    assert runner.invoke(app, ["view", str(out), "--out", str(page)]).exit_code == 0
    assert "next steps: the offline judge left" in page.read_text()


def test_a_run_judged_by_an_llm_prints_none(tmp_path):
    out = tmp_path / "fake"
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(out), "--judge", "fake", "--extractor", "fake"])
    assert result.exit_code == 0 and "next steps:" not in result.output
    assert next_steps(load_run(out)) is None


def test_each_steps_command_wraps_under_it_and_the_viewer_keeps_it_on_one_line(keyless_run):
    out, _ = keyless_run
    steps = next_steps(load_run(out))
    assert steps is not None
    printed = steps.lines()
    assert all(len(line) <= 80 for line in printed if not line.lstrip().startswith("https://"))
    body = printed[next(i for i, line in enumerate(printed) if line.startswith("  - ")) :]
    assert all(line.startswith("    ") for line in body if not line.startswith("  - "))  # hung under its step
    assert sum(line.startswith("  - ") for line in printed) == len(steps.steps)
    one_line = steps.lines(width=None)
    assert len(one_line) == 1 + 2 * len(steps.steps)
    assert f"  - {steps.steps[0].what}: {steps.steps[0].how}" in one_line
