"""Where the documentation is published, so that what hallumeasure prints links to pages, not repository files."""

from __future__ import annotations

#: The documentation site (mkdocs' ``site_url``); a page ``docs/<page>.md`` is at ``<site>/<page>/``.
DOCS_SITE = "https://hallumeasure.readthedocs.io/en/latest"


def docs_link(page: str, anchor: str = "") -> str:
    """The address of ``page`` (a docs file's name without ``.md``) on the documentation site, at ``anchor``."""
    return f"{DOCS_SITE}/{page}/" + (f"#{anchor}" if anchor else "")
