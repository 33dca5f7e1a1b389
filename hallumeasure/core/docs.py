"""Where the documentation is published, so that what users read (CLI output, the viewer) names a docs page by its
title and links it, never a path in the repository.

The address is declared three times, and ``tests/core/test_docs_links.py`` holds them equal: here, as mkdocs'
``site_url`` and as the package's ``Documentation`` project URL."""

from __future__ import annotations

#: The documentation site; the page ``docs/<page>.md`` is at ``<site>/<page>/``.
DOCS_SITE = "https://hallumeasure.readthedocs.io/en/latest"

#: The docs page that publishes the keyless judges' measured quality: its title and its name on the site.
QUALITY_PAGE = ("Judge quality", "quality")


def docs_link(page: str, anchor: str = "") -> str:
    """The address of ``page`` (a docs file's name without ``.md``) on the documentation site, at ``anchor``."""
    return f"{DOCS_SITE}/{page}/" + (f"#{anchor}" if anchor else "")


def docs_reference(title: str, page: str) -> str:
    """How output names a docs page: "the 'Judge quality' page of the hallumeasure docs (<address>)"."""
    return f"the '{title}' page of the hallumeasure docs ({docs_link(page)})"
