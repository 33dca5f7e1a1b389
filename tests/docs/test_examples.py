"""Every shell and Python example in README.md and docs/ runs, so the docs cannot drift from the code.

Each fenced ```bash / ```sh / ```shell block runs through bash (``-e``: the first failing command fails the
block) and each ```python block through this interpreter; a Python block that defines ``test_`` functions
runs under pytest, with the hallumeasure plugin. They run with this environment's ``bin`` first on PATH, in a
scratch folder holding copies of ``examples/`` and ``scripts/`` and the demo run in ``runs/demo`` (measured
once per session). The blocks of one page share one folder and run in page order, so a block may use what an
earlier block of its page wrote; pages run side by side.

A command that cannot run here (it needs a key, a model server or the network) goes in a ```console block
just below an HTML comment (unseen by readers) that starts with "<!-- not run by the docs tests:" and gives the
reason; their number is capped below. Output for reading goes in ```text. Every fence must name its language,
so no command can hide in an unlabelled block.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from testdata import REPO

RUN = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python"}
NOT_RUN = {"console"}
READ_ONLY = {"text", "yaml", "toml", "json", "jsonl", "mermaid"}
NOT_RUN_REASON = "<!-- not run by the docs tests:"
#: The examples that cannot run here: the README's install commands, getting started's install commands, and
#: the judges page's LLM keys, model servers, llama.cpp build and real-judge repeats, the checkers page's
#: downloaded models (hf:, an ONNX export, a vLLM server), and the trace pages' collector, Phoenix server and
#: mlflow extra. Keep it small.
MAX_NOT_RUN = 12
#: What the examples read from the repository, copied into their scratch folder.
COPIED = ("examples", "scripts")
PLUGIN = "hallumeasure.api.pytest_plugin"
TIMEOUT_S = 180


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    before: str  # the last non-blank line above the fence

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def doc_pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def fenced_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, with their language and line."""
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    opening = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
    number = 0
    last_text = ""
    while number < len(lines):
        match = opening.match(lines[number])
        if not match:
            if lines[number].strip():
                last_text = lines[number].strip()
            number += 1
            continue
        indent, fence, language = match.groups()
        body: list[str] = []
        end = number + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            body.append(lines[end][len(indent) :] if lines[end].startswith(indent) else lines[end])
            end += 1
        blocks.append(Block(page, number + 1, language.lower(), "\n".join(body) + "\n", last_text))
        last_text = ""
        number = end + 1
    return blocks


ALL_BLOCKS = [block for page in doc_pages() for block in fenced_blocks(page)]
RUN_BLOCKS = [block for block in ALL_BLOCKS if block.language in RUN]


def test_every_fence_names_a_known_language():
    unknown = [
        f"{b.where}: ```{b.language or '(none)'}"
        for b in ALL_BLOCKS
        if b.language not in RUN and b.language not in NOT_RUN and b.language not in READ_ONLY
    ]
    assert not unknown, "fences must say what they hold (bash, python, console with a reason, text, ...):\n" + (
        "\n".join(unknown)
    )


def test_examples_not_run_say_why_and_stay_few():
    not_run = [b for b in ALL_BLOCKS if b.language in NOT_RUN]
    silent = [b.where for b in not_run if not b.before.startswith(NOT_RUN_REASON)]
    assert not silent, f"a ```console block needs a paragraph just above starting {NOT_RUN_REASON!r}: {silent}"
    assert len(not_run) <= MAX_NOT_RUN, (
        f"{len(not_run)} examples are not run (at most {MAX_NOT_RUN}): make new ones runnable "
        "(the offline judge and the fake model need no key): " + ", ".join(b.where for b in not_run)
    )
    assert len(RUN_BLOCKS) >= 30, "the docs tests found too few examples to run: is the fence parser broken?"


def _environment(cache: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANTHROPIC_", "AWS_", "OPENAI_", "HALLUMEASURE_API_KEYS"))
    }
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["HALLUMEASURE_CACHE_DIR"] = str(cache)
    env["COLUMNS"] = "120"
    return env


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL
    )


@pytest.fixture(scope="session")
def demo_folder(docs_installed, tmp_path_factory) -> Path:
    """A scratch folder with examples/, scripts/ and the demo run (runs/demo), made once per session."""
    base = tmp_path_factory.mktemp("docs-examples") / "base"
    for name in COPIED:
        shutil.copytree(REPO / name, base / name)
    env = _environment(base.parent / "cache")
    for command in (
        ["hallumeasure", "measure", "examples/samples.jsonl", "--out", "runs/demo"],
        ["hallumeasure", "view", "runs/demo", "--out", "runs/demo/view.html"],
    ):
        result = _run(command, base, env)
        assert result.returncode == 0, f"{' '.join(command)}: {result.stdout}{result.stderr}"
    return base


def _folder_for(page: Path, demo_folder: Path) -> Path:
    """One copy of the demo folder per page, so that pages never see each other's files."""
    folder = demo_folder.parent / re.sub(r"\W", "_", str(page.relative_to(REPO)))
    shutil.copytree(demo_folder, folder)
    return folder


def _pytest_plugin_args() -> list[str]:
    installed = {ep.value for ep in entry_points(group="pytest11")}
    return [] if PLUGIN in installed else ["-p", PLUGIN]


def _command(block: Block, folder: Path) -> list[str]:
    """Write the block into ``folder`` and return the command that runs it there."""
    if RUN[block.language] == "bash":
        script = folder / f"docs_block_{block.line}.sh"
        script.write_text(block.code, encoding="utf-8")
        return ["bash", "-e", script.name]
    if re.search(r"^def test_", block.code, re.MULTILINE):
        script = folder / f"test_docs_block_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_pytest_plugin_args(), script.name]
    script = folder / f"docs_block_{block.line}.py"
    script.write_text(block.code, encoding="utf-8")
    return [sys.executable, script.name]


def _run_page(blocks: list[Block], demo_folder: Path) -> dict[str, str | None]:
    """Run one page's blocks in order in its own folder; each block's failure message, or None."""
    folder = _folder_for(blocks[0].page, demo_folder)
    env = _environment(demo_folder.parent / "cache")
    outcomes: dict[str, str | None] = {}
    for block in blocks:
        try:
            result = _run(_command(block, folder), folder, env)
        except subprocess.TimeoutExpired:
            outcomes[block.where] = f"{block.where}: the example ran past {TIMEOUT_S} s"
            continue
        outcomes[block.where] = (
            None
            if result.returncode == 0
            else f"{block.where}: the {block.language} example exited {result.returncode}\n"
            + (result.stdout + result.stderr)[-3000:]
        )
    return outcomes


@pytest.fixture(scope="session")
def outcomes(demo_folder, request) -> dict[str, str | None]:
    """Run the selected examples once, pages side by side (one page's blocks in order), before reporting them.

    A page runs from its first block up to its last selected block, since a block may use what an earlier
    block of its page wrote."""
    selected = {item.callspec.id for item in request.session.items if hasattr(item, "callspec")}
    pages: dict[Path, list[Block]] = {}
    for page in doc_pages():
        blocks = [b for b in RUN_BLOCKS if b.page == page]
        last = max((i for i, b in enumerate(blocks) if b.where in selected), default=-1)
        if last >= 0:
            pages[page] = blocks[: last + 1]
    workers = max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = pool.map(lambda blocks: _run_page(blocks, demo_folder), pages.values())
        return {where: outcome for page_outcomes in results for where, outcome in page_outcomes.items()}


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[block.where for block in RUN_BLOCKS])
def test_example_runs(block: Block, outcomes):
    failure = outcomes[block.where]
    if failure:
        pytest.fail(failure, pytrace=False)
