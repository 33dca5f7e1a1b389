"""The package's import structure: no import cycle anywhere inside it, the layers of the data flow
(docs/ARCHITECTURE.md), and the model layer imports nothing above it (the import-linter contracts in
pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from importlinter.api import read_configuration
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.layers import LayersContract

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
    assert "2 kept, 0 broken" in done.stdout


def _contract(prefix: str, kind: type[ForbiddenContract] | type[LayersContract]) -> ForbiddenContract | LayersContract:
    config = read_configuration(str(ROOT / "pyproject.toml"))
    (options,) = [c for c in config["contracts_options"] if c["name"].startswith(prefix)]
    return kind(
        name=options["name"],
        session_options=config["session_options"],
        contract_options={k: v for k, v in options.items() if k not in ("name", "type")},
    )


def _model_layer_contract() -> ForbiddenContract:
    contract = _contract("The model layer", ForbiddenContract)
    assert isinstance(contract, ForbiddenContract)
    return contract


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("hallumeasure.core.types", "hallumeasure.runs.store"),  # core imports nothing of ours
        ("hallumeasure.sources.rag", "hallumeasure.judges.offline.signals"),  # sources know no judge
        ("hallumeasure.runs.store", "hallumeasure.sources.passages"),  # siblings on one line are independent
        ("hallumeasure.judges.build", "hallumeasure.pipeline.run"),
        ("hallumeasure.pipeline.run", "hallumeasure.detectors.conli"),
        ("hallumeasure.mitigate.rounds", "hallumeasure.report.render"),
        ("hallumeasure.report.plan", "hallumeasure.bench.run"),  # reports and benchmarks are independent
        ("hallumeasure.bench.run", "hallumeasure.report.rates"),
        ("hallumeasure.stats.groups", "hallumeasure.runs.run"),  # statistics know only core
        ("hallumeasure.stats.power", "hallumeasure.pipeline.estimate"),
        ("hallumeasure.report.audit", "hallumeasure.cli.common"),
    ],
)
def test_the_layers_contract_refuses_an_upward_import(graph: grimp.ImportGraph, importer: str, imported: str) -> None:
    """The layers are not vacuous: one import upwards (or across independent siblings) breaks them."""
    contract = _contract("Layers follow the data flow", LayersContract)
    assert contract.check(graph, verbose=False).kept
    broken = grimp.build_graph(PACKAGE, cache_dir=None)
    broken.add_import(importer=importer, imported=imported)
    assert not contract.check(broken, verbose=False).kept


@pytest.mark.parametrize(
    "upward",
    [
        "hallumeasure.detectors.scripted",
        "hallumeasure.pipeline.run",
        "hallumeasure.report.render",
        "hallumeasure.runs.store",
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
    via_batch.add_import(importer="hallumeasure.models.batch", imported=upward)  # models.anthropic imports batch
    assert not contract.check(via_batch, verbose=False).kept
