"""`make demo` as a new user sees it when piped: the summary once, claims that fit 80 columns, the viewer path last."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from testdata import REPO

pytestmark = pytest.mark.slow


def _demo_commands() -> list[str]:
    """The demo target's recipe lines, as the Makefile has them."""
    text = (REPO / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe, "no demo target in the Makefile"
    return [line.strip() for line in recipe.group(1).splitlines()]


def test_demo_prints_the_summary_once_fits_80_columns_and_ends_with_the_viewer_path(tmp_path):
    (tmp_path / "examples").symlink_to(REPO / "examples")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    printed = []
    for command in _demo_commands():
        command = command.replace("$(BIN)", bin_dir)
        done = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        printed += done.stdout.splitlines()
    assert sum("judge: offline" in line for line in printed) == 1  # the summary, once
    claim_lines = [line for line in printed if line.startswith(("harbor-", "battery-", "trial-"))]
    assert len(claim_lines) >= 10
    too_wide = [line for line in printed if len(line) > 80 and not line.startswith("file://")]
    assert not too_wide, too_wide
    assert any("hallumeasure view runs/demo" in line for line in printed)  # the pointer to the full reasons
    wrote, link = printed[-2:]
    assert wrote.startswith("wrote runs/demo/view.html")
    assert link == (tmp_path / "runs" / "demo" / "view.html").resolve().as_uri()
    assert (tmp_path / "runs" / "demo" / "view.html").is_file()


def _recipe(target: str) -> list[str]:
    text = (REPO / "Makefile").read_text()
    recipe = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe, f"no {target} target in the Makefile"
    return [line.strip() for line in recipe.group(1).splitlines()]


def test_demo_installs_the_core_package_and_no_extra():
    text = (REPO / "Makefile").read_text()
    needs = re.search(r"^demo:(.*)$", text, re.M)
    assert needs, "no demo target in the Makefile"
    installs = [line for target in needs[1].split() for line in _recipe(target) if "pip install" in line]
    assert installs and installs[-1].endswith("pip install --quiet -e ."), installs  # no [dev], no extras
    tests = [line for line in _recipe("$(BIN)/.installed") if "pip install" in line]
    assert "dev" in tests[-1], "make test keeps the full install"


def _core_closure() -> set[str]:
    """The distributions the core install brings: hallumeasure's own requirements and theirs, no extra's."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = ["hallumeasure"]
    while todo:
        name = todo.pop()
        try:
            wanted = requires(name) or []
        except PackageNotFoundError:
            continue
        for line in wanted:
            req = Requirement(line)
            if req.marker and not req.marker.evaluate({"extra": ""}):
                continue
            key = req.name.lower().replace("_", "-")
            if key not in seen:
                seen.add(key)
                todo.append(key)
    return seen


BLOCKER = """
import importlib.abc, json, runpy, sys


class Absent(importlib.abc.MetaPathFinder):
    blocked = set(json.loads(sys.argv[1]))

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the core install)", name=name)
        return None


sys.meta_path.insert(0, Absent())
sys.argv = ["hallumeasure", *sys.argv[2:]]
runpy.run_module("hallumeasure.cli", run_name="__main__", alter_sys=True)
"""


def test_the_demo_runs_without_any_package_that_only_an_extra_installs(tmp_path):
    """The demo's three commands run as in a core install: every module of a distribution outside the core
    install's requirements is made unimportable (as if not installed), so `make demo` can install no extra."""
    import json
    from importlib.metadata import packages_distributions

    core = _core_closure() | {"hallumeasure"}
    blocked = sorted(
        module
        for module, dists in packages_distributions().items()
        if not any(d.lower().replace("_", "-") in core for d in dists)
    )
    assert {"mlflow", "schemathesis", "playwright", "pytest", "sklearn"} <= set(blocked)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    printed = ""
    for command in _demo_commands():
        args = command.replace("$(BIN)/hallumeasure", "").split()
        done = subprocess.run(
            [sys.executable, "-c", BLOCKER, json.dumps(blocked), *args],
            cwd=tmp_path,
            env={**os.environ, "COLUMNS": "80"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        printed += done.stdout
    assert "judge: offline" in printed and (tmp_path / "runs" / "demo" / "view.html").is_file()


def test_make_test_prints_progress_and_counts(tmp_path):
    """`make test`'s pytest line, run on a small suite: the count collected, progress with the share done, and
    the counts at the end (not -q's silence until the end)."""
    line = next(line for line in _recipe("test") if "pytest" in line)
    options = re.search(r"\$\(BIN\)/pytest([^;]*);", line)
    assert options, line
    assert " -q" not in options[1] and "-qq" not in options[1]
    for i in range(3):
        (tmp_path / f"test_part{i}.py").write_text("def test_one():\n    pass\n\n\ndef test_two():\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *options[1].split()],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert "collected 6 items" in done.stdout
    assert re.search(r"test_part0\.py \.\. +\[ 33%\]", done.stdout), done.stdout
    assert "6 passed" in done.stdout.splitlines()[-1]
