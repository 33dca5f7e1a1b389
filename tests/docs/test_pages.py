"""Facts about the docs that must not drift: the README's length, the layer list, the results files named."""

from __future__ import annotations

import re
import tomllib

from testdata import REPO

DOCS = REPO / "docs"


def test_the_readme_is_at_most_200_lines():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail into docs/ (at most 200)"


def _architecture_layers() -> list[str]:
    text = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("\n## The layers\n", 1)[1]
    block = re.search(r"^```[^\n]*\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    assert block, "docs/ARCHITECTURE.md: no fenced block under '## The layers'"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_architecture_layers_are_the_import_contracts_layers():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = [c for c in project["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert len(contracts) == 1, "expected one layers contract in pyproject.toml"
    normalise = lambda layer: " | ".join(part.strip() for part in layer.split("|"))  # noqa: E731
    assert [normalise(layer) for layer in _architecture_layers()] == [normalise(x) for x in contracts[0]["layers"]]


def test_every_results_file_the_docs_name_exists():
    pages = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
    missing = []
    for page in pages:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for path in re.findall(r"\bbenchmarks/[\w./-]*\w", line):
                if not (REPO / path).exists():
                    missing.append(f"{page.relative_to(REPO)}:{number}: {path}")
    assert not missing, "the docs name results files that do not exist:\n" + "\n".join(missing)


def _documented_objects(page: str) -> list[object]:
    """The objects that the page's mkdocstrings directives (``::: module.name``) render."""
    import importlib

    objects = []
    for path in re.findall(r"^::: ([\w.]+)", page, re.MULTILINE):
        module, _, name = path.rpartition(".")
        objects.append(getattr(importlib.import_module(module), name))
    return objects


def test_the_api_reference_documents_every_public_name():
    import hallumeasure

    documented = _documented_objects((DOCS / "python-api.md").read_text(encoding="utf-8"))
    public = [name for name in hallumeasure.__all__ if name != "__version__"]
    missing = [name for name in public if not any(getattr(hallumeasure, name) is obj for obj in documented)]
    assert not missing, f"docs/python-api.md has no '::: module.name' entry for these public names: {missing}"


def test_the_guard_options_table_lists_every_serve_option() -> None:
    from typer.main import get_command

    from hallumeasure.cli import app

    serve = get_command(app).commands["serve"]  # type: ignore[attr-defined]
    options = {opt for param in serve.params for opt in param.opts if opt.startswith("--")} - {"--help"}
    page = (DOCS / "guard.md").read_text(encoding="utf-8")
    section = page.split("\n## Options of `hallumeasure serve`\n", 1)[1].split("\n## ", 1)[0]
    # the first column of each row: the flags it is about
    listed = {flag for line in section.splitlines() if line.startswith("| `-") for flag in _flags(line)}
    assert not options - listed, f"docs/guard.md's options table lacks: {sorted(options - listed)}"


def _flags(row: str) -> list[str]:
    return re.findall(r"`(--[a-z][a-z-]*)`", row.split(" | ", 1)[0])
