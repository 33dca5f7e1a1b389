"""examples/plugin installs with pip and its judge works from the CLI, the Python API and the guard.

The package is installed for real (``pip install --target``, so its entry point is read from its
installed metadata, as for any plugin) into a temporary folder, and the plugin's own tests run against
it in a fresh Python.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "examples" / "plugin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("plugin-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(PLUGIN)],
        check=True,
        capture_output=True,
        text=True,
    )
    return target


def _env(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def test_the_plugin_package_installs_and_its_own_tests_pass(installed: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(PLUGIN / "tests")],
        cwd=tmp_path,
        env=_env(installed),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "5 passed" in result.stdout


def test_without_the_package_the_judge_is_unknown_with_the_known_ones_listed(tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "hallumeasure"
    result = subprocess.run(
        [str(cli), "measure", str(ROOT / "examples" / "samples.jsonl"), "--out", str(tmp_path / "r"), "--judge", "toy"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "unknown model provider or judge 'toy'" in result.stderr
