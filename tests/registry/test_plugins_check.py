"""``hallumeasure plugins --check`` tells an optional part (its extra is not installed) from a broken one (issue #47,
the first hour): a core install, which lacks the extras, exits 0; a part that fails to load although its extra is
installed, or a plugin that fails to import, exits 1."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint

import pytest
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.registry import JudgePart, PartKind, load_plugins, registry

#: The plugins' modules, written for each test: one needs a package of an extra that is not installed, one has a bug.
MODULES = {
    "acme_checks": "import acme_sdk_not_installed  # the package the acme extra would bring\n\njudge = None\n",
    "acme_buggy": "raise RuntimeError('a bug in the plugin itself')\n",
    "acme_nli": "import onnxruntime  # the nli extra, installed\nimport acme_helper_not_installed\n\njudge = None\n",
}


@pytest.fixture
def parts(tmp_path, monkeypatch) -> Iterator[list[str]]:
    """Registers the parts given by name (``acme``: needs the acme extra, ``buggy``, ``nli``) and removes them."""
    for name, text in MODULES.items():
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    added: list[str] = []
    yield added
    for name in added:
        registry().remove(PartKind.JUDGE, name)
    for module in MODULES:
        sys.modules.pop(module, None)


def _add(added: list[str], part: JudgePart) -> None:
    registry().add(part)
    added.append(part.name)


def _check(*extra: str):
    return CliRunner().invoke(app, ["plugins", "--check", *extra], env={"COLUMNS": "80"})


def _lines_of(output: str, name: str) -> str:
    """The part's line and the lines below it (indented deeper), joined."""
    lines = output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == [name])
    end = next((i for i, line in enumerate(lines[at + 1 :]) if not line.startswith("    ")), len(lines) - at - 1)
    return " ".join(line.strip() for line in lines[at : at + 1 + end])


def test_a_part_whose_extra_is_not_installed_is_optional_and_exits_0(parts):
    _add(parts, JudgePart("acme", "acme_checks:judge", "an acme checker", extra="acme"))
    done = _check()
    assert done.exit_code == 0, done.output
    shown = _lines_of(done.output, "acme")
    assert "optional" in shown and "does not load" not in shown
    assert "pip install 'hallumeasure[acme]'" in shown and "acme_sdk_not_installed" in shown
    [info] = [p for p in json.loads(_check("--json").output)["parts"] if p["name"] == "acme"]
    assert info["loads"] is False and info["extra_missing"] is True


def test_a_part_whose_own_code_fails_is_broken_although_it_names_an_extra(parts):
    _add(parts, JudgePart("acme", "acme_checks:judge", "an acme checker", extra="acme"))
    _add(parts, JudgePart("buggy", "acme_buggy:judge", "a broken checker", extra="acme"))
    done = _check()
    assert done.exit_code == 1, done.output
    assert "does not load" in _lines_of(done.output, "buggy") and "a bug in the plugin" in done.output
    assert "optional" in _lines_of(done.output, "acme")


def test_a_part_that_fails_although_its_extra_is_installed_is_broken(parts):
    if importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("needs the nli extra installed")
    _add(parts, JudgePart("acme-nli", "acme_nli:judge", "a checker on onnxruntime", extra="nli"))
    done = _check()
    assert done.exit_code == 1, done.output
    shown = _lines_of(done.output, "acme-nli")
    assert "does not load" in shown and "optional" not in shown


def test_a_plugin_that_fails_to_import_is_a_failure(parts):
    reg = registry()
    before = list(reg.problems)
    gone = EntryPoint(name="gone", value="acme_missing_plugin:part", group=PartKind.JUDGE.group)
    load_plugins(reg, {PartKind.JUDGE: [gone]})
    try:
        done = _check()
    finally:
        reg.problems[:] = before
    assert done.exit_code == 1, done.output
    assert "plugin gone" in done.output and "was not registered" in done.output


def test_the_built_in_parts_load_or_are_optional():
    done = _check("--json")
    assert done.exit_code == 0, done.output
    listing = json.loads(done.output)
    assert all(p["loads"] or p["extra_missing"] for p in listing["parts"]), listing
