"""The package's import structure: no import cycle anywhere inside it, and the model layer imports
nothing above it (the import-linter contract in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from importlinter.api import read_configuration
from importlinter.contracts.forbidden import ForbiddenContract

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "hallumeasure"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE, cache_dir=None)


def import_cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One shortest cycle through each direct import that lies on a cycle (deduplicated by its modules)."""
    seen: set[frozenset[str]] = set()
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is None:
                continue
            cycle = (importer, *back)
            if frozenset(cycle) not in seen:
                seen.add(frozenset(cycle))
                cycles.append(cycle)
    return cycles


def test_no_import_cycle_inside_the_package(graph: grimp.ImportGraph) -> None:
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle() -> None:
    fake = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        fake.add_import(importer=importer, imported=imported)
    assert import_cycles(fake) == [("p.a", "p.b", "p.c", "p.a")]


def test_import_linter_contracts_hold() -> None:
    """The contracts as the lead and CI run them: `lint-imports` with pyproject.toml."""
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 kept, 0 broken" in done.stdout


def _model_layer_contract() -> ForbiddenContract:
    config = read_configuration(str(ROOT / "pyproject.toml"))
    (options,) = [c for c in config["contracts_options"] if c["name"].startswith("The model layer")]
    return ForbiddenContract(
        name=options["name"],
        session_options=config["session_options"],
        contract_options={k: v for k, v in options.items() if k not in ("name", "type")},
    )


@pytest.mark.parametrize(
    "upward",
    [
        "hallumeasure.detectors.scripted",
        "hallumeasure.pipeline.run",
        "hallumeasure.report.render",
        "hallumeasure.store",
    ],
)
def test_the_contract_refuses_an_upward_import(graph: grimp.ImportGraph, upward: str) -> None:
    """The contract is not vacuous: one import from the fake upwards, direct or through another module, breaks it."""
    contract = _model_layer_contract()
    assert contract.check(graph, verbose=False).kept
    broken = grimp.build_graph(PACKAGE, cache_dir=None)
    broken.add_import(importer="hallumeasure.models.fake", imported=upward)
    assert not contract.check(broken, verbose=False).kept
    via_batch = grimp.build_graph(PACKAGE, cache_dir=None)
    via_batch.add_import(importer="hallumeasure.batch", imported=upward)  # models.anthropic imports batch
    assert not contract.check(via_batch, verbose=False).kept
