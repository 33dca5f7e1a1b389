"""`audit` at 80 columns: one row per gate with what it saw, then what each gate that did not pass means, each
text once (issue #47: the table repeated its numbers in two narrow columns, 48 lines for four gates)."""

import json

from testdata import EXAMPLES, cli_at_80

_cli = cli_at_80


def test_the_gate_table_says_each_text_once_within_80_columns(tmp_path):
    for name in ("a", "b"):
        assert _cli("measure", str(EXAMPLES), "--out", str(tmp_path / name)).returncode == 0
    done = _cli(
        "audit", "--baseline", str(tmp_path / "a"), "--current", str(tmp_path / "b"), "--out", str(tmp_path / "x")
    )
    assert done.returncode == 4, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    flat = " ".join(done.stdout.split())
    gates = json.loads((tmp_path / "x" / "audit.json").read_text())["gates"]
    for gate in gates:
        observed = " ".join(gate["observed"].split())
        assert len(observed) < 8 or flat.count(observed) == 1, gate["name"]  # ("-" is no text)
        if gate["status"] != "pass":
            assert flat.count(f"{gate['name']}: {' '.join(gate['message'].split())}") == 1, gate["name"]
    start = next(i for i, line in enumerate(lines) if line.split()[:3] == ["gate", "result", "observed"])
    table = lines[start : next(i for i, line in enumerate(lines) if line.startswith("unsupported_rate:"))]
    assert len(table) <= 3 + 2 * len(gates), "\n".join(table)
