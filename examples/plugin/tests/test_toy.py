"""The toy judge through hallumeasure's front doors, once the package is installed (pip install ./examples/plugin)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import hallumeasure
from hallumeasure.core.errors import ConfigError
from hallumeasure.registry import PartKind, registry

CONTEXT = "The library opened in 1905 and holds 40,000 books."
GROUNDED = "The library opened in 1905."
INVENTED = "The library has a rooftop cinema."
#: The hallumeasure command of the Python running the tests.
CLI = str(Path(sys.executable).parent / "hallumeasure")


def test_the_entry_point_registers_the_judge():
    part = registry().part(PartKind.JUDGE, "toy")
    assert part.keyless and part.origin.startswith("hallumeasure-toy-judge ")


def test_check_uses_the_plugin_judge():
    assert hallumeasure.check(GROUNDED, context=CONTEXT, judge="toy").grounded
    result = hallumeasure.check(INVENTED, context=CONTEXT, judge="toy")
    assert not result.grounded and result.judge == "toy"
    assert "rooftop" in (result.claims[0].label_reason or "")


def test_options_reach_the_judge_and_bad_ones_are_refused():
    loose = hallumeasure.check("The library opened in 1905 with music.", context=CONTEXT, judge="toy?min_share=0.5")
    assert loose.grounded
    with pytest.raises(ConfigError, match="unknown option"):
        hallumeasure.check(GROUNDED, context=CONTEXT, judge="toy?strictness=2")


def test_the_cli_lists_and_uses_it(tmp_path):
    listed = subprocess.run([CLI, "plugins", "--json"], capture_output=True, text=True, check=True)
    toy = [p for p in json.loads(listed.stdout)["parts"] if p["name"] == "toy"]
    assert toy and toy[0]["kind"] == "judge" and toy[0]["origin"].startswith("hallumeasure-toy-judge")
    data = tmp_path / "in.jsonl"
    rows = [
        {"id": "1", "context": CONTEXT, "response": GROUNDED},
        {"id": "2", "context": CONTEXT, "response": INVENTED},
    ]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = subprocess.run(
        [CLI, "measure", str(data), "--out", str(tmp_path / "run"), "--judge", "toy"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge"] == "toy"


def test_the_guard_uses_it():
    from hallumeasure.guard.core import Guard

    result = Guard(judge="toy").check(INVENTED, context=CONTEXT)
    assert result.judge == "toy" and result.decision.value != "pass"
