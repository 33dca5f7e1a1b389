"""Shared fixtures. The network guard makes any test fail loudly if code tries to reach a real provider."""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from pathlib import Path

import pytest
from testdata import SHARED_DATA

# Wide, stable terminal output for CLI assertions (rich reads this when its consoles are created).
os.environ["COLUMNS"] = "200"
# The labelled sets of a clone's ../shared/data, named by hallumeasure.runs.datasets (unless set already).
if SHARED_DATA.is_dir():
    os.environ.setdefault("HALLUMEASURE_DATA", str(SHARED_DATA))

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _allowed(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # unix sockets
        return True
    host = address[0] if isinstance(address, tuple) else None
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded(real):
    def connect(self, address):
        if not _allowed(address):
            raise RuntimeError(
                f"test tried to open a network connection to {address!r}: tests may only talk to local fakes"
            )
        return real(self, address)

    return connect


@pytest.fixture(autouse=True, scope="session")
def network_guard():
    socket.socket.connect = _guarded(_real_connect)
    socket.socket.connect_ex = _guarded(_real_connect_ex)
    yield
    socket.socket.connect = _real_connect
    socket.socket.connect_ex = _real_connect_ex


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """A private request cache, and no real credentials, for every test."""
    monkeypatch.setenv("HALLUMEASURE_CACHE_DIR", str(tmp_path / "cache"))
    for name in (
        "ANTHROPIC_API_KEY",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


# Our logger's level as the session found it: a CLI run inside a module-scoped fixture sets it before any
# test's snapshot, so each test restores this level rather than whatever the test before it left.
_OUR_LEVEL = logging.getLogger("hallumeasure").level


@pytest.fixture(autouse=True)
def restored_logging():
    """The CLI's -v handling sets our logger's level and adds a handler (in-process CliRunner tests): undo it
    before and after each test, so a test that captures our log records sees them whatever ran before it."""
    ours = logging.getLogger("hallumeasure")
    root = logging.getLogger()
    root_level, handlers = root.level, list(root.handlers)
    ours.setLevel(_OUR_LEVEL)
    yield
    ours.setLevel(_OUR_LEVEL)
    root.setLevel(root_level)
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)


@pytest.fixture
def shared_data() -> Path:
    """The folder of the labelled sets ($HALLUMEASURE_DATA, which the suite sets to ../shared/data when present)."""
    from hallumeasure.runs.datasets import data_dir

    found = data_dir()
    if found is None or not found.is_dir():
        pytest.skip("no labelled data: set HALLUMEASURE_DATA or put ../shared/data beside the repository")
    return found


@pytest.fixture
def aws(monkeypatch):
    """Dummy AWS credentials in the environment (for code that builds its own boto3 session)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
