"""Judge families: ``name:<argument>`` specs (``hf:<path>``, ``onnx:<folder>``, ``minicheck:<provider:model>``)."""

import pytest

from hallumeasure.core.errors import ConfigError
from hallumeasure.registry import JudgeFamilyPart, Option, PartKind, Registry, registry


def test_a_keyless_family_takes_what_follows_its_colon_with_the_options():
    spec = registry().resolve("hf:/models/minicheck-roberta?threshold=0.6&batch_size=4")
    assert spec.part.name == "hf" and spec.keyless and not spec.is_provider
    assert spec.model == "/models/minicheck-roberta"
    assert dict(spec.options) == {"threshold": 0.6, "batch_size": 4}
    assert spec.model_spec is None  # it calls no provider
    hub = registry().resolve("hf:lytang/MiniCheck-Flan-T5-Large")
    assert hub.model == "lytang/MiniCheck-Flan-T5-Large"
    assert registry().resolve("onnx:./exported").part.name == "onnx"


@pytest.mark.parametrize("spec", ["hf", "hf:", "onnx:  ", "minicheck"])
def test_a_family_without_its_argument_is_refused_with_the_form_it_takes(spec):
    with pytest.raises(ConfigError, match=r"names no <.*>: write (hf|onnx|minicheck):<"):
        registry().resolve(spec)


def test_a_family_that_calls_a_provider_names_its_llm_spec():
    spec = registry().resolve("minicheck:openai:bespoke-minicheck-7b?base_url=http://localhost:8000/v1")
    assert not spec.keyless
    assert spec.model_spec == "openai:bespoke-minicheck-7b?base_url=http://localhost:8000/v1"
    assert registry().model_spec("anthropic:claude-x") == "anthropic:claude-x"
    assert registry().model_spec("offline") is None
    with pytest.raises(ConfigError, match="unknown model provider 'openia'"):
        registry().resolve("minicheck:openia:x")


def test_families_are_listed_and_keyless_is_asked_of_the_registry():
    known = registry().known_specs()
    assert {"hf:<path or hub id>", "onnx:<folder>", "minicheck:<provider:model>"} <= set(known)
    assert registry().is_keyless("onnx:/x") and not registry().is_keyless("minicheck:openai:m")
    assert registry().suggestion("hf:/x") is None  # a known family: nothing to suggest
    with pytest.raises(ConfigError, match="unknown"):
        registry().resolve("hff:/x")


def test_a_plugin_can_register_a_family_of_its_own():
    reg = Registry()
    reg.add(JudgeFamilyPart("toy", lambda arg, **kw: (arg, kw), argument="<name>", options={"x": Option(int, 0)}))
    spec = reg.resolve("toy:alpha?x=1")
    assert spec.part.load()(spec.model, **spec.part.read_options(spec.options)) == ("alpha", {"x": 1})
    # families are judges: an extractor spec of the same form is not one
    with pytest.raises(ConfigError):
        reg.resolve("toy:alpha", PartKind.EXTRACTOR)
