"""What the export tests share: a run of ``examples/`` measured with the keyless offline judge."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hallumeasure.cli import app
from tests.testdata import EXAMPLES


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of ``examples/samples.jsonl`` judged offline, measured once per test module."""
    out = tmp_path_factory.mktemp("export") / "run"
    made = CliRunner().invoke(app, ["measure", str(EXAMPLES), "--out", str(out), "--judge", "offline"])
    assert made.exit_code in (0, 3), made.output
    return out
