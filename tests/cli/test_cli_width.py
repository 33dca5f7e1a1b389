"""Every command's output fits an 80-column terminal without cutting a number (issue #38 item 1).

Each command runs in its own process with its output piped and COLUMNS=80, as a person at a small
terminal sees it: no line may be wider than 80 cells (a terminal would break it mid-word) and no
value may be cut to an ellipsis.
"""

import pytest
from rich.cells import cell_len
from testdata import EXAMPLES, cli_at_80

LABELS = EXAMPLES.parent / "labels.csv"


_cli = cli_at_80


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("width")
    made = {}
    for name, judge in (("offline", "offline"), ("offline2", "offline"), ("fake", "fake")):
        out = root / name
        done = _cli("measure", str(EXAMPLES), "--out", str(out), "--judge", judge, "--extractor", judge)
        assert done.returncode == 0, done.stderr
        made[name] = (out, done.stdout + done.stderr)
    return root, made


def _assert_fits(text: str, *, text_cut: bool = False) -> None:
    """No line over 80 cells; no value cut (``text_cut``: a claim's text may end in an ellipsis)."""
    assert text.strip(), "the command printed nothing"
    for line in text.splitlines():
        assert cell_len(line) <= 80, f"{cell_len(line)} columns: {line!r}"
        if not text_cut:
            assert "…" not in line, f"a value cut: {line!r}"


def test_measure_fits_80_columns(runs):
    _, made = runs
    for _, printed in made.values():
        _assert_fits(printed)
    assert "0.135-0.802" in made["offline"][1]  # the bounds whole


def _commands(root):
    offline, offline2, fake = root / "offline", root / "offline2", root / "fake"
    return {
        "show": ["show", str(offline)],
        "show --claims": ["show", str(fake), "--claims", "--no-summary"],
        "compare": ["compare", str(offline), str(fake), "--allow-mismatch", "--out", str(root / "compared")],
        "audit": ["audit", "--baseline", str(offline), "--current", str(offline2), "--out", str(root / "audit")],
        "plan": ["plan", "--baseline", str(offline), "--rise", "0.05"],
        "calibrate": ["calibrate", str(fake), "--labels", str(LABELS)],
        "mitigate": ["mitigate", str(fake), "--out", str(root / "mitigated"), "--rewriter", "offline"],
        "plugins": ["plugins"],
    }


@pytest.mark.parametrize(
    "command", ["show", "show --claims", "compare", "audit", "plan", "calibrate", "mitigate", "plugins"]
)
def test_command_fits_80_columns(runs, command):
    root, _ = runs
    done = _cli(*_commands(root)[command])
    assert done.returncode in (0, 1, 4), done.stderr
    _assert_fits(done.stdout + done.stderr, text_cut=command == "show --claims")
