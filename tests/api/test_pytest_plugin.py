"""The pytest plugin, run in test sessions of their own (pytester): inert until used, the fixture and its settings,
readable failures, the session summary, JUnit properties and one test per sample of a data file."""

from __future__ import annotations

import importlib
import re
import tomllib
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points

import pytest
from testdata import REPO

from hallumeasure.testing import AnthropicServer

pytest_plugins = ["pytester"]

PLUGIN = "hallumeasure.api.pytest_plugin"
CONTEXT = "The Storebaelt bridge is 6.8 km long. It opened to traffic in 1998."
WRONG = "The Storebaelt bridge is 42 km long. It opened in 1998."


def _plugin_args() -> list[str]:
    """Load the plugin by name unless the installed distribution already does through its entry point."""
    installed = {ep.value for ep in entry_points(group="pytest11")}
    return [] if PLUGIN in installed else ["-p", PLUGIN]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", *args)


def test_the_entry_point_names_the_plugin_module():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["pytest11"] == {"hallumeasure": PLUGIN}
    module = importlib.import_module(PLUGIN)
    assert callable(module.pytest_addoption) and callable(module.hallumeasure)


def test_a_session_that_checks_nothing_sees_nothing(pytester):
    pytester.makepyfile(
        """
        import sys

        def test_plain():
            assert "hallumeasure.api.check" not in sys.modules  # no judge was loaded
            assert "pandas" not in sys.modules
        """
    )
    result = _run(pytester)
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    # No summary section and no line of ours (the plugin list in pytest's header names the package, as it should).
    assert not re.search(r"=+ hallumeasure =+", out) and "claims checked" not in out
    assert "--hallumeasure-judge" in _run(pytester, "--help").stdout.str()


def test_a_failing_assertion_lists_the_claims_and_the_session_is_summed_up(pytester):
    pytester.makepyfile(
        f"""
        import hallumeasure

        CONTEXT = {CONTEXT!r}

        def test_grounded():
            hallumeasure.assert_grounded("The Storebaelt bridge is 6.8 km long.", context=CONTEXT)

        def test_wrong_length():
            hallumeasure.assert_grounded({WRONG!r}, context=CONTEXT)
        """
    )
    result = _run(pytester, "--junitxml=report.xml")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "response not grounded:" in out and "1 unsupported (at most 0 allowed)" in out
    assert "claim 1: 'The Storebaelt bridge is 42 km long.'" in out and "label: contradicted / number" in out
    result.stdout.fnmatch_lines(
        [
            "*hallumeasure*",
            "2 responses, 3 claims checked: 1 unsupported (rate 0.333), 0 error rows",
            "judge: offline",
            "cost: $0 (no provider was called)",
        ]
    )
    cases = {case.get("name"): case for case in ET.parse(pytester.path / "report.xml").iter("testcase")}
    properties = {p.get("name"): p.get("value") for p in cases["test_wrong_length"].iter("property")}
    assert properties == {
        "hallumeasure_claims": "2",
        "hallumeasure_unsupported": "1",
        "hallumeasure_unsupported_rate": "0.5000",
        "hallumeasure_judge": "offline",
    }
    assert {p.get("name") for p in cases["test_grounded"].iter("property")} >= {"hallumeasure_unsupported"}


def test_the_fixture_takes_its_judge_from_pyproject_and_the_option_wins(pytester, monkeypatch):
    pytester.makefile(".toml", pyproject='[tool.hallumeasure]\njudge = "offline"\nunsupported_labels = "absent"\n')
    pytester.makepyfile(
        f"""
        import os

        def test_judged(hallumeasure):
            result = hallumeasure.check({WRONG!r}, context={CONTEXT!r})
            assert result.judge == os.environ["EXPECTED_JUDGE"]
            assert hallumeasure.settings["unsupported_labels"] == "absent"
            hallumeasure.assert_grounded({WRONG!r}, context={CONTEXT!r}, max_errors=2)
        """
    )
    monkeypatch.setenv("EXPECTED_JUDGE", "offline")
    _run(pytester).assert_outcomes(passed=1)  # contradicted does not count under this file's policy

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-dummy-key")
    monkeypatch.setenv("EXPECTED_JUDGE", "anthropic:claude-sonnet-4-sim")
    cache = pytester.path / "requests.sqlite"
    with AnthropicServer() as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        args = ("--hallumeasure-judge", "anthropic:claude-sonnet-4-sim", f"--hallumeasure-cache={cache}")
        result = _run(pytester, *args)
        result.assert_outcomes(passed=1)
        assert srv.requests and cache.exists()
        result.stdout.fnmatch_lines(
            ["judge: anthropic:claude-sonnet-4-sim", "cost: $0.0* at list prices (* provider calls*"]
        )
        calls = len(srv.requests)
        _run(pytester, *args).stdout.fnmatch_lines(
            ["cost: $0.0000 at list prices (0 provider calls, * from the request cache*"]
        )
        assert len(srv.requests) == calls


def test_one_test_per_sample_of_a_data_file(pytester):
    data = pytester.path / "answers.jsonl"
    data.write_text(
        "\n".join(
            [
                f'{{"id": "good", "context": "{CONTEXT}", "response": "It opened in 1998."}}',
                f'{{"id": "bad", "context": "{CONTEXT}", "response": "It opened in 1990."}}',
                f'{{"id": "cited", "contexts": ["{CONTEXT}"], "response": "The bridge is 6.8 km long [1]."}}',
            ]
        )
    )
    pytester.makepyfile(
        """
        import hallumeasure

        @hallumeasure.parametrize_samples("answers.jsonl")
        def test_answer(sample, hallumeasure):
            hallumeasure.assert_grounded(sample)
        """
    )
    result = _run(pytester, "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*test_answer?good? PASSED*", "*test_answer?bad? FAILED*", "*test_answer?cited? PASSED*"]
    )


def test_a_bad_row_in_the_data_file_stops_collection_with_its_reason(pytester):
    (pytester.path / "answers.jsonl").write_text('{"id": "x", "response": "no source"}\n')
    pytester.makepyfile(
        """
        import hallumeasure

        @hallumeasure.parametrize_samples("answers.jsonl")
        def test_answer(sample):
            pass
        """
    )
    result = _run(pytester)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*answers.jsonl: row 1 (id x): has no context*"])


def test_a_failure_shows_the_tests_line_then_the_claims_not_the_librarys_source(pytester):
    """Issue #38: assert_grounded hides its own frame (``__tracebackhide__``)."""
    pytester.makepyfile(
        f"""
        import hallumeasure

        def test_wrong_length():
            hallumeasure.assert_grounded({WRONG!r}, context={CONTEXT!r})
        """
    )
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    failure = out[out.index("_ test_wrong_length _") : out.index("short test summary")]
    assert "__tracebackhide__" not in failure and "def assert_grounded" not in failure
    assert "check_with_defaults" not in failure and "grounded.py" not in failure
    lines = [line for line in failure.splitlines()[1:] if line.strip()]
    # the test's own lines, then at once the message and its claims
    assert lines[0].strip() == "def test_wrong_length():" and len(lines) < 20, failure
    assert any("response not grounded" in line for line in lines[:4]), failure


def test_parametrize_samples_finds_its_file_from_the_test_not_the_current_directory(pytester):
    """Issue #38: a path written from the project root works when pytest runs from tests/ too."""
    tests = pytester.mkdir("tests")
    (tests / "answers.jsonl").write_text(
        f'{{"id": "bridge", "context": {CONTEXT!r}, "response": "The bridge opened in 1998."}}\n'.replace("'", '"'),
        encoding="utf-8",
    )
    (tests / "test_answers.py").write_text(
        "import hallumeasure\n\n"
        '@hallumeasure.parametrize_samples("tests/answers.jsonl")\n'
        "def test_each(sample):\n"
        "    assert sample.id == 'bridge'\n\n"
        '@hallumeasure.parametrize_samples("answers.jsonl")\n'
        "def test_beside(sample):\n"
        "    assert sample.id == 'bridge'\n",
        encoding="utf-8",
    )
    _run(pytester).assert_outcomes(passed=2)  # from the project root
    monkeypatch = pytest.MonkeyPatch()
    try:
        monkeypatch.chdir(tests)
        _run(pytester).assert_outcomes(passed=2)  # from tests/
    finally:
        monkeypatch.undo()


def test_the_fixture_checks_a_conversation(pytester):
    pytester.makepyfile(
        """
        import pytest

        MESSAGES = [
            {"role": "system", "content": "The museum opens at 10 am and closes at 6 pm."},
            {"role": "user", "content": "When does the museum open?"},
        ]

        def test_grounded_answer(hallumeasure):
            result = hallumeasure.check(messages=[*MESSAGES, {"role": "assistant", "content": "It opens at 10 am."}])
            assert result.grounded
            assert [(e.source_kind.value, e.passage_id) for e in result.claims[0].evidence] == [
                ("system_prompt", "system")
            ]

        def test_wrong_answer(hallumeasure):
            with pytest.raises(AssertionError, match="system prompt system"):
                hallumeasure.assert_grounded(
                    messages=[*MESSAGES, {"role": "assistant", "content": "It opens at 8 am."}]
                )
        """
    )
    _run(pytester).assert_outcomes(passed=2)


def _testing_page_example() -> str:
    """The Python example of docs/testing.md, as a user copies it."""
    page = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(import hallumeasure\n.*?)```", page, re.DOTALL)
    assert block, "docs/testing.md: no Python example"
    return block.group(1)


def test_every_documented_path_fails_without_plugin_frames_within_80_columns(pytester, monkeypatch):
    """Issue #47: the module function, the fixture, parametrize_samples and a conversation (messages=) each
    fail with the test's line and the claims only, and every line of the failures fits 80 columns."""
    example = _testing_page_example()
    assert "hallumeasure.assert_grounded(sample)" in example and "def test_dataset(sample, hallumeasure)" in example
    right = '"The Storebaelt bridge is 6.8 km long."'
    assert right in example
    pytester.makefile(
        ".jsonl",
        answers='{"id": "bridge-length", "context": "The Storebaelt bridge is 6.8 km long.", '
        '"response": "The bridge is 42 km long."}',
    )
    pytester.makepyfile(
        test_docs_example=example.replace(right, '"The Storebaelt bridge is 42 km long."', 1)
        + f"""

def test_fixture(hallumeasure):
    wrong = {WRONG!r}
    hallumeasure.assert_grounded(wrong, context=BRIDGE_DOC)


def test_conversation(hallumeasure):
    hallumeasure.assert_grounded(
        messages=[
            {{"role": "system", "content": BRIDGE_DOC}},
            {{"role": "user", "content": "How long is the bridge?"}},
            {{"role": "assistant", "content": "The bridge is 42 km long."}},
        ]
    )
"""
    )
    monkeypatch.setenv("COLUMNS", "80")
    # pytest prints its short summary lines whole when it sees a CI ("CI", "BUILD_NUMBER"): that is pytest's
    # choice, not the plugin's, so the width is checked as a user's terminal shows it
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    result = _run(pytester)
    result.assert_outcomes(failed=4)
    out = result.stdout.str()
    failures = out[out.index("= FAILURES =") : out.index("= hallumeasure =")]
    for internal in ("pytest_plugin.py", "grounded.py", "check.py", "def assert_grounded", "__tracebackhide__"):
        assert internal not in failures, internal
    sections = re.split(r"\n_+ (test_\w+(?:\[[\w-]+\])?) _+\n", failures)[1:]
    names = sections[::2]
    assert names == ["test_answer_is_grounded", "test_dataset[bridge-length]", "test_fixture", "test_conversation"]
    for name, body in zip(names, sections[1::2], strict=True):
        assert "hallumeasure.GroundednessError: response not grounded:" in body, name
        assert len(body.strip().splitlines()) <= 25, f"{name}:\n{body}"  # the test's lines, then the claims
    too_wide = [line for line in out[out.index("= FAILURES =") :].splitlines() if len(line) > 80]
    assert not too_wide, too_wide
