"""``hallumeasure export RUN --to <target>``: the built-in targets through the registry, a plugin's exporter,
the error for an unknown target or option, and the deprecated spellings (``export-spans``, ``--otlp-json``)."""

from __future__ import annotations

import json
import re
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.errors import InputError
from hallumeasure.export import export_run, targets
from hallumeasure.export.lettucedetect import lettucedetect_records
from hallumeasure.registry import ExporterPart, PartKind, Registry, load_plugins, registry
from hallumeasure.runs.run import Run

runner = CliRunner()
BUILT_IN = ["otlp-json", "otlp-http", "phoenix", "mlflow", "lettucedetect", "ragtruth"]


def test_the_built_in_targets_are_registered_exporters():
    assert targets()[: len(BUILT_IN)] == BUILT_IN
    assert all(registry().part(PartKind.EXPORTER, name).origin == "built-in" for name in BUILT_IN)


def test_lettucedetect_from_the_cli(run_dir: Path, tmp_path: Path):
    out = tmp_path / "sub" / "spans.json"
    done = runner.invoke(app, ["export", str(run_dir), "--to", "lettucedetect", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == f"wrote {out}" and not done.stderr
    records = json.loads(out.read_text(encoding="utf-8"))
    assert records == json.loads(json.dumps(lettucedetect_records(Run.load(run_dir))))
    assert records and {"prompt", "answer", "labels"} <= set(records[0])
    assert any(r["labels"] for r in records)
    assert all(r["answer"][s["start"] : s["end"]] == s["text"] for r in records for s in r["labels"])


def test_a_span_target_writes_into_the_run_by_default(run_dir: Path):
    done = runner.invoke(app, ["export", str(run_dir), "--to", "ragtruth"])
    assert done.exit_code == 0, done.output
    folder = run_dir / "spans-ragtruth"
    assert done.stdout.splitlines() == [f"wrote {folder / 'response.jsonl'}", f"wrote {folder / 'source_info.jsonl'}"]


def test_an_existing_file_is_refused_unless_overwrite(run_dir: Path, tmp_path: Path):
    for target, out, kept in (
        ("lettucedetect", tmp_path / "spans.json", tmp_path / "spans.json"),
        ("ragtruth", tmp_path / "rt", tmp_path / "rt" / "source_info.jsonl"),
        ("otlp-json", tmp_path / "events.json", tmp_path / "events.json"),
    ):
        out.parent.mkdir(parents=True, exist_ok=True)
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text("mine\n")
        refused = runner.invoke(app, ["export", str(run_dir), "--to", target, "--out", str(out)])
        assert refused.exit_code == 2 and not refused.stdout, refused.output
        assert f"{kept} exists; pass --overwrite" in refused.stderr and kept.read_text() == "mine\n"
        done = runner.invoke(app, ["export", str(run_dir), "--to", target, "--out", str(out), "--overwrite"])
        assert done.exit_code == 0 and kept.read_text() != "mine\n", done.output
    old = ["export-spans", str(run_dir), "--format", "ragtruth", "--out", str(tmp_path / "rt")]
    assert runner.invoke(app, old).exit_code == 2
    again = runner.invoke(app, [*old, "--overwrite"])
    assert again.exit_code == 0 and again.stderr.strip().endswith("--overwrite"), again.output
    with pytest.raises(InputError, match="exists"):
        export_run(Run.load(run_dir), "lettucedetect", out=tmp_path / "spans.json")


def test_an_unknown_target_names_the_closest_and_lists_them_all(run_dir: Path):
    done = runner.invoke(app, ["export", str(run_dir), "--to", "lettucedetct", "--out", "x.jsonl"])
    assert done.exit_code == 2 and not done.stdout
    assert "did you mean 'lettucedetect'?" in done.stderr
    listed = re.search(r"\(known: (.*)\)", done.stderr)
    assert listed and set(BUILT_IN) <= set(listed.group(1).split(", "))


def test_target_options_are_read_against_the_targets_model(run_dir: Path, tmp_path: Path):
    no_claims = runner.invoke(
        app, ["export", str(run_dir), "--to", "otlp-json", "-o", str(tmp_path / "e.json"), "--no-claims"]
    )
    assert no_claims.exit_code == 0, no_claims.output
    records = json.loads((tmp_path / "e.json").read_text())["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    names = {
        a["value"]["stringValue"] for r in records for a in r["attributes"] if a["key"] == "gen_ai.evaluation.name"
    }
    assert names == {"hallumeasure.unsupported_rate"}
    typo = runner.invoke(app, ["export", str(run_dir), "--to", "otlp-json", "--out", "e.json", "--claim"])
    assert typo.exit_code == 2 and "did you mean --claims?" in typo.stderr and "--claims/--no-claims" in typo.stderr
    span_target = runner.invoke(app, ["export", str(run_dir), "--to", "ragtruth", "--no-claims"])
    assert span_target.exit_code == 2 and "takes no option --no-claims" in span_target.stderr
    nowhere = runner.invoke(app, ["export", str(run_dir), "--to", "phoenix"])
    assert nowhere.exit_code == 2 and "needs out: the URL of a running Phoenix" in nowhere.stderr
    neither = runner.invoke(app, ["export", str(run_dir)])
    assert neither.exit_code == 2 and "--to TARGET" in neither.stderr


def test_the_deprecated_spellings_work_and_name_the_new_one(run_dir: Path, tmp_path: Path):
    old = runner.invoke(app, ["export-spans", str(run_dir), "--format", "ragtruth", "--out", str(tmp_path / "old")])
    new = runner.invoke(app, ["export", str(run_dir), "--to", "ragtruth", "--out", str(tmp_path / "new")])
    assert old.exit_code == new.exit_code == 0, old.output + new.output
    for name in ("response.jsonl", "source_info.jsonl"):
        assert (tmp_path / "old" / name).read_bytes() == (tmp_path / "new" / name).read_bytes()
    assert old.stderr.strip() == (
        f"note: export-spans is deprecated; write: hallumeasure export {run_dir} --to ragtruth --out {tmp_path / 'old'}"
    )
    events = tmp_path / "e.json"
    flag = runner.invoke(app, ["export", str(run_dir), "--otlp-json", str(events), "--no-claims"])
    assert (
        flag.exit_code == 0
        and (tmp_path / "e.json").is_file()
        and flag.stdout.strip() == f"wrote {tmp_path / 'e.json'}"
    )
    new = f"hallumeasure export {run_dir} --to otlp-json --out {events} --no-claims"
    assert flag.stderr.strip() == f"note: --otlp-json is deprecated; write: {new}"
    both = runner.invoke(app, ["export", str(run_dir), "--phoenix", "http://127.0.0.1:1", "--to", "phoenix"])
    assert both.exit_code == 2 and "not --phoenix as well" in both.stderr
    bad = runner.invoke(app, ["export-spans", str(run_dir), "--format", "csv"])
    assert bad.exit_code == 2 and "lettucedetect" in bad.stderr


@pytest.fixture
def toy():
    from export.toy_exporter import ToyExporter

    registry().add(ExporterPart("toy", ToyExporter, "a toy exporter"))
    try:
        yield "toy"
    finally:
        registry().remove(PartKind.EXPORTER, "toy")


def test_a_registered_exporter_is_reached_with_to(toy: str, run_dir: Path, tmp_path: Path):
    out = tmp_path / "toy.txt"
    done = runner.invoke(app, ["export", str(run_dir), "--to", toy, "--out", str(out), "--greeting", "hi", "--shout"])
    assert done.exit_code == 0, done.output
    ids = [s.id for s in Run.load(run_dir).samples]
    assert out.read_text().splitlines() == [f"HI {i}" for i in ids]
    outcome = export_run(Run.load(run_dir), toy, out=tmp_path / "api.txt", greeting="hey")
    assert outcome.files == (tmp_path / "api.txt",) and (tmp_path / "api.txt").read_text().startswith("hey ")
    unknown = runner.invoke(app, ["export", str(run_dir), "--to", toy, "--out", str(out), "--colour", "red"])
    assert unknown.exit_code == 2 and "--greeting VALUE, --shout/--no-shout" in unknown.stderr


def test_an_exporter_entry_point_registers_on_the_path_of_built_ins():
    r = Registry()
    entry = EntryPoint(name="toy", value="export.toy_exporter:ToyExporter", group=PartKind.EXPORTER.group)
    assert entry.group == "hallumeasure.exporters"
    load_plugins(r, {PartKind.EXPORTER: [entry]})
    part = r.part(PartKind.EXPORTER, "toy")
    assert not r.problems and part.summary.startswith("Writes '<greeting>")
    assert part.load()().name == "toy"
