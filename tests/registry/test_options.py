"""Options are declared by each part, not read from its factory's signature: a spec's options are checked
against them and converted to their types, and what a built-in part declares is what its factory takes."""

from __future__ import annotations

import inspect
import json
from importlib.metadata import EntryPoint
from typing import Any

import pytest

import hallumeasure
from hallumeasure.core.errors import ConfigError
from hallumeasure.judges.build import build_judge
from hallumeasure.judges.decision import decision_rule, rule_files
from hallumeasure.registry import JudgePart, Option, PartKind, ProviderJudgePart, Registry, load_plugins, registry
from hallumeasure.registry.builtin import BUILTIN_PARTS

SOURCE = "The bridge opened in 1998 and is 6.8 km long."


@pytest.mark.parametrize("part", [p for p in BUILTIN_PARTS if p.options], ids=lambda p: f"{p.kind}:{p.name}")
def test_a_built_in_part_declares_what_its_factory_takes(part: Any) -> None:
    taken = inspect.signature(part.load()).parameters
    for name, option in part.options.items():
        assert name in taken, f"{part.name} declares {name}, which its factory does not take"
        assert taken[name].default == option.default, f"{part.name}.{name}: declared default differs"
        assert option.help


def test_nli_threshold_is_accepted_and_reaches_the_judge() -> None:
    pytest.importorskip("onnxruntime", reason="the nli extra is not installed")
    judge = build_judge("nli?threshold=0.9")
    assert judge.settings()["threshold"] == 0.9
    response = "The bridge is 7 km long and opened in 1998."  # claims scored about 0.80 and 0.58 unsupported
    assert not hallumeasure.check(response, context=SOURCE, judge=["nli"]).grounded
    lenient = hallumeasure.check(response, context=SOURCE, judge=["nli?threshold=0.9"])
    assert lenient.grounded and len(lenient.claims) == 2 and all(c.probability < 0.9 for c in lenient.claims)


def test_the_offline_threshold_is_accepted_and_converted_from_text() -> None:
    assert build_judge("offline?threshold=0.8").settings()["threshold"] == 0.8
    part = registry().part(PartKind.JUDGE, "offline")
    assert part.read_options({"threshold": "0.8"}) == {"threshold": 0.8}
    assert part.read_options({"threshold": 1}) == {"threshold": 1.0}


def test_an_unknown_option_is_named_with_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"judge 'nli': unknown option thresh; valid options: threshold$"):
        build_judge("nli?thresh=0.9")
    hf_error = r"judge 'hf': unknown options colour, size; valid options: batch_size, .*window"
    with pytest.raises(ConfigError, match=hf_error):
        registry().part(PartKind.JUDGE, "hf").read_options({"size": 1, "colour": "red"})
    with pytest.raises(ConfigError, match=r"judge 'offline\+nli' takes no options \(given: threshold\)"):
        build_judge("offline+nli?threshold=0.5")


def test_a_value_of_the_wrong_type_is_refused_with_its_option() -> None:
    with pytest.raises(ConfigError, match=r"judge 'nli': option threshold='high' is not valid"):
        build_judge("nli?threshold=high")
    onnx = registry().part(PartKind.JUDGE, "onnx")
    with pytest.raises(ConfigError, match=r"judge 'onnx': option batch_size=0.5 is not valid"):
        onnx.read_options({"batch_size": 0.5})
    assert onnx.read_options({"threshold": None, "batch_size": 4}) == {"threshold": None, "batch_size": 4}


def test_a_number_given_to_a_text_option_is_the_text_it_was_written_as() -> None:
    openai = registry().part(PartKind.PROVIDER, "openai")
    assert openai.read_options({"api_version": 2024, "strict": False}) == {"api_version": "2024", "strict": False}


def test_open_options_pass_unchecked() -> None:
    langchain = registry().part(PartKind.PROVIDER, "langchain")
    assert langchain.read_options({"model": "qwen", "temperature": 0}) == {"model": "qwen", "temperature": 0}


def test_a_bare_entry_point_factory_takes_no_options() -> None:
    r = Registry()
    bare = EntryPoint("plain", "registry.parts_for_tests:SilentJudge", PartKind.JUDGE.group)
    load_plugins(r, {PartKind.JUDGE: [bare]})
    with pytest.raises(ConfigError, match="judge 'plain' takes no options"):
        r.part(PartKind.JUDGE, "plain").read_options({"threshold": 0.5})


def test_the_decision_rule_is_a_field_of_the_judge_part(tmp_path: Any) -> None:
    shipped = rule_files()
    assert sorted(judge for judges in shipped.values() for judge in judges) == ["nli", "offline", "offline+nli"]
    offline = json.loads(next(p for p, j in shipped.items() if "offline" in j).read_text())["rules"]["offline"]
    assert decision_rule("offline").clear_at_most == offline["clear_at_most"]
    assert decision_rule("minicheck") is None and decision_rule("no such judge") is None
    assert isinstance(registry().part(PartKind.JUDGE, "minicheck"), ProviderJudgePart)


def test_a_plugin_judge_brings_its_own_decision_rule(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "rules_for_tests"
    package.mkdir()
    (package / "__init__.py").write_text("")
    rule = {"clear_at_most": 0.1, "flag_at_least": 0.7, "target": 0.05, "confidence": 0.9, "calibrated_on": 40}
    (package / "rule.json").write_text(json.dumps({"rules": {"ruled": rule}, "method": "test", "command": "none"}))
    monkeypatch.syspath_prepend(str(tmp_path))
    registry().add(JudgePart("ruled", "registry.parts_for_tests:SilentJudge", decision="rules_for_tests:rule.json"))
    try:
        found = decision_rule("ruled")
        assert found is not None and (found.clear_at_most, found.flag_at_least) == (0.1, 0.7)
    finally:
        registry().remove(PartKind.JUDGE, "ruled")
    assert decision_rule("ruled") is None


def test_the_listing_shows_each_part_s_options() -> None:
    from hallumeasure.registry import listing

    nli = next(p for p in listing().parts if p.kind == "judge" and p.name == "nli")
    threshold = nli.options["threshold"]
    assert (threshold.type, threshold.default) == ("float", "0.5") and "flagged" in threshold.help
    assert Option(int | None).type_name == "int | None"
