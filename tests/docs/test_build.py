"""`mkdocs build --strict` passes: no broken link or anchor, no page missing from the nav, no docstring error;
the API reference lists the fields of the pydantic models."""

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
    _assert_the_api_reference_lists_the_fields((tmp_path / "site" / "python-api" / "index.html").read_text())


def _assert_the_api_reference_lists_the_fields(page: str) -> None:
    """Every field of the models that ``measure`` and ``check`` take and give has an entry with its words."""
    import re

    from hallumeasure.api.check import CheckedClaim, Result
    from hallumeasure.core.types import Sample
    from hallumeasure.pipeline.settings import MeasureSettings

    for model in (Sample, CheckedClaim, Result, MeasureSettings):
        path = f"{model.__module__}.{model.__qualname__}"
        listed = set(re.findall(rf'id="{re.escape(path)}\.(\w+)"', page))
        missing = set(model.model_fields) - listed
        assert not missing, f"docs/python-api.md shows no entry for these fields of {path}: {sorted(missing)}"
    # a field's words come from its description or its "#:" comment
    text = re.sub(r"<[^>]+>", " ", page)
    assert "Ask each LLM judge this many times per claim" in " ".join(text.split())  # MeasureSettings.repeats
    assert "Unsupported claims among those evaluated" in " ".join(text.split())  # Result.unsupported_rate
