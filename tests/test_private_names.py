"""No private name crosses a module boundary inside the package.

The rule: a name that starts with one underscore (``_fail``, ``_decide``) belongs to the module that
defines it. No other module of ours may import it (``from hallumeasure.x import _name``), reach it
through an imported module (``x._name``) or import a private module (``hallumeasure.x._y``); this
holds between modules of one package too (the command modules of ``cli`` are separate modules, so
what they share is public in ``cli.common`` and ``cli.output``). Dunder names (``__version__``,
``__future__``) are not private. A helper two modules need is made public where it belongs, or
moved there.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "hallumeasure"

#: (module, name) pairs still allowed, each with the reason it is not yet gone (none left).
PENDING: set[tuple[str, str]] = set()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_imports(source: str, module: str) -> list[str]:
    """Each use in ``source`` (the text of ``module``) of a private name or module of another module of ours."""
    found = []
    tree = ast.parse(source)
    ours: dict[str, str] = {}  # local name -> module of ours it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "hallumeasure":
                    continue
                if any(_private(part) for part in alias.name.split(".")):
                    found.append(f"line {node.lineno}: import {alias.name}")
                ours[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "hallumeasure" or node.module == module:
                continue
            if any(_private(part) for part in node.module.split(".")):
                found.append(f"line {node.lineno}: from {node.module} import ...")
            for alias in node.names:
                if _private(alias.name) and (node.module, alias.name) not in PENDING:
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                else:
                    ours[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append(f"line {node.lineno}: relative import (the rule is checked on absolute imports)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name):
            target = ours.get(node.value.id)
            if target is not None and target != module and (target, node.attr) not in PENDING:
                found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_is_imported_from_another_module() -> None:
    broken = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        module = _module_name(path)
        found = private_imports(path.read_text(encoding="utf-8"), module)
        if found:
            broken[module] = found
    assert not broken, "private names used outside their module:\n" + "\n".join(
        f"{module}: {line}" for module, lines in broken.items() for line in lines
    )


def test_the_scan_finds_each_kind_of_private_use() -> None:
    """The scan is not vacuous: each way of reaching another module's private name is caught."""
    source = (
        "from __future__ import annotations\n"
        "from hallumeasure.judges.votes import _decide\n"
        "from hallumeasure.cli import common\n"
        "import hallumeasure.report._hidden\n"
        "from . import sibling\n"
        "common._fail('x')\n"
        "from hallumeasure.version import __version__\n"
        "from hallumeasure.cli.common import fail\n"
    )
    found = private_imports(source, "hallumeasure.report.stability")
    assert found == [
        "line 2: from hallumeasure.judges.votes import _decide",
        "line 4: import hallumeasure.report._hidden",
        "line 5: relative import (the rule is checked on absolute imports)",
        "line 6: common._fail",
    ]


def test_a_module_may_use_its_own_private_names() -> None:
    source = "from hallumeasure.cli.common import _helper\nimport hallumeasure.cli.common as me\nme._helper()\n"
    assert private_imports(source, "hallumeasure.cli.common") == []
