"""Paths to test inputs: the bundled examples and (when present) ../shared/data; the repository's scripts."""

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "samples.jsonl"
SHARED_DATA = REPO.parent / "shared" / "data"


@functools.cache
def aws_session():
    """One boto3 session with dummy credentials for all tests, so botocore parses its service models once."""
    import boto3

    return boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")


def load_script(relative: str) -> ModuleType:
    """The script at ``REPO / relative`` (a benchmark, or one of scripts/), run as a module: neither folder is
    a package. It is registered in ``sys.modules`` first, where its dataclasses look their module up."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(f"{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def cli_at_80(*args: str):  # -> subprocess.CompletedProcess[str]
    """Run ``hallumeasure ARGS`` in a process of its own with its output piped at COLUMNS=80, as a new user sees it."""
    import os
    import subprocess

    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-m", "hallumeasure.cli", *args], capture_output=True, text=True, timeout=300, env=env
    )
