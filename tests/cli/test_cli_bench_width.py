"""``bench`` and ``bench-compare`` fit an 80-column terminal: no table row wraps in the middle (issue #47).

Each command runs in its own process with its output piped and COLUMNS=80, as a person at a small
terminal sees it. The Markdown files they write keep their tables.
"""

import json

from rich.cells import cell_len
from testdata import REPO, cli_at_80

CONTEXT = "The Zephyr bridge is 2.4 km long. It opened in 2003 and carries 40,000 cars a day."
RESPONSES = [
    ("The Zephyr bridge is 2.4 km long.", None),
    ("The Zephyr bridge is 3.1 km long.", "3.1 km"),
    ("The Zephyr bridge opened in 2003.", None),
    ("The Zephyr bridge opened in 1998.", "1998"),
]


def _labelled_with_spans(path):
    rows = []
    for i, (response, wrong) in enumerate(RESPONSES):
        spans = []
        if wrong:
            start = response.index(wrong)
            spans = [{"start": start, "end": start + len(wrong), "text": wrong, "label": "Evident Conflict"}]
        row = {"id": f"s{i}", "dataset": "toy", "context": CONTEXT, "response": response, "label": int(bool(wrong))}
        rows.append({**row, "spans": spans})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _assert_no_row_wraps(text):
    assert text.strip(), "the command printed nothing"
    for line in text.splitlines():
        assert cell_len(line) <= 80, f"{cell_len(line)} columns: {line!r}"
        if line.startswith("|"):
            assert line.rstrip().endswith("|"), f"a table row cut in two: {line!r}"


def test_bench_prints_its_wide_span_table_as_blocks_at_80_columns(tmp_path):
    data = _labelled_with_spans(tmp_path / "toy.jsonl")
    done = cli_at_80("bench", str(data), "--judge", "offline", "--resamples", "20", "--out", str(tmp_path / "b"))
    assert done.returncode == 0, done.stderr
    _assert_no_row_wraps(done.stdout)
    # the span table (six columns of intervals) is one block per system, each figure on its own line
    assert "system: mark everything" in done.stdout
    assert any(line.split()[:2] == ["char", "F1"] for line in done.stdout.splitlines())
    # a table that fits stays a Markdown table; the file keeps every table as Markdown
    assert "| what | n |" in done.stdout
    written = (tmp_path / "b" / "toy__offline__cot-one.md").read_text()
    assert "| system | char P | char R | char F1 | example F1 | mean IoU |" in written


def test_bench_compare_prints_one_block_per_result_at_80_columns(tmp_path):
    results = sorted((REPO / "benchmarks" / "results" / "bench").glob("*.json"))
    done = cli_at_80("bench-compare", *map(str, results), "--out", str(tmp_path / "compare.md"))
    assert done.returncode == 0, done.stderr
    _assert_no_row_wraps(done.stdout)
    assert "dataset: wice" in done.stdout and "dataset: bump" in done.stdout
    assert (tmp_path / "compare.md").read_text().startswith("| dataset | judge | mode | resp P |")
