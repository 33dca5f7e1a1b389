"""Every shell and Python example in README.md and docs/ runs, so the docs cannot drift from the code.

Each fenced ```bash / ```sh / ```shell block runs through bash (``-e``: the first failing command fails the
block) and each ```python block through this interpreter; a Python block that defines ``test_`` functions
runs under pytest, with the hallumeasure plugin. They run with this environment's ``bin`` first on PATH, in a
scratch folder holding copies of ``examples/`` and ``scripts/`` and the demo run in ``runs/demo`` (measured
once per session). The blocks of one page share one folder and run in page order, so a block may use what an
earlier block of its page wrote.

A command that cannot run here (it needs a key, a model server or the network) goes in a ```console block
whose paragraph just above starts with "*Not run by the docs tests:" and gives the reason; their number is
capped below. Output for reading goes in ```text. Every fence must name its language, so no command can hide
in an unlabelled block.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from testdata import REPO

RUN = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python"}
NOT_RUN = {"console"}
READ_ONLY = {"text", "yaml", "toml", "json", "jsonl", "mermaid"}
NOT_RUN_REASON = "*Not run by the docs tests:"
#: The examples that cannot run here: the README's install commands, getting started's install commands, and
#: the judges page's LLM keys, model servers, llama.cpp build and real-judge repeats. Keep it small.
MAX_NOT_RUN = 6
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


@pytest.fixture(scope="session")
def page_folders(demo_folder) -> dict[Path, Path]:
    return {}


def _folder_for(page: Path, demo_folder: Path, page_folders: dict[Path, Path]) -> Path:
    """One copy of the demo folder per page, so that pages never see each other's files."""
    if page not in page_folders:
        folder = demo_folder.parent / re.sub(r"\W", "_", str(page.relative_to(REPO)))
        shutil.copytree(demo_folder, folder)
        page_folders[page] = folder
    return page_folders[page]


def _pytest_plugin_args() -> list[str]:
    installed = {ep.value for ep in entry_points(group="pytest11")}
    return [] if PLUGIN in installed else ["-p", PLUGIN]


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[block.where for block in RUN_BLOCKS])
def test_example_runs(block: Block, demo_folder, page_folders):
    folder = _folder_for(block.page, demo_folder, page_folders)
    env = _environment(demo_folder.parent / "cache")
    script = folder / f"docs_block_{block.line}"
    if RUN[block.language] == "bash":
        script = script.with_suffix(".sh")
        script.write_text(block.code, encoding="utf-8")
        command = ["bash", "-e", script.name]
    elif re.search(r"^def test_", block.code, re.MULTILINE):
        script = folder / f"test_docs_block_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_pytest_plugin_args(), script.name]
    else:
        script = script.with_suffix(".py")
        script.write_text(block.code, encoding="utf-8")
        command = [sys.executable, script.name]
    try:
        result = _run(command, folder, env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: the example ran past {TIMEOUT_S} s")
    if result.returncode != 0:
        output = (result.stdout + result.stderr)[-3000:]
        pytest.fail(f"{block.where}: the {block.language} example exited {result.returncode}\n{output}", pytrace=False)
