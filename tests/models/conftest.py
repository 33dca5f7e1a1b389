"""The ``provider`` fixture of the tests that every provider must pass (``provider_fixtures.each_provider``)."""

import pytest
from provider_fixtures import Provider


@pytest.fixture
def provider(request, monkeypatch, tmp_path) -> Provider:
    """The provider a test is parametrised with, its test credentials in the environment."""
    request.param.environment(monkeypatch, tmp_path)
    return request.param
