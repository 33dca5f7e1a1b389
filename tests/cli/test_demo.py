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
