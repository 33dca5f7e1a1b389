"""Output names a docs page by its title, and links it when the installed package declares a docs site."""

import importlib.metadata
from email.message import Message

import pytest

from hallumeasure.core import docs


@pytest.fixture(autouse=True)
def fresh():
    docs.docs_site.cache_clear()
    yield
    docs.docs_site.cache_clear()


def _metadata(*urls: str) -> Message:
    message = Message()
    for url in urls:
        message["Project-URL"] = url
    return message


def test_without_a_docs_site_the_page_is_named_not_linked(monkeypatch):
    monkeypatch.setattr(importlib.metadata, "metadata", lambda name: _metadata("Source, https://example.org/src"))
    assert docs.docs_url("quality") is None
    assert docs.docs_reference("Judge quality", "quality") == "the 'Judge quality' page of the hallumeasure docs"


def test_a_declared_docs_site_gives_the_pages_address(monkeypatch):
    monkeypatch.setattr(
        importlib.metadata, "metadata", lambda name: _metadata("Documentation, https://example.org/hm/")
    )
    assert docs.docs_url("quality") == "https://example.org/hm/quality/"
    assert docs.docs_reference("Judge quality", "quality").endswith("docs (https://example.org/hm/quality/)")
