"""A headless Chromium for the viewer's browser tests and its screenshot: the system browser, driven by Playwright.

The browser is the one the OS packages install (``apt-get install chromium``), never a download:
``chromium_executable()`` finds it (``$HALLUMEASURE_CHROMIUM`` first), and ``open_page()`` starts it
headless with the flags that keep it from reaching the network on its own.

    from hallumeasure.testing.browser import open_page
    with open_page() as page:
        page.goto("file:///.../view.html")
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

#: Headless, no sandbox (CI runs as root), and none of the background fetches a fresh profile makes.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_executable() -> Path | None:
    """The Chromium binary to drive: ``$HALLUMEASURE_CHROMIUM``, else the first one on the PATH, else None."""
    given = os.environ.get("HALLUMEASURE_CHROMIUM")
    if given:
        return Path(given) if Path(given).is_file() else None
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def browser_missing() -> str | None:
    """Why the browser cannot be driven here (a sentence), or None when it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (it is in the dev extra: pip install -e '.[dev]')"
    if chromium_executable() is None:
        return (
            "no Chromium binary found (install the OS package: apt-get install chromium, "
            "or point HALLUMEASURE_CHROMIUM at one)"
        )
    return None


def launch(driver: Playwright) -> Browser:
    """Launch the system Chromium with ``driver`` (a started ``sync_playwright()``); returns the browser."""
    executable = chromium_executable()
    if executable is None:
        raise RuntimeError(browser_missing() or "no Chromium binary found")
    return driver.chromium.launch(executable_path=str(executable), args=CHROMIUM_ARGS)


@contextmanager
def open_page(width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A fresh page in a headless system Chromium; the browser is closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = launch(driver)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()
