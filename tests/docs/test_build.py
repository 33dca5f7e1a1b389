"""`mkdocs build --strict` passes: no broken link or anchor, no page missing from the nav, no docstring error."""

from __future__ import annotations

import os
import subprocess
import sys

from testdata import REPO


def test_the_site_builds_strictly(docs_installed, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml")]
    result = subprocess.run(
        [*command, "-d", str(tmp_path / "site")], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert (tmp_path / "site" / "cli" / "index.html").is_file()
