"""The docs tests need the docs extra (mkdocs); without it they skip, or fail where CI requires them."""

from __future__ import annotations

import importlib.util
import os

import pytest


def docs_missing() -> str | None:
    """Why the docs cannot be built here (a sentence), or None when they can."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            return f"{module} is not installed (it is in the docs extra: pip install -e '.[docs]')"
    return None


@pytest.fixture(scope="session")
def docs_installed() -> None:
    reason = docs_missing()
    if reason and os.environ.get("HALLUMEASURE_REQUIRE_DOCS"):
        pytest.fail(f"HALLUMEASURE_REQUIRE_DOCS is set (as in CI) but {reason}")
    if reason:
        pytest.skip(reason)
