"""A headless system Chromium shared by the browser tests; skipped with the reason when none can be driven."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from testdata import REPO

from hallumeasure.testing.browser import browser_missing, launch

#: Where screenshots for people to look at go (git-ignored); CI can upload the folder.
ARTIFACTS = Path(os.environ.get("HALLUMEASURE_ARTIFACTS", REPO / "artifacts")) / "browser"


@pytest.fixture(scope="module")
def browser():
    # Module scope, not session: while Playwright's sync API is open, this thread has a running
    # event loop, and the other tests' asyncio.run() would refuse to start.
    reason = browser_missing()
    if reason and os.environ.get("HALLUMEASURE_REQUIRE_BROWSER"):
        pytest.fail(f"HALLUMEASURE_REQUIRE_BROWSER is set (as in CI) but {reason}")
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        chromium = launch(driver)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A fresh page that fails the test on any script error or console error, and on any dialog."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.problems = problems
    yield page
    context.close()
    assert not problems, problems


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
