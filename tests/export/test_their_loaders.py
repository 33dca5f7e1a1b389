"""The ``lettucedetect`` and ``ragtruth`` exports read by those projects' own reading code (``their_loaders.py``,
copied from their repositories), on a run of ``examples/`` measured with the keyless offline judge."""

# mypy: disable-error-code="no-untyped-call"
# (their_loaders.py is their code as they wrote it, untyped)
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.export.ragtruth import RAGTRUTH_TYPES
from hallumeasure.report.spans import response_spans
from hallumeasure.runs.run import Run
from tests.export import their_loaders

runner = CliRunner()


def _export(run_dir: Path, target: str, out: Path) -> None:
    done = runner.invoke(app, ["export", str(run_dir), "--to", target, "--out", str(out)])
    assert done.exit_code == 0, done.output


def _spans(run_dir: Path) -> dict[str, list[tuple[int, int]]]:
    return {r.response: [(s.start, s.end) for s in r.spans] for r in response_spans(Run.load(run_dir)) if r.measured}


def test_lettucedetect_evaluate_reads_the_file(run_dir: Path, tmp_path: Path) -> None:
    _export(run_dir, "lettucedetect", tmp_path / "data.json")
    test_samples, by_task = their_loaders.load_data(tmp_path / "data.json")
    assert len(test_samples) == len(_spans(run_dir))
    # RAGTruth's task types, as LettuceDetect's RAGTruth data spells them
    assert set(by_task) == {"QA", "Summary"}
    first = by_task["QA"][0]
    assert first.prompt.startswith("User request: ") and first.question and first.context
    assert first.language == "en" and first.metadata["id"]
    mine = _spans(run_dir)
    assert any(s.labels for s in test_samples)
    for sample in test_samples:
        assert [(x["start"], x["end"]) for x in sample.labels] == mine[sample.answer]
        assert all(sample.answer[x["start"] : x["end"]] == x["text"] for x in sample.labels)


def test_ragtruth_baseline_and_lettucedetect_preprocess_read_the_folder(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "rt"
    _export(run_dir, "ragtruth", folder)
    mine = _spans(run_dir)

    # RAGTruth's baseline: its test split of good-quality responses, joined with the sources
    rows = their_loaders.get_json_data(their_loaders.read_ragtruth_split(str(folder), "test"))
    assert len(rows) == len(mine)
    for row in rows:
        assert row["reference"] and (row["question"] if row["task_type"] == "QA" else row["task_type"] == "Summary")
        assert isinstance(row["model"], str) and row["quality"] == "good" and "temperature" in row
        assert len(row["format_label"]["baseless info"]) + len(row["format_label"]["conflict"]) == len(row["labels"])
        assert all(isinstance(label["meta"], str) and label["meta"] for label in row["labels"])
    assert any(row["labels"] for row in rows)

    # LettuceDetect's preprocess_ragtruth: the folder into its own data file, read back by its evaluate script
    their_loaders.preprocess_ragtruth(folder, tmp_path)
    samples, by_task = their_loaders.load_data(tmp_path / "ragtruth_data.json")
    assert set(by_task) == {"QA", "Summary"} and len(samples) == len(mine)
    assert all(sample.prompt.startswith("User request: ") for sample in by_task["QA"])
    for sample in samples:
        assert [(x["start"], x["end"]) for x in sample.labels] == mine[sample.answer]
        assert {x["label"] for x in sample.labels} <= set(RAGTRUTH_TYPES.values())


def test_sources_carry_what_ragtruth_lists(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "rt"
    _export(run_dir, "ragtruth", folder)
    sources = [json.loads(line) for line in (folder / "source_info.jsonl").read_text().splitlines()]
    responses = [json.loads(line) for line in (folder / "response.jsonl").read_text().splitlines()]
    assert all({"source_id", "task_type", "source", "source_info", "prompt"} <= set(s) for s in sources)
    keys = {"id", "source_id", "model", "temperature", "labels", "split", "quality", "response"}
    assert all(keys <= set(r) for r in responses)
    assert all(r["model"] for r in responses)
