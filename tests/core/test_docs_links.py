"""Output links docs pages on one docs site, declared alike in the code, mkdocs.yml and the package metadata."""

import tomllib
from pathlib import Path

import yaml

from hallumeasure.core import docs

REPO = Path(__file__).resolve().parents[2]


def test_the_docs_site_is_declared_once_in_three_places():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    mkdocs = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    assert project["urls"]["Documentation"].rstrip("/") == docs.DOCS_SITE
    assert mkdocs["site_url"].rstrip("/") == docs.DOCS_SITE


def test_a_page_is_named_by_its_title_and_linked():
    assert docs.docs_link("quality") == f"{docs.DOCS_SITE}/quality/"
    assert docs.docs_link("judges", "using-an-llm-judge") == f"{docs.DOCS_SITE}/judges/#using-an-llm-judge"
    assert docs.docs_reference("Judge quality", "quality") == (
        f"the 'Judge quality' page of the hallumeasure docs ({docs.DOCS_SITE}/quality/)"
    )
    assert (REPO / "docs" / "quality.md").is_file()
