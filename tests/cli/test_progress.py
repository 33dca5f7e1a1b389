"""The progress of 'measure' is never silent for long: while no sample finishes, a heartbeat line says what is
in flight (docs/cli.md promises a line at least every 30 s off a terminal)."""

import json
import re

from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.cli.progress import SampleProgress
from hallumeasure.core.activity import at_stage, claims_judged


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_heartbeat_names_the_samples_in_flight_once_30_s_pass_without_a_line(capsys):
    clock = Clock()
    progress = SampleProgress(40, clock=clock)  # no thread: beat() is what the thread calls each tick
    with progress.activity.tracking("big-1"):
        clock.now += 2
        with progress.activity.tracking("small-2"):
            clock.now += 3
            progress.advance()  # 1 of 40: under 10%, and only 5 s: no line
            clock.now += 20
            progress.beat()
            assert capsys.readouterr().err == ""  # 25 s since the start: not yet
            clock.now += 5.5
            progress.beat()
            assert capsys.readouterr().err.strip() == (
                "measuring: 1/40 samples (2%), 30 s elapsed; "
                "in flight: big-1 (starting, 30 s); small-2 (starting, 28 s)"
            )
            clock.now += 29
            progress.beat()
            assert capsys.readouterr().err == ""  # 29 s after the last line
            clock.now += 1
            progress.beat()
            assert "in flight: big-1 (starting, 1 min 00 s); small-2" in capsys.readouterr().err


def test_the_heartbeat_tells_the_stage_and_claims_judged_of_the_sample_in_flight(capsys):
    clock = Clock()
    progress = SampleProgress(3, clock=clock)
    with progress.activity.tracking("big-1"):
        at_stage("judging claims", claims=2_000)
        claims_judged(["c1", "c2", "c2"])  # the same claim twice (two votes) counts once
        clock.now += 75
        progress.beat()
    assert capsys.readouterr().err.strip() == (
        "measuring: 0/3 samples (0%), 1 min 15 s elapsed; in flight: big-1 (judging claims, 2/2,000 claims judged, "
        "1 min 15 s)"
    )
    with progress.activity.tracking("quiet-2"):  # a judge that tells no claim: no count that looks stuck
        at_stage("judging claims", claims=40)
        clock.now += 31
        progress.beat()
    assert capsys.readouterr().err.strip().endswith("in flight: quiet-2 (judging claims, 40 claims, 31 s)")
    clock.now += 31
    progress.beat()  # nothing in flight: the line still comes, without the list
    assert capsys.readouterr().err.strip() == "measuring: 0/3 samples (0%), 2 min 17 s elapsed"


def test_a_run_of_unknown_size_counts_what_is_done_without_a_share(capsys):
    clock = Clock()
    progress = SampleProgress(None, already=5, clock=clock)  # the Ray engine: its input streams in
    for _ in range(3):
        progress.advance()
    assert capsys.readouterr().err == ""  # no tenths to pass: a line only when LINE_EVERY has passed
    clock.now += 31
    progress.advance()
    assert capsys.readouterr().err.strip() == "measuring: 9 samples, 31 s elapsed"


def test_a_long_sample_of_a_real_run_gets_heartbeat_lines_while_the_offline_judge_works(tmp_path, monkeypatch):
    # A short interval instead of 30 s; the offline judge holds the run's event loop for seconds on 3,000
    # claims, so only a heartbeat from outside that loop can speak meanwhile.
    monkeypatch.setattr(SampleProgress, "LINE_EVERY", 0.3)
    monkeypatch.setattr(SampleProgress, "TICK", 0.05)
    row = json.loads(EXAMPLES.read_text(encoding="utf-8").splitlines()[0])
    data = tmp_path / "big.jsonl"
    data.write_text(json.dumps(dict(row, id="big", response=(row["response"] + " ") * 1_000)) + "\n", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["measure", str(data), "--out", str(tmp_path / "run"), "--max-response-chars", "0", "--max-claims", "0"]
    )
    assert result.exit_code == 0, result.output
    beats = re.findall(r"measuring: 0/1 samples \(0%\), .* elapsed; in flight: big \((.*)\)", result.output)
    assert beats, result.output
    judging = [b for b in beats if b.startswith("judging claims, ")]
    assert judging, beats
    done, total = re.match(r"judging claims, ([\d,]+)/([\d,]+) claims judged", judging[-1]).groups()
    assert int(total.replace(",", "")) == 3_000 and int(done.replace(",", "")) <= 3_000
