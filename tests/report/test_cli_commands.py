"""The `compare` and `audit` commands, once they are registered in hallumeasure.cli (skipped before)."""

import json

import pytest
from report.helpers import sample, write_run
from typer.testing import CliRunner

from hallumeasure.cli import app

COMMANDS = {(c.name or c.callback.__name__) for c in app.registered_commands}


def _run(path, unsupported, n=12):
    specs = [("contradicted", "number")] * unsupported + ["supported"] * (4 - unsupported)
    rows = [(sample(i, "m"), [(f"Claim {j}.", spec) for j, spec in enumerate(specs)]) for i in range(n)]
    return write_run(path, rows)


@pytest.mark.skipif("compare" not in COMMANDS, reason="the compare command is not in hallumeasure.cli yet")
def test_compare_command_writes_the_report(tmp_path):
    base, cur = _run(tmp_path / "base", 1), _run(tmp_path / "cur", 3)
    result = CliRunner().invoke(
        app, ["compare", str(base), str(cur), "--out", str(tmp_path / "out"), "--resamples", "200", "--seed", "1"]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "report.html").is_file() and "12 shared samples" in result.output
    other = write_run(tmp_path / "other", [(sample(0, "x"), [("c", "supported")])], judge="another")
    refused = CliRunner().invoke(app, ["compare", str(base), str(other), "--out", str(tmp_path / "o2")])
    assert refused.exit_code == 2 and "judge" in refused.output
    allowed = CliRunner().invoke(
        app, ["compare", str(base), str(other), "--out", str(tmp_path / "o2"), "--allow-mismatch", "--resamples", "200"]
    )
    assert allowed.exit_code == 0, allowed.output


@pytest.mark.skipif("audit" not in COMMANDS, reason="the audit command is not in hallumeasure.cli yet")
def test_audit_command_exit_codes(tmp_path):
    # 200 samples: identical runs pass only once n itself rules out a rise of the margins (about 3 / margin)
    base, worse, same = (_run(tmp_path / name, bad, n=200) for name, bad in (("base", 1), ("worse", 3), ("same", 1)))

    def audit(current, *extra):
        return CliRunner().invoke(
            app,
            [
                "audit",
                "--baseline",
                str(base),
                "--current",
                str(current),
                "--out",
                str(tmp_path / "out"),
                "--resamples",
                "200",
                *extra,
            ],
        )

    assert audit(same).exit_code == 0
    assert audit(worse).exit_code == 1
    assert audit(worse, "--min-samples", "500").exit_code == 1  # a shown regression stands on few samples
    assert audit(same, "--min-samples", "500").exit_code == 4  # too few samples to pass: inconclusive
    assert audit(same, "--min-samples", "500", "--inconclusive", "pass").exit_code == 0
    assert audit(same, "--min-samples", "500", "--inconclusive", "fail").exit_code == 1
    missing = audit(tmp_path / "missing")
    assert missing.exit_code == 2
    assert json.loads((tmp_path / "out" / "audit.json").read_text())["status"] == "usage_error"
    assert audit(same, "--alpha", "2").exit_code == 2
