"""`show` and `show --claims` at 80 columns on a RAG run and a multi-model run, as a new user sees them piped
(issue #47 item 3): a model column, whole headers and model names, claims wrapped rather than cut, filters."""

import json

import pytest
from rich.cells import cell_len
from testdata import EXAMPLES, cli_at_80

from hallumeasure import load_run

RAG = EXAMPLES.parent / "rag_samples.jsonl"
MODELS = EXAMPLES.parent / "models.jsonl"


_cli = cli_at_80


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("show")
    for name, data in (("rag", RAG), ("models", MODELS)):
        done = _cli("measure", str(data), "--out", str(root / name))
        assert done.returncode == 0, done.stderr
    return root


def _fits(text: str) -> None:
    too_wide = [line for line in text.splitlines() if cell_len(line) > 80]
    assert not too_wide, too_wide
    assert "…" not in text, [line for line in text.splitlines() if "…" in line]


def _claim_rows(text: str) -> list[list[str]]:
    """The claims table's rows: the first line's words before the claim column, then the whole claim."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["sample"] and "claim" in line)
    start = lines[header].index("claim")
    rows: list[list[str]] = []
    for line in lines[header + 2 :]:
        if not line.strip() or "claims (" in line:
            break
        if line[:start].strip() and not line.startswith(" "):
            rows.append([*line[:start].split(), line[start:].strip()])
        elif line[start:].strip():
            rows[-1][-1] += " " + line[start:].strip()
    return rows


def test_show_on_a_rag_run_keeps_headers_and_model_names_whole(runs):
    done = _cli("show", str(runs / "rag"))
    assert done.returncode == 0, done.stderr
    _fits(done.stdout)
    rag = done.stdout.split("RAG: evidence and citations", 1)[1]
    for header in ("citation precision", "citation recall", "cites contradicting", "unverified evidence"):
        assert header in rag, header
    assert "assistant-v1" in rag and "assistant-v2" in rag


def test_show_claims_on_a_rag_run_wraps_claims_with_a_model_column(runs):
    done = _cli("show", str(runs / "rag"), "--claims", "--no-summary")
    assert done.returncode == 0, done.stderr
    _fits(done.stdout)
    claims = load_run(runs / "rag").claims
    rows = _claim_rows(done.stdout)
    assert [row[0] for row in rows] == list(claims["input_id"])
    assert [row[1] for row in rows] == list(claims["model"])
    assert [row[-1] for row in rows] == list(claims["claim"])  # every claim whole


def test_show_claims_tells_two_models_rows_apart_and_filters_them(runs):
    run = runs / "models"
    claims = load_run(run).claims
    done = _cli("show", str(run), "--claims", "--no-summary")
    _fits(done.stdout)
    rows = _claim_rows(done.stdout)
    assert [(row[0], row[1], row[-1]) for row in rows] == list(
        zip(claims["input_id"], claims["model"], claims["claim"], strict=True)
    )

    picked = _cli("show", str(run), "--no-summary", "--model", "model-b", "--label", "contradicted")
    assert picked.returncode == 0, picked.stderr
    wanted = claims[(claims["model"] == "model-b") & (claims["label"] == "contradicted")]
    assert 0 < len(wanted) < len(claims)
    assert [row[-1] for row in _claim_rows(picked.stdout)] == list(wanted["claim"])
    assert f"{len(wanted)} of {len(claims)} claims" in picked.stdout

    as_json = _cli("show", str(run), "--json", "--claims", "--model", "model-c", "--label", "partial")
    listed = json.loads(as_json.stdout)["claims"]
    assert listed and {(c["model"], c["label"]) for c in listed} == {("model-c", "partially_supported")}


def test_show_names_the_models_when_the_model_filter_matches_none(runs):
    done = _cli("show", str(runs / "models"), "--model", "model-x")
    assert done.returncode == 2
    assert "model-x" in done.stderr and "model-a, model-b, model-c" in done.stderr
    wrong = _cli("show", str(runs / "models"), "--label", "wrong")
    assert wrong.returncode == 2 and "partial, supported" in wrong.stderr
