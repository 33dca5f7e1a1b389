"""Pointers to the docs in what users read (CLI output, the viewer): a page named by its title, never a path in
the repository, with the docs site's address when the installed package declares one (its ``Documentation``
project URL)."""

from __future__ import annotations

from functools import lru_cache

#: The docs page that publishes the keyless judges' measured quality: its title and its name on the site.
QUALITY_PAGE = ("Judge quality", "quality")


@lru_cache(maxsize=1)
def docs_site() -> str | None:
    """The docs site's address from the package's metadata (``[project.urls] Documentation``), or None."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        urls = metadata("hallumeasure").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    for entry in urls:
        name, _, url = str(entry).partition(",")
        if name.strip().lower() in ("documentation", "docs") and url.strip():
            return url.strip().rstrip("/")
    return None


def docs_url(page: str) -> str | None:
    """The address of a page of the docs site (``quality``), or None when the package declares no site."""
    site = docs_site()
    return f"{site}/{page}/" if site else None


def docs_reference(title: str, page: str) -> str:
    """How output names a docs page: "the 'Judge quality' page of the hallumeasure docs", with its address
    when there is one."""
    url = docs_url(page)
    return f"the '{title}' page of the hallumeasure docs" + (f" ({url})" if url else "")
