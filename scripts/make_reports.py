"""Regenerate the example reports in ``reports/`` from the bundled examples.

    .venv/bin/python scripts/make_reports.py            # judge: offline when available, else the fake
    .venv/bin/python scripts/make_reports.py --judge fake --keep-runs runs/report-examples

It measures ``examples/samples.jsonl`` three times (all samples; model-a only; model-b only),
then writes ``reports/comparison/`` (model-a vs model-b from the first run),
``reports/audit/`` (baseline = model-a's run, current = model-b's run) and ``reports/viewer/``
(a screenshot of the comparison's run viewer, ``comparison/view.html``, taken with the system
Chromium when one can be driven; ``screenshot.json`` records the sha256 of the page it shows).
Everything else is
deterministic: fixed seeds, no timestamps or absolute paths in the outputs, so
``tests/report/test_reports_current.py`` can check that the committed copy is current.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

from hallumeasure.core.types import Mode
from hallumeasure.judges.build import build_extractor, build_judge
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.report.audit import AuditGates, audit_runs
from hallumeasure.report.compare import compare_runs
from hallumeasure.runs.inputs import load_samples

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "samples.jsonl"
LABELS = REPO / "examples" / "labels.csv"
SEED = 0
RESAMPLES = 2000

README = """# Example reports

Generated from `examples/samples.jsonl` by

    .venv/bin/python scripts/make_reports.py --judge {judge}

- `comparison/`: model-a against model-b (one run holding both; samples paired on context and question),
  with the judge calibrated against the hand-written labels in `examples/labels.csv`.
  Open `comparison/report.html` in a browser, or read `comparison/report.md`.
  `comparison/view.html` is the run viewer of the same run (every claim); `viewer/screenshot.png` shows it.
- `audit/`: regression audit with baseline = model-a's responses and current = model-b's responses
  (exit code {exit_code}: {status}); `audit.junit.xml` is what a CI system would show.

{note}
`tests/report/test_reports_current.py` fails when these files are out of date.
"""

NOTES = {
    "fake": "These were judged by the scripted fake model: the numbers demonstrate the reports, they are not a "
    "measurement.",
    "offline": "These were judged by the offline judge (a trained lexical/numeric model, not an LLM); see the "
    "main README for its measured quality.",
}


def default_judge() -> str:
    return "offline" if importlib.util.find_spec("hallumeasure.judges.offline") else "fake"


def stages(judge: str):
    """Extractor and judge for ``offline`` (no network, no key) or ``fake`` (the scripted demo model)."""
    if judge == "offline":
        return build_extractor("offline"), build_judge("offline", Mode.COT_ONE)
    model = Model(FakeAPI())
    return LLMExtractor(model), LLMJudge(model, Mode.COT_ONE)


def measure(samples, out: Path, judge: str, sha256: str, subset: str) -> None:
    extractor, claim_judge = stages(judge)
    run_measurement(
        samples,
        out,
        extractor,
        claim_judge,
        mode=Mode.COT_ONE,
        input_sha256=sha256,
        input_path="examples/samples.jsonl",
        settings={"subset": subset},
        concurrency=1,
    )


def make_reports(out: Path, judge: str, runs_dir: Path) -> int:
    """Measure the examples into ``runs_dir`` and write the reports into ``out``; returns the audit's exit code."""
    loaded = load_samples(EXAMPLES)
    by_model = {m: [s for s in loaded.samples if s.model == m] for m in ("model-a", "model-b")}
    if runs_dir.exists():
        shutil.rmtree(runs_dir)
    measure(loaded.samples, runs_dir / "examples", judge, loaded.sha256, "all")
    measure(by_model["model-a"], runs_dir / "baseline-model-a", judge, loaded.sha256, "model-a")
    measure(by_model["model-b"], runs_dir / "current-model-b", judge, loaded.sha256, "model-b")

    for part in ("comparison", "audit"):
        shutil.rmtree(out / part, ignore_errors=True)
    # The hand-written labels name the offline extractor's claims; other judges' claims would not match them.
    labels = [LABELS] if judge == "offline" else None
    compare_runs(
        [runs_dir / "examples"],
        out / "comparison",
        resamples=RESAMPLES,
        seed=SEED,
        title="Model comparison: bundled examples",
        labels=labels,
    )
    result = audit_runs(
        runs_dir / "baseline-model-a",
        runs_dir / "current-model-b",
        AuditGates(),
        out_dir=out / "audit",
        resamples=RESAMPLES,
        seed=SEED,
    )
    (out / "README.md").write_text(
        README.format(judge=judge, exit_code=result.exit_code, status=result.status, note=NOTES[judge]),
        encoding="utf-8",
    )
    return result.exit_code


#: The response the screenshot opens: model-b's harbor summary, whose claims carry three labels.
SCREENSHOT_FRAGMENT = "#examples/harbor-b"


def screenshot(reports: Path) -> str:
    """Screenshot ``comparison/view.html`` into ``viewer/screenshot.png``; returns what was done, in words."""
    from hallumeasure.testing.browser import browser_missing, open_page

    page_file = reports / "comparison" / "view.html"
    viewer_dir = reports / "viewer"
    viewer_dir.mkdir(parents=True, exist_ok=True)
    reason = browser_missing()
    if reason:
        return f"screenshot not taken ({reason}); the committed one may now be stale"
    with open_page(width=1400, height=900) as page:
        page.goto(page_file.resolve().as_uri() + SCREENSHOT_FRAGMENT)
        page.wait_for_selector("body[data-ready]")
        page.screenshot(path=str(viewer_dir / "screenshot.png"))
    digest = hashlib.sha256(page_file.read_bytes()).hexdigest()
    (viewer_dir / "screenshot.json").write_text(
        json.dumps(
            {"page": "../comparison/view.html", "page_sha256": digest, "fragment": SCREENSHOT_FRAGMENT}, indent=2
        )
        + "\n",
        encoding="utf-8",
    )
    return "screenshot taken"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "reports", help="where to write (default: reports/)")
    parser.add_argument(
        "--judge",
        choices=["offline", "fake"],
        default=None,
        help="judge and extractor (default: offline when installed, else fake)",
    )
    parser.add_argument("--keep-runs", type=Path, default=None, help="keep the measured runs in this directory")
    args = parser.parse_args(argv)
    judge = args.judge or default_judge()
    if args.keep_runs is not None:
        code = make_reports(args.out, judge, args.keep_runs)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            code = make_reports(args.out, judge, Path(tmp) / "runs")
    shot = screenshot(args.out)
    print(
        f"wrote {args.out}/comparison, {args.out}/audit and {args.out}/viewer ({shot}; judge: {judge}; "
        f"audit exit code {code})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
