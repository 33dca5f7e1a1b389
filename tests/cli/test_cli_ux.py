"""The CLI's manners: -h, --version, -v levels that show our own log lines, errors that list valid values."""

import subprocess
import sys

from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure import __version__
from hallumeasure.cli import app

runner = CliRunner()


def test_h_is_help_everywhere_and_version_is_a_flag():
    for args in (["-h"], ["measure", "-h"], ["view", "-h"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0 and "Usage:" in result.output, args
    assert "--max-responses" in runner.invoke(app, ["view", "-h"]).output
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"hallumeasure {__version__}"


def test_invalid_policy_values_name_the_valid_ones(tmp_path):
    out = str(tmp_path / "r")
    bad = runner.invoke(app, ["measure", str(EXAMPLES), "--out", out, "--unsupported-labels", "absent,wrong"])
    assert bad.exit_code == 2
    assert (
        "supported, contradicted, absent, partially_supported, unevaluatable" in bad.output
        and "'absent,wrong'" in bad.output
    )
    bad = runner.invoke(app, ["measure", str(EXAMPLES), "--out", out, "--unevaluatable", "drop"])
    assert bad.exit_code == 2 and "exclude, supported, unsupported" in bad.output


def _measure(tmp_path, *flags):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "hallumeasure.cli",
            *flags,
            "measure",
            str(EXAMPLES),
            "--out",
            str(tmp_path / "r"),
            "--overwrite",
            "--extractor",
            "fake",
            "--judge",
            "fake",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_verbosity_levels_show_our_log_lines(tmp_path):
    quiet = _measure(tmp_path)
    assert quiet.returncode == 0 and "hallumeasure." not in quiet.stderr
    info = _measure(tmp_path, "-v")
    assert "INFO hallumeasure.pipeline.run: measuring 16 samples" in info.stderr
    assert " DEBUG " not in info.stderr
    debug = _measure(tmp_path, "-vv")
    # every sample's claims and timing, and the request cache answering the calls the first run paid for
    assert debug.stderr.count("DEBUG hallumeasure.pipeline.judging: sample ") == 16
    assert "DEBUG hallumeasure.models.model: fake:demo: answered from the request cache" in debug.stderr
    other = [line for line in debug.stderr.splitlines() if " DEBUG " in line and " hallumeasure." not in line]
    assert not other, other[:3]  # the libraries' own debug logs wait for -vvv
