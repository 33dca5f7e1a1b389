"""The docs read well and agree (issue #47 item 4): no placeholder clone URL, no repository path in what users read
(CLI output, the viewer), paragraphs of at most 120 words, one description per extra, every judge family on
the Judges page, notes meant for the docs tests hidden from readers."""

from __future__ import annotations

import json
import re
import tomllib

import pytest
from testdata import EXAMPLES, REPO
from typer.testing import CliRunner

DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
MAX_WORDS = 120
#: A path into this repository, as a reader of the package's output cannot follow it (they may not have a clone).
REPOSITORY_PATH = re.compile(
    r"(?<![\w./-])(?:docs|benchmarks|tests|scripts|examples|hallumeasure)/[\w./-]*\w\.(?:md|py|json|csv)\b|\bREADME\b"
)


def paragraphs(text: str) -> list[tuple[int, str]]:
    """The prose paragraphs of a Markdown page with their first line: no code, table, heading or HTML comment;
    a list item starts a paragraph of its own."""
    found: list[tuple[int, str]] = []
    words: list[str] = []
    start, fence, comment = 0, "", False

    def close() -> None:
        if words:
            found.append((start, " ".join(words)))
            words.clear()

    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if fence:
            fence = "" if stripped.startswith(fence) else fence
            continue
        if comment or stripped.startswith("<!--"):
            close()
            comment = "-->" not in stripped
            continue
        opening = re.match(r"(`{3,}|~{3,})", stripped)
        if opening:
            close()
            fence = opening.group(1)
            continue
        if not stripped or stripped.startswith(("#", "|", ":::", "![")):
            close()
            continue
        if re.match(r"([-*+]|\d+\.)\s", stripped):
            close()
        if not words:
            start = number
        words.extend(stripped.split())
    close()
    return found


def test_the_paragraph_counter_sees_prose_only():
    page = "One two.\nthree\n\n```text\n" + "x " * 200 + "\n```\n- a b\n- c\n<!-- " + "y " * 200 + "-->\n| t |\n"
    assert paragraphs(page) == [(1, "One two. three"), (7, "- a b"), (8, "- c")]


def test_no_paragraph_runs_over_120_words():
    long = [
        f"{page.relative_to(REPO)}:{line}: {len(text.split())} words"
        for page in PAGES
        for line, text in paragraphs(page.read_text(encoding="utf-8"))
        if len(text.split()) > MAX_WORDS
    ]
    assert not long, f"paragraphs over {MAX_WORDS} words (split or shorten them):\n" + "\n".join(long)


def test_no_placeholder_owner_in_what_users_copy():
    files = [*PAGES, REPO / "pyproject.toml", REPO / "mkdocs.yml", *sorted((REPO / "examples").rglob("*.*"))]
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in files
        if path.is_file() and path.suffix not in (".png", ".parquet")
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if re.search(r"\bOWNER\b", line)
    ]
    assert not found, "a placeholder URL a user would copy:\n" + "\n".join(found)


def test_the_docs_tests_notes_are_hidden_from_readers():
    shown = [
        f"{page.relative_to(REPO)}:{number}"
        for page in PAGES
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"[*_]*not run by the docs tests", line.strip(), re.IGNORECASE)
    ]
    assert not shown, "notes for the docs tests belong in HTML comments, unseen by readers:\n" + "\n".join(shown)


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, str]:
    """What a new user reads: the demo's three commands, `show` on a RAG run, an audit, `bench` on a few labelled
    responses of a set the offline judge was trained on (its in-sample note), and the viewer page."""
    from hallumeasure.cli import app

    root = tmp_path_factory.mktemp("prose")
    runner = CliRunner()
    texts: dict[str, str] = {}
    labelled = root / "labelled.jsonl"
    context = "The Zephyr bridge is 2.4 km long. It opened in 2003."
    rows = [("The Zephyr bridge is 2.4 km long.", 0), ("The Zephyr bridge opened in 1998.", 1)]
    labelled.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "dataset": "wice", "context": context, "response": text, "label": label}) + "\n"
            for i, (text, label) in enumerate(rows * 2)
        )
    )
    commands = {
        "measure": ["measure", str(EXAMPLES), "--out", str(root / "a")],
        "measure again": ["measure", str(EXAMPLES), "--out", str(root / "b")],
        "measure rag": ["measure", str(EXAMPLES.parent / "rag_samples.jsonl"), "--out", str(root / "rag")],
        "show": ["show", str(root / "rag"), "--claims"],
        "audit": ["audit", "--baseline", str(root / "a"), "--current", str(root / "b"), "--out", str(root / "au")],
        "view": ["view", str(root / "a"), "--out", str(root / "view.html")],
        "bench": ["bench", str(labelled), "--resamples", "20", "--out", str(root / "bench")],
    }
    for name, args in commands.items():
        result = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert result.exit_code in (0, 4), f"{name}: {result.output}"
        texts[name] = result.output
    html = (root / "view.html").read_text(encoding="utf-8")
    data = re.search(r'<script type="application/json" id="viewer-data">(.*?)</script>', html, re.DOTALL)
    assert data, "the viewer page embeds no data"
    texts["viewer data"] = json.dumps(json.loads(data.group(1)), ensure_ascii=False)
    script = (REPO / "hallumeasure" / "report" / "templates" / "viewer.js").read_text(encoding="utf-8")
    texts["viewer text"] = " ".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', script))  # the page's own strings
    return texts


def test_what_users_read_names_no_repository_path(printed):
    found = {name: sorted(set(REPOSITORY_PATH.findall(text))) for name, text in printed.items()}
    found = {name: paths for name, paths in found.items() if paths}
    assert not found, f"output a user reads names paths of the repository (name the docs page instead): {found}"


def test_the_repository_path_pattern_finds_paths():
    assert REPOSITORY_PATH.findall("see docs/quality.md or the README; runs/demo/view.html") == [
        "docs/quality.md",
        "README",
    ]


def _extras_table() -> dict[str, str]:
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    section = page.split("\n### Extras\n", 1)[1].split("\n#", 1)[0]
    return dict(re.findall(r"^\| `([\w-]+)` \| (.+?) \|$", section, re.MULTILINE))


def test_one_description_per_extra():
    """getting-started's table describes every extra of pyproject.toml once; the README points to it."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    extras = _extras_table()
    assert set(extras) == set(project["project"]["optional-dependencies"])
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/getting-started.md#extras" in readme
    # the README names extras only in install commands, without describing them again
    assert not re.search(r"`(openai|nli|serve)` (extra )?(adds|is|for)", readme)


def test_the_judges_page_lists_every_judge_family():
    page = (DOCS / "judges.md").read_text(encoding="utf-8")
    table = page.split("\n## Which judge to pick\n", 1)[1].split("\n## ", 1)[0]
    for spec in (
        "offline",
        "nli",
        "offline+nli",
        "--detector cascade",
        "openai:",
        "anthropic:",
        "bedrock:",
        "langchain:",
        "hf:",
        "onnx:",
        "minicheck:",
        "fake",
    ):
        assert f"`{spec}" in table, spec


def test_the_quality_page_answers_when_to_trust_before_the_statistics():
    page = (DOCS / "quality.md").read_text(encoding="utf-8")
    first = page.split("\n## ", 2)
    assert first[1].startswith("When can I trust a keyless verdict?"), first[1][:80]
    opening = first[1]
    for word in ("AUC", "MAPIE", "Learn-then-Test"):
        assert word not in opening, f"the plain answer should not need {word}"


def test_the_home_page_says_what_and_when() -> None:
    page = (DOCS / "index.md").read_text(encoding="utf-8")
    assert "## What problem it solves" in page and "## Which judge when" in page
