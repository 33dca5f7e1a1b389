"""The top-level namespace: functions and types only, imported on first use."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import types

import pytest
from testdata import REPO

import hallumeasure


def test_every_public_name_is_a_function_or_a_type():
    names = [name for name in hallumeasure.__all__ if name != "__version__"]
    assert {"measure", "ameasure", "check", "acheck", "load_run", "Run", "Result", "assert_grounded"} <= set(names)
    for name in names:
        value = getattr(hallumeasure, name)
        assert not isinstance(value, types.ModuleType), name
        assert inspect.isclass(value) or inspect.isfunction(value), name
    importlib.import_module("hallumeasure.report.compare")  # a submodule import must not add names to dir()
    assert dir(hallumeasure) == hallumeasure.__all__


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="measure_everything"):
        hallumeasure.measure_everything  # noqa: B018


def test_importing_the_package_loads_no_stage():
    code = "import sys, hallumeasure; print(sorted(m for m in sys.modules if m.startswith('hallumeasure')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert loaded.stdout.strip() == "['hallumeasure', 'hallumeasure.version']"
