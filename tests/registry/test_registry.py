"""The registry: specs read against registered parts, model facts, entry-point plugins, and the rule that
no module outside it reads a spec's prefix."""

from __future__ import annotations

import ast
import re
from decimal import Decimal
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from hallumeasure.core.errors import ConfigError
from hallumeasure.models.pricing import price_for
from hallumeasure.registry import (
    JudgePart,
    PartKind,
    ProviderPart,
    Registry,
    facts,
    is_keyless,
    is_scripted,
    load_plugins,
    registry,
)

PACKAGE = Path(__file__).resolve().parents[2] / "hallumeasure"


def test_keyless_judges_and_provider_specs_resolve():
    r = registry()
    offline = r.resolve("offline")
    assert offline.keyless and not offline.is_provider and offline.model == ""
    spec = r.resolve("anthropic:claude-x?temperature=0")
    assert spec.is_provider and spec.part.name == "anthropic" and spec.model == "claude-x"
    assert spec.options == {"temperature": 0}
    bedrock = r.resolve("bedrock:us.anthropic.claude-sonnet-4:0")  # model ids hold colons
    assert bedrock.model == "us.anthropic.claude-sonnet-4:0"
    assert r.resolve("fake").scripted and r.resolve("fake:other").model == "other"


@pytest.mark.parametrize(
    ("spec", "hint"),
    [("ofline", "offline"), ("anthropc:claude-x", "anthropic:claude-x"), ("opena:gpt-4o", "openai:gpt-4o")],
)
def test_an_unknown_spec_names_the_closest_known_one(spec, hint):
    with pytest.raises(ConfigError, match=re.escape(f"did you mean '{hint}'?")):
        registry().resolve(spec)


def test_a_provider_without_a_model_and_a_secret_option_are_refused():
    with pytest.raises(ConfigError, match="names no model"):
        registry().resolve("anthropic:")
    with pytest.raises(ConfigError, match="looks like a secret"):
        registry().resolve("openai:gpt-4o?api_key=sk-1")


def test_keyless_and_scripted_are_asked_not_read_from_the_name():
    assert is_keyless("offline") and is_keyless("nli") and is_keyless("offline+nli")
    assert not is_keyless("fake") and not is_keyless("anthropic:claude-x") and not is_keyless("nosuch")
    assert is_scripted("fake") and is_scripted("fake:demo") and not is_scripted("offline") and not is_scripted(None)


def test_extractor_and_rewriter_specs_have_their_own_keyless_parts():
    assert registry().resolve("offline", PartKind.EXTRACTOR).keyless
    with pytest.raises(ConfigError):
        registry().resolve("nli", PartKind.EXTRACTOR)  # nli judges; it extracts nothing
    assert registry().resolve("offline", PartKind.REWRITER).keyless
    assert registry().resolve("fake", PartKind.REWRITER).is_provider  # an LLM rewriter over a provider


# --- facts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "window", "cache"),
    [
        ("anthropic:claude-sonnet-4-5", 200_000, 1024),
        ("anthropic:claude-3-5-haiku-latest", 200_000, 2048),
        ("anthropic:claude-haiku-4-5", 200_000, 4096),
        ("anthropic:claude-opus-4-5", 200_000, 4096),
        ("anthropic:claude-opus-4-1", 200_000, 1024),
        ("bedrock:us.anthropic.claude-3-haiku-20240307-v1:0", 200_000, 2048),
        ("bedrock:amazon.nova-pro-v1:0", 300_000, None),
        ("bedrock:mistral.mistral-large", 32_000, None),
        ("langchain:langchain_openai:ChatOpenAI", None, None),
        ("fake", None, None),
        ("offline", None, None),
    ],
)
def test_windows_and_cache_minimums_come_from_one_table(spec, window, cache):
    found = facts(spec)
    assert (found.context_window, found.min_cache_tokens) == (window, cache)


def test_the_most_specific_row_wins_field_by_field():
    sonnet = facts("anthropic:claude-sonnet-4-5?temperature=0")  # options do not change the facts
    assert sonnet.price is not None and sonnet.price.input == Decimal(3) and sonnet.context_window == 200_000
    assert price_for("anthropic:claude-sonnet-4-5") == sonnet.price
    assert facts("openai:gpt-4o-mini").price.input == Decimal("0.15")
    assert facts("openai:gpt-4o").price.input == Decimal("2.50")
    assert price_for("langchain:x:Y") is None and price_for("offline").input == 0


def test_a_provider_brings_its_own_facts():
    r = Registry()
    r.add(ProviderPart("acme", "x:y", facts={"acme:big*": facts("openai:gpt-4o")}))
    assert r.facts("acme:big-1").price.input == Decimal("2.50") and r.facts("acme:small").price is None


# --- plugins ---------------------------------------------------------------------------------------


def _ep(name: str, value: str, kind: PartKind) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=kind.group)


def test_entry_points_register_parts_and_broken_ones_are_reported_not_raised():
    r = Registry()
    groups = {
        PartKind.JUDGE: [
            _ep("silent", "registry.parts_for_tests:part", PartKind.JUDGE),
            _ep("plain", "registry.parts_for_tests:SilentJudge", PartKind.JUDGE),  # a bare factory
            _ep("gone", "registry.parts_for_tests:nothing_here", PartKind.JUDGE),
            _ep("wrong", "registry.parts_for_tests:provider_part", PartKind.JUDGE),
            _ep("num", "registry.parts_for_tests:not_callable", PartKind.JUDGE),
        ]
    }
    load_plugins(r, groups)
    assert set(r.names(PartKind.JUDGE)) == {"silent", "plain"}
    plain = r.part(PartKind.JUDGE, "plain")
    assert plain.keyless and plain.summary.startswith("Judges nothing")
    reasons = {p.name: p.message for p in r.problems}
    assert set(reasons) == {"gone", "wrong", "num"}
    assert "AttributeError" in reasons["gone"] and "provider part" in reasons["wrong"]


def test_a_plugin_cannot_take_a_built_in_name():
    r = Registry()
    r.add(JudgePart("offline", "a:b"))
    load_plugins(r, {PartKind.JUDGE: [_ep("offline", "registry.parts_for_tests:SilentJudge", PartKind.JUDGE)]})
    assert r.part(PartKind.JUDGE, "offline").target == "a:b"
    assert "clashes" in r.problems[0].message


def test_a_registered_judge_runs_through_the_one_door(tmp_path):
    from registry.parts_for_tests import SilentJudge

    import hallumeasure

    registry().add(JudgePart("silent", SilentJudge))
    try:
        run = hallumeasure.measure(
            [{"id": "1", "context": "The sky is blue.", "response": "The sky is blue."}],
            judge="silent",
            out=tmp_path / "run",
        )
        assert run.manifest.judge == "silent"
    finally:
        registry().remove(PartKind.JUDGE, "silent")


def test_a_missing_extra_is_named_when_the_part_loads():
    part = JudgePart("needs", "no_such_module_anywhere:thing", extra="nli")
    with pytest.raises(ConfigError, match=r"pip install 'hallumeasure\[nli\]'"):
        part.load()


# --- no prefix reading outside the registry, one place builds a Model ---------------------------------


def _sources() -> list[tuple[Path, str]]:
    return [
        (p, p.read_text(encoding="utf-8"))
        for p in PACKAGE.rglob("*.py")
        if "registry" not in p.relative_to(PACKAGE).parts and "testing" not in p.relative_to(PACKAGE).parts
    ]


def test_no_module_outside_the_registry_reads_a_spec_prefix():
    pattern = re.compile(r"startswith\(\(?\s*[\"'](fake|bedrock|anthropic|openai|langchain)|KEYLESS_JUDGES|PROVIDERS\b")
    found = [f"{p.relative_to(PACKAGE)}: {m.group(0)}" for p, text in _sources() for m in pattern.finditer(text)]
    assert not found, found


def test_one_place_builds_a_model():
    builders = []
    for path, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Model":
                builders.append(str(path.relative_to(PACKAGE)))
    assert builders == ["models/factory.py"], builders


def test_plugins_command_lists_each_part_with_origin_and_summary():
    from typer.testing import CliRunner

    from hallumeasure.cli import app
    from hallumeasure.registry import listing

    done = CliRunner().invoke(app, ["plugins"], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    lines, at = done.output.splitlines(), 0
    for part in listing().parts:  # in the order printed: kind by kind
        at = next(i for i in range(at, len(lines)) if lines[i].split()[:1] == [part.name])
        assert part.origin in lines[at]
        below = " ".join(line.strip() for line in lines[at + 1 : at + 4])
        assert below.startswith(" ".join(part.summary.split()[:3]))
