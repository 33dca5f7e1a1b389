"""The top-level namespace: functions and types only, imported on first use."""

from __future__ import annotations

import ast
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
    assert (
        loaded.stdout.strip()
        == "['hallumeasure', 'hallumeasure.core', 'hallumeasure.core.lazy', 'hallumeasure.version']"
    )


@pytest.mark.parametrize("package", ["hallumeasure", "hallumeasure.guard"])
def test_type_checkers_see_the_names_the_package_exports(package):
    """The ``if TYPE_CHECKING:`` block (what mypy and IDEs read) imports exactly the names of ``_EXPORTS``, each
    from its module and re-exported under its own name."""
    module = importlib.import_module(package)
    tree = ast.parse(inspect.getsource(module))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    imported = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name}: write 'import {alias.name} as {alias.name}'"
            imported[alias.name] = node.module
    exported = {name: where for where, names in module._EXPORTS.items() for name in names}
    assert imported == exported
    assert set(module.__all__) == set(exported) | ({"__version__"} if package == "hallumeasure" else set())


def test_the_one_door_is_public_and_its_inner_function_is_not():
    assert hallumeasure.Measurement.__module__ == "hallumeasure.pipeline.measurement"
    assert "run_measurement" not in hallumeasure.__all__
    with pytest.raises(AttributeError):
        hallumeasure.run_measurement  # noqa: B018
