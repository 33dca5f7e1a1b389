"""The drill-down notebook runs headless on this interpreter and is committed with its outputs."""

import json
import sys
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient import NotebookClient
from testdata import REPO

NOTEBOOK = REPO / "notebooks" / "drilldown.ipynb"
# jupyter_client replaces these launcher names by sys.executable when it starts a kernel.
_SAME_INTERPRETER = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}


def kernel_for_this_interpreter(tmp_path: Path, monkeypatch) -> str:
    """``python3`` when its spec starts this interpreter; otherwise a throwaway spec in a temporary JUPYTER_PATH."""
    try:
        argv = KernelSpecManager().get_kernel_spec("python3").argv
        if argv[0] in _SAME_INTERPRETER or Path(argv[0]).resolve() == Path(sys.executable).resolve():
            return "python3"
    except NoSuchKernel:
        pass
    spec_dir = tmp_path / "jupyter" / "kernels" / "hallumeasure-test"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "hallumeasure test",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return "hallumeasure-test"


def test_notebook_executes_without_errors(tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.setenv("HALLUMEASURE_DRILLDOWN_RUN", str(tmp_path / "drilldown-example"))
    client = NotebookClient(
        nb,
        kernel_name=kernel_for_this_interpreter(tmp_path, monkeypatch),
        timeout=120,
        record_timing=False,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert (tmp_path / "drilldown-example" / "run.sqlite").exists()
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "<mark>" in html and "Policy:" in "".join(o.get("text", "") for o in outputs)
    assert any("image/png" in o.get("data", {}) for o in outputs)


def test_committed_notebook_is_executed():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.execution_count is not None for cell in code)
    outputs = [o for cell in code for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    # Outputs must not leak where the notebook was executed.
    assert "/tmp/" not in json.dumps(nb) and str(REPO) not in json.dumps(nb)


def test_committed_notebook_prints_rounded_values():
    """Issue #38: 'kappa 0.588', not 'kappa 0.587629': what a notebook prints is read, not parsed."""
    import re

    nb = nbformat.read(NOTEBOOK, as_version=4)
    printed = "".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs)
    assert "kappa" in printed
    assert not re.findall(r"\d\.\d{5,}", printed), re.findall(r"[^\n]*\d\.\d{5,}[^\n]*", printed)


def test_notebook_uses_only_the_public_api():
    import ast

    import hallumeasure

    nb = nbformat.read(NOTEBOOK, as_version=4)
    source = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")
    tree = ast.parse(source)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert {name for name in imported if name.startswith("hallumeasure")} == {"hallumeasure"}
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "hallumeasure"
    }
    assert used and used <= set(hallumeasure.__all__)
